//! Roaring bitmaps written out as dense `u64` words, container by container.
//!
//! The mask automaton's weights are built as roaring bitmaps and frozen as dense words.
//! Reading a bitmap value by value costs a step per class, and a large schema's weights
//! hold tens of millions of classes, read at the end of the build where little else
//! runs in parallel. roaring
//! exposes no container access, but its serialized form is the portable
//! RoaringFormatSpec, in which a bitmap container *is* its 1,024 little-endian words:
//! those are copied whole, arrays and runs set bit by bit or run by run.
//! Depends only on `roaring`.

use roaring::RoaringBitmap;

/// The cookie of a serialization without run containers (count in the next word).
const COOKIE_NO_RUNS: u32 = 12346;
/// The cookie of a serialization with run containers (count − 1 in the high half).
const COOKIE_RUNS: u32 = 12347;
/// From this many containers on, a serialization with runs has an offset header too.
const OFFSETS_FROM: usize = 4;
/// Containers with more values than this are bitmaps (absent runs).
const ARRAY_MAX: usize = 4096;
/// Words per container (65,536 values).
const CONTAINER_WORDS: usize = 1024;

/// ORs `set`'s values into `row`, whose word 0 holds values `64 * lo ..`; `scratch` holds
/// the serialization between calls. Every value of `set` must fall inside the row.
pub fn or_into_words(set: &RoaringBitmap, lo: usize, row: &mut [u64], scratch: &mut Vec<u8>) {
    scratch.clear();
    // Writing into a Vec cannot fail.
    set.serialize_into(&mut *scratch)
        .expect("serializing into memory");
    let r = Reader {
        bytes: scratch,
        at: 0,
    };
    // The bytes are roaring's own serialization of `set`, made just above: the reads
    // below follow its documented layout, so an out-of-range read is a roaring bug.
    r.or_into(lo, row);
}

/// A cursor over one serialization.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        s
    }

    fn u16(&mut self) -> u16 {
        let b = self.take(2);
        u16::from_le_bytes([b[0], b[1]])
    }

    fn u32(&mut self) -> u32 {
        let b = self.take(4);
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn or_into(mut self, lo: usize, row: &mut [u64]) {
        let cookie = self.u32();
        let (count, runs, offsets) = if cookie == COOKIE_NO_RUNS {
            (self.u32() as usize, None, true)
        } else {
            debug_assert_eq!(cookie & 0xFFFF, COOKIE_RUNS, "roaring serialization cookie");
            let count = (cookie >> 16) as usize + 1;
            let flags = self.take(count.div_ceil(8)).to_vec();
            (count, Some(flags), count >= OFFSETS_FROM)
        };
        let mut heads = Vec::with_capacity(count);
        for _ in 0..count {
            let key = self.u16();
            let len = self.u16() as usize + 1;
            heads.push((key, len));
        }
        if offsets {
            self.at += 4 * count;
        }
        for (i, &(key, len)) in heads.iter().enumerate() {
            let base = usize::from(key) << 16;
            let is_run = runs.as_ref().is_some_and(|f| f[i / 8] >> (i % 8) & 1 == 1);
            if is_run {
                let n = self.u16();
                for _ in 0..n {
                    let start = base + usize::from(self.u16());
                    let end = start + usize::from(self.u16());
                    or_range(row, lo, start, end);
                }
            } else if len > ARRAY_MAX {
                // Only the container's words inside the row can be nonzero.
                let first = base / 64;
                let words = self.take(8 * CONTAINER_WORDS);
                let from = lo.saturating_sub(first);
                let to = (lo + row.len() - first).min(CONTAINER_WORDS);
                let dst = &mut row[first + from - lo..first + to - lo];
                for (d, b) in dst.iter_mut().zip(words[8 * from..8 * to].chunks_exact(8)) {
                    *d |= u64::from_le_bytes(b.try_into().expect("8 bytes"));
                }
            } else {
                for _ in 0..len {
                    set_bit(row, lo, base + usize::from(self.u16()));
                }
            }
        }
    }
}

/// Sets value `v` in `row` (whose word 0 holds values `64 * lo ..`).
#[inline]
fn set_bit(row: &mut [u64], lo: usize, v: usize) {
    row[v / 64 - lo] |= 1 << (v % 64);
}

/// Sets values `start..=end` (a run) in `row`: whole words at once, the ends bit by bit.
fn or_range(row: &mut [u64], lo: usize, start: usize, end: usize) {
    let mut v = start;
    while v <= end && v % 64 != 0 {
        set_bit(row, lo, v);
        v += 1;
    }
    while v + 63 <= end {
        row[v / 64 - lo] = u64::MAX;
        v += 64;
    }
    while v <= end {
        set_bit(row, lo, v);
        v += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::or_into_words;
    use crate::rng::SplitMix64;
    use roaring::RoaringBitmap;

    /// Sets of every container kind (arrays, bitmaps, and runs after `optimize`), over
    /// one or several containers, read into rows that start at the set's first word or
    /// earlier, hold exactly the set's values and nothing else.
    #[test]
    fn every_container_kind_reads_as_its_values() {
        let mut rng = SplitMix64::new(0x2545_F491_4F6C_DD1D);
        let mut next = || rng.next_u64();
        for case in 0..120u32 {
            let mut w = RoaringBitmap::new();
            let span = [200u64, 70_000, 300_000][case as usize % 3];
            let origin = (next() % 200_000) as u32;
            match case % 5 {
                // Scattered values: array containers.
                0 => (0..50).for_each(|_| {
                    w.insert(origin + (next() % span) as u32);
                }),
                // Dense: bitmap containers.
                1 => (0..(span as u32 / 2)).for_each(|_| {
                    w.insert(origin + (next() % span) as u32);
                }),
                // Long runs, some crossing word and container boundaries.
                2 => (0..6).for_each(|_| {
                    let a = origin + (next() % span) as u32;
                    w.insert_range(a..a + (next() % 3000) as u32 + 1);
                }),
                // A stride: a bitmap container that stays one after `optimize`.
                3 => w.extend((origin..origin + span as u32).step_by(3)),
                _ => {
                    w.insert(origin);
                }
            }
            if case % 2 == 0 {
                w.optimize();
            }
            let (min, max) = (w.min().unwrap() as usize, w.max().unwrap() as usize);
            let lo = (min / 64).saturating_sub((case % 3) as usize);
            let mut row = vec![0u64; max / 64 + 1 - lo];
            or_into_words(&w, lo, &mut row, &mut Vec::new());
            let mut got = RoaringBitmap::new();
            for (i, &word) in row.iter().enumerate() {
                for b in 0..64 {
                    if word >> b & 1 == 1 {
                        got.insert(((lo + i) * 64 + b) as u32);
                    }
                }
            }
            assert_eq!(got, w, "case {case}");
        }
    }
}

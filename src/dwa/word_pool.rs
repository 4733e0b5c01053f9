//! The token words of class sets, as the final mask write reads them: each class's token
//! set stored sparse (its nonzero 32-bit words with their indices), dense (every word of
//! its span), or patched (a dense set with a few words replaced), whichever makes the
//! write cheaper or the pool smaller. Depends on nothing else.
//!
//! A sparse write is a serial scatter, a word per step; a dense one is a straight OR the
//! compiler vectorizes. Classes of most of the vocabulary (what may follow inside a
//! string, say) have thousands of nonzero words packed in their span: sparse, writing
//! them was three quarters of a typical mask. Such classes come in near-copies (a
//! schema's positions inside strings differ by a few key-prefix atoms), so most of them
//! are stored as patches on a dense copy, which roughly halves both the pool and the
//! time to make it on schemas with many bounded strings.

use serde::{Deserialize, Serialize};

/// A [`WordPool`] range's tag: the range is dense (see [`WordPool`]).
const DENSE: u32 = 1 << 31;
/// A [`WordPool`] range's tag: the range is patched (see [`WordPool`]).
const PATCHED: u32 = 1 << 30;
/// Both tags: what is left of a range's start is its index.
const TAGS: u32 = DENSE | PATCHED;

/// A class set with at least this many nonzero words is stored dense when its span is
/// at most [`DENSE_SPAN`] times that many words (so dense costs at most twice the bytes).
const DENSE_MIN_WORDS: usize = 8;
const DENSE_SPAN: usize = 4;

/// Token sets as 32-bit mask words. A range `(a, b)` is one of:
/// - sparse (no tag in `a`): `pairs[a..b]` holds `(word index, bits)` in word order;
/// - dense ([`DENSE`] in `a`): `dense[a']` is the first word's index and
///   `dense[a' + 1..b]` the words from there on (`a'` = `a` without its tag);
/// - patched ([`PATCHED`] in `a`): `patched[a'..b]` is a dense range `(base_a, base_b)`
///   (tagged) followed by `(word index, word)` pairs in strictly increasing word order:
///   the set is the dense one with each listed word replaced (or, outside its span, added).
///
/// Ranges come from [`WordPool::push`] and [`WordPool::push_patched`] and are checked by
/// [`WordPool::range_ok`]; each vector stays below `2^30` entries so tags never collide
/// with indices ([`WordPool::sizes_ok`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WordPool {
    pairs: Vec<(u32, u32)>,
    dense: Vec<u32>,
    patched: Vec<u32>,
}

impl WordPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores a token set given as its nonzero words `(word index, bits)`, in increasing
    /// word order, and returns its range.
    pub fn push(&mut self, words: &[(u32, u32)]) -> (u32, u32) {
        let span = match (words.first(), words.last()) {
            (Some(&(lo, _)), Some(&(hi, _))) => (hi - lo) as usize + 1,
            _ => 0,
        };
        if words.len() >= DENSE_MIN_WORDS && span <= DENSE_SPAN * words.len() {
            let a = self.dense.len();
            let first = words[0].0;
            self.dense.push(first);
            self.dense.resize(a + 1 + span, 0);
            for &(w, bits) in words {
                self.dense[a + 1 + (w - first) as usize] = bits;
            }
            (a as u32 | DENSE, self.dense.len() as u32)
        } else {
            let a = self.pairs.len() as u32;
            self.pairs.extend_from_slice(words);
            (a, self.pairs.len() as u32)
        }
    }

    /// Stores the set that dense range `base` (from [`WordPool::push`]) holds with the
    /// words of `patches` replaced: `(word index, word)` in strictly increasing word
    /// order, the final value of each word the two differ in (zero to drop a word).
    pub fn push_patched(&mut self, base: (u32, u32), patches: &[(u32, u32)]) -> (u32, u32) {
        debug_assert!(base.0 & TAGS == DENSE, "patches apply to a dense range");
        debug_assert!(patches.windows(2).all(|p| p[0].0 < p[1].0));
        let a = self.patched.len() as u32;
        self.patched.extend([base.0, base.1]);
        for &(w, x) in patches {
            self.patched.extend([w, x]);
        }
        (a | PATCHED, self.patched.len() as u32)
    }

    /// Whether range `r` is stored dense (so [`WordPool::push_patched`] can patch it).
    pub fn is_dense(r: (u32, u32)) -> bool {
        r.0 & TAGS == DENSE
    }

    /// Whether range `r` is stored sparse (its pairs listed in the pool).
    pub fn is_sparse(r: (u32, u32)) -> bool {
        r.0 & TAGS == 0
    }

    /// Whether range `r` is stored as patches on a dense range.
    pub fn is_patched(r: (u32, u32)) -> bool {
        r.0 & TAGS == PATCHED
    }

    /// The words dense range `r` spans.
    pub fn span(&self, r: (u32, u32)) -> usize {
        self.dense_words(r.0, r.1).1.len()
    }

    /// Word `w` of dense range `r` (zero outside its span).
    pub fn dense_word(&self, r: (u32, u32), w: u32) -> u32 {
        let (first, src) = self.dense_words(r.0, r.1);
        (w as usize)
            .checked_sub(first)
            .and_then(|i| src.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// The first word index and the words of dense range `(a, b)` (tag removed).
    #[inline]
    fn dense_words(&self, a: u32, b: u32) -> (usize, &[u32]) {
        let a = (a & !TAGS) as usize;
        (self.dense[a] as usize, &self.dense[a + 1..b as usize])
    }

    /// ORs the token set of range `r` into `out`.
    // The sparse case is inlined into the mask write's loop: a mask ORs ~20 small sparse
    // classes (MaskBench, Llama-3), and a call apiece cost more than their scatter.
    #[inline(always)]
    pub fn or_into(&self, (a, b): (u32, u32), out: &mut [u32]) {
        if a & TAGS == 0 {
            for &(w, bits) in &self.pairs[a as usize..b as usize] {
                out[w as usize] |= bits;
            }
        } else {
            self.or_wide(a, b, out);
        }
    }

    /// [`WordPool::or_into`] for a dense or patched range.
    #[inline(never)]
    fn or_wide(&self, a: u32, b: u32, out: &mut [u32]) {
        if a & DENSE != 0 {
            let (first, src) = self.dense_words(a, b);
            or_words(&mut out[first..first + src.len()], src);
        } else {
            self.or_patched(a, b, out);
        }
    }

    /// The words range `r` spans if it is dense or patched (its dense base's span): what
    /// [`WordPool::write_into`] copies instead of ORing. `None` for a sparse range.
    #[inline]
    pub fn copy_span(&self, (a, b): (u32, u32)) -> Option<usize> {
        if a & DENSE != 0 {
            Some(b as usize - (a & !TAGS) as usize - 1)
        } else if a & PATCHED != 0 {
            let rec = &self.patched[(a & !TAGS) as usize..];
            Some(rec[1] as usize - (rec[0] & !TAGS) as usize - 1)
        } else {
            None
        }
    }

    /// Writes the token set of range `r` into `out`, every word of it: the first set of a
    /// mask, where ORing into a zeroed mask would first write every word as zero and then
    /// read it back. A dense span is copied and only the words around it zeroed.
    pub fn write_into(&self, (a, b): (u32, u32), out: &mut [u32]) {
        if a & TAGS == 0 {
            out.fill(0);
            self.or_into((a, b), out);
            return;
        }
        let (base, patches) = if a & DENSE != 0 {
            ((a, b), &[][..])
        } else {
            let rec = &self.patched[(a & !TAGS) as usize..b as usize];
            ((rec[0], rec[1]), &rec[2..])
        };
        let (first, src) = self.dense_words(base.0, base.1);
        let end = first + src.len();
        out[..first].fill(0);
        out[first..end].copy_from_slice(src);
        out[end..].fill(0);
        // Patched words replace the base's (and are added outside its span).
        for p in patches.chunks_exact(2) {
            out[p[0] as usize] = p[1];
        }
    }

    /// [`WordPool::or_into`] for a patched range. Each patched word's value before the
    /// base is written is kept, the base is ORed in over the stretch up to the last
    /// patched word, and each patched word is then set to its kept value with the patch
    /// ORed in: a few long vectorized ORs, where stopping at every patched word (a
    /// couple of hundred per class) cost a fifth of the p99 mask.
    fn or_patched(&self, a: u32, b: u32, out: &mut [u32]) {
        /// Patched words kept at once.
        const KEEP: usize = 64;
        let rec = &self.patched[(a & !TAGS) as usize..b as usize];
        let (first, src) = self.dense_words(rec[0], rec[1]);
        let end = first + src.len();
        // Next word of the base's span not yet written.
        let mut at = first;
        for chunk in rec[2..].chunks(2 * KEEP) {
            let mut kept = [0u32; KEEP];
            for (k, p) in kept.iter_mut().zip(chunk.chunks_exact(2)) {
                *k = out[p[0] as usize];
            }
            // Patched words increase, so none of this chunk's is written yet; the
            // clamp keeps `at` in the span when patches lie before or after it.
            let upto = (chunk[chunk.len() - 2] as usize + 1).clamp(at, end);
            or_words(&mut out[at..upto], &src[at - first..upto - first]);
            at = upto;
            for (k, p) in kept.iter().zip(chunk.chunks_exact(2)) {
                out[p[0] as usize] = k | p[1];
            }
        }
        or_words(&mut out[at..end], &src[at - first..]);
    }

    /// The nonzero words of range `r`, `(word index, bits)` in word order (for tests and
    /// tools; the mask write uses [`WordPool::or_into`]).
    pub fn words(&self, (a, b): (u32, u32)) -> Vec<(u32, u32)> {
        if a & TAGS == 0 {
            return self.pairs[a as usize..b as usize].to_vec();
        }
        let mut all: Vec<(u32, u32)> = Vec::new();
        let mut put = |w: usize, x: u32| all.push((w as u32, x));
        if a & DENSE != 0 {
            let (first, src) = self.dense_words(a, b);
            src.iter().enumerate().for_each(|(i, &x)| put(first + i, x));
        } else {
            let rec = &self.patched[(a & !TAGS) as usize..b as usize];
            let (first, src) = self.dense_words(rec[0], rec[1]);
            let mut words: std::collections::BTreeMap<usize, u32> = src
                .iter()
                .enumerate()
                .map(|(i, &x)| (first + i, x))
                .collect();
            for p in rec[2..].chunks_exact(2) {
                words.insert(p[0] as usize, p[1]);
            }
            words.into_iter().for_each(|(w, x)| put(w, x));
        }
        all.retain(|&(_, x)| x != 0);
        all
    }

    /// Whether range `r` lies in the pool and writes only words below `num_words`.
    pub fn range_ok(&self, (a, b): (u32, u32), num_words: usize) -> bool {
        if a & TAGS == 0 {
            return a <= b && b as usize <= self.pairs.len();
        }
        if a & TAGS == DENSE {
            return self.dense_ok(a & !TAGS, b, num_words);
        }
        if a & DENSE != 0 {
            return false;
        }
        let a = (a & !TAGS) as usize;
        let Some(rec) = self.patched.get(a..b as usize) else {
            return false;
        };
        rec.len() >= 2
            && rec.len() % 2 == 0
            && rec[0] & TAGS == DENSE
            && self.dense_ok(rec[0] & !TAGS, rec[1], num_words)
            && rec[2..]
                .chunks_exact(2)
                .all(|p| (p[0] as usize) < num_words)
            && rec[2..]
                .chunks_exact(2)
                .zip(rec[2..].chunks_exact(2).skip(1))
                .all(|(p, q)| p[0] < q[0])
    }

    /// Whether untagged dense range `(a, b)` lies in the pool below `num_words`.
    fn dense_ok(&self, a: u32, b: u32, num_words: usize) -> bool {
        let a = a as usize;
        a < b as usize
            && b as usize <= self.dense.len()
            && self.dense[a] as usize + (b as usize - a - 1) <= num_words
    }

    /// Whether every sparse word is below `num_words` (dense and patched ranges are
    /// checked by [`WordPool::range_ok`]).
    pub fn pairs_ok(&self, num_words: usize) -> bool {
        self.pairs.iter().all(|&(w, _)| (w as usize) < num_words)
    }

    /// Whether every vector is short enough for its indices to leave the tag bits free.
    pub fn sizes_ok(&self) -> bool {
        [self.pairs.len(), self.dense.len(), self.patched.len()]
            .iter()
            .all(|&n| n < PATCHED as usize)
    }
}

/// ORs `src` into `out` (equal lengths), word by word; the compiler vectorizes it.
#[inline]
fn or_words(out: &mut [u32], src: &[u32]) {
    for (o, &x) in out.iter_mut().zip(src) {
        *o |= x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both encodings write exactly the words pushed, whatever the density, and ranges
    /// are checked against the mask width.
    #[test]
    fn pushed_sets_are_written_back_exactly() {
        let sets: Vec<Vec<(u32, u32)>> = vec![
            vec![],
            vec![(3, 0b101)],
            // Dense: 10 words packed in a span of 11 (words 100..=110).
            (0..12u32)
                .filter(|w| w % 6 != 5)
                .map(|w| (w + 100, w + 1))
                .collect(),
            // Sparse: 10 words spread over a span of 91.
            (0..10u32).map(|w| (w * 10, 1 << w)).collect(),
        ];
        let mut pool = WordPool::new();
        let ranges: Vec<(u32, u32)> = sets.iter().map(|s| pool.push(s)).collect();
        assert_eq!(ranges[2].0 & DENSE, DENSE, "packed set stored dense");
        assert_eq!(ranges[3].0 & DENSE, 0, "spread set stored sparse");
        for (s, &r) in sets.iter().zip(&ranges) {
            assert_eq!(&pool.words(r), s);
            assert!(pool.range_ok(r, 112));
            let mut out = vec![0u32; 112];
            out[111] = 7;
            pool.or_into(r, &mut out);
            let mut want = vec![0u32; 112];
            want[111] = 7;
            for &(w, bits) in s {
                want[w as usize] |= bits;
            }
            assert_eq!(out, want);
        }
        // The dense set's last word is 110.
        assert!(pool.range_ok(ranges[2], 111) && !pool.range_ok(ranges[2], 110));
        assert!(!pool.range_ok((DENSE | 5, 3), 112), "reversed dense range");
        assert!(pool.pairs_ok(112) && !pool.pairs_ok(90));
    }

    /// A patched set writes its base's words with the listed words replaced inside the
    /// base's span (to zero, or to other bits) and added outside it, ORed into what the
    /// output already holds; malformed patched ranges are refused.
    #[test]
    fn patched_sets_write_the_base_with_their_words_replaced() {
        let mut pool = WordPool::new();
        // Dense base over words 10..=29, every word nonzero.
        let base_words: Vec<(u32, u32)> = (10..30u32).map(|w| (w, 0xf0 | w)).collect();
        let base = pool.push(&base_words);
        assert!(WordPool::is_dense(base));
        // Before the span, its first word dropped, one replaced, its last word changed,
        // and after the span.
        let patches = [(3, 0b1), (10, 0), (15, 0x1), (29, 0x300), (40, 0x8)];
        let r = pool.push_patched(base, &patches);
        assert!(WordPool::is_patched(r));
        let mut want = vec![0u32; 48];
        for &(w, x) in &base_words {
            want[w as usize] = x;
        }
        for &(w, x) in &patches {
            want[w as usize] = x;
        }
        let want_words: Vec<(u32, u32)> = want
            .iter()
            .enumerate()
            .filter(|&(_, &x)| x != 0)
            .map(|(w, &x)| (w as u32, x))
            .collect();
        assert_eq!(pool.words(r), want_words);
        // ORed over what is there: bits the set lacks stay if they were already set.
        let mut out = vec![0u32; 48];
        out[10] = 0x4000;
        out[15] = 0x2;
        pool.or_into(r, &mut out);
        want[10] |= 0x4000;
        want[15] |= 0x2;
        assert_eq!(out, want);
        // The base is untouched by the patches.
        assert_eq!(pool.words(base), base_words);
        // More patched words than are kept at once (several chunks), some before and
        // after the span, over an output with bits set everywhere.
        let big_words: Vec<(u32, u32)> = (100..400u32)
            .map(|w| (w, w.wrapping_mul(2_654_435_761)))
            .collect();
        let big = pool.push(&big_words);
        let many: Vec<(u32, u32)> = (0..450u32)
            .filter(|w| w % 3 == 0)
            .map(|w| (w, if w % 2 == 0 { 0 } else { w }))
            .collect();
        let r2 = pool.push_patched(big, &many);
        let mut out: Vec<u32> = (0..460u32).map(|w| 1 << (w % 32)).collect();
        let mut want = out.clone();
        for &(w, x) in &big_words {
            if w % 3 != 0 {
                want[w as usize] |= x;
            }
        }
        for &(w, x) in &many {
            want[w as usize] |= x;
        }
        pool.or_into(r2, &mut out);
        assert_eq!(out, want);
        assert!(pool.range_ok(r2, 460));
        assert!(
            pool.range_ok(r, 41) && !pool.range_ok(r, 40),
            "a patch beyond the mask"
        );
        // Malformed records: out of order, odd length, on a sparse base, past the end.
        let mut bad = pool.clone();
        let a = bad.patched.len() as u32;
        bad.patched.extend([base.0, base.1, 20, 1, 12, 1]);
        assert!(
            !bad.range_ok((a | PATCHED, a + 6), 48),
            "patches out of order"
        );
        assert!(!bad.range_ok((a | PATCHED, a + 5), 48), "odd record");
        let sparse = bad.push(&[(3, 1)]);
        let b = bad.patched.len() as u32;
        bad.patched.extend([sparse.0, sparse.1]);
        assert!(
            !bad.range_ok((b | PATCHED, b + 2), 48),
            "patches on a sparse range"
        );
        assert!(
            !bad.range_ok((b | PATCHED, b + 4), 48),
            "record past the pool"
        );
        assert!(!bad.range_ok((r.0 | DENSE, r.1), 48), "both tags");
    }

    /// Writing a set into a mask of garbage leaves exactly the set (what ORing it into a
    /// zeroed mask gives), for sparse, dense and patched sets, spans at either end of the
    /// mask, and patches before, inside and after the base's span.
    #[test]
    fn written_sets_replace_everything_the_mask_held() {
        let mut pool = WordPool::new();
        let dense_mid: Vec<(u32, u32)> = (10..30u32).map(|w| (w, 0xf0 | w)).collect();
        let dense_start: Vec<(u32, u32)> = (0..12u32).map(|w| (w, w + 1)).collect();
        let dense_end: Vec<(u32, u32)> = (40..48u32).map(|w| (w, 1 << (w % 32))).collect();
        let mid = pool.push(&dense_mid);
        let ranges = vec![
            pool.push(&[]),
            pool.push(&[(3, 0b101), (40, 7)]),
            mid,
            pool.push(&dense_start),
            pool.push(&dense_end),
            pool.push_patched(mid, &[(3, 0b1), (10, 0), (15, 0x1), (29, 0x300), (47, 0x8)]),
        ];
        for r in ranges {
            let mut want = vec![0u32; 48];
            pool.or_into(r, &mut want);
            let mut out: Vec<u32> = (0..48u32)
                .map(|w| w.wrapping_mul(0x9e37_79b9) | 1)
                .collect();
            pool.write_into(r, &mut out);
            assert_eq!(out, want, "range {r:?}");
            let span = pool.copy_span(r);
            assert_eq!(span.is_some(), r.0 & TAGS != 0, "range {r:?}");
        }
        assert_eq!(pool.copy_span(mid), Some(20));
    }
}

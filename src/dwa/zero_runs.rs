//! The artifact form of the automaton's weight words: runs of zero words and the nonzero
//! words between them, as one byte string (used as `#[serde(with = "zero_runs")]`).
//!
//! A large grammar's weights are tens of millions of 64-bit words, most of them zero (a
//! weight spans whole shapes, and decides a few classes of each). Written element by
//! element, loading them cost a variable-length integer decode per word, most of an
//! artifact's load time; as runs, zero runs are a fill and nonzero words a straight copy.
//!
//! Layout, all little-endian: the number of words `n` (u64), then segments of
//! `(zeros: u32, literals: u32, literals × u64)` that together give exactly `n` words.
//! A decoded length is bounded by [`MAX_WORDS`], so a corrupt length cannot allocate
//! beyond what the artifact's own decode limit allows.

use serde::de::{Error, Visitor};
use serde::{Deserializer, Serializer};

/// Most words a decoded vector may hold (4 GiB, the artifact decoder's limit).
pub const MAX_WORDS: u64 = (4 << 30) / 8;

/// Serializes `words` as runs (see the module docs).
pub fn serialize<S: Serializer>(words: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(&encode(words))
}

/// Deserializes what [`serialize`] wrote; a malformed byte string is an error.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    struct Runs;
    impl Visitor<'_> for Runs {
        type Value = Vec<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("zero runs of 64-bit words")
        }
        fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<Vec<u64>, E> {
            decode(bytes).map_err(E::custom)
        }
    }
    d.deserialize_bytes(Runs)
}

/// The byte string of `words`.
pub fn encode(words: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(words.len() as u64).to_le_bytes());
    let mut i = 0;
    // Runs longer than a u32 are cut into segments (never the case in practice).
    let run = |from: usize, zero: bool| {
        words[from..]
            .iter()
            .take(u32::MAX as usize)
            .take_while(|&&w| (w == 0) == zero)
            .count()
    };
    while i < words.len() {
        let zeros = run(i, true);
        let literals = run(i + zeros, false);
        out.extend_from_slice(&(zeros as u32).to_le_bytes());
        out.extend_from_slice(&(literals as u32).to_le_bytes());
        for w in &words[i + zeros..i + zeros + literals] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        i += zeros + literals;
    }
    out
}

/// The words of a byte string from [`encode`], or why it is not one.
pub fn decode(bytes: &[u8]) -> Result<Vec<u64>, String> {
    let word = |at: usize| -> Option<u32> {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let n = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")))
        .ok_or("zero runs: no length")?;
    if n > MAX_WORDS {
        return Err(format!("zero runs: {n} words claimed, at most {MAX_WORDS}"));
    }
    let n = n as usize;
    let mut out: Vec<u64> = Vec::with_capacity(n);
    let mut at = 8;
    while at < bytes.len() {
        let (Some(zeros), Some(literals)) = (word(at), word(at + 4)) else {
            return Err("zero runs: a cut segment header".into());
        };
        let (zeros, literals) = (zeros as usize, literals as usize);
        at += 8;
        if zeros + literals > n - out.len() {
            return Err(format!("zero runs: more than the {n} words claimed"));
        }
        let Some(src) = bytes.get(at..at + literals * 8) else {
            return Err("zero runs: cut literal words".into());
        };
        out.resize(out.len() + zeros, 0);
        out.extend(
            src.chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes"))),
        );
        at += literals * 8;
    }
    if out.len() != n {
        return Err(format!("zero runs: {} words given, {n} claimed", out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};

    #[test]
    fn words_come_back_through_their_runs() {
        let cases: [&[u64]; 5] = [
            &[],
            &[0, 0, 0],
            &[7, 8, 9],
            &[0, 0, 1, 0, u64::MAX, 2, 0, 0, 0, 3],
            &[5, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ];
        for words in cases {
            assert_eq!(decode(&encode(words)).unwrap(), words);
        }
        // Runs are what is stored: the length, then 5,000 zeros and a word, then 4,999 zeros.
        let mut long = vec![0u64; 10_000];
        long[5_000] = 1;
        assert_eq!(encode(&long).len(), 8 + (8 + 8) + 8);
    }

    #[test]
    fn malformed_runs_are_errors() {
        let good = encode(&[0, 0, 4, 5, 0]);
        // Every cut is refused: a missing length, a cut header or cut words, too few words.
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        // More words than claimed.
        let mut more = good.clone();
        more[0] = 4;
        assert!(decode(&more).is_err());
        // A claim past the bound allocates nothing.
        let mut huge = good.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge).unwrap_err().contains("at most"));
    }
}

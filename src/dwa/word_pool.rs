//! The token words of class sets, as the final mask write reads them: each class's token
//! set stored either sparse (its nonzero 32-bit words with their indices) or dense (every
//! word of its span), whichever makes the write cheaper. Depends on nothing else.
//!
//! A sparse write is a serial scatter, a word per step; a dense one is a straight OR the
//! compiler vectorizes. Classes of most of the vocabulary (what may follow inside a
//! string, say) have thousands of nonzero words packed in their span: sparse, writing
//! them was three quarters of a typical mask.

use serde::{Deserialize, Serialize};

/// A [`WordPool`] range's tag: the range is dense (see [`WordPool`]).
const DENSE: u32 = 1 << 31;

/// A class set with at least this many nonzero words is stored dense when its span is
/// at most [`DENSE_SPAN`] times that many words (so dense costs at most twice the bytes).
const DENSE_MIN_WORDS: usize = 8;
const DENSE_SPAN: usize = 4;

/// Token sets as 32-bit mask words. A range `(a, b)` is sparse, `pairs[a..b]` holding
/// `(word index, bits)` in word order, or, with [`DENSE`] set in `a`, dense:
/// `dense[a']` is the first word's index and `dense[a' + 1..b]` the words from there on
/// (`a'` = `a` without the tag). Ranges come from [`WordPool::push`] and are checked by
/// [`WordPool::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WordPool {
    pairs: Vec<(u32, u32)>,
    dense: Vec<u32>,
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

    /// ORs the token set of range `r` into `out`.
    #[inline]
    pub fn or_into(&self, (a, b): (u32, u32), out: &mut [u32]) {
        if a & DENSE == 0 {
            for &(w, bits) in &self.pairs[a as usize..b as usize] {
                out[w as usize] |= bits;
            }
        } else {
            let a = (a & !DENSE) as usize;
            let src = &self.dense[a + 1..b as usize];
            let first = self.dense[a] as usize;
            for (o, &x) in out[first..first + src.len()].iter_mut().zip(src) {
                *o |= x;
            }
        }
    }

    /// The nonzero words of range `r`, `(word index, bits)` in word order (for tests and
    /// tools; the mask write uses [`WordPool::or_into`]).
    pub fn words(&self, (a, b): (u32, u32)) -> Vec<(u32, u32)> {
        if a & DENSE == 0 {
            return self.pairs[a as usize..b as usize].to_vec();
        }
        let a = (a & !DENSE) as usize;
        let first = self.dense[a];
        self.dense[a + 1..b as usize]
            .iter()
            .enumerate()
            .filter(|&(_, &x)| x != 0)
            .map(|(i, &x)| (first + i as u32, x))
            .collect()
    }

    /// Whether range `r` lies in the pool and writes only words below `num_words`.
    pub fn range_ok(&self, (a, b): (u32, u32), num_words: usize) -> bool {
        if a & DENSE == 0 {
            return a <= b && b as usize <= self.pairs.len();
        }
        let a = (a & !DENSE) as usize;
        a < b as usize
            && b as usize <= self.dense.len()
            && self.dense[a] as usize + (b as usize - a - 1) <= num_words
    }

    /// Whether every sparse word is below `num_words` (dense ranges are checked by
    /// [`WordPool::range_ok`]).
    pub fn pairs_ok(&self, num_words: usize) -> bool {
        self.pairs.iter().all(|&(w, _)| (w as usize) < num_words)
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
}

//! A fixed-width bitset over terminal ids plus one extra bit for end of input.
//!
//! Terminal sets are small (a grammar has tens to a few thousand terminals), dense and
//! built once, so a plain word vector beats a compressed bitmap here; token sets, which
//! are large and sparse, use `roaring` instead.

use serde::{Deserialize, Serialize};

use crate::ids::TerminalId;

/// A set of terminals over a fixed universe `0..width`.
///
/// Invariant: bits at or above `width` are zero.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct TermSet {
    words: Vec<u64>,
    width: u32,
}

impl std::fmt::Debug for TermSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries(self.iter().map(|t| t.as_u32()))
            .finish()
    }
}

impl TermSet {
    /// The empty set over `0..width`.
    pub fn new(width: usize) -> Self {
        Self {
            words: vec![0; width.div_ceil(64)],
            width: width as u32,
        }
    }

    /// The set over `0..width` whose 64-bit words are `words` (as many as `width` needs;
    /// bits at or above `width` must be zero). `None` if they do not fit.
    pub fn from_words(words: &[u64], width: usize) -> Option<Self> {
        let s = Self {
            words: words.to_vec(),
            width: u32::try_from(width).ok()?,
        };
        s.is_valid().then_some(s)
    }

    /// The 64-bit words (bits at or above the width are zero).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The universe size.
    pub fn width(&self) -> usize {
        self.width as usize
    }

    /// Adds `t`; returns whether it was new. Panics if `t` is outside the universe (a
    /// caller bug: universes are fixed by the grammar).
    #[inline]
    pub fn insert(&mut self, t: TerminalId) -> bool {
        assert!(
            t.as_u32() < self.width,
            "terminal outside the set's universe"
        );
        let (w, b) = (t.index() / 64, t.index() % 64);
        let old = self.words[w];
        self.words[w] |= 1 << b;
        old != self.words[w]
    }

    /// Whether `t` is in the set (false outside the universe).
    #[inline]
    pub fn contains(&self, t: TerminalId) -> bool {
        let (w, b) = (t.index() / 64, t.index() % 64);
        self.words.get(w).is_some_and(|x| x >> b & 1 == 1)
    }

    /// Adds every element of `other` (same universe); returns whether anything was new.
    pub fn union_with(&mut self, other: &TermSet) -> bool {
        debug_assert_eq!(self.width, other.width);
        let mut changed = false;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            let n = *a | *b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }

    /// Whether the two sets share an element.
    pub fn intersects(&self, other: &TermSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The elements in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = TerminalId> + '_ {
        ones(self.words.iter().copied())
    }

    /// The elements of `self ∩ other` (same universe) in increasing order, word by word:
    /// no element of either set outside the other is visited.
    pub fn iter_and<'a>(&'a self, other: &'a TermSet) -> impl Iterator<Item = TerminalId> + 'a {
        debug_assert_eq!(self.width, other.width);
        ones(self.words.iter().zip(&other.words).map(|(&a, &b)| a & b))
    }

    /// Checks the invariant (used when validating loaded tables).
    pub fn is_valid(&self) -> bool {
        let width = self.width as usize;
        // Only the last word can hold bits at or above the width (none when the width is a
        // multiple of 64): checked by word, not bit by bit (follow tables validate a set
        // per lexer state, 100K+ of them in large schemas).
        self.words.len() == width.div_ceil(64)
            && (width % 64 == 0 || self.words.last().is_none_or(|&w| w >> (width % 64) == 0))
    }
}

/// The set bits of consecutive 64-bit words, as terminals, in increasing order.
fn ones(words: impl Iterator<Item = u64>) -> impl Iterator<Item = TerminalId> {
    words.enumerate().flat_map(|(i, mut w)| {
        std::iter::from_fn(move || {
            if w == 0 {
                return None;
            }
            let b = w.trailing_zeros();
            w &= w - 1;
            Some(TerminalId::new(i * 64 + b as usize))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_ops() {
        let mut a = TermSet::new(130);
        assert!(a.insert(TerminalId::new(0)));
        assert!(!a.insert(TerminalId::new(0)));
        a.insert(TerminalId::new(129));
        let mut b = TermSet::new(130);
        b.insert(TerminalId::new(64));
        assert!(!a.intersects(&b));
        assert!(a.union_with(&b));
        assert!(!a.union_with(&b));
        assert_eq!(
            a.iter().map(|t| t.index()).collect::<Vec<_>>(),
            vec![0, 64, 129]
        );
        assert_eq!(a.len(), 3);
        assert!(!a.contains(TerminalId::new(500)));
        assert!(a.is_valid());
        let mut c = TermSet::new(130);
        c.insert(TerminalId::new(129));
        c.insert(TerminalId::new(1));
        c.insert(TerminalId::new(64));
        assert_eq!(
            a.iter_and(&c).map(|t| t.index()).collect::<Vec<_>>(),
            vec![64, 129]
        );
    }

    /// A set is valid when it has the width's words and no bit at or above the width, in
    /// the last word's padding or not (widths at, under and over a word boundary).
    #[test]
    fn validity_looks_at_the_padding_bits() {
        for width in [0usize, 1, 63, 64, 65, 128, 130] {
            let words = width.div_ceil(64);
            let full: Vec<u64> = (0..words)
                .map(|i| {
                    let bits = (width - 64 * i).min(64);
                    if bits == 64 {
                        u64::MAX
                    } else {
                        (1u64 << bits) - 1
                    }
                })
                .collect();
            let set = TermSet::from_words(&full, width).expect("every terminal in range");
            assert_eq!(set.len(), width);
            if width % 64 != 0 {
                let mut over = full.clone();
                *over.last_mut().unwrap() |= 1 << (width % 64);
                assert!(TermSet::from_words(&over, width).is_none(), "width {width}");
                let mut top = full.clone();
                *top.last_mut().unwrap() |= 1 << 63;
                assert!(TermSet::from_words(&top, width).is_none(), "width {width}");
            }
            assert!(TermSet::from_words(&vec![0; words + 1], width).is_none());
        }
    }
}

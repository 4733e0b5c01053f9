//! Classes with droppable lexemes, decided after the walk from the virtual classes it
//! decided (the compile side, `compile::dwa::droppable`, explains the trees), and tokens
//! left to the recognizer.

use serde::{Deserialize, Serialize};

use crate::ids::TokenId;

/// Most levels of one tree (the compile side's limit, with room to spare).
pub const MAX_LEVELS: u32 = 16;

/// One shape's decision trees: rules `rules.0..rules.1`, and the virtual classes
/// (shape-local ids `virtuals.0..virtuals.1`), cleared once the rules are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShapeDrops {
    pub rules: (u32, u32),
    pub virtuals: (u32, u32),
}

/// One class decided by one tree: allowed if the tree's leaf reached is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropRule {
    /// The class (shape-local).
    pub class: u32,
    /// Tests on every path from the root to a leaf.
    pub levels: u32,
    /// The tree's first node in [`Drops::nodes`]; it has `2^(levels+1) − 1`.
    pub start: u32,
}

/// The decision trees of every shape, and the tokens the recognizer decides.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Drops {
    /// Per shape (empty for every shape when the grammar has no droppable terminal).
    pub shapes: Vec<ShapeDrops>,
    pub rules: Vec<DropRule>,
    /// Shape-local class ids, trees in heap order: inner node `k` is a test (set: go on
    /// at `2k + 1`, else `2k + 2`), the last level the variants.
    pub nodes: Vec<u32>,
    /// Tokens with more droppable lexemes than the trees decide from some position,
    /// with their bytes: each mask commits them on the recognizer
    /// ([`crate::runtime`]).
    pub overflow: Vec<(TokenId, Vec<u8>)>,
}

impl Drops {
    /// Whether nothing is decided here (a grammar without droppable terminals).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.overflow.is_empty()
    }

    /// Sets in `decided` the classes of shape `shape` its trees allow and clears its
    /// virtual classes. `decided` holds class-space words from word `first_word`;
    /// the shape's classes start at class `base`.
    #[inline]
    pub fn apply(&self, shape: u32, base: usize, first_word: usize, decided: &mut [u64]) {
        let Some(sd) = self.shapes.get(shape as usize) else {
            return;
        };
        if sd.rules.0 == sd.rules.1 {
            return;
        }
        let at = |local: u32| base + local as usize - first_word * 64;
        let get = |d: &[u64], local: u32| {
            let i = at(local);
            (d[i / 64] >> (i % 64)) & 1 != 0
        };
        // Word by word over the virtual classes: whether the walk decided any, and then
        // none left (every tree node is a virtual class, so with none decided every tree
        // ends on a clear leaf and decides nothing).
        let (lo, hi) = (at(sd.virtuals.0), at(sd.virtuals.1));
        let any = range_words(lo, hi).fold(0, |any, (w, bits)| any | (decided[w] & bits));
        if any == 0 {
            return;
        }
        for r in &self.rules[sd.rules.0 as usize..sd.rules.1 as usize] {
            let tree = &self.nodes[r.start as usize..];
            let mut k = 0usize;
            for _ in 0..r.levels {
                k = if get(decided, tree[k]) {
                    2 * k + 1
                } else {
                    2 * k + 2
                };
            }
            if get(decided, tree[k]) {
                let i = at(r.class);
                decided[i / 64] |= 1 << (i % 64);
            }
        }
        for (w, bits) in range_words(lo, hi) {
            decided[w] &= !bits;
        }
    }

    /// Checks the trees against each shape's class count (`classes[s]`).
    pub fn validate(&self, classes: &[u32]) -> Result<(), String> {
        if !self.shapes.is_empty() && self.shapes.len() != classes.len() {
            return Err("drop trees for a different number of shapes".into());
        }
        for (sd, &n) in self.shapes.iter().zip(classes) {
            let (lo, hi) = sd.virtuals;
            if lo > hi
                || hi > n
                || sd.rules.0 > sd.rules.1
                || sd.rules.1 as usize > self.rules.len()
            {
                return Err("drop tree ranges out of bounds".into());
            }
            for r in &self.rules[sd.rules.0 as usize..sd.rules.1 as usize] {
                if r.class >= lo || r.levels > MAX_LEVELS {
                    return Err("drop rule decides a virtual class or is too deep".into());
                }
                let len = (1usize << (r.levels + 1)) - 1;
                let Some(tree) = self.nodes.get(r.start as usize..r.start as usize + len) else {
                    return Err("drop tree outside its nodes".into());
                };
                if tree.iter().any(|&c| c < lo || c >= hi) {
                    return Err("drop tree node is not a virtual class".into());
                }
            }
        }
        Ok(())
    }
}

/// The bits `lo..hi` as `(word index, bits of that word)`, word by word.
fn range_words(lo: usize, hi: usize) -> impl Iterator<Item = (usize, u64)> {
    let mut i = lo;
    std::iter::from_fn(move || {
        if i >= hi {
            return None;
        }
        let w = i / 64;
        let end = hi.min((w + 1) * 64);
        let bits = if end - i == 64 {
            u64::MAX
        } else {
            ((1u64 << (end - i)) - 1) << (i % 64)
        };
        i = end;
        Some((w, bits))
    })
}

//! Classes behind an indenter, decided after the walk from the virtual classes it decided
//! (the compile side, `compile::dwa::indentation`, explains the rules): each rule ORs
//! its terms' variants into its class, reading the configuration's walk or, for a newline
//! lexeme emitted first, the walk from the stacks the indenter leaves after it.

use serde::{Deserialize, Serialize};

/// One shape's rule groups `groups.0..groups.1` and virtual classes (shape-local ids
/// `virtuals.0..virtuals.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShapeIndents {
    pub groups: (u32, u32),
    pub virtuals: (u32, u32),
}

/// Rules `rules.0..rules.1`, whose classes' newline lexeme (after ignored ones only) has
/// one tag: whether its bytes in the token hold a newline, and the width after the last
/// one (or of all of them, to add to the pending lexeme's when it is the token's first;
/// `u32::MAX` when it starts in the token without a newline, and cannot be `_NL`).
/// `None`: classes without such a lexeme. One resolution serves the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndentGroup {
    pub first: Option<(bool, u32)>,
    pub rules: (u32, u32),
}

/// A class (shape-local) decided by terms `terms.0..terms.1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndentRule {
    pub class: u32,
    pub terms: (u32, u32),
}

/// A variant a rule reads: `out`, or `inside` when brackets are open at the token's end
/// (the configuration's plus `delta`), from the configuration's walk or (`stay`) from
/// the walk after its newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndentTerm {
    pub stay: bool,
    pub delta: i32,
    pub out: u32,
    pub inside: u32,
}

/// The rules of every shape (empty without an indenter).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Indents {
    pub shapes: Vec<ShapeIndents>,
    pub groups: Vec<IndentGroup>,
    pub rules: Vec<IndentRule>,
    pub terms: Vec<IndentTerm>,
}

/// What the indenter leaves after a newline lexeme, for the stacks to read: the same
/// stacks (inside brackets), the stacks after the newline and its indent or dedents
/// (`Shifted(k)`: `k` levels left open), or nothing (no newline, or a dedent to a level
/// never opened).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolved {
    Same,
    Shifted(usize),
    Dead,
}

/// A configuration's indentation as the rules read it.
#[derive(Debug, Clone, Copy)]
pub struct Indentation<'a> {
    /// Open levels above level 0.
    pub levels: &'a [u32],
    pub brackets: u32,
    /// The pending lexeme's tail: whether it holds a newline, and the width after it.
    pub tail: (bool, u32),
}

impl Indentation<'_> {
    /// What a newline lexeme emitted first, with the token's bytes up to its end tagged
    /// `first`, resolves to.
    pub fn resolve(&self, first: (bool, u32)) -> Resolved {
        if self.brackets > 0 {
            return Resolved::Same;
        }
        if first == (false, u32::MAX) {
            return Resolved::Dead;
        }
        let (newline, width) = if first.0 {
            first
        } else {
            (self.tail.0, self.tail.1.saturating_add(first.1))
        };
        if !newline {
            return Resolved::Dead;
        }
        let top = self.levels.last().copied().unwrap_or(0);
        if width > top {
            return Resolved::Shifted(self.levels.len() + 1);
        }
        // Popped down to a level equal to `width` (level 0 is always open).
        let kept = self.levels.partition_point(|&l| l <= width);
        let at = if kept == 0 { 0 } else { self.levels[kept - 1] };
        if at == width {
            Resolved::Shifted(kept)
        } else {
            Resolved::Dead
        }
    }
}

impl Indents {
    /// Whether shape `shape` has rules.
    #[inline]
    pub fn has_rules(&self, shape: u32) -> bool {
        self.shapes
            .get(shape as usize)
            .is_some_and(|s| s.groups.0 < s.groups.1)
    }

    /// The resolutions shape `shape`'s rules read walks for (each once, `Same` and
    /// `Dead` left out: `Same` is the configuration's own walk).
    pub fn needed(&self, shape: u32, ind: &Indentation<'_>, out: &mut Vec<Resolved>) {
        let Some(sd) = self.shapes.get(shape as usize) else {
            return;
        };
        for g in &self.groups[sd.groups.0 as usize..sd.groups.1 as usize] {
            if let Some(first) = g.first {
                let res = ind.resolve(first);
                if matches!(res, Resolved::Shifted(_)) && !out.contains(&res) {
                    out.push(res);
                }
            }
        }
    }

    /// Sets in `decided` the classes of shape `shape` its rules allow and clears its
    /// virtual classes. `decided` (this configuration's walk) and each of `after` (the
    /// walk after a newline resolved so) hold class-space words from word `first_word`;
    /// the shape's classes start at class `base`.
    pub fn apply(
        &self,
        shape: u32,
        base: usize,
        first_word: usize,
        ind: &Indentation<'_>,
        after: &[(Resolved, Vec<u64>)],
        decided: &mut [u64],
    ) {
        let Some(sd) = self.shapes.get(shape as usize) else {
            return;
        };
        if sd.groups.0 == sd.groups.1 {
            return;
        }
        let at = |local: u32| base + local as usize - first_word * 64;
        let get = |d: &[u64], local: u32| {
            let i = at(local);
            (d[i / 64] >> (i % 64)) & 1 != 0
        };
        let b = i64::from(ind.brackets);
        for g in &self.groups[sd.groups.0 as usize..sd.groups.1 as usize] {
            // The walk the group's stay terms read (`None`: their reading dies;
            // `usize::MAX`: the configuration's own).
            let stay_at: Option<usize> = match g.first.map(|f| ind.resolve(f)) {
                None | Some(Resolved::Dead) => None,
                Some(Resolved::Same) => Some(usize::MAX),
                Some(k) => after.iter().position(|(x, _)| *x == k),
            };
            for r in &self.rules[g.rules.0 as usize..g.rules.1 as usize] {
                let mut on = false;
                for t in &self.terms[r.terms.0 as usize..r.terms.1 as usize] {
                    let v = if b + i64::from(t.delta) > 0 {
                        t.inside
                    } else {
                        t.out
                    };
                    let words: &[u64] = match (t.stay, stay_at) {
                        (false, _) | (true, Some(usize::MAX)) => decided,
                        (true, Some(k)) => &after[k].1,
                        (true, None) => continue,
                    };
                    if get(words, v) {
                        on = true;
                        break;
                    }
                }
                if on {
                    let i = at(r.class);
                    decided[i / 64] |= 1 << (i % 64);
                }
            }
        }
        let (lo, hi) = (at(sd.virtuals.0), at(sd.virtuals.1));
        for i in lo..hi {
            decided[i / 64] &= !(1 << (i % 64));
        }
    }

    /// Checks every rule's classes lie in its shape (`classes[s]`: shape `s`'s count) and
    /// its terms' variants among the shape's virtual classes.
    pub fn validate(&self, classes: &[u32]) -> Result<(), String> {
        if self.shapes.is_empty() {
            return if self.rules.is_empty() && self.terms.is_empty() {
                Ok(())
            } else {
                Err("indentation rules without shapes".into())
            };
        }
        if self.shapes.len() != classes.len() {
            return Err("indentation rules for another number of shapes".into());
        }
        let in_bounds = |(lo, hi): (u32, u32), len: usize| lo <= hi && hi as usize <= len;
        for (sd, &n) in self.shapes.iter().zip(classes) {
            let (lo, hi) = sd.virtuals;
            if lo > hi || hi > n || !in_bounds(sd.groups, self.groups.len()) {
                return Err("indentation rule ranges out of bounds".into());
            }
            let groups = &self.groups[sd.groups.0 as usize..sd.groups.1 as usize];
            if groups.iter().any(|g| !in_bounds(g.rules, self.rules.len())) {
                return Err("indentation rule ranges out of bounds".into());
            }
            for r in groups
                .iter()
                .flat_map(|g| &self.rules[g.rules.0 as usize..g.rules.1 as usize])
            {
                if r.class >= lo || !in_bounds(r.terms, self.terms.len()) {
                    return Err("indentation rule decides a virtual class".into());
                }
                for t in &self.terms[r.terms.0 as usize..r.terms.1 as usize] {
                    if [t.out, t.inside].iter().any(|&c| c < lo || c >= hi) {
                        return Err("indentation term is not a virtual class".into());
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(levels: &'a [u32], brackets: u32, tail: (bool, u32)) -> Indentation<'a> {
        Indentation {
            levels,
            brackets,
            tail,
        }
    }

    #[test]
    fn a_newline_resolves_as_lark_s_indenter_compares_widths() {
        let ind = at(&[4, 8], 0, (false, 0));
        // Deeper: one more level.
        assert_eq!(ind.resolve((true, 12)), Resolved::Shifted(3));
        // Same width: no level changes.
        assert_eq!(ind.resolve((true, 8)), Resolved::Shifted(2));
        // Back to 4, or to 0: one or two dedents.
        assert_eq!(ind.resolve((true, 4)), Resolved::Shifted(1));
        assert_eq!(ind.resolve((true, 0)), Resolved::Shifted(0));
        // Between levels: rejected.
        assert_eq!(ind.resolve((true, 6)), Resolved::Dead);
        assert_eq!(ind.resolve((true, 2)), Resolved::Dead);
        // No newline in the token or the pending lexeme: the `_NL` reading dies.
        assert_eq!(ind.resolve((false, 4)), Resolved::Dead);
    }

    #[test]
    fn a_pending_newline_s_width_adds_the_token_s() {
        // "\n  " pending, then two more spaces in the token: width 4; three: 5.
        let ind = at(&[4, 8], 0, (true, 2));
        assert_eq!(ind.resolve((false, 2)), Resolved::Shifted(1));
        assert_eq!(ind.resolve((false, 3)), Resolved::Dead);
        // A newline in the token starts the width over.
        assert_eq!(ind.resolve((true, 0)), Resolved::Shifted(0));
    }

    #[test]
    fn inside_brackets_a_newline_leaves_the_stacks() {
        let ind = at(&[4], 1, (false, 0));
        assert_eq!(ind.resolve((true, 7)), Resolved::Same);
        assert_eq!(ind.resolve((false, 0)), Resolved::Same);
    }
}

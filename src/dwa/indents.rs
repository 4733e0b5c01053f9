//! Classes behind an indenter, decided after the walk from the virtual classes it decided
//! (the compile side, `compile::dwa::indentation`, explains the rules): each rule ORs
//! its terms' variants into its class, reading the configuration's walk or, for a newline
//! lexeme emitted first, the walk from the stacks the indenter leaves after it. Each walk
//! carries only what is read from it ([`Indents::riders`]): at a statement boundary the
//! walk after the newline carries the stay variants alone, not the shape's thousands of
//! classes. The rules are evaluated from the variants the walks set ([`Indents::apply`]
//! visits each set variant's terms), so a mask pays for those, not for every rule.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::derived::Derived;

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
    /// Per shape, the variants each walk carries, made on the shape's first mask.
    #[serde(skip)]
    riders: RiderMemo,
}

/// Per shape (on first use): its virtual classes, and per group the variants its terms
/// read from the configuration's walk (`plain`) and from the walk after the newline
/// (`stay`), out and inside alike, as class-space words over the shape's word range (bit
/// `i` is word `i / 64` of that range); and the terms by the variant they read, so that
/// deciding the classes costs the variants a walk set, not the shape's rules.
#[derive(Debug)]
struct ShapeRiders {
    virtuals: Vec<u64>,
    plain: Vec<Vec<u64>>,
    stay: Vec<Vec<u64>>,
    /// The terms reading variant bit `lo + i` are `fans[fan[i]..fan[i + 1]]` (`lo`: the
    /// first virtual class's bit).
    fan: Vec<u32>,
    fans: Vec<Fan>,
}

/// A term as its variant sees it: it sets bit `class` where it reads this variant from
/// the walk `from` names (0: the configuration's; `g + 1`: the walk group `g`'s newline
/// resolves to). A term reads its `inside` variant where `brackets ≥ at` and its `out`
/// variant elsewhere: `inside` says which this is (a term whose two variants are one has
/// one fan, `at` = `i32::MIN`, `inside` set).
#[derive(Debug, Clone, Copy)]
struct Fan {
    class: u32,
    from: u32,
    at: i32,
    inside: bool,
}

/// [`ShapeRiders`] per shape, each made on its shape's first mask.
type RiderMemo = Derived<Box<[OnceLock<ShapeRiders>]>>;

/// The bit of shape-local class `local` in class-space words from word `first_word`, the
/// shape's classes starting at class `base`.
#[inline]
fn at_bit(base: usize, first_word: usize, local: u32) -> u32 {
    (base + local as usize - first_word * 64) as u32
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

/// A configuration's indentation as the rules read it: a borrowed view of the
/// recognizer's `glr::Indentation`, with the pending lexeme's tail.
#[derive(Debug, Clone, Copy)]
pub struct IndentView<'a> {
    /// Open levels above level 0.
    pub levels: &'a [u32],
    pub brackets: u32,
    /// The pending lexeme's tail: whether it holds a newline, and the width after it.
    pub tail: (bool, u32),
}

impl IndentView<'_> {
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
    pub fn needed(&self, shape: u32, ind: &IndentView<'_>, out: &mut Vec<Resolved>) {
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

    /// Shape `shape`'s [`ShapeRiders`] (`cw` words from `first_word`; its classes from
    /// class `base`), made on first use.
    fn shape_riders(&self, shape: u32, base: usize, first_word: usize, cw: usize) -> &ShapeRiders {
        let memo = self
            .riders
            .get_or_init(|| self.shapes.iter().map(|_| OnceLock::new()).collect());
        memo[shape as usize].get_or_init(|| {
            let sd = self.shapes[shape as usize];
            let at = |local: u32| base + local as usize - first_word * 64;
            let set = |d: &mut [u64], local: u32| {
                let i = at(local);
                d[i / 64] |= 1 << (i % 64);
            };
            let mut virtuals = vec![0u64; cw];
            for v in sd.virtuals.0..sd.virtuals.1 {
                set(&mut virtuals, v);
            }
            let groups = &self.groups[sd.groups.0 as usize..sd.groups.1 as usize];
            let mut plain = vec![vec![0u64; cw]; groups.len()];
            let mut stay = vec![vec![0u64; cw]; groups.len()];
            // Each term as the fans of its variants: (variant, fan).
            let each_fan = |visit: &mut dyn FnMut(u32, Fan)| {
                for (g, group) in groups.iter().enumerate() {
                    for r in &self.rules[group.rules.0 as usize..group.rules.1 as usize] {
                        for t in &self.terms[r.terms.0 as usize..r.terms.1 as usize] {
                            let fan = |at, inside| Fan {
                                class: at_bit(base, first_word, r.class),
                                from: if t.stay { g as u32 + 1 } else { 0 },
                                at,
                                inside,
                            };
                            if t.out == t.inside {
                                visit(t.out, fan(i32::MIN, true));
                            } else {
                                // Inside where `brackets + delta > 0`: `brackets ≥ 1 - delta`.
                                let at = 1i32.saturating_sub(t.delta);
                                visit(t.inside, fan(at, true));
                                visit(t.out, fan(at, false));
                            }
                        }
                    }
                }
            };
            for (g, group) in groups.iter().enumerate() {
                for r in &self.rules[group.rules.0 as usize..group.rules.1 as usize] {
                    for t in &self.terms[r.terms.0 as usize..r.terms.1 as usize] {
                        let words = if t.stay { &mut stay[g] } else { &mut plain[g] };
                        set(words, t.out);
                        set(words, t.inside);
                    }
                }
            }
            // The fans by variant: counted, then placed (a counting sort).
            let nv = (sd.virtuals.1 - sd.virtuals.0) as usize;
            let mut fan = vec![0u32; nv + 1];
            each_fan(&mut |v, _| fan[(v - sd.virtuals.0) as usize + 1] += 1);
            for i in 0..nv {
                fan[i + 1] += fan[i];
            }
            let mut fans = vec![
                Fan {
                    class: 0,
                    from: 0,
                    at: 0,
                    inside: false
                };
                fan[nv] as usize
            ];
            let mut next = fan.clone();
            each_fan(&mut |v, f| {
                let i = &mut next[(v - sd.virtuals.0) as usize];
                fans[*i as usize] = f;
                *i += 1;
            });
            ShapeRiders {
                virtuals,
                plain,
                stay,
                fan,
                fans,
            }
        })
    }

    /// Makes the [`ShapeRiders`] of every shape with rules placed as `placed` yields
    /// `(shape, base, first_word, cw)` (see [`Indents::riders`]), so that no mask pays for
    /// its shape's: the largest shapes take tens of microseconds.
    pub fn prepare(&self, placed: impl Iterator<Item = (u32, usize, usize, usize)>) {
        for (shape, base, first_word, cw) in placed {
            if self.has_rules(shape) {
                self.shape_riders(shape, base, first_word, cw);
            }
        }
    }

    /// The classes each walk of shape `shape` carries (`cw` words from `first_word`; the
    /// shape's classes from class `base`; `mine` holds them all on entry): in `mine`, the
    /// configuration's walk keeps its real classes and the variants a rule may read from
    /// it; in `stay[i]`, the walk after the newline resolved as `needed[i]` carries only
    /// the variants its rules may read from it. A variant no rule reads (a group whose
    /// newline reading dies) rides on no walk. The walk is linear in its classes, so
    /// what it decides for the rest is unchanged.
    #[allow(clippy::too_many_arguments)]
    pub fn riders(
        &self,
        shape: u32,
        base: usize,
        first_word: usize,
        ind: &IndentView<'_>,
        needed: &[Resolved],
        mine: &mut [u64],
        stay: &mut [Vec<u64>],
    ) {
        let Some(sd) = self.shapes.get(shape as usize) else {
            return;
        };
        let sr = self.shape_riders(shape, base, first_word, mine.len());
        let or = |d: &mut [u64], s: &[u64]| d.iter_mut().zip(s).for_each(|(d, s)| *d |= s);
        for (m, v) in mine.iter_mut().zip(&sr.virtuals) {
            *m &= !v;
        }
        let groups = &self.groups[sd.groups.0 as usize..sd.groups.1 as usize];
        for (g, group) in groups.iter().enumerate() {
            or(mine, &sr.plain[g]);
            match group.first.map(|f| ind.resolve(f)) {
                None | Some(Resolved::Dead) => {}
                Some(Resolved::Same) => or(mine, &sr.stay[g]),
                Some(k) => {
                    if let Some(i) = needed.iter().position(|&x| x == k) {
                        or(&mut stay[i], &sr.stay[g]);
                    }
                }
            }
        }
    }

    /// Sets in `decided` the classes of shape `shape` its rules allow and clears its
    /// virtual classes. `decided` (this configuration's walk) and each of `after` (the
    /// walk after a newline resolved so) hold class-space words from word `first_word`;
    /// the shape's classes start at class `base`. Costs the variants the walks set (a
    /// fifth of a large shape's at a statement boundary) and a pass over the variants'
    /// words, not one step per rule.
    pub fn apply(
        &self,
        shape: u32,
        base: usize,
        first_word: usize,
        ind: &IndentView<'_>,
        after: &[(Resolved, Vec<u64>)],
        decided: &mut [u64],
    ) {
        let Some(sd) = self.shapes.get(shape as usize) else {
            return;
        };
        if sd.groups.0 == sd.groups.1 {
            return;
        }
        let sr = self.shape_riders(shape, base, first_word, decided.len());
        // The walk each fan's `from` reads: 0 none (its newline reading dies), 1 the
        // configuration's, `k + 2` the walk `after[k]`.
        let mut walk_of: SmallVec<[u32; 16]> = SmallVec::new();
        walk_of.push(1);
        for g in &self.groups[sd.groups.0 as usize..sd.groups.1 as usize] {
            walk_of.push(match g.first.map(|f| ind.resolve(f)) {
                None | Some(Resolved::Dead) => 0,
                Some(Resolved::Same) => 1,
                Some(k) => after
                    .iter()
                    .position(|(x, _)| *x == k)
                    .map_or(0, |i| i as u32 + 2),
            });
        }
        let b = i32::try_from(ind.brackets).unwrap_or(i32::MAX);
        let lo = at_bit(base, first_word, sd.virtuals.0) as usize;
        let hi = at_bit(base, first_word, sd.virtuals.1) as usize;
        if lo == hi {
            return;
        }
        // Rule classes are real (`validate`), so the variant bits read below are those
        // the walks set, whatever this sets meanwhile.
        for walk in 1..=after.len() as u32 + 1 {
            for wi in lo / 64..hi.div_ceil(64) {
                let word = if walk == 1 {
                    decided[wi]
                } else {
                    after[walk as usize - 2].1[wi]
                };
                let mut x = word & sr.virtuals[wi];
                while x != 0 {
                    let v = wi * 64 + x.trailing_zeros() as usize - lo;
                    x &= x - 1;
                    for f in &sr.fans[sr.fan[v] as usize..sr.fan[v + 1] as usize] {
                        let on = (walk_of[f.from as usize] == walk) & ((b >= f.at) == f.inside);
                        decided[f.class as usize / 64] |= u64::from(on) << (f.class % 64);
                    }
                }
            }
        }
        for (d, v) in decided.iter_mut().zip(&sr.virtuals) {
            *d &= !v;
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

    fn at<'a>(levels: &'a [u32], brackets: u32, tail: (bool, u32)) -> IndentView<'a> {
        IndentView {
            levels,
            brackets,
            tail,
        }
    }

    /// Random rules over one shape of `real` classes (placed from class `base`) and
    /// `virt` variants: groups with and without a newline tag, one or two terms a rule.
    fn random_rules(rng: &mut crate::rng::SplitMix64, real: u32, virt: u32) -> Indents {
        let mut ix = Indents::default();
        let tags = [Some((true, 4)), Some((true, 0)), Some((false, 4)), None];
        let mut class = 0;
        for first in tags {
            let lo = ix.rules.len() as u32;
            while class < real && !(rng.chance(0.2) && ix.rules.len() as u32 > lo) {
                let t0 = ix.terms.len() as u32;
                for _ in 0..1 + rng.below(2) {
                    ix.terms.push(IndentTerm {
                        stay: rng.chance(0.6),
                        delta: rng.below(5) as i32 - 2,
                        out: real + rng.below(virt as usize) as u32,
                        inside: real + rng.below(virt as usize) as u32,
                    });
                }
                ix.rules.push(IndentRule {
                    class,
                    terms: (t0, ix.terms.len() as u32),
                });
                class += 1 + rng.below(2) as u32;
            }
            ix.groups.push(IndentGroup {
                first,
                rules: (lo, ix.rules.len() as u32),
            });
        }
        ix.shapes.push(ShapeIndents {
            groups: (0, ix.groups.len() as u32),
            virtuals: (real, real + virt),
        });
        ix
    }

    /// Rules' classes, variants and walks read as the module docs say, one rule at a
    /// time: what `apply` must set, and the variants each walk must carry.
    #[test]
    fn rules_decide_classes_from_the_walks_their_riders_ride() {
        let mut rng = crate::rng::SplitMix64::new(7);
        let (base, first_word) = (70usize, 1usize);
        for round in 0..200 {
            let (real, virt) = (40 + rng.below(60) as u32, 10 + rng.below(80) as u32);
            let ix = random_rules(&mut rng, real, virt);
            let cw = (base + (real + virt) as usize).div_ceil(64) - first_word;
            let bit = |local: u32| base + local as usize - first_word * 64;
            let get = |d: &[u64], local: u32| d[bit(local) / 64] >> (bit(local) % 64) & 1 != 0;
            let levels = [4u32];
            let ind = IndentView {
                levels: &levels,
                brackets: [0, 0, 1, 2, 3][round % 5],
                tail: (round % 3 == 0, 2),
            };
            let mut needed = Vec::new();
            ix.needed(0, &ind, &mut needed);
            let random_words = |rng: &mut crate::rng::SplitMix64| -> Vec<u64> {
                (0..cw).map(|_| rng.next_u64()).collect()
            };
            let walked = random_words(&mut rng);
            let after: Vec<(Resolved, Vec<u64>)> = needed
                .iter()
                .map(|&r| (r, random_words(&mut rng)))
                .collect();
            // Riders: everything the configuration's walk held, minus variants.
            let mut mine = vec![u64::MAX; cw];
            let mut stay = vec![vec![0u64; cw]; needed.len()];
            ix.riders(0, base, first_word, &ind, &needed, &mut mine, &mut stay);
            let mut decided = walked.clone();
            ix.apply(0, base, first_word, &ind, &after, &mut decided);
            let mut expect = walked.clone();
            for v in real..real + virt {
                expect[bit(v) / 64] &= !(1 << (bit(v) % 64));
            }
            for g in &ix.groups {
                let res = g.first.map(|f| ind.resolve(f));
                for r in &ix.rules[g.rules.0 as usize..g.rules.1 as usize] {
                    let mut on = get(&walked, r.class);
                    for t in &ix.terms[r.terms.0 as usize..r.terms.1 as usize] {
                        let inside = i64::from(ind.brackets) + i64::from(t.delta) > 0;
                        let v = if inside { t.inside } else { t.out };
                        let walk: Option<&[u64]> = match (t.stay, res) {
                            (false, _) | (true, Some(Resolved::Same)) => Some(&walked),
                            (true, Some(k @ Resolved::Shifted(_))) => {
                                let i = needed.iter().position(|&x| x == k).unwrap();
                                assert!(get(&stay[i], v), "round {round}: a stay variant rides");
                                Some(&after[i].1)
                            }
                            (true, _) => None,
                        };
                        if let Some(w) = walk {
                            if std::ptr::eq(w, walked.as_slice()) {
                                assert!(get(&mine, v), "round {round}: a plain variant rides");
                            }
                            on |= get(w, v);
                        }
                    }
                    if on {
                        expect[bit(r.class) / 64] |= 1 << (bit(r.class) % 64);
                    }
                }
            }
            assert_eq!(decided, expect, "round {round}");
            // Real classes ride the configuration's walk; no variant rides a walk after
            // a newline that no group resolved to.
            for c in 0..real {
                assert!(get(&mine, c));
            }
            for (i, k) in needed.iter().enumerate() {
                let resolved_here = ix
                    .groups
                    .iter()
                    .any(|g| g.first.map(|f| ind.resolve(f)) == Some(*k));
                assert!(resolved_here || stay[i].iter().all(|&w| w == 0));
            }
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

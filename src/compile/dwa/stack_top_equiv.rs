//! Pass: LR tables → which LR states and productions the mask automaton cannot tell
//! apart.
//!
//! The automaton's suspended effects use a production only for its left-hand side (the
//! goto taken once the ids below are read) and its length (how many ids are still to
//! pop, kept in the effect itself), so productions with one left-hand side are
//! interchangeable there ([`canonical_productions`]). And what the riding classes do on
//! a known stack topped by a state depends on that state only through its behaviour:
//! its actions (shift targets up to equivalence, reductions by left-hand side and length,
//! accept) and its gotos (targets up to equivalence). States alike in that sense
//! ([`state_classes`], the coarsest such partition) give equal starts, so only one per
//! class is explored. JSON Schema grammars repeat a few shapes in many places (a value
//! rule written once per property, a key list per object): their largest MaskBench
//! tables have 4–5 times fewer classes than states.
//!
//! Depends on the LR table; build time only.

use hashbrown::HashMap;

use crate::ids::{LrStateId, NonterminalId, ProductionId};
use crate::lr::{Action, LrTable};
use crate::termset::TermSet;

/// For every state, the terminals (end of input included) it has any action on.
pub fn actionable_terminals(lr: &LrTable) -> Vec<TermSet> {
    let width = lr.num_terminals() + 1;
    (0..lr.num_states())
        .map(|x| {
            let mut set = TermSet::new(width);
            for t in lr.acting_terminals(LrStateId::new(x)) {
                set.insert(t);
            }
            set
        })
        .collect()
}

/// For every production, the least production with the same left-hand side.
pub fn canonical_productions(lr: &LrTable) -> Vec<ProductionId> {
    let mut first: HashMap<NonterminalId, ProductionId> = HashMap::new();
    (0..lr.num_productions())
        .map(|p| {
            let p = ProductionId::new(p);
            *first.entry(lr.lhs(p)).or_insert(p)
        })
        .collect()
}

/// For every state, its class (numbered by first appearance in state order) in the
/// coarsest partition where states of one class have actions on the same terminals
/// (`actionable[s]` holds the terminals `s` has any action on), the same actions there up
/// to the classes of shift targets and the left-hand side and length of reductions, and
/// the same gotos up to the classes of their targets.
pub fn state_classes(lr: &LrTable, actionable: &[TermSet]) -> Vec<u32> {
    let n = lr.num_states();
    // Each state's actions once, sparse: refinement rounds read only these.
    let rows: Vec<Vec<(u32, Action)>> = (0..n)
        .map(|s| {
            let x = LrStateId::new(s);
            actionable[s]
                .iter()
                .flat_map(|t| lr.actions(x, t).iter().map(move |&a| (t.as_u32(), a)))
                .collect()
        })
        .collect();
    let mut class = vec![0u32; n];
    let mut count = 1;
    let mut sig: Vec<u32> = Vec::new();
    loop {
        let mut index: HashMap<Vec<u32>, u32> = HashMap::with_capacity(count);
        let mut next = Vec::with_capacity(n);
        for (s, row) in rows.iter().enumerate() {
            // The previous class first: every round refines the last one, so a round
            // that splits nothing is the fixpoint.
            sig.clear();
            sig.push(class[s]);
            for &(t, a) in row {
                sig.push(t);
                match a {
                    Action::Shift(y) => sig.extend([0, class[y.index()]]),
                    Action::Reduce(p) => sig.extend([1, lr.lhs(p).as_u32(), lr.rhs_len(p) as u32]),
                    Action::Accept => sig.push(2),
                }
            }
            // A separator: action rows and goto rows cannot run into each other.
            sig.push(u32::MAX);
            for &(a, y) in lr.gotos(LrStateId::new(s)) {
                sig.extend([a.as_u32(), class[y.index()]]);
            }
            let fresh = index.len() as u32;
            let c = match index.get(sig.as_slice()) {
                Some(&c) => c,
                None => {
                    index.insert(sig.clone(), fresh);
                    fresh
                }
            };
            next.push(c);
        }
        let c = index.len();
        class = next;
        if c == count {
            return class;
        }
        count = c;
    }
}

/// For every state, the least state of its class (`class` as [`state_classes`] gives it).
pub fn class_representatives(class: &[u32]) -> Vec<LrStateId> {
    let mut first: HashMap<u32, LrStateId> = HashMap::new();
    class
        .iter()
        .enumerate()
        .map(|(s, &c)| *first.entry(c).or_insert(LrStateId::new(s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::build_glr_tables;
    use crate::compile::frontend::lark::compile;

    /// Alternatives of one rule that end alike (`"n"` / `"m"` / `"k"` each reduce to `x`
    /// on the same lookaheads) share a class, and no class mixes states whose rows differ.
    #[test]
    fn alike_states_share_classes_and_classes_agree_on_rows() {
        let g = compile(
            r#"
            start: "a" xs "!" | "b" ys "?"
            xs: x | xs "," x
            ys: y | ys ";" y
            x: "n" | "m" | "k"
            y: "n" | "m"
            "#,
        )
        .unwrap();
        let tables = build_glr_tables(&g).unwrap();
        let lr = &tables.lr;
        let act = actionable_terminals(lr);
        let class = state_classes(lr, &act);
        let distinct = class.iter().collect::<std::collections::HashSet<_>>().len();
        assert!(
            distinct < lr.num_states(),
            "{distinct} of {}",
            lr.num_states()
        );
        // Within a class: the same terminals, the same kinds of actions with the same
        // reductions' shapes, the same goto nonterminals.
        for a in 0..lr.num_states() {
            for b in 0..lr.num_states() {
                if class[a] != class[b] {
                    continue;
                }
                let (x, y) = (LrStateId::new(a), LrStateId::new(b));
                assert_eq!(act[a], act[b]);
                for t in act[a].iter() {
                    let shape = |s: LrStateId| -> Vec<(u8, u32, usize)> {
                        lr.actions(s, t)
                            .iter()
                            .map(|&ac| match ac {
                                Action::Shift(z) => (0, class[z.index()], 0),
                                Action::Reduce(p) => (1, lr.lhs(p).as_u32(), lr.rhs_len(p)),
                                Action::Accept => (2, 0, 0),
                            })
                            .collect()
                    };
                    assert_eq!(shape(x), shape(y));
                }
                let gotos = |s: LrStateId| -> Vec<(u32, u32)> {
                    lr.gotos(s)
                        .iter()
                        .map(|&(n, z)| (n.as_u32(), class[z.index()]))
                        .collect()
                };
                assert_eq!(gotos(x), gotos(y));
            }
        }
    }

    #[test]
    fn canonical_productions_keep_the_left_hand_side() {
        let g = compile("start: a | a a\na: \"x\" | \"y\"\n").unwrap();
        let tables = build_glr_tables(&g).unwrap();
        let lr = &tables.lr;
        let canon = canonical_productions(lr);
        for p in 0..lr.num_productions() {
            let p = ProductionId::new(p);
            let c = canon[p.index()];
            assert_eq!(lr.lhs(c), lr.lhs(p));
            assert!(c <= p);
            assert_eq!(canon[c.index()], c);
        }
    }
}

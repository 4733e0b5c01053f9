//! Riders no edge can decide, dropped from the filters, and weights nothing reads, dropped
//! from the automaton (after determinization).
//!
//! An edge's target carries on the riders in its filter: the classes that may still be
//! decided below. The explorations that made the filters follow each class as long as
//! some reduction is pending for it, whether or not any stack below could ever let it
//! through. On an ambiguous grammar a class can so ride to the bottom of every stack
//! without being decided: after `1 + 2 * 3`, the token `**` (two operators, the second
//! one never shiftable) waits on every reduction of `e: e "+" e | e "*" e`, and every
//! mask read the whole stack.
//!
//! A class in no edge's decided set is decided by no walk: it is cut from every filter,
//! and a target whose filter held nothing else goes. Exact: dropping a class no walk can
//! decide changes no decided set; a walk only stops earlier. The rules after the walk
//! (`droppable`, `indentation`) read only decided classes, which no filter loses.
//! Cutting each filter to the classes some path from its own target decides (a least
//! fixpoint over the states) is not done: it cost `python.lark` 3 s of compile.
//!
//! Then the weights no edge, target or shape refers to (sets interned while the
//! automaton was built, filters just replaced) go: the merge of `class_blocks` would
//! otherwise keep apart the classes they tell apart, and the freeze would store them.

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use super::determinize::Det;
use crate::ids::WeightId;

/// Filters cut and targets removed (read by the tests).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pruned {
    /// Targets whose filter lost some classes.
    pub cut: usize,
    /// Targets whose filter lost every class.
    pub removed: usize,
}

/// Cuts the classes no edge decides from every filter of `det`, and removes the targets
/// left with none; then drops the weights nothing refers to (`shape_classes` refer to
/// weights too), so that the merge and the freeze after this pass see only the sets a
/// walk can read (see the module docs).
pub(super) fn prune(det: &mut Det, shape_classes: &mut [WeightId]) -> Pruned {
    let decidable = decidable(det);
    // Per filter, the filter cut (itself where it lost nothing; 0 where it lost all).
    let mut made: HashMap<WeightId, WeightId> = HashMap::new();
    let mut pruned = Pruned::default();
    let mut targets = Vec::with_capacity(det.targets.len());
    for edge in &mut det.edges {
        let (from, to) = (edge.targets.0 as usize, edge.targets.1 as usize);
        let start = targets.len() as u32;
        for &(next, filter) in &det.targets[from..to] {
            let id = *made.entry(filter).or_insert_with(|| {
                let f = &det.weights[filter.index()];
                if f.is_disjoint(&decidable) {
                    WeightId::from_u32(0)
                } else if f.is_subset(&decidable) {
                    filter
                } else {
                    det.weights.push(f & &decidable);
                    WeightId::from_u32(det.weights.len() as u32 - 1)
                }
            });
            if id.index() == 0 {
                pruned.removed += 1;
                continue;
            }
            if id != filter {
                pruned.cut += 1;
            }
            targets.push((next, id));
        }
        edge.targets = (start, targets.len() as u32);
    }
    det.targets = targets;
    drop_unused_weights(det, shape_classes);
    pruned
}

/// Removes the weights no edge, target or shape refers to, renumbering the rest in order
/// (the empty set stays 0).
fn drop_unused_weights(det: &mut Det, shape_classes: &mut [WeightId]) {
    let mut used = vec![false; det.weights.len()];
    used[0] = true;
    for e in &det.edges {
        used[e.decided.index()] = true;
    }
    for &(_, f) in &det.targets {
        used[f.index()] = true;
    }
    for w in shape_classes.iter() {
        used[w.index()] = true;
    }
    let mut new_id = vec![0u32; used.len()];
    let mut weights = Vec::with_capacity(used.iter().filter(|&&u| u).count());
    for (i, w) in std::mem::take(&mut det.weights).into_iter().enumerate() {
        if used[i] {
            new_id[i] = weights.len() as u32;
            weights.push(w);
        }
    }
    det.weights = weights;
    let renumber = |w: &mut WeightId| *w = WeightId::from_u32(new_id[w.index()]);
    for e in &mut det.edges {
        renumber(&mut e.decided);
    }
    for (_, f) in &mut det.targets {
        renumber(f);
    }
    shape_classes.iter_mut().for_each(renumber);
}

/// The classes some edge decides.
fn decidable(det: &Det) -> RoaringBitmap {
    let mut ids: Vec<WeightId> = det.edges.iter().map(|e| e.decided).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = RoaringBitmap::new();
    for id in ids {
        out |= &det.weights[id.index()];
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use roaring::RoaringBitmap;

    use super::{decidable, prune, Det};
    use crate::compile::{build_glr_tables, compile_grammar, Compiler, GrammarFormat};
    use crate::dwa::{DwaState, Edge, NO_EDGE};
    use crate::glr::walk::{mask, SortedTokens};
    use crate::ids::{DwaStateId, LrStateId, TokenId, WeightId};
    use crate::rng::SplitMix64 as Rng;
    use crate::runtime::Matcher;
    use crate::vocab::Vocab;

    /// After 40 operands of an ambiguous expression, a mask reads the heads and little
    /// more (without the pass: every entry of the stack, ~80), and equals the mask the
    /// recognizer's own vocabulary walk gives.
    #[test]
    fn an_ambiguous_expression_reads_its_heads_only() {
        let g = "start: e\ne: e \"+\" e | e \"*\" e | NUM\nNUM: /[0-9]+/\n%ignore \" \"\n";
        let tokens = [
            "1", "2", "+", "*", " ", "**", "++", "+*", "1+", "*1", " +", "2 3",
        ];
        let g = compile_grammar(g, GrammarFormat::Lark).unwrap();
        let tables = Arc::new(build_glr_tables(&g).unwrap());
        let mut toks: Vec<Option<Vec<u8>>> =
            tokens.iter().map(|t| Some(t.as_bytes().to_vec())).collect();
        toks.push(Some(b"<eos>".to_vec()));
        let vocab = Vocab::from_byte_tokens("test", toks, &[TokenId::new(tokens.len())]).unwrap();
        let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
        let mut m = Matcher::new(tables, dwa);
        let sorted = SortedTokens::new(&vocab);
        let mut words = vec![0u32; vocab.len().div_ceil(32)];
        for i in 0..40 {
            m.commit_bytes(if i % 3 == 0 { b"1 + " } else { b"2*" })
                .unwrap();
            m.commit_bytes(b"1").unwrap();
            let reads = m.fill_mask_counted(&mut words).unwrap();
            assert_eq!(words, mask(m.glr(), &sorted), "operand {i}");
            assert!(reads <= 8, "operand {i}: {reads} stack entries read");
        }
    }

    /// A small random automaton: `n` states over LR ids `0..lr`, classes `0..k`.
    fn random_det(rng: &mut Rng, n: usize, lr: usize, k: u32) -> Det {
        let set = |rng: &mut Rng, p: usize| {
            let mut w = RoaringBitmap::new();
            for c in 0..k {
                if rng.below(100) < p {
                    w.insert(c);
                }
            }
            w
        };
        let mut weights = vec![RoaringBitmap::new()];
        let mut edges = Vec::new();
        let mut targets = Vec::new();
        let mut states = Vec::new();
        for _ in 0..n {
            let mut trans = Vec::new();
            for x in 0..lr {
                if rng.below(3) == 0 {
                    continue;
                }
                // Decided sets are rare and small, so that many riders are never decided.
                let decided = if rng.below(4) == 0 {
                    weights.push(set(rng, 10));
                    WeightId::new(weights.len() - 1)
                } else {
                    WeightId::new(0)
                };
                let from = targets.len() as u32;
                for _ in 0..rng.below(3) {
                    weights.push(set(rng, 60));
                    targets.push((
                        DwaStateId::new(rng.below(n)),
                        WeightId::new(weights.len() - 1),
                    ));
                }
                edges.push(Edge {
                    decided,
                    targets: (from, targets.len() as u32),
                });
                trans.push((LrStateId::new(x), edges.len() as u32 - 1));
            }
            states.push(DwaState {
                trans,
                default: NO_EDGE,
            });
        }
        Det {
            weights,
            states,
            edges,
            targets,
            starts: Vec::new(),
        }
    }

    /// The classes riders `r` decide from state `s` reading the linear stack `ids`
    /// (top first), as the runtime walk does on one path.
    fn walk(det: &Det, s: DwaStateId, ids: &[usize], r: &RoaringBitmap) -> RoaringBitmap {
        let mut out = RoaringBitmap::new();
        let Some((&x, below)) = ids.split_first() else {
            return out;
        };
        let st = &det.states[s.index()];
        let Some(&(_, e)) = st.trans.iter().find(|&&(y, _)| y.index() == x) else {
            return out;
        };
        let e = &det.edges[e as usize];
        out |= r & &det.weights[e.decided.index()];
        for &(n, f) in &det.targets[e.targets.0 as usize..e.targets.1 as usize] {
            let next = r & &det.weights[f.index()];
            if !next.is_empty() {
                out |= walk(det, n, below, &next);
            }
        }
        out
    }

    /// On random stacks, the pruned automaton decides exactly what the original did, while
    /// filters were cut and targets removed; no filter keeps a class no edge decides.
    #[test]
    fn pruned_filters_decide_what_the_unpruned_did() {
        let mut rng = Rng::new(7);
        let (mut cut, mut removed) = (0, 0);
        for round in 0..200 {
            let (n, lr, k) = (1 + round % 7, 1 + round % 4, 1 + (round % 13) as u32);
            let det = random_det(&mut rng, n, lr, k);
            // Decided by some edge, class by class.
            let decided = decidable(&det);
            for c in 0..k {
                let by_edge = det
                    .edges
                    .iter()
                    .any(|e| det.weights[e.decided.index()].contains(c));
                assert_eq!(decided.contains(c), by_edge, "round {round}, class {c}");
            }
            let mut pruned = Det {
                weights: det.weights.clone(),
                states: det.states.clone(),
                edges: det.edges.clone(),
                targets: det.targets.clone(),
                starts: Vec::new(),
            };
            let p = prune(&mut pruned, &mut []);
            cut += p.cut;
            removed += p.removed;
            for &(_, f) in &pruned.targets {
                assert!(
                    pruned.weights[f.index()].is_subset(&decided),
                    "round {round}"
                );
                assert!(!pruned.weights[f.index()].is_empty(), "round {round}");
            }
            let all: RoaringBitmap = (0..k).collect();
            for _ in 0..20 {
                let len = rng.below(8);
                let ids: Vec<usize> = (0..len).map(|_| rng.below(lr)).collect();
                let s = DwaStateId::new(rng.below(n));
                assert_eq!(
                    walk(&det, s, &ids, &all),
                    walk(&pruned, s, &ids, &all),
                    "round {round}, state {s:?}, stack {ids:?}"
                );
            }
        }
        assert!(
            cut > 100 && removed > 100,
            "{cut} filters cut, {removed} targets removed: the test exercises too little"
        );
    }
}

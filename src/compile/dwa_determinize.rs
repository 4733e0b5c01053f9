//! Pass: the effect automaton (nondeterministic: one edge may wake several suspended
//! effects) → the deterministic mask automaton the walk runs.
//!
//! A deterministic state is a set of `(effect, weight)` pairs: which effects are waiting
//! and which classes ride on each. Because every step is an intersection with a fixed set
//! or a union, a run that enters such a state with classes `R` has `R ∩ weight` riding on
//! each member, so the walk needs only `R` and the state: one work item per stack path
//! instead of one per waiting effect. Member weights are normalized (decided classes
//! subtracted, empty members dropped) so equal situations meet in one state.

use hashbrown::HashMap;
use roaring::{MultiOps, RoaringBitmap};

use super::error::GrammarError;
use super::weight_table::WeightTable;
use crate::dwa::{DwaState, Edge, NO_EDGE};
use crate::ids::{DwaStateId, LrStateId, WeightId};

/// An edge of the effect automaton: classes decided, and effects woken with their riders
/// (a range of [`Nfa::targets`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct NfaEdge {
    pub decided: WeightId,
    pub targets: (u32, u32),
}

/// The effect automaton as the builder leaves it.
pub(super) struct Nfa {
    pub weights: WeightTable,
    /// Per effect: pops any id into this effect (a reduction still popping).
    pub skip_to: Vec<Option<DwaStateId>>,
    /// Per effect: `(id, edge)`, sorted.
    pub trans: Vec<Vec<(LrStateId, u32)>>,
    pub edges: Vec<NfaEdge>,
    pub targets: Vec<(DwaStateId, WeightId)>,
    /// Start edge per stack top (for all shapes at once), or [`NO_EDGE`].
    pub starts: Vec<u32>,
    /// Per effect: its rider union.
    pub riders: Vec<WeightId>,
}

/// The deterministic automaton's parts.
pub(super) struct Det {
    pub weights: Vec<RoaringBitmap>,
    pub states: Vec<DwaState>,
    pub edges: Vec<Edge>,
    pub targets: Vec<(DwaStateId, WeightId)>,
    pub starts: Vec<u32>,
}

type Members = Vec<(DwaStateId, WeightId)>;

/// Riders accumulated for one effect: kept as an interned id while there is one
/// contribution, so the common case needs no set operation and no re-interning.
enum Acc {
    One(WeightId),
    Many(RoaringBitmap),
}

#[derive(Default)]
struct Accs(HashMap<DwaStateId, Acc>);

impl Accs {
    fn add(&mut self, weights: &WeightTable, s: DwaStateId, w: WeightId) {
        match self.0.get_mut(&s) {
            None => {
                self.0.insert(s, Acc::One(w));
            }
            Some(Acc::One(v)) if *v == w => {}
            Some(acc) => {
                let mut b = match acc {
                    Acc::One(v) => weights.get(*v).clone(),
                    Acc::Many(b) => std::mem::take(b),
                };
                b |= weights.get(w);
                *acc = Acc::Many(b);
            }
        }
    }
}

struct Builder {
    nfa_skip: Vec<Option<DwaStateId>>,
    nfa_trans: Vec<Vec<(LrStateId, u32)>>,
    nfa_edges: Vec<NfaEdge>,
    nfa_targets: Vec<(DwaStateId, WeightId)>,
    /// Each effect's rider union: the weight of its singleton state.
    nfa_riders: Vec<WeightId>,
    weights: WeightTable,
    states: Vec<DwaState>,
    keys: Vec<Members>,
    /// Per state: the union of its members' weights (the filter of edges into it).
    filters: Vec<WeightId>,
    index: HashMap<Members, DwaStateId>,
    edges: Vec<Edge>,
    edge_index: HashMap<(WeightId, Vec<(DwaStateId, WeightId)>), u32>,
    targets: Vec<(DwaStateId, WeightId)>,
    queue: std::collections::VecDeque<DwaStateId>,
    /// Past this many states, new member sets are not merged into new states: each
    /// member goes to its effect's singleton state (the walk then carries one set per
    /// member, as in the effect automaton). Exact either way; bounds the build.
    budget: usize,
    max_states: usize,
}

impl Builder {
    /// The deterministic edge for `decided` and waking `members` (riders not yet reduced
    /// by `decided`).
    fn edge(&mut self, decided: &RoaringBitmap, members: Accs) -> Result<u32, GrammarError> {
        let mut key: Members = Vec::with_capacity(members.0.len());
        let undecided = decided.is_empty();
        // In state order: weights are interned as they come, and their ids must not
        // depend on hash order (artifacts are reproducible byte for byte).
        let mut members: Vec<(DwaStateId, Acc)> = members.0.into_iter().collect();
        members.sort_by_key(|(s, _)| *s);
        for (s, acc) in members {
            let w = match acc {
                Acc::One(w) if undecided => w,
                Acc::One(w) => self.weights.intern(&(self.weights.get(w) - decided)),
                Acc::Many(mut b) => {
                    b -= decided;
                    self.weights.intern(&b)
                }
            };
            if w != WeightId::new(0) {
                key.push((s, w));
            }
        }
        if key.is_empty() && decided.is_empty() {
            return Ok(NO_EDGE);
        }
        key.sort();
        let targets: Vec<(DwaStateId, WeightId)> = if key.is_empty() {
            Vec::new()
        } else if let Some(&s) = self.index.get(&key) {
            vec![(s, self.filters[s.index()])]
        } else if self.states.len() < self.budget || key.len() == 1 {
            let s = self.state_for(key)?;
            vec![(s, self.filters[s.index()])]
        } else {
            let mut t = Vec::with_capacity(key.len());
            for (e, w) in key {
                t.push((self.singleton(e)?, w));
            }
            t
        };
        let d = self.weights.intern(decided);
        Ok(self.intern_edge(d, targets))
    }

    /// The edge with these contents (hash-consed).
    fn intern_edge(&mut self, decided: WeightId, targets: Vec<(DwaStateId, WeightId)>) -> u32 {
        if let Some(&e) = self.edge_index.get(&(decided, targets.clone())) {
            return e;
        }
        let e = self.edges.len() as u32;
        let start = self.targets.len() as u32;
        self.targets.extend_from_slice(&targets);
        self.edges.push(Edge {
            decided,
            targets: (start, self.targets.len() as u32),
        });
        self.edge_index.insert((decided, targets), e);
        e
    }

    /// The state of effect `e` alone, with all its riders.
    fn singleton(&mut self, e: DwaStateId) -> Result<DwaStateId, GrammarError> {
        self.state_for(vec![(e, self.nfa_riders[e.index()])])
    }

    fn state_for(&mut self, key: Members) -> Result<DwaStateId, GrammarError> {
        if let Some(&s) = self.index.get(&key) {
            return Ok(s);
        }
        if self.states.len() >= self.max_states {
            return Err(GrammarError::TooLarge {
                span: Default::default(),
                what: "deterministic mask automaton states".into(),
                limit: self.max_states,
            });
        }
        let id = DwaStateId::new(self.states.len());
        self.states.push(DwaState {
            trans: Vec::new(),
            default: NO_EDGE,
        });
        // What may still be decided in this state: the union of its members' riders,
        // computed once per state (edges into it reuse it).
        let filter = match key[..] {
            [(_, w)] => w,
            _ => {
                // Many classes in all go through one multi-way union: or-ing the members
                // in one at a time re-merged an ever longer set (a third of determinize's
                // profile samples on the 16 Kubernetes schemas of the p99 band). Few are
                // or-ed in turn, as the multi-way union spends a bitmap container on
                // each of their containers (see `SORTED_UNION_MAX`).
                let sets = key.iter().map(|&(_, w)| self.weights.get(w));
                let total: u64 = sets.clone().map(RoaringBitmap::len).sum();
                let f = if total <= super::dwa_build::SORTED_UNION_MAX {
                    let mut f = RoaringBitmap::new();
                    for w in sets {
                        f |= w;
                    }
                    f
                } else {
                    sets.union()
                };
                self.weights.intern(&f)
            }
        };
        self.filters.push(filter);
        self.keys.push(key.clone());
        self.index.insert(key, id);
        self.queue.push_back(id);
        Ok(id)
    }

    /// Adds the effects NFA edge `e` wakes, with their riders (∩ `rider`).
    fn wake(&mut self, e: u32, rider: Option<WeightId>, into: &mut Accs) {
        let NfaEdge { targets, .. } = self.nfa_edges[e as usize];
        for i in targets.0..targets.1 {
            let (t, w) = self.nfa_targets[i as usize];
            let w = match rider {
                Some(r) => self.weights.and(r, w),
                None => w,
            };
            if w != WeightId::new(0) {
                into.add(&self.weights, t, w);
            }
        }
    }

    /// The edge for NFA edge `e` woken with exactly its effect's riders, past the budget:
    /// every target goes to its own singleton state, so no set operation is needed.
    fn singleton_edge(
        &mut self,
        decided: WeightId,
        targets: &[(DwaStateId, WeightId)],
    ) -> Result<u32, GrammarError> {
        let mut t = Vec::with_capacity(targets.len());
        for &(e, w) in targets {
            t.push((self.singleton(e)?, w));
        }
        Ok(self.intern_edge(decided, t))
    }

    fn build(&mut self, id: DwaStateId) -> Result<(), GrammarError> {
        let key = self.keys[id.index()].clone();
        if let [(m, w)] = key[..] {
            if w == self.nfa_riders[m.index()] && self.states.len() >= self.budget {
                // An effect with all its riders: its NFA edges, as they are (their
                // weights are within the riders).
                let (trans, default) = match self.nfa_skip[m.index()] {
                    Some(next) => (
                        Vec::new(),
                        self.singleton_edge(WeightId::new(0), &[(next, w)])?,
                    ),
                    None => {
                        let mut trans = Vec::new();
                        for i in 0..self.nfa_trans[m.index()].len() {
                            let (y, e) = self.nfa_trans[m.index()][i];
                            let NfaEdge { decided, targets } = self.nfa_edges[e as usize];
                            let ts =
                                self.nfa_targets[targets.0 as usize..targets.1 as usize].to_vec();
                            trans.push((y, self.singleton_edge(decided, &ts)?));
                        }
                        (trans, NO_EDGE)
                    }
                };
                self.states[id.index()] = DwaState { trans, default };
                return Ok(());
            }
        }
        // Per id: (decided, woken), filled member by member.
        let mut per_y: std::collections::BTreeMap<LrStateId, (RoaringBitmap, Accs)> =
            Default::default();
        let mut skips: Vec<(DwaStateId, WeightId)> = Vec::new();
        for &(m, w) in &key {
            if let Some(next) = self.nfa_skip[m.index()] {
                skips.push((next, w));
                continue;
            }
            for i in 0..self.nfa_trans[m.index()].len() {
                let (y, e) = self.nfa_trans[m.index()][i];
                let dec = self.weights.and(w, self.nfa_edges[e as usize].decided);
                let slot = per_y.entry(y).or_default();
                if dec != WeightId::new(0) {
                    slot.0 |= self.weights.get(dec);
                }
                let mut acc = std::mem::take(&mut slot.1);
                self.wake(e, Some(w), &mut acc);
                per_y.get_mut(&y).expect("just inserted").1 = acc;
            }
        }
        let mut trans = Vec::with_capacity(per_y.len());
        for (y, (decided, mut acc)) in per_y {
            for &(next, w) in &skips {
                acc.add(&self.weights, next, w);
            }
            let e = self.edge(&decided, acc)?;
            // With a default, a dead id needs an explicit entry.
            if e != NO_EDGE || !skips.is_empty() {
                trans.push((y, e));
            }
        }
        let mut default = NO_EDGE;
        if !skips.is_empty() {
            let mut acc = Accs::default();
            for &(next, w) in &skips {
                acc.add(&self.weights, next, w);
            }
            default = self.edge(&RoaringBitmap::new(), acc)?;
            // Ids equal to the default need no entry of their own.
            trans.retain(|&(_, e)| e != default);
        }
        self.states[id.index()] = DwaState { trans, default };
        Ok(())
    }
}

/// Determinizes the effect automaton: fully up to `budget` states, then by effect
/// (at most `max_states` states in all).
pub(super) fn determinize(nfa: Nfa, budget: usize, max_states: usize) -> Result<Det, GrammarError> {
    let mut b = Builder {
        nfa_skip: nfa.skip_to,
        nfa_trans: nfa.trans,
        nfa_edges: nfa.edges,
        nfa_targets: nfa.targets,
        nfa_riders: nfa.riders,
        weights: nfa.weights,
        states: Vec::new(),
        keys: Vec::new(),
        filters: Vec::new(),
        index: HashMap::new(),
        edges: Vec::new(),
        edge_index: HashMap::new(),
        targets: Vec::new(),
        queue: Default::default(),
        budget,
        max_states,
    };
    let mut starts = Vec::with_capacity(nfa.starts.len());
    // Stack tops that behave alike share their start edge: each is determinized once.
    let mut start_of: HashMap<u32, u32> = HashMap::new();
    for &e in &nfa.starts {
        if e == NO_EDGE {
            starts.push(NO_EDGE);
            continue;
        }
        if let Some(&d) = start_of.get(&e) {
            starts.push(d);
            continue;
        }
        let decided = b.weights.get(b.nfa_edges[e as usize].decided).clone();
        let mut members = Accs::default();
        b.wake(e, None, &mut members);
        let d = b.edge(&decided, members)?;
        start_of.insert(e, d);
        starts.push(d);
    }
    // Breadth first, so the budget goes to the states nearest the stack top.
    while let Some(s) = b.queue.pop_front() {
        b.build(s)?;
    }
    Ok(Det {
        weights: b.weights.into_sets(),
        states: b.states,
        edges: b.edges,
        targets: b.targets,
        starts,
    })
}

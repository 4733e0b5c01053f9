//! Pass: the effect automaton (nondeterministic: one edge may wake several suspended
//! effects) → the deterministic mask automaton the walk runs.
//!
//! A deterministic state is a set of `(effect, weight)` pairs: which effects are waiting
//! and which classes ride on each. Because every step is an intersection with a fixed set
//! or a union, a run that enters such a state with classes `R` has `R ∩ weight` riding on
//! each member, so the walk needs only `R` and the state: one work item per stack path
//! instead of one per waiting effect. Member weights are normalized (decided classes
//! subtracted, empty members dropped) so equal situations meet in one state.

use std::collections::BTreeSet;

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use super::error::GrammarError;
use super::weight_table::WeightTable;
use crate::dwa::{DwaState, Edge, NO_EDGE, NO_STATE};
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
    /// Start edge per (shape, stack top), or [`NO_EDGE`].
    pub starts: Vec<u32>,
}

/// The deterministic automaton's parts.
pub(super) struct Det {
    pub weights: Vec<RoaringBitmap>,
    pub states: Vec<DwaState>,
    pub edges: Vec<Edge>,
    pub starts: Vec<u32>,
}

type Members = Vec<(DwaStateId, WeightId)>;

struct Builder {
    nfa_skip: Vec<Option<DwaStateId>>,
    nfa_trans: Vec<Vec<(LrStateId, u32)>>,
    nfa_edges: Vec<NfaEdge>,
    nfa_targets: Vec<(DwaStateId, WeightId)>,
    weights: WeightTable,
    states: Vec<DwaState>,
    keys: Vec<Members>,
    index: HashMap<Members, DwaStateId>,
    edges: Vec<Edge>,
    edge_index: HashMap<(WeightId, DwaStateId, WeightId), u32>,
    queue: Vec<DwaStateId>,
    max_states: usize,
}

impl Builder {
    /// The deterministic edge for `decided` and waking `members` (riders not yet reduced
    /// by `decided`).
    fn edge(
        &mut self,
        decided: &RoaringBitmap,
        members: HashMap<DwaStateId, RoaringBitmap>,
    ) -> Result<u32, GrammarError> {
        let mut key: Members = Vec::with_capacity(members.len());
        let mut filter = RoaringBitmap::new();
        for (s, mut w) in members {
            w -= decided;
            if !w.is_empty() {
                filter |= &w;
                key.push((s, self.weights.intern(&w)));
            }
        }
        if key.is_empty() && decided.is_empty() {
            return Ok(NO_EDGE);
        }
        key.sort();
        let next = if key.is_empty() {
            NO_STATE
        } else {
            self.state_for(key)?
        };
        let d = self.weights.intern(decided);
        let f = self.weights.intern(&filter);
        if let Some(&e) = self.edge_index.get(&(d, next, f)) {
            return Ok(e);
        }
        let e = self.edges.len() as u32;
        self.edges.push(Edge {
            decided: d,
            next,
            filter: f,
        });
        self.edge_index.insert((d, next, f), e);
        Ok(e)
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
        self.keys.push(key.clone());
        self.index.insert(key, id);
        self.queue.push(id);
        Ok(id)
    }

    /// The effects a start (or any) NFA edge wakes, with their riders.
    fn wake(
        &mut self,
        e: u32,
        rider: Option<WeightId>,
        into: &mut HashMap<DwaStateId, RoaringBitmap>,
    ) {
        let NfaEdge { targets, .. } = self.nfa_edges[e as usize];
        for i in targets.0..targets.1 {
            let (t, w) = self.nfa_targets[i as usize];
            let w = match rider {
                Some(r) => self.weights.and(r, w),
                None => w,
            };
            if w != WeightId::new(0) {
                *into.entry(t).or_default() |= self.weights.get(w);
            }
        }
    }

    fn build(&mut self, id: DwaStateId) -> Result<(), GrammarError> {
        let key = self.keys[id.index()].clone();
        let mut ys: BTreeSet<LrStateId> = BTreeSet::new();
        let mut skipping = false;
        for &(m, _) in &key {
            match self.nfa_skip[m.index()] {
                Some(_) => skipping = true,
                None => ys.extend(self.nfa_trans[m.index()].iter().map(|(y, _)| *y)),
            }
        }
        let mut trans = Vec::with_capacity(ys.len());
        for y in ys {
            let mut decided = RoaringBitmap::new();
            let mut members: HashMap<DwaStateId, RoaringBitmap> = HashMap::new();
            for &(m, w) in &key {
                if let Some(next) = self.nfa_skip[m.index()] {
                    *members.entry(next).or_default() |= self.weights.get(w);
                    continue;
                }
                let tr = &self.nfa_trans[m.index()];
                let Ok(i) = tr.binary_search_by_key(&y, |(x, _)| *x) else {
                    continue;
                };
                let e = tr[i].1;
                let dec = self.weights.and(w, self.nfa_edges[e as usize].decided);
                decided |= self.weights.get(dec);
                self.wake(e, Some(w), &mut members);
            }
            let e = self.edge(&decided, members)?;
            // With a default, a dead id needs an explicit entry.
            if e != NO_EDGE || skipping {
                trans.push((y, e));
            }
        }
        let mut default = NO_EDGE;
        if skipping {
            let mut members: HashMap<DwaStateId, RoaringBitmap> = HashMap::new();
            for &(m, w) in &key {
                if let Some(next) = self.nfa_skip[m.index()] {
                    *members.entry(next).or_default() |= self.weights.get(w);
                }
            }
            default = self.edge(&RoaringBitmap::new(), members)?;
            // Ids equal to the default need no entry of their own.
            trans.retain(|&(_, e)| e != default);
        }
        self.states[id.index()] = DwaState { trans, default };
        Ok(())
    }
}

/// Determinizes the effect automaton (at most `max_states` states).
pub(super) fn determinize(nfa: Nfa, max_states: usize) -> Result<Det, GrammarError> {
    let mut b = Builder {
        nfa_skip: nfa.skip_to,
        nfa_trans: nfa.trans,
        nfa_edges: nfa.edges,
        nfa_targets: nfa.targets,
        weights: nfa.weights,
        states: Vec::new(),
        keys: Vec::new(),
        index: HashMap::new(),
        edges: Vec::new(),
        edge_index: HashMap::new(),
        queue: Vec::new(),
        max_states,
    };
    let mut starts = Vec::with_capacity(nfa.starts.len());
    for &e in &nfa.starts {
        if e == NO_EDGE {
            starts.push(NO_EDGE);
            continue;
        }
        let decided = b.weights.get(b.nfa_edges[e as usize].decided).clone();
        let mut members = HashMap::new();
        b.wake(e, None, &mut members);
        starts.push(b.edge(&decided, members)?);
        while let Some(s) = b.queue.pop() {
            b.build(s)?;
        }
    }
    Ok(Det {
        weights: b.weights.into_sets(),
        states: b.states,
        edges: b.edges,
        starts,
    })
}

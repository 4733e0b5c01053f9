//! Pass: the effect automaton (nondeterministic: one edge may wake several suspended
//! effects) → the deterministic mask automaton the walk runs.
//!
//! A deterministic state is a set of `(effect, weight)` pairs: which effects are waiting
//! and which classes ride on each. Because every step is an intersection with a fixed set
//! or a union, a run that enters such a state with classes `R` has `R ∩ weight` riding on
//! each member, so the walk needs only `R` and the state: one work item per stack path
//! instead of one per waiting effect. Member weights are normalized (decided classes
//! subtracted, empty members dropped) so equal situations meet in one state.
//!
//! States are built breadth first, level by level: a level's states are *planned* in
//! parallel (every set operation, reading only the states and sets made before the level)
//! and then made in queue order, one at a time (interning, new states, edges), so ids are
//! those of a serial build whatever the thread count. Only the sets edges and states keep
//! are interned; intersections along the way stay out of the automaton's weights.

use crate::compile::interrupt::Interrupt;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use rayon::prelude::*;
use roaring::{MultiOps, RoaringBitmap};

use crate::compile::dwa::weight_table::WeightTable;
use crate::compile::error::GrammarError;
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

/// Members from which an edge gets one state past the budget too: a walk reading the
/// edge would otherwise carry one class set per member down every stack path below it
/// (at a statement boundary of `python.lark` with a 128K vocabulary, over a hundred).
/// Such edges are few (on `python.lark`, 0.2% of those past the budget), and their
/// states replace as many single-effect ones.
pub(super) const WIDE_KEY: usize = 64;

/// Fewest states of one breadth-first level planned in parallel: below it, waking the
/// other thread costs more than the plans it takes over.
const PLAN_PARALLEL_MIN: usize = 64;

/// A set as a plan holds it: interned already, or made by the plan (interned when the plan
/// is applied). Made sets are shared, as the memo of intersections hands them out again.
#[derive(Clone)]
enum Set {
    Id(WeightId),
    Made(Arc<RoaringBitmap>),
}

impl Set {
    fn get<'a>(&'a self, weights: &'a WeightTable) -> &'a RoaringBitmap {
        match self {
            Set::Id(w) => weights.get(*w),
            Set::Made(b) => b,
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Set::Id(w) => *w == WeightId::new(0),
            Set::Made(b) => b.is_empty(),
        }
    }

    /// `b` by its id when the table has it (so later steps can compare by id).
    fn known(weights: &WeightTable, b: RoaringBitmap) -> Set {
        match weights.find(&b) {
            Some(w) => Set::Id(w),
            None => Set::Made(Arc::new(b)),
        }
    }

    /// The set by its id when the table has it: a made set the table already holds
    /// becomes that id, so later steps compare by id.
    fn settled(self, weights: &WeightTable) -> Set {
        match self {
            Set::Made(b) => Set::known(weights, Arc::unwrap_or_clone(b)),
            w => w,
        }
    }

    fn same(&self, other: &Set) -> bool {
        match (self, other) {
            (Set::Id(a), Set::Id(b)) => a == b,
            (Set::Made(a), Set::Made(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// Riders accumulated for one effect: kept as they came while there is one contribution,
/// so the common case needs no set operation.
enum Acc {
    One(Set),
    Many(RoaringBitmap),
}

#[derive(Default)]
struct Accs(HashMap<DwaStateId, Acc>);

impl Accs {
    fn add(&mut self, weights: &WeightTable, s: DwaStateId, w: Set) {
        match self.0.get_mut(&s) {
            None => {
                self.0.insert(s, Acc::One(w));
            }
            Some(Acc::One(v)) if v.same(&w) => {}
            Some(acc) => {
                let mut b = match std::mem::replace(acc, Acc::Many(RoaringBitmap::new())) {
                    Acc::One(v) => v.get(weights).clone(),
                    Acc::Many(b) => b,
                };
                b |= w.get(weights);
                *acc = Acc::Many(b);
            }
        }
    }
}

/// A deterministic edge as planned from read-only data: its decided classes and the
/// effects it wakes, their riders reduced by `decided` (sorted by effect, none empty).
struct EdgePlan {
    decided: Set,
    members: Vec<(DwaStateId, Set)>,
    /// The members' union, when they are several and may make a new state.
    filter: Option<Set>,
}

/// A state's transitions as planned: per id read, the edge, and the default edge when
/// some member pops any id.
enum StatePlan {
    /// An effect with all its riders, past the budget: built from its NFA edges as they
    /// are, which needs no set operation (left to [`Builder::apply`]).
    Singleton,
    Full {
        trans: Vec<(LrStateId, EdgePlan)>,
        default: Option<EdgePlan>,
    },
}

/// A [`Set`] as a memo key: by id, or by identity for a made set (the key holds the
/// set, so its address is not reused while the key lives).
#[derive(Clone)]
struct SetKey(Set);

impl PartialEq for SetKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.same(&other.0)
    }
}

impl Eq for SetKey {}

impl std::hash::Hash for SetKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match &self.0 {
            Set::Id(w) => w.hash(h),
            Set::Made(b) => Arc::as_ptr(b).hash(h),
        }
    }
}

/// Set operations made while planning; each thread keeps its own, across levels.
#[derive(Default)]
struct Memo {
    /// Intersections, by their operands' ids (`a ≤ b`).
    and: HashMap<(WeightId, WeightId), Set>,
    /// Unions of a state's decided sets and of an edge's members, by the sets in the
    /// order the plan lists them. Plans meet the same lists again and again (on a
    /// Kubernetes schema, nearly all unions repeat one made before).
    union: HashMap<Vec<SetKey>, Set>,
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
    /// Per state: its members (the state's identity).
    keys: Vec<Members>,
    /// Per state: the union of its members' weights (the filter of edges into it).
    filters: Vec<WeightId>,
    /// States by the hash of their members, which are read from `keys`: growing the
    /// table moves stored hashes instead of rehashing member lists (which dominates
    /// building states on large schemas), and a lookup needs no list of its own.
    index: HashTable<(u64, DwaStateId)>,
    edges: Vec<Edge>,
    /// Edges by the hash of their contents, which are read from `edges` and `targets`
    /// (as `index` is).
    edge_index: HashTable<(u64, u32)>,
    hasher: DefaultHashBuilder,
    targets: Vec<(DwaStateId, WeightId)>,
    queue: std::collections::VecDeque<DwaStateId>,
    /// Past this many states, new member sets are not merged into new states: each
    /// member goes to its effect's singleton state (the walk then carries one set per
    /// member, as in the effect automaton). Exact either way; bounds the build.
    budget: usize,
    max_states: usize,
}

/// The union of `sets`: few classes are or-ed in turn, many go through one multi-way
/// union. Or-ing many in one at a time re-merged an ever longer set (a third of
/// determinize's profile samples on the 16 Kubernetes schemas of the p99 band); the
/// multi-way union spends a bitmap container on each of few sets' containers (see
/// `SORTED_UNION_MAX`).
fn union_of<'a>(sets: impl Iterator<Item = &'a RoaringBitmap> + Clone) -> RoaringBitmap {
    let total: u64 = sets.clone().map(RoaringBitmap::len).sum();
    if total <= crate::compile::dwa::build::SORTED_UNION_MAX {
        let mut f = RoaringBitmap::new();
        for w in sets {
            f |= w;
        }
        f
    } else {
        sets.union()
    }
}

impl Builder {
    /// A builder over `nfa` with no state made yet (its starts are not read).
    fn new(nfa: Nfa, budget: usize, max_states: usize) -> Self {
        Builder {
            nfa_skip: nfa.skip_to,
            nfa_trans: nfa.trans,
            nfa_edges: nfa.edges,
            nfa_targets: nfa.targets,
            nfa_riders: nfa.riders,
            weights: nfa.weights,
            states: Vec::new(),
            keys: Vec::new(),
            filters: Vec::new(),
            index: HashTable::new(),
            edges: Vec::new(),
            edge_index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            targets: Vec::new(),
            queue: Default::default(),
            budget,
            max_states,
        }
    }

    /// `a ∩ b`, from the memo or made (and remembered).
    fn and(&self, memo: &mut Memo, a: WeightId, b: WeightId) -> Set {
        let key = if a <= b { (a, b) } else { (b, a) };
        if let Some(w) = memo.and.get(&key) {
            return w.clone();
        }
        let w = self.weights.get(a) & self.weights.get(b);
        let w = if w.is_empty() {
            Set::Id(WeightId::new(0))
        } else {
            Set::Made(Arc::new(w))
        };
        memo.and.insert(key, w.clone());
        w
    }

    /// The union of `sets`, from the memo or made (and remembered), by its id when the
    /// table has it (so later steps compare it by id).
    fn union(&self, memo: &mut Memo, sets: &[&Set]) -> Set {
        let key: Vec<SetKey> = sets.iter().map(|&w| SetKey(w.clone())).collect();
        if let Some(w) = memo.union.get(&key) {
            return w.clone();
        }
        let u = union_of(sets.iter().map(|w| w.get(&self.weights)));
        let w = Set::known(&self.weights, u);
        memo.union.insert(key, w.clone());
        w
    }

    /// Plans the edge for `decided` and waking `members` (riders not yet reduced by
    /// `decided`); `past_budget`: no new state of several members will be made, unless
    /// of [`WIDE_KEY`] members or more.
    fn plan_edge(
        &self,
        memo: &mut Memo,
        decided: Set,
        members: Accs,
        past_budget: bool,
    ) -> EdgePlan {
        let weights = &self.weights;
        let undecided = decided.is_empty();
        let dec = decided.get(weights);
        let mut members: Vec<(DwaStateId, Acc)> = members.0.into_iter().collect();
        members.sort_by_key(|(s, _)| *s);
        let mut key: Vec<(DwaStateId, Set)> = Vec::with_capacity(members.len());
        for (s, acc) in members {
            let w = match acc {
                Acc::One(w) if undecided => w.settled(weights),
                Acc::One(w) => Set::known(weights, w.get(weights) - dec),
                Acc::Many(mut b) => {
                    b -= dec;
                    Set::known(weights, b)
                }
            };
            if !w.is_empty() {
                key.push((s, w));
            }
        }
        // A state of several members needs its filter only if it is new: known keys are
        // looked up, the rest get theirs made here, on the planning threads.
        let filter = (key.len() > 1 && (!past_budget || key.len() >= WIDE_KEY))
            .then(|| {
                let ids: Option<Members> = key
                    .iter()
                    .map(|(s, w)| match w {
                        Set::Id(w) => Some((*s, *w)),
                        Set::Made(_) => None,
                    })
                    .collect();
                if ids.is_some_and(|ids| self.state_of(&ids).is_some()) {
                    return None;
                }
                let sets: Vec<&Set> = key.iter().map(|(_, w)| w).collect();
                Some(self.union(memo, &sets))
            })
            .flatten();
        let decided = if undecided {
            Set::Id(WeightId::new(0))
        } else {
            decided.settled(weights)
        };
        EdgePlan {
            decided,
            members: key,
            filter,
        }
    }

    /// The id of a planned set, interning it if it is new.
    fn intern(&mut self, w: Set) -> WeightId {
        match w {
            Set::Id(w) => w,
            Set::Made(b) => self.weights.intern(&b),
        }
    }

    /// The deterministic edge of a plan (states and sets made in plan order, so that ids
    /// do not depend on the thread count).
    fn apply_edge(&mut self, plan: EdgePlan) -> Result<u32, GrammarError> {
        let EdgePlan {
            decided,
            members,
            filter,
        } = plan;
        if members.is_empty() && decided.is_empty() {
            return Ok(NO_EDGE);
        }
        let key: Members = members
            .into_iter()
            .map(|(s, w)| (s, self.intern(w)))
            .collect();
        let targets: Vec<(DwaStateId, WeightId)> = if key.is_empty() {
            Vec::new()
        } else if let Some(s) = self.state_of(&key) {
            vec![(s, self.filters[s.index()])]
        } else if self.states.len() < self.budget || key.len() == 1 || key.len() >= WIDE_KEY {
            let s = self.state_for(key, filter)?;
            vec![(s, self.filters[s.index()])]
        } else {
            let mut t = Vec::with_capacity(key.len());
            for (e, w) in key {
                t.push((self.singleton(e)?, w));
            }
            t
        };
        let d = self.intern(decided);
        Ok(self.intern_edge(d, targets))
    }

    /// The edge with these contents (hash-consed).
    fn intern_edge(&mut self, decided: WeightId, targets: Vec<(DwaStateId, WeightId)>) -> u32 {
        let h = self.hasher.hash_one((decided, &targets[..]));
        let (edges, all_targets) = (&self.edges, &self.targets);
        let same = |&(hh, e): &(u64, u32)| {
            let edge = &edges[e as usize];
            let (from, to) = edge.targets;
            hh == h
                && edge.decided == decided
                && all_targets[from as usize..to as usize] == targets[..]
        };
        if let Some(&(_, e)) = self.edge_index.find(h, same) {
            return e;
        }
        let e = self.edges.len() as u32;
        let start = self.targets.len() as u32;
        self.targets.extend_from_slice(&targets);
        self.edges.push(Edge {
            decided,
            targets: (start, self.targets.len() as u32),
        });
        self.edge_index.insert_unique(h, (h, e), |&(hh, _)| hh);
        e
    }

    /// The state whose members are `key`, if it is made.
    fn state_of(&self, key: &[(DwaStateId, WeightId)]) -> Option<DwaStateId> {
        let h = self.hasher.hash_one(key);
        self.index
            .find(h, |&(hh, s)| hh == h && self.keys[s.index()] == key)
            .map(|&(_, s)| s)
    }

    /// The state of effect `e` alone, with all its riders.
    fn singleton(&mut self, e: DwaStateId) -> Result<DwaStateId, GrammarError> {
        let key = [(e, self.nfa_riders[e.index()])];
        match self.state_of(&key) {
            Some(s) => Ok(s),
            None => self.state_for(key.to_vec(), None),
        }
    }

    /// The state of `key`, made if new; `filter` is its members' union when the plan made
    /// it (several members).
    fn state_for(&mut self, key: Members, filter: Option<Set>) -> Result<DwaStateId, GrammarError> {
        if let Some(s) = self.state_of(&key) {
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
        let filter = match (&key[..], filter) {
            ([(_, w)], _) => *w,
            (_, Some(f)) => self.intern(f),
            (_, None) => {
                let f = union_of(key.iter().map(|&(_, w)| self.weights.get(w)));
                self.weights.intern(&f)
            }
        };
        self.filters.push(filter);
        let h = self.hasher.hash_one(&key[..]);
        self.keys.push(key);
        self.index.insert_unique(h, (h, id), |&(hh, _)| hh);
        self.queue.push_back(id);
        Ok(id)
    }

    /// Adds the effects NFA edge `e` wakes, with their riders (∩ `rider`).
    fn wake(&self, memo: &mut Memo, e: u32, rider: Option<WeightId>, into: &mut Accs) {
        let NfaEdge { targets, .. } = self.nfa_edges[e as usize];
        for i in targets.0..targets.1 {
            let (t, w) = self.nfa_targets[i as usize];
            let w = match rider {
                Some(r) => self.and(memo, r, w),
                None => Set::Id(w),
            };
            if !w.is_empty() {
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

    /// Whether state `id` is an effect alone with all its riders.
    fn is_singleton(&self, id: DwaStateId) -> bool {
        match self.keys[id.index()][..] {
            [(m, w)] => w == self.nfa_riders[m.index()],
            _ => false,
        }
    }

    /// Plans state `id`'s transitions: every set operation they need, on read-only data.
    /// `past_budget`: the states made before its level reach the budget.
    fn plan(&self, memo: &mut Memo, id: DwaStateId, past_budget: bool) -> StatePlan {
        if past_budget && self.is_singleton(id) {
            return StatePlan::Singleton;
        }
        let key = &self.keys[id.index()];
        // Per id: (decided, woken), filled member by member. The decided sets are united
        // once at the end: or-ing them in one at a time re-merged an ever larger set, a
        // third of planning's instructions on four p99-band schemas.
        let mut per_y: std::collections::BTreeMap<LrStateId, (Vec<Set>, Accs)> = Default::default();
        let mut skips: Vec<(DwaStateId, WeightId)> = Vec::new();
        for &(m, w) in key {
            if let Some(next) = self.nfa_skip[m.index()] {
                skips.push((next, w));
                continue;
            }
            for &(y, e) in &self.nfa_trans[m.index()] {
                let dec = self.and(memo, w, self.nfa_edges[e as usize].decided);
                let slot = per_y.entry(y).or_default();
                if !dec.is_empty() && !slot.0.iter().any(|d| d.same(&dec)) {
                    slot.0.push(dec);
                }
                self.wake(memo, e, Some(w), &mut slot.1);
            }
        }
        let trans = per_y
            .into_iter()
            .map(|(y, (decided, mut acc))| {
                for &(next, w) in &skips {
                    acc.add(&self.weights, next, Set::Id(w));
                }
                let decided = match &decided[..] {
                    [] => Set::Id(WeightId::new(0)),
                    [d] => d.clone(),
                    ds => self.union(memo, &ds.iter().collect::<Vec<_>>()),
                };
                (y, self.plan_edge(memo, decided, acc, past_budget))
            })
            .collect();
        let default = (!skips.is_empty()).then(|| {
            let mut acc = Accs::default();
            for &(next, w) in &skips {
                acc.add(&self.weights, next, Set::Id(w));
            }
            self.plan_edge(memo, Set::Id(WeightId::new(0)), acc, past_budget)
        });
        StatePlan::Full { trans, default }
    }

    /// Builds state `id` from its plan.
    fn apply(&mut self, id: DwaStateId, plan: StatePlan) -> Result<(), GrammarError> {
        let (trans, default) = match plan {
            StatePlan::Singleton => return self.build_singleton(id),
            StatePlan::Full { trans, default } => (trans, default),
        };
        let has_default = default.is_some();
        let mut out = Vec::with_capacity(trans.len());
        for (y, plan) in trans {
            let e = self.apply_edge(plan)?;
            // With a default, a dead id needs an explicit entry.
            if e != NO_EDGE || has_default {
                out.push((y, e));
            }
        }
        let mut default_edge = NO_EDGE;
        if let Some(plan) = default {
            default_edge = self.apply_edge(plan)?;
            // Ids equal to the default need no entry of their own.
            out.retain(|&(_, e)| e != default_edge);
        }
        self.states[id.index()] = DwaState {
            trans: out,
            default: default_edge,
        };
        Ok(())
    }

    /// Builds state `id`, an effect with all its riders, past the budget: its NFA edges,
    /// as they are (their weights are within the riders). Exact, as a full build is.
    fn build_singleton(&mut self, id: DwaStateId) -> Result<(), GrammarError> {
        let (m, w) = self.keys[id.index()][0];
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
                    let ts = self.nfa_targets[targets.0 as usize..targets.1 as usize].to_vec();
                    trans.push((y, self.singleton_edge(decided, &ts)?));
                }
                (trans, NO_EDGE)
            }
        };
        self.states[id.index()] = DwaState { trans, default };
        Ok(())
    }
}

/// Determinizes the effect automaton: fully up to `budget` states, then by effect except
/// where an edge wakes [`WIDE_KEY`] effects or more (at most `max_states` states in all).
pub(super) fn determinize(
    mut nfa: Nfa,
    budget: usize,
    max_states: usize,
    stop: &Interrupt,
) -> Result<Det, GrammarError> {
    let nfa_starts = std::mem::take(&mut nfa.starts);
    let mut b = Builder::new(nfa, budget, max_states);
    // Stack tops that behave alike share their start edge: each is determinized once,
    // planned on every thread, then made in order.
    let mut distinct: Vec<u32> = Vec::new();
    let mut start_of: HashMap<u32, usize> = HashMap::new();
    for &e in &nfa_starts {
        if e != NO_EDGE && !start_of.contains_key(&e) {
            start_of.insert(e, distinct.len());
            distinct.push(e);
        }
    }
    let memos: Vec<Mutex<Memo>> = (0..rayon::current_num_threads())
        .map(|_| Mutex::default())
        .collect();
    let plan_start = |&e: &u32| {
        let decided = Set::Id(b.nfa_edges[e as usize].decided);
        let mut members = Accs::default();
        // Starts wake their effects with all riders: no intersection to remember.
        let mut memo = Memo::default();
        b.wake(&mut memo, e, None, &mut members);
        b.plan_edge(&mut memo, decided, members, b.states.len() >= b.budget)
    };
    let plans: Vec<EdgePlan> = if distinct.len() < PLAN_PARALLEL_MIN {
        distinct.iter().map(plan_start).collect()
    } else {
        distinct
            .par_iter()
            .with_min_len(16)
            .map(plan_start)
            .collect()
    };
    let mut made = Vec::with_capacity(plans.len());
    for plan in plans {
        made.push(b.apply_edge(plan)?);
    }
    let starts = nfa_starts
        .iter()
        .map(|&e| {
            if e == NO_EDGE {
                NO_EDGE
            } else {
                made[start_of[&e]]
            }
        })
        .collect();
    // Breadth first, so the budget goes to the states nearest the stack top: level by
    // level, each level's states planned in parallel (reading the states and sets made
    // so far) and then built in queue order, as one at a time would.
    while !b.queue.is_empty() {
        stop.check()?;
        let level: Vec<DwaStateId> = b.queue.drain(..).collect();
        // Decided per level, so that a plan does not depend on how many states the
        // level's earlier ones made.
        let past_budget = b.states.len() >= b.budget;
        let plan_one = |&s: &DwaStateId| {
            let slot = rayon::current_thread_index().unwrap_or(0) % memos.len();
            // A poisoned lock only means another plan panicked; the memo is still whole.
            let mut memo = memos[slot].lock().unwrap_or_else(|e| e.into_inner());
            b.plan(&mut memo, s, past_budget)
        };
        let plans: Vec<StatePlan> = if level.len() < PLAN_PARALLEL_MIN {
            level.iter().map(plan_one).collect()
        } else {
            level.par_iter().with_min_len(16).map(plan_one).collect()
        };
        for (s, plan) in level.into_iter().zip(plans) {
            b.apply(s, plan)?;
        }
    }
    Ok(Det {
        weights: b.weights.into_sets(),
        states: b.states,
        edges: b.edges,
        targets: b.targets,
        starts,
    })
}

#[cfg(test)]
mod tests {
    use super::{Builder, EdgePlan, Nfa, Set, WeightTable, WIDE_KEY};
    use crate::ids::{DwaStateId, WeightId};
    use hashbrown::HashSet;
    use roaring::RoaringBitmap;

    /// A builder over an effect automaton of `effects` effects with no edges, each riding
    /// classes `riders`.
    fn builder(effects: usize, riders: &RoaringBitmap) -> (Builder, WeightId) {
        let mut weights = WeightTable::default();
        let r = weights.intern(riders);
        let nfa = Nfa {
            weights,
            skip_to: vec![None; effects],
            trans: vec![Vec::new(); effects],
            edges: Vec::new(),
            targets: Vec::new(),
            starts: Vec::new(),
            riders: vec![r; effects],
        };
        (Builder::new(nfa, usize::MAX, usize::MAX), r)
    }

    /// States and edges are found again by their contents alone, through the table's
    /// growth (thousands of them), and contents that differ in any part (a member, a
    /// weight, the decided set, a target) make new ones; a state's filter is the union of
    /// its members' weights.
    #[test]
    fn states_and_edges_are_found_by_contents() {
        let (mut b, r) = builder(3_000, &RoaringBitmap::from_iter([1u32, 5]));
        let w = b.weights.intern(&RoaringBitmap::from_iter([2u32, 5]));
        let e = DwaStateId::new;
        let pair = b.state_for(vec![(e(0), r), (e(1), w)], None).unwrap();
        assert_eq!(b.state_for(vec![(e(0), r), (e(1), w)], None).unwrap(), pair);
        assert_eq!(
            b.weights.get(b.filters[pair.index()]),
            &RoaringBitmap::from_iter([1u32, 2, 5])
        );
        let alone = b.singleton(e(0)).unwrap();
        assert_ne!(alone, pair);
        assert_eq!(b.state_of(&[(e(0), r)]), Some(alone));
        assert_eq!(b.state_of(&[(e(0), w)]), None);
        assert_eq!(b.state_of(&[(e(1), w), (e(0), r)]), None);
        // Made in turn, then each found again by a fresh list of its members.
        let made: Vec<DwaStateId> = (0..3_000).map(|i| b.singleton(e(i)).unwrap()).collect();
        assert_eq!(made[0], alone);
        assert_eq!(made.iter().collect::<HashSet<_>>().len(), 3_000);
        for (i, &s) in made.iter().enumerate() {
            assert_eq!(b.state_of(&[(e(i), r)]), Some(s));
            assert_eq!(b.singleton(e(i)).unwrap(), s);
        }
        assert_eq!(b.states.len(), 3_001);

        let edge = b.intern_edge(w, vec![(pair, r), (alone, w)]);
        assert_eq!(b.intern_edge(w, vec![(pair, r), (alone, w)]), edge);
        let others = [
            b.intern_edge(r, vec![(pair, r), (alone, w)]),
            b.intern_edge(w, vec![(pair, w), (alone, w)]),
            b.intern_edge(w, vec![(pair, r), (made[1], w)]),
            b.intern_edge(w, vec![(pair, r)]),
            b.intern_edge(w, Vec::new()),
        ];
        let mut all = vec![edge];
        all.extend(others);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 6);
        let many: Vec<u32> = made
            .iter()
            .map(|&s| b.intern_edge(WeightId::new(0), vec![(s, r)]))
            .collect();
        for (&s, &m) in made.iter().zip(&many) {
            assert_eq!(b.intern_edge(WeightId::new(0), vec![(s, r)]), m);
            let (from, to) = b.edges[m as usize].targets;
            assert_eq!(b.targets[from as usize..to as usize], [(s, r)]);
        }
        assert_eq!(b.edges.len(), 6 + 3_000);
    }

    /// Past the budget, an edge waking fewer than [`WIDE_KEY`] effects targets each
    /// effect's own state, with its riders; one waking more targets one state of them
    /// all, whose filter is their riders' union.
    #[test]
    fn past_the_budget_only_wide_edges_share_a_state() {
        let (mut b, _) = builder(2 * WIDE_KEY, &RoaringBitmap::from_iter(0u32..1_000));
        b.budget = 0;
        let plan = |b: &mut Builder, effects: std::ops::Range<usize>| {
            let members = effects
                .map(|i| {
                    let w = b.weights.intern(&RoaringBitmap::from_iter([i as u32]));
                    (DwaStateId::new(i), Set::Id(w))
                })
                .collect();
            let edge = b
                .apply_edge(EdgePlan {
                    decided: Set::Id(WeightId::new(0)),
                    members,
                    filter: None,
                })
                .unwrap();
            let (from, to) = b.edges[edge as usize].targets;
            b.targets[from as usize..to as usize].to_vec()
        };
        let narrow = plan(&mut b, 0..WIDE_KEY - 1);
        assert_eq!(narrow.len(), WIDE_KEY - 1);
        for (i, &(s, w)) in narrow.iter().enumerate() {
            assert_eq!(b.keys[s.index()].len(), 1);
            assert_eq!(b.weights.get(w), &RoaringBitmap::from_iter([i as u32]));
        }
        let wide = plan(&mut b, WIDE_KEY..2 * WIDE_KEY);
        assert_eq!(wide.len(), 1);
        let (s, filter) = wide[0];
        assert_eq!(b.keys[s.index()].len(), WIDE_KEY);
        assert_eq!(
            b.weights.get(filter),
            &RoaringBitmap::from_iter(WIDE_KEY as u32..2 * WIDE_KEY as u32)
        );
    }
}

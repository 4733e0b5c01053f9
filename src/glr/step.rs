//! One GLR step: the reduction closure for a lookahead terminal, then the shift.
//!
//! Reductions create nodes at the current position; they are built in a scratch graph
//! (`Temp` nodes, one per LR state, so that stacks merge), repeated to a fixpoint so that
//! a new edge into a node also feeds the reductions whose paths run through it (the
//! classic difficulty with ε-rules in Tomita's algorithm), and frozen into immutable
//! [`Node`]s only when a shift uses them.

use std::cell::RefCell;
use std::sync::Arc;

use hashbrown::HashMap;
use smallvec::SmallVec;

use super::gss::{merge_heads, Heads, Node, Preds};
use super::lr_run::{self, RunEnd};
use crate::ids::{LrStateId, TerminalId};
use crate::lr::{Action, LrTable};

#[derive(Clone)]
enum NodeRef {
    Old(Arc<Node>),
    Temp(usize),
}

impl NodeRef {
    fn same(&self, other: &NodeRef) -> bool {
        match (self, other) {
            (NodeRef::Old(a), NodeRef::Old(b)) => Arc::ptr_eq(a, b),
            (NodeRef::Temp(a), NodeRef::Temp(b)) => a == b,
            _ => false,
        }
    }
}

struct Temp {
    state: LrStateId,
    preds: SmallVec<[NodeRef; 2]>,
    /// Scratch nodes that have this one among their `preds`.
    above: SmallVec<[usize; 2]>,
}

/// The buffers of reduction closures, kept on each thread from one closure to the next.
///
/// A commit runs several closures (one per emitted terminal, and one per terminal its
/// viability check asks about); growing their scratch graphs and work lists afresh was
/// most of a commit's ~17 allocations per token on MaskBench, each a cold block on the
/// first document after a compile. Emptied before they are kept: no node outlives its step.
#[derive(Default)]
struct Scratch {
    temps: Vec<Temp>,
    by_state: HashMap<LrStateId, usize>,
    /// `Level::close`'s edge counts of the previous pass, per scratch node.
    old_len: Vec<usize>,
    /// `Level::close`'s nodes that grew in the previous pass.
    grown_prev: Vec<usize>,
    /// `Level::close`'s nodes that grew in this pass, with their edge count before.
    grown: Vec<(usize, usize)>,
    /// `Level::close`'s pass that last recorded a node as grown.
    stamp: Vec<u32>,
    /// `Level::tops_reaching_fresh`'s visited stamps and work list.
    mark: Vec<u32>,
    reach: Vec<usize>,
    /// The tops a pass scans, and the ends of one reduction's paths.
    scan: Vec<NodeRef>,
    ends: Vec<NodeRef>,
    /// `Level::freeze`'s frozen scratch nodes (by index) and the nodes being frozen.
    frozen: Vec<Option<Arc<Node>>>,
    visiting: Vec<usize>,
}

/// Scratch nodes and list entries past which a thread does not keep its buffers: a
/// closure that built more (a chain of hundreds of reductions) does far more work than the
/// allocations it then repeats, and the thread would hold its largest step for good.
const KEEP_ENTRIES: usize = 1 << 10;

impl Scratch {
    /// Empties every buffer (dropping the nodes they refer to), keeping capacities within
    /// [`KEEP_ENTRIES`].
    fn clear(&mut self) {
        if self.temps.capacity() > KEEP_ENTRIES
            || self.by_state.capacity() > KEEP_ENTRIES
            || self.scan.capacity() > KEEP_ENTRIES
            || self.ends.capacity() > KEEP_ENTRIES
            || self.old_len.capacity() > KEEP_ENTRIES
            || self.mark.capacity() > KEEP_ENTRIES
            || self.reach.capacity() > KEEP_ENTRIES
            || self.grown.capacity() > KEEP_ENTRIES
            || self.stamp.capacity() > KEEP_ENTRIES
            || self.grown_prev.capacity() > KEEP_ENTRIES
            || self.frozen.capacity() > KEEP_ENTRIES
        {
            *self = Scratch::default();
            return;
        }
        self.temps.clear();
        // A hash table's clear writes all of its control bytes, even when it is empty.
        if !self.by_state.is_empty() {
            self.by_state.clear();
        }
        self.old_len.clear();
        self.grown_prev.clear();
        self.grown.clear();
        self.stamp.clear();
        self.mark.clear();
        self.reach.clear();
        self.scan.clear();
        self.ends.clear();
        self.frozen.clear();
        self.visiting.clear();
    }
}

thread_local! {
    /// This thread's closure buffers, empty between steps.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` on this thread's closure buffers, and empties them after (even if `f`
/// panics). Fresh buffers if they are in use (closures do not nest today) or the thread
/// is being torn down.
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    struct Emptied<'a>(&'a mut Scratch);
    impl Drop for Emptied<'_> {
        fn drop(&mut self) {
            self.0.clear();
        }
    }
    let mut f = Some(f);
    let kept = SCRATCH.try_with(|c| {
        let mut s = c.try_borrow_mut().ok()?;
        let s = Emptied(&mut s);
        // Taken once: this closure runs once, and only here is `f` taken.
        f.take().map(|f| f(&mut *s.0))
    });
    match kept {
        Ok(Some(r)) => r,
        // `f` was not run when the buffers were unavailable.
        _ => f.map_or_else(|| unreachable!("ran above"), |f| f(&mut Scratch::default())),
    }
}

/// The current position's nodes during one reduction closure.
struct Level<'a> {
    table: &'a LrTable,
    heads: &'a [Arc<Node>],
    /// Empty when the level begins.
    s: &'a mut Scratch,
}

impl<'a> Level<'a> {
    /// A level over `heads`, its scratch graph in `s` (which must be empty).
    fn new(table: &'a LrTable, heads: &'a [Arc<Node>], s: &'a mut Scratch) -> Self {
        Self { table, heads, s }
    }

    fn state_of(&self, r: &NodeRef) -> LrStateId {
        match r {
            NodeRef::Old(n) => n.state(),
            NodeRef::Temp(i) => self.s.temps[*i].state,
        }
    }

    /// Endpoints of the paths of `len` edges down from `from` that are *fresh*: they start
    /// at a top created since the last pass, or use an edge added since then (`old_len[i]`:
    /// how many of scratch node `i`'s edges are older; nodes of earlier steps are never
    /// fresh). Iterative, since right-hand sides can be long.
    fn fresh_path_ends(
        &self,
        from: &NodeRef,
        len: usize,
        from_fresh: bool,
        old_len: &[usize],
        out: &mut Vec<NodeRef>,
    ) {
        // Borrowed nodes on the work stack: only the ends are cloned.
        #[derive(Clone, Copy)]
        enum At<'n> {
            Old(&'n Arc<Node>),
            Temp(usize),
        }
        let start = match from {
            NodeRef::Old(n) => At::Old(n),
            NodeRef::Temp(i) => At::Temp(*i),
        };
        let mut work: SmallVec<[(At<'_>, usize, bool); 16]> = SmallVec::new();
        work.push((start, len, from_fresh));
        while let Some((n, left, fresh)) = work.pop() {
            if left == 0 {
                if fresh {
                    out.push(match n {
                        At::Old(n) => NodeRef::Old(n.clone()),
                        At::Temp(i) => NodeRef::Temp(i),
                    });
                }
                continue;
            }
            match n {
                // Nodes of earlier steps only lead to such nodes, whose edges are all old.
                At::Old(_) if !fresh => {}
                At::Old(n) => work.extend(n.preds().iter().map(|p| (At::Old(p), left - 1, true))),
                At::Temp(i) => {
                    let old = old_len.get(i).copied().unwrap_or(0);
                    for (k, p) in self.s.temps[i].preds.iter().enumerate() {
                        let at = match p {
                            NodeRef::Old(p) => At::Old(p),
                            NodeRef::Temp(j) => At::Temp(*j),
                        };
                        work.push((at, left - 1, fresh || k >= old));
                    }
                }
            }
        }
    }

    /// Appends every top (heads, then scratch nodes) to `out`.
    fn push_tops(&self, out: &mut Vec<NodeRef>) {
        out.extend(self.heads.iter().cloned().map(NodeRef::Old));
        out.extend((0..self.s.temps.len()).map(NodeRef::Temp));
    }

    /// The LR states of every top.
    fn top_states(&self) -> impl Iterator<Item = LrStateId> + '_ {
        let temps = self.s.temps.iter().map(|t| t.state);
        self.heads.iter().map(|h| h.state()).chain(temps)
    }

    /// Appends to `out` the tops with a fresh path (see [`Level::close`]) after the first
    /// pass: scratch nodes that are new (from `old_tops` on) or got new edges (`grown`), and
    /// the scratch nodes above them. Heads are never among them: nodes of earlier steps
    /// only lead to such nodes. `mark` (one stamp per scratch node) and `pass` make the
    /// visited set cost the nodes visited, not every scratch node: a chain of `k`
    /// reductions takes `k` passes.
    fn tops_reaching_fresh(
        &self,
        old_tops: usize,
        grown: &[usize],
        mark: &mut Vec<u32>,
        work: &mut Vec<usize>,
        pass: u32,
        out: &mut Vec<NodeRef>,
    ) {
        mark.resize(self.s.temps.len(), 0);
        work.clear();
        work.extend((old_tops..self.s.temps.len()).chain(grown.iter().copied()));
        while let Some(i) = work.pop() {
            if std::mem::replace(&mut mark[i], pass) == pass {
                continue;
            }
            out.push(NodeRef::Temp(i));
            work.extend(self.s.temps[i].above.iter().copied());
        }
    }

    /// Applies every reduction on lookahead `t` until no new edge appears.
    ///
    /// Semi-naive: a pass only follows paths that are fresh (a top or an edge that the
    /// previous pass did not see), from the tops that can reach one; every other path was
    /// reduced by an earlier pass and can add nothing. Re-reducing everything each pass
    /// made a chain of `k` reductions (closing many nested objects or optional members at
    /// once, one new node per pass) cost `k²` path walks.
    ///
    /// With a `budget`, gives up (returning `false`, the closure incomplete) once it has
    /// taken that many reduction paths; `true` when the closure is complete.
    fn close(&mut self, t: TerminalId, budget: Option<usize>) -> bool {
        // The lists live in the scratch between closures; taken out here so that the
        // scratch graph can grow while they are read.
        let mut scan = std::mem::take(&mut self.s.scan);
        let mut ends = std::mem::take(&mut self.s.ends);
        let done = self.close_with(t, budget, &mut scan, &mut ends);
        scan.clear();
        ends.clear();
        self.s.scan = scan;
        self.s.ends = ends;
        done
    }

    /// [`Level::close`] with its two node lists.
    fn close_with(
        &mut self,
        t: TerminalId,
        mut budget: Option<usize>,
        scan: &mut Vec<NodeRef>,
        ends: &mut Vec<NodeRef>,
    ) -> bool {
        // What the previous pass saw: scratch nodes and their edge counts at its start
        // (`old_len[i]` for `i < old_tops`). Kept up to date through the nodes that grew,
        // not rebuilt per pass, so a chain of `k` passes costs `k`, not `k²`
        // (closing a 200-member object: ~600 passes).
        let mut old_tops = 0usize;
        // Scratch nodes older than the pass that got edges in the previous pass
        // (`grown_prev`), and in this one with their edge count before (`grown`; `stamp`:
        // the pass that last recorded one). All start empty: a level begins on an empty
        // scratch.
        let mut pass = 0u32;
        let mut first = true;
        loop {
            pass += 1;
            let mut changed = false;
            let pass_tops = self.s.temps.len();
            self.s.stamp.resize(pass_tops, 0);
            self.s.grown.clear();
            scan.clear();
            if first {
                self.push_tops(scan);
            } else {
                let mut mark = std::mem::take(&mut self.s.mark);
                let mut reach = std::mem::take(&mut self.s.reach);
                let grown_prev = std::mem::take(&mut self.s.grown_prev);
                self.tops_reaching_fresh(old_tops, &grown_prev, &mut mark, &mut reach, pass, scan);
                self.s.mark = mark;
                self.s.reach = reach;
                self.s.grown_prev = grown_prev;
            }
            for top in scan.drain(..) {
                let top_fresh = first
                    || match top {
                        NodeRef::Temp(i) => i >= old_tops,
                        NodeRef::Old(_) => false,
                    };
                let state = self.state_of(&top);
                for a in self.table.actions(state, t) {
                    let Action::Reduce(p) = *a else { continue };
                    let lhs = self.table.lhs(p);
                    ends.clear();
                    self.fresh_path_ends(
                        &top,
                        self.table.rhs_len(p),
                        top_fresh,
                        &self.s.old_len,
                        ends,
                    );
                    if let Some(b) = budget.as_mut() {
                        if *b < ends.len() {
                            return false;
                        }
                        *b -= ends.len();
                    }
                    for end in ends.drain(..) {
                        // LR(0) automata always have the goto for a reduction that applies.
                        let Some(g) = self.table.goto(self.state_of(&end), lhs) else {
                            continue;
                        };
                        let s = &mut *self.s;
                        let idx = match s.by_state.get(&g) {
                            Some(&i) => i,
                            None => {
                                s.temps.push(Temp {
                                    state: g,
                                    preds: SmallVec::new(),
                                    above: SmallVec::new(),
                                });
                                s.by_state.insert(g, s.temps.len() - 1);
                                s.temps.len() - 1
                            }
                        };
                        if !s.temps[idx].preds.iter().any(|x| x.same(&end)) {
                            if let NodeRef::Temp(below) = end {
                                s.temps[below].above.push(idx);
                            }
                            if idx < pass_tops && s.stamp[idx] != pass {
                                s.stamp[idx] = pass;
                                let before = s.temps[idx].preds.len();
                                s.grown.push((idx, before));
                            }
                            s.temps[idx].preds.push(end);
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                return true;
            }
            first = false;
            // Edge counts at this pass's start: nodes made in the previous pass and those
            // that grew in it have their current count, unless they grew in this pass too;
            // every other node kept the count it had.
            let s = &mut *self.s;
            s.old_len.resize(pass_tops, 0);
            for i in (old_tops..pass_tops).chain(s.grown_prev.iter().copied()) {
                s.old_len[i] = s.temps[i].preds.len();
            }
            for &(i, before) in &s.grown {
                s.old_len[i] = before;
            }
            s.grown_prev.clear();
            s.grown_prev.extend(s.grown.iter().map(|&(i, _)| i));
            old_tops = pass_tops;
        }
    }

    /// Whether some top can shift `t` (or accept, if `t` is end of input).
    fn can_consume(&self, t: TerminalId) -> bool {
        self.top_states().any(|state| {
            self.table
                .actions(state, t)
                .iter()
                .any(|a| matches!(a, Action::Shift(_) | Action::Accept))
        })
    }

    /// Freezes a scratch node (and, first, the scratch nodes below it). `frozen` is indexed
    /// by scratch node and as long as the scratch graph.
    fn freeze(
        &self,
        r: &NodeRef,
        frozen: &mut [Option<Arc<Node>>],
        visiting: &mut Vec<usize>,
    ) -> Option<Arc<Node>> {
        match r {
            NodeRef::Old(n) => Some(n.clone()),
            NodeRef::Temp(i) => {
                if let Some(n) = &frozen[*i] {
                    return Some(n.clone());
                }
                if visiting.contains(i) {
                    // Only cyclic grammars close a cycle here, and those are rejected when
                    // compiled; dropping the back edge keeps us total regardless.
                    return None;
                }
                visiting.push(*i);
                let mut preds = Preds::new();
                for p in &self.s.temps[*i].preds {
                    if let Some(n) = self.freeze(p, frozen, visiting) {
                        preds.push(n);
                    }
                }
                visiting.pop();
                let n = Node::push(self.s.temps[*i].state, preds);
                frozen[*i] = Some(n.clone());
                Some(n)
            }
        }
    }
}

/// Shifts the (lexically ambiguous) lexeme `terms` onto `heads`: for each terminal the
/// reduction closure, then the shift; stacks that reach the same state merge. Returns the
/// new heads (empty if no stack can take any of the terminals).
pub fn shift(table: &LrTable, heads: &[Arc<Node>], terms: &[TerminalId]) -> Heads {
    shift_by_lr_run(table, heads, terms).unwrap_or_else(|| shift_closure(table, heads, terms))
}

/// [`shift`]'s fast path: plain LR runs on a single stack, `None` where that does not
/// apply (several heads, or some terminal's step needs the full closure: a conflict, a
/// pop through merged stacks, a state made twice, a long run; see `lr_run::run`). Equal
/// to [`shift_closure`] whenever it is `Some`.
pub fn shift_by_lr_run(
    table: &LrTable,
    heads: &[Arc<Node>],
    terms: &[TerminalId],
) -> Option<Heads> {
    let [head] = heads else { return None };
    let mut targets: Targets = SmallVec::new();
    for &t in terms {
        let (end, stack) = lr_run::run(table, head, t)?;
        if let RunEnd::Shift(s) = end {
            add_target(&mut targets, s, stack.freeze());
        }
    }
    Some(merge_heads(
        targets.into_iter().map(|(s, preds)| Node::push(s, preds)),
    ))
}

/// Shift targets as a step gathers them: each state with the nodes it goes on.
type Targets = SmallVec<[(LrStateId, Preds); 4]>;

/// Records that `node` shifts into state `s` (once: the terminals of an ambiguous lexeme
/// can shift the same node into the same state).
fn add_target(targets: &mut Targets, s: LrStateId, node: Arc<Node>) {
    match targets.iter_mut().find(|(x, _)| *x == s) {
        Some((_, preds)) => {
            if !preds.iter().any(|p| Arc::ptr_eq(p, &node)) {
                preds.push(node);
            }
        }
        None => targets.push((s, SmallVec::from_elem(node, 1))),
    }
}

/// [`shift`] by the full reduction closure, for any heads.
pub fn shift_closure(table: &LrTable, heads: &[Arc<Node>], terms: &[TerminalId]) -> Heads {
    let mut targets: Targets = SmallVec::new();
    with_scratch(|s| {
        for &t in terms {
            // Each terminal's closure starts from the heads alone.
            s.clear();
            let mut tops = std::mem::take(&mut s.scan);
            let mut frozen = std::mem::take(&mut s.frozen);
            let mut visiting = std::mem::take(&mut s.visiting);
            let mut level = Level::new(table, heads, s);
            level.close(t, None);
            level.push_tops(&mut tops);
            frozen.resize(level.s.temps.len(), None);
            for top in &tops {
                for a in table.actions(level.state_of(top), t) {
                    let Action::Shift(s) = *a else { continue };
                    let Some(node) = level.freeze(top, &mut frozen, &mut visiting) else {
                        continue;
                    };
                    add_target(&mut targets, s, node);
                }
            }
            // Back into the scratch, which the next terminal or the end empties.
            s.scan = tops;
            s.frozen = frozen;
            s.visiting = visiting;
        }
    });
    merge_heads(targets.into_iter().map(|(s, preds)| Node::push(s, preds)))
}

/// Whether some stack in `heads` can shift `t` after reductions (or accept, for end of
/// input), without building anything.
pub fn can_consume(table: &LrTable, heads: &[Arc<Node>], t: TerminalId) -> bool {
    // Without a budget the closure always completes.
    can_consume_within(table, heads, t, None).unwrap_or(false)
}

/// [`can_consume`], giving up (`None`) once the reduction closure has taken `budget`
/// reduction paths: a cheap question first, before a terminal that reduces a whole chain
/// (`}` under a 200-member object) is asked in full.
pub fn can_consume_within(
    table: &LrTable,
    heads: &[Arc<Node>],
    t: TerminalId,
    budget: Option<usize>,
) -> Option<bool> {
    let direct = heads.iter().any(|h| {
        table
            .actions(h.state(), t)
            .iter()
            .any(|a| matches!(a, Action::Shift(_) | Action::Accept))
    });
    if direct {
        return Some(true);
    }
    let any_reduce = heads.iter().any(|h| {
        table
            .actions(h.state(), t)
            .iter()
            .any(|a| matches!(a, Action::Reduce(_)))
    });
    if !any_reduce {
        return Some(false);
    }
    // One stack and no conflict on the way: a plain LR run answers, whatever the budget
    // (it costs a step per reduction, not a closure).
    if let Some(x) = can_consume_by_lr_run(table, heads, t) {
        return Some(x);
    }
    can_consume_closure(table, heads, t, budget)
}

/// [`can_consume`]'s fast path: a plain LR run on a single stack, `None` where that does
/// not apply (as [`shift_by_lr_run`]). Equal to [`can_consume_closure`] without a budget
/// whenever it is `Some`.
pub fn can_consume_by_lr_run(table: &LrTable, heads: &[Arc<Node>], t: TerminalId) -> Option<bool> {
    let [head] = heads else { return None };
    let (end, _) = lr_run::run(table, head, t)?;
    Some(matches!(end, RunEnd::Shift(_) | RunEnd::Accept))
}

/// [`can_consume_within`] by the full reduction closure, for any heads.
pub fn can_consume_closure(
    table: &LrTable,
    heads: &[Arc<Node>],
    t: TerminalId,
    budget: Option<usize>,
) -> Option<bool> {
    with_scratch(|s| {
        let mut level = Level::new(table, heads, s);
        level.close(t, budget).then(|| level.can_consume(t))
    })
}

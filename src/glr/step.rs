//! One GLR step: the reduction closure for a lookahead terminal, then the shift.
//!
//! Reductions create nodes at the current position; they are built in a scratch graph
//! (`Temp` nodes, one per LR state, so that stacks merge), repeated to a fixpoint so that
//! a new edge into a node also feeds the reductions whose paths run through it (the
//! classic difficulty with ε-rules in Tomita's algorithm), and frozen into immutable
//! [`Node`]s only when a shift uses them.

use std::sync::Arc;

use hashbrown::HashMap;
use smallvec::SmallVec;

use super::gss::{merge_heads, Node};
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
    preds: Vec<NodeRef>,
    /// Scratch nodes that have this one among their `preds`.
    above: Vec<usize>,
}

/// The current position's nodes during one reduction closure.
struct Level<'a> {
    table: &'a LrTable,
    heads: &'a [Arc<Node>],
    temps: Vec<Temp>,
    by_state: HashMap<LrStateId, usize>,
}

impl<'a> Level<'a> {
    fn new(table: &'a LrTable, heads: &'a [Arc<Node>]) -> Self {
        Self {
            table,
            heads,
            temps: Vec::new(),
            by_state: HashMap::new(),
        }
    }

    fn state_of(&self, r: &NodeRef) -> LrStateId {
        match r {
            NodeRef::Old(n) => n.state(),
            NodeRef::Temp(i) => self.temps[*i].state,
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
        let mut work: Vec<(At<'_>, usize, bool)> = vec![(start, len, from_fresh)];
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
                    for (k, p) in self.temps[i].preds.iter().enumerate() {
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

    fn tops(&self) -> Vec<NodeRef> {
        self.heads
            .iter()
            .cloned()
            .map(NodeRef::Old)
            .chain((0..self.temps.len()).map(NodeRef::Temp))
            .collect()
    }

    /// The tops with a fresh path (see [`Level::close`]) after the first pass: scratch
    /// nodes that are new (from `old_tops` on) or got new edges (`grown`), and the scratch
    /// nodes above them. Heads are never among them: nodes of earlier steps only lead to
    /// such nodes. `mark` (one stamp per scratch node) and `pass` make the visited set
    /// cost the nodes visited, not every scratch node: a chain of `k` reductions takes
    /// `k` passes.
    fn tops_reaching_fresh(
        &self,
        old_tops: usize,
        grown: &[usize],
        mark: &mut Vec<u32>,
        pass: u32,
    ) -> Vec<NodeRef> {
        mark.resize(self.temps.len(), 0);
        let mut work: Vec<usize> = (old_tops..self.temps.len())
            .chain(grown.iter().copied())
            .collect();
        let mut out = Vec::new();
        while let Some(i) = work.pop() {
            if std::mem::replace(&mut mark[i], pass) == pass {
                continue;
            }
            out.push(NodeRef::Temp(i));
            work.extend(self.temps[i].above.iter().copied());
        }
        out
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
    fn close(&mut self, t: TerminalId, mut budget: Option<usize>) -> bool {
        // What the previous pass saw: scratch nodes and their edge counts at its start
        // (`old_len[i]` for `i < old_tops`). Kept up to date through the nodes that grew,
        // not rebuilt per pass, so a chain of `k` passes costs `k`, not `k²`
        // (closing a 200-member object: ~600 passes).
        let mut old_tops = 0usize;
        let mut old_len: Vec<usize> = Vec::new();
        // Scratch nodes older than the pass that got edges in the previous pass, and in
        // this one with their edge count before (`stamp`: the pass that last recorded one).
        let mut grown_prev: Vec<usize> = Vec::new();
        let mut grown: Vec<(usize, usize)> = Vec::new();
        let mut stamp: Vec<u32> = Vec::new();
        let mut mark: Vec<u32> = Vec::new();
        let mut pass = 0u32;
        let mut first = true;
        loop {
            pass += 1;
            let mut changed = false;
            let pass_tops = self.temps.len();
            stamp.resize(pass_tops, 0);
            grown.clear();
            let scan = if first {
                self.tops()
            } else {
                self.tops_reaching_fresh(old_tops, &grown_prev, &mut mark, pass)
            };
            for top in scan {
                let top_fresh = first
                    || match top {
                        NodeRef::Temp(i) => i >= old_tops,
                        NodeRef::Old(_) => false,
                    };
                let state = self.state_of(&top);
                for a in self.table.actions(state, t) {
                    let Action::Reduce(p) = *a else { continue };
                    let lhs = self.table.lhs(p);
                    let mut ends = Vec::new();
                    self.fresh_path_ends(
                        &top,
                        self.table.rhs_len(p),
                        top_fresh,
                        &old_len,
                        &mut ends,
                    );
                    if let Some(b) = budget.as_mut() {
                        if *b < ends.len() {
                            return false;
                        }
                        *b -= ends.len();
                    }
                    for end in ends {
                        // LR(0) automata always have the goto for a reduction that applies.
                        let Some(g) = self.table.goto(self.state_of(&end), lhs) else {
                            continue;
                        };
                        let idx = match self.by_state.get(&g) {
                            Some(&i) => i,
                            None => {
                                self.temps.push(Temp {
                                    state: g,
                                    preds: Vec::new(),
                                    above: Vec::new(),
                                });
                                self.by_state.insert(g, self.temps.len() - 1);
                                self.temps.len() - 1
                            }
                        };
                        if !self.temps[idx].preds.iter().any(|x| x.same(&end)) {
                            if let NodeRef::Temp(below) = end {
                                self.temps[below].above.push(idx);
                            }
                            if idx < pass_tops && stamp[idx] != pass {
                                stamp[idx] = pass;
                                grown.push((idx, self.temps[idx].preds.len()));
                            }
                            self.temps[idx].preds.push(end);
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
            old_len.resize(pass_tops, 0);
            for i in (old_tops..pass_tops).chain(grown_prev.iter().copied()) {
                old_len[i] = self.temps[i].preds.len();
            }
            for &(i, before) in &grown {
                old_len[i] = before;
            }
            grown_prev.clear();
            grown_prev.extend(grown.iter().map(|&(i, _)| i));
            old_tops = pass_tops;
        }
    }

    /// Whether some top can shift `t` (or accept, if `t` is end of input).
    fn can_consume(&self, t: TerminalId) -> bool {
        self.tops().iter().any(|top| {
            self.table
                .actions(self.state_of(top), t)
                .iter()
                .any(|a| matches!(a, Action::Shift(_) | Action::Accept))
        })
    }

    /// Freezes a scratch node (and, first, the scratch nodes below it).
    fn freeze(
        &self,
        r: &NodeRef,
        frozen: &mut HashMap<usize, Arc<Node>>,
        visiting: &mut Vec<usize>,
    ) -> Option<Arc<Node>> {
        match r {
            NodeRef::Old(n) => Some(n.clone()),
            NodeRef::Temp(i) => {
                if let Some(n) = frozen.get(i) {
                    return Some(n.clone());
                }
                if visiting.contains(i) {
                    // Only cyclic grammars close a cycle here, and those are rejected when
                    // compiled; dropping the back edge keeps us total regardless.
                    return None;
                }
                visiting.push(*i);
                let mut preds: SmallVec<[Arc<Node>; 1]> = SmallVec::new();
                for p in &self.temps[*i].preds {
                    if let Some(n) = self.freeze(p, frozen, visiting) {
                        preds.push(n);
                    }
                }
                visiting.pop();
                let n = Node::push(self.temps[*i].state, preds);
                frozen.insert(*i, n.clone());
                Some(n)
            }
        }
    }
}

/// Shifts the (lexically ambiguous) lexeme `terms` onto `heads`: for each terminal the
/// reduction closure, then the shift; stacks that reach the same state merge. Returns the
/// new heads (empty if no stack can take any of the terminals).
pub fn shift(table: &LrTable, heads: &[Arc<Node>], terms: &[TerminalId]) -> Vec<Arc<Node>> {
    let mut targets: Vec<(LrStateId, SmallVec<[Arc<Node>; 1]>)> = Vec::new();
    for &t in terms {
        let mut level = Level::new(table, heads);
        level.close(t, None);
        let mut frozen = HashMap::new();
        for top in level.tops() {
            for a in table.actions(level.state_of(&top), t) {
                let Action::Shift(s) = *a else { continue };
                let Some(node) = level.freeze(&top, &mut frozen, &mut Vec::new()) else {
                    continue;
                };
                match targets.iter_mut().find(|(x, _)| *x == s) {
                    Some((_, preds)) => {
                        if !preds.iter().any(|p| Arc::ptr_eq(p, &node)) {
                            preds.push(node);
                        }
                    }
                    None => targets.push((s, SmallVec::from_elem(node, 1))),
                }
            }
        }
    }
    merge_heads(
        targets
            .into_iter()
            .map(|(s, preds)| Node::push(s, preds))
            .collect(),
    )
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
    let mut level = Level::new(table, heads);
    level.close(t, budget).then(|| level.can_consume(t))
}

//! The deterministic fast path of a GLR step: a plain LR run on one stack.
//!
//! Most steps of a real document need none of GLR's machinery: one head, and one action
//! per cell along the reductions of the lookahead (Elkhound's observation). There the
//! reduction closure is a stack machine: pop the right-hand side, push the goto, until
//! the top shifts. This module runs that machine over a shared stack without a scratch
//! graph, and says `None` the moment the step is not that simple (a conflict, a merged
//! stack under a pop, a state reached twice), so that the caller runs the full closure
//! ([`super::step`]) instead. Depends on the LR table and the GSS only.

use std::sync::Arc;

use smallvec::SmallVec;

use super::gss::Node;
use crate::ids::{LrStateId, TerminalId};
use crate::lr::{Action, LrTable};

/// Steps past which a run gives up (the full closure then decides): a chain this long
/// is rare, and the repeat check below is linear in it.
const MAX_STEPS: usize = 64;

/// How a deterministic run on one lookahead ended.
pub(super) enum RunEnd {
    /// The top shifts the lookahead into this state.
    Shift(LrStateId),
    /// The top accepts (end of input).
    Accept,
    /// The top has no action, or a reduction has no goto: no stack takes the lookahead.
    Stuck,
}

/// The stack a run stands on: `base` (a node of an earlier step, the part of the stack
/// not popped) under the states the run pushed since, bottom first.
pub(super) struct RunStack<'a> {
    /// The topmost node not popped.
    pub base: &'a Arc<Node>,
    /// States pushed on `base` by reductions, bottom first.
    pub pushed: SmallVec<[LrStateId; 8]>,
}

impl RunStack<'_> {
    /// The new nodes for `pushed` on `base`, the last one returned (`base` if none).
    pub fn freeze(&self) -> Arc<Node> {
        let mut node = self.base.clone();
        for &s in &self.pushed {
            node = Node::push(s, smallvec::smallvec![node]);
        }
        node
    }
}

/// Runs the reductions of lookahead `t` on the single stack under `head`, as the full
/// closure would, and says how the run ended and on what stack; `None` if the closure
/// could do more than one stack can (a cell with several actions, a pop through a node
/// with several predecessors, a state reached twice in the run, or a run over
/// [`MAX_STEPS`]).
///
/// Equal to the full closure when `Some`: with one action per cell, no merged node under
/// a pop and no state made twice, the closure's scratch graph is this run's chain (its
/// tops that do not shift have a reduction as their only action), and its merge by state
/// never fires.
pub(super) fn run<'a>(
    table: &LrTable,
    head: &'a Arc<Node>,
    t: TerminalId,
) -> Option<(RunEnd, RunStack<'a>)> {
    let mut stack = RunStack {
        base: head,
        pushed: SmallVec::new(),
    };
    // Every state the run made, popped ones included: the full closure keeps those.
    let mut made: SmallVec<[LrStateId; 16]> = SmallVec::new();
    for _ in 0..MAX_STEPS {
        let top = stack.pushed.last().copied().unwrap_or(stack.base.state());
        let action = match table.actions(top, t) {
            [] => return Some((RunEnd::Stuck, stack)),
            [a] => *a,
            _ => return None,
        };
        let p = match action {
            Action::Shift(s) => return Some((RunEnd::Shift(s), stack)),
            Action::Accept => return Some((RunEnd::Accept, stack)),
            Action::Reduce(p) => p,
        };
        let mut pop = table.rhs_len(p);
        let from_pushed = pop.min(stack.pushed.len());
        stack.pushed.truncate(stack.pushed.len() - from_pushed);
        pop -= from_pushed;
        for _ in 0..pop {
            match stack.base.preds() {
                [below] => stack.base = below,
                // Merged stacks (the full closure follows every path), or the bottom
                // (a table that pops past it is not this run's to judge).
                _ => return None,
            }
        }
        let below = stack.pushed.last().copied().unwrap_or(stack.base.state());
        let Some(g) = table.goto(below, table.lhs(p)) else {
            return Some((RunEnd::Stuck, stack));
        };
        // A state made twice would be one merged node in the full closure, with the
        // paths of both under it.
        if made.contains(&g) {
            return None;
        }
        made.push(g);
        stack.pushed.push(g);
    }
    None
}

//! The graph-structured stack: immutable, shared nodes.
//!
//! A node is an LR state and the nodes below it (several when stacks merged). Nodes never
//! change after they are built, so a set of head nodes *is* a parser state: keeping it is
//! a snapshot, and restoring it is a rollback. Stacks that reach the same LR state after
//! the same input are merged into one node with several predecessors.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::ids::LrStateId;

/// A node's predecessors: nearly always one.
pub type Preds = SmallVec<[Arc<Node>; 1]>;

/// One stack entry.
pub struct Node {
    state: LrStateId,
    preds: Preds,
}

impl Node {
    /// The bottom of every stack: the LR start state.
    pub fn bottom(start: LrStateId) -> Arc<Node> {
        Arc::new(Node {
            state: start,
            preds: SmallVec::new(),
        })
    }

    /// A node on top of `preds` (which must be non-empty and free of duplicates).
    pub fn push(state: LrStateId, preds: Preds) -> Arc<Node> {
        Arc::new(Node { state, preds })
    }

    /// The LR state.
    #[inline]
    pub fn state(&self) -> LrStateId {
        self.state
    }

    /// The nodes directly below.
    #[inline]
    pub fn preds(&self) -> &[Arc<Node>] {
        &self.preds
    }
}

impl std::fmt::Debug for Node {
    // Shallow on purpose: merged stacks make the GSS a DAG whose paths multiply (an
    // ambiguous expression of n operators has Catalan(n) of them), so printing the stacks
    // below would take exponential time and memory. The node's state and the states
    // directly below it are what a reader can use.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let below: SmallVec<[LrStateId; 4]> = self.preds.iter().map(|p| p.state).collect();
        f.debug_struct("Node")
            .field("state", &self.state)
            .field("below", &below.as_slice())
            .finish()
    }
}

impl Drop for Node {
    // Long stacks are long linked lists: drop them iteratively, not recursively, so that a
    // document of a million tokens does not overflow the thread's stack.
    //
    // Most drops release nodes that other stacks still share: those only lose a count, and
    // the work list (inline for short chains) is not allocated for them.
    fn drop(&mut self) {
        let mut work: SmallVec<[Arc<Node>; 8]> = SmallVec::new();
        let release = |n: Arc<Node>, work: &mut SmallVec<[Arc<Node>; 8]>| {
            if let Ok(mut inner) = Arc::try_unwrap(n) {
                work.extend(inner.preds.drain(..));
            }
        };
        for n in self.preds.drain(..) {
            release(n, &mut work);
        }
        while let Some(n) = work.pop() {
            release(n, &mut work);
        }
    }
}

/// Head nodes as a step builds them: most steps leave a handful.
pub type Heads = SmallVec<[Arc<Node>; 4]>;

/// Merges head nodes that share an LR state into one node with the union of their
/// predecessors (both stand for the same set of stacks), keeping order stable.
pub fn merge_heads(heads: impl IntoIterator<Item = Arc<Node>>) -> Heads {
    let mut out = Heads::new();
    for h in heads {
        match out.iter().position(|o| o.state == h.state) {
            None => out.push(h),
            Some(i) if Arc::ptr_eq(&out[i], &h) => {}
            Some(i) => {
                let mut preds = out[i].preds.clone();
                for p in h.preds.iter() {
                    if !preds.iter().any(|q| Arc::ptr_eq(q, p)) {
                        preds.push(p.clone());
                    }
                }
                out[i] = Node::push(h.state, preds);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_stack_drops_without_overflow() {
        let mut top = Node::bottom(LrStateId::new(0));
        for i in 0..1_000_000 {
            let mut p = SmallVec::new();
            p.push(top);
            top = Node::push(LrStateId::new(i % 7 + 1), p);
        }
        drop(top);
    }

    #[test]
    fn merge_unions_predecessors() {
        let b = Node::bottom(LrStateId::new(0));
        let x = Node::push(LrStateId::new(1), SmallVec::from_elem(b.clone(), 1));
        let y = Node::push(LrStateId::new(2), SmallVec::from_elem(b.clone(), 1));
        let h1 = Node::push(LrStateId::new(3), SmallVec::from_elem(x, 1));
        let h2 = Node::push(LrStateId::new(3), SmallVec::from_elem(y, 1));
        let m = merge_heads(vec![h1, h2]);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].preds().len(), 2);
    }
}

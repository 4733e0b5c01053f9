//! The runtime walk: read the graph-structured stack top-down through the automaton, with
//! class sets intersected along edges and united where paths meet; stop where nothing is
//! undecided; expand the decided classes into the caller's token mask. No per-token loop
//! and no parser simulation.

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use super::{Dwa, NO_STATE};
use crate::ids::{DwaStateId, LrStateId};
use crate::lexer::LexPos;

/// A node of a graph-structured stack as the walk sees it.
pub trait StackNode: Sized {
    /// The LR state on this entry.
    fn state(&self) -> LrStateId;
    /// The entries directly below.
    fn preds(&self) -> &[Self];
    /// An identity for merging paths that reach the same node.
    fn key(&self) -> usize;
}

type Work<'a, N> = Vec<(&'a N, DwaStateId, RoaringBitmap)>;

/// Queues `(p, s, r)` for every entry `p` below `node`, minus what already reached (p, s).
fn push<'a, N: StackNode>(
    work: &mut Work<'a, N>,
    seen: &mut HashMap<(usize, DwaStateId), RoaringBitmap>,
    node: &'a N,
    s: DwaStateId,
    r: &RoaringBitmap,
) {
    for p in node.preds() {
        let todo = match seen.get_mut(&(p.key(), s)) {
            Some(done) => {
                let fresh = r - &*done;
                if fresh.is_empty() {
                    continue;
                }
                *done |= &fresh;
                fresh
            }
            None => {
                seen.insert((p.key(), s), r.clone());
                r.clone()
            }
        };
        work.push((p, s, todo));
    }
}

/// ORs into `out` (bit `t % 32` of word `t / 32`) the tokens allowed for a configuration
/// at `pos` with stack heads `heads` (EOS not included). Returns the number of stack
/// entries read. `out` must hold `ceil(vocab_len / 32)` words.
pub fn collect<N: StackNode>(dwa: &Dwa, pos: LexPos, heads: &[N], out: &mut [u32]) -> usize {
    let Some(sp) = dwa.start_pos(pos) else {
        return 0;
    };
    let mut decided = RoaringBitmap::new();
    // Work items: a stack node still to read, the state that reads it, and the classes
    // still undecided on this path; `seen` merges paths meeting at (node, state).
    let mut work: Work<'_, N> = Vec::new();
    let mut seen: HashMap<(usize, DwaStateId), RoaringBitmap> = HashMap::new();
    let mut reads = 0;
    for h in heads {
        reads += 1;
        let Some(e) = dwa.start_edge(sp.shape, h.state()) else {
            continue;
        };
        decided |= dwa.weight(e.decided);
        if e.next != NO_STATE {
            let r = dwa.weight(e.filter) - &decided;
            if !r.is_empty() {
                push(&mut work, &mut seen, h, e.next, &r);
            }
        }
    }
    while let Some((node, s, mut r)) = work.pop() {
        r -= &decided;
        if r.is_empty() {
            continue;
        }
        reads += 1;
        let Some(e) = dwa.edge(s, node.state()) else {
            continue;
        };
        let dw = dwa.weight(e.decided);
        if !dw.is_empty() {
            decided |= &r & dw;
        }
        if e.next != NO_STATE {
            let r2 = &(&r & dwa.weight(e.filter)) - &decided;
            if !r2.is_empty() {
                push(&mut work, &mut seen, node, e.next, &r2);
            }
        }
    }
    dwa.table(sp.table).expand(&decided, out);
    reads
}

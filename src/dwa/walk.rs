//! The runtime walk: read the graph-structured stack top-down through the automaton, with
//! token sets intersected along edges and united where paths meet; stop where nothing is
//! undecided. No per-token loop and no parser simulation.

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use super::Dwa;
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

/// Adds to `out` the tokens allowed for a configuration at `pos` with stack heads
/// `heads` (EOS not included). Returns the number of (node, state) pairs read.
pub fn collect<N: StackNode>(
    dwa: &Dwa,
    pos: LexPos,
    heads: &[N],
    out: &mut RoaringBitmap,
) -> usize {
    let Some(s0) = dwa.start(pos) else {
        return 0;
    };
    // Work items: a stack node still to read, the automaton state before reading it, and
    // the tokens still undecided on this path (None: all of them).
    let mut work: Vec<(&N, DwaStateId, Option<RoaringBitmap>)> =
        heads.iter().map(|h| (h, s0, None)).collect();
    let mut seen: HashMap<(usize, DwaStateId), RoaringBitmap> = HashMap::new();
    let mut reads = 0;
    while let Some((node, s, w)) = work.pop() {
        reads += 1;
        let Some((next, ew)) = dwa.step(s, node.state()) else {
            continue;
        };
        let mut w = match w {
            None => dwa.weight(ew).clone(),
            Some(mut w) => {
                w &= dwa.weight(ew);
                w
            }
        };
        let st = dwa.state(next);
        let fin = dwa.weight(st.final_weight);
        if !fin.is_empty() {
            *out |= &(&w & fin);
            w -= fin;
        }
        w -= &*out;
        if w.is_empty() || st.trans.is_empty() {
            continue;
        }
        for p in node.preds() {
            let key = (p.key(), next);
            let todo = match seen.get_mut(&key) {
                Some(done) => {
                    let fresh = &w - &*done;
                    if fresh.is_empty() {
                        continue;
                    }
                    *done |= &fresh;
                    fresh
                }
                None => {
                    seen.insert(key, w.clone());
                    w.clone()
                }
            };
            work.push((p, next, Some(todo)));
        }
    }
    reads
}

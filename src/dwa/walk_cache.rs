//! What the walk learned about the deep part of a stack, kept between masks.
//!
//! Below the few entries a commit changes, a stack stays the same from token to token,
//! yet a mask whose tokens may close what is open (`}`, `"},`, `0}`…) walks it again
//! each time: through a 200-property object, thousands of reads per mask. A
//! [`WalkCache`] remembers, for a stack entry and the automaton state reading it, which
//! classes the walk from there decides, so the next mask stops where it meets one.
//!
//! Exactness rests on the walk being linear in its riders: every step intersects with a
//! fixed set or unites, so for riders `r ⊆ R` the classes decided from `(entry, state)`
//! are `r ∩ D(R)`, where `D(R)` is what riders `R` decide (the module docs of
//! `compile::dwa::build` make the same argument for the automaton's edges). An entry keeps
//! `R` and answers only riders inside it; otherwise it is recomputed for `R ∪ r`.
//! Entries hold their stack entry alive (a clone of the node), so an identity is never
//! reused while cached. Depends on the automaton and the [`StackNode`] view only.

use hashbrown::HashMap;

use super::walk::{Scratch, StackNode};
use super::Dwa;
use crate::dwa::{Edge, ShapeWeights};
use crate::ids::{DwaStateId, WeightId};

/// Cached entries past this many words (riders and decided sets, both `cw` words) clear
/// the cache: it bounds a sequence's memory at 1 MB, and clearing only costs speed.
const MAX_WORDS: usize = 1 << 17;

/// Per-sequence memory of `(stack entry, state) → classes decided below`, for one
/// automaton. Holds clones of the entries it describes; starts empty and may be cleared
/// at any time without changing any mask.
#[derive(Debug)]
pub struct WalkCache<N> {
    /// `(entry key, state, class word range)` → entry index.
    index: HashMap<(usize, DwaStateId, u32, u32), u32>,
    /// Per entry: the node (kept alive) and its offset in `words`: riders, then decided
    /// (the range's width each).
    entries: Vec<(N, u32)>,
    words: Vec<u64>,
    /// The automaton the entries were computed on (its address): another one clears them.
    dwa: usize,
    /// Entries a walk path reads before the cache answers for the rest of it.
    depth: u32,
    /// The walk's buffers between masks (not part of what is cached); boxed so that a
    /// matcher stays small.
    pub(super) scratch: Box<Scratch>,
}

impl<N> Default for WalkCache<N> {
    fn default() -> Self {
        Self {
            index: HashMap::new(),
            entries: Vec::new(),
            words: Vec::new(),
            dwa: 0,
            depth: super::walk::CACHE_DEPTH,
            scratch: Box::default(),
        }
    }
}

/// An entry being computed: its node, the state reading it, the edge taken, where its
/// riders and decided classes are in the scratch buffer, and which (target, pred) child
/// comes next.
struct Frame<'a, 'd, N> {
    node: &'a N,
    s: DwaStateId,
    edge: &'d Edge,
    /// Riders at `at`, decided classes at `at + cw`, in the scratch buffer.
    at: usize,
    target: usize,
    pred: usize,
    /// Entries below the computed one (0 for it).
    depth: u32,
    /// Whether some frame on the way here had several children: below one, paths may
    /// meet again, so every entry is kept (else each would be recomputed per path).
    forked: bool,
}

/// On a single path, entries are kept every this many: a later mask's walk recomputes at
/// most this many entries before it meets a kept one, and the first walk does not pay a
/// cache insertion per entry.
const STRIDE: u32 = 8;

impl<N: StackNode + Clone> WalkCache<N> {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// A cache that answers paths from `depth` entries down (at least 1: the heads are
    /// read by the walk itself). Small depths exercise it in tests; the default is
    /// [`super::walk::CACHE_DEPTH`].
    pub fn with_depth(depth: u32) -> Self {
        Self {
            depth: depth.max(1),
            ..Self::default()
        }
    }

    /// Number of cached entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.index.clear();
        self.entries.clear();
        self.words.clear();
    }

    /// Prepares for a walk on `dwa`: entries of another automaton, or too many, go.
    pub(super) fn begin(&mut self, dwa: &Dwa) {
        let id = dwa as *const Dwa as usize;
        if self.dwa != id || self.words.len() > MAX_WORDS {
            self.clear();
            self.dwa = id;
        }
    }
}

/// One walk's view of a cache: its shape's weights, whose word range its sets cover.
pub(super) struct CacheView<'c, 'd, N> {
    cache: &'c mut WalkCache<N>,
    weights: ShapeWeights<'d>,
}

impl<'c, 'd, N: StackNode + Clone> CacheView<'c, 'd, N> {
    pub(super) fn new(cache: &'c mut WalkCache<N>, weights: ShapeWeights<'d>) -> Self {
        Self { cache, weights }
    }

    /// Depth from which the cache answers.
    pub(super) fn depth(&self) -> u32 {
        self.cache.depth
    }

    fn key(&self, node: &N, s: DwaStateId) -> (usize, DwaStateId, u32, u32) {
        (
            node.key(),
            s,
            self.weights.range().start as u32,
            self.weights.range().end as u32,
        )
    }

    fn lookup(&self, node: &N, s: DwaStateId) -> Option<u32> {
        self.cache.index.get(&self.key(node, s)).copied()
    }

    fn riders(&self, e: u32) -> &[u64] {
        let at = self.cache.entries[e as usize].1 as usize;
        &self.cache.words[at..at + self.weights.range().len()]
    }

    fn decided(&self, e: u32) -> &[u64] {
        let cw = self.weights.range().len();
        let at = self.cache.entries[e as usize].1 as usize + cw;
        &self.cache.words[at..at + cw]
    }

    fn store(&mut self, node: &N, s: DwaStateId, riders: &[u64], decided: &[u64]) {
        let key = self.key(node, s);
        let c = &mut *self.cache;
        let at = c.words.len() as u32;
        c.words.extend_from_slice(riders);
        c.words.extend_from_slice(decided);
        let e = c.entries.len() as u32;
        c.entries.push((node.clone(), at));
        c.index.insert(key, e);
    }

    /// ORs into `out` the classes riders `r` decide from `(node, s)` downwards, computing
    /// and caching what is missing (`r` and `out` over this view's class words).
    pub(super) fn decide(
        &mut self,
        dwa: &Dwa,
        node: &N,
        s: DwaStateId,
        r: &[u64],
        out: &mut [u64],
    ) {
        match self.lookup(node, s) {
            Some(e) if covers(self.riders(e), r) => {
                or_and(out, self.decided(e), r);
            }
            found => {
                let mut riders = r.to_vec();
                if let Some(e) = found {
                    for (x, &y) in riders.iter_mut().zip(self.riders(e)) {
                        *x |= y;
                    }
                }
                let d = self.compute(dwa, node, s, &riders);
                or_and(out, &d, r);
            }
        }
    }

    /// The classes `riders` decide from `(node, s)` downwards, caching the entry: an
    /// explicit depth-first walk (stacks run thousands of entries deep), each child
    /// answered from the cache when it covers the child's riders.
    fn compute(&mut self, dwa: &Dwa, node: &N, s: DwaStateId, riders: &[u64]) -> Vec<u64> {
        let cw = self.weights.range().len();
        let weights = self.weights;
        let w = |id: WeightId| weights.get(id);
        let Some(edge) = dwa.edge(s, node.state()) else {
            let zero = vec![0; cw];
            self.store(node, s, riders, &zero);
            return zero;
        };
        let root = node.clone();
        // Per frame: riders, then decided (a child's slot follows its parent's).
        let mut scratch: Vec<u64> = Vec::with_capacity(8 * cw);
        scratch.extend_from_slice(riders);
        scratch.resize(2 * cw, 0);
        let mut frames: Vec<Frame<'_, '_, N>> = Vec::new();
        let enter = |scratch: &mut [u64], at: usize, edge: &Edge| {
            if edge.decided.index() != 0 {
                let (r, d) = scratch[at..at + 2 * cw].split_at_mut(cw);
                or_and(d, r, w(edge.decided));
            }
        };
        enter(&mut scratch, 0, edge);
        frames.push(Frame {
            node: &root,
            s,
            edge,
            at: 0,
            target: 0,
            pred: 0,
            depth: 0,
            forked: false,
        });
        loop {
            // The frame on top: find its next child that is not answered by the cache.
            let top = frames.last_mut().expect("the root frame is popped last");
            let node: &N = top.node;
            let targets = dwa.targets(top.edge);
            let preds = node.preds();
            let mut child = None;
            while top.target < targets.len() {
                if top.pred >= preds.len() {
                    top.target += 1;
                    top.pred = 0;
                    continue;
                }
                let (next, filter) = targets[top.target];
                let p = &preds[top.pred];
                top.pred += 1;
                let at = scratch.len();
                let fw = w(filter);
                let mut any = 0;
                for i in 0..cw {
                    let x = scratch[top.at + i] & fw[i];
                    any |= x;
                    scratch.push(x);
                }
                if any == 0 {
                    scratch.truncate(at);
                    continue;
                }
                let found = self.lookup(p, next);
                if let Some(e) = found {
                    if covers(self.riders(e), &scratch[at..]) {
                        let dec = self.decided(e);
                        let (head, tail) = scratch.split_at_mut(at);
                        let d = &mut head[top.at + cw..top.at + 2 * cw];
                        or_and(d, &tail[..cw], dec);
                        scratch.truncate(at);
                        continue;
                    }
                    // Recomputed for both rider sets, so the new entry covers the old.
                    let old = self.riders(e).to_vec();
                    for (x, y) in scratch[at..].iter_mut().zip(old) {
                        *x |= y;
                    }
                }
                scratch.resize(at + 2 * cw, 0);
                child = Some((p, next, at));
                break;
            }
            if let Some((p, next, at)) = child {
                let forked = top.forked || targets.len() * preds.len() > 1;
                let depth = top.depth + 1;
                match dwa.edge(next, p.state()) {
                    Some(edge) => {
                        enter(&mut scratch, at, edge);
                        frames.push(Frame {
                            node: p,
                            s: next,
                            edge,
                            at,
                            target: 0,
                            pred: 0,
                            depth,
                            forked,
                        });
                    }
                    None => {
                        // Nothing below: nothing decided, and nothing worth keeping.
                        scratch.truncate(at);
                    }
                }
                continue;
            }
            // Every child is in: keep the entry if its place asks for it, fold it into
            // the parent.
            let done = frames.pop().expect("a frame is on top");
            let (r, d) = scratch[done.at..done.at + 2 * cw].split_at(cw);
            if done.depth == 0 || done.forked || done.depth % STRIDE == 0 {
                self.store(done.node, done.s, r, d);
            }
            let Some(parent) = frames.last() else {
                return d.to_vec();
            };
            // The child's riders may include an older entry's: only the parent's riders
            // through the filter count for the parent.
            let filter = w(dwa.targets(parent.edge)[parent.target].1);
            let (head, tail) = scratch.split_at_mut(done.at);
            let (pr, pd) = head[parent.at..parent.at + 2 * cw].split_at_mut(cw);
            for i in 0..cw {
                pd[i] |= tail[cw + i] & pr[i] & filter[i];
            }
            scratch.truncate(done.at);
        }
    }
}

/// `dst |= a ∩ b`, word by word.
#[inline]
fn or_and(dst: &mut [u64], a: &[u64], b: &[u64]) {
    for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        *d |= x & y;
    }
}

/// Whether `r ⊆ big`.
#[inline]
fn covers(big: &[u64], r: &[u64]) -> bool {
    big.iter().zip(r).all(|(&b, &x)| x & !b == 0)
}

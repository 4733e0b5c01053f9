//! The runtime walk: read the graph-structured stack top-down through the automaton, with
//! class sets intersected along edges and united where paths meet; stop where nothing is
//! undecided; expand the decided classes into the caller's token mask. No per-token loop
//! and no parser simulation: every step is a few word-wise operations on dense class sets.

use hashbrown::HashMap;

use super::indents::{IndentView, Resolved};
use super::walk_cache::{CacheView, WalkCache};
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

/// Class sets of one walk, in one growing buffer: slot `i` is `words[i*cw..(i+1)*cw]`.
/// Avoids an allocation per work item (sets are up to a few hundred words).
struct Arena {
    cw: usize,
    words: Vec<u64>,
}

impl Arena {
    fn alloc(&mut self, from: &[u64]) -> usize {
        let i = self.words.len() / self.cw;
        self.words.extend_from_slice(from);
        i
    }

    #[inline]
    fn get(&self, i: usize) -> &[u64] {
        &self.words[i * self.cw..(i + 1) * self.cw]
    }

    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut [u64] {
        &mut self.words[i * self.cw..(i + 1) * self.cw]
    }
}

/// A walk's buffers, kept between the walks of one sequence (in its [`WalkCache`]) so
/// that a warm mask allocates nothing (on a stack with dozens of heads, growing the merge
/// table and the class-set arena afresh was a sizeable share of each mask).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    seen: HashMap<(usize, DwaStateId), usize>,
    words: Vec<u64>,
    decided: Vec<u64>,
    r2: Vec<u64>,
}

/// Buffers past these sizes are not kept: clearing the merge table costs its capacity
/// (a small walk after a huge one would pay for the huge one), and the arena would hold
/// a sequence's largest walk for its whole life (a server keeps hundreds of sequences).
/// A walk that outgrows them does far more work than the allocations it then repeats.
const KEEP_SEEN: usize = 1 << 12;
const KEEP_WORDS: usize = 1 << 14;

impl Scratch {
    /// Empties the buffers for a walk over `cw`-word class sets (`decided` zeroed).
    fn reset(&mut self, cw: usize) {
        self.seen.clear();
        self.words.clear();
        self.decided.clear();
        self.decided.resize(cw, 0);
        self.r2.clear();
        self.r2.resize(cw, 0);
    }

    /// The buffers worth keeping for the next walk.
    fn kept(mut self) -> Self {
        if self.seen.capacity() > KEEP_SEEN {
            self.seen = HashMap::new();
        }
        if self.words.capacity() > KEEP_WORDS {
            self.words = Vec::new();
        }
        self
    }
}

/// Work items: a stack node still to read, the state that reads it, the slot of the
/// classes still undecided on this path, and how many entries the path read before it.
type Work<'a, N> = Vec<(&'a N, DwaStateId, usize, u32)>;

/// `a ∩ b − c` into `out`, and whether it is non-empty.
#[inline]
fn and_not(a: &[u64], b: &[u64], c: &[u64], out: &mut [u64]) -> bool {
    let mut any = 0;
    for i in 0..out.len() {
        out[i] = a[i] & b[i] & !c[i];
        any |= out[i];
    }
    any != 0
}

/// Queues `(p, s, r)` for every entry `p` below `node`, minus what already reached (p, s).
fn push<'a, N: StackNode>(
    work: &mut Work<'a, N>,
    seen: &mut HashMap<(usize, DwaStateId), usize>,
    arena: &mut Arena,
    node: &'a N,
    s: DwaStateId,
    r: &[u64],
    depth: u32,
) {
    for p in node.preds() {
        match seen.get(&(p.key(), s)) {
            Some(&done) => {
                let fresh = arena.alloc(r);
                let cw = arena.cw;
                let (lo, hi) = arena.words.split_at_mut(fresh * cw);
                let d = &mut lo[done * cw..(done + 1) * cw];
                let f = &mut hi[..cw];
                let mut any = 0;
                for (f, d) in f.iter_mut().zip(d.iter_mut()) {
                    *f &= !*d;
                    *d |= *f;
                    any |= *f;
                }
                if any != 0 {
                    work.push((p, s, fresh, depth));
                }
            }
            None => {
                let done = arena.alloc(r);
                seen.insert((p.key(), s), done);
                let fresh = arena.alloc(r);
                work.push((p, s, fresh, depth));
            }
        }
    }
}

/// Entries a path reads before the rest of it is answered by the [`WalkCache`], when
/// there is one: the top few change at every commit, what lies below mostly does not.
pub const CACHE_DEPTH: u32 = 16;

/// ORs into `out` (bit `t % 32` of word `t / 32`) the tokens allowed for a configuration
/// at `pos` with stack heads `heads` (EOS not included). With `fresh` set, `out` holds
/// nothing yet: it is written whole and `fresh` cleared if some token is allowed, and left
/// as it was otherwise. Returns the number of work
/// items taken (stack entries read, counting those a path reached with nothing left). `out` must hold `ceil(vocab_len / 32)` words.
/// With a `cache`, paths past its depth ([`CACHE_DEPTH`] unless set) are answered from it
/// (and fill it); the mask is the same either way.
// Kept out of line: inlined into `fill_mask_words` it compiled to 4% more instructions
// per mask (callgrind, built-in JSON × GPT-2).
#[inline(never)]
pub fn collect<N: StackNode + Clone>(
    dwa: &Dwa,
    pos: LexPos,
    heads: &[N],
    out: &mut [u32],
    fresh: &mut bool,
    cache: Option<&mut WalkCache<N>>,
) -> usize {
    collect_indented(dwa, pos, heads, out, fresh, cache, None)
}

/// Behind an indenter: the configuration's indentation, and the stacks it leaves after
/// a newline lexeme resolved so (`None`: none, as when the stacks cannot take it).
pub type IndentContext<'a, N> = (IndentView<'a>, &'a dyn Fn(Resolved) -> Option<Vec<N>>);

/// [`collect`] for a configuration behind an indenter (`indent`; see
/// [`super::indents`]): classes with a newline lexeme after ignored lexemes only also
/// read walks from the stacks the indenter leaves after it, one per distinct resolution.
pub fn collect_indented<N: StackNode + Clone>(
    dwa: &Dwa,
    pos: LexPos,
    heads: &[N],
    out: &mut [u32],
    fresh: &mut bool,
    cache: Option<&mut WalkCache<N>>,
    indent: Option<IndentContext<'_, N>>,
) -> usize {
    let Some(sp) = dwa.start_pos(pos) else {
        return 0;
    };
    // Only the words of this configuration's shape: its classes are a contiguous range,
    // and nothing outside it can ever be set on its paths.
    let table = dwa.table(sp.table);
    let weights = dwa.shape_weights(table.word_range());
    let range = weights.range();
    let cw = range.len();
    if cw == 0 {
        // A position no token can start from.
        return 0;
    }
    let mut cache = cache;
    // The last walk's buffers when the sequence has a cache (they go back at the end).
    let mut scratch = cache
        .as_deref_mut()
        .map(|c| std::mem::take(&mut *c.scratch))
        .unwrap_or_default();
    scratch.reset(cw);
    let Scratch {
        mut seen,
        words,
        mut decided,
        mut r2,
    } = scratch;
    // Work items: a stack node still to read, the state that reads it, and the classes
    // still undecided on this path; `seen` merges paths meeting at (node, state).
    // Sized for the common walk (a few entries per head) so it rarely grows.
    let mut arena = Arena { cw, words };
    let view = cache.as_deref_mut().map(|c| {
        c.begin(dwa);
        CacheView::new(c, weights)
    });
    // Behind an indenter each walk carries only the classes read from it: the
    // configuration's walk its real classes and the variants read from it, each walk
    // after a newline the variants read from it (`Indents::riders`).
    let indent = indent.filter(|_| dwa.indents().has_rules(sp.shape));
    let shape_classes = weights.get(dwa.shape_classes(sp.shape));
    let mut needed = Vec::new();
    let mut stay = Vec::new();
    let mut riders = Vec::new();
    let mine = match &indent {
        None => shape_classes,
        Some((ind, _)) => {
            riders.extend_from_slice(shape_classes);
            dwa.indents().needed(sp.shape, ind, &mut needed);
            stay.resize(needed.len(), vec![0u64; cw]);
            dwa.indents().riders(
                sp.shape,
                table.base as usize,
                range.start,
                ind,
                &needed,
                &mut riders,
                &mut stay,
            );
            &riders
        }
    };
    let mut reads = read_stacks(
        dwa,
        mine,
        &weights,
        heads,
        (&mut seen, &mut arena),
        (&mut decided, &mut r2),
        view,
    );
    // Classes behind an indenter, from the virtual classes just decided and those of
    // the walks after a newline (on the same buffers, emptied).
    if let Some((ind, after)) = indent {
        let mut walks: Vec<(Resolved, Vec<u64>)> = Vec::with_capacity(needed.len());
        for (res, stay_riders) in needed.into_iter().zip(&stay) {
            let mut words = vec![0u64; cw];
            if let Some(hs) = after(res) {
                seen.clear();
                arena.words.clear();
                reads += read_stacks(
                    dwa,
                    stay_riders,
                    &weights,
                    &hs,
                    (&mut seen, &mut arena),
                    (&mut words, &mut r2),
                    None,
                );
            }
            walks.push((res, words));
        }
        dwa.indents().apply(
            sp.shape,
            table.base as usize,
            range.start,
            &ind,
            &walks,
            &mut decided,
        );
    }
    // Classes with droppable lexemes, from the virtual classes just decided.
    dwa.drops()
        .apply(sp.shape, table.base as usize, range.start, &mut decided);
    dwa.expansions.expand(
        sp.table,
        table,
        dwa.words(),
        &decided,
        range.start,
        out,
        fresh,
    );
    if let Some(c) = cache {
        *c.scratch = Scratch {
            seen,
            words: arena.words,
            decided,
            r2,
        }
        .kept();
    }
    reads
}

/// Reads stacks `heads` through the automaton from their start edges with classes `mine`
/// (the shape's, or some of them: the walk is linear in its classes), setting in
/// `decided` the classes decided (`r2` scratch; `seen` and `arena` empty). With a cache
/// view, paths past its depth are answered by it. Returns the entries read.
fn read_stacks<'h, N: StackNode + Clone>(
    dwa: &Dwa,
    mine: &[u64],
    weights: &crate::dwa::ShapeWeights<'_>,
    heads: &'h [N],
    (seen, arena): (&mut HashMap<(usize, DwaStateId), usize>, &mut Arena),
    (decided, r2): (&mut Vec<u64>, &mut Vec<u64>),
    mut view: Option<CacheView<'_, '_, N>>,
) -> usize {
    let w = |id| weights.get(id);
    let mut work: Work<'h, N> = Vec::with_capacity(2 * heads.len());
    let mut reads = 0;
    for h in heads {
        reads += 1;
        let Some(e) = dwa.start_edge(h.state()) else {
            continue;
        };
        for ((d, &w), &m) in decided.iter_mut().zip(w(e.decided)).zip(mine) {
            *d |= w & m;
        }
        for &(next, filter) in dwa.targets(e) {
            if and_not(w(filter), mine, decided, r2) {
                push(&mut work, seen, arena, h, next, r2, 1);
            }
        }
    }
    while let Some((node, s, slot, depth)) = work.pop() {
        reads += 1;
        let r = arena.get_mut(slot);
        let mut any = 0;
        for (x, d) in r.iter_mut().zip(decided.iter()) {
            *x &= !d;
            any |= *x;
        }
        if any == 0 {
            continue;
        }
        if let Some(v) = view.as_mut().filter(|v| depth >= v.depth()) {
            // Deep enough to be stable across commits: answered (and remembered) by the
            // cache.
            v.decide(dwa, node, s, arena.get(slot), decided);
            continue;
        }
        let Some(e) = dwa.edge(s, node.state()) else {
            continue;
        };
        if e.decided.index() != 0 {
            let r = arena.get(slot);
            for ((d, &w), &x) in decided.iter_mut().zip(w(e.decided)).zip(r) {
                *d |= w & x;
            }
        }
        for &(next, filter) in dwa.targets(e) {
            if and_not(arena.get(slot), w(filter), decided, r2) {
                push(&mut work, seen, arena, node, next, r2, depth + 1);
            }
        }
    }
    reads
}

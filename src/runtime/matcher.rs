//! One sequence's constraint state: commit tokens, fill masks.

use std::sync::{Arc, Mutex};

use roaring::RoaringBitmap;
use smallvec::SmallVec;

use super::background::GrammarBuild;
use crate::dwa::indents::{IndentView, Resolved};
use crate::dwa::split::PartFilter;
use crate::dwa::walk::{collect, collect_indented, StackNode};
use crate::dwa::walk_cache::WalkCache;
use crate::dwa::Dwa;
use crate::glr::gss::Node;
use crate::glr::{CommitError, GlrState, Rejected, Tables};
use crate::ids::{LrStateId, TokenId};
use crate::lexer::LexPos;
use crate::vocab::Vocab;

use super::start_mask::StartMask;

impl StackNode for Arc<Node> {
    #[inline]
    fn state(&self) -> LrStateId {
        Node::state(self)
    }
    #[inline]
    fn preds(&self) -> &[Self] {
        Node::preds(self)
    }
    #[inline]
    fn key(&self) -> usize {
        Arc::as_ptr(self) as usize
    }
}

/// Writes into `out` (zeroed first; at least `ceil(vocab_len / 32)` words) the tokens the
/// automaton allows after recognizer state `glr`, EOS included when the document may end.
/// Returns the number of stack entries read.
pub fn fill_mask_words(glr: &GlrState, dwa: &Dwa, out: &mut [u32]) -> usize {
    fill_mask_words_cached(glr, dwa, out, None)
}

/// [`fill_mask_words`] with a walk cache that persists between masks of one sequence
/// (the mask is the same with or without it).
pub fn fill_mask_words_cached(
    glr: &GlrState,
    dwa: &Dwa,
    out: &mut [u32],
    mut cache: Option<&mut WalkCache<Arc<Node>>>,
) -> usize {
    // Nothing is written yet: the first set collected is written whole (copied where it is
    // dense, the rest zeroed, so padded rows past the vocabulary stay zero), later ones
    // ORed in; a mask nothing reached is zeroed at the end.
    let mut fresh = true;
    let mut reads = 0;
    let lexer = &glr.tables().lexer;
    let lr = &glr.tables().lr;
    // One part's tokens, when a length bound filters them and others were written first
    // (allocated on first use).
    let mut part_words: Vec<u32> = Vec::new();
    for c in glr.configs() {
        // A counted run's iterations start where their template does.
        let pos = lexer.rep_pos(c.pos);
        let Some((parts, at)) = dwa.split().and_then(|s| s.parts_at(pos)) else {
            let from = dwa.lexer_pos(pos);
            if glr.tables().indenter.is_some() {
                // Behind an indenter: the rules read the configuration's indentation, and
                // walks from the stacks after a newline.
                let ind = c.indent.get();
                let indentation = IndentView {
                    levels: &ind.levels,
                    brackets: ind.brackets,
                    tail: (c.tail.newline, c.tail.width),
                };
                let after = |res: Resolved| match res {
                    Resolved::Shifted(keep) => glr.heads_after_newline(c, keep),
                    _ => None,
                };
                reads += collect_indented(
                    dwa,
                    from,
                    &c.heads,
                    out,
                    &mut fresh,
                    cache.as_deref_mut(),
                    Some((indentation, &after)),
                );
                continue;
            }
            reads += collect(dwa, from, &c.heads, out, &mut fresh, cache.as_deref_mut());
            continue;
        };
        // A string state read terminal by terminal (`dwa::split`): a terminal no head
        // has an action on cannot be the next one. Filtered parts first.
        let split = dwa.split().expect("parts come from the split");
        let mut todo: SmallVec<[(LexPos, PartFilter); 8]> = parts
            .iter()
            .filter(|part| {
                c.heads
                    .iter()
                    .any(|h| !lr.actions(h.state(), part.term).is_empty())
            })
            .map(|part| (LexPos::Pending(part.state), split.filter(part, at)))
            .filter(|(_, f)| *f != PartFilter::Nothing)
            .collect();
        todo.sort_by_key(|(_, f)| matches!(f, PartFilter::All));
        for (pos, f) in todo {
            match f {
                // Nothing in `out` yet: the part is collected there and filtered in place.
                PartFilter::Some(f) if fresh => {
                    reads += collect(dwa, pos, &c.heads, out, &mut fresh, cache.as_deref_mut());
                    zero_if_fresh(out, &mut fresh);
                    split.apply(f, out);
                }
                PartFilter::Some(f) => {
                    part_words.clear();
                    part_words.resize(dwa.vocab_len().div_ceil(32), 0);
                    let words = &mut part_words;
                    reads += collect(dwa, pos, &c.heads, words, &mut false, cache.as_deref_mut());
                    split.apply(f, &mut part_words);
                    zero_if_fresh(out, &mut fresh);
                    for (o, w) in out.iter_mut().zip(&part_words) {
                        *o |= w;
                    }
                }
                _ => reads += collect(dwa, pos, &c.heads, out, &mut fresh, cache.as_deref_mut()),
            }
        }
    }
    zero_if_fresh(out, &mut fresh);
    // Tokens with more droppable lexemes than the automaton's trees decide (a few per
    // vocabulary, such as a run of `;` against Go's `EOS`): committed on a copy.
    for (t, bytes) in &dwa.drops().overflow {
        let bit = 1 << (t.as_u32() % 32);
        if glr.advance(bytes).is_ok_and(|s| s.is_viable()) {
            out[t.index() / 32] |= bit;
        } else {
            out[t.index() / 32] &= !bit;
        }
    }
    if glr.is_accepting() {
        for t in dwa.eos() {
            out[t.index() / 32] |= 1 << (t.as_u32() % 32);
        }
    }
    reads
}

/// Zeroes `out` if nothing was written into it yet (`fresh`), which it then no longer is.
#[inline]
fn zero_if_fresh(out: &mut [u32], fresh: &mut bool) {
    if std::mem::replace(fresh, false) {
        out.fill(0);
    }
}

/// The tokens the automaton allows after recognizer state `glr` (EOS included when the
/// document may end), as a set.
pub fn mask_set(glr: &GlrState, dwa: &Dwa) -> RoaringBitmap {
    let mut words = vec![0u32; dwa.vocab_len().div_ceil(32)];
    fill_mask_words(glr, dwa, &mut words);
    words_to_set(&words)
}

/// The set bits of mask words (bit `t % 32` of word `t / 32`).
fn words_to_set(words: &[u32]) -> RoaringBitmap {
    let mut out = RoaringBitmap::new();
    for (i, &w) in words.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            let b = w.trailing_zeros();
            out.insert(i as u32 * 32 + b);
            w &= w - 1;
        }
    }
    out
}

/// A mask buffer that is too small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("mask buffer has {got} words, the vocabulary needs {need}")]
pub struct MaskError {
    /// Words needed: ceil(vocabulary size / 32).
    pub need: usize,
    /// Words given.
    pub got: usize,
}

/// Why a matcher refused a request; the matcher is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum MatcherError {
    /// The token cannot be committed here.
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// The bytes leave no viable continuation.
    #[error(transparent)]
    Rejected(#[from] Rejected),
    /// EOS while the document is incomplete.
    #[error("EOS is not allowed here: the document is incomplete")]
    Incomplete,
    /// End of sequence was committed; nothing may follow.
    #[error("the sequence has ended (EOS was committed)")]
    Terminated,
    /// Rolling back more steps than were committed.
    #[error("cannot roll back {asked} steps: only {available} committed")]
    Rollback {
        /// Steps asked for.
        asked: usize,
        /// Steps committed since the start.
        available: usize,
    },
}

/// The constraint state of one sequence: commit tokens, fill masks, roll back. Cheap to
/// clone: recognizer states share their stacks, so the history that makes rollback
/// unlimited costs a few pointers per step.
#[derive(Debug, Clone)]
pub struct Matcher {
    glr: GlrState,
    masks: Masks,
    /// The state before each commit still in effect, oldest first.
    history: Vec<GlrState>,
    /// EOS was committed (the last history entry is the state before it).
    terminated: bool,
    /// What mask walks learned about the deep, unchanging part of the stack.
    cache: CacheCell,
    /// The grammar's first mask, shared with every matcher of the same compiled grammar.
    pub(super) start: StartMask,
    /// Whether `glr` is the start state (nothing committed, or all of it rolled back):
    /// then the mask is `start`'s.
    at_start: bool,
}

/// Where a matcher's masks come from.
#[derive(Debug, Clone)]
enum Masks {
    /// The grammar's mask automaton.
    Automaton(Arc<Dwa>),
    /// A build of the automaton (`runtime::background`): its automaton once there, the
    /// recognizer's vocabulary walk until then.
    Build(GrammarBuild),
}

impl Masks {
    /// The automaton, if there is one yet.
    fn automaton(&self) -> Option<&Arc<Dwa>> {
        match self {
            Masks::Automaton(d) => Some(d),
            Masks::Build(b) => b.compiled().map(|g| &g.dwa),
        }
    }

    fn eos(&self) -> &[TokenId] {
        match self {
            Masks::Automaton(d) => d.eos(),
            Masks::Build(b) => b.vocab().eos(),
        }
    }

    fn vocab_len(&self) -> usize {
        match self {
            Masks::Automaton(d) => d.vocab_len(),
            Masks::Build(b) => b.vocab().len(),
        }
    }
}

/// A matcher's walk cache, behind a lock because masks are filled through `&self` (a
/// batch fills its rows in parallel). A clone starts empty: the cache is not state.
#[derive(Default)]
struct CacheCell(Mutex<WalkCache<Arc<Node>>>);

impl Clone for CacheCell {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for CacheCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheCell")
    }
}

impl Matcher {
    /// A matcher at the start of a document.
    pub fn new(tables: Arc<Tables>, dwa: Arc<Dwa>) -> Self {
        Self::with_start(tables, dwa, StartMask::default())
    }

    /// A matcher at the start of a document whose first mask is `start`'s.
    fn with_start(tables: Arc<Tables>, dwa: Arc<Dwa>, start: StartMask) -> Self {
        Self::with_masks(tables, Masks::Automaton(dwa), start)
    }

    fn with_masks(tables: Arc<Tables>, masks: Masks, start: StartMask) -> Self {
        Self {
            glr: GlrState::new(tables),
            masks,
            history: Vec::new(),
            terminated: false,
            cache: CacheCell::default(),
            start,
            at_start: true,
        }
    }

    /// A matcher for a compiled grammar, at the start of a document. Its first mask is
    /// the grammar's, computed once for all of its matchers.
    pub fn from_compiled(g: &super::CompiledGrammar) -> Self {
        Self::with_start(g.tables.clone(), g.dwa.clone(), g.start.clone())
    }

    /// A matcher for a grammar whose automaton is being built, at the start of a
    /// document: its masks walk the vocabulary until the automaton is there, then read
    /// it (from the first mask after). Its first mask is the build's, walked when the
    /// build started. It keeps the build wanted (see [`GrammarBuild`]).
    pub fn from_build(b: &GrammarBuild) -> Self {
        let start = b.0.shared.start.clone();
        Self::with_masks(b.tables().clone(), Masks::Build(b.clone()), start)
    }

    /// Commits bytes as one step; on error nothing changes.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), MatcherError> {
        if self.terminated {
            return Err(MatcherError::Terminated);
        }
        let before = self.glr.clone();
        self.glr.commit_bytes(bytes)?;
        self.history.push(before);
        self.at_start = false;
        Ok(())
    }

    /// Commits a token as one step: text tokens extend the document; an EOS token ends
    /// it when the document is complete. On error nothing changes.
    pub fn commit(&mut self, vocab: &Vocab, t: TokenId) -> Result<(), MatcherError> {
        if self.terminated {
            return Err(MatcherError::Terminated);
        }
        if self.masks.eos().contains(&t) {
            if !self.glr.is_accepting() {
                return Err(MatcherError::Incomplete);
            }
            self.history.push(self.glr.clone());
            self.terminated = true;
            self.at_start = false;
            return Ok(());
        }
        let before = self.glr.clone();
        self.glr.commit_token(vocab, t)?;
        self.history.push(before);
        self.at_start = false;
        Ok(())
    }

    /// [`Matcher::commit`] under its older name.
    pub fn commit_token(&mut self, vocab: &Vocab, t: TokenId) -> Result<(), MatcherError> {
        self.commit(vocab, t)
    }

    /// Undoes the last `n` steps (any number up to all of them, in O(n)); asking for more
    /// than were committed is an error and changes nothing.
    pub fn rollback(&mut self, n: usize) -> Result<(), MatcherError> {
        if n > self.history.len() {
            return Err(MatcherError::Rollback {
                asked: n,
                available: self.history.len(),
            });
        }
        if n == 0 {
            return Ok(());
        }
        let keep = self.history.len() - n;
        // Entry `keep` is the state before the first undone step.
        self.glr = self.history.swap_remove(keep);
        self.history.truncate(keep);
        self.terminated = false;
        // A matcher begins at the start state, and the oldest entry is the state before
        // the first commit: everything rolled back is the start again.
        self.at_start = keep == 0;
        Ok(())
    }

    /// Back to the start of a document.
    pub fn reset(&mut self) {
        if !self.history.is_empty() {
            let n = self.history.len();
            // `n` steps were committed, so rolling all of them back cannot fail.
            self.rollback(n).expect("rollback within history");
        }
    }

    /// Steps committed and not rolled back.
    pub fn num_steps(&self) -> usize {
        self.history.len()
    }

    /// Whether EOS was committed.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// How many of `tokens` would be accepted in order from here (the longest accepted
    /// prefix), without changing the matcher: speculative decoding's verifier.
    pub fn validate_tokens(&self, vocab: &Vocab, tokens: &[TokenId]) -> usize {
        if tokens.is_empty() {
            return 0;
        }
        // The probe starts with no history: cloning it would cost a pointer per token
        // committed so far, where the probe needs none (it never rolls back).
        let mut probe = Matcher {
            glr: self.glr.clone(),
            masks: self.masks.clone(),
            history: Vec::new(),
            terminated: self.terminated,
            cache: CacheCell::default(),
            start: self.start.clone(),
            at_start: self.at_start,
        };
        tokens
            .iter()
            .take_while(|&&t| probe.commit(vocab, t).is_ok())
            .count()
    }

    /// Whether the document may end here.
    pub fn is_accepting(&self) -> bool {
        self.glr.is_accepting()
    }

    /// Whether no token at all (EOS included) is allowed: the document can neither go on
    /// nor end. Commits keep the prefix viable one terminal ahead, so this happens only
    /// where a viable prefix has no completion (it would die on the next terminal); a
    /// server should end such a sequence instead of sampling from an empty mask. Costs
    /// one mask.
    pub fn is_rejected(&self) -> bool {
        !self.terminated && !self.is_accepting() && self.mask_set().is_empty()
    }

    /// The recognizer state.
    pub fn glr(&self) -> &GlrState {
        &self.glr
    }

    /// The mask automaton this matcher reads (`None` while a build of it is in progress
    /// or after one failed: masks then walk the vocabulary).
    pub fn dwa(&self) -> Option<&Arc<Dwa>> {
        self.masks.automaton()
    }

    /// The allowed tokens as a set (EOS included when the document may end; only EOS
    /// once the sequence has ended).
    pub fn mask_set(&self) -> RoaringBitmap {
        if self.terminated {
            return self.masks.eos().iter().map(|t| t.as_u32()).collect();
        }
        let mut words = vec![0u32; self.masks.vocab_len().div_ceil(32)];
        // The buffer is sized for this automaton.
        self.fill_mask(&mut words).expect("sized by the automaton");
        words_to_set(&words)
    }

    /// Writes the mask into `out` (bit `t % 32` of word `t / 32`; words past the
    /// vocabulary, as in padded model vocabularies, are zeroed). Once EOS was committed,
    /// only EOS is allowed.
    pub fn fill_mask(&self, out: &mut [u32]) -> Result<(), MaskError> {
        self.fill_mask_counted(out).map(|_| ())
    }

    /// [`Matcher::fill_mask`], also returning how many stack entries the walk read (for
    /// benchmarks: the early-exit effect); 0 when nothing was walked (after EOS, or at the
    /// start, where the grammar's start mask is copied).
    pub fn fill_mask_counted(&self, out: &mut [u32]) -> Result<usize, MaskError> {
        let need = self.masks.vocab_len().div_ceil(32);
        if out.len() < need {
            return Err(MaskError {
                need,
                got: out.len(),
            });
        }
        if self.terminated {
            out.fill(0);
            for t in self.masks.eos() {
                out[t.index() / 32] |= 1 << (t.as_u32() % 32);
            }
            return Ok(0);
        }
        let dwa = match &self.masks {
            Masks::Automaton(dwa) => dwa,
            Masks::Build(b) => match b.compiled() {
                Some(g) => &g.dwa,
                None => {
                    let s = &b.0.shared;
                    let walk = || s.walk.mask(&self.glr, &s.vocab).into_boxed_slice();
                    // The build walked its start mask when it began.
                    let words = if self.at_start {
                        self.start.get_or_fill_with(walk).into()
                    } else {
                        walk()
                    };
                    out[..need].copy_from_slice(&words[..need]);
                    out[need..].fill(0);
                    return Ok(0);
                }
            },
        };
        if self.at_start {
            let start = self.start.get_or_fill(&self.glr, dwa);
            out[..need].copy_from_slice(start);
            out[need..].fill(0);
            return Ok(0);
        }
        // Another thread filling this very matcher's mask would wait on the lock: it goes
        // without the cache instead.
        Ok(match self.cache.0.try_lock() {
            Ok(mut c) => fill_mask_words_cached(&self.glr, dwa, out, Some(&mut c)),
            Err(std::sync::TryLockError::Poisoned(p)) => {
                let mut c = p.into_inner();
                c.clear();
                fill_mask_words_cached(&self.glr, dwa, out, Some(&mut c))
            }
            Err(std::sync::TryLockError::WouldBlock) => fill_mask_words(&self.glr, dwa, out),
        })
    }
}

/// Fills one mask row per matcher, in parallel for batches of 16 or more: `out` holds `matchers.len()` rows of
/// `row_words` words each (a model's padded vocabulary may make rows wider than the
/// matchers need; the extra words are zeroed).
pub fn fill_masks(
    matchers: &[&Matcher],
    out: &mut [u32],
    row_words: usize,
) -> Result<(), MaskError> {
    use rayon::prelude::*;
    let need = matchers
        .iter()
        .map(|m| m.masks.vocab_len().div_ceil(32))
        .max()
        .unwrap_or(0);
    if row_words < need || out.len() < row_words * matchers.len() {
        return Err(MaskError {
            need: need.max(row_words) * matchers.len(),
            got: out.len(),
        });
    }
    let rows = &mut out[..row_words * matchers.len()];
    // With one thread in the pool, its worker would fill the rows while the caller waits:
    // the hand-off and the rows' move to the worker's cache, nothing in parallel.
    if matchers.len() < PARALLEL_MIN_BATCH || rayon::current_num_threads() < 2 {
        // Waking the pool costs tens of µs, more than a few µs-scale masks (measured on
        // 2 cores: 8 JSON matchers, 16 µs in a loop, 39 µs through the pool).
        return rows
            .chunks_mut(row_words)
            .zip(matchers)
            .try_for_each(|(row, m)| m.fill_mask(row));
    }
    rows.par_chunks_mut(row_words)
        .zip(matchers.par_iter())
        .with_min_len(PARALLEL_MIN_TASK)
        .try_for_each(|(row, m)| m.fill_mask(row))
}

/// Batches smaller than this are filled on the caller's thread (see [`fill_masks`]).
const PARALLEL_MIN_BATCH: usize = 16;

/// Fewest rows one pool task fills, so that a task's work outweighs its scheduling.
const PARALLEL_MIN_TASK: usize = 4;

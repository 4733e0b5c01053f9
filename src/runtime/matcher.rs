//! One sequence's constraint state: commit tokens, fill masks.

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::dwa::walk::{collect, StackNode};
use crate::dwa::Dwa;
use crate::glr::gss::Node;
use crate::glr::{CommitError, GlrState, Rejected, Tables};
use crate::ids::{LrStateId, TokenId};
use crate::vocab::Vocab;

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
    out.fill(0);
    let mut reads = 0;
    for c in glr.configs() {
        reads += collect(dwa, c.pos, &c.heads, out);
    }
    if glr.is_accepting() {
        for t in dwa.eos() {
            out[t.index() / 32] |= 1 << (t.as_u32() % 32);
        }
    }
    reads
}

/// The tokens the automaton allows after recognizer state `glr` (EOS included when the
/// document may end), as a set.
pub fn mask_set(glr: &GlrState, dwa: &Dwa) -> RoaringBitmap {
    let mut words = vec![0u32; dwa.vocab_len().div_ceil(32)];
    fill_mask_words(glr, dwa, &mut words);
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

/// The constraint state of one sequence: cheap to clone (the stack is shared).
#[derive(Debug, Clone)]
pub struct Matcher {
    glr: GlrState,
    dwa: Arc<Dwa>,
}

impl Matcher {
    /// A matcher at the start of a document.
    pub fn new(tables: Arc<Tables>, dwa: Arc<Dwa>) -> Self {
        Self {
            glr: GlrState::new(tables),
            dwa,
        }
    }

    /// A matcher for a compiled grammar, at the start of a document.
    pub fn from_compiled(g: &super::CompiledGrammar) -> Self {
        Self::new(g.tables.clone(), g.dwa.clone())
    }

    /// Commits bytes; on error nothing changes.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), Rejected> {
        self.glr.commit_bytes(bytes)
    }

    /// Commits a token; on error nothing changes.
    pub fn commit_token(&mut self, vocab: &Vocab, t: TokenId) -> Result<(), CommitError> {
        self.glr.commit_token(vocab, t)
    }

    /// Whether the document may end here.
    pub fn is_accepting(&self) -> bool {
        self.glr.is_accepting()
    }

    /// The recognizer state.
    pub fn glr(&self) -> &GlrState {
        &self.glr
    }

    /// The allowed tokens as a set (EOS included when the document may end).
    pub fn mask_set(&self) -> RoaringBitmap {
        mask_set(&self.glr, &self.dwa)
    }

    /// Writes the mask into `out` (bit `t % 32` of word `t / 32`; words past the
    /// vocabulary, as in padded model vocabularies, are zeroed).
    pub fn fill_mask(&self, out: &mut [u32]) -> Result<(), MaskError> {
        self.fill_mask_counted(out).map(|_| ())
    }

    /// [`Matcher::fill_mask`], also returning how many stack entries the walk read (for
    /// benchmarks: the early-exit effect).
    pub fn fill_mask_counted(&self, out: &mut [u32]) -> Result<usize, MaskError> {
        let need = self.dwa.vocab_len().div_ceil(32);
        if out.len() < need {
            return Err(MaskError {
                need,
                got: out.len(),
            });
        }
        Ok(fill_mask_words(&self.glr, &self.dwa, out))
    }
}

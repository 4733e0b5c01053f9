//! A mask by brute force over the vocabulary: walk the tokens in byte order through the
//! recognizer, sharing the work of common prefixes, and keep the tokens whose bytes leave
//! a viable state. This is the slow path (its cost grows with the vocabulary); it serves
//! `check --engine glr`, `sample` when a grammar's mask automaton exceeds its limits, and
//! tests as a second opinion beside the reference.

use super::GlrState;
use crate::ids::TokenId;
use crate::vocab::Vocab;

/// The normal tokens of a vocabulary sorted by their bytes.
#[derive(Debug, Clone)]
pub struct SortedTokens {
    entries: Vec<(Box<[u8]>, TokenId)>,
    vocab_len: usize,
    eos: Vec<TokenId>,
}

impl SortedTokens {
    /// Sorts the normal tokens of `vocab`.
    pub fn new(vocab: &Vocab) -> Self {
        let mut entries: Vec<(Box<[u8]>, TokenId)> = vocab
            .mask_tokens()
            .map(|(id, b)| (b.to_vec().into_boxed_slice(), id))
            .collect();
        entries.sort();
        Self {
            entries,
            vocab_len: vocab.len(),
            eos: vocab.eos().to_vec(),
        }
    }
}

/// The allowed tokens in the standard layout: bit `t % 32` of word `t / 32`, for
/// `ceil(len / 32)` words. EOS bits are set iff the input so far is a complete document.
pub fn mask(state: &GlrState, tokens: &SortedTokens) -> Vec<u32> {
    let mut out = vec![0u32; tokens.vocab_len.div_ceil(32)];
    let mut stack: Vec<Option<GlrState>> = vec![Some(state.clone())];
    let mut prev: &[u8] = &[];
    for (bytes, id) in &tokens.entries {
        let lcp = prev
            .iter()
            .zip(bytes.iter())
            .take_while(|(a, b)| a == b)
            .count();
        stack.truncate(lcp + 1);
        for d in lcp..bytes.len() {
            let next = match &stack[d] {
                Some(s) => s.advance(&bytes[d..d + 1]).ok(),
                None => None,
            };
            stack.push(next);
        }
        if let Some(s) = &stack[bytes.len()] {
            if s.is_viable() {
                out[id.index() / 32] |= 1 << (id.index() % 32);
            }
        }
        prev = bytes;
    }
    if state.is_accepting() {
        for id in &tokens.eos {
            out[id.index() / 32] |= 1 << (id.index() % 32);
        }
    }
    out
}

//! The mask at the start of a document, computed once per compiled grammar.
//!
//! Every sequence of a grammar begins in the same recognizer state, so its first mask is
//! always the same. Walking for it each time is the slowest mask a sequence asks for: it
//! comes right after the compile (or after other work) has pushed the automaton out of
//! the caches (two to four times a later mask's time).
//! A [`StartMask`] holds that mask once, shared by every matcher of the grammar, so a
//! first mask is a copy. Depends on the recognizer state and the walk only.

use std::sync::{Arc, OnceLock};

use crate::dwa::Dwa;
use crate::glr::GlrState;

/// The start-of-document mask of one grammar (`ceil(vocab_len / 32)` words, bit `t % 32`
/// of word `t / 32`), filled on first use and shared by clones. It is only ever filled
/// from a start state, by the walk any other mask takes (the automaton's, or the
/// recognizer's vocabulary walk while the automaton is built), so a copy equals a walk.
#[derive(Clone, Default)]
pub(crate) struct StartMask(pub(super) Arc<OnceLock<Box<[u32]>>>);

impl StartMask {
    /// The mask, walked from `start` (the grammar's start state) if not yet known.
    pub(crate) fn get_or_fill(&self, start: &GlrState, dwa: &Dwa) -> &[u32] {
        self.0.get_or_init(|| {
            let mut words = vec![0u32; dwa.vocab_len().div_ceil(32)];
            super::matcher::fill_mask_words(start, dwa, &mut words);
            words.into_boxed_slice()
        })
    }

    /// The mask, made by `make` (a walk from the grammar's start state, by whichever
    /// engine) if not yet known.
    pub(crate) fn get_or_fill_with(&self, make: impl FnOnce() -> Box<[u32]>) -> &[u32] {
        self.0.get_or_init(make)
    }

    /// Whether the mask is known (for tests).
    #[cfg(test)]
    pub(crate) fn is_filled(&self) -> bool {
        self.0.get().is_some()
    }
}

impl std::fmt::Debug for StartMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.0.get().is_some() {
            "filled"
        } else {
            "empty"
        };
        write!(f, "StartMask({state})")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::compile::Compiler;
    use crate::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};
    use crate::ids::TokenId;
    use crate::runtime::{CompiledGrammar, Matcher};
    use crate::vocab::Vocab;

    /// A compiled or loaded grammar has walked for its first mask before any matcher asks
    /// (the walk is part of the time to first mask), and its matchers share it; a matcher
    /// made from bare tables fills its own at its first mask.
    #[test]
    fn compiled_grammars_hold_their_first_mask_before_it_is_asked_for() {
        let tokens = ["{", "}", "\"", "a", ":", " ", "1", "<eos>"];
        let vocab = Vocab::from_byte_tokens(
            "toy",
            tokens.iter().map(|t| Some(t.as_bytes().to_vec())).collect(),
            &[TokenId::new(7)],
        )
        .unwrap();
        let grammar = compile_grammar(BUILTIN_JSON, GrammarFormat::Lark).unwrap();
        let tables = Arc::new(build_glr_tables(&grammar).unwrap());
        let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
        let g = CompiledGrammar::new(tables.clone(), dwa.clone(), &vocab);
        assert!(g.start.is_filled());
        let loaded = CompiledGrammar::from_bytes(&g.to_bytes()).unwrap();
        assert!(loaded.start.is_filled());
        let m = Matcher::from_compiled(&g);
        assert!(Arc::ptr_eq(&m.start.0, &g.start.0));
        let bare = Matcher::new(tables, dwa);
        assert!(!bare.start.is_filled());
        let mut words = vec![0u32; 1];
        bare.fill_mask(&mut words).unwrap();
        assert!(bare.start.is_filled());
        // `{`, `"` (a string document), `1` and space may open a JSON document.
        assert_eq!(&words[..], &g.start.0.get().unwrap()[..]);
        assert_eq!(words[0] & 0b1111_1111, 0b0110_0101);
    }
}

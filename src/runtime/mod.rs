//! The public face: a [`CompiledGrammar`] (tables + mask automaton for one vocabulary, and
//! its artifact format) and a [`Matcher`] that ties commit (the GLR recognizer) and
//! get_mask (the mask automaton) together, with rollback, and writes masks in the layout
//! servers exchange (bit `t % 32` of word `t / 32`).
//!
//! The only module that imports both `glr` and `dwa`; it parses no grammar text.
//!
//! # Example: the decode loop
//!
//! ```
//! use stackmask::compile::{Compiler, GrammarFormat, BUILTIN_JSON};
//! use stackmask::ids::TokenId;
//! use stackmask::runtime::{CompiledGrammar, Matcher};
//! use stackmask::vocab::Vocab;
//!
//! // Offline: grammar × vocabulary → tables + mask automaton (here a toy vocabulary;
//! // `Vocab::load("tokenizer.json")` loads a real one).
//! let tokens = ["{", "}", "\"", "a", ":", " ", "1", "<eos>"];
//! let vocab = Vocab::from_byte_tokens(
//!     "toy",
//!     tokens.iter().map(|t| Some(t.as_bytes().to_vec())).collect(),
//!     &[TokenId::new(7)],
//! )?;
//! let compiled = Compiler::new(&vocab).compile(BUILTIN_JSON, GrammarFormat::Lark)?;
//! let bytes = compiled.to_bytes(); // an artifact to cache; `from_bytes` validates it
//! let compiled = CompiledGrammar::from_bytes(&bytes)?;
//!
//! // Per sequence: fill the mask, sample, commit; roll back any number of steps.
//! let mut m = Matcher::from_compiled(&compiled);
//! let mut mask = vec![0u32; vocab.len().div_ceil(32)];
//! let allowed = |mask: &[u32], t: usize| mask[t / 32] >> (t % 32) & 1 == 1;
//! for t in [0, 2, 3, 2, 4, 5, 6, 1] {
//!     // {"a": 1}
//!     m.fill_mask(&mut mask)?;
//!     assert!(allowed(&mask, t));
//!     m.commit(&vocab, TokenId::new(t))?;
//! }
//! m.fill_mask(&mut mask)?;
//! assert!(allowed(&mask, 7) && !allowed(&mask, 0)); // only EOS (or more space) now
//! assert_eq!(m.validate_tokens(&vocab, &[TokenId::new(5), TokenId::new(1)]), 1);
//! m.rollback(3)?; // back to `{"a":`
//! assert!(m.commit(&vocab, TokenId::new(1)).is_err()); // `}` is not allowed there
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod artifact;
mod background;
mod forced;
mod matcher;
mod start_mask;

pub use artifact::{ArtifactError, CompiledGrammar, VocabFingerprint, FORMAT_VERSION};
pub use background::{BuildCompleter, BuildError, GrammarBuild};
pub use forced::MAX_FORCED_BYTES;
pub use matcher::{fill_mask_words_cached, fill_masks, mask_set, MaskError, Matcher, MatcherError};

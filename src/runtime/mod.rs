//! The public face: a [`CompiledGrammar`] (tables + mask automaton for one vocabulary, and
//! its artifact format) and a [`Matcher`] that ties commit (the GLR recognizer) and
//! get_mask (the mask automaton) together, with rollback, and writes masks in the layout
//! servers exchange (bit `t % 32` of word `t / 32`).
//!
//! The only module that imports both `glr` and `dwa`; it parses no grammar text.

mod artifact;
mod forced;
mod matcher;

pub use artifact::{ArtifactError, CompiledGrammar, VocabFingerprint, FORMAT_VERSION};
pub use forced::MAX_FORCED_BYTES;
pub use matcher::{fill_masks, mask_set, MaskError, Matcher, MatcherError};

//! The mask automaton: a deterministic automaton over LR-state ids whose edges and final
//! states carry token sets (DESIGN.md §3), and the one runtime walk that reads the
//! graph-structured stack top-down through it ([`walk`]).
//!
//! Built by `compile::dwa_build` from the recognizer tables and the vocabulary; read by
//! `runtime`. It never parses grammar text and depends on neither `compile` nor `glr`: the
//! stack is seen through the [`walk::StackNode`] trait.

mod automaton;
pub mod walk;

pub use automaton::{ClassTokens, Dwa, DwaState, DwaValidateError, Edge, StartPos, NO_EDGE};

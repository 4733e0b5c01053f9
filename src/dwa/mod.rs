//! The mask automaton: an automaton over LR-state ids whose edges carry sets of token
//! classes — classes decided by taking the edge, and classes that may still be decided
//! past it (DESIGN.md §3) — with per-position class → token tables, and the one runtime
//! walk that reads the graph-structured stack top-down through it ([`walk`]). Each state
//! has one edge per id; an edge usually has one target, several where the build stopped
//! merging (`DwaLimits::determinize_budget`).
//!
//! Built by `compile::dwa::build` from the recognizer tables and the vocabulary; read by
//! `runtime`. It never parses grammar text and depends on neither `compile` nor `glr`: the
//! stack is seen through the [`walk::StackNode`] trait.

mod automaton;
mod derived;
pub mod drops;
pub mod expansions;
pub mod indents;
pub mod split;
pub mod walk;
pub mod walk_cache;
pub mod word_pool;
mod zero_runs;

pub use automaton::{
    ClassTokens, Dwa, DwaState, DwaValidateError, Edge, ShapeWeights, StartPos, StateRow,
    WeightSpan, NO_EDGE,
};

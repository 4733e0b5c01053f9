//! stackmask: grammar-constrained decoding for LLM inference.
//!
//! Data flows one way. [`compile`] turns grammar text (Lark, GBNF, JSON Schema, regex)
//! and a vocabulary ([`vocab`]: the exact bytes of every token) into frozen tables — a
//! byte-level lexer DFA ([`lexer`]), an LALR(1) table ([`lr`]) — and the mask automaton
//! ([`dwa`]). [`glr`] commits bytes on a graph-structured stack over those tables; [`dwa`]
//! reads that stack once per mask. [`runtime`] is the API a server uses ([`runtime::Matcher`],
//! [`runtime::CompiledGrammar`] and its artifact bytes). [`reference`] is the independent
//! oracle every mask is tested against; it shares no parsing code with `glr` or `dwa`.

#[cfg(feature = "mimalloc")]
pub mod allocator;
pub mod compile;
pub mod dwa;
pub mod glr;
pub mod ids;
pub mod lexer;
pub mod lr;
pub mod reference;
pub mod rng;
pub mod runtime;
pub mod termset;
#[cfg(test)]
pub(crate) mod test_support;
pub mod vocab;

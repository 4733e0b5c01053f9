//! stackmask: grammar-constrained decoding for LLM inference.
//!
//! Grammar text is lowered by [`compile`] into one grammar IR and a byte-level lexer DFA
//! ([`lexer`]); vocabularies ([`vocab`]) give the exact bytes of every token. Later layers
//! (GLR commit, the mask automaton, the runtime API) build on these.

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
pub mod vocab;

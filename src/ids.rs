//! Id newtypes shared by every layer.
//!
//! Every index into a table is a `#[repr(transparent)]` newtype over `u32`, made by one
//! macro so that all ids have the same small vocabulary: `new(usize)`, `from_u32`,
//! `as_u32`, `index`. Mixing up a terminal id with a token id is then a type error.

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub struct $name(u32);

        impl $name {
            /// The id for table index `i`. Panics if `i` does not fit in `u32`: tables are
            /// bounded far below that when they are built.
            #[inline]
            pub fn new(i: usize) -> Self {
                // Tables are built with explicit size limits long before 2^32 entries.
                Self(u32::try_from(i).expect(concat!(stringify!($name), " overflow")))
            }

            /// The id with raw value `v`.
            #[inline]
            pub const fn from_u32(v: u32) -> Self {
                Self(v)
            }

            /// The raw value.
            #[inline]
            pub const fn as_u32(self) -> u32 {
                self.0
            }

            /// The value as a table index.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

id_type!(
    /// A vocabulary token: index into [`crate::vocab::Vocab`]. Ids may have holes
    /// (vocabularies with unused ids); those ids are valid but never allowed.
    TokenId
);
id_type!(
    /// A grammar terminal: index into the grammar's terminal table and the lexer's
    /// terminal metadata.
    TerminalId
);
id_type!(
    /// A grammar nonterminal: index into the grammar's nonterminal table.
    NonterminalId
);
id_type!(
    /// A production (one alternative of one nonterminal) in the grammar IR.
    ProductionId
);
id_type!(
    /// A state of the byte-level lexer DFA. State 0 is the dead state.
    LexStateId
);
id_type!(
    /// A state of the LR automaton. State 0 is the start state.
    LrStateId
);
id_type!(
    /// A state of the mask automaton.
    DwaStateId
);
id_type!(
    /// An interned token set (edge or final weight) of the mask automaton.
    WeightId
);

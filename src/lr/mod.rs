//! The frozen LR automaton: action and goto tables that keep every conflict.
//!
//! Built by `compile::lr` from the grammar IR; read by the GLR recognizer (`glr`) and, in
//! later layers, by the mask automaton builder. A shared leaf: it depends only on the id
//! newtypes.

mod table;

pub use table::{Action, LrTable, LrValidateError};

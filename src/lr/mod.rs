//! The frozen LR automaton: action and goto tables that keep every conflict.
//!
//! Built by `compile::lr` from the grammar IR; read by the GLR recognizer (`glr`) and by
//! the mask automaton builder (`compile::dwa`). A shared leaf: it depends only on the id
//! newtypes.

mod table;

pub use table::{Action, LrTable, LrValidateError};

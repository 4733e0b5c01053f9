//! The indentation post-lexer's frozen form: which terminals Lark's `Indenter` reads and
//! makes (see `compile::grammar::ir::IndenterSpec` for what it does), and the per-lexeme
//! count it reads.

use serde::{Deserialize, Serialize};

use crate::ids::TerminalId;

/// Lark's `Indenter` with terminal ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indenter {
    /// The newline terminal.
    pub nl: TerminalId,
    /// Made when a line is deeper than the last open level.
    pub indent: TerminalId,
    /// Made once per level a shallower line closes.
    pub dedent: TerminalId,
    /// Opening brackets (inside them newlines are dropped).
    pub open: Vec<TerminalId>,
    /// Closing brackets.
    pub close: Vec<TerminalId>,
    /// Columns a tab counts.
    pub tab_len: u32,
    /// Why the mask automaton cannot carry this indentation for its grammar, or `None`
    /// when it can (`compile::grammar::indent_check`).
    pub automaton_refusal: Option<String>,
}

/// What a lexeme's bytes so far say about its indentation: the width of the spaces and
/// tabs after its last newline (all of them, as Lark counts), and whether it has one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Tail {
    pub width: u32,
    pub newline: bool,
}

impl Tail {
    /// The tail after one more byte of the lexeme.
    #[inline]
    pub fn step(self, b: u8, tab_len: u32) -> Tail {
        match b {
            b'\n' => Tail {
                width: 0,
                newline: true,
            },
            b' ' => Tail {
                width: self.width.saturating_add(1),
                ..self
            },
            b'\t' => Tail {
                width: self.width.saturating_add(tab_len),
                ..self
            },
            _ => self,
        }
    }
}

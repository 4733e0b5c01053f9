//! What can come next lexically, found by plain search over the lexer DFA (a deliberately
//! different computation from the table the GLR recognizer uses): from a boundary, try
//! every allowed first byte; from a pending lexeme, explore every byte string; step through
//! ignored lexemes.

use hashbrown::HashSet;

use crate::ids::{LexStateId, TerminalId};
use crate::lexer::LexerDfa;

/// Where the search stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    /// Between lexemes; the first byte must not extend `inhibitor` (None: no constraint).
    Boundary(Option<LexStateId>),
    /// Inside a lexeme in this state (it may complete here or grow).
    Lexeme(LexStateId),
}

/// The next terminals, and whether end of input can come next (after ignored lexemes).
#[derive(Debug, Clone, Default)]
pub struct Next {
    /// Non-ignored terminals that can be the next one.
    pub terminals: Vec<TerminalId>,
    /// Whether the input can end before any further terminal.
    pub eof: bool,
}

fn search(lexer: &LexerDfa, starts: Vec<Node>) -> Next {
    let mut seen: HashSet<Node> = HashSet::new();
    let mut work = starts;
    let mut out = Next::default();
    while let Some(n) = work.pop() {
        if !seen.insert(n) {
            continue;
        }
        match n {
            Node::Boundary(inh) => {
                out.eof = true;
                for b in 0..=255u8 {
                    if let Some(p) = inh {
                        if !lexer.is_dead(lexer.next(p, b)) {
                            continue;
                        }
                    }
                    let q = lexer.next(LexerDfa::START, b);
                    if !lexer.is_dead(q) {
                        work.push(Node::Lexeme(q));
                    }
                }
            }
            Node::Lexeme(q) => {
                for &t in lexer.emits(q) {
                    if lexer.is_ignored(t) {
                        let inh = lexer_can_grow(lexer, q).then_some(q);
                        work.push(Node::Boundary(inh));
                    } else if !out.terminals.contains(&t) {
                        out.terminals.push(t);
                    }
                }
                for b in 0..=255u8 {
                    let q1 = lexer.next(q, b);
                    if !lexer.is_dead(q1) {
                        work.push(Node::Lexeme(q1));
                    }
                }
            }
        }
    }
    out
}

fn lexer_can_grow(lexer: &LexerDfa, q: LexStateId) -> bool {
    (0..=255u8).any(|b| !lexer.is_dead(lexer.next(q, b)))
}

/// What can come next at a boundary after a lexeme whose final state is `inhibitor`.
pub fn at_boundary(lexer: &LexerDfa, inhibitor: Option<LexStateId>) -> Next {
    search(lexer, vec![Node::Boundary(inhibitor)])
}

/// What can come next when the pending lexeme in state `q` grows by at least one byte.
pub fn after_growing(lexer: &LexerDfa, q: LexStateId) -> Next {
    let starts = (0..=255u8)
        .map(|b| lexer.next(q, b))
        .filter(|q1| !lexer.is_dead(*q1))
        .map(Node::Lexeme)
        .collect();
    let mut n = search(lexer, starts);
    // Growing needs a byte, so end of input cannot come before it; `search` only sets
    // `eof` through boundaries reached after an ignored lexeme completes.
    n.terminals.sort();
    n
}

/// Whether the lexeme in state `q` can grow.
pub fn can_grow(lexer: &LexerDfa, q: LexStateId) -> bool {
    lexer_can_grow(lexer, q)
}

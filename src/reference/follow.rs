//! What can come next lexically, found by plain search over the lexer DFA (a deliberately
//! different computation from the table the GLR recognizer uses): from a boundary, try
//! every allowed first byte; from a pending lexeme, explore every byte string; step through
//! ignored lexemes, and through droppable ones (a parse may skip them) while also
//! counting them as next terminals.
//!
//! The search runs over explicit lexer states: a counted run's iterations all reach what
//! their template reaches once the run's exits are followed too (`LexerDfa::next_exit`),
//! so a virtual state is searched as its template. That keeps a search finite and small
//! inside a string of 65,535 characters.

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

/// The next terminals, and whether end of input can come next (after ignored or
/// droppable lexemes).
#[derive(Debug, Clone, Default)]
pub struct Next {
    /// Non-ignored terminals that can be the next one (after droppable lexemes too).
    pub terminals: Vec<TerminalId>,
    /// Whether the input can end before any further terminal.
    pub eof: bool,
}

/// The states byte `b` leads to from explicit state `q`, for reachability: the collapsed
/// table's, and a run's way out.
fn successors(lexer: &LexerDfa, q: LexStateId, b: u8) -> impl Iterator<Item = LexStateId> + '_ {
    [Some(lexer.next_rep(q, b)), lexer.next_exit(q, b)]
        .into_iter()
        .flatten()
        .filter(|q1| !lexer.is_dead(*q1))
}

/// `dropped`: a terminal stepped through as if ignored (an indenter's newline inside
/// brackets, which the indenter drops).
fn search(lexer: &LexerDfa, starts: Vec<Node>, dropped: Option<TerminalId>) -> Next {
    let mut seen: HashSet<Node> = HashSet::new();
    let mut work: Vec<Node> = starts
        .into_iter()
        .map(|n| match n {
            Node::Boundary(inh) => Node::Boundary(inh.map(|p| lexer.rep(p))),
            Node::Lexeme(q) => Node::Lexeme(lexer.rep(q)),
        })
        .collect();
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
                    work.extend(successors(lexer, LexerDfa::START, b).map(Node::Lexeme));
                }
            }
            Node::Lexeme(q) => {
                for &t in lexer.emits(q) {
                    let ignored = lexer.is_ignored(t) || Some(t) == dropped;
                    if ignored || lexer.is_droppable(t) {
                        let inh = lexer_can_grow(lexer, q).then_some(q);
                        work.push(Node::Boundary(inh));
                    }
                    if !ignored && !out.terminals.contains(&t) {
                        out.terminals.push(t);
                    }
                }
                for b in 0..=255u8 {
                    work.extend(successors(lexer, q, b).map(Node::Lexeme));
                }
            }
        }
    }
    out
}

fn lexer_can_grow(lexer: &LexerDfa, q: LexStateId) -> bool {
    (0..=255u8).any(|b| !lexer.is_dead(lexer.next(q, b)))
}

/// What can come next at a boundary after a lexeme whose final state is `inhibitor`
/// (`dropped`: a terminal stepped through, see [`search`]).
pub fn at_boundary(
    lexer: &LexerDfa,
    inhibitor: Option<LexStateId>,
    dropped: Option<TerminalId>,
) -> Next {
    search(lexer, vec![Node::Boundary(inhibitor)], dropped)
}

/// What can come next when the pending lexeme in state `q` grows by at least one byte
/// (`dropped` as for [`at_boundary`]).
pub fn after_growing(lexer: &LexerDfa, q: LexStateId, dropped: Option<TerminalId>) -> Next {
    let q = lexer.rep(q);
    let starts = (0..=255u8)
        .flat_map(|b| successors(lexer, q, b))
        .map(Node::Lexeme)
        .collect();
    let mut n = search(lexer, starts, dropped);
    // Growing needs a byte, so end of input cannot come before it; `search` only sets
    // `eof` through boundaries reached after an ignored lexeme completes.
    n.terminals.sort();
    n
}

/// Whether the lexeme in state `q` can grow.
pub fn can_grow(lexer: &LexerDfa, q: LexStateId) -> bool {
    lexer_can_grow(lexer, q)
}

//! What can come next lexically, found by plain search over the lexer DFA (a deliberately
//! different computation from the table the GLR recognizer uses): from a boundary, try
//! every allowed first byte; from a pending lexeme, explore every byte string; step through
//! ignored lexemes, and through droppable ones (a parse may skip them) while also
//! counting them as next terminals.
//!
//! Under longest-match lexing the lexemes emitted before stay in the search as shadows
//! (see [`advance`]): a path on which one of them completes a longer match is no path.
//!
//! The search runs over explicit lexer states: a counted run's iterations all reach what
//! their template reaches once the run's exits are followed too (`LexerDfa::next_exit`),
//! so a virtual state is searched as its template. That keeps a search finite and small
//! inside a string of 65,535 characters.

use hashbrown::HashSet;

use crate::ids::{LexStateId, TerminalId};
use crate::lexer::LexerDfa;

/// Where the search stands. `shadows` are the states of lexemes emitted earlier that the
/// bytes since have grown but not completed (sorted; see [`advance`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Node {
    /// Between lexemes; the next lexeme starts in lexer state `start` (its mode's).
    Boundary {
        start: LexStateId,
        shadows: Vec<LexStateId>,
    },
    /// Inside a lexeme in this state (it may complete here or grow).
    Lexeme {
        q: LexStateId,
        shadows: Vec<LexStateId>,
    },
}

/// The shadows after byte `b`, or `None` if `b` is not allowed: under maximal munch a
/// shadow is the lexeme just emitted and no byte may extend it; under longest match
/// (`longest`) no byte may complete a longer match of an emitted lexeme, and the ones
/// that extend it without completing carry it on.
pub fn advance(
    lexer: &LexerDfa,
    longest: bool,
    shadows: &[LexStateId],
    b: u8,
) -> Option<Vec<LexStateId>> {
    let mut out = Vec::new();
    for &s in shadows {
        let s1 = lexer.next(s, b);
        if lexer.is_dead(s1) {
            continue;
        }
        if !longest || !lexer.emits(s1).is_empty() {
            return None;
        }
        out.push(s1);
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// `shadows` with the lexeme of state `q` emitted behind them (if it could grow).
pub fn behind(lexer: &LexerDfa, shadows: &[LexStateId], q: LexStateId) -> Vec<LexStateId> {
    let mut out = shadows.to_vec();
    if lexer_can_grow(lexer, q) {
        out.push(q);
        out.sort();
        out.dedup();
    }
    out
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
/// brackets, which the indenter drops). `then[t]`: the state the lexeme after terminal
/// `t` starts in (its lexer mode's start).
fn search(
    lexer: &LexerDfa,
    then: &[LexStateId],
    starts: Vec<Node>,
    dropped: Option<TerminalId>,
) -> Next {
    let longest = lexer.longest_match();
    let mut seen: HashSet<Node> = HashSet::new();
    let mut work: Vec<Node> = starts
        .into_iter()
        .map(|n| match n {
            Node::Lexeme { q, shadows } => Node::Lexeme {
                q: lexer.rep(q),
                shadows,
            },
            b => b,
        })
        .collect();
    let mut out = Next::default();
    while let Some(n) = work.pop() {
        if !seen.insert(n.clone()) {
            continue;
        }
        match n {
            Node::Boundary { start, shadows } => {
                out.eof = true;
                for b in 0..=255u8 {
                    let Some(moved) = advance(lexer, longest, &shadows, b) else {
                        continue;
                    };
                    work.extend(successors(lexer, start, b).map(|q| Node::Lexeme {
                        q,
                        shadows: moved.clone(),
                    }));
                }
            }
            Node::Lexeme { q, shadows } => {
                for &t in lexer.emits(q) {
                    let ignored = lexer.is_ignored(t) || Some(t) == dropped;
                    if ignored || lexer.is_droppable(t) {
                        work.push(Node::Boundary {
                            start: then[t.index()],
                            shadows: behind(lexer, &shadows, q),
                        });
                    }
                    if !ignored && !out.terminals.contains(&t) {
                        out.terminals.push(t);
                    }
                }
                for b in 0..=255u8 {
                    let Some(moved) = advance(lexer, longest, &shadows, b) else {
                        continue;
                    };
                    work.extend(successors(lexer, q, b).map(|q| Node::Lexeme {
                        q,
                        shadows: moved.clone(),
                    }));
                }
            }
        }
    }
    out
}

fn lexer_can_grow(lexer: &LexerDfa, q: LexStateId) -> bool {
    (0..=255u8).any(|b| !lexer.is_dead(lexer.next(q, b)))
}

/// What can come next at a boundary whose next lexeme starts in `start`, with these
/// shadows (under maximal munch, the lexeme just emitted if it could grow; `dropped` and
/// `then`: see [`search`]).
pub fn at_boundary(
    lexer: &LexerDfa,
    then: &[LexStateId],
    start: LexStateId,
    shadows: Vec<LexStateId>,
    dropped: Option<TerminalId>,
) -> Next {
    search(
        lexer,
        then,
        vec![Node::Boundary { start, shadows }],
        dropped,
    )
}

/// What can come next when the pending lexeme in state `q` grows by at least one byte,
/// with these shadows (`dropped` as for [`at_boundary`]).
pub fn after_growing(
    lexer: &LexerDfa,
    then: &[LexStateId],
    q: LexStateId,
    shadows: &[LexStateId],
    dropped: Option<TerminalId>,
) -> Next {
    let q = lexer.rep(q);
    let longest = lexer.longest_match();
    let starts = (0..=255u8)
        .filter_map(|b| Some((b, advance(lexer, longest, shadows, b)?)))
        .flat_map(|(b, moved)| {
            successors(lexer, q, b).map(move |q| Node::Lexeme {
                q,
                shadows: moved.clone(),
            })
        })
        .collect();
    let mut n = search(lexer, then, starts, dropped);
    // Growing needs a byte, so end of input cannot come before it; `search` only sets
    // `eof` through boundaries reached after an ignored lexeme completes.
    n.terminals.sort();
    n
}

/// Whether the lexeme in state `q` can grow.
pub fn can_grow(lexer: &LexerDfa, q: LexStateId) -> bool {
    lexer_can_grow(lexer, q)
}

//! Whole-document lexing by 1-lookahead maximal munch (DESIGN.md §1): the lexeme grows
//! while the next byte keeps it a prefix of some terminal's match; when it cannot grow it
//! must be complete, and is emitted as its top-priority terminal(s). No backtracking,
//! except under longest-match lexing (see `super::shadow`).

use smallvec::SmallVec;

use super::LexerDfa;
use crate::ids::{LexStateId, TerminalId};

/// One lexeme of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lexeme {
    /// Byte offset of its first byte.
    pub start: usize,
    /// Byte offset one past its last byte.
    pub end: usize,
    /// The terminals it is emitted as (several = lexically ambiguous); ignored terminals
    /// are included, the parser skips them.
    pub terminals: SmallVec<[TerminalId; 2]>,
}

/// Why lexing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexErrorKind {
    /// The byte at `offset` neither extends the current lexeme nor starts a new one after
    /// a complete lexeme.
    UnexpectedByte(u8),
    /// The input ended inside a lexeme that is not a complete terminal.
    UnexpectedEnd,
}

/// A lexing error at a byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("lexing failed at byte {offset}: {}", match .kind {
    LexErrorKind::UnexpectedByte(b) => format!("unexpected byte 0x{b:02x}"),
    LexErrorKind::UnexpectedEnd => "input ends inside an incomplete lexeme".to_string(),
})]
pub struct LexError {
    /// Offset of the offending byte (the input length for an unexpected end).
    pub offset: usize,
    /// What went wrong.
    pub kind: LexErrorKind,
    /// Where the failing lexeme started.
    pub lexeme_start: usize,
}

/// Lexes a whole document into lexemes (ignored ones included). Under longest-match
/// lexing ([`LexerDfa::longest_match`]) a lexeme that dies incomplete backs up to its
/// last complete match, as flex does, and lexing resumes after it.
pub fn lex(dfa: &LexerDfa, input: &[u8]) -> Result<Vec<Lexeme>, LexError> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut s: LexStateId = LexerDfa::START;
    // The lexeme's last complete match: its end and state (longest match only).
    let mut last: Option<(usize, LexStateId)> = None;
    let mut i = 0usize;
    loop {
        let Some(&b) = input.get(i) else {
            // End of input: the pending lexeme must be complete, or back up.
            if start == input.len() {
                break;
            }
            if !dfa.emits(s).is_empty() {
                out.push(lexeme(dfa, start, i, s));
                break;
            }
            let Some((end, q)) = last.filter(|_| dfa.longest_match()) else {
                return Err(LexError {
                    offset: input.len(),
                    kind: LexErrorKind::UnexpectedEnd,
                    lexeme_start: start,
                });
            };
            out.push(lexeme(dfa, start, end, q));
            (start, i, s, last) = (end, end, dfa.start_after(q), None);
            continue;
        };
        let next = dfa.next(s, b);
        if !dfa.is_dead(next) {
            s = next;
            i += 1;
            if dfa.longest_match() && !dfa.emits(s).is_empty() {
                last = Some((i, s));
            }
            continue;
        }
        if dfa.emits(s).is_empty() || start == i {
            if let Some((end, q)) = last.filter(|_| dfa.longest_match()) {
                // Back up to the last complete match.
                out.push(lexeme(dfa, start, end, q));
                (start, i, s, last) = (end, end, dfa.start_after(q), None);
                continue;
            }
            return Err(LexError {
                offset: i,
                kind: LexErrorKind::UnexpectedByte(b),
                lexeme_start: start,
            });
        }
        out.push(lexeme(dfa, start, i, s));
        (start, s, last) = (i, dfa.start_after(s), None);
    }
    Ok(out)
}

fn lexeme(dfa: &LexerDfa, start: usize, end: usize, q: LexStateId) -> Lexeme {
    Lexeme {
        start,
        end,
        terminals: dfa.emits(q).iter().copied().collect(),
    }
}

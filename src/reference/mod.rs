//! The reference oracle: slow, simple and independent of `glr` and `dwa` (it shares only
//! the grammar IR and the lexer DFA with them). It defines what a correct answer is.
//!
//! A byte string is lexed by 1-lookahead maximal munch ([`Reference::lex_prefix`]); the
//! lexemes are parsed by an Earley recognizer ([`earley`]). The prefix is *viable* if the
//! pending lexeme can either stop here (emitted; then some terminal that may start after
//! it, or end of input, fits the parse) or grow and complete into a terminal that fits —
//! one terminal of lookahead past the bytes, exactly as issue 3 defines viability. The mask
//! tries every token.

pub mod earley;
pub mod follow;

use self::earley::{Chart, Earley};
use crate::compile::grammar::ir::Grammar;
use crate::ids::{LexStateId, TerminalId, TokenId};
use crate::lexer::LexerDfa;
use crate::vocab::Vocab;

/// The oracle for one grammar.
pub struct Reference {
    lexer: LexerDfa,
    earley: Earley,
    /// Memo of lexical follow searches, keyed by (is boundary, state).
    follow_memo: std::sync::Mutex<hashbrown::HashMap<(bool, u32), std::sync::Arc<follow::Next>>>,
}

/// A prefix after lexing and parsing its closed lexemes.
#[derive(Clone)]
pub struct Prefix {
    chart: Chart,
    /// The state of the pending (last, unclosed) lexeme; `START` only for empty input.
    pending: LexStateId,
    /// False if lexing or parsing already failed.
    alive: bool,
}

impl Prefix {
    /// Makes this extension permanent: its parsed part becomes shared with later
    /// extensions (in place when no other prefix shares it).
    pub fn freeze(&mut self) {
        self.chart.freeze();
    }
}

impl Reference {
    /// Builds the oracle from the grammar IR and its lexer.
    pub fn new(grammar: &Grammar, lexer: &LexerDfa) -> Self {
        Self {
            lexer: lexer.clone(),
            earley: Earley::new(grammar),
            follow_memo: Default::default(),
        }
    }

    // Searches are keyed by explicit state: a counted run's iterations share their
    // template's (see `follow`).
    fn boundary_next(&self, inhibitor: Option<LexStateId>) -> std::sync::Arc<follow::Next> {
        let inhibitor = inhibitor.map(|q| self.lexer.rep(q));
        let key = (true, inhibitor.map_or(u32::MAX, |q| q.as_u32()));
        self.memo(key, || follow::at_boundary(&self.lexer, inhibitor))
    }

    fn growing_next(&self, q: LexStateId) -> std::sync::Arc<follow::Next> {
        let q = self.lexer.rep(q);
        self.memo((false, q.as_u32()), || {
            follow::after_growing(&self.lexer, q)
        })
    }

    fn memo(
        &self,
        key: (bool, u32),
        f: impl FnOnce() -> follow::Next,
    ) -> std::sync::Arc<follow::Next> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still
        // a valid cache.
        let mut m = self.follow_memo.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(key)
            .or_insert_with(|| std::sync::Arc::new(f()))
            .clone()
    }

    /// Reads one closed lexeme (its emitted terminals) into the chart. An ignored terminal
    /// lets the lexeme be skipped; so does a droppable one that no parse expects here
    /// (one that some parse expects is read, and parses that cannot read it end).
    fn read_lexeme(&self, chart: &mut Chart, terms: &[TerminalId]) -> bool {
        let real: Vec<TerminalId> = terms
            .iter()
            .copied()
            .filter(|&t| !self.lexer.is_ignored(t))
            .collect();
        let dropped = real
            .iter()
            .any(|&t| self.lexer.is_droppable(t) && !self.earley.expects(chart, t));
        let skippable = real.len() < terms.len() || dropped;
        self.earley.advance(chart, &real, skippable)
    }

    /// The empty prefix.
    pub fn empty(&self) -> Prefix {
        Prefix {
            chart: self.earley.start(),
            pending: LexerDfa::START,
            alive: true,
        }
    }

    /// Extends a prefix by bytes: maximal munch closes a lexeme when the next byte cannot
    /// extend it (it must then be complete).
    pub fn extend(&self, p: &Prefix, bytes: &[u8]) -> Prefix {
        let mut p = p.clone();
        self.extend_in_place(&mut p, bytes);
        p
    }

    fn extend_in_place(&self, p: &mut Prefix, bytes: &[u8]) {
        for &b in bytes {
            if !p.alive {
                break;
            }
            let n = self.lexer.next(p.pending, b);
            if !self.lexer.is_dead(n) {
                p.pending = n;
                continue;
            }
            let emits = self.lexer.emits(p.pending).to_vec();
            if p.pending == LexerDfa::START
                || emits.is_empty()
                || !self.read_lexeme(&mut p.chart, &emits)
            {
                p.alive = false;
                break;
            }
            p.pending = self.lexer.next(LexerDfa::START, b);
            if self.lexer.is_dead(p.pending) {
                p.alive = false;
            }
        }
    }

    /// Lexes a whole prefix.
    pub fn lex_prefix(&self, bytes: &[u8]) -> Prefix {
        self.extend(&self.empty(), bytes)
    }

    /// Extends a prefix for good (shares the parsed part with later extensions).
    pub fn commit(&self, p: &Prefix, bytes: &[u8]) -> Prefix {
        let mut n = self.extend(p, bytes);
        n.chart.freeze();
        n
    }

    /// Extends an owned prefix for good, in place (linear over a whole document).
    pub fn commit_owned(&self, mut p: Prefix, bytes: &[u8]) -> Prefix {
        self.extend_in_place(&mut p, bytes);
        p.chart.freeze();
        p
    }

    fn fits(&self, chart: &Chart, next: &follow::Next) -> bool {
        (next.eof && self.earley.accepts(chart))
            || next
                .terminals
                .iter()
                .any(|&t| self.earley.expects(chart, t))
    }

    /// Whether a lexed prefix is viable.
    pub fn prefix_viable(&self, p: &Prefix) -> bool {
        if !p.alive {
            return false;
        }
        let q = p.pending;
        if q == LexerDfa::START {
            return self.fits(&p.chart, &self.boundary_next(None));
        }
        // The pending lexeme grows further …
        if follow::can_grow(&self.lexer, q) && self.fits(&p.chart, &self.growing_next(q)) {
            return true;
        }
        // … or is emitted now.
        let emits = self.lexer.emits(q).to_vec();
        if emits.is_empty() {
            return false;
        }
        let mut chart = p.chart.clone();
        if !self.read_lexeme(&mut chart, &emits) {
            return false;
        }
        let inhibitor = follow::can_grow(&self.lexer, q).then_some(q);
        self.fits(&chart, &self.boundary_next(inhibitor))
    }

    /// Whether some continuation of `bytes` is a document (one terminal of lookahead).
    pub fn is_viable(&self, bytes: &[u8]) -> bool {
        self.prefix_viable(&self.lex_prefix(bytes))
    }

    /// Whether `bytes` is a complete document.
    pub fn prefix_complete(&self, p: &Prefix) -> bool {
        if !p.alive {
            return false;
        }
        if p.pending == LexerDfa::START {
            return self.earley.accepts(&p.chart);
        }
        let emits = self.lexer.emits(p.pending).to_vec();
        if emits.is_empty() {
            return false;
        }
        let mut chart = p.chart.clone();
        self.read_lexeme(&mut chart, &emits) && self.earley.accepts(&chart)
    }

    /// Whether `bytes` is a complete document.
    pub fn is_complete(&self, bytes: &[u8]) -> bool {
        self.prefix_complete(&self.lex_prefix(bytes))
    }

    /// The mask after `prefix`: normal token `t` iff `prefix · bytes(t)` is viable, the
    /// EOS tokens iff `prefix` is complete, special tokens never. Returns one bool per id.
    pub fn mask(&self, prefix: &Prefix, vocab: &Vocab) -> Vec<bool> {
        let mut out = vec![false; vocab.len()];
        for (id, bytes) in vocab.normal_tokens() {
            out[id.index()] = self.prefix_viable(&self.extend(prefix, bytes));
        }
        if self.prefix_complete(prefix) {
            for &e in vocab.eos() {
                out[e.index()] = true;
            }
        }
        out
    }

    /// Whether token `t` is allowed after `prefix` (same rule as [`Self::mask`]).
    pub fn allows(&self, prefix: &Prefix, vocab: &Vocab, t: TokenId) -> bool {
        if vocab.eos().contains(&t) {
            return self.prefix_complete(prefix);
        }
        match vocab.kind(t) {
            Ok(crate::vocab::TokenKind::Normal) => match vocab.token_bytes(t) {
                Ok(b) => self.prefix_viable(&self.extend(prefix, b)),
                Err(_) => false,
            },
            _ => false,
        }
    }
}

//! The reference oracle: slow, simple and independent of `glr` and `dwa` (it shares only
//! the grammar IR and the lexer DFA with them). It defines what a correct answer is.
//!
//! A byte string is lexed by 1-lookahead maximal munch ([`Reference::lex_prefix`]); the
//! lexemes are parsed by an Earley recognizer ([`earley`]). The prefix is *viable* if the
//! pending lexeme can either stop here (emitted; then some terminal that may start after
//! it, or end of input, fits the parse) or grow and complete into a terminal that fits —
//! one terminal of lookahead past the bytes, exactly as issue 3 defines viability. The mask
//! tries every token. Behind an indenter ([`indent`]) a newline counts as that terminal
//! (its indent or dedents are then always possible: the next line's width is free), and
//! inside brackets, where the indenter drops newlines, lookahead steps over them.

pub mod earley;
pub mod follow;
pub mod indent;

use self::earley::Earley;
use self::indent::Thread;
use crate::compile::grammar::ir::Grammar;
use crate::ids::{LexStateId, TerminalId, TokenId};
use crate::lexer::{Indenter, LexerDfa, Tail};
use crate::vocab::Vocab;

/// The oracle for one grammar.
pub struct Reference {
    lexer: LexerDfa,
    earley: Earley,
    /// The indentation post-lexer the grammar runs behind, if any.
    indenter: Option<Indenter>,
    /// Memo of lexical follow searches, keyed by (is boundary, state, newlines dropped).
    follow_memo: std::sync::Mutex<hashbrown::HashMap<FollowKey, std::sync::Arc<follow::Next>>>,
}

type FollowKey = (bool, u32, bool);

/// A prefix after lexing and parsing its closed lexemes.
#[derive(Clone)]
pub struct Prefix {
    /// The parses so far, one chart per indentation state (one without an indenter).
    threads: Vec<Thread>,
    /// The state of the pending (last, unclosed) lexeme; `START` only for empty input.
    pending: LexStateId,
    /// The pending lexeme's indentation (read only behind an indenter).
    tail: Tail,
    /// False if lexing or parsing already failed.
    alive: bool,
}

impl Prefix {
    /// Makes this extension permanent: its parsed part becomes shared with later
    /// extensions (in place when no other prefix shares it).
    pub fn freeze(&mut self) {
        for t in &mut self.threads {
            t.chart.freeze();
        }
    }
}

impl Reference {
    /// Builds the oracle from the grammar IR and its lexer.
    pub fn new(grammar: &Grammar, lexer: &LexerDfa) -> Self {
        Self {
            lexer: lexer.clone(),
            earley: Earley::new(grammar),
            // The oracle is built for grammars the compiler took, whose post-lexer resolved.
            indenter: grammar.post_lexer().ok().flatten(),
            follow_memo: Default::default(),
        }
    }

    // Searches are keyed by explicit state: a counted run's iterations share their
    // template's (see `follow`).
    // `dropped`: the indenter's newline, stepped over (inside brackets).
    fn boundary_next(
        &self,
        inhibitor: Option<LexStateId>,
        dropped: Option<TerminalId>,
    ) -> std::sync::Arc<follow::Next> {
        let inhibitor = inhibitor.map(|q| self.lexer.rep(q));
        let key = (
            true,
            inhibitor.map_or(u32::MAX, |q| q.as_u32()),
            dropped.is_some(),
        );
        self.memo(key, || follow::at_boundary(&self.lexer, inhibitor, dropped))
    }

    fn growing_next(
        &self,
        q: LexStateId,
        dropped: Option<TerminalId>,
    ) -> std::sync::Arc<follow::Next> {
        let q = self.lexer.rep(q);
        self.memo((false, q.as_u32(), dropped.is_some()), || {
            follow::after_growing(&self.lexer, q, dropped)
        })
    }

    /// The terminal lookahead steps over in thread `t`: the newline inside brackets.
    fn dropped(&self, t: &Thread) -> Option<TerminalId> {
        self.indenter
            .as_ref()
            .filter(|_| t.levels.brackets > 0)
            .map(|i| i.nl)
    }

    fn memo(
        &self,
        key: FollowKey,
        f: impl FnOnce() -> follow::Next,
    ) -> std::sync::Arc<follow::Next> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still
        // a valid cache.
        let mut m = self.follow_memo.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(key)
            .or_insert_with(|| std::sync::Arc::new(f()))
            .clone()
    }

    /// Reads one closed lexeme (its emitted terminals) into every thread: the threads
    /// after it. An ignored terminal lets the lexeme be skipped; so does a droppable one
    /// that no parse of the thread expects here (one that some parse expects is read, and
    /// parses that cannot read it end). Behind an indenter, see [`indent::read`].
    fn read_lexeme(&self, threads: &[Thread], terms: &[TerminalId], tail: Tail) -> Vec<Thread> {
        let real: Vec<TerminalId> = terms
            .iter()
            .copied()
            .filter(|&t| !self.lexer.is_ignored(t))
            .collect();
        let mut out = Vec::new();
        for th in threads {
            let dropped = real
                .iter()
                .any(|&t| self.lexer.is_droppable(t) && !self.earley.expects(&th.chart, t));
            let skippable = real.len() < terms.len() || dropped;
            match &self.indenter {
                Some(ind) => {
                    out.extend(indent::read(&self.earley, ind, th, &real, skippable, tail))
                }
                None => {
                    let mut chart = th.chart.clone();
                    if self.earley.advance(&mut chart, &real, skippable) {
                        out.push(Thread {
                            chart,
                            levels: th.levels.clone(),
                        });
                    }
                }
            }
        }
        out
    }

    /// The empty prefix.
    pub fn empty(&self) -> Prefix {
        Prefix {
            threads: vec![Thread {
                chart: self.earley.start(),
                levels: Default::default(),
            }],
            pending: LexerDfa::START,
            tail: Tail::default(),
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
        let tab_len = self.indenter.as_ref().map_or(0, |i| i.tab_len);
        for &b in bytes {
            if !p.alive {
                break;
            }
            let n = self.lexer.next(p.pending, b);
            if !self.lexer.is_dead(n) {
                p.pending = n;
                p.tail = p.tail.step(b, tab_len);
                continue;
            }
            let emits = self.lexer.emits(p.pending).to_vec();
            if p.pending == LexerDfa::START || emits.is_empty() {
                p.alive = false;
                break;
            }
            p.threads = self.read_lexeme(&p.threads, &emits, p.tail);
            if p.threads.is_empty() {
                p.alive = false;
                break;
            }
            p.pending = self.lexer.next(LexerDfa::START, b);
            p.tail = Tail::default().step(b, tab_len);
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
        n.freeze();
        n
    }

    /// Extends an owned prefix for good, in place (linear over a whole document).
    pub fn commit_owned(&self, mut p: Prefix, bytes: &[u8]) -> Prefix {
        self.extend_in_place(&mut p, bytes);
        p.freeze();
        p
    }

    /// Whether the next terminal (or end of input) can come after thread `t`.
    fn fits(&self, t: &Thread, next: &follow::Next) -> bool {
        let ind = self.indenter.as_ref();
        (next.eof && indent::accepts(&self.earley, ind, t))
            || next.terminals.iter().any(|&term| {
                // A closing bracket no bracket opened is an error to the indenter.
                let unopened =
                    ind.is_some_and(|i| i.close.contains(&term)) && t.levels.brackets == 0;
                !unopened && self.earley.expects(&t.chart, term)
            })
    }

    /// Whether a lexed prefix is viable.
    pub fn prefix_viable(&self, p: &Prefix) -> bool {
        p.alive && p.threads.iter().any(|t| self.thread_viable(p, t))
    }

    fn thread_viable(&self, p: &Prefix, t: &Thread) -> bool {
        let q = p.pending;
        let dropped = self.dropped(t);
        if q == LexerDfa::START {
            return self.fits(t, &self.boundary_next(None, dropped));
        }
        // The pending lexeme grows further …
        if follow::can_grow(&self.lexer, q) && self.fits(t, &self.growing_next(q, dropped)) {
            return true;
        }
        // … or is emitted now.
        let emits = self.lexer.emits(q).to_vec();
        if emits.is_empty() {
            return false;
        }
        let inhibitor = follow::can_grow(&self.lexer, q).then_some(q);
        self.read_lexeme(std::slice::from_ref(t), &emits, p.tail)
            .iter()
            .any(|t2| self.fits(t2, &self.boundary_next(inhibitor, self.dropped(t2))))
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
        let ind = self.indenter.as_ref();
        if p.pending == LexerDfa::START {
            return p
                .threads
                .iter()
                .any(|t| indent::accepts(&self.earley, ind, t));
        }
        let emits = self.lexer.emits(p.pending).to_vec();
        if emits.is_empty() {
            return false;
        }
        self.read_lexeme(&p.threads, &emits, p.tail)
            .iter()
            .any(|t| indent::accepts(&self.earley, ind, t))
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

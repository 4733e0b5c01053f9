//! The reference oracle: slow, simple and independent of `glr` and `dwa` (it shares only
//! the grammar IR and the lexer DFA with them). It defines what a correct answer is.
//!
//! A byte string is lexed by 1-lookahead maximal munch ([`Reference::lex_prefix`]), or
//! by longest match when the lexer says so (then every complete match that can grow is
//! both closed and grown, and the closed way lives while later bytes complete no longer
//! match: see [`follow::advance`]); the lexemes are parsed by an Earley recognizer
//! ([`earley`]). The prefix is *viable* if the
//! pending lexeme can either stop here (emitted; then some terminal that may start after
//! it, or end of input, fits the parse) or grow and complete into a terminal that fits —
//! one terminal of lookahead past the bytes, exactly as issue 3 defines viability. The mask
//! tries every token. Behind an indenter ([`indent`]) a newline counts as that terminal
//! (its indent or dedents are then always possible: the next line's width is free), and
//! inside brackets, where the indenter drops newlines, lookahead steps over them.

pub mod earley;
pub mod follow;
pub mod indent;

use self::earley::{Chart, Earley};
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
    /// Per terminal, the state the lexeme after it starts in: the start of the lexer mode
    /// the grammar says it continues in (`START` without modes).
    then: Vec<LexStateId>,
    /// Memo of lexical follow searches, keyed by where they start and whether newlines
    /// are dropped.
    follow_memo: std::sync::Mutex<hashbrown::HashMap<FollowKey, std::sync::Arc<follow::Next>>>,
}

/// The normal tokens with their bytes, in byte order (made once per vocabulary).
struct ByteOrder(Vec<(TokenId, Vec<u8>)>);

/// [`Vocab::derived`]'s key for [`ByteOrder`].
const BYTE_ORDER_KEY: u64 = 0x7265_665f_6f72_6465;

impl ByteOrder {
    fn of(vocab: &Vocab) -> Self {
        let mut v: Vec<(TokenId, Vec<u8>)> = vocab
            .mask_tokens()
            .map(|(id, b)| (id, b.to_vec()))
            .collect();
        v.sort_by(|a, b| a.1.cmp(&b.1));
        Self(v)
    }
}

/// (the search's start, whether the newline is dropped).
type FollowKey = (follow::Node, bool);

/// A prefix after lexing and parsing its closed lexemes: one way to have lexed it, or
/// several under longest-match lexing (a complete match that can grow is both emitted and
/// grown until later bytes decide; see `lexer::shadow`).
#[derive(Clone)]
pub struct Prefix {
    /// The Earley sets of every reading of the prefix (the threads' nodes).
    chart: Chart,
    /// The ways the prefix lexes (exactly one under maximal munch while it is alive);
    /// empty once lexing or parsing failed.
    alts: Vec<Alt>,
}

/// One way a prefix lexes.
#[derive(Clone)]
struct Alt {
    /// The parses so far, one chart node per indentation state (one without an
    /// indenter).
    threads: Vec<Thread>,
    /// The state of the pending (last, unclosed) lexeme; at a boundary, the start state
    /// of the lexer mode the next lexeme is lexed in.
    pending: LexStateId,
    /// The pending lexeme's indentation (read only behind an indenter).
    tail: Tail,
    /// The lexemes emitted before whose longer matches later bytes must not complete
    /// (see [`follow::advance`]; always empty under maximal munch between bytes).
    shadows: Vec<LexStateId>,
}

impl Prefix {
    /// How many ways to lex the prefix are alive, and how many parse threads they hold.
    pub fn ways(&self) -> (usize, usize) {
        (
            self.alts.len(),
            self.alts.iter().map(|a| a.threads.len()).sum(),
        )
    }

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
            // The oracle is built for grammars the compiler took, whose post-lexer resolved.
            indenter: grammar.post_lexer().ok().flatten(),
            then: grammar
                .terminals
                .iter()
                .map(|t| lexer.mode_start(t.mode.then))
                .collect(),
            follow_memo: Default::default(),
        }
    }

    /// Whether a pending state is a boundary: some lexer mode's start (the empty lexeme).
    fn at_boundary(&self, pending: LexStateId) -> bool {
        pending == LexerDfa::START || self.then.contains(&pending)
    }

    /// A closed lexeme's terminals grouped by the state the next lexeme starts in (one
    /// group unless they continue in different lexer modes).
    fn by_next_start(&self, terms: &[TerminalId]) -> Vec<(LexStateId, Vec<TerminalId>)> {
        let mut out: Vec<(LexStateId, Vec<TerminalId>)> = Vec::new();
        for &t in terms {
            let s = self.then[t.index()];
            match out.iter_mut().find(|(s2, _)| *s2 == s) {
                Some((_, v)) => v.push(t),
                None => out.push((s, vec![t])),
            }
        }
        out
    }

    // Searches are keyed by explicit state: a counted run's iterations share their
    // template's (see `follow`).
    // `dropped`: the indenter's newline, stepped over (inside brackets).
    fn boundary_next(
        &self,
        start: LexStateId,
        shadows: Vec<LexStateId>,
        dropped: Option<TerminalId>,
    ) -> std::sync::Arc<follow::Next> {
        let shadows: Vec<LexStateId> = shadows.into_iter().map(|q| self.lexer.rep(q)).collect();
        let key = (
            follow::Node::Boundary {
                start,
                shadows: shadows.clone(),
            },
            dropped.is_some(),
        );
        self.memo(key, || {
            follow::at_boundary(&self.lexer, &self.then, start, shadows, dropped)
        })
    }

    fn growing_next(
        &self,
        q: LexStateId,
        shadows: &[LexStateId],
        dropped: Option<TerminalId>,
    ) -> std::sync::Arc<follow::Next> {
        let q = self.lexer.rep(q);
        let key = (
            follow::Node::Lexeme {
                q,
                shadows: shadows.to_vec(),
            },
            dropped.is_some(),
        );
        self.memo(key, || {
            follow::after_growing(&self.lexer, &self.then, q, shadows, dropped)
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
        // a valid cache. The search runs outside the lock, so threads sharing a reference
        // do not wait on each other's searches (two may make the same entry; it is equal).
        let lock = || self.follow_memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(next) = lock().get(&key) {
            return next.clone();
        }
        let next = std::sync::Arc::new(f());
        lock().entry(key).or_insert(next).clone()
    }

    /// Reads one closed lexeme (its emitted terminals) into every thread: the threads
    /// after it, those with the same indentation joined. An ignored terminal lets the
    /// lexeme be skipped; so does a droppable one that no parse of the thread expects here
    /// (one that some parse expects is read, and parses that cannot read it end). Behind
    /// an indenter, see [`indent::read`].
    fn read_lexeme(
        &self,
        chart: &mut Chart,
        threads: &[Thread],
        terms: &[TerminalId],
        tail: Tail,
    ) -> Vec<Thread> {
        let real: Vec<TerminalId> = terms
            .iter()
            .copied()
            .filter(|&t| !self.lexer.is_ignored(t))
            .collect();
        let mut out = Vec::new();
        for th in threads {
            let dropped = real
                .iter()
                .any(|&t| self.lexer.is_droppable(t) && !self.earley.expects(chart, th.at, t));
            let skippable = real.len() < terms.len() || dropped;
            match &self.indenter {
                Some(ind) => out.extend(indent::read(
                    &self.earley,
                    chart,
                    ind,
                    th,
                    &real,
                    skippable,
                    tail,
                )),
                None => {
                    if let Some(at) = self.earley.scan(chart, th.at, &real, skippable) {
                        out.push(Thread {
                            at,
                            levels: th.levels.clone(),
                        });
                    }
                }
            }
        }
        indent::merge(&self.earley, chart, out)
    }

    /// The empty prefix.
    pub fn empty(&self) -> Prefix {
        let (chart, at) = self.earley.start();
        Prefix {
            chart,
            alts: vec![Alt {
                threads: vec![Thread {
                    at,
                    levels: Default::default(),
                }],
                pending: LexerDfa::START,
                tail: Tail::default(),
                shadows: Vec::new(),
            }],
        }
    }

    /// Extends a prefix by bytes: maximal munch closes a lexeme when the next byte cannot
    /// extend it (it must then be complete); longest match also closes it at a complete
    /// match the next byte extends, as one more way to lex, which lives while the bytes
    /// after it complete no longer match.
    pub fn extend(&self, p: &Prefix, bytes: &[u8]) -> Prefix {
        let mut p = p.clone();
        self.extend_in_place(&mut p, bytes);
        p
    }

    fn extend_in_place(&self, p: &mut Prefix, bytes: &[u8]) {
        for &b in bytes {
            if p.alts.is_empty() {
                break;
            }
            let mut next: Vec<Alt> = Vec::new();
            for a in std::mem::take(&mut p.alts) {
                self.step(&mut p.chart, a, b, &mut next);
            }
            for a in &mut next {
                if a.threads.len() > 1 {
                    a.threads =
                        indent::merge(&self.earley, &mut p.chart, std::mem::take(&mut a.threads));
                }
            }
            p.alts = next;
        }
    }

    /// The ways one way to lex goes on after byte `b`, added to `out` (ways that reach the
    /// same lexer position merge their threads).
    fn step(&self, chart: &mut Chart, a: Alt, b: u8, out: &mut Vec<Alt>) {
        let lx = &self.lexer;
        let longest = lx.longest_match();
        let tab_len = self.indenter.as_ref().map_or(0, |i| i.tab_len);
        let Some(shadows) = follow::advance(lx, longest, &a.shadows, b) else {
            return;
        };
        let mut add = |alt: Alt| match out
            .iter_mut()
            .find(|o| o.pending == alt.pending && o.tail == alt.tail && o.shadows == alt.shadows)
        {
            Some(o) => o.threads.extend(alt.threads),
            None => out.push(alt),
        };
        let grown = lx.next(a.pending, b);
        let emits = lx.emits(a.pending).to_vec();
        // Closing the pending lexeme here: under maximal munch only if `b` cannot extend
        // it, under longest match unless `b` completes a longer match.
        let close = !self.at_boundary(a.pending)
            && !emits.is_empty()
            && (lx.is_dead(grown) || (longest && lx.emits(grown).is_empty()));
        if close {
            let mut behind = shadows.clone();
            if !lx.is_dead(grown) {
                behind.push(grown);
                behind.sort();
                behind.dedup();
            }
            for (start, terms) in self.by_next_start(&emits) {
                let q = lx.next(start, b);
                if lx.is_dead(q) {
                    continue;
                }
                let threads = self.read_lexeme(chart, &a.threads, &terms, a.tail);
                if !threads.is_empty() {
                    add(Alt {
                        threads,
                        pending: q,
                        tail: Tail::default().step(b, tab_len),
                        shadows: behind.clone(),
                    });
                }
            }
        }
        if !lx.is_dead(grown) {
            add(Alt {
                threads: a.threads,
                pending: grown,
                tail: a.tail.step(b, tab_len),
                shadows,
            });
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
    fn fits(&self, chart: &Chart, t: &Thread, next: &follow::Next) -> bool {
        let ind = self.indenter.as_ref();
        (next.eof && indent::accepts(&self.earley, chart, ind, t))
            || next.terminals.iter().any(|&term| {
                // A closing bracket no bracket opened is an error to the indenter.
                let unopened =
                    ind.is_some_and(|i| i.close.contains(&term)) && t.levels.brackets == 0;
                !unopened && self.earley.expects(chart, t.at, term)
            })
    }

    /// Whether a lexed prefix is viable.
    pub fn prefix_viable(&self, p: &Prefix) -> bool {
        p.alts
            .iter()
            .any(|a| a.threads.iter().any(|t| self.thread_viable(&p.chart, a, t)))
    }

    fn thread_viable(&self, chart: &Chart, a: &Alt, t: &Thread) -> bool {
        let q = a.pending;
        let dropped = self.dropped(t);
        if self.at_boundary(q) {
            return self.fits(chart, t, &self.boundary_next(q, a.shadows.clone(), dropped));
        }
        // The pending lexeme grows further …
        if follow::can_grow(&self.lexer, q)
            && self.fits(chart, t, &self.growing_next(q, &a.shadows, dropped))
        {
            return true;
        }
        // … or is emitted now.
        let emits = self.lexer.emits(q).to_vec();
        if emits.is_empty() {
            return false;
        }
        let behind = follow::behind(&self.lexer, &a.shadows, q);
        self.by_next_start(&emits)
            .into_iter()
            .any(|(start, terms)| {
                let mut chart = chart.clone();
                let after = self.read_lexeme(&mut chart, std::slice::from_ref(t), &terms, a.tail);
                after.iter().any(|t2| {
                    self.fits(
                        &chart,
                        t2,
                        &self.boundary_next(start, behind.clone(), self.dropped(t2)),
                    )
                })
            })
    }

    /// Whether some continuation of `bytes` is a document (one terminal of lookahead).
    pub fn is_viable(&self, bytes: &[u8]) -> bool {
        self.prefix_viable(&self.lex_prefix(bytes))
    }

    /// Whether `bytes` is a complete document.
    pub fn prefix_complete(&self, p: &Prefix) -> bool {
        let ind = self.indenter.as_ref();
        p.alts.iter().any(|a| {
            if self.at_boundary(a.pending) {
                return a
                    .threads
                    .iter()
                    .any(|t| indent::accepts(&self.earley, &p.chart, ind, t));
            }
            let emits = self.lexer.emits(a.pending).to_vec();
            if emits.is_empty() {
                return false;
            }
            let mut chart = p.chart.clone();
            let after = self.read_lexeme(&mut chart, &a.threads, &emits, a.tail);
            after
                .iter()
                .any(|t| indent::accepts(&self.earley, &chart, ind, t))
        })
    }

    /// Whether `bytes` is a complete document.
    pub fn is_complete(&self, bytes: &[u8]) -> bool {
        self.prefix_complete(&self.lex_prefix(bytes))
    }

    /// The mask after `prefix`: normal token `t` iff `prefix · bytes(t)` is viable, the
    /// EOS tokens iff `prefix` is complete, special tokens never. Returns one bool per id.
    ///
    /// Tokens are tried in byte order, each extending the longest prefix it shares with
    /// the one before (`extend` goes byte by byte, so extending by `a` then by `b` is
    /// extending by `ab`), and a token past a byte no reading survives is not viable. A
    /// 128K vocabulary then costs about one byte step per token instead of one per byte.
    pub fn mask(&self, prefix: &Prefix, vocab: &Vocab) -> Vec<bool> {
        let mut out = vec![false; vocab.len()];
        let order = vocab.derived(BYTE_ORDER_KEY, || ByteOrder::of(vocab));
        // `path[d]`: `prefix` extended by the first `d` bytes of the last token tried.
        let mut path: Vec<Prefix> = vec![prefix.clone()];
        let mut last: &[u8] = &[];
        for &(id, ref bytes) in &order.0 {
            let shared = last.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            path.truncate(shared.min(path.len() - 1) + 1);
            while path.len() <= bytes.len() {
                // Invariant: `path` is never empty (it starts with `prefix`).
                let top = path.last().expect("path holds the prefix");
                if top.alts.is_empty() {
                    break;
                }
                let b = bytes[path.len() - 1];
                path.push(self.extend(top, &[b]));
            }
            out[id.index()] = path.len() == bytes.len() + 1
                && self.prefix_viable(path.last().expect("path holds the prefix"));
            last = bytes;
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
        match vocab.mask_bytes(t) {
            Some(b) => self.prefix_viable(&self.extend(prefix, b)),
            None => false,
        }
    }
}

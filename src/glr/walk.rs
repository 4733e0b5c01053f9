//! Masks by walking the vocabulary through the recognizer, without a mask automaton:
//! keep the tokens whose bytes leave a viable state. Their cost grows with the
//! vocabulary.
//!
//! - [`mask`] walks the tokens sorted by their bytes, a recognizer state per byte
//!   (`advance`): the plain form, a second opinion beside the reference in tests.
//! - [`VocabWalk`] walks the vocabulary's tries ([`crate::vocab::TokenParts`]) with the
//!   lexer's table alone inside a lexeme, meeting the parser only where a lexeme closes,
//!   and settles a whole subtree where the lexer loops on every byte below it: the slow
//!   path of `check --engine glr` and of `sample` when a grammar's mask automaton
//!   exceeds its limits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hashbrown::HashMap;
use smallvec::SmallVec;

use super::gss::{merge_heads, Node};
use super::recognizer::HeadsMemo;
use super::{GlrState, Tables};
use crate::ids::{LexStateId, TokenId};
use crate::lexer::LexPos;
use crate::vocab::parts::{byte_category, Utf8, NUM_CATEGORIES};
use crate::vocab::{TokenParts, Vocab};

/// The normal tokens of a vocabulary sorted by their bytes.
#[derive(Debug, Clone)]
pub struct SortedTokens {
    entries: Vec<(Box<[u8]>, TokenId)>,
    vocab_len: usize,
    eos: Vec<TokenId>,
}

impl SortedTokens {
    /// Sorts the normal tokens of `vocab`.
    pub fn new(vocab: &Vocab) -> Self {
        let mut entries: Vec<(Box<[u8]>, TokenId)> = vocab
            .mask_tokens()
            .map(|(id, b)| (b.to_vec().into_boxed_slice(), id))
            .collect();
        entries.sort();
        Self {
            entries,
            vocab_len: vocab.len(),
            eos: vocab.eos().to_vec(),
        }
    }
}

/// The allowed tokens in the standard layout: bit `t % 32` of word `t / 32`, for
/// `ceil(len / 32)` words. EOS bits are set iff the input so far is a complete document.
pub fn mask(state: &GlrState, tokens: &SortedTokens) -> Vec<u32> {
    let mut out = vec![0u32; tokens.vocab_len.div_ceil(32)];
    let mut stack: Vec<Option<GlrState>> = vec![Some(state.clone())];
    let mut prev: &[u8] = &[];
    for (bytes, id) in &tokens.entries {
        let lcp = prev
            .iter()
            .zip(bytes.iter())
            .take_while(|(a, b)| a == b)
            .count();
        stack.truncate(lcp + 1);
        for d in lcp..bytes.len() {
            let next = match &stack[d] {
                Some(s) => s.advance(&bytes[d..d + 1]).ok(),
                None => None,
            };
            stack.push(next);
        }
        if let Some(s) = &stack[bytes.len()] {
            if s.is_viable() {
                out[id.index() / 32] |= 1 << (id.index() % 32);
            }
        }
        prev = bytes;
    }
    if state.is_accepting() {
        for id in &tokens.eos {
            out[id.index() / 32] |= 1 << (id.index() % 32);
        }
    }
    out
}

/// Exact masks by a walk of the vocabulary's tries through the recognizer (see the
/// module docs), for one grammar's tables.
///
/// A walk carries, per trie node, the configurations its prefix leaves as (lexer
/// position, *lineage*): a lineage is a set of GSS heads met in this walk, numbered, with
/// what is known about it. Inside a lexeme only the lexer moves, so a byte costs a table
/// read per configuration; where a lexeme closes, its emission from a lineage is made once
/// per walk (and remembered with the heads, as a commit remembers it). Configurations at
/// one position merge their lineages, as [`GlrState::advance`] merges their heads, so the
/// walk reads exactly what the recognizer would read token by token. A pending lexeme
/// whose state loops, emitting nothing, on every byte below a node (inside a string,
/// usually) leaves every token of the subtree where it leaves the node: one viability
/// check settles them all; one that steps to a new state per character (a string
/// counted by `maxLength`) settles them by counting (`counts_below`), and one that is
/// not viable is dropped (nothing below it is). Behind an indenter, the walk steps a
/// recognizer state per trie node instead.
#[derive(Debug)]
pub struct VocabWalk {
    tables: Arc<Tables>,
    /// Per explicit lexer state, the byte categories on every byte of which it loops,
    /// with [`CHARS_LOOP`] and [`LOOPS_DONE`] (0: not computed yet).
    loops: Vec<AtomicU64>,
    /// Per explicit lexer state as a boundary, the byte categories on every byte of which
    /// the boundary dies, with [`LOOPS_DONE`] (0: not computed yet).
    dies: Vec<AtomicU64>,
    /// Per counted-run template state, as [`Self::loops`] but read in the collapsed table,
    /// where a run is one layer looping on itself (see [`Self::loops_below`]).
    run_loops: Vec<AtomicU64>,
    /// Per explicit lexer state, the ASCII byte categories every byte of which leads it
    /// to [`STEP_BYTE`]'s successor, with [`CHARS_LOOP`] when every multi-byte character
    /// leads it to [`STEP_CHAR`]'s (both pending states emitting nothing), and
    /// [`LOOPS_DONE`] (see [`Self::counts_below`]).
    steps: Vec<AtomicU64>,
    /// Per explicit lexer state as a pending lexeme, the byte categories on every byte of
    /// which it dies, with [`LOOPS_DONE`].
    stops: Vec<AtomicU64>,
    /// Per counted-run template state, as [`Self::steps`] but read in the collapsed table.
    run_steps: Vec<AtomicU64>,
}

/// What [`VocabWalk::counts_below`] settles of a subtree.
enum Counted {
    /// Nothing: the walk goes on below.
    Open,
    /// Every token is allowed but those holding a byte of the `kills` categories.
    All { kills: u64 },
    /// The tokens of at most `chars` characters past the node are allowed but those
    /// holding a byte of the `kills` categories, the others not.
    UpTo { chars: usize, kills: u64 },
}

/// The byte whose successor a counting state's step is measured by: a string body's
/// letters, digits and most punctuation all lead where it does.
const STEP_BYTE: u8 = b'a';
/// The character (é, in UTF-8) whose successor a counting state's step through
/// multi-byte characters is measured by.
const STEP_CHAR: [u8; 2] = [0xc3, 0xa9];

/// In a [`VocabWalk::loops`] word: every well-formed multi-byte character leads the state
/// back to itself through states that emit nothing.
const CHARS_LOOP: u64 = 1 << 62;
/// In a [`VocabWalk::loops`] word: computed.
const LOOPS_DONE: u64 = 1 << 63;
/// Every byte category.
const ALL_CATEGORIES: u64 = (1 << NUM_CATEGORIES) - 1;

/// A set of GSS heads met in one walk, with its memo.
struct Lineage {
    heads: Arc<[Arc<Node>]>,
    memo: Arc<HeadsMemo>,
}

/// Where a prefix leaves the recognizer: (lexer position, lineage), no two at one position.
type Live = SmallVec<[(LexPos, u32); 2]>;

/// One walk's lineages and what it learnt of them.
struct Lineages<'s> {
    state: &'s GlrState,
    all: Vec<Lineage>,
    /// (lineage, lexer state) → the lineage after the state's emission (`u32::MAX`: no
    /// stack takes it).
    emitted: HashMap<(u32, u32), u32>,
    /// (lineage, lineage), the smaller first → their merge.
    merged: HashMap<(u32, u32), u32>,
    /// (lineage, position) → whether a configuration there is viable.
    viable: HashMap<(u32, LexPos), bool>,
}

impl<'s> Lineages<'s> {
    fn push(&mut self, heads: Arc<[Arc<Node>]>, memo: Arc<HeadsMemo>) -> u32 {
        self.all.push(Lineage { heads, memo });
        (self.all.len() - 1) as u32
    }

    /// The lineage after lexeme state `q`'s emission from lineage `l`, if some stack
    /// takes it.
    fn emit(&mut self, l: u32, q: LexStateId) -> Option<u32> {
        if let Some(&e) = self.emitted.get(&(l, q.as_u32())) {
            return (e != u32::MAX).then_some(e);
        }
        let terms = self.state.tables().lexer.emits(q);
        let from = &self.all[l as usize];
        let (heads, memo) = self.state.emit_on(&from.heads, &from.memo, terms);
        let e = if heads.is_empty() {
            u32::MAX
        } else {
            self.push(heads, memo)
        };
        self.emitted.insert((l, q.as_u32()), e);
        (e != u32::MAX).then_some(e)
    }

    /// The lineage holding the stacks of both `a` and `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == b {
            return a;
        }
        let key = (a.min(b), a.max(b));
        if let Some(&m) = self.merged.get(&key) {
            return m;
        }
        let heads = merge_heads(
            self.all[a as usize]
                .heads
                .iter()
                .chain(self.all[b as usize].heads.iter())
                .cloned(),
        );
        let m = self.push(Arc::from(heads.as_slice()), Arc::default());
        self.merged.insert(key, m);
        m
    }

    /// Whether a configuration at `pos` on lineage `l` is viable.
    fn viable(&mut self, pos: LexPos, l: u32) -> bool {
        if let Some(&v) = self.viable.get(&(l, pos)) {
            return v;
        }
        let lin = &self.all[l as usize];
        let v = self.state.viable_on(pos, &lin.heads, &lin.memo);
        self.viable.insert((l, pos), v);
        v
    }

    /// Adds (`pos`, `l`) to `live`, merging with the configuration already at `pos`.
    fn add(&mut self, live: &mut Live, pos: LexPos, l: u32) {
        match live.iter().position(|&(p, _)| p == pos) {
            Some(i) => live[i].1 = self.merge(live[i].1, l),
            None => live.push((pos, l)),
        }
    }
}

impl VocabWalk {
    /// A walk over `tables`; what it learns of the lexer is kept for later masks.
    pub fn new(tables: Arc<Tables>) -> Self {
        let words = || {
            (0..tables.lexer.num_states())
                .map(|_| AtomicU64::new(0))
                .collect()
        };
        Self {
            loops: words(),
            dies: words(),
            run_loops: words(),
            steps: words(),
            stops: words(),
            run_steps: words(),
            tables,
        }
    }

    /// The tables this walk reads.
    pub fn tables(&self) -> &Arc<Tables> {
        &self.tables
    }

    /// The allowed tokens of `vocab` after `state` (a state of this walk's tables), in the
    /// standard layout: bit `t % 32` of word `t / 32`, for `ceil(len / 32)` words. EOS bits
    /// are set iff the input so far is a complete document.
    pub fn mask(&self, state: &GlrState, vocab: &Vocab) -> Vec<u32> {
        let parts = vocab.parts();
        // The walks decide tokens by ordinal, where a subtree's tokens are a range.
        let mut ords = vec![0u64; parts.len().div_ceil(64)];
        if self.tables.indenter.is_some() {
            stepped(state, parts, &mut ords);
        } else {
            self.walk(state, parts, &mut ords);
        }
        let mut out = by_id(vocab, &ords);
        if state.is_accepting() {
            for id in vocab.eos() {
                out[id.index() / 32] |= 1 << (id.index() % 32);
            }
        }
        out
    }

    fn walk(&self, state: &GlrState, parts: &TokenParts, out: &mut [u64]) {
        let lx = &self.tables.lexer;
        let mut lin = Lineages {
            state,
            all: Vec::with_capacity(16),
            emitted: HashMap::new(),
            merged: HashMap::new(),
            viable: HashMap::new(),
        };
        // live[d]: the configurations the current path's prefix of `d` bytes leaves.
        let mut live: Vec<Live> = vec![Live::new(); parts.longest() + 1];
        // path[d]: the byte categories of that prefix.
        let mut path = vec![0u64; parts.longest() + 1];
        for c in state.configs() {
            let l = lin.push(c.heads.clone(), c.memo.clone());
            let roots = &mut live[0];
            lin.add(roots, c.pos, l);
        }
        for j in 0..parts.num_parts() {
            let nodes = parts.part_nodes(j);
            let mut n = nodes.start;
            while n < nodes.end {
                let d = parts.depth(n);
                let (above, here) = live.split_at_mut(d);
                let (parent, cur) = (&above[d - 1], &mut here[0]);
                cur.clear();
                let b = parts.byte(n);
                path[d] = path[d - 1] | 1 << byte_category(b);
                // `GlrState::advance`'s byte step, on lineages.
                for &(pos, l) in parent {
                    let q1 = match pos {
                        LexPos::Pending(q) => lx.next(q, b),
                        LexPos::Boundary(p) => lx.boundary_next(p, b),
                    };
                    if lx.is_dead(q1) {
                        continue;
                    }
                    if lx.can_extend(q1) {
                        lin.add(cur, LexPos::Pending(q1), l);
                    }
                    if lx.emits(q1).is_empty() {
                        continue;
                    }
                    if let Some(e) = lin.emit(l, q1) {
                        lin.add(cur, LexPos::Boundary(lx.inhibitor(q1)), e);
                    }
                }
                // Pending lexemes that loop on every byte below settle the subtree.
                let below = parts.below(n);
                if below != 0 {
                    let mut i = 0;
                    while i < cur.len() {
                        let (pos, l) = cur[i];
                        let LexPos::Pending(q) = pos else {
                            i += 1;
                            continue;
                        };
                        // A pending lexeme's follow set only shrinks as it grows (each
                        // terminal it may complete into, it could complete into before),
                        // so below a configuration that is not viable, none is.
                        if !lin.viable(pos, l) {
                            cur.remove(i);
                            continue;
                        }
                        if !self.loops_below(q, parts, n) {
                            match self.counts_below(&mut lin, q, l, parts, n, path[d]) {
                                Counted::Open => i += 1,
                                Counted::All { kills: 0 } => {
                                    allow(parts.subtree_tokens(n), out);
                                    cur.remove(i);
                                }
                                Counted::All { kills } => {
                                    let every = parts.no_more_chars_than(usize::MAX);
                                    allow_among(parts, n, every, kills, out);
                                    cur.remove(i);
                                }
                                Counted::UpTo { chars, kills } => {
                                    let short = parts.no_more_chars_than(parts.chars_to(n) + chars);
                                    allow_among(parts, n, short, kills, out);
                                    cur.remove(i);
                                }
                            }
                            continue;
                        }
                        allow(parts.subtree_tokens(n), out);
                        cur.remove(i);
                    }
                }
                // Configurations that every byte below leaves as they are (a lexeme that
                // loops, with its emission, whose boundary the next byte kills) settle
                // the subtree too: an identifier's, a number's.
                if below != 0 && !cur.is_empty() && self.closed(&mut lin, cur, below) {
                    if cur.iter().any(|&(pos, l)| lin.viable(pos, l)) {
                        allow(parts.subtree_tokens(n), out);
                    }
                    cur.clear();
                }
                let ending = parts.ending_at(n);
                if !ending.is_empty() && cur.iter().any(|&(pos, l)| lin.viable(pos, l)) {
                    allow(ending, out);
                }
                n = if cur.is_empty() {
                    parts.subtree_end(n)
                } else {
                    n + 1
                };
            }
        }
    }

    /// Whether every byte of the categories `below` steps `live` to `live` itself: each
    /// pending state loops on them, with its emission (if some stack takes it) among
    /// `live`; each boundary dies on them and is one of those emissions.
    fn closed(&self, lin: &mut Lineages<'_>, live: &Live, below: u64) -> bool {
        let lx = &self.tables.lexer;
        let mut emitted = 0;
        for &(pos, l) in live {
            match pos {
                LexPos::Pending(q) => {
                    if below & !self.word(&self.loops, q, |q| self.loop_categories(q)) != 0 {
                        return false;
                    }
                    if lx.emits(q).is_empty() {
                        continue;
                    }
                    if let Some(e) = lin.emit(l, q) {
                        let to = (LexPos::Boundary(lx.inhibitor(q)), e);
                        if !live.contains(&to) {
                            return false;
                        }
                        emitted += 1;
                    }
                }
                LexPos::Boundary(p) => {
                    if below & !self.word(&self.dies, p, |p| self.dying_categories(p)) != 0 {
                        return false;
                    }
                }
            }
        }
        // Every boundary is a pending lexeme's emission (distinct pending states
        // inhibit distinct boundaries), so none vanishes a byte further.
        emitted
            == live.len()
                - live
                    .iter()
                    .filter(|c| matches!(c.0, LexPos::Pending(_)))
                    .count()
    }

    /// `table`'s word for explicit state `q`, made by `make` on first use; 0 (no
    /// category) for ids past the explicit states.
    fn word(&self, table: &[AtomicU64], q: LexStateId, make: impl Fn(LexStateId) -> u64) -> u64 {
        let Some(slot) = table.get(q.index()) else {
            return 0;
        };
        let mut w = slot.load(Ordering::Relaxed);
        if w == 0 {
            w = make(q);
            slot.store(w, Ordering::Relaxed);
        }
        w & !LOOPS_DONE
    }

    /// [`VocabWalk::dies`]' word for boundary `p`.
    fn dying_categories(&self, p: LexStateId) -> u64 {
        let lx = &self.tables.lexer;
        let mut lives = 0u64;
        for b in 0..=255u8 {
            if !lx.is_dead(lx.boundary_next(p, b)) {
                lives |= 1 << byte_category(b);
            }
        }
        LOOPS_DONE | (!lives & ALL_CATEGORIES)
    }

    /// Whether pending state `q` emits nothing and stays itself on every byte below
    /// trie node `n` (or on its ASCII bytes, and through every character when the
    /// subtree continues with whole characters only).
    ///
    /// A counted run's state (a template or a later iteration) changes with every unit
    /// it reads, but within [`crate::lexer::LexerDfa::count_margin`] bytes it reads as its template
    /// does in the collapsed table: the invariant the mask automaton is built on. So when
    /// every token is that short, a template that loops there on every byte below leaves
    /// each token of the subtree in an iteration of itself, whose follow set, and so
    /// viability, is the template's.
    fn loops_below(&self, q: LexStateId, parts: &TokenParts, n: usize) -> bool {
        let lx = &self.tables.lexer;
        if !lx.emits(q).is_empty() {
            return false;
        }
        let t = lx.rep(q);
        let l = if t.as_u32() >= lx.run_from() {
            if parts.longest() > lx.count_margin() as usize {
                return false;
            }
            self.word(&self.run_loops, t, |t| {
                self.categories_to(t, t, |s, b| lx.next_rep(s, b))
            })
        } else {
            // Plain states (and virtual ids, whose word is 0: never here).
            self.word(&self.loops, q, |q| self.loop_categories(q))
        };
        let below = parts.below(n);
        below & !l == 0
            || (l & CHARS_LOOP != 0
                && below & ascii_categories() & !l == 0
                && parts.whole_chars_below(n))
    }

    /// What pending state `q` (emitting nothing) on lineage `l` makes of node `n`'s
    /// subtree by stepping (`path`: the categories of the bytes up to `n`). Each state
    /// `s` met has a step: the ASCII bytes that all lead it to where [`STEP_BYTE`] does,
    /// and whether every multi-byte character leads it to where [`STEP_CHAR`] does,
    /// both pending states emitting nothing. Some categories below may instead kill
    /// every state met (a string's control characters): the tokens holding them are
    /// refused. While the other bytes below (characters, when the subtree continues
    /// with whole ones) are all such steps, the states a token of `k` characters past
    /// `n` may end in are the `k`-th set of these chains (a string counted by
    /// `maxLength` has one chain, two while another terminal, a `format`'s, is ASCII
    /// only). If every set up to [`TokenParts::height`] is viable, every token is
    /// allowed; if the chain reaches a set that is not viable, or a state that every
    /// byte below kills, the tokens short of it are.
    fn counts_below(
        &self,
        lin: &mut Lineages<'_>,
        q: LexStateId,
        l: u32,
        parts: &TokenParts,
        n: usize,
        path: u64,
    ) -> Counted {
        let lx = &self.tables.lexer;
        let below = parts.below(n);
        if below & !ascii_categories() != 0 && !parts.whole_chars_below(n) {
            return Counted::Open;
        }
        let step = |s: LexStateId| {
            let t = lx.rep(s);
            if t.as_u32() >= lx.run_from() {
                self.word(&self.run_steps, t, |t| {
                    self.step_categories(t, |s, b| lx.next_rep(s, b))
                })
            } else {
                self.word(&self.steps, s, |s| {
                    self.step_categories(s, |s, b| lx.next(s, b))
                })
            }
        };
        // Only explicit states have a stop word (0 for the others: nothing kills).
        let stops = |s: LexStateId| self.word(&self.stops, s, |s| self.stop_categories(s));
        // Below whole characters, a continuation byte comes inside a character, after a
        // lead byte of its own: it kills where that lead byte does.
        let mut kills = below & stops(q) & !(1 << CONTINUATION);
        if kills & 1 << LEAD != 0 {
            kills |= below & 1 << CONTINUATION;
        }
        // A token holding a killing category on the way to `n` cannot be told apart.
        if kills & path != 0 {
            return Counted::Open;
        }
        let rest = below & !kills;
        let ascii_rest = rest & ascii_categories();
        let ascii = ascii_rest == rest;
        let mut set: SmallVec<[LexStateId; 4]> = smallvec::smallvec![q];
        for k in 0..parts.height(n) {
            let mut next: SmallVec<[LexStateId; 4]> = SmallVec::new();
            for &s in &set {
                let w = step(s);
                let fits = ascii_rest & !w == 0 && (ascii || w & CHARS_LOOP != 0);
                if !fits || kills & !stops(s) & !(1 << CONTINUATION) != 0 {
                    if set.len() > 1 || k == 0 || below & !stops(s) != 0 {
                        return Counted::Open;
                    }
                    return Counted::UpTo { chars: k, kills };
                }
                if ascii_rest != 0 {
                    next.push(lx.next(s, STEP_BYTE));
                }
                if !ascii {
                    next.push(lx.next(lx.next(s, STEP_CHAR[0]), STEP_CHAR[1]));
                }
            }
            next.sort_unstable();
            next.dedup();
            if next.len() > 4 {
                return Counted::Open;
            }
            // A lexeme's follow set only shrinks as it grows, so no token through a state
            // that is not viable is: if none of the set is, the tokens stop short of it.
            let viable = next
                .iter()
                .filter(|&&s| lin.viable(LexPos::Pending(s), l))
                .count();
            if viable == 0 {
                return Counted::UpTo { chars: k, kills };
            }
            if viable < next.len() {
                return Counted::Open;
            }
            set = next;
        }
        Counted::All { kills }
    }

    /// [`VocabWalk::stops`]' word for pending state `q`.
    fn stop_categories(&self, q: LexStateId) -> u64 {
        let lx = &self.tables.lexer;
        let mut lives = 0u64;
        for b in 0..=255u8 {
            if !lx.is_dead(lx.next(q, b)) {
                lives |= 1 << byte_category(b);
            }
        }
        LOOPS_DONE | (!lives & ALL_CATEGORIES)
    }

    /// [`VocabWalk::loops`]' word for `q`: the categories every byte of which `q` loops
    /// on, and whether every character leads back to `q` emitting nothing on the way.
    fn loop_categories(&self, q: LexStateId) -> u64 {
        let lx = &self.tables.lexer;
        self.categories_to(q, q, |s, b| lx.next(s, b))
    }

    /// [`VocabWalk::steps`]' word for `q` by `next` (the exact transitions, or for a
    /// counted run's template the collapsed table's: bytes that lead the template to
    /// one state there lead each iteration to one state).
    fn step_categories(&self, q: LexStateId, next: impl Fn(LexStateId, u8) -> LexStateId) -> u64 {
        let lx = &self.tables.lexer;
        let pending = |t: LexStateId| !lx.is_dead(t) && lx.emits(t).is_empty() && lx.can_extend(t);
        let mut w = LOOPS_DONE;
        let a = next(q, STEP_BYTE);
        if pending(a) {
            w |= self.categories_to(q, a, &next) & ascii_categories();
        }
        let u = next(next(q, STEP_CHAR[0]), STEP_CHAR[1]);
        if pending(u) && self.chars_to(q, u, &next) {
            w |= CHARS_LOOP;
        }
        w
    }

    /// The categories every byte of which leads `q` to `to` by `next` (the exact
    /// transitions, or the collapsed table's for a counted run's template), with
    /// [`CHARS_LOOP`] when every multi-byte character leads there too through states
    /// that emit nothing, and [`LOOPS_DONE`].
    fn categories_to(
        &self,
        q: LexStateId,
        to: LexStateId,
        next: impl Fn(LexStateId, u8) -> LexStateId,
    ) -> u64 {
        let mut leaves = 0u64;
        for b in 0..=255u8 {
            if next(q, b) != to {
                leaves |= 1 << byte_category(b);
            }
        }
        let mut v = LOOPS_DONE | (!leaves & ALL_CATEGORIES);
        if self.chars_to(q, to, &next) {
            v |= CHARS_LOOP;
        }
        v
    }

    /// Whether every well-formed multi-byte character leads `q` to `to` by `next`
    /// through states that emit nothing.
    fn chars_to(
        &self,
        q: LexStateId,
        to: LexStateId,
        next: impl Fn(LexStateId, u8) -> LexStateId,
    ) -> bool {
        let lx = &self.tables.lexer;
        // Every (decoder state, lexer state) pair reachable inside a character.
        let mut seen: SmallVec<[(u8, LexStateId); 16]> = SmallVec::new();
        let mut todo: SmallVec<[(u8, LexStateId); 16]> = smallvec::smallvec![(Utf8::BETWEEN, q)];
        let mut chars = true;
        'search: while let Some((u, s)) = todo.pop() {
            for b in 0x80..=0xffu8 {
                let u2 = Utf8::step(u, b);
                if u2 == 0 {
                    continue;
                }
                let s2 = next(s, b);
                if u2 == Utf8::BETWEEN {
                    if s2 != to {
                        chars = false;
                        break 'search;
                    }
                } else if lx.is_dead(s2) || !lx.emits(s2).is_empty() || !lx.can_extend(s2) {
                    chars = false;
                    break 'search;
                } else if !seen.contains(&(u2, s2)) {
                    seen.push((u2, s2));
                    todo.push((u2, s2));
                }
            }
        }
        chars
    }
}

/// The category of UTF-8 continuation bytes.
const CONTINUATION: u32 = byte_category(0x80);
/// The category of the other non-ASCII bytes (lead bytes, and those never in UTF-8).
const LEAD: u32 = byte_category(0xc0);

/// The ASCII byte categories.
fn ascii_categories() -> u64 {
    ALL_CATEGORIES & !(1 << CONTINUATION) & !(1 << LEAD)
}

/// Sets the bits of ordinals `ords`, a word at a time.
fn allow(ords: std::ops::Range<usize>, out: &mut [u64]) {
    let (mut o, end) = (ords.start, ords.end);
    while o < end {
        let (w, b) = (o / 64, o % 64);
        let n = (64 - b).min(end - o);
        let bits = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << b
        };
        out[w] |= bits;
        o += n;
    }
}

/// Sets the ordinals of node `n`'s subtree that `among` holds and that hold no byte of
/// the `kills` categories.
fn allow_among(parts: &TokenParts, n: usize, among: &[u64], kills: u64, out: &mut [u64]) {
    let ords = parts.subtree_tokens(n);
    let (mut o, end) = (ords.start, ords.end);
    let mut killers: SmallVec<[&[u64]; 8]> = SmallVec::new();
    let mut k = kills;
    while k != 0 {
        killers.push(parts.holding(k.trailing_zeros()));
        k &= k - 1;
    }
    while o < end {
        let (w, b) = (o / 64, o % 64);
        let n = (64 - b).min(end - o);
        let mut bits = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << b
        };
        for h in &killers {
            bits &= !h[w];
        }
        out[w] |= bits & among[w];
        o += n;
    }
}

/// [`Vocab::derived`] key of every mask token's bit by id.
const EVERY_TOKEN_KEY: u64 = u64::from_le_bytes(*b"everytok");

/// The mask by id of the tokens whose ordinals `ords` holds: the allowed ids set, or,
/// when more than half are allowed (inside a string, mostly), every token's id set and
/// the others cleared, so that the cost is the smaller side's.
fn by_id(vocab: &Vocab, ords: &[u64]) -> Vec<u32> {
    let parts = vocab.parts();
    let words = vocab.len().div_ceil(32);
    let allowed: usize = ords.iter().map(|w| w.count_ones() as usize).sum();
    let flip = |id: usize, out: &mut [u32]| out[id / 32] ^= 1 << (id % 32);
    if allowed * 2 <= parts.len() {
        let mut out = vec![0u32; words];
        for_each_one(ords, |o| flip(parts.id(o).index(), &mut out));
        return out;
    }
    let mut out = vocab
        .derived(EVERY_TOKEN_KEY, || every_token(parts, words))
        .to_vec();
    let (full, tail) = (parts.len() / 64, parts.len() % 64);
    let last = (tail > 0).then(|| !ords[full] & ((1u64 << tail) - 1));
    let zeros = ords[..full].iter().map(|w| !w).chain(last);
    for (i, mut w) in zeros.enumerate() {
        while w != 0 {
            flip(
                parts.id(i * 64 + w.trailing_zeros() as usize).index(),
                &mut out,
            );
            w &= w - 1;
        }
    }
    out
}

/// Calls `f` with the index of every set bit of `words`.
fn for_each_one(words: &[u64], mut f: impl FnMut(usize)) {
    for (i, &w) in words.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            f(i * 64 + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
}

/// The mask by id of every token of `parts`, `words` words long.
fn every_token(parts: &TokenParts, words: usize) -> Box<[u32]> {
    let mut out = vec![0u32; words];
    for &id in parts.ids() {
        out[id.index() / 32] |= 1 << (id.index() % 32);
    }
    out.into_boxed_slice()
}

/// The walk behind an indenter: a recognizer state per trie node
/// ([`GlrState::advance`]), a dead prefix's subtree skipped.
fn stepped(state: &GlrState, parts: &TokenParts, out: &mut [u64]) {
    let mut at: Vec<Option<GlrState>> = vec![None; parts.longest() + 1];
    at[0] = Some(state.clone());
    for j in 0..parts.num_parts() {
        let nodes = parts.part_nodes(j);
        let mut n = nodes.start;
        while n < nodes.end {
            let d = parts.depth(n);
            let next = at[d - 1]
                .as_ref()
                .and_then(|s| s.advance(&[parts.byte(n)]).ok());
            if let Some(s) = &next {
                if !parts.ending_at(n).is_empty() && s.is_viable() {
                    allow(parts.ending_at(n), out);
                }
            }
            let dead = next.is_none();
            at[d] = next;
            n = if dead { parts.subtree_end(n) } else { n + 1 };
        }
    }
}

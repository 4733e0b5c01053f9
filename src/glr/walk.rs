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
/// check settles them all. Behind an indenter, the walk steps a recognizer state per
/// trie node instead.
#[derive(Debug)]
pub struct VocabWalk {
    tables: Arc<Tables>,
    /// Per explicit lexer state, the byte categories on every byte of which it loops,
    /// with [`CHARS_LOOP`] and [`LOOPS_DONE`] (0: not computed yet).
    loops: Vec<AtomicU64>,
    /// Per explicit lexer state as a boundary, the byte categories on every byte of which
    /// the boundary dies, with [`LOOPS_DONE`] (0: not computed yet).
    dies: Vec<AtomicU64>,
}

/// In a [`VocabWalk::loops`] word: every well-formed multi-byte character leads the state
/// back to itself through states that emit nothing.
const CHARS_LOOP: u64 = 1 << 62;
/// In a [`VocabWalk::loops`] word: computed.
const LOOPS_DONE: u64 = 1 << 63;
/// Every byte category.
const ALL_CATEGORIES: u64 = (1 << NUM_CATEGORIES) - 1;

/// A set of GSS heads met in one walk, with its memo and its viability by position.
struct Lineage {
    heads: Arc<[Arc<Node>]>,
    memo: Arc<HeadsMemo>,
    viable: SmallVec<[(LexPos, bool); 2]>,
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
}

impl<'s> Lineages<'s> {
    fn push(&mut self, heads: Arc<[Arc<Node>]>, memo: Arc<HeadsMemo>) -> u32 {
        self.all.push(Lineage {
            heads,
            memo,
            viable: SmallVec::new(),
        });
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
        let lin = &mut self.all[l as usize];
        if let Some(&(_, v)) = lin.viable.iter().find(|(p, _)| *p == pos) {
            return v;
        }
        let v = self.state.viable_on(pos, &lin.heads, &lin.memo);
        lin.viable.push((pos, v));
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
        };
        // live[d]: the configurations the current path's prefix of `d` bytes leaves.
        let mut live: Vec<Live> = vec![Live::new(); parts.longest() + 1];
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
                        if !self.loops_below(q, parts, n) {
                            i += 1;
                            continue;
                        }
                        if lin.viable(pos, l) {
                            allow(parts.subtree_tokens(n), out);
                        }
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
    fn loops_below(&self, q: LexStateId, parts: &TokenParts, n: usize) -> bool {
        // Ids past the explicit states (a counted run's iterations) change per byte:
        // their word is 0.
        if !self.tables.lexer.emits(q).is_empty() {
            return false;
        }
        let l = self.word(&self.loops, q, |q| self.loop_categories(q));
        let below = parts.below(n);
        below & !l == 0
            || (l & CHARS_LOOP != 0
                && below & ascii_categories() & !l == 0
                && parts.whole_chars_below(n))
    }

    /// [`VocabWalk::loops`]' word for `q`: the categories every byte of which `q` loops
    /// on, and whether every character leads back to `q` emitting nothing on the way.
    fn loop_categories(&self, q: LexStateId) -> u64 {
        let lx = &self.tables.lexer;
        let mut leaves = 0u64;
        for b in 0..=255u8 {
            if lx.next(q, b) != q {
                leaves |= 1 << byte_category(b);
            }
        }
        let mut v = LOOPS_DONE | (!leaves & ALL_CATEGORIES);
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
                let s2 = lx.next(s, b);
                if u2 == Utf8::BETWEEN {
                    if s2 != q {
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
        if chars {
            v |= CHARS_LOOP;
        }
        v
    }
}

/// The ASCII byte categories.
fn ascii_categories() -> u64 {
    ALL_CATEGORIES & !(1 << byte_category(0x80)) & !(1 << byte_category(0xc0))
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

//! Pass: vocabulary × lexer → terminal tries, the tokenizer side of the mask automaton
//! (DESIGN.md §3, piece 1; GreatGramma's realizable terminal sequences).
//!
//! From a lexer position, a token's bytes lex deterministically (maximal munch) into a
//! sequence of closed lexemes and a final pending lexeme. Its outcomes are: the closed
//! lexemes with the lexer still growing the last one (`Pending(q)`), and, if that lexeme
//! is complete, the closed lexemes plus it, at a boundary inhibited by it
//! (`Boundary(q)`). A trie over lexeme emissions (the set of terminals a lexeme is emitted
//! as, interned as an [`EmitId`]) groups tokens by outcome: node weights are token sets
//! keyed by the lexer position after the token. Tokens are walked in byte order so common
//! prefixes are lexed once; tokens are never lexed into terminal sequences the lexer
//! cannot produce, so only realizable sequences exist.
//!
//! A token's outcomes depend only on the state its first byte leads to, so the tokens
//! sharing a first byte are lexed once per state they can enter and grafted into every
//! position's trie ([`build_tries`]): schemas whose key literals overlap the generic
//! string have dozens of positions that differ from it on one byte.

use hashbrown::HashMap;
use rayon::prelude::*;
use roaring::RoaringBitmap;

use crate::ids::{LexStateId, TerminalId, TokenId};
use crate::lexer::{LexPos, LexerDfa};
use crate::vocab::Vocab;

/// An interned lexeme emission: the sorted terminals one lexeme is emitted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EmitId(pub u32);

/// The emissions of a lexer: state → emitted set, interned.
#[derive(Debug, Clone, Default)]
pub struct EmitTable {
    sets: Vec<Vec<TerminalId>>,
    by_state: Vec<Option<EmitId>>,
}

impl EmitTable {
    /// Interns the emission of every lexer state that emits something.
    pub fn new(lexer: &LexerDfa) -> Self {
        let mut sets: Vec<Vec<TerminalId>> = Vec::new();
        let mut index: HashMap<Vec<TerminalId>, EmitId> = HashMap::new();
        let by_state = (0..lexer.num_states())
            .map(|q| {
                let e = lexer.emits(LexStateId::new(q));
                if e.is_empty() {
                    return None;
                }
                Some(*index.entry(e.to_vec()).or_insert_with(|| {
                    sets.push(e.to_vec());
                    EmitId(sets.len() as u32 - 1)
                }))
            })
            .collect();
        Self { sets, by_state }
    }

    /// The emission of state `q`, if its lexeme is complete.
    pub fn of_state(&self, q: LexStateId) -> Option<EmitId> {
        self.by_state[q.index()]
    }

    /// The emission with exactly these (sorted) terminals, if some state emits it.
    pub fn id_of(&self, terms: &[TerminalId]) -> Option<EmitId> {
        self.sets
            .iter()
            .position(|s| s == terms)
            .map(|i| EmitId(i as u32))
    }

    /// The terminals of an emission.
    pub fn terminals(&self, e: EmitId) -> &[TerminalId] {
        &self.sets[e.0 as usize]
    }
}

/// One trie node: lexeme emissions lead to children; `finals` are the tokens whose bytes
/// end here, by lexer position after the token.
#[derive(Debug, Clone, Default)]
pub struct TrieNode {
    /// `(emission, child node)`, sorted by emission.
    pub children: Vec<(EmitId, u32)>,
    /// Tokens ending at this node, by the lexer position they leave.
    pub finals: Vec<(LexPos, RoaringBitmap)>,
}

/// The terminal trie of one start position. Node 0 is the root (no lexeme emitted yet).
#[derive(Debug, Clone)]
pub struct TerminalTrie {
    /// Where the tokens start.
    pub start: LexPos,
    /// The nodes.
    pub nodes: Vec<TrieNode>,
}

impl TerminalTrie {
    /// The node reached by a sequence of emissions from the root.
    pub fn walk(&self, path: &[EmitId]) -> Option<usize> {
        let mut n = 0usize;
        for e in path {
            let c = &self.nodes[n].children;
            let i = c.binary_search_by_key(e, |(x, _)| *x).ok()?;
            n = c[i].1 as usize;
        }
        Some(n)
    }

    /// Replaces every final position by `canon(pos)`, merging the token sets of finals
    /// that then coincide at a node (sorted by position, so equal outcomes give equal
    /// nodes whatever the positions were before).
    pub fn canonicalize_finals(&mut self, canon: impl Fn(LexPos) -> LexPos) {
        for n in &mut self.nodes {
            if n.finals.is_empty() {
                continue;
            }
            let mut merged: Vec<(LexPos, RoaringBitmap)> = Vec::with_capacity(n.finals.len());
            for (p, set) in n.finals.drain(..) {
                let p = canon(p);
                match merged.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, s)) => *s |= set,
                    None => merged.push((p, set)),
                }
            }
            merged.sort_by_key(|(p, _)| *p);
            n.finals = merged;
        }
    }

    /// Every `(emission path, final position)` outcome of token `t` (for tests and
    /// debugging; linear in the trie size).
    pub fn outcomes_of(&self, t: TokenId) -> Vec<(Vec<EmitId>, LexPos)> {
        let mut out = Vec::new();
        let mut stack: Vec<(usize, Vec<EmitId>)> = vec![(0, Vec::new())];
        while let Some((n, path)) = stack.pop() {
            for (pos, set) in &self.nodes[n].finals {
                if set.contains(t.as_u32()) {
                    out.push((path.clone(), *pos));
                }
            }
            for (e, c) in &self.nodes[n].children {
                let mut p = path.clone();
                p.push(*e);
                stack.push((*c as usize, p));
            }
        }
        out.sort();
        out
    }
}

/// The normal tokens of a vocabulary in byte order (the vocabulary caches the order).
pub fn sorted_tokens(vocab: &Vocab) -> Vec<(&[u8], TokenId)> {
    vocab
        .byte_order()
        .iter()
        // Byte order lists normal tokens only, which all have bytes.
        .map(|&id| (vocab.token_bytes(id).unwrap_or(&[]), id))
        .collect()
}

/// Where a walk stands after some bytes of a token: the pending lexeme's state and the
/// trie node of the lexemes closed so far.
#[derive(Clone, Copy)]
struct Walk {
    q: LexStateId,
    node: u32,
}

#[derive(Default)]
struct Builder {
    nodes: Vec<TrieNode>,
    child_index: HashMap<(u32, EmitId), u32>,
    finals_index: HashMap<(u32, LexPos), usize>,
}

impl Builder {
    fn new() -> Self {
        Self {
            nodes: vec![TrieNode::default()],
            ..Default::default()
        }
    }

    fn child(&mut self, node: u32, e: EmitId) -> u32 {
        if let Some(&c) = self.child_index.get(&(node, e)) {
            return c;
        }
        let c = self.nodes.len() as u32;
        self.nodes.push(TrieNode::default());
        self.nodes[node as usize].children.push((e, c));
        self.child_index.insert((node, e), c);
        c
    }

    fn final_set(&mut self, node: u32, pos: LexPos) -> &mut RoaringBitmap {
        let i = match self.finals_index.get(&(node, pos)) {
            Some(&i) => i,
            None => {
                let f = &mut self.nodes[node as usize].finals;
                f.push((pos, RoaringBitmap::new()));
                self.finals_index.insert((node, pos), f.len() - 1);
                f.len() - 1
            }
        };
        &mut self.nodes[node as usize].finals[i].1
    }

    /// Adds a walked block's nodes and finals below the root (see [`build_tries`]):
    /// nodes in the block's creation order, so numbering matches walking its tokens here.
    fn graft(&mut self, block: &[TrieNode]) {
        let mut map = vec![0u32; block.len()];
        let mut parent: Vec<(u32, EmitId)> = vec![(0, EmitId(0)); block.len()];
        for (i, n) in block.iter().enumerate() {
            for &(e, c) in &n.children {
                parent[c as usize] = (i as u32, e);
            }
        }
        for c in 1..block.len() {
            let (p, e) = parent[c];
            // Children are created after their parent, so `map[p]` is already set.
            map[c] = self.child(map[p as usize], e);
        }
        for (i, n) in block.iter().enumerate() {
            for (pos, set) in &n.finals {
                *self.final_set(map[i], *pos) |= set;
            }
        }
    }

    fn finish(mut self, start: LexPos) -> TerminalTrie {
        for n in &mut self.nodes {
            n.children.sort();
        }
        TerminalTrie {
            start,
            nodes: self.nodes,
        }
    }
}

/// Lexes one block of tokens sharing their first byte, which has taken the lexer from
/// the start of the token to state `after_first` (not dead): the outcomes, relative to
/// the token's start, depend on nothing else.
fn walk_block(
    lexer: &LexerDfa,
    emits: &EmitTable,
    block: &[(&[u8], TokenId)],
    after_first: LexStateId,
) -> Vec<TrieNode> {
    let mut b = Builder::new();
    let step = |b: &mut Builder, w: Walk, byte: u8| -> Option<Walk> {
        let n = lexer.next(w.q, byte);
        if !lexer.is_dead(n) {
            return Some(Walk { q: n, node: w.node });
        }
        if w.q == LexerDfa::START {
            return None;
        }
        let e = emits.of_state(w.q)?;
        let node = b.child(w.node, e);
        let q = lexer.next(LexerDfa::START, byte);
        (!lexer.is_dead(q)).then_some(Walk { q, node })
    };
    let mut stack: Vec<Option<Walk>> = vec![
        None,
        Some(Walk {
            q: after_first,
            node: 0,
        }),
    ];
    let mut prev: &[u8] = block.first().map_or(&[], |(t, _)| &t[..1]);
    let mut i = 0;
    while i < block.len() {
        let (bytes, id) = block[i];
        // Every token of the block shares the first byte, so `lcp >= 1`.
        let lcp = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
        stack.truncate(lcp + 1);
        let mut dead_at = None;
        for d in lcp..bytes.len() {
            let next = stack[d].and_then(|w| step(&mut b, w, bytes[d]));
            stack.push(next);
            if next.is_none() && stack[d].is_some() {
                dead_at = Some(d + 1);
            }
        }
        if let Some(w) = stack[bytes.len()] {
            if lexer.can_extend(w.q) {
                b.final_set(w.node, LexPos::Pending(w.q))
                    .insert(id.as_u32());
            }
            if let Some(e) = emits.of_state(w.q) {
                let inhibitor = if lexer.can_extend(w.q) {
                    w.q
                } else {
                    LexerDfa::DEAD
                };
                let c = b.child(w.node, e);
                b.final_set(c, LexPos::Boundary(inhibitor))
                    .insert(id.as_u32());
            }
        }
        prev = bytes;
        i += 1;
        // Tokens are in byte order: every later token sharing the prefix that just died
        // is dead too, so the whole run is skipped.
        if let Some(k) = dead_at {
            let dead = &bytes[..k];
            i += block[i..].partition_point(|(t, _)| t.starts_with(dead));
        }
    }
    b.nodes
}

/// The lexer state a token's first byte `b` leads to from `start`, or `None` if no
/// token starting with `b` is viable there (a pending lexeme cannot take `b`; a boundary
/// inhibited by a lexeme that could take `b`; no lexeme starts with `b`).
fn after_first_byte(lexer: &LexerDfa, start: LexPos, b: u8) -> Option<LexStateId> {
    let n = match start {
        LexPos::Pending(q) => lexer.next(q, b),
        LexPos::Boundary(p) => {
            if !lexer.is_dead(lexer.next(p, b)) {
                return None;
            }
            lexer.next(LexerDfa::START, b)
        }
    };
    (!lexer.is_dead(n)).then_some(n)
}

/// Builds the terminal trie of tokens starting at `start`.
pub fn build_trie(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &[(&[u8], TokenId)],
    start: LexPos,
) -> TerminalTrie {
    build_tries(lexer, emits, tokens, &[start])
        .pop()
        .expect("one trie per position")
}

/// Builds the terminal tries of many start positions, sharing work between them.
///
/// Why this is fast: a token's outcomes from a position depend only on the lexer state
/// its first byte leads to, and most positions send most bytes to the same few states (a
/// key literal's prefix, also inside the generic string, leaves the literal on every
/// byte but one). So each block of tokens sharing a first byte is lexed once per state
/// it is entered in, and a position's trie is the graft of its 256 blocks.
pub fn build_tries(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &[(&[u8], TokenId)],
    positions: &[LexPos],
) -> Vec<TerminalTrie> {
    // Token ranges by first byte (tokens are in byte order and never empty).
    let mut blocks = [(0usize, 0usize); 256];
    let mut i = 0;
    while i < tokens.len() {
        let b = tokens[i].0[0];
        let end = i + tokens[i..].partition_point(|(t, _)| t[0] == b);
        blocks[b as usize] = (i, end);
        i = end;
    }
    let mut keys: Vec<(u8, LexStateId)> = positions
        .iter()
        .flat_map(|&p| {
            (0..=255u8).filter_map(move |b| {
                let (lo, hi) = blocks[b as usize];
                (lo < hi)
                    .then(|| after_first_byte(lexer, p, b))
                    .flatten()
                    .map(|n| (b, n))
            })
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let walked: Vec<Vec<TrieNode>> = keys
        .par_iter()
        .map(|&(b, n)| {
            let (lo, hi) = blocks[b as usize];
            walk_block(lexer, emits, &tokens[lo..hi], n)
        })
        .collect();
    positions
        .par_iter()
        .map(|&p| {
            let mut t = Builder::new();
            for b in 0..=255u8 {
                let (lo, hi) = blocks[b as usize];
                if lo == hi {
                    continue;
                }
                if let Some(n) = after_first_byte(lexer, p, b) {
                    // Every (byte, state) a position needs was collected above.
                    let k = keys.binary_search(&(b, n)).expect("block walked");
                    t.graft(&walked[k]);
                }
            }
            t.finish(p)
        })
        .collect()
}

/// Every lexer position a configuration can be in: the boundary with no inhibitor, the
/// boundary after each complete lexeme that could grow, and every growing lexeme.
pub fn start_positions(lexer: &LexerDfa) -> Vec<LexPos> {
    let mut out = vec![LexPos::Boundary(LexerDfa::DEAD)];
    for q in 2..lexer.num_states() {
        let q = LexStateId::new(q);
        if lexer.can_extend(q) {
            out.push(LexPos::Pending(q));
            if !lexer.emits(q).is_empty() {
                out.push(LexPos::Boundary(q));
            }
        }
    }
    out
}

/// The tries of every start position, built in parallel.
pub fn build_all(lexer: &LexerDfa, vocab: &Vocab) -> (EmitTable, Vec<TerminalTrie>) {
    let emits = EmitTable::new(lexer);
    let tokens = sorted_tokens(vocab);
    let tries = build_tries(lexer, &emits, &tokens, &start_positions(lexer));
    (emits, tries)
}

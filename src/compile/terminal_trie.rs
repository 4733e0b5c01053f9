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

struct Builder<'a> {
    lexer: &'a LexerDfa,
    emits: &'a EmitTable,
    nodes: Vec<TrieNode>,
    child_index: HashMap<(u32, EmitId), u32>,
    finals_index: HashMap<(u32, LexPos), usize>,
}

impl Builder<'_> {
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

    fn add_final(&mut self, node: u32, pos: LexPos, t: TokenId) {
        let i = match self.finals_index.get(&(node, pos)) {
            Some(&i) => i,
            None => {
                let f = &mut self.nodes[node as usize].finals;
                f.push((pos, RoaringBitmap::new()));
                self.finals_index.insert((node, pos), f.len() - 1);
                f.len() - 1
            }
        };
        self.nodes[node as usize].finals[i].1.insert(t.as_u32());
    }

    /// One byte; `first` says whether it is the token's first byte from `start`.
    fn step(&mut self, w: Walk, b: u8, first: Option<LexPos>) -> Option<Walk> {
        let lx = self.lexer;
        match first {
            Some(LexPos::Boundary(p)) if !lx.is_dead(lx.next(p, b)) => return None,
            Some(LexPos::Pending(q)) if lx.is_dead(lx.next(q, b)) => return None,
            _ => {}
        }
        let n = lx.next(w.q, b);
        if !lx.is_dead(n) {
            return Some(Walk { q: n, node: w.node });
        }
        if w.q == LexerDfa::START {
            return None;
        }
        let e = self.emits.of_state(w.q)?;
        let node = self.child(w.node, e);
        let q = lx.next(LexerDfa::START, b);
        (!lx.is_dead(q)).then_some(Walk { q, node })
    }

    fn finish(&mut self, w: Walk, t: TokenId) {
        let lx = self.lexer;
        if lx.can_extend(w.q) {
            self.add_final(w.node, LexPos::Pending(w.q), t);
        }
        if let Some(e) = self.emits.of_state(w.q) {
            let inhibitor = if lx.can_extend(w.q) {
                w.q
            } else {
                LexerDfa::DEAD
            };
            let c = self.child(w.node, e);
            self.add_final(c, LexPos::Boundary(inhibitor), t);
        }
    }
}

/// Builds the terminal trie of tokens starting at `start`.
pub fn build_trie(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &[(&[u8], TokenId)],
    start: LexPos,
) -> TerminalTrie {
    let mut b = Builder {
        lexer,
        emits,
        nodes: vec![TrieNode::default()],
        child_index: HashMap::new(),
        finals_index: HashMap::new(),
    };
    let q0 = match start {
        LexPos::Boundary(_) => LexerDfa::START,
        LexPos::Pending(q) => q,
    };
    let mut stack: Vec<Option<Walk>> = vec![Some(Walk { q: q0, node: 0 })];
    let mut prev: &[u8] = &[];
    let mut i = 0;
    while i < tokens.len() {
        let (bytes, id) = tokens[i];
        let lcp = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
        stack.truncate(lcp + 1);
        let mut dead_at = None;
        for d in lcp..bytes.len() {
            let next = stack[d].and_then(|w| b.step(w, bytes[d], (d == 0).then_some(start)));
            stack.push(next);
            if next.is_none() && stack[d].is_some() {
                dead_at = Some(d + 1);
            }
        }
        if let Some(w) = stack[bytes.len()] {
            b.finish(w, id);
        }
        prev = bytes;
        i += 1;
        // Tokens are in byte order: every later token sharing the prefix that just died
        // is dead too, so the whole block is skipped (most of the vocabulary, from most
        // positions).
        if let Some(k) = dead_at {
            let dead = &bytes[..k];
            i += tokens[i..].partition_point(|(t, _)| t.starts_with(dead));
        }
    }
    for n in &mut b.nodes {
        n.children.sort();
    }
    TerminalTrie {
        start,
        nodes: b.nodes,
    }
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
    let tries = start_positions(lexer)
        .into_par_iter()
        .map(|p| build_trie(lexer, &emits, &tokens, p))
        .collect();
    (emits, tries)
}

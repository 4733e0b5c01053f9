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

use crate::compile::dwa::position_equiv::classes_at_depths;
use crate::ids::{LexStateId, TerminalId, TokenId};
use crate::lexer::{Indenter, LexPos, LexerDfa, Tail};
use crate::vocab::{TokenParts, Vocab};

/// An interned lexeme emission: the sorted terminals one lexeme is emitted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EmitId(pub u32);

/// A pseudo-terminal in an emission's terminal list: the stacks may also stay as they
/// are, as an ignored terminal lets them. Only the skipped form of a droppable emission
/// ([`EmitTable::skipped`]) holds it; no lexer state emits it.
pub const STAY: TerminalId = TerminalId::from_u32(u32::MAX);

/// How a lexeme emitted with a droppable terminal behaves: the stacks take its terminals
/// where they can, and also stay as they were when no stack can take `terminal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropRule {
    /// The droppable terminal whose consumability decides.
    pub terminal: TerminalId,
    /// The emission with [`STAY`] added: what the lexeme does when it is dropped.
    pub skipped: EmitId,
}

/// The emissions of a lexer: state → emitted set, interned.
#[derive(Debug, Clone, Default)]
pub struct EmitTable {
    sets: Vec<Vec<TerminalId>>,
    by_state: Vec<Option<EmitId>>,
    /// Per emission, its rule when it holds a droppable terminal and no ignored one (an
    /// ignored one lets the stacks stay anyway).
    drops: Vec<Option<DropRule>>,
    /// An emission with two droppable terminals (the mask automaton refuses it).
    two_droppable: Option<EmitId>,
    /// Behind an indenter: the newline emissions and their tagged forms.
    newline: Option<NewlineEmits>,
}

/// Behind an indenter, a token's first lexeme, when it is a newline lexeme closed inside
/// the token, is emitted *tagged* with what the token's bytes up to its end say about its
/// indentation (a [`Tail`]): tokens whose newline lexemes indent differently are then
/// told apart by their tries. Tagged ids are computed, not interned: `base +
/// (index << 22) + (newline << 21) + width`, `index` the untagged emission's among
/// `emits`.
#[derive(Debug, Clone)]
struct NewlineEmits {
    /// Columns a tab counts.
    tab_len: u32,
    /// The emissions holding `nl`, by index.
    emits: Vec<EmitId>,
    /// Per emission, its index in `emits` (`u32::MAX`: none).
    index: Vec<u32>,
    /// Per index, the emission without `nl` (its other terminals; `None` when none).
    plain: Vec<Option<EmitId>>,
    /// The emission holding only [`STAY`].
    stay: EmitId,
    /// The first tagged id (past every interned emission).
    base: u32,
}

/// Widths from here on are not tagged (the emission stays untagged, which the automaton
/// leaves to the recognizer).
const MAX_TAGGED_WIDTH: u32 = (1 << 21) - 1;

/// The tag width of a newline lexeme that starts in the token and holds no newline (its
/// `_NL` reading dies).
pub const NO_NEWLINE: u32 = MAX_TAGGED_WIDTH - 1;

impl EmitTable {
    /// Interns the emission of every lexer state that emits something.
    pub fn new(lexer: &LexerDfa) -> Self {
        Self::with_indenter(lexer, None)
    }

    /// [`Self::new`], with the newline emissions of `indenter` tagged (see
    /// [`Self::tagged`]).
    pub fn with_indenter(lexer: &LexerDfa, indenter: Option<&Indenter>) -> Self {
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
        // Droppable emissions' skipped forms, interned after the lexer's own emissions.
        let mut drops = vec![None; sets.len()];
        let mut two_droppable = None;
        for i in 0..sets.len() {
            let terms = &sets[i];
            if terms.iter().any(|&t| lexer.is_ignored(t)) {
                continue;
            }
            let mut droppable = terms.iter().copied().filter(|&t| lexer.is_droppable(t));
            let Some(terminal) = droppable.next() else {
                continue;
            };
            if droppable.next().is_some() {
                two_droppable.get_or_insert(EmitId(i as u32));
                continue;
            }
            let mut skipped = terms.clone();
            skipped.push(STAY);
            sets.push(skipped);
            drops[i] = Some(DropRule {
                terminal,
                skipped: EmitId(sets.len() as u32 - 1),
            });
        }
        let newline = indenter.map(|ind| {
            let own = sets.len();
            let mut emits = Vec::new();
            let mut index = vec![u32::MAX; own];
            let mut rests = Vec::new();
            for (i, terms) in sets.iter().enumerate() {
                if !terms.contains(&ind.nl) {
                    continue;
                }
                index[i] = emits.len() as u32;
                emits.push(EmitId(i as u32));
                let rest: Vec<TerminalId> =
                    terms.iter().copied().filter(|&t| t != ind.nl).collect();
                rests.push(rest);
            }
            let mut intern = |terms: Vec<TerminalId>| match sets.iter().position(|s| *s == terms) {
                Some(i) => EmitId(i as u32),
                None => {
                    sets.push(terms);
                    EmitId(sets.len() as u32 - 1)
                }
            };
            let plain = rests
                .into_iter()
                .map(|rest| (!rest.is_empty()).then(|| intern(rest)))
                .collect();
            let stay = intern(vec![STAY]);
            NewlineEmits {
                tab_len: ind.tab_len,
                emits,
                index,
                plain,
                stay,
                base: sets.len() as u32,
            }
        });
        drops.resize(sets.len(), None);
        Self {
            sets,
            by_state,
            drops,
            two_droppable,
            newline,
        }
    }

    /// Behind an indenter: the tab width the tags count with.
    pub fn tab_len(&self) -> Option<u32> {
        self.newline.as_ref().map(|n| n.tab_len)
    }

    /// Whether emission `e` (tagged or not) holds the indenter's newline terminal.
    #[inline]
    pub fn is_newline(&self, e: EmitId) -> bool {
        self.newline.as_ref().is_some_and(|n| {
            e.0 >= n.base || n.index.get(e.0 as usize).is_some_and(|&i| i != u32::MAX)
        })
    }

    /// Newline emission `e` tagged with its lexeme's bytes `tail` (`e` itself when it is
    /// not a newline emission, or the width is past what tags hold). The lexeme is the
    /// token's `first`, whose bytes continue the configuration's pending ones, or starts
    /// in the token: then, without a newline of its own, it can never be `_NL` (tagged
    /// [`NO_NEWLINE`]).
    #[inline]
    pub fn tagged(&self, e: EmitId, tail: Tail, first: bool) -> EmitId {
        let Some(n) = &self.newline else { return e };
        let dead = Tail {
            width: NO_NEWLINE,
            newline: false,
        };
        let tail = if first || tail.newline { tail } else { dead };
        match n.index.get(e.0 as usize) {
            Some(&i) if i != u32::MAX && (tail.width < NO_NEWLINE || tail == dead) => {
                EmitId(n.base + (i << 22) + (u32::from(tail.newline) << 21) + tail.width)
            }
            _ => e,
        }
    }

    /// A tagged emission's untagged form and tag.
    #[inline]
    pub fn tag(&self, e: EmitId) -> Option<(EmitId, Tail)> {
        let n = self.newline.as_ref()?;
        let x = e.0.checked_sub(n.base)?;
        let tail = Tail {
            width: x & MAX_TAGGED_WIDTH,
            newline: (x >> 21) & 1 == 1,
        };
        Some((n.emits[(x >> 22) as usize], tail))
    }

    /// A newline emission (tagged or not) without the newline terminal: its other
    /// terminals, `None` when it has none.
    pub fn without_newline(&self, e: EmitId) -> Option<EmitId> {
        let n = self.newline.as_ref()?;
        let e = self.tag(e).map_or(e, |(u, _)| u);
        let i = *n.index.get(e.0 as usize)?;
        n.plain.get(i as usize).copied().flatten()
    }

    /// The emission holding only [`STAY`] (behind an indenter).
    pub fn stay(&self) -> Option<EmitId> {
        self.newline.as_ref().map(|n| n.stay)
    }

    /// The rule of emission `e` when it holds a droppable terminal (and no ignored one).
    #[inline]
    pub fn drop_rule(&self, e: EmitId) -> Option<DropRule> {
        self.drops.get(e.0 as usize).copied().flatten()
    }

    /// Some emission with two droppable terminals, if the lexer has one.
    pub fn two_droppable(&self) -> Option<EmitId> {
        self.two_droppable
    }

    /// The emission of state `q`, if its lexeme is complete.
    pub fn of_state(&self, q: LexStateId) -> Option<EmitId> {
        self.by_state[q.index()]
    }

    /// The emission with exactly these (sorted) terminals, if some state emits it.
    #[cfg(test)]
    pub fn id_of(&self, terms: &[TerminalId]) -> Option<EmitId> {
        self.sets
            .iter()
            .position(|s| s == terms)
            .map(|i| EmitId(i as u32))
    }

    /// The terminals of an emission.
    pub fn terminals(&self, e: EmitId) -> &[TerminalId] {
        let e = self.tag(e).map_or(e, |(u, _)| u);
        &self.sets[e.0 as usize]
    }
}

/// One trie node: lexeme emissions lead to children; `finals` are the tokens whose bytes
/// end here, by lexer position after the token. Tokens are held as sets `S`: token sets
/// (bitmaps) in tries over tokens, sorted atom lists in tries over atoms (a few atoms
/// each, where building bitmaps cost 4% of a median schema's build instructions).
#[derive(Debug, Clone, Default)]
pub struct TrieNode<S = RoaringBitmap> {
    /// `(emission, child node)`, sorted by emission.
    pub children: Vec<(EmitId, u32)>,
    /// Tokens ending at this node, by the lexer position they leave.
    pub finals: Vec<(LexPos, S)>,
}

/// The terminal trie of one start position. Node 0 is the root (no lexeme emitted yet).
#[derive(Debug, Clone)]
pub struct TerminalTrie<S = RoaringBitmap> {
    /// Where the tokens start (read by the tests' outcome checks).
    #[cfg_attr(not(test), allow(dead_code))]
    pub start: LexPos,
    /// The nodes.
    pub nodes: Vec<TrieNode<S>>,
}

impl TerminalTrie {
    /// Every `(emission path, final position)` outcome of token `t` (linear in the trie
    /// size).
    #[cfg(test)]
    pub fn outcomes_of(&self, t: crate::ids::TokenId) -> Vec<(Vec<EmitId>, LexPos)> {
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

    /// The same trie with each token as its own atom (finals as sorted token lists), as
    /// the tests classify it.
    #[cfg(test)]
    pub fn over_tokens(&self) -> TerminalTrie<Vec<u32>> {
        TerminalTrie {
            start: self.start,
            nodes: self
                .nodes
                .iter()
                .map(|n| TrieNode {
                    children: n.children.clone(),
                    finals: n
                        .finals
                        .iter()
                        .map(|(p, s)| (*p, s.iter().collect()))
                        .collect(),
                })
                .collect(),
        }
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
    /// The tokens of each final, listed as found (in byte order, so ids are unsorted)
    /// and turned into sets once: inserting ids one by one into roaring sets was a tenth
    /// of the automaton build.
    lists: Vec<Vec<u32>>,
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

    /// Adds token `t` to the final of `node` at `pos`.
    fn add_final(&mut self, node: u32, pos: LexPos, t: TokenId) {
        let i = *self.finals_index.entry((node, pos)).or_insert_with(|| {
            self.nodes[node as usize]
                .finals
                .push((pos, RoaringBitmap::new()));
            self.lists.push(Vec::new());
            self.lists.len() - 1
        });
        self.lists[i].push(t.as_u32());
    }

    /// The nodes, with every final's set built from its list.
    fn finish(mut self) -> Vec<TrieNode> {
        for (&(node, pos), &i) in &self.finals_index {
            let list = &mut self.lists[i];
            list.sort_unstable();
            let set = RoaringBitmap::from_sorted_iter(list.iter().copied())
                // Sorted above, and a token ends at most once per node and position.
                .expect("sorted token ids");
            let f = &mut self.nodes[node as usize].finals;
            // Finals were pushed in creation order; the index finds this one by position.
            let slot = f
                .iter_mut()
                .find(|(p, _)| *p == pos)
                .expect("final created");
            slot.1 = set;
        }
        self.nodes
    }
}

/// Builds one position's trie from walked blocks, each added below the root node by node
/// in its creation order; a final's token sets are collected and unioned once at the end
/// (ORing them one by one into a growing set dominated the build for positions with many
/// blocks).
struct Grafter<'a> {
    children: Vec<Vec<(EmitId, u32)>>,
    child_index: HashMap<(u32, EmitId), u32>,
    finals: Vec<Vec<(LexPos, Vec<&'a RoaringBitmap>)>>,
}

impl<'a> Grafter<'a> {
    fn new() -> Self {
        Self {
            children: vec![Vec::new()],
            child_index: HashMap::new(),
            finals: vec![Vec::new()],
        }
    }

    fn child(&mut self, node: u32, e: EmitId) -> u32 {
        if let Some(&c) = self.child_index.get(&(node, e)) {
            return c;
        }
        let c = self.children.len() as u32;
        self.children.push(Vec::new());
        self.finals.push(Vec::new());
        self.children[node as usize].push((e, c));
        self.child_index.insert((node, e), c);
        c
    }

    fn graft(&mut self, block: &'a [TrieNode]) {
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
            let f = &mut self.finals[map[i] as usize];
            for (pos, set) in &n.finals {
                match f.iter_mut().find(|(p, _)| p == pos) {
                    Some((_, sets)) => sets.push(set),
                    None => f.push((*pos, vec![set])),
                }
            }
        }
    }

    fn finish(self, start: LexPos) -> TerminalTrie {
        use roaring::MultiOps;
        let nodes = self
            .children
            .into_iter()
            .zip(self.finals)
            .map(|(mut children, finals)| {
                children.sort();
                TrieNode {
                    children,
                    finals: finals
                        .into_iter()
                        .map(|(p, sets)| (p, sets.into_iter().union()))
                        .collect(),
                }
            })
            .collect();
        TerminalTrie { start, nodes }
    }
}

/// Lexes the tokens of part `j` (they share their first byte, which has taken the lexer
/// from the start of the token to state `after_first`, not dead): the outcomes, relative
/// to the token's start, depend on nothing else.
fn walk_block(
    lexer: &LexerDfa,
    emits: &EmitTable,
    parts: &TokenParts,
    j: usize,
    after_first: LexStateId,
) -> Vec<TrieNode> {
    // Behind an indenter the forked walk tags newline lexemes (the plain walk does not);
    // without longest match it forks only where maximal munch then kills a branch.
    if lexer.longest_match() || emits.tab_len().is_some() {
        return walk_block_forked(lexer, emits, parts, j, after_first);
    }
    let mut b = Builder::new();
    let step = |b: &mut Builder, w: Walk, byte: u8| -> Option<Walk> {
        let n = lexer.next_rep(w.q, byte);
        if !lexer.is_dead(n) {
            return Some(Walk { q: n, node: w.node });
        }
        if lexer.is_start(w.q) {
            return None;
        }
        let e = emits.of_state(w.q)?;
        let node = b.child(w.node, e);
        let q = lexer.next_rep(lexer.start_after(w.q), byte);
        (!lexer.is_dead(q)).then_some(Walk { q, node })
    };
    let nodes = parts.part_nodes(j);
    // The walk at each depth of the current path (index 0 unused).
    let mut at: Vec<Walk> = vec![
        Walk {
            q: after_first,
            node: 0,
        };
        parts.longest() + 1
    ];
    let mut n = nodes.start;
    while n < nodes.end {
        let d = parts.depth(n);
        let w = if d == 1 {
            at[1]
        } else {
            // Preorder: the parent (depth d - 1) is on the path, and alive, since dead
            // subtrees are skipped whole.
            match step(&mut b, at[d - 1], parts.byte(n)) {
                Some(w) => w,
                None => {
                    n = parts.subtree_end(n);
                    continue;
                }
            }
        };
        at[d] = w;
        for o in parts.ending_at(n) {
            let id = parts.id(o);
            if lexer.can_extend(w.q) {
                b.add_final(w.node, LexPos::Pending(w.q), id);
            }
            if let Some(e) = emits.of_state(w.q) {
                let inhibitor = if lexer.can_extend(w.q) {
                    w.q
                } else {
                    LexerDfa::DEAD
                };
                let c = b.child(w.node, e);
                b.add_final(c, LexPos::Boundary(inhibitor), id);
            }
        }
        n += 1;
    }
    b.finish()
}

/// [`walk_block`] under longest match, where a token's bytes may lex more than one way.
///
/// The walk forks as the recognizer does: at every byte that completes a lexeme that can
/// grow, one branch grows and one emits; the emitting branch carries the lexeme as a
/// shadow (in its lexer states) and dies where the shadow completes a longer match. A
/// walk is a set of branches, each pending in a state or at the boundary after an
/// emission, with its trie node; a token's outcomes are those of every branch, so a
/// token may end at several nodes (on one path: `forked_classes` says why). Forks that
/// end in equal branches are one.
fn walk_block_forked(
    lexer: &LexerDfa,
    emits: &EmitTable,
    parts: &TokenParts,
    j: usize,
    after_first: LexStateId,
) -> Vec<TrieNode> {
    // A branch: where it stands, its trie node, and (behind an indenter) the bytes of
    // its pending lexeme as a newline lexeme's tail.
    type Branches = smallvec::SmallVec<[(LexPos, u32, Tail); 4]>;
    let mut b = Builder::new();
    let tagging = emits.tab_len().is_some();
    let tab_len = emits.tab_len().unwrap_or(0);
    // Per trie node, whether every lexeme on its path is ignored: a newline lexeme
    // emitted there is tagged (see `EmitTable::tagged`).
    let mut clean: Vec<bool> = vec![true];
    // The branches after a byte took a branch to `q1` (not dead) at `node`, its lexeme's
    // bytes now `tail`.
    let mut enter = |b: &mut Builder, out: &mut Branches, q1: LexStateId, node: u32, tail: Tail| {
        let mut push = |x: (LexPos, u32, Tail)| {
            if !out.contains(&x) {
                out.push(x);
            }
        };
        if lexer.can_extend(q1) {
            push((LexPos::Pending(q1), node, tail));
        }
        if let Some(e) = emits.of_state(q1) {
            let e = if tagging && clean[node as usize] {
                emits.tagged(e, tail, node == 0)
            } else {
                e
            };
            let c = b.child(node, e);
            if c as usize == clean.len() {
                let ignored = emits.terminals(e).iter().all(|&t| lexer.is_ignored(t));
                clean.push(clean[node as usize] && ignored);
            }
            push((LexPos::Boundary(lexer.inhibitor(q1)), c, Tail::default()));
        }
    };
    let step = |tail: Tail, byte: u8| {
        if tagging {
            tail.step(byte, tab_len)
        } else {
            tail
        }
    };
    let nodes = parts.part_nodes(j);
    let mut first = Branches::new();
    if nodes.start < nodes.end {
        let t1 = step(Tail::default(), parts.byte(nodes.start));
        enter(&mut b, &mut first, after_first, 0, t1);
    }
    // The branches at each depth of the current path (index 0 unused).
    let mut at: Vec<Branches> = vec![first; parts.longest() + 1];
    let mut n = nodes.start;
    while n < nodes.end {
        let d = parts.depth(n);
        if d > 1 {
            let byte = parts.byte(n);
            let mut next = Branches::new();
            for &(pos, node, tail) in &at[d - 1] {
                let (q1, tail) = match pos {
                    LexPos::Pending(q) => (lexer.next_rep(q, byte), step(tail, byte)),
                    LexPos::Boundary(p) => (
                        lexer.boundary_next_rep(p, byte),
                        step(Tail::default(), byte),
                    ),
                };
                if !lexer.is_dead(q1) {
                    enter(&mut b, &mut next, q1, node, tail);
                }
            }
            if next.is_empty() {
                n = parts.subtree_end(n);
                continue;
            }
            at[d] = next;
        }
        for o in parts.ending_at(n) {
            let id = parts.id(o);
            for &(pos, node, _) in &at[d] {
                b.add_final(node, pos, id);
            }
        }
        n += 1;
    }
    b.finish()
}

/// The lexer state a token's first byte `b` leads to from `start`, or `None` if no
/// token starting with `b` is viable there (a pending lexeme cannot take `b`; a boundary
/// inhibited by a lexeme that could take `b`; no lexeme starts with `b`).
fn after_first_byte(lexer: &LexerDfa, start: LexPos, b: u8) -> Option<LexStateId> {
    let n = match start {
        LexPos::Pending(q) => lexer.next_rep(q, b),
        LexPos::Boundary(p) => lexer.boundary_next_rep(p, b),
    };
    (!lexer.is_dead(n)).then_some(n)
}

/// Builds the terminal trie of tokens starting at `start`.
#[cfg(test)]
pub fn build_trie(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &TokenParts,
    start: LexPos,
) -> TerminalTrie {
    build_tries(lexer, emits, tokens, &[start])
        .pop()
        .expect("one trie per position")
}

/// Lets [`build_tries_shared`] walk a block of tokens once for many lexer states: tokens
/// are bucketed by length ([`TokenParts::bounds`]), and a bucket's walk is shared between
/// states whose classes agree to that length (`position_equiv::classes_at_depths`).
///
/// Invariant: `classes[i][q]` is the class of state `q` at depth `bounds[i] - 1` for the
/// bounds of the tokens' parts; the shared walks then differ only in final positions that
/// have one [`TerminalTrie::canonicalize_finals`] form, so callers must canonicalize with
/// the representatives the classes were computed with.
pub struct WalkShare {
    /// Per bucket, a class per lexer state.
    pub classes: Vec<Vec<u32>>,
    /// Per depth `0..=FINE_DEPTH`, a class per lexer state: what a walk deep in a part's
    /// trie compares by, since the bytes left below a node are fewer than the bucket's.
    fine: Vec<Vec<u32>>,
}

/// The deepest depth [`WalkShare`] keeps classes at exactly; deeper, the buckets' depths
/// (powers of two less one) serve, rounded up. 98% of Llama-3's token prefixes are at
/// most 16 bytes long, so nearly every subtree a walk could share is covered exactly.
const FINE_DEPTH: usize = 16;

impl WalkShare {
    /// Sharing by one class per lexer state at every depth: `class` must be classes
    /// whose states lex every byte string alike, however long (`forked_equiv`).
    pub fn uniform(class: Vec<u32>, tokens: &TokenParts) -> Self {
        Self {
            classes: vec![class.clone(); tokens.buckets()],
            fine: vec![class; FINE_DEPTH.min(tokens.longest()) + 1],
        }
    }

    /// The classes of the length buckets of `tokens` under the end representatives
    /// `reps`; also returns the classes at the longest token's depth, which tell apart
    /// start positions whose tries differ.
    pub fn new(lexer: &LexerDfa, reps: &[LexStateId], tokens: &TokenParts) -> (Self, Vec<u32>) {
        let buckets: Vec<usize> = tokens.bounds().iter().map(|b| b - 1).collect();
        let fine = FINE_DEPTH.min(tokens.longest());
        // One refinement for every depth asked for (ascending, each once).
        let mut depths: Vec<usize> = (0..=fine)
            .chain(buckets.iter().copied())
            .chain([tokens.longest()])
            .collect();
        depths.sort_unstable();
        depths.dedup();
        let mut all = classes_at_depths(lexer, reps, &depths);
        let take = |d: usize, all: &mut Vec<Vec<u32>>| {
            let i = depths.binary_search(&d).expect("every depth was asked for");
            if d > fine {
                std::mem::take(&mut all[i])
            } else {
                all[i].clone()
            }
        };
        let start = take(tokens.longest(), &mut all);
        let classes = buckets.iter().map(|&d| take(d, &mut all)).collect();
        let fine = (0..=fine).map(|d| take(d, &mut all)).collect();
        (Self { classes, fine }, start)
    }

    /// Classes under which two states of one class lex every byte string of at most
    /// `depth` bytes alike (those of the least depth kept that reaches it; `None` past
    /// the deepest bucket).
    pub fn classes_to_depth(&self, depth: usize, tokens: &TokenParts) -> Option<&[u32]> {
        if let Some(c) = self.fine.get(depth) {
            return Some(c);
        }
        let m = tokens.bounds().partition_point(|&b| b - 1 < depth);
        self.classes.get(m).map(|c| &c[..])
    }
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
    tokens: &TokenParts,
    positions: &[LexPos],
) -> Vec<TerminalTrie> {
    build_tries_shared(lexer, emits, tokens, positions, None)
}

/// [`build_tries`], with each part (first byte × length bucket) walked once per class of
/// entered states (see [`WalkShare`]): a counted string's positions near the count's end
/// differ only for the few long tokens, so the many short ones are walked once.
pub fn build_tries_shared(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &TokenParts,
    positions: &[LexPos],
    share: Option<&WalkShare>,
) -> Vec<TerminalTrie> {
    build_tries_with(lexer, emits, tokens, positions, share, |t| t)
}

/// [`build_tries_shared`], handing each trie to `f` as soon as it is built (in parallel)
/// and keeping only what `f` returns: a caller that condenses tries never holds them all.
pub fn build_tries_with<T: Send>(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &TokenParts,
    positions: &[LexPos],
    share: Option<&WalkShare>,
    f: impl Fn(TerminalTrie) -> T + Sync,
) -> Vec<T> {
    let walks = Walks::new(lexer, tokens, positions, share);
    let walked: Vec<Vec<TrieNode>> = (0..walks.len())
        .into_par_iter()
        .map(|w| walk_block(lexer, emits, tokens, walks.part(w), walks.start(w)))
        .collect();
    positions
        .par_iter()
        .map(|&p| {
            let mut t = Grafter::new();
            for b in 0..=255u8 {
                for &k in walks.walks_at(lexer, p, b) {
                    t.graft(&walked[k as usize]);
                }
            }
            f(t.finish(p))
        })
        .collect()
}

/// One first byte's share of [`Walks::new`], numbered within the byte.
struct ByteWalks {
    /// The byte's pairs (in the order met) by rank of their key.
    rank_to_pair: Vec<u32>,
    /// The byte's walks: keys `(byte, bucket, class)` in order, each with its entered state.
    keys: Vec<((u8, u8, u32), LexStateId)>,
    /// Per pair, its walks.
    pair_walks: Vec<Vec<u32>>,
}

/// The walks a set of start positions needs: each part of the vocabulary (first byte ×
/// length bucket, [`TokenParts`]) is to be walked once per class of states positions enter
/// it in (see [`build_tries_shared`]); a position's trie is the graft of its walks.
pub struct Walks<'t> {
    /// The vocabulary's parts.
    pub tokens: &'t TokenParts,
    /// Per walk, the part it walked (walks of one part are consecutive).
    pub part_of: Vec<u32>,
    /// Per walk, the state its tokens' first byte enters (a representative of its class).
    starts: Vec<LexStateId>,
    /// Per first byte, the classes its pairs are keyed by: those at its longest nonempty
    /// bucket's depth, which refine the shallower ones (`None`: no sharing, by state).
    pair_classes: Vec<Option<&'t [u32]>>,
    /// The pairs met, a bit per `(first byte, entered state's pair class)` key at
    /// `byte * key_words * 64 + key` (keys are below the state count).
    met: Vec<u64>,
    /// Words per byte in `met`.
    key_words: usize,
    /// Per word of `met`, the pairs met in the words before it.
    met_before: Vec<u32>,
    /// Pair ids (indices in `pair_walks`, in the order pairs were met) in key order:
    /// a pair's rank among the met bits gives its id. A hash map from keys to ids, read
    /// for every position and byte, cost as much as the rest of `pair_at`.
    pair_of_rank: Vec<u32>,
    /// The walks of each pair, in bucket order.
    pair_walks: Vec<Vec<u32>>,
    /// The classes walks were shared by, if any.
    share: Option<&'t WalkShare>,
}

impl<'t> Walks<'t> {
    /// Plans the walks of the parts every position in `positions` enters (sharing walks
    /// per `share`, whose classes must be those of `tokens`' buckets; without it, a walk
    /// per entered state).
    pub fn new(
        lexer: &LexerDfa,
        tokens: &'t TokenParts,
        positions: &[LexPos],
        share: Option<&'t WalkShare>,
    ) -> Self {
        let nb = tokens.buckets();
        // A pair (first byte, entered state) is walked alike for every state of the
        // class at its byte's deepest bucket: pairs are keyed by that class (a counted
        // string's positions enter a different state per count, but the same class on
        // every byte whose tokens are short).
        let pair_classes: Vec<Option<&'t [u32]>> = (0..256)
            .map(|b| {
                let deepest = (0..nb).rev().find(|&i| !tokens.part_is_empty(b * nb + i))?;
                share.map(|s| &s.classes[deepest][..])
            })
            .collect();
        let key = |b: u8, n: LexStateId| -> u32 {
            pair_classes[usize::from(b)].map_or(n.as_u32(), |c| c[n.index()])
        };
        // The key a part is walked under: the entered state's class at the part's depth.
        let key_of = |b: u8, i: usize, n: LexStateId| -> (u8, u8, u32) {
            let k = share.map_or(n.as_u32(), |s| s.classes[i][n.index()]);
            (b, i as u8, k)
        };
        // Pairs met, a bit per (byte, key), 32 bytes per lexer state (keys are below the
        // state count): a hash lookup for each position and byte cost a sixth of this
        // step. Every key, walk and pair is of one first byte, so bytes are planned in
        // parallel (one thread over every position and byte was a tenth of a large
        // schema's lexer half) and numbered in byte order, as one pass would.
        let words = lexer.num_states().div_ceil(64);
        let mut met = vec![0u64; 256 * words];
        let per_byte: Vec<ByteWalks> = met
            .par_chunks_mut(words.max(1))
            .take(256)
            .enumerate()
            .map(|(b, met)| {
                let b = b as u8;
                let mut pairs: Vec<LexStateId> = Vec::new();
                for &p in positions {
                    if let Some(n) = after_first_byte(lexer, p, b) {
                        let k = key(b, n) as usize;
                        let (w, bit) = (k / 64, 1 << (k % 64));
                        if met[w] & bit == 0 {
                            met[w] |= bit;
                            pairs.push(n);
                        }
                    }
                }
                let mut by_key: Vec<(u32, u32)> = pairs
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (key(b, n), i as u32))
                    .collect();
                by_key.sort_unstable();
                let parts: Vec<usize> = (0..nb)
                    .filter(|&i| !tokens.part_is_empty(usize::from(b) * nb + i))
                    .collect();
                let mut rep: HashMap<(u8, u8, u32), LexStateId> = HashMap::new();
                for &n in &pairs {
                    for &i in &parts {
                        rep.entry(key_of(b, i, n)).or_insert(n);
                    }
                }
                let mut keys: Vec<((u8, u8, u32), LexStateId)> = rep.into_iter().collect();
                keys.sort_unstable();
                let walk_of: HashMap<(u8, u8, u32), u32> = keys
                    .iter()
                    .enumerate()
                    .map(|(w, &(k, _))| (k, w as u32))
                    .collect();
                // Walk ids local to the byte, made global below.
                let pair_walks = pairs
                    .iter()
                    .map(|&n| {
                        // Every part of every pair was keyed above.
                        parts.iter().map(|&i| walk_of[&key_of(b, i, n)]).collect()
                    })
                    .collect();
                ByteWalks {
                    rank_to_pair: by_key.into_iter().map(|(_, i)| i).collect(),
                    keys,
                    pair_walks,
                }
            })
            .collect();
        let mut met_before = Vec::with_capacity(met.len());
        let mut count = 0u32;
        for &w in &met {
            met_before.push(count);
            count += w.count_ones();
        }
        let mut pair_of_rank: Vec<u32> = Vec::with_capacity(count as usize);
        let mut starts: Vec<LexStateId> = Vec::new();
        let mut part_of: Vec<u32> = Vec::new();
        let mut pair_walks: Vec<Vec<u32>> = Vec::with_capacity(count as usize);
        for byte in per_byte {
            let (first_pair, first_walk) = (pair_walks.len() as u32, starts.len() as u32);
            pair_of_rank.extend(byte.rank_to_pair.iter().map(|&i| first_pair + i));
            for ((b, i, _), n) in byte.keys {
                starts.push(n);
                part_of.push((usize::from(b) * nb + usize::from(i)) as u32);
            }
            pair_walks.extend(byte.pair_walks.into_iter().map(|mut ws: Vec<u32>| {
                ws.iter_mut().for_each(|w| *w += first_walk);
                ws
            }));
        }
        Self {
            tokens,
            part_of,
            starts,
            pair_classes,
            met,
            key_words: words,
            met_before,
            pair_of_rank,
            pair_walks,
            share,
        }
    }

    /// Classes under which two states of one class, each with no lexeme closed, give
    /// every byte string of at most `depth` bytes the same outcomes (`None` without
    /// sharing, or deeper than any bucket; see [`WalkShare::classes_to_depth`]).
    pub fn classes_to_depth(&self, depth: usize) -> Option<&'t [u32]> {
        self.share?.classes_to_depth(depth, self.tokens)
    }

    /// The walks position `p` (one of those the walks were made for) enters with first
    /// byte `b`, one per nonempty length bucket; empty when no token starting with `b`
    /// is viable at `p`.
    pub fn walks_at(&self, lexer: &LexerDfa, p: LexPos, b: u8) -> &[u32] {
        self.pair_at(lexer, p, b)
            .map_or(&[], |pair| self.pair_walks(pair))
    }

    /// The `(first byte, entered state)` pair position `p` enters with byte `b`, as an
    /// index for [`Walks::pair_walks`], if any token starting with `b` is viable at `p`.
    /// Pairs whose entered states are of one class at the byte's deepest bucket (so whose
    /// walks are all the same) are one id.
    pub fn pair_at(&self, lexer: &LexerDfa, p: LexPos, b: u8) -> Option<u32> {
        after_first_byte(lexer, p, b).map(|n| {
            let k = self.pair_classes[usize::from(b)].map_or(n.index(), |c| c[n.index()] as usize);
            let w = usize::from(b) * self.key_words + k / 64;
            let below = self.met[w] & ((1u64 << (k % 64)) - 1);
            // Every pair a position enters was met when planning the walks; a position
            // they were not planned for must not read another pair's walks.
            assert!(self.met[w] >> (k % 64) & 1 == 1, "pair never met");
            self.pair_of_rank[(self.met_before[w] + below.count_ones()) as usize]
        })
    }

    /// The ids of the pairs of first byte `b`: pairs are numbered byte by byte.
    pub fn pairs_of_byte(&self, b: u8) -> std::ops::Range<u32> {
        let w = usize::from(b) * self.key_words;
        let start = self.met_before.get(w).copied().unwrap_or(0);
        let end = self
            .met_before
            .get(w + self.key_words)
            .copied()
            .unwrap_or(self.pair_walks.len() as u32);
        start..end
    }

    /// The walks of a pair, one per nonempty length bucket of its byte, in bucket order.
    pub fn pair_walks(&self, pair: u32) -> &[u32] {
        &self.pair_walks[pair as usize]
    }

    /// Number of pairs, the ids [`Walks::pair_at`] gives.
    pub fn num_pairs(&self) -> usize {
        self.pair_walks.len()
    }

    /// Number of walks.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// The state walk `w`'s tokens' first byte enters.
    pub fn start(&self, w: usize) -> LexStateId {
        self.starts[w]
    }

    /// The part walk `w` walks.
    pub fn part(&self, w: usize) -> usize {
        self.part_of[w] as usize
    }

    /// Length buckets per first byte: part `j` holds first byte `j / buckets()`.
    pub fn buckets(&self) -> usize {
        self.tokens.buckets()
    }
}

/// Every lexer position a configuration can be in: the boundary with no inhibitor (one
/// per lexer mode), the boundary after each complete lexeme that could grow, and every
/// growing lexeme.
pub fn start_positions(lexer: &LexerDfa) -> Vec<LexPos> {
    let mut out = vec![LexPos::Boundary(LexerDfa::DEAD)];
    out.extend((1..lexer.num_modes() as u32).map(|m| LexPos::Boundary(lexer.mode_start(m))));
    for q in 2..lexer.num_states() {
        let q = LexStateId::new(q);
        if lexer.can_extend(q) {
            out.push(LexPos::Pending(q));
        }
        // Under longest match a lexeme that cannot grow still inhibits through its
        // shadows.
        if !lexer.emits(q).is_empty() && lexer.inhibitor(q) == q {
            out.push(LexPos::Boundary(q));
        }
    }
    out
}

/// The tries of every start position, built in parallel.
pub fn build_all(lexer: &LexerDfa, vocab: &Vocab) -> (EmitTable, Vec<TerminalTrie>) {
    let emits = EmitTable::new(lexer);
    let tries = build_tries(lexer, &emits, vocab.parts(), &start_positions(lexer));
    (emits, tries)
}

#[cfg(test)]
mod tests;

//! Pass: terminal trie → token classes, the alphabet the mask automaton's weights use.
//!
//! From one lexer position, every token lexes into exactly one sequence of lexeme
//! emissions with at most two outcomes (the last lexeme still growing, or closed). Tokens
//! with the same outcomes are indistinguishable to the parser, so they form one *class*;
//! weights are sets of classes (a few hundred to a few thousand per position instead of
//! 128K+ tokens), and only the final mask write expands classes into tokens.
//!
//! Classes are numbered in preorder of the deepest trie node they reach, so the classes
//! below any node form one contiguous range and the per-depth sets built here compress
//! into runs. Because each class has one emission sequence, "the classes whose d-th lexeme
//! is emitted as `e`" intersected with "the classes still alive after d−1 lexemes" is
//! exactly the set of classes on that trie path: the automaton builder can work depth by
//! depth with set intersections instead of trie nodes.
//!
//! Depends on `terminal_trie` (input) and nothing at run time.

use hashbrown::HashMap;
use roaring::RoaringBitmap;

use crate::compile::dwa::terminal_trie::{EmitId, TerminalTrie};
use crate::ids::TerminalId;
use crate::lexer::{LexPos, LexerDfa};

/// The class structure of one start position (its *shape*) and its class → token map,
/// token sets as the trie held them (`S`).
#[derive(Debug, Clone)]
pub struct ClassedTrie<S = RoaringBitmap> {
    /// The shape: what the automaton builder reads.
    pub shape: Shape,
    /// `tokens[c]`: the tokens of class `c` (pairwise disjoint, none empty).
    pub tokens: Vec<S>,
}

/// The token-independent structure of a terminal trie: per depth, which classes emit
/// what and which end where. Two positions with equal shapes share automaton states.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Number of classes.
    pub num_classes: u32,
    /// `emits[d]` (d ≥ 1): each emission with the classes whose d-th lexeme is emitted so,
    /// as sorted class lists (serialized form keeps the type hashable).
    pub emits: Vec<Vec<(EmitId, ClassList)>>,
    /// `finals[d]`: each position after the token with the classes that end there after
    /// `d` lexemes.
    pub finals: Vec<Vec<(LexPos, ClassList)>>,
    /// `consumes[d]`: each terminal with the classes that end after `d` lexemes asking
    /// only whether it can be consumed there (the tests of droppable lexemes, added by
    /// `droppable`; empty otherwise).
    pub consumes: Vec<Vec<(TerminalId, ClassList)>>,
    /// How classes with droppable lexemes are decided from their virtual classes (see
    /// `droppable`; empty otherwise).
    pub drops: DropTrees,
    /// `inside[d]`: each position with the (virtual) classes that end there after `d`
    /// lexemes read with the follow sets inside brackets (added by `indentation`; empty
    /// otherwise).
    pub inside: Vec<Vec<(LexPos, ClassList)>>,
    /// How classes behind an indenter are decided from their virtual classes (see
    /// `indentation`; empty otherwise).
    pub indents: IndentRules,
}

/// The rules of one shape's classes behind an indenter (see `indentation`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct IndentRules {
    /// Classes `first_virtual..` are virtual when there are rules.
    pub first_virtual: u32,
    pub rules: Vec<crate::compile::dwa::indentation::Rule>,
    pub terms: Vec<crate::compile::dwa::indentation::Term>,
}

/// The decision trees of one shape's classes with droppable lexemes (see `droppable`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DropTrees {
    /// Classes `first_virtual..` are virtual: decided by the walk, holding no tokens.
    pub first_virtual: u32,
    /// `(class, levels, start)`: the class is allowed if the tree at `nodes[start..]`
    /// says so (a class with two outcomes has two trees).
    pub rules: Vec<(u32, u32, u32)>,
    /// Trees in heap order, `2^(levels+1) − 1` classes each: inner node `k` is a test
    /// (set: go to `2k + 1`, else `2k + 2`), the last level the variants.
    pub nodes: Vec<u32>,
}

/// A set of classes in a hashable form (sorted, as inclusive ranges).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ClassList(pub Vec<(u32, u32)>);

impl ClassList {
    /// The set as a bitmap.
    pub fn to_bitmap(&self) -> RoaringBitmap {
        let mut b = RoaringBitmap::new();
        for &(lo, hi) in &self.0 {
            b.extend(lo..=hi);
        }
        b
    }

    /// The list of sorted, pairwise disjoint inclusive ranges, adjacent ones merged.
    pub fn from_disjoint_ranges(ranges: Vec<(u32, u32)>) -> Self {
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match out.last_mut() {
                Some((_, h)) if *h + 1 == lo => *h = hi,
                _ => out.push((lo, hi)),
            }
        }
        ClassList(out)
    }
}

/// Where each node of a trie sits: its preorder position and depth, the emission on its
/// incoming edge, and its subtree's size.
struct Layout {
    /// Nodes in preorder (children in edge order).
    pre_order: Vec<u32>,
    depth: Vec<u32>,
    incoming: Vec<Option<EmitId>>,
    /// Position of each node in `pre_order`.
    rank: Vec<u32>,
    /// Nodes in each node's subtree, itself included.
    size: Vec<u32>,
}

impl Layout {
    fn of<S>(trie: &TerminalTrie<S>) -> Self {
        let n = trie.nodes.len();
        let mut pre_order: Vec<u32> = Vec::with_capacity(n);
        let mut depth = vec![0u32; n];
        let mut incoming: Vec<Option<EmitId>> = vec![None; n];
        let mut stack = vec![0u32];
        while let Some(v) = stack.pop() {
            pre_order.push(v);
            for &(e, c) in trie.nodes[v as usize].children.iter().rev() {
                depth[c as usize] = depth[v as usize] + 1;
                incoming[c as usize] = Some(e);
                stack.push(c);
            }
        }
        let mut rank = vec![0u32; n];
        for (i, &v) in pre_order.iter().enumerate() {
            rank[v as usize] = i as u32;
        }
        // Subtree size by reverse preorder accumulation.
        let mut size = vec![1u32; n];
        for &v in pre_order.iter().rev() {
            for &(_, c) in &trie.nodes[v as usize].children {
                size[v as usize] += size[c as usize];
            }
        }
        Layout {
            pre_order,
            depth,
            incoming,
            rank,
            size,
        }
    }
}

/// Splits a trie's tokens into classes and records its shape. The trie is consumed: its
/// token sets become the classes'.
pub fn classify<S: Default + PartialEq + std::fmt::Debug>(
    mut trie: TerminalTrie<S>,
) -> ClassedTrie<S> {
    let n = trie.nodes.len();
    let Layout {
        pre_order,
        depth,
        incoming,
        rank,
        size,
    } = Layout::of(&trie);
    // Groups (node, final index) numbered in node preorder; first group ordinal per rank.
    let mut groups: Vec<(u32, usize)> = Vec::new();
    let mut first_group_at_rank = Vec::with_capacity(n + 1);
    for &v in &pre_order {
        first_group_at_rank.push(groups.len() as u32);
        for gi in 0..trie.nodes[v as usize].finals.len() {
            groups.push((v, gi));
        }
    }
    first_group_at_rank.push(groups.len() as u32);
    // A token's outcomes are one or two groups: it ends at node `v`, pending in state
    // `q`, and — when `q`'s lexeme is complete — also closed, at `v`'s child for `q`'s
    // emission as `Boundary(q)` (`q` is then the inhibitor). Those two groups hold the
    // same tokens, so each class is a group or such a pair, found without touching
    // tokens. `sigs`: the class's group ordinals (+1), the later (deeper) one last.
    let mut parent = vec![0u32; n];
    for (v, node) in trie.nodes.iter().enumerate() {
        for &(_, c) in &node.children {
            parent[c as usize] = v as u32;
        }
    }
    let group_of = |v: u32, pos: LexPos| -> Option<u32> {
        let f = &trie.nodes[v as usize].finals;
        let gi = f.iter().position(|(p, _)| *p == pos)?;
        Some(first_group_at_rank[rank[v as usize] as usize] + gi as u32)
    };
    // The pending partner of every closed group (`Boundary(q)`, q growing), found once.
    let mut partner: Vec<Option<u32>> = vec![None; groups.len()];
    let mut paired = vec![false; groups.len()];
    for (g, &(v, gi)) in groups.iter().enumerate() {
        if let LexPos::Boundary(q) = trie.nodes[v as usize].finals[gi].0 {
            // A growing closed lexeme's boundary is built only for tokens also pending in
            // `q` at the parent. A plain boundary (`DEAD`, or a further lexer mode's
            // start, in which no lexeme is ever pending) has no partner.
            let partner_of = (q != LexerDfa::DEAD)
                .then(|| group_of(parent[v as usize], LexPos::Pending(q)))
                .flatten();
            if let Some(p) = partner_of {
                debug_assert_eq!(
                    &trie.nodes[groups[p as usize].0 as usize].finals[groups[p as usize].1].1,
                    &trie.nodes[v as usize].finals[gi].1
                );
                partner[g] = Some(p);
                paired[p as usize] = true;
            }
        }
    }
    // Each class is listed at its last (deeper) group; a paired pending group is not last.
    let sigs: Vec<u64> = (0..groups.len())
        .filter(|&g| !paired[g])
        .map(|g| match partner[g] {
            Some(p) => ((p as u64 + 1) << 32) | (g as u64 + 1),
            None => g as u64 + 1,
        })
        .collect();
    let last_group = |s: u64| (s & 0xffff_ffff) as u32 - 1;
    // Groups are in preorder and each class is listed at its last group: already sorted.
    debug_assert!(sigs.windows(2).all(|w| last_group(w[0]) < last_group(w[1])));
    // Each group is the last of at most one class: its set can be moved out.
    let tokens: Vec<S> = sigs
        .iter()
        .map(|&s| {
            let (v, gi) = groups[last_group(s) as usize];
            std::mem::take(&mut trie.nodes[v as usize].finals[gi].1)
        })
        .collect();
    // Classes below a node: those whose deepest group lies in its preorder range.
    let last: Vec<u32> = sigs.iter().map(|&s| last_group(s)).collect();
    let class_range = |v: usize| -> Option<(u32, u32)> {
        let g_lo = first_group_at_rank[rank[v] as usize];
        let g_hi = first_group_at_rank[(rank[v] + size[v]) as usize];
        let lo = last.partition_point(|&g| g < g_lo) as u32;
        let hi = last.partition_point(|&g| g < g_hi) as u32;
        (lo < hi).then(|| (lo, hi - 1))
    };
    // The sets are built as class lists directly, not as roaring sets converted to lists
    // (with the moved token sets above, 2-3% of a median schema's build instructions):
    // the nodes of one depth have disjoint class ranges, and classes are visited in
    // increasing order below.
    let max_depth = depth.iter().copied().max().unwrap_or(0) as usize;
    let mut emits: Vec<HashMap<EmitId, Vec<(u32, u32)>>> = vec![HashMap::new(); max_depth + 1];
    for v in 1..n {
        if let (Some(e), Some(range)) = (incoming[v], class_range(v)) {
            emits[depth[v] as usize].entry(e).or_default().push(range);
        }
    }
    let mut finals: Vec<HashMap<LexPos, Vec<(u32, u32)>>> = vec![HashMap::new(); max_depth + 1];
    for (c, &s) in sigs.iter().enumerate() {
        for g in [s >> 32, s & 0xffff_ffff] {
            if g == 0 {
                continue;
            }
            let (v, gi) = groups[g as usize - 1];
            let pos = trie.nodes[v as usize].finals[gi].0;
            push_class(
                finals[depth[v as usize] as usize].entry(pos).or_default(),
                c as u32,
            );
        }
    }
    let freeze_e = |m: HashMap<EmitId, Vec<(u32, u32)>>| {
        let mut v: Vec<(EmitId, ClassList)> = m
            .into_iter()
            .map(|(k, mut ranges)| {
                ranges.sort_unstable();
                (k, ClassList::from_disjoint_ranges(ranges))
            })
            .collect();
        v.sort();
        v
    };
    let freeze_f = |m: HashMap<LexPos, Vec<(u32, u32)>>| {
        let mut v: Vec<(LexPos, ClassList)> =
            m.into_iter().map(|(k, r)| (k, ClassList(r))).collect();
        v.sort_by_key(|a| a.0);
        v
    };
    ClassedTrie {
        shape: Shape {
            num_classes: sigs.len() as u32,
            emits: emits.into_iter().map(freeze_e).collect(),
            finals: finals.into_iter().map(freeze_f).collect(),
            consumes: Vec::new(),
            drops: DropTrees::default(),
            inside: Vec::new(),
            indents: IndentRules::default(),
        },
        tokens,
    }
}

/// Appends class `c`, larger than every class in `ranges`, merging it into the last range
/// when adjacent (the form [`ClassList`] keeps).
fn push_class(ranges: &mut Vec<(u32, u32)>, c: u32) {
    match ranges.last_mut() {
        Some((_, hi)) if *hi + 1 == c => *hi = c,
        _ => ranges.push((c, c)),
    }
}

impl PartialOrd for ClassList {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ClassList {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// Class `c`'s outcomes as `shape` holds them: `(depth, "e<emission>")` for each lexeme
/// emitted, `(depth, position)` for each end, sorted (what tests compare).
#[cfg(test)]
pub(crate) fn class_outcomes(shape: &Shape, c: u32) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (d, es) in shape.emits.iter().enumerate() {
        for (e, cl) in es {
            if cl.to_bitmap().contains(c) {
                out.push((d, format!("e{}", e.0)));
            }
        }
    }
    for (d, fs) in shape.finals.iter().enumerate() {
        for (p, cl) in fs {
            if cl.to_bitmap().contains(c) {
                out.push((d, format!("{p:?}")));
            }
        }
    }
    out.sort();
    out
}

/// A token's trie outcomes (`TerminalTrie::outcomes_of`) in [`class_outcomes`]' form.
#[cfg(test)]
pub(crate) fn token_outcomes(outs: &[(Vec<EmitId>, LexPos)]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (path, pos) in outs {
        for (d, e) in path.iter().enumerate() {
            out.push((d + 1, format!("e{}", e.0)));
        }
        out.push((path.len(), format!("{pos:?}")));
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::dwa::terminal_trie::build_all;
    use crate::compile::{build_glr_tables, frontend::lark};

    /// Classes partition the trie's tokens, and every class's outcomes (depth-by-depth
    /// emissions and finals) are exactly those of each of its tokens.
    #[test]
    fn classes_partition_tokens_by_outcome() {
        let g = lark::compile(
            "start: (WORD | NUM | \"+\" | \"++\")*\nWORD: /[a-z]+/\nNUM: /[0-9]+/\n%ignore \" \"\n",
        )
        .unwrap();
        let tables = build_glr_tables(&g).unwrap();
        let words: Vec<&[u8]> = vec![
            b"a", b"ab", b"a1", b"1a", b"+", b"++", b"+++", b" a", b"a ", b"12", b"a+b", b"+a",
        ];
        let vocab = crate::vocab::Vocab::from_byte_tokens(
            "test",
            words.iter().map(|w| Some(w.to_vec())).collect(),
            &[],
        )
        .unwrap();
        let (_, tries) = build_all(&tables.lexer, &vocab);
        for trie in &tries {
            let ct = classify(trie.clone());
            let mut seen = RoaringBitmap::new();
            for toks in &ct.tokens {
                assert!(!toks.is_empty());
                assert!((&seen & toks).is_empty(), "classes overlap");
                seen |= toks;
            }
            for (c, toks) in ct.tokens.iter().enumerate() {
                let c = c as u32;
                let from_shape = class_outcomes(&ct.shape, c);
                for t in toks {
                    let outs = trie.outcomes_of(crate::ids::TokenId::new(t as usize));
                    assert_eq!(from_shape, token_outcomes(&outs), "token {t} in class {c}");
                }
            }
        }
    }
}

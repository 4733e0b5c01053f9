//! Pass: a longest-match terminal trie → token classes (the counterpart of
//! `token_classes::classify`, whose classes end in one node or a pending/closed pair).
//!
//! Under longest match a token's walk forks (`terminal_trie`), so from one position it
//! may end at several nodes: `abcc` under `AB: "ab"` and `ABD: /abc+d/` is pending at
//! the root (a prefix of `abccd`), pending after `AB` with `c` (`AB` backed up), and
//! closed after `AB C C`. These nodes always lie on one path from the root, which is
//! what the automaton needs (it decides a class depth by depth along one emission
//! path): a branch emits its growing lexeme only where that lexeme completes, and every
//! branch that emitted an earlier match of it carries that match as a shadow, which
//! completes there too and kills it. So at each level one emitted branch lives beside
//! the growing one. A trie where a class leaves one path is refused, not guessed at.
//!
//! Classes are the atoms with equal outcome sets, numbered by their deepest outcome's
//! node in preorder (then by outcomes), so equal tries give equal shapes.
//!
//! Depends on `terminal_trie` (input) and nothing at run time.

use hashbrown::HashMap;

use crate::compile::dwa::terminal_trie::{EmitId, TerminalTrie};
use crate::compile::dwa::token_classes::{ClassList, ClassedTrie, DropTrees, Shape};
use crate::lexer::LexPos;

/// A class whose outcomes lie on more than one path (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffPath {
    /// Two of its outcomes' nodes, neither above the other.
    pub nodes: (u32, u32),
}

/// Splits a trie over atoms (finals: sorted atom lists) into classes.
pub fn classify_forked(trie: TerminalTrie<Vec<u32>>) -> Result<ClassedTrie<Vec<u32>>, OffPath> {
    let n = trie.nodes.len();
    // Preorder, depth, parent and incoming emission of every node.
    let mut pre_order: Vec<u32> = Vec::with_capacity(n);
    let mut depth = vec![0u32; n];
    let mut parent = vec![0u32; n];
    let mut incoming = vec![EmitId(0); n];
    let mut stack = vec![0u32];
    while let Some(v) = stack.pop() {
        pre_order.push(v);
        for &(e, c) in trie.nodes[v as usize].children.iter().rev() {
            depth[c as usize] = depth[v as usize] + 1;
            parent[c as usize] = v;
            incoming[c as usize] = e;
            stack.push(c);
        }
    }
    // Outcomes `(node, position)` numbered in node preorder, and each atom's.
    let mut outcomes: Vec<(u32, LexPos)> = Vec::new();
    let mut of_atom: HashMap<u32, Vec<u32>> = HashMap::new();
    for &v in &pre_order {
        let mut finals: Vec<&(LexPos, Vec<u32>)> = trie.nodes[v as usize].finals.iter().collect();
        finals.sort_by_key(|f| f.0);
        for (pos, atoms) in finals {
            let o = outcomes.len() as u32;
            outcomes.push((v, *pos));
            for &a in atoms {
                of_atom.entry(a).or_default().push(o);
            }
        }
    }
    // Atoms with equal outcome sets are one class, ordered by deepest outcome, then by
    // outcomes (ids follow preorder, so on one path the last outcome is the deepest).
    let mut by_outcomes: HashMap<Vec<u32>, Vec<u32>> = HashMap::new();
    for (a, os) in of_atom {
        by_outcomes.entry(os).or_default().push(a);
    }
    let mut classes: Vec<(Vec<u32>, Vec<u32>)> = by_outcomes.into_iter().collect();
    classes.sort_unstable_by(|(a, _), (b, _)| (a.last(), a).cmp(&(b.last(), b)));
    let is_ancestor = |a: u32, mut v: u32| {
        while depth[v as usize] > depth[a as usize] {
            v = parent[v as usize];
        }
        v == a
    };
    // Per depth, the classes each emission and each final position holds.
    let max_depth = depth.iter().copied().max().unwrap_or(0) as usize;
    let mut emits: Vec<HashMap<EmitId, Vec<u32>>> = vec![HashMap::new(); max_depth + 1];
    let mut finals: Vec<HashMap<LexPos, Vec<u32>>> = vec![HashMap::new(); max_depth + 1];
    for (c, (os, _)) in classes.iter().enumerate() {
        // Every class has an outcome: atoms come from finals.
        let deepest = outcomes[*os.last().expect("a class has an outcome") as usize].0;
        for &o in os {
            let (v, pos) = outcomes[o as usize];
            if !is_ancestor(v, deepest) {
                return Err(OffPath {
                    nodes: (v, deepest),
                });
            }
            finals[depth[v as usize] as usize]
                .entry(pos)
                .or_default()
                .push(c as u32);
        }
        let mut v = deepest;
        while v != 0 {
            emits[depth[v as usize] as usize]
                .entry(incoming[v as usize])
                .or_default()
                .push(c as u32);
            v = parent[v as usize];
        }
    }
    let list = |mut cs: Vec<u32>| {
        cs.sort_unstable();
        ClassList::from_disjoint_ranges(cs.into_iter().map(|c| (c, c)).collect())
    };
    let emits = emits
        .into_iter()
        .map(|m| {
            let mut v: Vec<(EmitId, ClassList)> =
                m.into_iter().map(|(e, cs)| (e, list(cs))).collect();
            v.sort();
            v
        })
        .collect();
    let finals = finals
        .into_iter()
        .map(|m| {
            let mut v: Vec<(LexPos, ClassList)> =
                m.into_iter().map(|(p, cs)| (p, list(cs))).collect();
            v.sort_by_key(|f| f.0);
            v
        })
        .collect();
    let num_classes = classes.len() as u32;
    let tokens = classes
        .into_iter()
        .map(|(_, mut atoms)| {
            atoms.sort_unstable();
            atoms
        })
        .collect();
    Ok(ClassedTrie {
        shape: Shape {
            num_classes,
            emits,
            finals,
            consumes: Vec::new(),
            drops: DropTrees::default(),
            inside: Vec::new(),
            indents: Default::default(),
        },
        tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::dwa::terminal_trie::{build_tries, start_positions, EmitTable, TrieNode};
    use crate::compile::dwa::token_classes::{class_outcomes, token_outcomes};
    use crate::compile::{build_glr_tables, frontend::lark};

    /// Classes partition each trie's tokens, every class's outcomes (emissions depth by
    /// depth, finals) are exactly each of its tokens' outcomes, and some tokens end in
    /// three places or more (forks, not only a pending/closed pair).
    #[test]
    fn classes_are_tokens_with_equal_forked_outcomes() {
        let mut g = lark::compile(
            "start: (NAME | NUM | \".\" | ELL | AB | ABD)*\nNAME: /[a-z]+/\n\
             NUM: /[0-9]+([eE][0-9]+)?/\nELL: \"...\"\nAB: \"ab\"\nABD: /abc+d/\n%ignore \" \"\n",
        )
        .unwrap();
        g.longest_match = true;
        let tables = build_glr_tables(&g).unwrap();
        let lexer = &tables.lexer;
        assert!(lexer.longest_match());
        let words: Vec<&[u8]> = vec![
            b"a", b"ab", b"abc", b"abcc", b"abccd", b"1e", b"1e5", b"1ex", b"..", b"...", b"..x",
            b"1", b". 1e", b" ", b"x1e", b"abcab",
        ];
        let vocab = crate::vocab::Vocab::from_byte_tokens(
            "test",
            words.iter().map(|w| Some(w.to_vec())).collect(),
            &[],
        )
        .unwrap();
        let emits = EmitTable::new(lexer);
        let positions = start_positions(lexer);
        let tries = build_tries(lexer, &emits, vocab.parts(), &positions);
        let mut most_outcomes = 0;
        for trie in &tries {
            let over = trie.over_tokens();
            let ct = classify_forked(over).expect("forks stay on one path");
            let mut seen = std::collections::BTreeSet::new();
            for (c, toks) in ct.tokens.iter().enumerate() {
                assert!(!toks.is_empty());
                let c = c as u32;
                let from_shape = class_outcomes(&ct.shape, c);
                for &t in toks {
                    assert!(seen.insert(t), "token {t} in two classes");
                    let outs = trie.outcomes_of(crate::ids::TokenId::new(t as usize));
                    most_outcomes = most_outcomes.max(outs.len());
                    assert_eq!(from_shape, token_outcomes(&outs), "token {t} in class {c}");
                }
            }
        }
        assert!(most_outcomes >= 3, "no token forked: {most_outcomes}");
    }

    /// A class with outcomes on two paths is refused, naming the two nodes.
    #[test]
    fn outcomes_off_one_path_are_refused() {
        let node = |children: Vec<(EmitId, u32)>, finals: Vec<(LexPos, Vec<u32>)>| TrieNode {
            children,
            finals,
        };
        let at = LexPos::Boundary(crate::lexer::LexerDfa::DEAD);
        let trie = TerminalTrie {
            start: at,
            nodes: vec![
                node(vec![(EmitId(0), 1), (EmitId(1), 2)], vec![]),
                node(vec![], vec![(at, vec![0, 1])]),
                node(vec![], vec![(at, vec![0])]),
            ],
        };
        assert_eq!(
            classify_forked(trie).unwrap_err(),
            OffPath { nodes: (1, 2) }
        );
    }
}

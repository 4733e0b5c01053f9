//! The lexer half under longest match or behind an indenter (whose newline lexemes only
//! the forked walks tag), where token walks fork (`terminal_trie`): every
//! start position gets its own trie of token walks (blocks shared by the state a first
//! byte enters, as always), atoms are the tokens with equal outcomes in every trie, and
//! each trie over atoms is split into classes by `forked_classes`.
//!
//! The plain lexer half's shortcuts are not taken here: they compare lexer states by
//! their 1-lookahead futures (`position_equiv`), and reuse the plain boundary's trie
//! for boundaries that only inhibit first bytes, where a shadowed boundary starts its
//! lexemes in states of its own.

use super::*;
use crate::compile::dwa::class_tables::ClassAtoms;
use crate::compile::dwa::forked_classes::classify_forked;
use crate::compile::dwa::forked_equiv::ForkedEquiv;
use crate::compile::dwa::indentation::{with_indentation, IndentTables};
use crate::compile::dwa::terminal_trie::{build_tries_shared, TerminalTrie, TrieNode};
use crate::compile::dwa::token_atoms::NO_ATOM;
use lexer_half::{AtomMap, LexerHalf, StartTries};

/// [`lexer_half`] for a longest-match lexer (see the module docs).
pub(super) fn lexer_half_forked(
    lexer: &LexerDfa,
    follow: &LexFollow,
    indent: Option<(&Indenter, &LexFollow)>,
    vocab: &Vocab,
    limits: &DwaLimits,
    stop: &Interrupt,
) -> Result<LexerHalf, GrammarError> {
    if lexer.has_droppable() {
        return Err(GrammarError::Unsupported {
            span: Default::default(),
            construct: if indent.is_some() {
                "droppable terminals behind an indenter".into()
            } else {
                "droppable terminals under longest match".into()
            },
            reason: "the mask automaton decides a lexeme's droppable terminal or its forks, \
                     not both"
                .into(),
        });
    }
    let tokens = vocab.parts();
    let emits = EmitTable::with_indenter(lexer, indent.map(|(i, _)| i));
    let positions = start_positions(lexer);
    // Positions whose first bytes enter states of one class (byte by byte) have equal
    // tries, ends canonical: one trie per such key.
    let equiv = ForkedEquiv::new(lexer, follow, indent.map(|(_, inside)| inside));
    let mut trie_index: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut built: Vec<LexPos> = Vec::new();
    let trie_of: Vec<usize> = positions
        .iter()
        .map(|&p| {
            *trie_index
                .entry(equiv.trie_key(lexer, p))
                .or_insert_with(|| {
                    built.push(p);
                    built.len() - 1
                })
        })
        .collect();
    if built.len() > limits.max_tries {
        return Err(too_large(
            "terminal tries (distinct lexer positions)",
            limits.max_tries,
        ));
    }
    let share = WalkShare::uniform(equiv.class.clone(), tokens);
    let canon = |p: LexPos| equiv.canonical(p);
    let mut tries = build_tries_shared(lexer, &emits, tokens, &built, Some(&share));
    tries
        .par_iter_mut()
        .for_each(|t| t.canonicalize_finals(canon));
    stop.check()?;
    let atoms = forked_atoms(&tries, vocab);
    let mut size = vec![0u32; atoms.len()];
    for &a in &atoms.of_token {
        if a != NO_ATOM {
            size[a as usize] += 1;
        }
    }
    stop.check()?;
    // Each trie over atoms, classified; shapes and tables interned in position order.
    let indent_tables = indent.map(|(indenter, inside)| IndentTables {
        lexer,
        follow,
        inside,
        indenter,
    });
    let tries: Vec<TerminalTrie<Vec<u32>>> = tries
        .into_par_iter()
        .map(|t| over_atoms(t, &atoms, &size))
        .collect::<Result<_, _>>()?;
    stop.check()?;
    let dead = trie_of[positions
        .iter()
        .position(|p| *p == LexPos::Boundary(LexerDfa::DEAD))
        .expect("the plain boundary is always a start position")];
    // Boundaries read one shape, the union of their tries; other positions their own.
    let in_union: Vec<bool> = tries
        .iter()
        .map(|t| matches!(t.start, LexPos::Boundary(_)))
        .collect();
    let unions = BoundaryUnion::new(&tries, &in_union).split(UNION_SLACK);
    stop.check()?;
    type Classified = (Shape, ClassAtoms, Vec<u32>);
    let (union_classified, classified) = rayon::join(
        || {
            unions
                .par_iter()
                .map(|u| classify(u.trie.clone(), indent_tables.as_ref(), &emits))
                .collect::<Vec<_>>()
        },
        || {
            tries
                .into_par_iter()
                .zip(&in_union)
                .map(|(over, &u)| (!u).then(|| classify(over, indent_tables.as_ref(), &emits)))
                .collect::<Vec<Option<Result<Classified, GrammarError>>>>()
        },
    );
    stop.check()?;
    let mut shapes: Interner<Shape> = Interner::default();
    let mut own_tables: Interner<ClassAtoms> = Interner::default();
    let mut trie_shape = vec![0; built.len()];
    let mut own_local = vec![0; built.len()];
    let mut overflow = RoaringBitmap::new();
    for (i, c) in classified.into_iter().enumerate() {
        let Some(c) = c else { continue };
        let (shape, table, over) = c?;
        trie_shape[i] = shapes.intern(shape);
        own_local[i] = own_tables.intern(table);
        overflow.extend(over);
    }
    for (union, c) in unions.iter().zip(union_classified) {
        let (shape, table, over) = c?;
        let shape = shapes.intern(shape);
        let tables: Vec<(usize, ClassAtoms, Vec<u32>)> = union
            .members
            .par_iter()
            .map(|(i, pairs)| {
                let (t, o) = union.member_table(&table, &over, pairs);
                (*i, t, o)
            })
            .collect();
        for (i, t, o) in tables {
            trie_shape[i] = shape;
            own_local[i] = own_tables.intern(t);
            overflow.extend(o);
        }
    }
    Ok(LexerHalf {
        split_lexer: None,
        emits,
        atoms,
        shapes: shapes.into_list(),
        overflow,
        starts: StartTries {
            trie_of,
            own_trie: positions,
            dead: vec![dead],
            inhibited_positions: Vec::new(),
            trie_shape,
            own_tables,
            own_local,
        },
    })
}

/// Trie `over` split into classes (with indentation variants behind an indenter): its
/// shape, class → atom table, and the atoms left to the recognizer.
fn classify(
    over: TerminalTrie<Vec<u32>>,
    indent_tables: Option<&IndentTables>,
    emits: &EmitTable,
) -> Result<(Shape, ClassAtoms, Vec<u32>), GrammarError> {
    let c = classify_forked(over).map_err(|_| GrammarError::Unsupported {
        span: Default::default(),
        construct: "a token that lexes along two paths under longest match".into(),
        reason: "the mask automaton decides a token along one path of lexemes".into(),
    })?;
    let (c, overflow) = match indent_tables {
        Some(it) => with_indentation(c, it, emits)?,
        None => (c, Vec::new()),
    };
    // The atoms of classes left to the recognizer.
    let overflow = overflow
        .iter()
        .flat_map(|&k| c.tokens[k as usize].iter().copied())
        .collect();
    let table = ClassAtoms::new(&c.tokens);
    Ok((c.shape, table, overflow))
}

/// How much a union of boundary tries may grow past its largest member (a fraction of
/// that member's outcome sets): the unions stay near one member's width.
const UNION_SLACK: f64 = 0.1;

/// The tries of the boundaries merged into one. After different lexemes (and under
/// different shadows) most tokens lex alike, so boundary tries differ in a few tokens
/// each; apart, each would be a shape of thousands of classes that every weight spans.
/// Merged, the union's "atoms" are the distinct outcome sets an atom has in some member
/// (its emission paths, merged by path, and where it ends), each one class; a member
/// reads the union's classes through a table that gives each class the member's atoms
/// with that outcome set. A class none of a member's atoms has is empty there: the walk
/// may decide it, and it adds no token. What a class does depends only on its outcomes,
/// so each member's masks are its own trie's.
struct BoundaryUnion {
    /// The merged trie over outcome-set ids.
    trie: TerminalTrie<Vec<u32>>,
    /// Outcome set `s`'s outcomes `(merged node, end)`.
    sets: Vec<SmallVec<[(u32, LexPos); 2]>>,
    /// Per member (index among the tries), its atoms as `(outcome set, atom)`, sorted.
    members: Vec<(usize, Vec<(u32, u32)>)>,
}

impl BoundaryUnion {
    fn new(tries: &[TerminalTrie<Vec<u32>>], member: &[bool]) -> Self {
        let empty = || TrieNode {
            children: Vec::new(),
            finals: Vec::new(),
        };
        let mut nodes: Vec<TrieNode<Vec<u32>>> = vec![empty()];
        let mut child: HashMap<(u32, EmitId), u32> = HashMap::new();
        let mut set_ids: HashMap<SmallVec<[(u32, LexPos); 2]>, u32> = HashMap::new();
        let mut sets: Vec<SmallVec<[(u32, LexPos); 2]>> = Vec::new();
        let mut members = Vec::new();
        for (i, t) in tries.iter().enumerate().filter(|&(i, _)| member[i]) {
            // Each node of `t` as the merged node with its emission path.
            let mut at = vec![0u32; t.nodes.len()];
            let mut outcomes: HashMap<u32, SmallVec<[(u32, LexPos); 2]>> = HashMap::new();
            let mut stack = vec![0u32];
            while let Some(v) = stack.pop() {
                let (node, m) = (&t.nodes[v as usize], at[v as usize]);
                for &(e, c) in &node.children {
                    at[c as usize] = match child.get(&(m, e)) {
                        Some(&mc) => mc,
                        None => {
                            let mc = nodes.len() as u32;
                            nodes.push(empty());
                            nodes[m as usize].children.push((e, mc));
                            child.insert((m, e), mc);
                            mc
                        }
                    };
                    stack.push(c);
                }
                for (pos, list) in &node.finals {
                    for &a in list {
                        outcomes.entry(a).or_default().push((m, *pos));
                    }
                }
            }
            let mut pairs: Vec<(u32, u32)> = outcomes
                .into_iter()
                .map(|(a, mut o)| {
                    o.sort_unstable();
                    let s = *set_ids.entry(o).or_insert_with_key(|o| {
                        sets.push(o.clone());
                        sets.len() as u32 - 1
                    });
                    (s, a)
                })
                .collect();
            pairs.sort_unstable();
            members.push((i, pairs));
        }
        nodes.iter_mut().for_each(|n| n.children.sort_unstable());
        let mut union = Self {
            trie: TerminalTrie {
                start: LexPos::Boundary(LexerDfa::DEAD),
                nodes,
            },
            sets,
            members,
        };
        union.fill_finals();
        union
    }

    /// The merged nodes' finals from the outcome sets, in id order (lists stay sorted).
    fn fill_finals(&mut self) {
        let mut finals: Vec<HashMap<LexPos, Vec<u32>>> =
            vec![HashMap::new(); self.trie.nodes.len()];
        for (s, outcomes) in self.sets.iter().enumerate() {
            for &(v, pos) in outcomes {
                finals[v as usize].entry(pos).or_default().push(s as u32);
            }
        }
        for (node, f) in self.trie.nodes.iter_mut().zip(finals) {
            node.finals = f.into_iter().collect();
            node.finals.sort_unstable_by_key(|f| f.0);
        }
    }

    /// The union cut into unions of members alike: largest members first, each joins the
    /// first union it grows by at most `slack` of that union's first member's outcome
    /// sets. A walk carries every class of its shape, so one union of members that
    /// differ much would make every boundary's masks pay for all of them.
    fn split(self, slack: f64) -> Vec<BoundaryUnion> {
        let ids = |m: &(usize, Vec<(u32, u32)>)| -> RoaringBitmap {
            m.1.iter().map(|&(s, _)| s).collect()
        };
        let mut order: Vec<(RoaringBitmap, usize)> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| (ids(m), i))
            .collect();
        order.sort_by_key(|(b, i)| (std::cmp::Reverse(b.len()), *i));
        // (outcome sets, the first member's count, members)
        let mut groups: Vec<(RoaringBitmap, u64, Vec<usize>)> = Vec::new();
        for (b, i) in order {
            let fits = groups
                .iter_mut()
                .find(|(g, first, _)| (g.union_len(&b) as f64) <= (1.0 + slack) * *first as f64);
            match fits {
                Some((g, _, ms)) => {
                    *g |= b;
                    ms.push(i);
                }
                None => {
                    let n = b.len();
                    groups.push((b, n, vec![i]));
                }
            }
        }
        groups
            .into_iter()
            .map(|(g, _, ms)| {
                // Outcome sets renumbered by rank within the union.
                let local = |s: u32| g.rank(s) as u32 - 1;
                let members = ms
                    .iter()
                    .map(|&m| {
                        let (i, pairs) = &self.members[m];
                        (*i, pairs.iter().map(|&(s, a)| (local(s), a)).collect())
                    })
                    .collect();
                let mut u = BoundaryUnion {
                    trie: TerminalTrie {
                        start: self.trie.start,
                        nodes: self
                            .trie
                            .nodes
                            .iter()
                            .map(|n| TrieNode {
                                children: n.children.clone(),
                                finals: Vec::new(),
                            })
                            .collect(),
                    },
                    sets: g.iter().map(|s| self.sets[s as usize].clone()).collect(),
                    members,
                };
                u.fill_finals();
                u
            })
            .collect()
    }

    /// A member's class → atom table over the union's classes (`table`, class → outcome
    /// sets), and its atoms in the classes left to the recognizer (`over`, sets).
    fn member_table(
        &self,
        table: &ClassAtoms,
        over: &[u32],
        pairs: &[(u32, u32)],
    ) -> (ClassAtoms, Vec<u32>) {
        let atoms_of = |s: u32| {
            let lo = pairs.partition_point(|&(x, _)| x < s);
            let hi = pairs.partition_point(|&(x, _)| x <= s);
            pairs[lo..hi].iter().map(|&(_, a)| a)
        };
        let classes: Vec<Vec<u32>> = (0..table.num_classes())
            .map(|k| {
                let mut atoms: Vec<u32> =
                    table.class(k).iter().flat_map(|&s| atoms_of(s)).collect();
                atoms.sort_unstable();
                atoms
            })
            .collect();
        let overflow = over.iter().flat_map(|&s| atoms_of(s)).collect();
        (ClassAtoms::new(&classes), overflow)
    }
}

/// A 128-bit hash of one outcome `(trie, node, position)`.
fn outcome_hash(trie: usize, node: usize, pos: LexPos) -> u128 {
    let (kind, q) = match pos {
        LexPos::Pending(q) => (1u64, q.as_u32()),
        LexPos::Boundary(q) => (2u64, q.as_u32()),
    };
    let x = (trie as u64) << 34 ^ (node as u64) << 2 ^ kind ^ u64::from(q).rotate_left(40);
    let a = mix(x ^ 0x243f_6a88_85a3_08d3);
    let b = mix(x.wrapping_add(0x1319_8a2e_0370_7344) ^ a);
    u128::from(a) << 64 | u128::from(b)
}

/// splitmix64's finalizer.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Atoms: tokens with equal outcomes in every trie. Each token's outcomes are summed as
/// 128-bit hashes (order-free, so tries are summed in parallel); tokens with equal sums
/// are one atom. [`over_atoms`] then checks every trie against the atoms, so a hash
/// collision fails the build instead of merging tokens.
fn forked_atoms(tries: &[TerminalTrie], vocab: &Vocab) -> AtomMap {
    let n = vocab.len();
    let sums: Vec<u128> = tries
        .par_iter()
        .enumerate()
        .fold(
            || vec![0u128; n],
            |mut acc, (i, t)| {
                for (v, node) in t.nodes.iter().enumerate() {
                    for (pos, set) in &node.finals {
                        let h = outcome_hash(i, v, *pos);
                        for tok in set {
                            acc[tok as usize] = acc[tok as usize].wrapping_add(h);
                        }
                    }
                }
                acc
            },
        )
        .reduce(
            || vec![0u128; n],
            |mut a, b| {
                a.iter_mut()
                    .zip(b)
                    .for_each(|(x, y)| *x = x.wrapping_add(y));
                a
            },
        );
    let mut atom_of_sum: HashMap<u128, u32> = HashMap::new();
    let mut of_token = vec![NO_ATOM; n];
    let mut first_byte: Vec<u8> = Vec::new();
    for (t, bytes) in vocab.mask_tokens() {
        let s = sums[t.index()];
        if s == 0 {
            continue;
        }
        of_token[t.index()] = *atom_of_sum.entry(s).or_insert_with(|| {
            first_byte.push(bytes.first().copied().unwrap_or(0));
            first_byte.len() as u32 - 1
        });
    }
    AtomMap {
        of_token,
        first_byte,
    }
}

/// Trie `t` over `atoms` (of `size` tokens each): each final's tokens as their sorted
/// atoms. Fails if a final holds part of an atom (the atoms' hashes collided).
fn over_atoms(
    t: TerminalTrie,
    atoms: &AtomMap,
    size: &[u32],
) -> Result<TerminalTrie<Vec<u32>>, GrammarError> {
    let mut nodes = Vec::with_capacity(t.nodes.len());
    for node in t.nodes {
        let mut finals = Vec::with_capacity(node.finals.len());
        for (pos, set) in node.finals {
            let mut list: Vec<u32> = set.iter().map(|tok| atoms.of_token[tok as usize]).collect();
            list.sort_unstable();
            let mut out: Vec<u32> = Vec::new();
            for run in list.chunk_by(|a, b| a == b) {
                if run[0] == NO_ATOM || run.len() as u32 != size[run[0] as usize] {
                    return Err(too_large(
                        "token outcome hashes (two tokens' outcomes collided)",
                        0,
                    ));
                }
                out.push(run[0]);
            }
            finals.push((pos, out));
        }
        nodes.push(TrieNode {
            children: node.children,
            finals,
        });
    }
    Ok(TerminalTrie {
        start: t.start,
        nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::dwa::terminal_trie::{build_tries, start_positions};
    use crate::compile::dwa::token_classes::{class_outcomes, token_outcomes};
    use crate::compile::{build_glr_tables, frontend::lark};

    /// Merged, the boundaries' tries give every member token the class whose outcomes
    /// (emissions depth by depth, ends) are its own in its member's trie, each token in
    /// one class; the union has fewer classes than the members apart.
    #[test]
    fn boundaries_read_the_union_as_their_own_tries() {
        let mut g = lark::compile(
            "start: (NAME | NUM | \".\" | ELL | AB | ABD | EQ | EQEQ)*\nNAME: /[a-z]+/\n\
             NUM: /[0-9]+([eE][0-9]+)?/\nELL: \"...\"\nAB: \"ab\"\nABD: /abc+d/\n\
             EQ: \"=\"\nEQEQ: \"==\"\n%ignore \" \"\n",
        )
        .unwrap();
        g.longest_match = true;
        let tables = build_glr_tables(&g).unwrap();
        let lexer = &tables.lexer;
        let words: Vec<&[u8]> = vec![
            b"a", b"ab", b"abc", b"abcc", b"abccd", b"1e", b"1e5", b"1ex", b"..", b"...", b"..x",
            b"1", b". 1e", b" ", b"x1e", b"abcab", b"=", b"==", b"= 1", b"=a", b"c", b"d", b"e5",
            b"5", b"=.", b"==.",
        ];
        let vocab = Vocab::from_byte_tokens(
            "test",
            words.iter().map(|w| Some(w.to_vec())).collect(),
            &[],
        )
        .unwrap();
        let emits = EmitTable::new(lexer);
        let tries = build_tries(lexer, &emits, vocab.parts(), &start_positions(lexer));
        let over: Vec<TerminalTrie<Vec<u32>>> = tries.iter().map(|t| t.over_tokens()).collect();
        let member: Vec<bool> = over
            .iter()
            .map(|t| matches!(t.start, LexPos::Boundary(_)))
            .collect();
        let union = BoundaryUnion::new(&over, &member);
        assert!(
            union.members.len() >= 4,
            "{} boundaries",
            union.members.len()
        );
        let (num_classes, apart) = check_union(&union, &over, &tries, &emits, &words);
        assert!(num_classes < apart, "{num_classes} of {apart}");
        // Cut, members read unions of their own kind just as exactly; each member is in
        // one union.
        for slack in [0.0, 0.3, 10.0] {
            let parts = BoundaryUnion::new(&over, &member).split(slack);
            let n: usize = parts.iter().map(|u| u.members.len()).sum();
            assert_eq!(n, union.members.len());
            assert!(slack < 10.0 || parts.len() == 1);
            for u in &parts {
                check_union(u, &over, &tries, &emits, &words);
            }
        }
    }

    /// Checks each member's table against its own trie; returns the union's classes and
    /// the members' own classes summed.
    fn check_union(
        union: &BoundaryUnion,
        over: &[TerminalTrie<Vec<u32>>],
        tries: &[TerminalTrie],
        emits: &EmitTable,
        words: &[&[u8]],
    ) -> (u32, u32) {
        let (shape, table, _) = classify(union.trie.clone(), None, emits).unwrap();
        let mut apart = 0;
        for (i, pairs) in &union.members {
            let (mine, _) = union.member_table(&table, &[], pairs);
            assert_eq!(mine.num_classes() as u32, shape.num_classes);
            apart += classify(over[*i].clone(), None, emits)
                .unwrap()
                .0
                .num_classes;
            let mut seen = std::collections::BTreeSet::new();
            for c in 0..mine.num_classes() {
                for &t in mine.class(c) {
                    assert!(seen.insert(t), "token {t} in two classes");
                    let outs = tries[*i].outcomes_of(crate::ids::TokenId::new(t as usize));
                    assert_eq!(
                        class_outcomes(&shape, c as u32),
                        token_outcomes(&outs),
                        "token {:?} at {:?}",
                        String::from_utf8_lossy(words[t as usize]),
                        over[*i].start
                    );
                }
            }
            let alive = (0..words.len())
                .filter(|&t| {
                    !tries[*i]
                        .outcomes_of(crate::ids::TokenId::new(t))
                        .is_empty()
                })
                .count();
            assert_eq!(seen.len(), alive, "every live token has a class");
        }
        (shape.num_classes, apart)
    }
}

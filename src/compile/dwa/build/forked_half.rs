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
    type Classified = (Shape, ClassAtoms, Vec<u32>);
    let classified: Vec<Result<Classified, GrammarError>> = tries
        .into_par_iter()
        .map(|t| {
            let over = over_atoms(t, &atoms, &size)?;
            let c = classify_forked(over).map_err(|_| GrammarError::Unsupported {
                span: Default::default(),
                construct: "a token that lexes along two paths under longest match".into(),
                reason: "the mask automaton decides a token along one path of lexemes".into(),
            })?;
            let (c, overflow) = match &indent_tables {
                Some(it) => with_indentation(c, it, &emits)?,
                None => (c, Vec::new()),
            };
            // The atoms of classes left to the recognizer.
            let overflow = overflow
                .iter()
                .flat_map(|&k| c.tokens[k as usize].iter().copied())
                .collect();
            let table = ClassAtoms::new(&c.tokens);
            Ok((c.shape, table, overflow))
        })
        .collect();
    stop.check()?;
    let mut shapes: Interner<Shape> = Interner::default();
    let mut own_tables: Interner<ClassAtoms> = Interner::default();
    let mut trie_shape = Vec::with_capacity(built.len());
    let mut own_local = Vec::with_capacity(built.len());
    let mut overflow = RoaringBitmap::new();
    for c in classified {
        let (shape, table, over) = c?;
        trie_shape.push(shapes.intern(shape));
        own_local.push(own_tables.intern(table));
        overflow.extend(over);
    }
    let dead = trie_of[positions
        .iter()
        .position(|p| *p == LexPos::Boundary(LexerDfa::DEAD))
        .expect("the plain boundary is always a start position")];
    Ok(LexerHalf {
        split_lexer: None,
        emits,
        atoms,
        shapes: shapes.into_list(),
        overflow,
        starts: StartTries {
            trie_of,
            own_trie: positions,
            dead,
            inhibited_positions: Vec::new(),
            trie_shape,
            own_tables,
            own_local,
        },
    })
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
    for (t, bytes) in vocab.normal_tokens() {
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

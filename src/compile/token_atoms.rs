//! Pass: walked token blocks → token *atoms*, the vocabulary as one grammar's lexer sees it,
//! and each start position's terminal trie over atoms.
//!
//! An atom is a set of tokens that every start position treats alike: from each position,
//! all of them lex into the same lexeme emissions with the same (canonical) outcomes, or
//! none of them is viable. Tries, classes and class tables can then be built over atoms
//! (hundreds) instead of tokens (128K+): only the atom → token lists touch the whole
//! vocabulary, once per grammar. Before atoms, every start position paid a pass over the
//! vocabulary (grafting, classifying and tabulating its tokens), most of the automaton
//! build for schemas with hundreds of key-literal positions.
//!
//! Atoms are found part by part (tokens sharing a first byte and a length bucket, see
//! [`Walks`]): within a part, a position's outcome for a token depends only on the walk
//! it enters the part with, so the part's tokens are first grouped by their outcomes under
//! the part's walks; each group then gets a *signature*, its outcome as a function of the
//! position, and groups of any parts with equal signatures form one atom. A signature is
//! written as its most common outcome plus the positions that differ from it: canonical
//! (it depends only on the function) and short, since positions mostly agree.
//!
//! A position's trie over atoms is then read off directly: each atom's outcome from the
//! position is its group's outcome under the walk the position enters that part with.
//!
//! Depends on `terminal_trie` (walks) and nothing at run time.

use hashbrown::HashMap;
use rayon::prelude::*;
use roaring::RoaringBitmap;

use super::terminal_trie::{EmitId, TerminalTrie, TrieNode, Walks};
use crate::lexer::{LexPos, LexerDfa};

/// A token's outcome from one walk: its (at most two) finals as interned `(emission path,
/// canonical position)` ids, smaller first, 0 for none; `(0, 0)` is "not viable". Ids are
/// interned across walks, so outcomes of different walks and parts compare by value.
type Outcome = (u32, u32);

/// A signature: the most common outcome over positions, and `(position, outcome)` for
/// every position with another one, by position.
type Signature = (Outcome, Vec<(u32, Outcome)>);

/// Where an atom was found: enough to read its outcome from any position.
#[derive(Debug, Clone, Copy)]
struct AtomRep {
    /// Its part's rank among its first byte's nonempty parts (the index into a pair's
    /// walks).
    ordinal: u32,
    /// The first walk of its part (a part's walks are consecutive).
    first_walk: u32,
    /// Its outcome under each walk of the part: a range of `Atoms::rows`.
    row: u32,
}

/// The atoms of a vocabulary under one lexer and set of start positions, with what is
/// needed to build those positions' tries over atoms.
#[derive(Debug, Clone, Default)]
pub struct Atoms {
    /// Per atom, its tokens (sorted ids, never empty).
    pub tokens: Vec<Vec<u32>>,
    /// Per atom, the first byte of its tokens: atoms never mix tokens a boundary's
    /// inhibition could tell apart, so one byte stands for all of them.
    pub first_byte: Vec<u8>,
    reps: Vec<AtomRep>,
    /// Outcome rows, `walks in the part` long each.
    rows: Vec<Outcome>,
    /// Final id `f` (from 1) is `finals[f - 1]`: `(path id, canonical position)`.
    finals: Vec<(u32, LexPos)>,
    /// Path id `p` (from 1; 0 is the root) is `paths[p - 1]`: `(parent path, emission)`.
    paths: Vec<(u32, EmitId)>,
}

/// One part's grouping of tokens, computed independently of other parts.
struct PartGroups {
    /// The part's index in `Walks::parts`.
    part: usize,
    ordinal: u32,
    first_walk: u32,
    /// Per token of the part (in the part's order), its group.
    token_group: Vec<u32>,
    /// Per group, its outcomes under the part's walks, and its signature (`None` when no
    /// position can take it).
    groups: Vec<(Vec<Outcome>, Option<Signature>)>,
}

/// Splits the tokens of `walks` into atoms for the start positions `positions` (every
/// position a trie or table is built for; the walks must have been made for all of them),
/// with final positions compared after `canon`.
pub fn atomize(
    lexer: &LexerDfa,
    walks: &Walks<'_>,
    positions: &[LexPos],
    canon: impl Fn(LexPos) -> LexPos,
    vocab_len: usize,
) -> Atoms {
    let nb = walks.buckets();
    let mut atoms = Atoms::default();
    // Paths and finals interned across walks; per walk, its finals' ids in (node, final)
    // order.
    let mut path_index: HashMap<(u32, EmitId), u32> = HashMap::new();
    let mut final_index: HashMap<(u32, LexPos), u32> = HashMap::new();
    let walk_finals: Vec<Vec<u32>> = walks
        .walked
        .iter()
        .map(|nodes| {
            let mut path = vec![0u32; nodes.len()];
            let mut ids = Vec::new();
            // Children are created after their parent, so a parent's path is set first.
            for (v, n) in nodes.iter().enumerate() {
                for &(e, c) in &n.children {
                    path[c as usize] = *path_index.entry((path[v], e)).or_insert_with(|| {
                        atoms.paths.push((path[v], e));
                        atoms.paths.len() as u32
                    });
                }
                for (pos, _) in &n.finals {
                    let key = (path[v], canon(*pos));
                    ids.push(*final_index.entry(key).or_insert_with(|| {
                        atoms.finals.push(key);
                        atoms.finals.len() as u32
                    }));
                }
            }
            ids
        })
        .collect();
    // Every token is in one part: its index there.
    let mut local = vec![u32::MAX; vocab_len];
    for part in &walks.parts {
        for (i, &(_, t)) in part.iter().enumerate() {
            local[t.index()] = i as u32;
        }
    }
    // The walks of each part (consecutive, in part order).
    let mut part_walks = vec![(0u32, 0u32); walks.parts.len()];
    for (w, &j) in walks.part_of.iter().enumerate() {
        let r = &mut part_walks[j as usize];
        if r.0 == r.1 {
            *r = (w as u32, w as u32);
        }
        r.1 = w as u32 + 1;
    }
    let by_byte: Vec<Vec<PartGroups>> = (0..=255u8)
        .into_par_iter()
        .map(|b| {
            // Positions entering byte `b` enter one walk per nonempty part of `b`.
            let entered: Vec<&[u32]> = positions
                .iter()
                .map(|&p| walks.walks_at(lexer, p, b))
                .collect();
            (0..nb)
                .map(|i| b as usize * nb + i)
                .filter(|&j| !walks.parts[j].is_empty())
                .enumerate()
                .map(|(ordinal, j)| {
                    let (w0, w1) = part_walks[j];
                    group_part(
                        walks,
                        &walk_finals,
                        &local,
                        &entered,
                        j,
                        ordinal as u32,
                        w0..w1,
                    )
                })
                .collect()
        })
        .collect();
    let mut atom_of_sig: HashMap<Signature, u32> = HashMap::new();
    for pg in by_byte.into_iter().flatten() {
        let b = (pg.part / nb) as u8;
        let group_atom: Vec<Option<u32>> = pg
            .groups
            .into_iter()
            .map(|(row, sig)| {
                let sig = sig?;
                Some(*atom_of_sig.entry(sig).or_insert_with(|| {
                    atoms.tokens.push(Vec::new());
                    atoms.first_byte.push(b);
                    atoms.reps.push(AtomRep {
                        ordinal: pg.ordinal,
                        first_walk: pg.first_walk,
                        row: atoms.rows.len() as u32,
                    });
                    atoms.rows.extend(row);
                    atoms.tokens.len() as u32 - 1
                }))
            })
            .collect();
        for (&(_, t), &g) in walks.parts[pg.part].iter().zip(&pg.token_group) {
            if let Some(a) = group_atom[g as usize] {
                atoms.tokens[a as usize].push(t.as_u32());
            }
        }
    }
    for list in &mut atoms.tokens {
        list.sort_unstable();
    }
    atoms
}

/// Groups the tokens of part `j` by their outcomes under the part's walks `ws`, and signs
/// each group; `entered[p]` lists the walks position `p` enters the part's byte with.
fn group_part(
    walks: &Walks<'_>,
    walk_finals: &[Vec<u32>],
    local: &[u32],
    entered: &[&[u32]],
    j: usize,
    ordinal: u32,
    ws: std::ops::Range<u32>,
) -> PartGroups {
    let part = &walks.parts[j];
    let nw = ws.len();
    // outs[i * nw + k]: token i's outcome under the part's k-th walk.
    let mut outs = vec![(0u32, 0u32); part.len() * nw];
    for (k, w) in ws.clone().enumerate() {
        let ids = &walk_finals[w as usize];
        let mut f = 0;
        for n in &walks.walked[w as usize] {
            for (_, set) in &n.finals {
                let id = ids[f];
                f += 1;
                for t in set {
                    let o = &mut outs[local[t as usize] as usize * nw + k];
                    // A token has at most two finals in a walk (pending, then closed).
                    debug_assert_eq!(o.1, 0);
                    *o = if o.0 == 0 {
                        (id, 0)
                    } else {
                        (o.0.min(id), o.0.max(id))
                    };
                }
            }
        }
    }
    let mut group_of_row: HashMap<&[Outcome], u32> = HashMap::new();
    let mut rows: Vec<&[Outcome]> = Vec::new();
    let token_group: Vec<u32> = (0..part.len())
        .map(|i| {
            let row = &outs[i * nw..(i + 1) * nw];
            *group_of_row.entry(row).or_insert_with(|| {
                rows.push(row);
                rows.len() as u32 - 1
            })
        })
        .collect();
    // The positions entering the part with each walk (`nw`: with none).
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); nw + 1];
    for (p, e) in entered.iter().enumerate() {
        let k = e
            .get(ordinal as usize)
            .map_or(nw, |&w| (w - ws.start) as usize);
        members[k].push(p as u32);
    }
    let groups = rows
        .iter()
        .map(|row| {
            let value = |k: usize| if k == nw { (0, 0) } else { row[k] };
            // The most common outcome over positions, the smallest on a tie.
            let mut count: Vec<(Outcome, usize)> = Vec::new();
            for (k, m) in members.iter().enumerate() {
                if m.is_empty() {
                    continue;
                }
                match count.iter_mut().find(|(v, _)| *v == value(k)) {
                    Some((_, c)) => *c += m.len(),
                    None => count.push((value(k), m.len())),
                }
            }
            let common = count
                .iter()
                .max_by_key(|&&(v, c)| (c, std::cmp::Reverse(v)))
                .map_or((0, 0), |&(v, _)| v);
            let mut differ: Vec<(u32, Outcome)> = Vec::new();
            for (k, m) in members.iter().enumerate() {
                let v = value(k);
                if v != common {
                    differ.extend(m.iter().map(|&p| (p, v)));
                }
            }
            differ.sort_unstable();
            let viable = common != (0, 0) || !differ.is_empty();
            (row.to_vec(), viable.then_some((common, differ)))
        })
        .collect();
    PartGroups {
        part: j,
        ordinal,
        first_walk: ws.start,
        token_group,
        groups,
    }
}

impl Atoms {
    /// The terminal trie of start position `p` over atoms (one of the positions the atoms
    /// were made for): node weights are atom sets, finals canonical. Nodes no atom
    /// reaches a final through are left out.
    pub fn trie(&self, lexer: &LexerDfa, walks: &Walks<'_>, p: LexPos) -> TerminalTrie {
        let mut pair_of_byte: [Option<Option<u32>>; 256] = [None; 256];
        let mut node_of_path: HashMap<u32, u32> = HashMap::new();
        let mut nodes: Vec<TrieNode> = vec![TrieNode::default()];
        let mut finals: Vec<Vec<(LexPos, Vec<u32>)>> = vec![Vec::new()];
        for (a, rep) in self.reps.iter().enumerate() {
            let b = self.first_byte[a];
            let pair = *pair_of_byte[b as usize].get_or_insert_with(|| walks.pair_at(lexer, p, b));
            let Some(pair) = pair else { continue };
            // A pair's walks cover every nonempty part of its byte.
            let w = walks.pair_walks(pair)[rep.ordinal as usize];
            let o = self.rows[(rep.row + w - rep.first_walk) as usize];
            for f in [o.0, o.1] {
                if f == 0 {
                    continue;
                }
                let (path, pos) = self.finals[f as usize - 1];
                let v = self.node(path, &mut node_of_path, &mut nodes, &mut finals);
                let fs = &mut finals[v as usize];
                match fs.iter_mut().find(|(q, _)| *q == pos) {
                    Some((_, list)) => list.push(a as u32),
                    None => fs.push((pos, vec![a as u32])),
                }
            }
        }
        for (n, mut fs) in nodes.iter_mut().zip(finals) {
            n.children.sort_unstable();
            fs.sort_unstable_by_key(|(q, _)| *q);
            n.finals = fs
                .into_iter()
                // Atoms were visited in increasing order.
                .map(|(q, list)| (q, RoaringBitmap::from_sorted_iter(list).expect("sorted")))
                .collect();
        }
        TerminalTrie { start: p, nodes }
    }

    /// The trie node of `path`, created with its ancestors if new.
    fn node(
        &self,
        path: u32,
        node_of_path: &mut HashMap<u32, u32>,
        nodes: &mut Vec<TrieNode>,
        finals: &mut Vec<Vec<(LexPos, Vec<u32>)>>,
    ) -> u32 {
        if path == 0 {
            return 0;
        }
        if let Some(&v) = node_of_path.get(&path) {
            return v;
        }
        let (parent, e) = self.paths[path as usize - 1];
        let pv = self.node(parent, node_of_path, nodes, finals);
        let v = nodes.len() as u32;
        nodes.push(TrieNode::default());
        finals.push(Vec::new());
        nodes[pv as usize].children.push((e, v));
        node_of_path.insert(path, v);
        v
    }

    /// Number of atoms.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when no token is viable anywhere.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

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
//! the part's walks; groups of any parts with the same outcome as a function of the position
//! form one atom. Within a first byte that function is fixed by the group's outcome on each
//! of the byte's position groups (a few values), so it is compared that way. Across first
//! bytes the position groups differ: functions are matched by a hash that is linear over
//! positions (each position group contributes its outcome's hash times the sum of its
//! positions' hashes, so it costs one product per position group), and every hash match is
//! confirmed position by position. Writing each function out position by position instead
//! cost lexers with ten thousand positions hundreds of megabytes.
//!
//! A position's trie over atoms is then read off directly: each atom's outcome from the
//! position is its group's outcome under the walk the position enters that part with.
//!
//! Depends on `terminal_trie` (walks) and nothing at run time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use hashbrown::HashMap;
use rayon::prelude::*;
use smallvec::SmallVec;

use crate::compile::dwa::terminal_trie::{
    EmitId, EmitTable, TerminalTrie, TrieNode, WalkShare, Walks,
};
use crate::compile::interner::Interner;
use crate::ids::{LexStateId, TokenId};
use crate::lexer::{LexPos, LexerDfa};
use crate::vocab::parts::{byte_category, TokenParts, Utf8, NUM_CATEGORIES};

mod walk;
use walk::*;

/// No trie node for a path yet (see [`NODE_OF_PATH`]).
const NO_NODE: u32 = u32::MAX;

thread_local! {
    /// Per thread, the node of each path (by id) in the trie [`Atoms::trie`] is building,
    /// [`NO_NODE`] elsewhere: a lookup by index instead of a hash map grown for every
    /// trie. Reset path by path after each trie.
    static NODE_OF_PATH: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// No atom: a token no position can take (or a special token).
pub const NO_ATOM: u32 = u32::MAX;

/// A token's outcome from one walk: its (at most two) finals as interned `(emission path,
/// canonical position)` ids, smaller first, 0 for none; `(0, 0)` is "not viable". Ids are
/// interned across walks, so outcomes of different walks and parts compare by value.
type Outcome = (u32, u32);

/// One first byte's split of the start positions: the position group of each position
/// (every position is in one), and per group the wrapping sum of its positions' hashes.
#[derive(Default)]
struct ByteGroups {
    group_of: Vec<u32>,
    hash_sums: Vec<u64>,
}

/// A 64-bit mix (splitmix64's finalizer): spreads nearby integers over all bits.
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A position's hash in [`fn_hash`].
fn position_hash(p: usize) -> u64 {
    mix64(p as u64 ^ 0x9e37_79b9_7f4a_7c15)
}

/// The hash of the function "position group `g` → `values[g]`": the wrapping sum over
/// positions of (position hash × outcome hash), "not viable" counting 0. It depends only
/// on the function, not on how the positions are grouped, so groups of different first
/// bytes can be matched by it; `None` when no position can take the group.
fn fn_hash(values: &[Outcome], by: &ByteGroups) -> Option<u64> {
    let mut h = 0u64;
    let mut any = false;
    for (&v, &sum) in values.iter().zip(&by.hash_sums) {
        if v != (0, 0) {
            any = true;
            let vh = mix64((u64::from(v.0) << 32 | u64::from(v.1)) ^ 0x2545_f491_4f6c_dd1d);
            h = h.wrapping_add(sum.wrapping_mul(vh | 1));
        }
    }
    any.then_some(h)
}

/// Whether two groups' functions (outcome per position group, under their bytes' splits)
/// agree at every position.
fn same_fn(a: &[Outcome], by_a: &ByteGroups, b: &[Outcome], by_b: &ByteGroups) -> bool {
    by_a.group_of
        .iter()
        .zip(&by_b.group_of)
        .all(|(&x, &y)| a[x as usize] == b[y as usize])
}

/// The atoms first found in one part: enough to read their outcomes from any position.
/// Their rows are stored walk by walk, so a position's trie, which reads one walk of each
/// part for all its atoms, reads consecutive outcomes (read atom by atom, the rows were
/// a third of a large schema's trie building in cache misses).
#[derive(Debug, Clone, Copy)]
struct AtomBlock {
    /// The first byte of the part's tokens.
    byte: u8,
    /// The part's rank among its byte's nonempty parts (the index into a pair's walks).
    ordinal: u32,
    /// The first walk of the part (a part's walks are consecutive).
    first_walk: u32,
    /// The block's first atom; its atoms are numbered consecutively from there.
    first_atom: u32,
    /// How many atoms it has: the length of each walk's row.
    width: u32,
    /// Where its rows start in `Atoms::rows`: the atoms' outcomes under the part's first
    /// walk, then under its second, …
    rows: u32,
}

/// The atoms of a vocabulary under one lexer and set of start positions, with what is
/// needed to build those positions' tries over atoms.
#[derive(Debug, Clone, Default)]
pub struct Atoms {
    /// Per token ordinal ([`TokenParts`] order), its atom ([`NO_ATOM`] for a token no
    /// position can take). Every atom has a token. By ordinal, because a part's tokens
    /// are consecutive there; [`Atoms::of_token`] reorders by id for those who need it.
    of_ordinal: Vec<u32>,
    /// Tokens in the vocabulary (special ones included).
    vocab_len: usize,
    /// Per atom, the first byte of its tokens: atoms never mix tokens a boundary's
    /// inhibition could tell apart, so one byte stands for all of them.
    pub first_byte: Vec<u8>,
    /// The atoms' blocks, in atom order.
    blocks: Vec<AtomBlock>,
    /// The blocks' outcomes (see [`AtomBlock::rows`]).
    rows: Vec<Outcome>,
    /// Final id `f` (from 1) is `finals[f - 1]`: `(path id, canonical position)`.
    finals: Vec<(u32, LexPos)>,
    /// Path id `p` (from 1; 0 is the root) is `paths[p - 1]`: `(parent path, emission)`.
    paths: Vec<(u32, EmitId)>,
}

/// One part's walks and grouping of tokens, computed independently of other parts
/// (paths and finals numbered locally, from 1).
struct PartGroups {
    /// The part's index in [`crate::vocab::TokenParts`].
    part: usize,
    ordinal: u32,
    first_walk: u32,
    /// Local path `p` is `paths[p - 1]`: `(parent local path, emission)`.
    paths: Vec<(u32, EmitId)>,
    /// Local final `f` is `finals[f - 1]`: `(local path, canonical position)`.
    finals: Vec<(u32, LexPos)>,
    /// The part's tokens' groups as runs: `(first token, group)`, tokens numbered from 0 in
    /// the part's order, each run up to the next one's first token (the last to the end).
    token_group: Vec<(u32, u32)>,
    /// Per group, its outcomes under the part's walks (local finals).
    rows: Vec<Vec<Outcome>>,
    /// `(walk in the part, position group of the byte)`: the positions of each group
    /// enter the part with that walk (the part's walk count: with none).
    members: Vec<(u32, u32)>,
    /// The part's walk count.
    num_walks: usize,
}

/// Splits the tokens of `walks` into atoms for the start positions `positions` (every
/// position a trie or table is built for; the walks must have been planned for all of
/// them), with final positions compared after `canon`. Walks whose outcomes are `known`
/// (made with the same `canon`) are read, not walked; the atoms are the same either way.
pub fn atomize(
    lexer: &LexerDfa,
    emits: &EmitTable,
    walks: &Walks<'_>,
    positions: &[LexPos],
    canon: impl Fn(LexPos) -> LexPos + Sync,
    vocab_len: usize,
    known: Option<&WalkOutcomes>,
) -> Atoms {
    let nb = walks.buckets();
    let tokens = walks.tokens;
    let part_walks = part_walk_ranges(walks);
    let loops: Vec<AtomicU64> = (0..lexer.num_states()).map(|_| AtomicU64::new(0)).collect();
    let reps = ByteReps::new(lexer);
    // One cache per thread, kept from byte to byte (its entries are tagged by part and
    // stamp): one per byte would zero a slot per lexer state twice for each of up to
    // 256 bytes.
    let caches = StateCache::per_thread(&loops, &reps);
    // A byte's position groups and its parts' groups: made one byte a task, on any thread.
    let group_byte = |b: u8| -> ByteOut {
        // Positions entering byte `b` in the same pair enter the same walk of every
        // part of `b` (one per nonempty part): group them once.
        // By the pair's rank among the byte's pairs, the last slot for none (a hash
        // map here, one lookup per position and byte, was about half of this
        // closure's own samples in a Github profile).
        let pairs = walks.pairs_of_byte(b);
        let none = (pairs.end - pairs.start) as usize;
        let mut group_of_pair: Vec<u32> = vec![u32::MAX; none + 1];
        let mut pair_groups: Vec<(Option<u32>, Vec<u32>)> = Vec::new();
        for (p, &pos) in positions.iter().enumerate() {
            let pair = walks.pair_at(lexer, pos, b);
            let g = &mut group_of_pair[pair.map_or(none, |x| (x - pairs.start) as usize)];
            if *g == u32::MAX {
                *g = pair_groups.len() as u32;
                pair_groups.push((pair, Vec::new()));
            }
            pair_groups[*g as usize].1.push(p as u32);
        }
        if pair_groups.iter().all(|(pair, _)| pair.is_none()) {
            // No position takes byte `b`.
            return (ByteGroups::default(), Vec::new());
        }
        // Each thread locks only its own cache, for the whole byte (nothing inside
        // spawns work that could run on this thread meanwhile).
        let slot = rayon::current_thread_index().unwrap_or(0) % caches.len();
        let mut guard = caches[slot].lock().unwrap_or_else(|e| e.into_inner());
        let cache = &mut *guard;
        if cache.ends.is_empty() {
            cache.ends = vec![(NO_STATE, (0, 0)); lexer.num_states()];
        }
        let parts = (0..nb)
            .map(|i| b as usize * nb + i)
            .filter(|&j| !tokens.part_is_empty(j))
            .enumerate()
            .filter_map(|(ordinal, j)| {
                let (w0, w1) = part_walks[j];
                let nw = w1 - w0;
                // No position takes the byte: the part's tokens belong to no atom.
                if nw == 0 {
                    return None;
                }
                let members = pair_groups
                    .iter()
                    .enumerate()
                    .map(|(g, (pair, _))| {
                        let k = pair.map_or(nw, |pair| walks.pair_walks(pair)[ordinal] - w0);
                        (k, g as u32)
                    })
                    .collect();
                let part = PartSpec {
                    j,
                    ordinal: ordinal as u32,
                    walks: w0..w1,
                    members,
                    group_sizes: pair_groups.iter().map(|(_, ps)| ps.len()).collect(),
                    known,
                };
                Some(group_part(lexer, emits, walks, &canon, part, cache))
            })
            .collect();
        let mut by = ByteGroups {
            group_of: vec![0; positions.len()],
            hash_sums: vec![0; pair_groups.len()],
        };
        for (g, (_, ps)) in pair_groups.iter().enumerate() {
            for &p in ps {
                by.group_of[p as usize] = g as u32;
                by.hash_sums[g] = by.hash_sums[g].wrapping_add(position_hash(p as usize));
            }
        }
        (by, parts)
    };
    // Bytes are merged into atoms in byte order (so atoms are numbered as one pass would),
    // each as soon as it and every byte before it are grouped, by whichever thread finds
    // the merge free after grouping a byte: merged after all of them, the merge was a
    // serial tail of 10–20 ms on lexer-heavy schemas, with the other thread idle. Threads
    // take bytes in ascending order, so that bytes are grouped about in the order they
    // are merged (split as a parallel iterator splits a range, the two halves were grouped
    // side by side and the second waited for the first).
    let slots: Vec<OnceLock<ByteOut>> = (0..256).map(|_| OnceLock::new()).collect();
    let merge = Mutex::new(Merge::new(vocab_len, tokens.len()));
    let next_byte = AtomicUsize::new(0);
    rayon::scope(|sc| {
        for _ in 0..rayon::current_num_threads() {
            sc.spawn(|_| loop {
                let b = next_byte.fetch_add(1, Ordering::Relaxed);
                let Ok(byte) = u8::try_from(b) else { break };
                // Each byte is taken once, so its slot is empty here.
                let _ = slots[b].set(group_byte(byte));
                if let Ok(mut m) = merge.try_lock() {
                    m.drain(&slots, nb, tokens);
                }
            });
        }
    });
    // A byte grouped while another thread was merging, after that merge looked for it,
    // is merged here.
    let mut m = merge.into_inner().unwrap_or_else(|e| e.into_inner());
    m.drain(&slots, nb, tokens);
    debug_assert_eq!(m.next, 256, "every byte is grouped before the last drain");
    m.finish()
}

/// One first byte's grouping: its position groups and its nonempty parts' groups.
type ByteOut = (ByteGroups, Vec<PartGroups>);

/// The atoms being numbered, byte after byte in byte order ([`atomize`]'s merge).
struct Merge {
    atoms: Atoms,
    atom_of_ordinal: Vec<u32>,
    paths: Interned<(u32, EmitId)>,
    finals: Interned<(u32, LexPos)>,
    /// Atoms by function hash (several only on a collision), and each atom's function as
    /// its outcome per position group of its first byte
    /// (`fns[fn_start[a]..fn_start[a + 1]]`).
    atoms_of_hash: HashMap<u64, SmallVec<[u32; 1]>>,
    fns: Vec<Outcome>,
    fn_start: Vec<u32>,
    /// Within one first byte, a group's function is fixed by its outcome per position
    /// group of the byte: groups of the byte's parts that agree there share an atom at
    /// once (cleared from byte to byte).
    atom_of_byte_fn: HashMap<SmallVec<[Outcome; 8]>, Option<u32>>,
    /// The next byte to merge (256 when all are).
    next: usize,
}

impl Merge {
    fn new(vocab_len: usize, num_tokens: usize) -> Self {
        Self {
            atoms: Atoms {
                vocab_len,
                ..Atoms::default()
            },
            atom_of_ordinal: vec![NO_ATOM; num_tokens],
            paths: Interned::default(),
            finals: Interned::default(),
            atoms_of_hash: HashMap::new(),
            fns: Vec::new(),
            fn_start: vec![0],
            atom_of_byte_fn: HashMap::new(),
            next: 0,
        }
    }

    /// Merges the grouped bytes from [`Self::next`] on, up to the first not grouped yet.
    fn drain(&mut self, slots: &[OnceLock<ByteOut>], nb: usize, tokens: &TokenParts) {
        while let Some(out) = slots.get(self.next).and_then(OnceLock::get) {
            self.merge_byte(out, slots, nb, tokens);
            self.next += 1;
        }
    }

    /// Merges one byte's part groups into atoms: a group whose function (outcome per
    /// position) an earlier atom has joins it, others become new atoms. Every byte before
    /// it is merged, so their slots are set.
    fn merge_byte(
        &mut self,
        (by, parts): &ByteOut,
        slots: &[OnceLock<ByteOut>],
        nb: usize,
        tokens: &TokenParts,
    ) {
        let Self {
            atoms,
            atom_of_ordinal,
            paths,
            finals,
            atoms_of_hash,
            fns,
            fn_start,
            atom_of_byte_fn,
            ..
        } = self;
        atom_of_byte_fn.clear();
        atom_of_byte_fn.reserve(parts.iter().map(|pg| pg.rows.len()).sum::<usize>());
        for pg in parts {
            let b = (pg.part / nb) as u8;
            // Local paths and finals to global ones (a local path's parent comes first).
            let mut path_map = vec![0u32; pg.paths.len() + 1];
            for (i, &(parent, e)) in pg.paths.iter().enumerate() {
                path_map[i + 1] = paths.id((path_map[parent as usize], e));
            }
            let final_map: Vec<u32> = std::iter::once(0)
                .chain(
                    pg.finals
                        .iter()
                        .map(|&(path, pos)| finals.id((path_map[path as usize], pos))),
                )
                .collect();
            let global = |o: Outcome| -> Outcome {
                let (x, y) = (final_map[o.0 as usize], final_map[o.1 as usize]);
                if y != 0 && y < x {
                    (y, x)
                } else {
                    (x, y)
                }
            };
            let walk_of_group = walk_of_group(&pg.members, by.hash_sums.len(), pg.num_walks);
            let first_atom = atoms.first_byte.len() as u32;
            // The rows of the part's new atoms, atom by atom (stored walk by walk below).
            let mut new_rows: Vec<Outcome> = Vec::new();
            let group_atom: Vec<Option<u32>> = pg
                .rows
                .iter()
                .map(|row| {
                    let value = |k: u32| row.get(k as usize).map_or((0, 0), |&o| global(o));
                    let byte_fn = walk_of_group.iter().map(|&k| value(k)).collect();
                    *atom_of_byte_fn.entry(byte_fn).or_insert_with_key(
                        |byte_fn: &SmallVec<[Outcome; 8]>| {
                            let h = fn_hash(byte_fn, by)?;
                            let same = atoms_of_hash.entry(h).or_default();
                            let found = same.iter().copied().find(|&a| {
                                let a_byte = atoms.first_byte[a as usize] as usize;
                                // An atom's first byte is this one or merged before it.
                                let a_by = match slots[a_byte].get() {
                                    Some((a_by, _)) => a_by,
                                    None => unreachable!("byte {a_byte} merged, not grouped"),
                                };
                                let a_fn =
                                    &fns[fn_start[a as usize] as usize..][..a_by.hash_sums.len()];
                                same_fn(byte_fn, by, a_fn, a_by)
                            });
                            Some(found.unwrap_or_else(|| {
                                atoms.first_byte.push(b);
                                new_rows.extend(row.iter().map(|&o| global(o)));
                                fns.extend_from_slice(byte_fn);
                                fn_start.push(fns.len() as u32);
                                let a = atoms.first_byte.len() as u32 - 1;
                                same.push(a);
                                a
                            }))
                        },
                    )
                })
                .collect();
            let width = atoms.first_byte.len() as u32 - first_atom;
            if width > 0 {
                // Parts no position enters have no `PartGroups`, so `nw > 0` (`step_by`
                // needs it).
                let nw = pg.num_walks;
                atoms.blocks.push(AtomBlock {
                    byte: b,
                    ordinal: pg.ordinal,
                    first_walk: pg.first_walk,
                    first_atom,
                    width,
                    rows: atoms.rows.len() as u32,
                });
                for k in 0..nw {
                    atoms
                        .rows
                        .extend(new_rows.iter().skip(k).step_by(nw).copied());
                }
            }
            let part = &mut atom_of_ordinal[tokens.part_tokens(pg.part)];
            let ends = pg.token_group.iter().skip(1).map(|&(i, _)| i as usize);
            for (&(i, g), end) in pg.token_group.iter().zip(ends.chain([part.len()])) {
                part[i as usize..end].fill(group_atom[g as usize].unwrap_or(NO_ATOM));
            }
        }
    }

    /// The atoms, once every byte is merged.
    fn finish(self) -> Atoms {
        let mut atoms = self.atoms;
        atoms.of_ordinal = self.atom_of_ordinal;
        atoms.paths = self.paths.into_items();
        atoms.finals = self.finals.into_items();
        atoms
    }
}

/// The walks of each part, `(first, end)` (a part's walks are consecutive; `(0, 0)` for
/// a part no position enters).
fn part_walk_ranges(walks: &Walks<'_>) -> Vec<(u32, u32)> {
    let mut part_walks = vec![(0u32, 0u32); walks.tokens.num_parts()];
    for (w, &j) in walks.part_of.iter().enumerate() {
        let r = &mut part_walks[j as usize];
        if r.0 == r.1 {
            *r = (w as u32, w as u32);
        }
        r.1 = w as u32 + 1;
    }
    part_walks
}

/// Only parts of tokens longer than this are compared walk by walk in [`alike_positions`].
/// Shorter tokens are walked under classes at depth 7 or less, which keep apart only
/// positions within 8 bytes of a count's end; longer ones under classes that keep apart
/// every position within their length of it, most of them needlessly. Of the cut-offs
/// tried (8, 16, every part), 8 was the fastest on a long bounded string: every part
/// leaves the fewest classes but walks the short parts' many tokens under every walk.
const SPARSE_LEN: usize = 8;

/// Classes of `positions` (numbered by first appearance) such that positions of one class
/// have the same terminal trie once finals are canonical (`canon`): for every first byte,
/// they enter walks with the same outcomes for every token of every part. `None` when too
/// few positions are alike for short tokens for it to be worth looking.
///
/// Why: walks are shared between entered states alike to the part's longest token
/// (`WalkShare`), so a counted string's positions within that many bytes of the count's
/// end all enter different walks of the long-token parts, though the few long tokens
/// there tell only a handful of them apart (an e-mail of at most 1,024 characters has
/// about eight times as many positions as classes). Walking the long parts' walks once and
/// comparing outcomes finds them before the steps that cost per position (atoms, tries,
/// classes, tables).
pub fn alike_positions(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &TokenParts,
    share: &WalkShare,
    positions: &[LexPos],
    canon: impl Fn(LexPos) -> LexPos + Sync,
) -> Option<(Vec<u32>, WalkOutcomes)> {
    let bounds = tokens.bounds();
    // Only positions alike at the sparse depth (entering the same walks of every shorter
    // part) can merge. When fewer than half of them could, planning and walking again is
    // not worth it (a judgement: median schemas are left out, counted strings kept).
    let short = bounds.iter().rposition(|&b| b <= SPARSE_LEN)?;
    let mut seen = vec![false; lexer.num_states()];
    let mut shallow = 0;
    for p in positions {
        let q = match *p {
            LexPos::Pending(q) | LexPos::Boundary(q) => q,
        };
        let c = share.classes[short][q.index()] as usize;
        if !seen[c] {
            seen[c] = true;
            shallow += 1;
        }
    }
    if positions.len() < 2 * shallow {
        return None;
    }
    let walks = Walks::new(lexer, tokens, positions, Some(share));
    let walks = &walks;
    let nb = walks.buckets();
    let part_walks = part_walk_ranges(walks);
    // Each part's reference walk is the one most pairs enter.
    let mut pairs_in = vec![0u32; walks.len()];
    for pair in 0..walks.num_pairs() {
        for &w in walks.pair_walks(pair as u32) {
            pairs_in[w as usize] += 1;
        }
    }
    let loops: Vec<AtomicU64> = (0..lexer.num_states()).map(|_| AtomicU64::new(0)).collect();
    let reps = ByteReps::new(lexer);
    // Per walk, the first walk of its part with the same outcomes. Parts are walked in
    // parallel one by one, not a first byte's parts at a time: the space's long parts
    // alone can be a third of the walking, which one thread would do while the other
    // waits.
    let long_parts: Vec<usize> = (0..256 * nb)
        .filter(|&j| j % nb > short && part_walks[j].1 - part_walks[j].0 > 1)
        .collect();
    // One cache per thread (`map_init` would make one per split job, each allocating a
    // slot per lexer state).
    let caches = StateCache::per_thread(&loops, &reps);
    let walked_parts: Vec<WalkedPart> = long_parts
        .into_par_iter()
        .map(|j| {
            // Each thread locks only its own cache.
            let slot = rayon::current_thread_index().unwrap_or(0) % caches.len();
            let mut guard = caches[slot].lock().unwrap_or_else(|e| e.into_inner());
            let cache = &mut *guard;
            let (w0, w1) = part_walks[j];
            if cache.ends.is_empty() {
                cache.ends = vec![(NO_STATE, (0, 0)); lexer.num_states()];
            }
            let reference = (w0..w1)
                .max_by_key(|&w| pairs_in[w as usize])
                .map_or(0, |w| (w - w0) as usize);
            let mut ids = LocalIds::default();
            let every = vec![true; (w1 - w0) as usize];
            walk_part(
                lexer,
                emits,
                walks,
                &canon,
                j,
                w0..w1,
                reference,
                &every,
                &mut ids,
                cache,
            );
            // Each class's runs are kept (with the part's ids) for `atomize`.
            let mut first: HashMap<RunsKey<'_>, (u32, u32)> = HashMap::new();
            let mut runs: Vec<Runs> = Vec::new();
            let (alike, rep_of): (Vec<u32>, Vec<u32>) = cache.outs[..(w1 - w0) as usize]
                .iter()
                .zip(w0..)
                .map(|(r, w)| {
                    *first
                        .entry((&r.starts[..], &r.outs[..]))
                        .or_insert_with(|| {
                            runs.push(r.clone());
                            (w, runs.len() as u32 - 1)
                        })
                })
                .unzip();
            WalkedPart {
                first_walk: w0,
                alike,
                rep_of,
                known: KnownPart { ids, runs },
            }
        })
        .collect();
    let mut alike: Vec<u32> = (0..walks.len() as u32).collect();
    let mut outcomes = WalkOutcomes::default();
    for walked in walked_parts {
        let WalkedPart {
            first_walk: w0,
            alike: list,
            rep_of,
            known: part,
        } = walked;
        alike[w0 as usize..][..list.len()].copy_from_slice(&list);
        let slot = outcomes.parts.len() as u32;
        for (w, &r) in (w0..).zip(&rep_of) {
            let w = w as usize;
            let key = (walks.part(w) as u32, walks.start(w).as_u32());
            outcomes.class.insert(key, (slot, r));
        }
        outcomes.parts.push(part);
    }
    // Per pair, its walks' alike ids, interned: a position is then 256 pair ids.
    let mut pair_ids: HashMap<Vec<u32>, u32> = HashMap::new();
    let pair_alike: Vec<u32> = (0..walks.num_pairs() as u32)
        .map(|pair| {
            let key: Vec<u32> = walks
                .pair_walks(pair)
                .iter()
                .map(|&w| alike[w as usize])
                .collect();
            let n = pair_ids.len() as u32;
            *pair_ids.entry(key).or_insert(n)
        })
        .collect();
    let key_of = |p: LexPos| -> Vec<u32> {
        (0..=255u8)
            .map(|b| {
                walks
                    .pair_at(lexer, p, b)
                    .map_or(u32::MAX, |pair| pair_alike[pair as usize])
            })
            .collect()
    };
    // Keys are made a chunk at a time in parallel and interned in order: holding every
    // position's 1 KB key at once would cost tens of MB on large lexers.
    const CHUNK: usize = 1024;
    let mut class_of_key: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut class = Vec::with_capacity(positions.len());
    for chunk in positions.chunks(CHUNK) {
        let keys: Vec<Vec<u32>> = chunk.par_iter().map(|&p| key_of(p)).collect();
        for k in keys {
            let n = class_of_key.len() as u32;
            class.push(*class_of_key.entry(k).or_insert(n));
        }
    }
    Some((class, outcomes))
}

/// The outcomes of the long parts' walks [`alike_positions`] walked, for [`atomize`] to
/// read instead of walking them again (on schemas with long bounded strings, most of
/// `atomize`'s trie steps). A walk's outcomes depend only on its part and entered state, so they are
/// found by that pair; walks of a part with equal outcomes share one copy.
#[derive(Default)]
pub struct WalkOutcomes {
    /// By (part, entered state): the part's slot in `parts` and the walk's runs there.
    class: HashMap<(u32, u32), (u32, u32)>,
    parts: Vec<KnownPart>,
}

/// A part [`alike_positions`] walked: per walk (from `first_walk`), the first walk of
/// the part with the same outcomes and the index of those outcomes in `known.runs`.
struct WalkedPart {
    first_walk: u32,
    alike: Vec<u32>,
    rep_of: Vec<u32>,
    known: KnownPart,
}

/// A walk's outcome runs as a hashable key.
type RunsKey<'a> = (&'a [u32], &'a [Outcome]);

/// One walked part's distinct outcome runs, in the ids of its own walk.
struct KnownPart {
    ids: LocalIds,
    runs: Vec<Runs>,
}

impl WalkOutcomes {
    /// Whether no walk is known.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.class.is_empty()
    }
}

/// Which walk each of a byte's `num_groups` position groups enters a part with
/// (`members`); the part's walk count `nw` for none.
fn walk_of_group(members: &[(u32, u32)], num_groups: usize, nw: usize) -> Vec<u32> {
    let mut walk_of_group = vec![nw as u32; num_groups];
    for &(k, g) in members {
        walk_of_group[g as usize] = k;
    }
    walk_of_group
}

/// Which part to walk, and who enters it how.
struct PartSpec<'k> {
    /// The part's index in [`crate::vocab::TokenParts`].
    j: usize,
    /// Its rank among its byte's nonempty parts.
    ordinal: u32,
    /// Its walks.
    walks: std::ops::Range<u32>,
    /// `(walk in the part, position group)`, as in [`PartGroups::members`].
    members: Vec<(u32, u32)>,
    /// Positions per group.
    group_sizes: Vec<usize>,
    /// Walks whose outcomes are known.
    known: Option<&'k WalkOutcomes>,
}

/// Values numbered from 1 in order of first appearance (0 is left for "none"): the
/// shared [`Interner`], its ids shifted by one.
struct Interned<K>(Interner<K>);

impl<K> Default for Interned<K> {
    fn default() -> Self {
        Self(Interner::default())
    }
}

impl<K: std::hash::Hash + Eq> Interned<K> {
    fn id(&mut self, k: K) -> u32 {
        self.0.intern(k) + 1
    }
}

impl<K> Interned<K> {
    /// Value `i` is `items()[i - 1]`.
    fn items(&self) -> &[K] {
        self.0.list()
    }

    fn into_items(self) -> Vec<K> {
        self.0.into_list()
    }
}

/// Local interning of one part's emission paths and finals.
#[derive(Default)]
struct LocalIds {
    paths: Interned<(u32, EmitId)>,
    finals: Interned<(u32, LexPos)>,
}

impl LocalIds {
    fn path(&mut self, parent: u32, e: EmitId) -> u32 {
        self.paths.id((parent, e))
    }

    fn final_id(&mut self, path: u32, pos: LexPos) -> u32 {
        self.finals.id((path, pos))
    }
}

/// What one thread's walks remember from part to part (per lexer state, and buffers).
struct StateCache<'a> {
    /// The outcome of a token ending in the state with no lexeme closed, tagged with the
    /// part it was computed in (`NO_STATE`: none yet).
    ends: Vec<(u32, Outcome)>,
    /// [`loop_categories`], with bit 63 set once computed (0: not yet); shared by every
    /// thread (a race computes the same value twice).
    loops: &'a [AtomicU64],
    /// For [`loop_categories`].
    reps: &'a ByteReps,
    /// [`walk_part`]'s buffers: each walk's outcomes, the walks alive at each depth of
    /// the current trie path, and the copies from the reference walk still to make.
    outs: Vec<Runs>,
    live: Vec<Vec<Alive>>,
    pending: Vec<PendingCopy>,
    /// Per class of the node being walked, the walk that leads it, if the entry's stamp
    /// is the node's ([`walk_part`] numbers the nodes it visits with `stamp`).
    leaders: Vec<(u32, u32)>,
    stamp: u32,
}

impl<'a> StateCache<'a> {
    /// Sizes the buffers for a part of `nw` walks (over `num_states` lexer states, tokens
    /// of at most `longest` bytes) and clears what the last part left in them.
    fn prepare(&mut self, num_states: usize, nw: usize, longest: usize) {
        if self.leaders.len() < num_states {
            self.leaders.resize(num_states, (0, 0));
        }
        if self.outs.len() < nw {
            self.outs.resize_with(nw, Runs::default);
        }
        for r in &mut self.outs[..nw] {
            r.clear();
        }
        if self.live.len() < longest + 1 {
            self.live.resize_with(longest + 1, Vec::new);
        }
        self.pending.clear();
    }

    /// One empty cache per rayon thread, each to be locked only by its thread (its
    /// per-state slots are allocated on first use).
    fn per_thread(loops: &'a [AtomicU64], reps: &'a ByteReps) -> Vec<std::sync::Mutex<Self>> {
        (0..rayon::current_num_threads())
            .map(|_| {
                std::sync::Mutex::new(StateCache {
                    ends: Vec::new(),
                    loops,
                    reps,
                    outs: Vec::new(),
                    live: Vec::new(),
                    pending: Vec::new(),
                    leaders: Vec::new(),
                    stamp: 0,
                })
            })
            .collect()
    }
}

/// A walk alive at a trie node: its index in the part, lexer state and emission path.
type Alive = (u32, LexStateId, u32);

/// A walk whose outcomes for tokens `from..to` are another's (its leader's), to be copied
/// once both leave the subtree ending before node `end`: `(walk, leader, from, to, end)`.
type PendingCopy = (u32, u32, u32, u32, u32);

/// Fewest nodes a subtree must have for [`walk_part`]'s walks to copy its outcomes from
/// a leader rather than walk it: copying a single token's outcome costs more than a step.
const LEAD_MIN_NODES: usize = 4;

/// In [`loop_categories`]' word: every well-formed non-ASCII character leads `q` back to
/// itself ([`chars_loop`]).
const CHARS_LOOP: u64 = 1 << 62;

/// The byte categories (`vocab::parts::byte_category`) on every byte of which `q` loops
/// to itself, plus [`CHARS_LOOP`] when it holds, computed on first use and kept in `loops`.
///
/// Inlined, with the first computation out of line: `walk_part` asks at nearly every trie
/// node, and a call's register saves cost as much as the (cached) answer.
#[inline(always)]
fn loop_categories(lexer: &LexerDfa, loops: &[AtomicU64], reps: &ByteReps, q: LexStateId) -> u64 {
    let v = loops[q.index()].load(Ordering::Relaxed);
    let v = if v == 0 {
        compute_loop_categories(lexer, loops, reps, q)
    } else {
        v
    };
    v & !LOOPS_DONE
}

/// The flag marking a [`loop_categories`] entry computed.
const LOOPS_DONE: u64 = 1 << 63;

/// [`loop_categories`]' first computation for `q`, kept in `loops` (flag included).
#[cold]
#[inline(never)]
fn compute_loop_categories(
    lexer: &LexerDfa,
    loops: &[AtomicU64],
    reps: &ByteReps,
    q: LexStateId,
) -> u64 {
    const _: () = assert!(NUM_CATEGORIES < 62, "categories clash with the flag bits");
    let mut leaves = 0u64;
    for &(b, cats) in &reps.classes {
        if lexer.next_rep(q, b) != q {
            leaves |= cats;
        }
    }
    let mut v = LOOPS_DONE | (!leaves & ((1 << NUM_CATEGORIES) - 1));
    if chars_loop(lexer, &reps.high, q) {
        v |= CHARS_LOOP;
    }
    loops[q.index()].store(v, Ordering::Relaxed);
    v
}

/// The bytes [`loop_categories`] tries: trying all 256 (and all 128 non-ASCII ones per
/// UTF-8 decoder state) was a sixth of atomizing a median schema.
struct ByteReps {
    /// One byte per lexer byte class, with the categories of the class's bytes (a state
    /// leads every byte of a class alike).
    classes: Vec<(u8, u64)>,
    /// One byte of 80–FF per distinct (lexer byte class, UTF-8 decoder behaviour): bytes
    /// alike in both lead every (decoder state, lexer state) pair alike (about 15 bytes).
    high: Vec<u8>,
}

impl ByteReps {
    fn new(lexer: &LexerDfa) -> Self {
        let mut cats = vec![0u64; lexer.num_classes()];
        for b in 0..=255u8 {
            cats[lexer.class(b) as usize] |= 1 << byte_category(b);
        }
        let classes = lexer
            .class_representatives()
            .into_iter()
            .map(|b| (b, cats[lexer.class(b) as usize]))
            .collect();
        let mut seen: Vec<(u8, [u8; 8])> = Vec::new();
        let mut high = Vec::new();
        for b in 0x80..=0xffu8 {
            let key = (
                lexer.class(b),
                std::array::from_fn(|i| Utf8::step(1 << i, b)),
            );
            if !seen.contains(&key) {
                seen.push(key);
                high.push(b);
            }
        }
        Self { classes, high }
    }
}

/// True when every well-formed multi-byte UTF-8 character leads `q` back to `q` through
/// live states (so no lexeme closes on the way): the string and comment states of most
/// lexers, which validate UTF-8 with a few states and so loop on no non-ASCII category.
/// `high` is [`ByteReps::high`].
fn chars_loop(lexer: &LexerDfa, high: &[u8], q: LexStateId) -> bool {
    let mut seen: SmallVec<[(u8, LexStateId); 16]> = SmallVec::new();
    let mut todo: SmallVec<[(u8, LexStateId); 16]> = SmallVec::new();
    todo.push((Utf8::BETWEEN, q));
    while let Some((u, s)) = todo.pop() {
        for &b in high {
            let u2 = Utf8::step(u, b);
            if u2 == 0 {
                continue;
            }
            let s2 = lexer.next_rep(s, b);
            if lexer.is_dead(s2) {
                return false;
            }
            if u2 == Utf8::BETWEEN {
                if s2 != q {
                    return false;
                }
            } else if !seen.contains(&(u2, s2)) {
                seen.push((u2, s2));
                todo.push((u2, s2));
            }
        }
    }
    true
}

/// The ASCII byte categories: all but UTF-8 continuation bytes and the other non-ASCII
/// bytes.
const ASCII_CATEGORIES: u64 =
    ((1 << NUM_CATEGORIES) - 1) & !(1 << byte_category(0x80)) & !(1 << byte_category(0xc0));

/// No state (dead, or past a closed lexeme, where walks are not compared).
const NO_STATE: u32 = u32::MAX;

/// One walk's outcomes over a part's tokens (numbered from 0 in the part's order), as runs:
/// run `i` covers tokens `starts[i]..starts[i + 1]` (the last, up to `end`). Filled in
/// token order; tokens left out get "not viable".
#[derive(Debug, Default, Clone)]
struct Runs {
    starts: Vec<u32>,
    outs: Vec<Outcome>,
    /// Tokens `0..end` are covered.
    end: u32,
}

impl Runs {
    fn clear(&mut self) {
        self.starts.clear();
        self.outs.clear();
        self.end = 0;
    }

    /// Appends a run at `at`, merged into the last one when their outcomes are equal.
    fn push(&mut self, at: u32, o: Outcome) {
        if self.outs.last() != Some(&o) {
            self.starts.push(at);
            self.outs.push(o);
        }
    }

    /// Gives tokens `from..to` (at or after every token set so far) outcome `o`.
    fn set(&mut self, from: u32, to: u32, o: Outcome) {
        debug_assert!(self.end <= from && from <= to, "runs are filled in order");
        if from == to {
            return;
        }
        if self.end < from {
            self.push(self.end, (0, 0));
        }
        self.push(from, o);
        self.end = to;
    }

    /// Gives tokens `from..to` the outcomes they have in `other` (which covers them).
    fn copy(&mut self, other: &Runs, from: u32, to: u32) {
        debug_assert!(to <= other.end, "copied from a finished walk");
        if from == to {
            return;
        }
        if self.end < from {
            self.push(self.end, (0, 0));
        }
        // The run holding `from` (runs start at 0, so there is one), then those after it.
        let i = other.starts.partition_point(|&s| s <= from) - 1;
        self.push(from, other.outs[i]);
        for (&s, &o) in other.starts[i + 1..].iter().zip(&other.outs[i + 1..]) {
            if s >= to {
                break;
            }
            self.push(s, o);
        }
        self.end = to;
    }

    /// Gives tokens from the last one set up to `to` "not viable" (none if already past).
    fn cover(&mut self, to: u32) {
        if self.end < to {
            self.push(self.end, (0, 0));
            self.end = to;
        }
    }

    /// Covers every token up to `len`.
    fn finish(&mut self, len: u32) {
        if self.end < len || self.starts.is_empty() {
            self.push(self.end, (0, 0));
        }
        self.end = len;
    }
}

impl Atoms {
    /// Number of atoms.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.first_byte.len()
    }

    /// Per token id, its atom ([`NO_ATOM`] for a token no position can take, and for
    /// special tokens); `tokens` must be the parts the atoms were made from.
    pub fn of_token(&self, tokens: &TokenParts) -> Vec<u32> {
        (0..self.vocab_len)
            .map(|id| {
                tokens
                    .ordinal(TokenId::new(id))
                    .map_or(NO_ATOM, |o| self.of_ordinal[o])
            })
            .collect()
    }

    /// The terminal trie of start position `p` over atoms (one of the positions the atoms
    /// were made for): finals are sorted atom lists, positions canonical. Nodes no atom
    /// reaches a final through are left out.
    pub fn trie(&self, lexer: &LexerDfa, walks: &Walks<'_>, p: LexPos) -> TerminalTrie<Vec<u32>> {
        // Taken out for the call and put back after it: a trie that panicked leaves the
        // next one a fresh map, not a half-reset one.
        let mut node_of_path = NODE_OF_PATH.take();
        if node_of_path.len() <= self.paths.len() {
            node_of_path.resize(self.paths.len() + 1, NO_NODE);
        }
        let mut made: Vec<u32> = Vec::new();
        let mut pair_of_byte: [Option<Option<u32>>; 256] = [None; 256];
        let mut nodes: Vec<TrieNode<Vec<u32>>> = vec![TrieNode::default()];
        let mut finals: Vec<Vec<(LexPos, Vec<u32>)>> = vec![Vec::new()];
        for block in &self.blocks {
            let b = block.byte;
            let pair = *pair_of_byte[b as usize].get_or_insert_with(|| walks.pair_at(lexer, p, b));
            let Some(pair) = pair else { continue };
            // A pair's walks cover every nonempty part of its byte.
            let w = walks.pair_walks(pair)[block.ordinal as usize];
            let width = block.width as usize;
            let from = block.rows as usize + (w - block.first_walk) as usize * width;
            let atom_outcomes = (block.first_atom..).zip(&self.rows[from..from + width]);
            // Neighbouring atoms mostly end alike (a string position's thousands of
            // atoms all in the same lexeme): each slot's last final, with the node and
            // list it went to, takes the next atom without a lookup.
            let mut last = [(0u32, 0u32, 0usize); 2];
            for (a, &o) in atom_outcomes {
                for (slot, f) in [o.0, o.1].into_iter().enumerate() {
                    if f == 0 {
                        continue;
                    }
                    let (lf, lv, li) = last[slot];
                    if lf == f {
                        finals[lv as usize][li].1.push(a);
                        continue;
                    }
                    let (path, pos) = self.finals[f as usize - 1];
                    let v = self.node(path, &mut node_of_path, &mut made, &mut nodes, &mut finals);
                    let fs = &mut finals[v as usize];
                    let i = match fs.iter().position(|(q, _)| *q == pos) {
                        Some(i) => {
                            fs[i].1.push(a);
                            i
                        }
                        None => {
                            fs.push((pos, vec![a]));
                            fs.len() - 1
                        }
                    };
                    last[slot] = (f, v, i);
                }
            }
        }
        for path in made {
            node_of_path[path as usize] = NO_NODE;
        }
        NODE_OF_PATH.set(node_of_path);
        for (n, mut fs) in nodes.iter_mut().zip(finals) {
            n.children.sort_unstable();
            fs.sort_unstable_by_key(|(q, _)| *q);
            // Atoms were visited in increasing order: the lists are sorted.
            n.finals = fs;
        }
        TerminalTrie { start: p, nodes }
    }

    /// The trie node of `path`, created with its ancestors if new (and their paths
    /// listed in `made`).
    fn node(
        &self,
        path: u32,
        node_of_path: &mut [u32],
        made: &mut Vec<u32>,
        nodes: &mut Vec<TrieNode<Vec<u32>>>,
        finals: &mut Vec<Vec<(LexPos, Vec<u32>)>>,
    ) -> u32 {
        if path == 0 {
            return 0;
        }
        let known = node_of_path[path as usize];
        if known != NO_NODE {
            return known;
        }
        let (parent, e) = self.paths[path as usize - 1];
        let pv = self.node(parent, node_of_path, made, nodes, finals);
        let v = nodes.len() as u32;
        nodes.push(TrieNode::default());
        finals.push(Vec::new());
        nodes[pv as usize].children.push((e, v));
        node_of_path[path as usize] = v;
        made.push(path);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::frontend::json_schema::{compile as schema, SchemaOptions};
    use crate::compile::{build_glr_tables, frontend::lark};

    /// Stored outcomes read into a part's ids are renumbered there, paths before their
    /// finals, and kept smaller first when the renumbering flips a pair; walks sharing
    /// stored runs get equal copies, and walks with none are left alone.
    #[test]
    fn stored_outcomes_are_renumbered_smaller_first() {
        let (pos_a, pos_b) = (
            LexPos::Pending(LexStateId::new(5)),
            LexPos::Boundary(LexStateId::new(7)),
        );
        let mut from = LocalIds::default();
        let path = from.path(0, EmitId(3));
        let a = from.final_id(path, pos_a);
        let b = from.final_id(0, pos_b);
        assert!(a < b);
        let mut known = WalkOutcomes::default();
        known.parts.push(KnownPart {
            ids: from,
            runs: vec![Runs {
                starts: vec![0, 2],
                outs: vec![(a, b), (b, 0)],
                end: 4,
            }],
        });
        // The part's own walk interned `pos_b` first, so the pair's order flips.
        let mut to = LocalIds::default();
        let b_to = to.final_id(0, pos_b);
        let mut outs = vec![Runs::default(), Runs::default(), Runs::default()];
        outs[1].starts = vec![0];
        outs[1].outs = vec![(9, 0)];
        read_stored(
            &known,
            &[Some((0, 0)), None, Some((0, 0))],
            &mut to,
            &mut outs,
        );
        let a_to = to.finals.items().iter().position(|f| f.1 == pos_a).unwrap() as u32 + 1;
        assert_eq!(to.paths.items(), &[(0, EmitId(3))][..]);
        assert_eq!(to.finals.items(), &[(0, pos_b), (1, pos_a)][..]);
        assert!(b_to < a_to);
        for k in [0, 2] {
            assert_eq!(outs[k].starts, vec![0, 2], "walk {k}");
            assert_eq!(outs[k].outs, vec![(b_to, a_to), (b_to, 0)], "walk {k}");
            assert_eq!(outs[k].end, 4, "walk {k}");
        }
        assert_eq!(outs[1].outs, vec![(9, 0)]);
    }

    /// [`loop_categories`] as defined: every byte, and every non-ASCII byte from every
    /// decoder state.
    fn loop_categories_by_every_byte(lexer: &LexerDfa, q: LexStateId) -> u64 {
        let mut leaves = 0u64;
        for b in 0..=255u8 {
            if lexer.next_rep(q, b) != q {
                leaves |= 1 << byte_category(b);
            }
        }
        let all: Vec<u8> = (0x80..=0xffu8).collect();
        let mut v = !leaves & ((1 << NUM_CATEGORIES) - 1);
        if chars_loop(lexer, &all, q) {
            v |= CHARS_LOOP;
        }
        v
    }

    /// Trying one byte per class (and per class and decoder behaviour above 7F) gives
    /// every state's loop categories exactly, on lexers whose classes split the non-ASCII
    /// bytes (strings, patterns with ranges of characters, the built-in JSON grammar) and
    /// on one whose classes do not (ASCII only).
    #[test]
    fn byte_representatives_give_the_loop_categories_of_every_byte() {
        let schema_text = r#"{"type": "object", "properties": {
            "a": {"type": "string", "pattern": "^[a-zé-ü€]+[^\\u0100-\\uffff]*$"},
            "b": {"type": "string", "format": "email", "maxLength": 30}}}"#;
        let grammars = [
            lark::compile(crate::compile::BUILTIN_JSON).unwrap(),
            lark::compile("start: S\nS: /\"[^\"\\xe9]*\"/ | /[\\u0400-\\u04ff]+/\n").unwrap(),
            // ASCII only: every non-ASCII byte is one class, whatever its UTF-8 role.
            lark::compile("start: W+\nW: /[a-z]+/\n%ignore / /\n").unwrap(),
            schema(schema_text, &SchemaOptions::default())
                .unwrap()
                .grammar,
        ];
        let mut chars_loops = 0;
        for (i, g) in grammars.iter().enumerate() {
            let tables = build_glr_tables(g).unwrap();
            let lexer = &tables.lexer;
            let reps = ByteReps::new(lexer);
            let loops: Vec<AtomicU64> =
                (0..lexer.num_states()).map(|_| AtomicU64::new(0)).collect();
            for q in 0..lexer.num_states() {
                let q = LexStateId::new(q);
                let want = loop_categories_by_every_byte(lexer, q);
                chars_loops += usize::from(want & CHARS_LOOP != 0);
                assert_eq!(
                    loop_categories(lexer, &loops, &reps, q),
                    want,
                    "grammar {i}, {q:?}"
                );
            }
        }
        // The decoder check is exercised both ways: some states loop on every character
        // (JSON strings), others on some only (grammar 1 leaves on é and Cyrillic).
        assert!(chars_loops > 0, "no state loops on characters");
    }
}

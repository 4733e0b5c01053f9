//! Pass: lexer DFA × follow tables → which lexer positions the mask automaton cannot
//! tell apart.
//!
//! The automaton sees where a token leaves the lexer only through that position's
//! follow set (`LexFollow`), so token *ends* with equal follow sets, emission and
//! extendability are interchangeable ([`end_reps`]). And a token of at most `D` bytes
//! sees only `D` bytes of the lexer's future, so two *start* states whose futures agree
//! on every label for `D` bytes ([`classes_at_depths`], Moore refinement cut at depth `D`)
//! have the same trie once ends are canonical. This is what keeps a counted string
//! (`maxLength: 1000`, a few lexer states per character) to about `D` × (states per
//! character) distinct tries instead of that many per character: every position more
//! than `D` bytes before the count runs out looks the same from a token's point of view.
//!
//! Depends on the lexer and its follow tables; build time only.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};

use rayon::prelude::*;

use crate::ids::{LexStateId, TerminalId};
use crate::lexer::{LexFollow, LexPos, LexerDfa};
use crate::termset::TermSet;

/// For every lexer state, the state that stands for it where a token ends: the least
/// state with the same extendability, emission and follow sets (pending, and at the
/// boundary it inhibits). Pairs `Pending(q)` / `Boundary(q)` map to one representative,
/// so the classifier's pairing of the two outcomes of a growing complete lexeme holds.
pub fn end_reps(lexer: &LexerDfa, follow: &LexFollow) -> Vec<LexStateId> {
    let n = lexer.num_states();
    // Keyed by reference: cloning two sets per state was most of this on 90K-state lexers.
    let mut index: HashMap<(&[TerminalId], &TermSet, Option<&TermSet>), LexStateId> =
        HashMap::new();
    (0..n)
        .map(|q| {
            let id = LexStateId::new(q);
            if q < 2 || !lexer.can_extend(id) || lexer.is_start(id) {
                // The dead and start states (a further mode's start stands for its plain
                // boundary), and states no token can end pending in (their closed lexeme
                // ends at the uninhibited boundary), stay themselves.
                return id;
            }
            let emits = lexer.emits(id);
            let key = (
                emits,
                follow.after_pending(id),
                (!emits.is_empty()).then(|| follow.at_boundary(id)),
            );
            *index.entry(key).or_insert(id)
        })
        .collect()
}

/// Where a token ending at `p` stands for the automaton: `p` with its lexer state replaced
/// by its [`end_reps`] representative (the uninhibited boundary stays as it is).
pub fn canonical_end(reps: &[LexStateId], p: LexPos) -> LexPos {
    match p {
        LexPos::Pending(q) => LexPos::Pending(reps[q.index()]),
        LexPos::Boundary(q) if q != LexerDfa::DEAD => LexPos::Boundary(reps[q.index()]),
        p => p,
    }
}

/// [`classes_at_depths`] at one depth.
#[cfg(test)]
pub fn start_classes(lexer: &LexerDfa, reps: &[LexStateId], depth: usize) -> Vec<u32> {
    classes_at_depths(lexer, reps, &[depth])
        .pop()
        .expect("one class vector per depth")
}

/// At each of `depths` (ascending), from one refinement: a class per lexer state such
/// that two states of one class lex every byte string of at most that many bytes alike
/// (the same deaths, emissions and extendability, and ends with the same [`end_reps`]
/// representative, at every prefix). Classes are numbered in order of first appearance
/// over the states.
///
/// Each round recomputes only the states with a successor that changed class in the
/// round before: a class split in round `r` can only split its predecessors' classes in
/// round `r + 1`. A counted string splits a few classes per round for as many rounds as
/// the longest token has bytes, and rekeying all of a 100K-state lexer every round was
/// most of a large schema's refinement.
pub fn classes_at_depths(lexer: &LexerDfa, reps: &[LexStateId], depths: &[usize]) -> Vec<Vec<u32>> {
    debug_assert!(depths.windows(2).all(|w| w[0] <= w[1]));
    let n = lexer.num_states();
    let (run_start, runs) = step_runs(lexer);
    let mut class = depth_zero_classes(lexer, reps);
    // Predecessors of each state (each listed once per successor).
    let mut pred_at = vec![0u32; n + 1];
    let mut last_from = vec![u32::MAX; n];
    for q in 0..n {
        for &(_, r) in &runs[run_start[q] as usize..run_start[q + 1] as usize] {
            if last_from[r as usize] != q as u32 {
                last_from[r as usize] = q as u32;
                pred_at[r as usize + 1] += 1;
            }
        }
    }
    for r in 0..n {
        pred_at[r + 1] += pred_at[r];
    }
    let mut fill = pred_at.clone();
    let mut preds = vec![0u32; pred_at[n] as usize];
    last_from.fill(u32::MAX);
    for q in 0..n {
        for &(_, r) in &runs[run_start[q] as usize..run_start[q + 1] as usize] {
            if last_from[r as usize] != q as u32 {
                last_from[r as usize] = q as u32;
                preds[fill[r as usize] as usize] = q as u32;
                fill[r as usize] += 1;
            }
        }
    }
    let mut size: Vec<u32> = Vec::new();
    for &c in &class {
        if size.len() <= c as usize {
            size.resize(c as usize + 1, 0);
        }
        size[c as usize] += 1;
    }
    // Round 1 rekeys every state; later rounds the predecessors of those that moved.
    let mut moved: Vec<u32> = Vec::new();
    let mut dirty: Vec<u32> = (0..n as u32).collect();
    let mut dirty_round = vec![0usize; n];
    let mut keys = KeyArena::default();
    let mut key: Vec<u32> = Vec::new();
    // Per dirty state, its key's id; per key, its class and members.
    let mut key_of: Vec<u32> = Vec::new();
    let mut members: Vec<Vec<u32>> = Vec::new();
    let mut dirty_in: HashMap<u32, u32> = HashMap::new();
    let mut out: Vec<Vec<u32>> = Vec::with_capacity(depths.len());
    let deepest = depths.last().copied().unwrap_or(0);
    for round in 0..=deepest {
        while out.len() < depths.len() && depths[out.len()] == round {
            out.push(numbered_by_first_appearance(&class));
        }
        if round == deepest {
            break;
        }
        if round > 0 {
            dirty.clear();
            for &m in &moved {
                for &q in &preds[pred_at[m as usize] as usize..pred_at[m as usize + 1] as usize] {
                    if dirty_round[q as usize] != round {
                        dirty_round[q as usize] = round;
                        dirty.push(q);
                    }
                }
            }
        }
        moved.clear();
        keys.clear();
        key_of.clear();
        dirty_in.clear();
        for &q in &dirty {
            let q = q as usize;
            refinement_key(q, &class, &run_start, &runs, &mut key);
            let k = keys.intern(&key);
            if k as usize == members.len() {
                members.push(Vec::new());
            }
            members[k as usize].push(q as u32);
            key_of.push(k);
            *dirty_in.entry(class[q]).or_default() += 1;
        }
        // Within a class, states not rekeyed keep their key (no successor moved) and
        // every rekeyed one differs from them (a successor has a fresh class): rekeyed
        // states get fresh classes by key, except that when the whole class was rekeyed
        // its largest group keeps the class.
        let nkeys = keys.len();
        let mut keep: HashMap<u32, u32> = HashMap::new();
        for k in 0..nkeys as u32 {
            let c = class[members[k as usize][0] as usize];
            if dirty_in[&c] != size[c as usize] {
                continue;
            }
            let len = members[k as usize].len();
            keep.entry(c)
                .and_modify(|best| {
                    if members[*best as usize].len() < len {
                        *best = k;
                    }
                })
                .or_insert(k);
        }
        for k in 0..nkeys as u32 {
            let group = std::mem::take(&mut members[k as usize]);
            let c = class[group[0] as usize];
            if keep.get(&c) != Some(&k) {
                let fresh = size.len() as u32;
                size.push(group.len() as u32);
                size[c as usize] -= group.len() as u32;
                for &q in &group {
                    class[q as usize] = fresh;
                }
                moved.extend_from_slice(&group);
            }
            // Keep the allocation for the next round.
            members[k as usize] = group;
            members[k as usize].clear();
        }
        // A refinement that splits nothing is the fixpoint: deeper ones split nothing.
        if moved.is_empty() {
            break;
        }
    }
    while out.len() < depths.len() {
        out.push(numbered_by_first_appearance(&class));
    }
    out
}

/// Writes into `key` what state `q` is split by in a refinement round: its class, then
/// its step function byte class → successor's class as maximal runs (equal keys ⇔ equal
/// functions), over the step runs of [`step_runs`].
fn refinement_key(
    q: usize,
    class: &[u32],
    run_start: &[u32],
    runs: &[(u32, u32)],
    key: &mut Vec<u32>,
) {
    key.clear();
    key.push(class[q]);
    let mut last = u32::MAX;
    for &(c, r) in &runs[run_start[q] as usize..run_start[q + 1] as usize] {
        let rc = class[r as usize];
        if rc != last {
            key.push(c);
            key.push(rc);
            last = rc;
        }
    }
}

/// `(byte class, successor)` runs and, per state, where its runs start (see [`step_runs`];
/// while blocks are read, how many runs each state has).
type StepRuns = (Vec<u32>, Vec<(u32, u32)>);

/// Each state's step function as runs of byte classes with one successor (most bytes
/// go to a few states, so keys stay short): `runs[run_start[q]..run_start[q + 1]]`.
///
/// States are read in parallel blocks: a counted string's lexer has 40K–100K states of
/// ~100 classes, and reading them on one thread was a fifth of the refinement (summed
/// over the 30 schemas around the MaskBench p99).
fn step_runs(lexer: &LexerDfa) -> StepRuns {
    // Small blocks under test, so that the unit tests' lexers span several.
    const BLOCK: usize = if cfg!(test) { 7 } else { 4096 };
    let n = lexer.num_states();
    // Bytes of a class behave alike: one of each is enough.
    let class_reps = lexer.class_representatives();
    // Per block, its states' run counts (not yet offsets) and runs.
    let blocks: Vec<StepRuns> = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|i| {
            let mut lens = Vec::with_capacity(BLOCK);
            let mut runs: Vec<(u32, u32)> = Vec::new();
            for q in i * BLOCK..n.min((i + 1) * BLOCK) {
                let first = runs.len();
                for (c, &b) in class_reps.iter().enumerate() {
                    let r = lexer.next_rep(LexStateId::new(q), b).as_u32();
                    if runs.len() == first || runs.last().map(|x| x.1) != Some(r) {
                        runs.push((c as u32, r));
                    }
                }
                lens.push((runs.len() - first) as u32);
            }
            (lens, runs)
        })
        .collect();
    let mut run_start: Vec<u32> = Vec::with_capacity(n + 1);
    run_start.push(0);
    let mut runs: Vec<(u32, u32)> = Vec::with_capacity(blocks.iter().map(|b| b.1.len()).sum());
    for (lens, block_runs) in blocks {
        for len in lens {
            run_start.push(run_start.last().copied().unwrap_or(0) + len);
        }
        runs.extend(block_runs);
    }
    (run_start, runs)
}

/// Depth 0: the labels a walk reads at a state, numbered in order of first appearance.
///
/// Labels are looked up by borrowed emission lists and fixed-size keys: allocating two
/// vectors per state was most of this for 100K-state lexers.
fn depth_zero_classes(lexer: &LexerDfa, reps: &[LexStateId]) -> Vec<u32> {
    let mut emit_ids: HashMap<&[TerminalId], u32> = HashMap::new();
    let mut index: HashMap<[u32; 4], u32> = HashMap::new();
    (0..lexer.num_states())
        .map(|q| {
            let s = LexStateId::new(q);
            let next = emit_ids.len() as u32;
            let emits = *emit_ids.entry(lexer.emits(s)).or_insert(next);
            let label = [
                q.min(2) as u32,
                u32::from(lexer.can_extend(s)),
                emits,
                // Only an extendable state can be where a token ends pending.
                if lexer.can_extend(s) {
                    reps[q].as_u32()
                } else {
                    u32::MAX
                },
            ];
            let next = index.len() as u32;
            *index.entry(label).or_insert(next)
        })
        .collect()
}

/// `class` renumbered in order of first appearance (the same partition).
fn numbered_by_first_appearance(class: &[u32]) -> Vec<u32> {
    // Class ids are dense (every id ever made keeps a member), so a table serves, a
    // quarter cheaper than a hash map on a large refinement.
    let mut ids = vec![u32::MAX; class.iter().max().map_or(0, |&m| m as usize + 1)];
    let mut next = 0;
    class
        .iter()
        .map(|&c| {
            let id = &mut ids[c as usize];
            if *id == u32::MAX {
                *id = next;
                next += 1;
            }
            *id
        })
        .collect()
}

/// Keys numbered in order of first appearance, stored end to end in one buffer: a
/// refinement round interns one key per lexer state (100K+ for wide lexers), and a map
/// owning a vector per key spent most of the round allocating.
#[derive(Default)]
struct KeyArena {
    words: Vec<u32>,
    /// `(hash, start in words, length)` by key id; the table holds ids.
    spans: Vec<(u64, u32, u32)>,
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl KeyArena {
    fn clear(&mut self) {
        self.words.clear();
        self.spans.clear();
        self.table.clear();
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn intern(&mut self, key: &[u32]) -> u32 {
        let h = self.hasher.hash_one(key);
        let (words, spans) = (&self.words, &self.spans);
        let same = |&i: &u32| {
            let (hh, at, len) = spans[i as usize];
            hh == h && &words[at as usize..(at + len) as usize] == key
        };
        if let Some(&i) = self.table.find(h, same) {
            return i;
        }
        let i = self.spans.len() as u32;
        self.spans
            .push((h, self.words.len() as u32, key.len() as u32));
        self.words.extend_from_slice(key);
        let spans = &self.spans;
        self.table.insert_unique(h, i, |&j| spans[j as usize].0);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{build_glr_tables, frontend::lark};
    use crate::glr::Tables;

    fn tables(grammar: &str) -> Tables {
        build_glr_tables(&lark::compile(grammar).unwrap()).unwrap()
    }

    /// Every state rekeyed every round (the refinement as defined), for comparison.
    fn plain_classes_at_depths(
        lexer: &LexerDfa,
        reps: &[LexStateId],
        depths: &[usize],
    ) -> Vec<Vec<u32>> {
        let n = lexer.num_states();
        let (run_start, runs) = step_runs(lexer);
        let mut class = depth_zero_classes(lexer, reps);
        let mut count = class.iter().max().map_or(0, |&c| c as usize + 1);
        let mut keys = KeyArena::default();
        let mut key: Vec<u32> = Vec::new();
        let mut out: Vec<Vec<u32>> = Vec::new();
        let deepest = depths.last().copied().unwrap_or(0);
        for round in 0..=deepest {
            while out.len() < depths.len() && depths[out.len()] == round {
                out.push(class.clone());
            }
            if round == deepest {
                break;
            }
            keys.clear();
            let mut next = Vec::with_capacity(n);
            for q in 0..n {
                refinement_key(q, &class, &run_start, &runs, &mut key);
                next.push(keys.intern(&key));
            }
            class = next;
            if keys.len() == count {
                break;
            }
            count = keys.len();
        }
        while out.len() < depths.len() {
            out.push(class.clone());
        }
        out
    }

    /// The incremental refinement numbers states exactly as the plain one at every depth,
    /// on lexers with counted strings (runs cut and unrolled), patterns side by side, the
    /// built-in JSON grammar and overlapping terminals.
    #[test]
    fn incremental_refinement_equals_the_plain_one() {
        use crate::compile::frontend::json_schema::{compile as schema, SchemaOptions};
        use crate::compile::lexer::build::{build_lexer_with, LexerOptions};
        use crate::compile::lexer::follow::build_follow;
        let schema_text = r#"{"type": "object", "properties": {
            "a": {"type": "string", "pattern": "^[a-z0-9-]+:[a-z.]+$", "maxLength": 40},
            "b": {"type": "string", "format": "date-time"},
            "c": {"type": "string", "minLength": 2, "maxLength": 300},
            "d": {"type": "integer", "minimum": -40, "maximum": 1200}}}"#;
        let grammars = [
            lark::compile("start: A | B\nA: /x{0,6}a/\nB: /x{0,6}b/\n").unwrap(),
            lark::compile("start: C\nC: /<a{0,20}>/\n").unwrap(),
            lark::compile(crate::compile::BUILTIN_JSON).unwrap(),
            schema(schema_text, &SchemaOptions::default())
                .unwrap()
                .grammar,
        ];
        let depths = [0, 1, 2, 3, 5, 8, 13, 40, 64, 65, 128];
        for (i, g) in grammars.iter().enumerate() {
            for margin in [3, 256] {
                let lexer = build_lexer_with(
                    g,
                    &LexerOptions {
                        count_margin: margin,
                        ..LexerOptions::default()
                    },
                )
                .unwrap();
                let follow = build_follow(&lexer);
                let reps = end_reps(&lexer, &follow);
                let fast = classes_at_depths(&lexer, &reps, &depths);
                let plain = plain_classes_at_depths(&lexer, &reps, &depths);
                for (d, (f, p)) in depths.iter().zip(fast.iter().zip(&plain)) {
                    assert_eq!(f, p, "grammar {i}, margin {margin}, depth {d}");
                }
            }
        }
    }

    /// The state after `prefix` from the start state.
    fn after(lexer: &LexerDfa, prefix: &[u8]) -> LexStateId {
        prefix
            .iter()
            .fold(LexerDfa::START, |q, &b| lexer.next(q, b))
    }

    /// Inside `<a{0,20}>`, the state after i letters can take 20 − i more: with depth d,
    /// states with at least d letters to go look alike (no word of d bytes sees the count
    /// run out), and the last d + 1 (d down to 0 to go) are told apart.
    #[test]
    fn counted_positions_merge_only_beyond_the_depth() {
        let t = tables("start: C\nC: /<a{0,20}>/\n");
        let lexer = &t.lexer;
        let reps = end_reps(lexer, &t.follow);
        let depth = 4;
        let classes = start_classes(lexer, &reps, depth);
        let class_after = |i: usize| {
            let mut p = b"<".to_vec();
            p.extend(std::iter::repeat_n(b'a', i));
            classes[after(lexer, &p).index()]
        };
        // 20 − i ≥ depth ⇔ i ≤ 16.
        for i in 0..=16 {
            assert_eq!(class_after(i), class_after(0), "{i} letters");
        }
        let tail: Vec<u32> = (16..=20).map(class_after).collect();
        let mut distinct = tail.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), tail.len(), "{tail:?}");
        // Every pending position of the count has the same follow set: one end.
        let r = reps[after(lexer, b"<").index()];
        for i in 1..=20 {
            let mut p = b"<".to_vec();
            p.extend(std::iter::repeat_n(b'a', i));
            assert_eq!(reps[after(lexer, &p).index()], r, "{i} letters");
        }
    }

    /// Two terminals that overlap until one byte tells them apart keep distinct ends and
    /// distinct start classes for as deep as the difference is.
    #[test]
    fn labels_keep_terminals_apart() {
        let t = tables("start: A | B\nA: /x{0,6}a/\nB: /x{0,6}b/\n");
        let lexer = &t.lexer;
        let reps = end_reps(lexer, &t.follow);
        let x1 = after(lexer, b"x");
        let x2 = after(lexer, b"xx");
        // Both still reach A and B: same follow set, same end.
        assert_eq!(reps[x1.index()], reps[x2.index()]);
        // One byte deep they look alike; seven bytes see x2's count run out first.
        let shallow = start_classes(lexer, &reps, 1);
        assert_eq!(shallow[x1.index()], shallow[x2.index()]);
        let deep = start_classes(lexer, &reps, 7);
        assert_ne!(deep[x1.index()], deep[x2.index()]);
        let a = after(lexer, b"xa");
        let b = after(lexer, b"xb");
        assert_ne!(reps[a.index()], reps[b.index()]);
    }
}

//! Walking one part's tokens through the lexer from each of its entered states, node by
//! node down the part's trie (walks that agree share the work of a leader), into runs of
//! emission paths and finals.

use super::*;

/// Walks part `j`'s tokens from each of its walks' entered states, groups the tokens by
/// their outcomes, and lists which position groups enter with which walk.
///
/// The walk most positions enter is the reference [`walk_part`] copies from: key-literal
/// positions enter a part in a literal's state but most tokens leave the literal after a
/// byte or two and rejoin the generic string's walk, so most of their walking is skipped.
pub(super) fn group_part(
    lexer: &LexerDfa,
    emits: &EmitTable,
    walks: &Walks<'_>,
    canon: &(impl Fn(LexPos) -> LexPos + Sync),
    spec: PartSpec<'_>,
    cache: &mut StateCache<'_>,
) -> PartGroups {
    let PartSpec {
        j,
        ordinal,
        walks: ws,
        members,
        group_sizes,
        known,
    } = spec;
    let nw = ws.len();
    let mut entering = vec![0usize; nw + 1];
    for &(k, g) in &members {
        entering[k as usize] += group_sizes[g as usize];
    }
    // Per walk, its outcomes as `alike_positions` left them, if it walked it.
    let stored: Vec<Option<(u32, u32)>> = (0..nw)
        .map(|k| {
            let key = (j as u32, walks.start(ws.start as usize + k).as_u32());
            known.and_then(|known| known.class.get(&key).copied())
        })
        .collect();
    let walked: Vec<bool> = stored.iter().map(Option::is_none).collect();
    let reference = (0..nw)
        .filter(|&k| walked[k])
        .max_by_key(|&k| entering[k])
        .unwrap_or(0);
    let mut ids = LocalIds::default();
    walk_part(
        lexer,
        emits,
        walks,
        canon,
        j,
        ws.clone(),
        reference,
        &walked,
        &mut ids,
        cache,
    );
    if let Some(known) = known {
        read_stored(known, &stored, &mut ids, &mut cache.outs);
    }
    // Tokens with equal outcomes under every walk form a group: the walks' runs are cut
    // wherever any of them changes, and each piece's row is looked up (pieces in order,
    // so groups are numbered by their first token).
    let outs = &cache.outs[..nw];
    let mut cuts: Vec<u32> = outs.iter().flat_map(|r| r.starts.iter().copied()).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut group_of_row: HashMap<Vec<Outcome>, u32> = HashMap::new();
    let mut rows: Vec<Vec<Outcome>> = Vec::new();
    let mut cursor = vec![0usize; nw];
    let mut row = vec![(0, 0); nw];
    let mut token_group: Vec<(u32, u32)> = Vec::new();
    for &c in &cuts {
        for (k, r) in outs.iter().enumerate() {
            let i = &mut cursor[k];
            while r.starts.get(*i + 1).is_some_and(|&s| s <= c) {
                *i += 1;
            }
            row[k] = r.outs[*i];
        }
        let g = match group_of_row.get(row.as_slice()) {
            Some(&g) => g,
            None => {
                let g = rows.len() as u32;
                group_of_row.insert(row.clone(), g);
                rows.push(row.clone());
                g
            }
        };
        if token_group.last().is_none_or(|&(_, last)| last != g) {
            token_group.push((c, g));
        }
    }
    PartGroups {
        part: j,
        ordinal,
        first_walk: ws.start,
        paths: ids.paths.into_items(),
        finals: ids.finals.into_items(),
        token_group,
        rows,
        members,
        num_walks: nw,
    }
}

/// Walks part `j`'s tokens under each of its walks `ws`, leaving the `k`-th walk's
/// outcomes in `cache.outs[k]` (finals and paths interned in `ids`); walks not `walked`
/// are left empty.
///
/// The walks go down the part's trie together, node by node (each node's walks listed
/// with the reference first): one walk's steps depend on each other, but different walks'
/// steps at a node do not, so their lexer table reads overlap instead of waiting in turn
/// (about twice as fast as one walk after another), and each node's data is read once
/// for all of them.
///
/// Walks reaching a node in states alike for the rest of its subtree (one class of
/// [`Walks::classes_to_depth`] at the subtree's height), all with nothing closed, have
/// from there the same outcomes for every token of the subtree: the first one met there
/// (the reference, when it is among them) leads and walks on, and the others copy its
/// outcomes once the subtree is behind. A walk that looped on every byte below an
/// ancestor still leads there, in the state it looped in. Comparing classes, not states,
/// is what lets a counted string's walks meet: they enter a state per count, and most
/// counts stop mattering a few bytes in, once no token below can reach a bound.
#[allow(clippy::too_many_arguments)]
pub(super) fn walk_part(
    lexer: &LexerDfa,
    emits: &EmitTable,
    walks: &Walks<'_>,
    canon: &(impl Fn(LexPos) -> LexPos + Sync),
    j: usize,
    ws: std::ops::Range<u32>,
    reference: usize,
    walked: &[bool],
    ids: &mut LocalIds,
    cache: &mut StateCache<'_>,
) {
    let tokens = walks.tokens;
    let nodes = tokens.part_nodes(j);
    let first_token = tokens.part_tokens(j).start;
    let num_tokens = tokens.part_tokens(j).len();
    let nw = ws.len();
    // Buffers reused from part to part.
    cache.prepare(lexer.num_states(), nw, tokens.longest());
    let StateCache {
        ends,
        loops,
        reps,
        outs,
        live,
        pending,
        leaders,
        stamp,
    } = cache;
    // outs[k]: the part's tokens' outcomes under its k-th walk. live[d]: the walks alive
    // at the current path's node of depth d; live[0] enters the part (its first byte's
    // node, of depth 1, is where each walk starts).
    // Callers only hand in parts some position enters (`nw > 0`).
    debug_assert!(nw > 0, "a part no position enters is skipped by the caller");
    live[0].clear();
    for k in std::iter::once(reference).chain((0..nw).filter(|&k| k != reference)) {
        // Walks not walked have known outcomes (left empty here).
        if walked[k] {
            live[0].push((k as u32, walks.start(ws.start as usize + k), 0));
        }
    }
    let part_token = |o: usize| (o - first_token) as u32;
    // Walks below a node where they looped on every byte (so were resolved for the whole
    // subtree at once and are walked no further), still leading their class there:
    // `(subtree end, walk, state, whether it loops on every byte, not only on whole
    // characters)`, innermost last.
    let mut looping: SmallVec<[(usize, u32, LexStateId, bool); 8]> = SmallVec::new();
    let mut n = nodes.start;
    while n < nodes.end {
        // Copies whose subtree is behind are due before their walks' next outcomes (a
        // later copy lies in an earlier one's subtree or after it, so the stack's top
        // ends first).
        while let Some(&(k, leader, from, to, end)) = pending.last() {
            if end as usize > n {
                break;
            }
            pending.pop();
            copy_from_leader(outs, k as usize, leader as usize, from, to);
        }
        let d = tokens.depth(n);
        let (above, here) = live.split_at_mut(d);
        let (parent, alive) = (&above[d - 1], &mut here[0]);
        alive.clear();
        let byte = tokens.byte(n);
        let below = tokens.below(n);
        let ending = tokens.ending_at(n);
        // Walks alike to the rest of this node's subtree (one class at its height, both
        // with nothing closed) have the same outcomes for all its tokens: the first one
        // met leads, the others copy from it.
        while looping.last().is_some_and(|l| l.0 <= n) {
            looping.pop();
        }
        // Only where a copy spares more than it costs: a subtree of a few nodes, with
        // some walk to copy from.
        let lead = tokens.subtree_end(n) - n >= LEAD_MIN_NODES && parent.len() + looping.len() > 1;
        // How far walks here must be alike: the most bytes a token below has left.
        let alike = if lead {
            walks.classes_to_depth(tokens.height(n))
        } else {
            None
        };
        let class_of = |q: LexStateId| alike.map_or(q.as_u32(), |c| c[q.index()]) as usize;
        if lead {
            next_stamp(stamp, leaders);
            // Walks looping above still lead their class here; looping on whole
            // characters, a walk is back in `q` after an ASCII byte.
            for &(_, k, q, every) in &looping {
                if every || byte < 0x80 {
                    let slot = &mut leaders[class_of(q)];
                    if slot.0 != *stamp {
                        *slot = (*stamp, k);
                    }
                }
            }
        }
        let stamp = *stamp;
        for &(k, q, path) in parent.iter() {
            let next = if d == 1 {
                Some((q, path))
            } else {
                step(lexer, emits, ids, (q, path), byte)
            };
            // Dead: every token of the subtree stays not viable.
            let Some(w) = next else { continue };
            if lead && w.1 == 0 {
                let slot = &mut leaders[class_of(w.0)];
                if slot.0 == stamp {
                    // Every token of the subtree behaves as under the leader.
                    let sub = tokens.subtree_tokens(n);
                    let end = tokens.subtree_end(n) as u32;
                    let (from, to) = (part_token(sub.start), part_token(sub.end));
                    pending.push((k, slot.1, from, to, end));
                    continue;
                }
                *slot = (stamp, k);
            }
            // A state that loops on every byte below leaves the whole subtree's tokens
            // where it leaves the node's own: one outcome for all of them. So does one
            // that loops on the ASCII bytes below and on every character, when the
            // subtree continues with whole characters only (text in a string).
            let (whole, every) = if below == 0 {
                (false, false)
            } else {
                let l = loop_categories(lexer, loops, reps, w.0);
                let every = below & !l == 0;
                let chars = l & CHARS_LOOP != 0
                    && below & ASCII_CATEGORIES & !l == 0
                    && tokens.whole_chars_below(n);
                (every || chars, every)
            };
            // One looping walk per state leads (the innermost is enough).
            if whole && w.1 == 0 && looping.last().is_none_or(|l| l.2 != w.0 || l.3 != every) {
                looping.push((tokens.subtree_end(n), k, w.0, every));
            }
            let ending = if whole {
                tokens.subtree_tokens(n)
            } else {
                ending.clone()
            };
            if !ending.is_empty() {
                let o = ending_outcome(lexer, emits, canon, ids, ends, j, w);
                let from = part_token(ending.start);
                outs[k as usize].set(from, from + ending.len() as u32, o);
            }
            if !whole {
                alive.push((k, w.0, w.1));
            }
        }
        n = if alive.is_empty() {
            tokens.subtree_end(n)
        } else {
            n + 1
        };
    }
    while let Some((k, leader, from, to, _)) = pending.pop() {
        copy_from_leader(outs, k as usize, leader as usize, from, to);
    }
    for (k, r) in outs[..nw].iter_mut().enumerate() {
        if walked[k] {
            r.finish(num_tokens as u32);
        }
    }
}

/// Numbers the next node whose leaders are recorded: entries of `leaders` stamped
/// otherwise are stale. On wrap-around every entry is cleared.
fn next_stamp(stamp: &mut u32, leaders: &mut [(u32, u32)]) {
    *stamp = stamp.wrapping_add(1);
    if *stamp == 0 {
        leaders.fill((0, 0));
        *stamp = 1;
    }
}

/// The outcome of a token ending in walk state `w` in part `j`. Most tokens end with no
/// lexeme closed, in a few states: their outcome is looked up by state in `ends`
/// (entries of this part only, tagged by `j`).
fn ending_outcome(
    lexer: &LexerDfa,
    emits: &EmitTable,
    canon: &(impl Fn(LexPos) -> LexPos + Sync),
    ids: &mut LocalIds,
    ends: &mut [(u32, Outcome)],
    j: usize,
    (q, path): (LexStateId, u32),
) -> Outcome {
    let cached = &mut ends[q.index()];
    if path == 0 && cached.0 == j as u32 {
        return cached.1;
    }
    let o = end_outcome(lexer, emits, canon, ids, q, path);
    if path == 0 {
        *cached = (j as u32, o);
    }
    o
}

/// Gives walk `k` its leader's outcomes for tokens `from..to`, once the leader has passed
/// them (tokens it left unset there are not viable).
pub(super) fn copy_from_leader(outs: &mut [Runs], k: usize, leader: usize, from: u32, to: u32) {
    outs[leader].cover(to);
    let (walk, leader) = two_mut(outs, k, leader);
    walk.copy(leader, from, to);
}

/// Fills `outs[k]` for each walk `k` with stored outcomes, renumbered into `ids` (walks
/// sharing stored runs are renumbered once and copied).
pub(super) fn read_stored(
    known: &WalkOutcomes,
    stored: &[Option<(u32, u32)>],
    ids: &mut LocalIds,
    outs: &mut [Runs],
) {
    // Per stored path and final id, its id in `ids` (0: not yet; ids start at 1).
    let mut path_map: Vec<u32> = Vec::new();
    let mut final_map: Vec<u32> = Vec::new();
    let mut done: HashMap<(u32, u32), usize> = HashMap::new();
    for (k, s) in stored.iter().enumerate() {
        let Some(s) = *s else { continue };
        if let Some(&k0) = done.get(&s) {
            let (to, from) = two_mut(outs, k, k0);
            to.clone_from(from);
            continue;
        }
        done.insert(s, k);
        // One part's walks are all in its one slot, so the maps serve every walk here.
        debug_assert!(stored.iter().flatten().all(|t| t.0 == s.0));
        let part = &known.parts[s.0 as usize];
        if path_map.len() < part.ids.paths.items().len() + 1 {
            path_map.resize(part.ids.paths.items().len() + 1, 0);
            final_map.resize(part.ids.finals.items().len() + 1, 0);
        }
        let src = &part.runs[s.1 as usize];
        let mut one = |f: u32| -> u32 {
            if f == 0 {
                return 0;
            }
            if final_map[f as usize] == 0 {
                let (path, pos) = part.ids.finals.items()[f as usize - 1];
                let path = renumber_path(&part.ids, path, ids, &mut path_map);
                final_map[f as usize] = ids.final_id(path, pos);
            }
            final_map[f as usize]
        };
        let out = &mut outs[k];
        out.clear();
        out.starts.extend_from_slice(&src.starts);
        out.outs.extend(src.outs.iter().map(|&(a, b)| {
            let (a, b) = (one(a), one(b));
            // Smaller first, as outcomes are kept.
            if b != 0 && b < a {
                (b, a)
            } else {
                (a, b)
            }
        }));
        out.end = src.end;
    }
}

/// Path `p` of `from` as an id of `to`, parents first (memoized in `map`, 0: not yet).
pub(super) fn renumber_path(from: &LocalIds, p: u32, to: &mut LocalIds, map: &mut [u32]) -> u32 {
    if p == 0 {
        return 0;
    }
    if map[p as usize] == 0 {
        let (parent, e) = from.paths.items()[p as usize - 1];
        let parent = renumber_path(from, parent, to, map);
        map[p as usize] = to.path(parent, e);
    }
    map[p as usize]
}

/// Two distinct elements of a slice, the first mutable.
pub(super) fn two_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &T) {
    debug_assert_ne!(a, b);
    if a < b {
        let (x, y) = v.split_at_mut(b);
        (&mut x[a], &y[0])
    } else {
        let (x, y) = v.split_at_mut(a);
        (&mut y[0], &x[b])
    }
}

/// The outcome of a token ending in state `q` after the emission path `path`: pending in
/// `q` if it can grow, and closed as `q`'s lexeme (inhibited by it if it can grow).
pub(super) fn end_outcome(
    lexer: &LexerDfa,
    emits: &EmitTable,
    canon: &impl Fn(LexPos) -> LexPos,
    ids: &mut LocalIds,
    q: LexStateId,
    path: u32,
) -> Outcome {
    let mut o = (0u32, 0u32);
    if lexer.can_extend(q) {
        o.0 = ids.final_id(path, canon(LexPos::Pending(q)));
    }
    if let Some(e) = emits.of_state(q) {
        let inhibitor = if lexer.can_extend(q) {
            q
        } else {
            lexer.plain_boundary(q)
        };
        let child = ids.path(path, e);
        let f = ids.final_id(child, canon(LexPos::Boundary(inhibitor)));
        o = if o.0 == 0 {
            (f, 0)
        } else {
            (o.0.min(f), o.0.max(f))
        };
    }
    o
}

/// One byte of a walk: the lexer state and the emission path closed so far, or `None`
/// when the token cannot go on (as `terminal_trie`'s walks).
pub(super) fn step(
    lexer: &LexerDfa,
    emits: &EmitTable,
    ids: &mut LocalIds,
    (q, path): (LexStateId, u32),
    byte: u8,
) -> Option<(LexStateId, u32)> {
    let n = lexer.next_rep(q, byte);
    if !lexer.is_dead(n) {
        return Some((n, path));
    }
    if lexer.is_start(q) {
        return None;
    }
    let e = emits.of_state(q)?;
    let path = ids.path(path, e);
    let q = lexer.next_rep(lexer.start_after(q), byte);
    (!lexer.is_dead(q)).then_some((q, path))
}

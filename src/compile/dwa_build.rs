//! Pass: recognizer tables × vocabulary → the mask automaton ([`Dwa`]).
//!
//! First version: exact, built by explicit subset construction. Compile time is fine for
//! JSON and small grammars and not yet for language grammars (Java does not finish).
//!
//! An *item* is a terminal-trie node (tokens whose bytes have so far emitted the lexemes on
//! the path to it), a *phase* (about to expand the node, or in the middle of consuming one
//! terminal on the way to a child or to deciding a final token group), and the *known
//! stack*: the LR states known to be on top of the real stack, top first, whose last entry
//! is the deepest stack id read so far. Processing simulates every (conflicting) LR action
//! on the known stack: a final group is decided when a terminal that may follow it
//! lexically can be consumed; children are reached by shifting each reading of the next
//! lexeme (or skipping an ignored one). When a reduction must pop below the known part,
//! the item is suspended right there; reading the next stack id `x` appends `x` and
//! resumes it. Popped ids are forgotten, so the known stack stays short and automaton
//! states repeat (DESIGN.md §3's push-then-pop cancellation). An automaton state is its
//! set of seed items; its final weight holds the tokens decided there, and each edge the
//! tokens the resumed items can still decide, minus those decided here (final-weight
//! subtraction). Edges exist only for ids that can sit below the deepest id read (LR
//! predecessors).

use hashbrown::{HashMap, HashSet};
use roaring::RoaringBitmap;
use smallvec::SmallVec;

use super::error::GrammarError;
use super::terminal_trie::{build_all, EmitTable, TerminalTrie};
use crate::dwa::{Dwa, DwaState};
use crate::glr::Tables;
use crate::ids::{DwaStateId, LrStateId, TerminalId, WeightId};
use crate::lexer::LexPos;
use crate::lr::Action;
use crate::vocab::Vocab;

/// Most automaton states; bounds compile time and memory.
pub const MAX_DWA_STATES: usize = 2_000_000;

type Stack = SmallVec<[LrStateId; 8]>;

/// What an item is doing at its trie node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Phase {
    /// About to decide the node's final groups and expand its children.
    Node,
    /// Consuming terminal `t` (reductions, then the shift) on the item's stack, on the way
    /// to `target`.
    Consume { t: TerminalId, target: Target },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Target {
    /// Shift into this child node.
    Child(u32),
    /// Decide the node's final group with this index (`t` is a lookahead).
    Final(u32),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Item {
    trie: u32,
    node: u32,
    phase: Phase,
    /// The known top of the stack, top first; the last entry is the deepest id read.
    stack: Stack,
}

#[derive(Default, Clone)]
struct Consume {
    /// Stacks after the shift.
    results: Vec<Stack>,
    /// End of input accepted.
    accepted: bool,
    /// Stacks at which a reduction needs an id below the known part.
    suspended: Vec<Stack>,
}

struct Builder<'a> {
    tables: &'a Tables,
    emits: EmitTable,
    tries: Vec<TerminalTrie>,
    /// Tokens in each trie node's subtree.
    subtree: Vec<Vec<RoaringBitmap>>,
    /// LR states with a transition into each state (who can sit below it).
    preds: Vec<Vec<LrStateId>>,
    weights: Vec<RoaringBitmap>,
    /// Interned weights by their serialized form (roaring bitmaps are not `Hash`).
    weight_index: HashMap<Vec<u8>, WeightId>,
    states: Vec<DwaState>,
    state_index: HashMap<Vec<Item>, DwaStateId>,
    /// Waiting items of each state, until its transitions are built.
    pending: Vec<(DwaStateId, Vec<Item>, RoaringBitmap)>,
    max_states: usize,
    consume_memo: HashMap<(Stack, TerminalId), Consume>,
}

impl Builder<'_> {
    fn weight(&mut self, mut w: RoaringBitmap) -> WeightId {
        w.optimize();
        let mut key = Vec::with_capacity(w.serialized_size());
        // Writing into a Vec cannot fail.
        w.serialize_into(&mut key).expect("serialize into memory");
        if let Some(&id) = self.weight_index.get(&key) {
            return id;
        }
        let id = WeightId::new(self.weights.len());
        self.weights.push(w);
        self.weight_index.insert(key, id);
        id
    }

    /// Every way of consuming terminal `t` on the known stack `k`: the stacks after the
    /// shift, whether end of input is accepted, and where reductions ran out of stack.
    fn consume(&mut self, k: &[LrStateId], t: TerminalId) -> Consume {
        let key = (Stack::from_slice(k), t);
        if let Some(c) = self.consume_memo.get(&key) {
            return c.clone();
        }
        let lr = &self.tables.lr;
        let mut out = Consume::default();
        let mut work: Vec<Stack> = vec![Stack::from_slice(k)];
        let mut seen: HashSet<Stack> = HashSet::new();
        while let Some(s) = work.pop() {
            for a in lr.actions(s[0], t) {
                match *a {
                    Action::Shift(n) => {
                        let mut ns = Stack::with_capacity(s.len() + 1);
                        ns.push(n);
                        ns.extend_from_slice(&s);
                        out.results.push(ns);
                    }
                    Action::Accept => out.accepted = true,
                    Action::Reduce(p) => {
                        let len = lr.rhs_len(p);
                        if len >= s.len() {
                            out.suspended.push(s.clone());
                            continue;
                        }
                        let Some(g) = lr.goto(s[len], lr.lhs(p)) else {
                            continue;
                        };
                        let mut ns = Stack::with_capacity(s.len() - len + 1);
                        ns.push(g);
                        ns.extend_from_slice(&s[len..]);
                        if seen.insert(ns.clone()) {
                            work.push(ns);
                        }
                    }
                }
            }
        }
        for v in [&mut out.results, &mut out.suspended] {
            v.sort();
            v.dedup();
        }
        self.consume_memo.insert(key, out.clone());
        out
    }

    /// Processes seed items: the tokens decided, and the items waiting for a deeper id.
    fn saturate(&mut self, seeds: &[Item]) -> (RoaringBitmap, Vec<Item>) {
        let mut decided = RoaringBitmap::new();
        let mut waiting: Vec<Item> = Vec::new();
        let mut seen: HashSet<Item> = HashSet::new();
        let mut work: Vec<Item> = seeds.to_vec();
        while let Some(it) = work.pop() {
            if !seen.insert(it.clone()) {
                continue;
            }
            let trie = it.trie as usize;
            match it.phase {
                Phase::Node => {
                    let node = &self.tries[trie].nodes[it.node as usize];
                    let finals: Vec<LexPos> = node.finals.iter().map(|(p, _)| *p).collect();
                    let children = node.children.clone();
                    for (gi, pos) in finals.into_iter().enumerate() {
                        if self.tries[trie].nodes[it.node as usize].finals[gi]
                            .1
                            .is_subset(&decided)
                        {
                            continue;
                        }
                        let follow = match pos {
                            LexPos::Pending(q) => self.tables.follow.after_pending(q),
                            LexPos::Boundary(p) => self.tables.follow.at_boundary(p),
                        };
                        for t in follow.iter() {
                            if self.tables.lr.actions(it.stack[0], t).is_empty() {
                                continue;
                            }
                            work.push(Item {
                                phase: Phase::Consume {
                                    t,
                                    target: Target::Final(gi as u32),
                                },
                                ..it.clone()
                            });
                        }
                    }
                    for (e, child) in children {
                        for &t in self.emits.terminals(e) {
                            if self.tables.lexer.is_ignored(t) {
                                work.push(Item {
                                    node: child,
                                    phase: Phase::Node,
                                    ..it.clone()
                                });
                            } else if !self.tables.lr.actions(it.stack[0], t).is_empty() {
                                work.push(Item {
                                    phase: Phase::Consume {
                                        t,
                                        target: Target::Child(child),
                                    },
                                    ..it.clone()
                                });
                            }
                        }
                    }
                }
                Phase::Consume { t, target } => {
                    if let Target::Final(gi) = target {
                        if self.tries[trie].nodes[it.node as usize].finals[gi as usize]
                            .1
                            .is_subset(&decided)
                        {
                            continue;
                        }
                    }
                    let c = self.consume(&it.stack, t);
                    for s in c.suspended {
                        waiting.push(Item {
                            stack: s,
                            ..it.clone()
                        });
                    }
                    match target {
                        Target::Final(gi) => {
                            if c.accepted || !c.results.is_empty() {
                                decided |=
                                    &self.tries[trie].nodes[it.node as usize].finals[gi as usize].1;
                            }
                        }
                        Target::Child(child) => {
                            for s in c.results {
                                work.push(Item {
                                    trie: it.trie,
                                    node: child,
                                    phase: Phase::Node,
                                    stack: s,
                                });
                            }
                        }
                    }
                }
            }
        }
        waiting.sort();
        waiting.dedup();
        (decided, waiting)
    }

    /// The state for `seeds` (processed and queued on first sight).
    fn state_for(&mut self, mut seeds: Vec<Item>) -> Result<DwaStateId, GrammarError> {
        seeds.sort();
        seeds.dedup();
        if let Some(&s) = self.state_index.get(&seeds) {
            return Ok(s);
        }
        if self.states.len() >= self.max_states {
            return Err(GrammarError::TooLarge {
                span: Default::default(),
                what: "mask automaton states".into(),
                limit: self.max_states,
            });
        }
        let (decided, waiting) = self.saturate(&seeds);
        let id = DwaStateId::new(self.states.len());
        let fw = self.weight(decided.clone());
        self.states.push(DwaState {
            final_weight: fw,
            trans: Vec::new(),
        });
        self.state_index.insert(seeds, id);
        if !waiting.is_empty() {
            self.pending.push((id, waiting, decided));
        }
        Ok(id)
    }

    fn alive(&self, items: &[Item]) -> RoaringBitmap {
        let mut w = RoaringBitmap::new();
        for it in items {
            let t = it.trie as usize;
            match it.phase {
                Phase::Node => w |= &self.subtree[t][it.node as usize],
                Phase::Consume {
                    target: Target::Child(c),
                    ..
                } => w |= &self.subtree[t][c as usize],
                Phase::Consume {
                    target: Target::Final(gi),
                    ..
                } => w |= &self.tries[t].nodes[it.node as usize].finals[gi as usize].1,
            }
        }
        w
    }

    /// Builds the transitions of queued states until none is left.
    fn drain(&mut self) -> Result<(), GrammarError> {
        while let Some((id, waiting, decided)) = self.pending.pop() {
            let mut by_x: Vec<(LrStateId, Vec<Item>)> = Vec::new();
            let mut xs: Vec<LrStateId> = waiting
                .iter()
                .flat_map(|it| {
                    self.preds[it.stack.last().expect("stacks are never empty").index()]
                        .iter()
                        .copied()
                })
                .collect();
            xs.sort();
            xs.dedup();
            for x in xs {
                let seeds: Vec<Item> = waiting
                    .iter()
                    .filter(|it| {
                        self.preds[it.stack.last().expect("non-empty").index()].contains(&x)
                    })
                    .map(|it| {
                        let mut s = it.stack.clone();
                        s.push(x);
                        Item {
                            stack: s,
                            ..it.clone()
                        }
                    })
                    .collect();
                by_x.push((x, seeds));
            }
            let mut trans = Vec::new();
            for (x, seeds) in by_x {
                let alive = &self.alive(&seeds) - &decided;
                if alive.is_empty() {
                    continue;
                }
                let t = self.state_for(seeds)?;
                let w = self.weight(alive);
                trans.push((x, t, w));
            }
            self.states[id.index()].trans = trans;
        }
        Ok(())
    }
}

fn subtree_tokens(trie: &TerminalTrie) -> Vec<RoaringBitmap> {
    // Children always have larger indices than their parent (they are created later).
    let mut out: Vec<RoaringBitmap> = trie
        .nodes
        .iter()
        .map(|n| {
            let mut w = RoaringBitmap::new();
            for (_, t) in &n.finals {
                w |= t;
            }
            w
        })
        .collect();
    for i in (0..trie.nodes.len()).rev() {
        for &(_, c) in &trie.nodes[i].children {
            let cw = out[c as usize].clone();
            out[i] |= cw;
        }
    }
    out
}

/// Builds the mask automaton of a grammar's tables for a vocabulary.
pub fn build_dwa(tables: &Tables, vocab: &Vocab) -> Result<Dwa, GrammarError> {
    build_dwa_limited(tables, vocab, MAX_DWA_STATES)
}

/// [`build_dwa`] with a smaller state budget, for callers that have a fallback.
pub fn build_dwa_limited(
    tables: &Tables,
    vocab: &Vocab,
    max_states: usize,
) -> Result<Dwa, GrammarError> {
    let (emits, tries) = build_all(&tables.lexer, vocab);
    let subtree = tries.iter().map(subtree_tokens).collect();
    let lr = &tables.lr;
    let mut preds: Vec<Vec<LrStateId>> = vec![Vec::new(); lr.num_states()];
    for s in 0..lr.num_states() {
        let s = LrStateId::new(s);
        for t in 0..lr.num_terminals() {
            for a in lr.actions(s, TerminalId::new(t)) {
                if let Action::Shift(n) = *a {
                    preds[n.index()].push(s);
                }
            }
        }
        for n in 0..lr.num_nonterminals() {
            if let Some(g) = lr.goto(s, crate::ids::NonterminalId::new(n)) {
                preds[g.index()].push(s);
            }
        }
    }
    for p in &mut preds {
        p.sort();
        p.dedup();
    }
    let mut b = Builder {
        tables,
        emits,
        tries,
        subtree,
        preds,
        weights: Vec::new(),
        weight_index: HashMap::new(),
        states: Vec::new(),
        state_index: HashMap::new(),
        pending: Vec::new(),
        max_states,
        consume_memo: HashMap::new(),
    };
    b.weight(RoaringBitmap::new());
    let mut starts = Vec::new();
    for ti in 0..b.tries.len() {
        // The start state reads the top of the stack: any LR state can be there.
        let start = DwaStateId::new(b.states.len());
        let empty = b.weight(RoaringBitmap::new());
        b.states.push(DwaState {
            final_weight: empty,
            trans: Vec::new(),
        });
        let all = b.subtree[ti][0].clone();
        let mut trans = Vec::new();
        // A stack top with no action on any terminal that can come next lexically from
        // this position contributes nothing to a mask: no edge for it.
        let next_terms = match b.tries[ti].start {
            LexPos::Pending(q) => tables.follow.after_pending(q).clone(),
            LexPos::Boundary(p) => tables.follow.at_boundary(p).clone(),
        };
        for x in 0..lr.num_states() {
            let x = LrStateId::new(x);
            if next_terms.iter().all(|t| lr.actions(x, t).is_empty()) {
                continue;
            }
            let mut stack = Stack::new();
            stack.push(x);
            let seed = vec![Item {
                trie: ti as u32,
                node: 0,
                phase: Phase::Node,
                stack,
            }];
            let t = b.state_for(seed)?;
            let useful = !b.weights[b.states[t.index()].final_weight.index()].is_empty()
                || b.pending.iter().any(|(id, _, _)| *id == t)
                || !b.states[t.index()].trans.is_empty();
            if useful {
                let w = b.weight(all.clone());
                trans.push((x, t, w));
            }
            b.drain()?;
        }
        b.states[start.index()].trans = trans;
        starts.push((b.tries[ti].start, start));
    }
    Dwa::from_parts(
        b.weights,
        b.states,
        starts,
        vocab.len(),
        vocab.eos().to_vec(),
    )
    .map_err(|e| GrammarError::TooLarge {
        span: Default::default(),
        what: format!("mask automaton ({e})"),
        limit: 0,
    })
}

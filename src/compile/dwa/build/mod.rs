//! Pass: recognizer tables × vocabulary → the mask automaton ([`Dwa`]).
//!
//! Weights are sets of token *classes* (see `token_classes`): tokens that lex into the
//! same emissions with the same outcome from a start position. Start positions whose class
//! structure (shape) is equal share every automaton state; the boundary after a lexeme
//! that could grow shares the plain boundary's shape, its inhibited tokens removed only
//! from its class → token table.
//!
//! A state is a *suspended effect*: a reduction that pops the whole known stack (`prod`,
//! with `skip` ids still to pop below the one about to be read), started either by a
//! lexeme to shift (`Next::Shift(t)`, with `depth`, the lexemes the riders will have
//! consumed) or by a lookahead check deciding tokens that end there (`Next::Look(set)`:
//! some terminal of the set can follow; such states need no depth, since deciding does
//! not depend on where the riders are). What happens next depends only on this key and
//! the ids below, never on the popped ids or the trie node, so the state count is that of
//! the grammar's (terminal, production, depth) combinations rather than of token paths.
//! Which token classes ride on a state is carried by the weights.
//!
//! Reading an id resumes the effect: the goto, the rest of the reductions and the shift
//! of `t`, then an *exploration* of what the riding classes do next with the now known
//! stack top: decide (a lookahead is consumable), go on lexeme by lexeme, or suspend again.
//! Explorations run over class sets depth by depth (`K ∩ emits[d][e]`) and, because every
//! step is an intersection with a fixed set or a union, the result for any riding set
//! `R ⊆ K` is `R ∩ result(K)`: one precomputed edge serves every rider. Each state keeps
//! `K` = the union of everything that can ride on it (a fixpoint, recomputed when it
//! grows). Decided classes are subtracted from everything waiting on the same edge
//! (final-weight subtraction), so walks stop early.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hashbrown::{HashMap, HashSet};
use rayon::prelude::*;
use roaring::{MultiOps, RoaringBitmap};
use smallvec::SmallVec;

use crate::compile::dwa::class_blocks::{class_kinds, ClassBlocks, RuleIndex};
use crate::compile::dwa::class_tables::{freeze, AtomWords, ClassAtoms};
use crate::compile::dwa::dense_words::or_into_words;
use crate::compile::dwa::determinize::{determinize, Det, Nfa, NfaEdge};
use crate::compile::dwa::droppable::with_drops;
use crate::compile::dwa::emission_trie::{EmissionTrie, ROOT};
use crate::compile::dwa::live_riders;
use crate::compile::dwa::position_equiv::{canonical_end, end_reps};
use crate::compile::dwa::stack_top_equiv::{
    actionable_terminals, canonical_productions, class_representatives, state_classes,
};
use crate::compile::dwa::string_split::{self, SplitLexer, SplitMode, SplitPlan};
use crate::compile::dwa::terminal_trie::{
    start_positions, EmitId, EmitTable, WalkShare, Walks, NO_NEWLINE, STAY,
};
use crate::compile::dwa::token_atoms::{alike_positions, atomize, Atoms, WalkOutcomes};
use crate::compile::dwa::token_classes::{classify, ClassList, Shape};
use crate::compile::dwa::weight_table::WeightTable;
use crate::compile::error::GrammarError;
use crate::compile::interner::Interner;
use crate::compile::interrupt::Interrupt;
use crate::dwa::drops::{DropRule, Drops, ShapeDrops};
use crate::dwa::indents::{IndentGroup, IndentRule, IndentTerm, Indents, ShapeIndents};
use crate::dwa::word_pool::WordPool;
use crate::dwa::{ClassTokens, Dwa, StartPos, WeightSpan, NO_EDGE};
use crate::glr::Tables;
use crate::ids::{DwaStateId, LexStateId, LrStateId, ProductionId, TerminalId, TokenId, WeightId};
use crate::lexer::{Indenter, LexFollow, LexPos, LexerDfa};
use crate::lr::{Action, LrTable};
use crate::termset::TermSet;
use crate::vocab::{TokenParts, Vocab};

mod drain;
mod explore;
mod forked_half;
mod lexer_half;
pub(crate) use lexer_half::lexer_half;
pub use lexer_half::LexerHalf;
use lexer_half::{AtomMap, StartTries};

/// Bounds on the automaton build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DwaLimits {
    /// Most states (effect automaton, and deterministic automaton); past it the build
    /// fails with [`GrammarError::TooLarge`].
    pub max_states: usize,
    /// Deterministic states built by merging effects; past it each suspended effect gets
    /// its own state (the walk then carries one class set per effect there), except the
    /// effects of an edge that wakes dozens, which still share one. Exact either
    /// way: this trades compile time and size against stack entries read per mask. The
    /// default, 20,000, keeps SynCode's Java grammar with a 128K
    /// vocabulary from walks of hundreds of entries after a closing brace.
    pub determinize_budget: usize,
    /// Most distinct terminal tries (start positions that tokens see differently); each
    /// walks the vocabulary, so this bounds the build's time.
    pub max_tries: usize,
    /// When string states are read as unions of single-terminal states
    /// ([`crate::compile::dwa::string_split`]); the masks are the same either way.
    pub split: SplitMode,
}

impl Default for DwaLimits {
    fn default() -> Self {
        Self {
            max_states: 2_000_000,
            determinize_budget: 20_000,
            max_tries: 50_000,
            split: SplitMode::Auto,
        }
    }
}

type Stack = SmallVec<[LrStateId; 8]>;

/// Known stack `s` with `n` shifted on top (`n` already its class's representative).
fn shifted(n: LrStateId, s: &[LrStateId]) -> Stack {
    let mut ns = Stack::with_capacity(s.len() + 1);
    ns.push(n);
    ns.extend_from_slice(s);
    ns
}

/// A suspended effect (an automaton state's identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Effect {
    /// Lexemes consumed by the riding classes, counting the one to shift (0 for a
    /// lookahead check: deciding does not depend on where the riders are).
    depth: u32,
    what: Next,
    prod: ProductionId,
    /// Ids still to pop below the one about to be read before the goto is taken.
    skip: u32,
}

impl Effect {
    /// The interned lookahead set a `Next::Look` effect names.
    fn look(&self) -> Option<u32> {
        match self.what {
            Next::Look(l) => Some(l),
            Next::Shift(_) => None,
        }
    }

    /// When a state with this key is built in the drain. Shift states by depth, shallow
    /// first: besides lookahead checks, they feed only shift states of their own depth
    /// or deeper. Lookahead checks last: they are fed from every depth (their key has
    /// none) and feed only each other, so building them at depth 0 rebuilt them each
    /// time a deeper state added riders (45% of a Kubernetes schema's builds were
    /// rebuilds, 24% with this order).
    fn order(&self) -> u32 {
        match self.what {
            Next::Shift(_) => self.depth,
            Next::Look(_) => u32::MAX,
        }
    }
}

/// What the suspended reduction was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Next {
    /// Shift this lexeme's terminal, then explore what the riders do next.
    Shift(TerminalId),
    /// Decide the riders if some terminal of this interned lookahead set can be consumed
    /// (one state for all of them: they decide the same riders).
    Look(u32),
}

#[derive(Default, Clone)]
struct Consume {
    /// Stacks after the shift.
    results: Vec<Stack>,
    /// End of input accepted.
    accepted: bool,
    /// Reductions that pop the whole known stack: production and ids still to pop.
    suspended: Vec<(ProductionId, u32)>,
}

/// Where trie nodes go on a known stack by their next lexeme, each with the node: by a
/// lone shift (only the state pushed, so that the hundreds of children a string
/// position shifts alike are grouped without a stack each), or to these stacks.
#[derive(Default)]
struct NextStacks {
    shifts: Vec<(LrStateId, u32)>,
    others: Vec<(Stack, u32)>,
}

/// The classes an exploration carries.
#[derive(Debug, Clone, Copy)]
enum Riders<'r> {
    /// These: a set of the explorer's `rider_sets`, by id.
    Set(u32),
    /// Those of these nodes of the emission trie, all at one depth: every class whose
    /// lexemes so far were one of the nodes' paths (what a start, with every class
    /// riding, carries). Nodes whose paths lead to alike stacks ride together.
    Nodes(&'r [u32]),
}

/// What an exploration (or an edge) yields: classes decided and effects waiting.
#[derive(Default)]
struct Outcome {
    decided: RoaringBitmap,
    waits: HashMap<Effect, RoaringBitmap>,
}

impl Outcome {
    fn wait(&mut self, e: Effect, w: &RoaringBitmap) {
        if !w.is_empty() {
            *self.waits.entry(e).or_default() |= w;
        }
    }
}

/// Largest total of piece sizes [`Pieces::into_outcome`] unites by sorting (above it,
/// roaring's multi-way union); on a Kubernetes schema, bounds from 256 to 1,024 were the
/// fastest, ~15% faster than no sorting.
/// Determinize's state filters use it too: at most this many classes are or-ed in turn.
pub(super) const SORTED_UNION_MAX: u64 = 1024;

/// One set an [`Outcome`] is gathered from: the builder's own (a trie node's, borrowed for
/// as long as the pieces), one made here, or a union the starts share.
#[derive(Clone)]
enum Piece<'s> {
    Borrowed(&'s RoaringBitmap),
    Owned(RoaringBitmap),
    Shared(Arc<RoaringBitmap>),
}

impl std::ops::Deref for Piece<'_> {
    type Target = RoaringBitmap;

    fn deref(&self) -> &RoaringBitmap {
        match self {
            Piece::Borrowed(b) => b,
            Piece::Owned(b) => b,
            Piece::Shared(b) => b,
        }
    }
}

impl Piece<'_> {
    /// The piece's identity for [`PieceUnions`] (`None` for a set made here): the
    /// address of a set that outlives the build, borrowed or pinned by the cache.
    fn address(&self) -> Option<usize> {
        match self {
            Piece::Borrowed(b) => Some(std::ptr::from_ref::<RoaringBitmap>(b) as usize),
            Piece::Owned(_) => None,
            Piece::Shared(b) => Some(Arc::as_ptr(b) as usize),
        }
    }

    fn into_owned(self) -> RoaringBitmap {
        match self {
            Piece::Borrowed(b) => b.clone(),
            Piece::Owned(b) => b,
            Piece::Shared(b) => Arc::unwrap_or_clone(b),
        }
    }
}

/// Smallest group of sets that [`Merged`] keeps united.
const GROUP_UNION_MIN: usize = 4;

/// A group of sets from the emission trie (finals of one final group, or children by one
/// emission), across the nodes of one rider group: the sets themselves, or, for a large
/// group, their union, made on first use.
struct SetGroup {
    /// Which group: a final group's or an emission's index at the nodes' depth.
    index: u32,
    /// `(node, k)`: the `k`-th final or child of trie node `node`, in node order.
    at: Vec<(u32, u32)>,
    union: OnceLock<Arc<RoaringBitmap>>,
}

/// The trie nodes a rider group holds, merged as [`Explorer::explore`] reads them:
/// their finals by final group, their children by emission. A string position's
/// hundreds of literals each end in a node of their own and ride on as one group, and
/// most starts meet the same groups (on a Kubernetes schema, about one group explored in
/// seven is new). Merged once, a group's
/// emissions are consumed once per emission, not once per node, and each set group is
/// united once, not once per start.
struct Merged {
    finals: Vec<SetGroup>,
    /// Each emission's children, ascending: the rider group the emission leads to.
    children: Vec<(SetGroup, Vec<u32>)>,
}

impl Merged {
    fn new(ns: &[u32], trie: &EmissionTrie) -> Merged {
        let mut finals: Vec<(u32, u32, u32)> = Vec::new();
        let mut children: Vec<(u32, u32, u32)> = Vec::new();
        for &n in ns {
            let node = &trie.nodes[n as usize];
            finals.extend(
                node.finals
                    .iter()
                    .enumerate()
                    .map(|(k, f)| (f.0, n, k as u32)),
            );
            children.extend(
                node.children
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (c.0, n, k as u32)),
            );
        }
        // Stable, by group only: each node's list is sorted by group already, so the input
        // is sorted runs, which a stable sort merges (sorting whole entries unstably made
        // Kubernetes schemas 1.06-1.13x slower in alternating runs).
        finals.sort_by_key(|f| f.0);
        children.sort_by_key(|c| c.0);
        let group = |g: &[(u32, u32, u32)]| SetGroup {
            index: g[0].0,
            at: g.iter().map(|&(_, n, k)| (n, k)).collect(),
            union: OnceLock::new(),
        };
        Merged {
            finals: finals.chunk_by(|a, b| a.0 == b.0).map(group).collect(),
            children: children
                .chunk_by(|a, b| a.0 == b.0)
                .map(|g| {
                    let mut kids: Vec<u32> = g
                        .iter()
                        .map(|&(_, n, k)| trie.nodes[n as usize].children[k as usize].1)
                        .collect();
                    kids.sort_unstable();
                    (group(g), kids)
                })
                .collect(),
        }
    }
}

impl SetGroup {
    /// The group's sets as pieces: one shared union for a large group, else the sets
    /// themselves. `set` reads the `k`-th set of node `n`.
    fn pieces<'s>(&self, set: impl Fn(u32, u32) -> &'s RoaringBitmap, out: &mut Vec<Piece<'s>>) {
        if self.at.len() < GROUP_UNION_MIN {
            out.extend(self.at.iter().map(|&(n, k)| Piece::Borrowed(set(n, k))));
            return;
        }
        // The union depends only on the group, so which explorer makes it does not matter.
        let u = self
            .union
            .get_or_init(|| Arc::new(self.at.iter().map(|&(n, k)| set(n, k)).union()));
        out.push(Piece::Shared(u.clone()));
    }
}

/// [`Merged`] rider groups by node list, shared by every start's explorer.
#[derive(Default)]
struct MergedGroups {
    map: Mutex<HashMap<Vec<u32>, Arc<Merged>>>,
}

impl MergedGroups {
    /// The merged view of nodes `ns`, made if no explorer made it yet.
    fn get(&self, ns: &[u32], trie: &EmissionTrie) -> Arc<Merged> {
        // A poisoned lock only means another start panicked; the map is still whole.
        if let Some(m) = self.map.lock().unwrap_or_else(|e| e.into_inner()).get(ns) {
            return m.clone();
        }
        // Made outside the lock: two explorers may both make it, with equal results.
        let m = Arc::new(Merged::new(ns, trie));
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(ns.to_vec())
            .or_insert(m)
            .clone()
    }
}

/// Unions of pieces that are all the builder's own sets or shared ones, by their
/// addresses, shared by every explorer: explorations gather the same pieces again and
/// again (on a Kubernetes schema, nearly all such unions repeat one made before).
#[derive(Default)]
struct PieceUnions {
    map: Mutex<HashMap<SmallVec<[usize; 8]>, PieceUnion>>,
}

/// A union in [`PieceUnions`], with the shared pieces among its operands, held so that
/// their addresses are not reused while the union's key is in the map.
struct PieceUnion {
    union: Arc<RoaringBitmap>,
    _pins: Vec<Arc<RoaringBitmap>>,
}

/// An [`Outcome`] gathered piece by piece (its own sets and its sub-explorations'),
/// unioned once at the end: a start adds hundreds of pieces to a few effects (a large
/// object's key positions: 13K classes to two effects), and adding them one at a time
/// re-merges ever longer sorted arrays.
///
/// Pieces may borrow the builder's class sets (`'s`): a start explores from the emission
/// trie, whose nodes' final sets go into pieces as they are: cloning them (thousands of
/// classes each in large schemas, fresh 8 KB containers) costs instructions and page
/// faults.
#[derive(Default)]
struct Pieces<'s> {
    decided: Vec<Piece<'s>>,
    waits: HashMap<Effect, Vec<Piece<'s>>>,
}

impl<'s> Pieces<'s> {
    fn wait(&mut self, e: Effect, w: Piece<'s>) {
        if !w.is_empty() {
            self.waits.entry(e).or_default().push(w);
        }
    }

    /// Adds an outcome.
    fn absorb(&mut self, o: Outcome) {
        if !o.decided.is_empty() {
            self.decided.push(Piece::Owned(o.decided));
        }
        for (e, w) in o.waits {
            self.wait(e, Piece::Owned(w));
        }
    }

    /// Adds a memoized outcome, its sets read from `sets`.
    fn absorb_kept(&mut self, o: &Kept, sets: &WeightTable) {
        if o.decided != WeightId::new(0) {
            self.decided.push(Piece::Owned(sets.get(o.decided).clone()));
        }
        for &(e, w) in &o.waits {
            self.wait(e, Piece::Owned(sets.get(w).clone()));
        }
    }

    /// The union of the pieces, through `unions` where every piece has an address.
    fn into_outcome(self, unions: &PieceUnions) -> Outcome {
        fn union(pieces: Vec<Piece<'_>>, unions: &PieceUnions) -> RoaringBitmap {
            if pieces.len() < 2 {
                return unite(pieces);
            }
            let Some(mut key) = pieces
                .iter()
                .map(Piece::address)
                .collect::<Option<SmallVec<[usize; 8]>>>()
            else {
                return unite(pieces);
            };
            key.sort_unstable();
            key.dedup();
            // A poisoned lock only means another explorer panicked; the map is still whole.
            let lock = || unions.map.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(u) = lock().get(&key) {
                let u = u.union.clone();
                return Arc::unwrap_or_clone(u);
            }
            let pins: Vec<Arc<RoaringBitmap>> = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Shared(b) => Some(b.clone()),
                    _ => None,
                })
                .collect();
            let u = unite(pieces);
            // Made outside the lock: two explorers may both make it, with equal results.
            lock().entry(key).or_insert_with(|| PieceUnion {
                union: Arc::new(u.clone()),
                _pins: pins,
            });
            u
        }
        fn unite(pieces: Vec<Piece<'_>>) -> RoaringBitmap {
            // Few pieces merge directly; many small ones are sorted together; many large
            // ones go through roaring's multi-way union, which accumulates in bitmap
            // containers and converts each back to an array when it is sparse (a scan of
            // 8 KiB per container: most of a Kubernetes schema's starts, whose unions are
            // thousands of pieces of a few classes each).
            if pieces.len() <= 2 {
                let mut it = pieces.into_iter();
                let mut u = it.next().map(Piece::into_owned).unwrap_or_default();
                for p in it {
                    match p {
                        Piece::Owned(p) => u |= p,
                        p => u |= &*p,
                    }
                }
                return u;
            }
            let total: u64 = pieces.iter().map(|p| p.len()).sum();
            if total <= SORTED_UNION_MAX {
                let mut all: Vec<u32> = Vec::with_capacity(total as usize);
                for p in &pieces {
                    all.extend(p.iter());
                }
                all.sort_unstable();
                all.dedup();
                // Sorted and deduplicated just above.
                RoaringBitmap::from_sorted_iter(all).expect("sorted class ids")
            } else {
                pieces.iter().map(|p| &**p).union()
            }
        }
        Outcome {
            decided: union(self.decided, unions),
            waits: self
                .waits
                .into_iter()
                .map(|(e, ws)| (e, union(ws, unions)))
                .collect(),
        }
    }
}

/// Most states the drain explores at once: a batch is one parallel step, and a state fed
/// by one before it in its batch is built again in a later one. On 7 large Kubernetes
/// schemas (Llama-3), against building one at a time: 0.98 of the time with batches of
/// 64, 0.935 with 128 to 512, 1.03 with 1,024, 1.11 with whole waves (rebuilds).
const DRAIN_BATCH: usize = 256;

/// Sets its flag when dropped, unwinding included: a drain task's "this state is
/// explored", which the freezing thread waits for.
struct MarkDone<'f>(&'f AtomicBool);

impl Drop for MarkDone<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// States per task when a parallel batch is explored while its first states' edges are
/// made (see [`Builder::drain`]): small, so the freezing thread finds the next state
/// explored soon, and the batch's 256 states still split between the threads.
const DRAIN_FREEZE_CHUNK: usize = 8;

/// Fewest states of one [`Effect::order`] key the drain explores in parallel: below it,
/// waking the other threads and the rebuilds batching brings cost more than they spare.
const DRAIN_PARALLEL_MIN: usize = 64;

/// Fewest states the starts must leave queued for the drain to go parallel at all. On
/// 40 random Kubernetes schemas (Llama-3), against building one at a time: those the
/// starts left 7,600 to 8,300 states (300–370 ms) took 0.90–0.99 of the time; those left
/// 500 to 3,700 (12–140 ms) took 0.99–1.11, since their waves are a few hundred states
/// of a few microseconds, and the other thread is still making the class tables.
const DRAIN_PARALLEL_STATES: usize = 4096;

/// A state's transitions before they are frozen into edges: per goto source, the
/// outcome it takes (an index into `outcomes`; sources with alike stacks share one).
struct Resumed {
    sources: Vec<(LrStateId, u32)>,
    outcomes: Vec<Outcome>,
    /// The explorer's lookahead sets the outcomes name, by id, ascending: copied, so the
    /// outcomes are frozen without the explorer, which may be exploring further states.
    looks: Vec<(u32, Vec<TerminalId>)>,
}

/// An [`Outcome`] as the exploration memo keeps it, its sets interned: outcomes of
/// different stacks and riders are made of the same few sets (a large schema's 120K
/// memoized sets were 989 distinct ones, 5 MB instead of 370 MB, when explorations
/// inside resumed ones were memoized too).
struct Kept {
    decided: WeightId,
    waits: Vec<(Effect, WeightId)>,
}

/// The sets the builder reads, as bitmaps over the global class space (every shape's
/// classes, each shape's at its own offset: disjoint ranges, so one set can hold riders
/// from several shapes and intersections keep them apart).
struct ClassSets {
    /// Each shape's classes.
    shape_all: Vec<RoaringBitmap>,
    /// `emits[d]`: terminals of an emission, and the classes whose d-th lexeme it is.
    emits: Vec<Vec<(Vec<TerminalId>, RoaringBitmap)>>,
    /// `finals[d]`: the terminals that may follow a token lexically, and the classes
    /// ending after `d` lexemes at a position with exactly that follow set. Deciding a
    /// class depends on its position only through the set, so positions with equal sets
    /// are merged (one consume check for all of them: a large schema has thousands of
    /// positions and a few hundred distinct sets).
    finals: Vec<Vec<(TermSet, RoaringBitmap)>>,
    /// Beside `emits`: the emission's terminals as a set, and whether one is ignored.
    emit_terms: Vec<Vec<(TermSet, bool)>>,
    /// `emits` and `finals` as a trie of the classes' emission paths.
    trie: EmissionTrie,
}

struct StateInfo {
    key: Effect,
    /// Everything that can ride on this state, interned in the explorer's `keys`: states
    /// share a few rider sets (a chain of skip states carries one set all along; a large
    /// schema's 206K states have 277 distinct sets).
    riders: WeightId,
    /// The riders the transitions were last built for (`None`: never). Riders only grow,
    /// so an unchanged id means nothing new rides.
    built_for: Option<WeightId>,
}

/// Explores what riding classes do on known stacks: the part of the build that only
/// reads the tables and class sets, so that it runs in parallel (one explorer per start,
/// and one per thread for resumed states; see [`Builder::drain`]).
struct Explorer<'a> {
    tables: TableRefs<'a>,
    sets: &'a ClassSets,
    /// Terminals with some action, per LR state.
    actionable: &'a [TermSet],
    /// Per production, the one its suspended effects name (see `stack_top_equiv`).
    canon: &'a [ProductionId],
    /// Per LR state, the least state of its class (see `stack_top_equiv`). Known stacks hold
    /// only these: what riders do on a stack depends on its states only through their
    /// classes, and an exploration's outcome names no state, so stacks alike state by
    /// state explore alike and meet in the memos (a string position's hundreds of
    /// literals each shift to a state of their own, all of one class).
    rep: &'a [LrStateId],
    /// Index into `consumes` by stack and terminal: an index, not a shared pointer, since
    /// lookups are millions per large schema and a reference count costs two atomic
    /// operations each.
    consume_memo: HashMap<(Stack, TerminalId), u32>,
    consumes: Vec<Consume>,
    /// Interned lookahead sets of `Next::Look` effects.
    looks: Vec<Vec<TerminalId>>,
    look_index: HashMap<Vec<TerminalId>, u32>,
    /// Rider sets (cache keys and states' riders) and memoized outcomes' sets, kept apart
    /// from the automaton's weights, which only hold sets an edge uses.
    keys: WeightTable,
    explore_memo: HashMap<(u32, Stack, WeightId), Kept>,
    /// Rider sets that explorations carry, by id: resumed states' riders and their
    /// intersections with the builder's class sets. Shared, so that pieces hold them.
    rider_sets: Vec<Arc<RoaringBitmap>>,
    /// Ids in `rider_sets` of riders interned in `keys`.
    rider_of_key: HashMap<WeightId, u32>,
    /// Intersections of class sets of the builder's (by address) with rider sets (by
    /// id), as ids in `rider_sets` (`None`: empty). Explorations of one resumed state's
    /// riders on different stacks meet the same class sets again and again.
    and_memo: HashMap<(usize, u32), Option<u32>>,
    /// Merged rider groups, shared with the other starts' explorers.
    groups: &'a MergedGroups,
    /// Unions of pieces, shared with the other explorers.
    unions: &'a PieceUnions,
}

struct Builder<'a> {
    tables: TableRefs<'a>,
    /// Holds the states' rider sets (`keys`) and the lookahead sets their effects name;
    /// the other explorers' outcomes are renumbered into it.
    ex: Explorer<'a>,
    /// LR states with a goto on each nonterminal.
    goto_sources: Vec<Vec<LrStateId>>,
    weights: WeightTable,
    info: Vec<StateInfo>,
    state_index: HashMap<Effect, DwaStateId>,
    /// Transitions per state: skip target, or `(id, edge)` list.
    skip_to: Vec<Option<DwaStateId>>,
    trans: Vec<Vec<(LrStateId, u32)>>,
    edges: Vec<NfaEdge>,
    targets: Vec<(DwaStateId, WeightId)>,
    edge_index: HashMap<(WeightId, Vec<(DwaStateId, WeightId)>), u32>,
    /// States whose riders grew, by [`Effect::order`]: a state is built after the
    /// states that can feed it, where possible, so that few are built twice.
    queue: BTreeSet<(u32, DwaStateId)>,
    /// `(state, interned rider set)` pairs known to be inside the state's riders: riders
    /// only grow, so a set once inside stays inside. Edges hand the same large sets to
    /// the same states over and over, and a roaring subset check merges both sets whole
    /// (it was 40% of some builds).
    covered: HashSet<(DwaStateId, WeightId)>,
    max_states: usize,
}

fn too_large(what: &str, limit: usize) -> GrammarError {
    GrammarError::TooLarge {
        span: Default::default(),
        what: what.into(),
        limit,
    }
}

/// Most classes per range, on average, for [`class_sets`] to append a set's classes one
/// by one rather than insert its ranges whole.
const SHORT_RANGES: u64 = 8;

/// Positions after a token, by depth, with the classes ending there; and terminals, by
/// depth, with the classes asking whether it can be consumed there (`Shape::consumes`).
type FinalsAt = (
    Vec<Vec<(LexPos, RoaringBitmap)>>,
    Vec<Vec<(TerminalId, RoaringBitmap)>>,
    Vec<Vec<(LexPos, RoaringBitmap)>>,
);

/// Lays the shapes side by side in one class space; returns the sets (finals left empty),
/// each shape's offset, and the classes ending at each position by depth.
fn class_sets(shapes: &[&Shape], emits: &EmitTable) -> (ClassSets, Vec<u32>, FinalsAt) {
    let mut base = Vec::with_capacity(shapes.len());
    let mut next = 0u32;
    let mut shape_all = Vec::with_capacity(shapes.len());
    let depth = shapes
        .iter()
        .map(|s| {
            s.emits
                .len()
                .max(s.finals.len())
                .max(s.consumes.len())
                .max(s.inside.len())
        })
        .max()
        .unwrap_or(0);
    // Class ranges by emission (finals: by position), per depth, in increasing order:
    // shapes take consecutive ranges, so each set is built once at the end rather than
    // re-merged with every shape that adds to it (thousands of shapes in large schemas).
    type Ranges = Vec<(u32, u32)>;
    let mut em: Vec<HashMap<EmitId, Ranges>> = vec![HashMap::new(); depth];
    let mut fi: Vec<HashMap<LexPos, Ranges>> = vec![HashMap::new(); depth];
    let mut co: Vec<HashMap<TerminalId, Ranges>> = vec![HashMap::new(); depth];
    let mut ins: Vec<HashMap<LexPos, Ranges>> = vec![HashMap::new(); depth];
    // Without run containers, as every set the builder interns (see `WeightTable`).
    let to_set = |ranges: Ranges| -> RoaringBitmap {
        let classes: u64 = ranges.iter().map(|&(lo, hi)| u64::from(hi - lo) + 1).sum();
        // Ranges are laid out in order (shapes take consecutive ranges, each shape's in
        // order), and most are a class or two: appended class by class they cost tens of
        // instructions a class, where `insert_range` costs ~400 a call. Long ones are
        // still inserted whole.
        if classes <= SHORT_RANGES * ranges.len() as u64 {
            if let Ok(set) =
                RoaringBitmap::from_sorted_iter(ranges.iter().flat_map(|&(lo, hi)| lo..=hi))
            {
                return set;
            }
        }
        let mut out = RoaringBitmap::new();
        for (lo, hi) in ranges {
            out.insert_range(lo..=hi);
        }
        out.remove_run_compression();
        out
    };
    let shift = |c: &ClassList, b: u32, out: &mut Ranges| {
        out.extend(c.0.iter().map(|&(lo, hi)| (lo + b, hi + b)));
    };
    for sh in shapes {
        base.push(next);
        let own = (sh.num_classes > 0).then(|| (next, next + sh.num_classes - 1));
        shape_all.push(to_set(own.into_iter().collect()));
        for (d, es) in sh.emits.iter().enumerate() {
            for (e, c) in es {
                shift(c, next, em[d].entry(*e).or_default());
            }
        }
        for (d, fs) in sh.finals.iter().enumerate() {
            for (p, c) in fs {
                shift(c, next, fi[d].entry(*p).or_default());
            }
        }
        for (d, fs) in sh.consumes.iter().enumerate() {
            for (t, c) in fs {
                shift(c, next, co[d].entry(*t).or_default());
            }
        }
        for (d, fs) in sh.inside.iter().enumerate() {
            for (p, c) in fs {
                shift(c, next, ins[d].entry(*p).or_default());
            }
        }
        next += sh.num_classes;
    }
    let sets = ClassSets {
        emit_terms: Vec::new(),
        trie: EmissionTrie::default(),
        shape_all,
        emits: em
            .into_iter()
            .map(|m| {
                let mut v: Vec<(EmitId, Ranges)> = m.into_iter().collect();
                v.sort_by_key(|(e, _)| *e);
                // In parallel: the automaton's class sets are otherwise serial.
                v.into_par_iter()
                    .map(|(e, c)| (emits.terminals(e).to_vec(), to_set(c)))
                    .collect()
            })
            .collect(),
        finals: Vec::new(),
    };
    let finals = fi
        .into_iter()
        .map(|m| {
            let mut v: Vec<(LexPos, Ranges)> = m.into_iter().collect();
            v.sort_by_key(|(p, _)| *p);
            v.into_par_iter().map(|(p, c)| (p, to_set(c))).collect()
        })
        .collect();
    let consumes = co
        .into_iter()
        .map(|m| {
            let mut v: Vec<(TerminalId, Ranges)> = m.into_iter().collect();
            v.sort_by_key(|(t, _)| *t);
            v.into_iter().map(|(t, c)| (t, to_set(c))).collect()
        })
        .collect();
    let inside = ins
        .into_iter()
        .map(|m| {
            let mut v: Vec<(LexPos, Ranges)> = m.into_iter().collect();
            v.sort_by_key(|(p, _)| *p);
            v.into_iter().map(|(p, c)| (p, to_set(c))).collect()
        })
        .collect();
    (sets, base, (finals, consumes, inside))
}

/// Builds the mask automaton of a grammar's tables for a vocabulary, within `limits`,
/// stopping with `stop`'s error once it says so (the entry point is
/// [`crate::compile::Compiler::automaton`]).
pub(crate) fn build_dwa_until(
    tables: &Tables,
    vocab: &Vocab,
    limits: DwaLimits,
    stop: &Interrupt,
) -> Result<Dwa, GrammarError> {
    if let Some(why) = tables
        .indenter
        .as_ref()
        .and_then(|(i, _)| i.automaton_refusal.as_ref())
    {
        return Err(crate::compile::automaton_refuses_indentation(why));
    }
    // Run on one of rayon's threads (in place when already on one): called from another
    // thread, each of the build's dozen parallel steps would be sent to the pool and
    // waited for across threads, a round trip of two wake-ups each; from a worker, they
    // fork and join in place.
    rayon::scope(|_| build_on_worker(tables, vocab, limits, stop))
}

/// The recognizer tables the automaton is built from, by reference, so that the half of
/// the build that needs only the lexer can start before the LR table exists
/// ([`crate::compile::Compiler::tables_and_automaton`]).
#[derive(Clone, Copy)]
pub struct TableRefs<'a> {
    /// The lexer.
    pub lexer: &'a LexerDfa,
    /// What can follow each lexer position.
    pub follow: &'a LexFollow,
    /// LR tables over the lexer's terminals.
    pub lr: &'a LrTable,
    /// Behind an indenter: it, and what can follow each lexer position inside brackets.
    pub indent: Option<(&'a Indenter, &'a LexFollow)>,
}

impl<'a> From<&'a Tables> for TableRefs<'a> {
    fn from(t: &'a Tables) -> Self {
        Self {
            lexer: &t.lexer,
            follow: &t.follow,
            lr: &t.lr,
            indent: t.indenter.as_ref().map(|(i, f)| (i, f)),
        }
    }
}

fn build_on_worker(
    tables: &Tables,
    vocab: &Vocab,
    limits: DwaLimits,
    stop: &Interrupt,
) -> Result<Dwa, GrammarError> {
    let plan = string_split::plan(&tables.lexer, limits.split);
    let indent = tables.indenter.as_ref().map(|(i, f)| (i, f));
    let half = lexer_half(
        &tables.lexer,
        &tables.follow,
        indent,
        plan,
        vocab,
        &limits,
        stop,
    )?;
    finish_dwa(half, tables.into(), vocab, &limits, stop)
}

/// The rest of [`build_dwa_until`], which needs the LR table: the automaton, beside
/// the class tables. `tables` must hold the lexer and follow sets `half` was made from.
pub(crate) fn finish_dwa(
    half: LexerHalf,
    tables: TableRefs<'_>,
    vocab: &Vocab,
    limits: &DwaLimits,
    stop: &Interrupt,
) -> Result<Dwa, GrammarError> {
    stop.check()?;
    let LexerHalf {
        split_lexer,
        emits,
        atoms,
        shapes,
        overflow,
        starts,
    } = half;
    // Over the lexer the lexer half was built on.
    let tables = match &split_lexer {
        Some(w) => TableRefs {
            lexer: &w.lexer,
            follow: &w.follow,
            lr: tables.lr,
            indent: tables.indent,
        },
        None => tables,
    };
    let lexer = tables.lexer;
    let shape_list: Vec<&Shape> = shapes.iter().collect();
    let lr = tables.lr;
    // The atoms' token words (for the class tables) need only the atoms: they are made on
    // another thread while the automaton's class sets, which are serial, are made here.
    let automaton_sets = || automaton_class_sets(tables, &shape_list, &emits);
    let atom_words = || AtomWords::new(&atoms.of_token, atoms.len());
    // What the starts need of the LR table alone (its state classes, tens of ms on large
    // schemas) is made beside the two, which are mostly serial.
    let lr_facts = || {
        let mut actionable = actionable_terminals(lr);
        // Behind an indenter, end of input is read after `_DEDENT`s (`Explorer::consume`):
        // a state acting on `_DEDENT` acts on it.
        if let Some((ind, _)) = tables.indent {
            for set in &mut actionable {
                if set.contains(ind.dedent) {
                    set.insert(lr.eof());
                }
            }
        }
        let canon = canonical_productions(lr);
        let class = state_classes(lr, &actionable);
        let rep = class_representatives(&class);
        (actionable, canon, class, rep)
    };
    let (((goto_sources, sets, base, num_classes), atom_words), (actionable, canon, class, rep)) =
        rayon::join(|| rayon::join(automaton_sets, atom_words), lr_facts);
    stop.check()?;
    let num_lr = lr.num_states();
    // The class tables need only the classified tries, the automaton only their shapes:
    // the two are built side by side (their results do not depend on the thread count).
    let nshapes = shape_list.len();
    // The starts are explored first, on every thread (beside the class side they had
    // one); the rest of the automaton, which is serial, is then built beside it.
    let groups = MergedGroups::default();
    let unions = PieceUnions::default();
    let started = start_automaton(
        tables,
        &sets,
        (&actionable, &canon, &class, &rep),
        goto_sources,
        (&groups, &unions),
        limits,
        stop,
    );
    let automaton = || started.and_then(|b| b.finish(&sets, nshapes, limits, stop));
    let class_side = || start_tables(starts, &base, lexer, &atoms, &atom_words);
    let (auto, (start_pos, tables_out, words)) = rayon::join(automaton, class_side);
    let (mut shape_classes, mut det) = auto?;
    // Riders no edge can decide leave the filters, unread weights the automaton
    // (`live_riders`).
    live_riders::prune(&mut det, &mut shape_classes);
    let (mut tables_out, mut words) = (tables_out, words);
    let mut drops = drop_tables(&shape_list, &atoms.of_token, &overflow, vocab);
    let mut indents = indent_tables(&shape_list);
    let shape_counts: Vec<u32> = shape_list.iter().map(|s| s.num_classes).collect();
    // Classes no weight tells apart become one (`class_blocks`); the weights are
    // renumbered as they are frozen.
    let rules = RuleIndex::new(&drops, &indents);
    let kind = class_kinds(&drops, &indents, &base, num_classes);
    let blocks = ClassBlocks::find(&det.weights, &base, &shape_counts, &kind, |s, c, b| {
        rules.key(&drops, &indents, s, c, b)
    });
    let mut num_classes = num_classes;
    if let Some(blocks) = &blocks {
        blocks.tables(
            &mut tables_out,
            &start_pos,
            &mut words,
            vocab.len().div_ceil(32),
        );
        blocks.drops(&mut drops);
        blocks.indents(&mut indents);
        num_classes = blocks.num_classes();
    }
    // Class sets for the walk: each weight's dense words over its span, end to end.
    let class_words = (num_classes as usize).div_ceil(64).max(1);
    let (weight_spans, weights) = weight_words(
        &det.weights,
        (&base, &shape_counts),
        blocks.as_ref(),
        class_words,
    );
    let (states, trans) = Dwa::freeze_states(det.states);
    let dwa = Dwa {
        class_words: class_words as u32,
        weights,
        weight_spans,
        states,
        trans,
        edges: det.edges,
        targets: det.targets,
        starts: det.starts,
        shape_classes,
        num_lr: num_lr as u32,
        positions: start_pos,
        tables: tables_out,
        words,
        vocab_len: vocab.len() as u32,
        eos: vocab.eos().to_vec(),
        split: split_lexer.map(|w| w.into_split(vocab)),
        drops,
        indents,
        expansions: Default::default(),
    };
    dwa.validate()
        .map_err(|e| too_large(&format!("mask automaton ({e})"), 0))?;
    dwa.prepare_indents();
    // The build's own structures (hundreds of thousands of small sets and lists) are
    // freed here, in two parts side by side, and not on a thread left running after the
    // compile returns, where they would slow the masks decoded meanwhile.
    drop(shape_list);
    rayon::join(
        || drop(sets),
        || drop((groups, unions, shapes, atoms, det.weights)),
    );
    Ok(dwa)
}

/// The shapes' indentation rules, side by side (empty when no shape has any).
fn indent_tables(shapes: &[&Shape]) -> Indents {
    let mut out = Indents::default();
    if shapes.iter().all(|s| s.indents.rules.is_empty()) {
        return out;
    }
    for sh in shapes {
        let t = &sh.indents;
        let lo = out.groups.len() as u32;
        let offset = out.terms.len() as u32;
        out.terms.extend(t.terms.iter().map(|x| IndentTerm {
            stay: x.stay,
            delta: x.delta,
            out: x.out,
            inside: x.inside,
        }));
        // Rules grouped by their newline lexeme's tag: one resolution per group.
        let first = |r: &crate::compile::dwa::indentation::Rule| {
            r.first.map(|tail| {
                let dead = !tail.newline && tail.width == NO_NEWLINE;
                (tail.newline, if dead { u32::MAX } else { tail.width })
            })
        };
        let mut rules: Vec<&crate::compile::dwa::indentation::Rule> = t.rules.iter().collect();
        rules.sort_by_key(|r| (first(r), r.class));
        for run in rules.chunk_by(|a, b| first(a) == first(b)) {
            let from = out.rules.len() as u32;
            out.rules.extend(run.iter().map(|r| IndentRule {
                class: r.class,
                terms: (offset + r.terms.0, offset + r.terms.1),
            }));
            out.groups.push(IndentGroup {
                first: first(run[0]),
                rules: (from, out.rules.len() as u32),
            });
        }
        out.shapes.push(ShapeIndents {
            groups: (lo, out.groups.len() as u32),
            virtuals: if t.rules.is_empty() {
                (0, 0)
            } else {
                (t.first_virtual, sh.num_classes)
            },
        });
    }
    out
}

/// The shapes' decision trees for droppable lexemes, side by side, and the tokens of
/// the overflowing classes' atoms (`atom_of[t]`: token `t`'s atom).
fn drop_tables(
    shapes: &[&Shape],
    atom_of: &[u32],
    overflow: &RoaringBitmap,
    vocab: &Vocab,
) -> Drops {
    let mut out = Drops::default();
    if shapes.iter().all(|s| s.drops.rules.is_empty()) && overflow.is_empty() {
        return out;
    }
    for sh in shapes {
        let t = &sh.drops;
        let lo = out.rules.len() as u32;
        let offset = out.nodes.len() as u32;
        out.rules
            .extend(t.rules.iter().map(|&(class, levels, start)| DropRule {
                class,
                levels,
                start: offset + start,
            }));
        out.nodes.extend_from_slice(&t.nodes);
        out.shapes.push(ShapeDrops {
            rules: (lo, out.rules.len() as u32),
            virtuals: if t.rules.is_empty() {
                (0, 0)
            } else {
                (t.first_virtual, sh.num_classes)
            },
        });
    }
    out.overflow = atom_of
        .iter()
        .enumerate()
        .filter(|&(_, &a)| overflow.contains(a))
        .filter_map(|(t, _)| {
            let t = TokenId::new(t);
            // Tokens the atoms hold are the vocabulary's mask tokens.
            let bytes = vocab.mask_bytes(t)?;
            Some((t, bytes.to_vec()))
        })
        .collect();
    out
}

/// The class sets the automaton reads (each emission's and each final position's classes
/// over all shapes, with their terminal sets and the emission trie), each LR state's
/// goto sources, each shape's first class and the number of classes.
fn automaton_class_sets(
    tables: TableRefs<'_>,
    shape_list: &[&Shape],
    emits: &EmitTable,
) -> (Vec<Vec<LrStateId>>, ClassSets, Vec<u32>, u32) {
    let lr = tables.lr;
    let mut goto_sources: Vec<Vec<LrStateId>> = vec![Vec::new(); lr.num_nonterminals()];
    for s in 0..lr.num_states() {
        let s = LrStateId::new(s);
        for &(n, _) in lr.gotos(s) {
            goto_sources[n.index()].push(s);
        }
    }
    let (mut sets, base, (finals_at, consumes_at, inside_at)) = class_sets(shape_list, emits);
    // Terminals plus end of input, as in the follow sets.
    let width = tables.lr.num_terminals() + 1;
    let mut consumes_at = consumes_at.into_iter();
    let mut inside_at = inside_at.into_iter();
    sets.finals = finals_at
        .into_iter()
        .map(|fs| {
            // Merged in order of first appearance (positions are sorted); a droppable
            // lexeme's tests ask for their one terminal.
            let mut merged: Vec<(TermSet, RoaringBitmap)> = Vec::new();
            let mut index: HashMap<TermSet, usize> = HashMap::new();
            let mut add = |follow: &TermSet, c: RoaringBitmap| match index.get(follow) {
                Some(&i) => merged[i].1 |= c,
                None => {
                    index.insert(follow.clone(), merged.len());
                    merged.push((follow.clone(), c));
                }
            };
            for (p, c) in fs {
                let follow = match p {
                    LexPos::Pending(q) => tables.follow.after_pending(q),
                    LexPos::Boundary(q) => tables.follow.at_boundary(q),
                };
                add(follow, c);
            }
            for (t, c) in consumes_at.next().into_iter().flatten() {
                let mut only = TermSet::new(width);
                only.insert(t);
                add(&only, c);
            }
            // Ends inside brackets read the follow sets with newlines dropped.
            for (p, c) in inside_at.next().into_iter().flatten() {
                let Some((_, inside)) = tables.indent else {
                    unreachable!("only an indenter's shapes end inside brackets")
                };
                let follow = match p {
                    LexPos::Pending(q) => inside.after_pending(q),
                    LexPos::Boundary(q) => inside.at_boundary(q),
                };
                add(follow, c);
            }
            merged
        })
        .collect();
    sets.emit_terms = sets
        .emits
        .iter()
        .map(|es| {
            es.iter()
                .map(|(ts, _)| {
                    let mut set = TermSet::new(width);
                    let mut ignored = false;
                    for &t in ts {
                        if t == STAY || tables.lexer.is_ignored(t) {
                            ignored = true;
                        } else {
                            set.insert(t);
                        }
                    }
                    (set, ignored)
                })
                .collect()
        })
        .collect();
    let num_classes =
        base.last().copied().unwrap_or(0) + shape_list.last().map_or(0, |s| s.num_classes);
    sets.trie = EmissionTrie::new(num_classes, &sets.emits, &sets.finals);
    (goto_sources, sets, base, num_classes)
}

/// The start positions (each with its shape and class table) and the class tables, frozen
/// with their token words. An inhibited boundary reads the plain boundary's trie with a
/// table that drops the atoms whose first byte extends the inhibiting lexeme.
fn start_tables(
    starts: StartTries,
    base: &[u32],
    lexer: &LexerDfa,
    atoms: &AtomMap,
    atom_words: &AtomWords,
) -> (Vec<StartPos>, Vec<ClassTokens>, WordPool) {
    let mut tables_out: Vec<(u32, u32)> = Vec::new();
    let mut start_pos: Vec<StartPos> = Vec::new();
    // Equal tables are stored once (positions far from a count's end share theirs);
    // a table is its base and its class → atoms table, by interned id.
    let StartTries {
        own_trie,
        trie_of,
        dead,
        inhibited_positions,
        trie_shape,
        mut own_tables,
        own_local,
    } = starts;
    let mut table_index: HashMap<(u32, u32), u32> = HashMap::new();
    let mut intern_table = |base: u32, local: u32| -> u32 {
        *table_index.entry((base, local)).or_insert_with(|| {
            tables_out.push((base, local));
            tables_out.len() as u32 - 1
        })
    };
    let own_ids: Vec<u32> = own_local
        .iter()
        .enumerate()
        .map(|(i, &local)| intern_table(base[trie_shape[i] as usize], local))
        .collect();
    for (&p, &i) in own_trie.iter().zip(&trie_of) {
        start_pos.push(StartPos {
            pos: p,
            shape: trie_shape[i],
            table: own_ids[i],
        });
    }
    // A token is inhibited at `Boundary(q)` when its first byte extends `q`'s lexeme;
    // an atom's tokens share their first byte as far as any boundary can tell.
    // So the table depends only on which first bytes `q` kills: one per such set.
    // (Per lexer mode: an inhibited boundary reads its mode's plain one.)
    let mut table_of_kills: HashMap<([u64; 4], u32), u32> = HashMap::new();
    for &(p, q) in &inhibited_positions {
        let mode = lexer.mode_after(q);
        let dead = dead[mode as usize];
        let mut kills = [0u64; 4];
        for b in 0..=255u8 {
            if lexer.is_dead(lexer.next_rep(q, b)) {
                kills[usize::from(b / 64)] |= 1 << (b % 64);
            }
        }
        let table = *table_of_kills.entry((kills, mode)).or_insert_with(|| {
            let dead_base = base[trie_shape[dead] as usize];
            let dead_table = own_tables.get(own_local[dead]).clone();
            let t = dead_table.filtered(|a| {
                let b = atoms.first_byte[a as usize];
                kills[usize::from(b / 64)] >> (b % 64) & 1 == 1
            });
            let local = own_tables.intern(t);
            intern_table(dead_base, local)
        });
        start_pos.push(StartPos {
            pos: p,
            shape: trie_shape[dead],
            table,
        });
    }
    let (tables_out, words) = freeze(&tables_out, own_tables.list(), atom_words);
    start_pos.sort_by_key(|p| p.pos);
    (start_pos, tables_out, words)
}

/// The words of `sets` (set 0 empty) over class spaces of `class_words` words where
/// shape `i` holds classes `base[i]..` (`counts[i]` of them, bases ascending), or, with
/// `blocks`, of the sets renumbered into those blocks and laid out as they say; stored
/// span by span: each set's words from the first to the last shape it has a class in,
/// each shape whole (see [`WeightSpan`]); set 0 spans the whole space. Dense rows were
/// quadratic: thousands of weights times thousands of words (310 MB for one schema),
/// nearly all zero since most weights lie in one shape.
fn weight_words(
    sets: &[RoaringBitmap],
    (base, counts): (&[u32], &[u32]),
    blocks: Option<&ClassBlocks>,
    class_words: usize,
) -> (Vec<WeightSpan>, Vec<u64>) {
    let (new_base, new_counts) = blocks.map_or((base, counts), |b| (&b.base[..], &b.counts[..]));
    let shape_words = |i: usize| {
        let lo = new_base[i] as usize;
        (lo / 64, (lo + new_counts[i] as usize).div_ceil(64))
    };
    // The last shape starting at or before `c`: shapes without classes share their base
    // with the next, which holds `c`.
    let shape_of = |c: u32| base.partition_point(|&b| b <= c).saturating_sub(1);
    let mut spans = Vec::with_capacity(sets.len());
    let mut total = 0u64;
    for (i, w) in sets.iter().enumerate() {
        let (lo, hi) = match (w.min(), w.max()) {
            _ if i == 0 => (0, class_words),
            (Some(a), Some(b)) => (shape_words(shape_of(a)).0, shape_words(shape_of(b)).1),
            _ => (0, 0),
        };
        spans.push(WeightSpan {
            start: total,
            lo: lo as u32,
            hi: hi as u32,
        });
        total += (hi - lo) as u64;
    }
    let mut words = vec![0u64; total as usize];
    let mut rows: Vec<&mut [u64]> = Vec::with_capacity(sets.len());
    let mut rest: &mut [u64] = &mut words;
    for s in &spans {
        let (row, tail) = rest.split_at_mut((s.hi - s.lo) as usize);
        rows.push(row);
        rest = tail;
    }
    // In parallel: nothing else runs now. Container by container, not class by class:
    // a large schema's weights hold tens of millions of classes (see `dense_words`).
    // Renumbered, class by class: a block's id comes from its classes' order, so a set's
    // new ids are scattered (sorting them to rebuild the set cost more).
    rows.into_par_iter()
        .zip(sets)
        .zip(&spans)
        .for_each_init(Vec::new, |scratch, ((row, w), s)| match blocks {
            None => or_into_words(w, s.lo as usize, row, scratch),
            Some(b) => {
                let lo = s.lo as usize * 64;
                for c in w {
                    let x = b.new_id(c) as usize - lo;
                    row[x / 64] |= 1 << (x % 64);
                }
            }
        });
    (spans, words)
}

/// The mask automaton over the classes of `sets` (the side of `build_dwa_until` that
/// needs the tries' shapes, not their tokens) with its starts explored: the builder, and
/// the edge each LR state starts with.
struct Started<'a> {
    b: Builder<'a>,
    starts: Vec<u32>,
}

/// What the automaton build reads of the LR table besides it, per state or production:
/// actionable terminals, canonical productions, state classes and their representatives
/// (see `stack_top_equiv`).
type LrFacts<'a> = (
    &'a [TermSet],
    &'a [ProductionId],
    &'a [u32],
    &'a [LrStateId],
);

/// Explores a start for every stack top, in parallel (see [`Started`]).
fn start_automaton<'a>(
    tables: TableRefs<'a>,
    sets: &'a ClassSets,
    (actionable, canon, class, rep): LrFacts<'a>,
    goto_sources: Vec<Vec<LrStateId>>,
    shared: (&'a MergedGroups, &'a PieceUnions),
    limits: &DwaLimits,
    stop: &Interrupt,
) -> Result<Started<'a>, GrammarError> {
    let lr = tables.lr;
    let num_lr = lr.num_states();
    let max_states = limits.max_states;
    let mut b = Builder {
        tables,
        ex: Explorer::new(tables, sets, actionable, canon, rep, shared),
        goto_sources,
        weights: WeightTable::default(),
        info: Vec::new(),
        state_index: HashMap::new(),
        skip_to: Vec::new(),
        trans: Vec::new(),
        edges: Vec::new(),
        targets: Vec::new(),
        edge_index: HashMap::new(),
        queue: BTreeSet::new(),
        covered: HashSet::new(),
        max_states,
    };
    let mut starts = vec![NO_EDGE; num_lr];
    // A stack is only ever topped by the start state or a shift's target: the parser
    // reduces only with a lexeme in hand and shifts it at once, so a state entered by a
    // goto is always covered by the time a mask is asked. Those (about half of a large
    // schema's states) get no start.
    let tops: Vec<usize> = {
        let mut top = vec![false; num_lr];
        top[lr.start().index()] = true;
        for (x, act) in actionable.iter().enumerate() {
            for t in act.iter() {
                for a in lr.actions(LrStateId::new(x), t) {
                    if let Action::Shift(n) = *a {
                        top[n.index()] = true;
                    }
                }
            }
        }
        (0..num_lr).filter(|&x| top[x]).collect()
    };
    // Stack tops that behave alike have equal starts (`stack_top_equiv`, with effects named by
    // canonical productions): one per class is explored, in order of first appearance.
    let mut class_rep: HashMap<u32, usize> = HashMap::new();
    let reps: Vec<usize> = tops
        .iter()
        .copied()
        .filter(|&x| class_rep.try_insert(class[x], x).is_ok())
        .collect();
    // Starts are explored in parallel, each by an explorer of its own: they share no
    // exploration (see `Explorer::explore_fresh`), only unions of sets that depend on
    // nothing else (`MergedGroups`), and the lookahead sets each interned are renumbered
    // into the shared explorer's in start order (`Explorer::adopt_looks`), so the
    // automaton does not depend on the thread count. Chunks bound how many outcomes wait at once.
    //
    // Each chunk's outcomes are made into edges (serial) while the next chunk is explored:
    // the serial half is handed to the other thread first (it is queued before the
    // exploration's pieces), which then joins the exploration. One chunk after another,
    // a Kubernetes schema's starts kept 1.7 of 2 cores busy.
    const START_CHUNK: usize = 256;
    let template = b.ex.fresh();
    let explore = |chunk: &[usize]| -> Vec<(Outcome, Vec<Vec<TerminalId>>)> {
        chunk
            .par_iter()
            .map(|&x| {
                let mut ex = template.fresh();
                // Every shape's classes at once (the trie's root): shapes' classes are
                // disjoint, so a configuration recovers its part by intersecting with
                // its shape's classes.
                let o = ex.explore_fresh(0, &[rep[x]], Riders::Nodes(&[ROOT]));
                (o, ex.looks)
            })
            .collect()
    };
    let chunks: Vec<&[usize]> = reps.chunks(START_CHUNK).collect();
    let mut explored = chunks.first().map(|c| explore(c));
    for (i, chunk) in chunks.iter().enumerate() {
        stop.check()?;
        let outs = explored.take().unwrap_or_default();
        let make_edges = |b: &mut Builder<'a>, starts: &mut [u32]| {
            for (&x, (o, looks)) in chunk.iter().zip(outs) {
                let o = b.ex.adopt_looks(o, |l| &looks[l as usize], &mut Vec::new());
                if let Some(e) = b.edge(o)? {
                    starts[x] = e;
                }
            }
            Ok::<_, GrammarError>(())
        };
        let (next, made) = rayon::join(
            || chunks.get(i + 1).map(|c| explore(c)),
            || make_edges(&mut b, &mut starts),
        );
        made?;
        explored = next;
    }
    for &x in &tops {
        starts[x] = starts[class_rep[&class[x]]];
    }
    Ok(Started { b, starts })
}

impl Started<'_> {
    /// The states the starts reach, then the determinized automaton; returns each
    /// shape's class set id with it.
    fn finish(
        self,
        sets: &ClassSets,
        nshapes: usize,
        limits: &DwaLimits,
        stop: &Interrupt,
    ) -> Result<(Vec<WeightId>, Det), GrammarError> {
        let Started { mut b, starts } = self;
        // After every start, so that shallow states see all their riders before being built.
        b.drain(stop)?;
        let shape_classes: Vec<WeightId> = (0..nshapes)
            .map(|i| {
                let all = sets.shape_all[i].clone();
                b.weights.intern(&all)
            })
            .collect();
        let riders: Vec<WeightId> = (0..b.info.len())
            .map(|i| {
                let r = b.ex.keys.get(b.info[i].riders);
                b.weights.intern(r)
            })
            .collect();
        let nfa = Nfa {
            riders,
            weights: b.weights,
            skip_to: b.skip_to,
            trans: b.trans,
            edges: b.edges,
            targets: b.targets,
            starts,
        };
        determinize(nfa, limits.determinize_budget, limits.max_states, stop)
            .map(|det| (shape_classes, det))
    }
}

#[cfg(test)]
mod tests;

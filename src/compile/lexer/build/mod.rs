//! Pass: the grammar's terminals → one byte-level [`LexerDfa`].
//!
//! Each terminal's regex is compiled by `regex-automata` into an anchored dense DFA with
//! leftmost-first semantics, so a lazy quantifier stops at its earliest match exactly as
//! in Lark / Python `re` (DESIGN.md §1): a lexeme `w` is a complete match of the terminal
//! iff that DFA, run over `w` and end of input, reports a match ending at `|w|`. Unicode
//! classes are UTF-8 byte automata, so invalid UTF-8 never matches. The per-terminal DFAs
//! are then run in lock step (a product construction over the states that can still reach
//! a match), which gives one DFA whose state knows, for the lexeme so far, every terminal
//! it could still become and which of the top-priority ones it already completes.

use hashbrown::{HashMap, HashSet};
use rayon::prelude::*;
use regex_automata::{
    dfa::{dense, Automaton, StartKind},
    nfa::thompson,
    util::{primitives::StateID, start, syntax},
    Anchored, MatchKind,
};

use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::{Divisibility, Grammar, Priority, Terminal, MAX_DIVISOR};
use crate::compile::interrupt::Interrupt;
use crate::compile::lexer::count::{self, CountPos, CountStep, Counting};
use crate::ids::{LexStateId, TerminalId};
use crate::lexer::{CountRun, CountRuns, LexTerminal, LexerDfa};

mod look_around;
mod pattern_cache;
mod shadow;
mod terminal;
pub use look_around::remove_vacuous_look_around;
use pattern_cache::PatternCache;
pub use shadow::add_shadows;
use terminal::*;

/// Most states of the combined lexer DFA; bounds memory (states × classes × 4 bytes).
pub const MAX_LEXER_STATES: usize = 200_000;
/// Heap limit for one terminal's DFA (and its determinization) in bytes.
pub const TERMINAL_DFA_LIMIT: usize = 64 << 20;
/// Largest terminal DFA (in states) minimized before the lexer is built from it, a
/// bound on the refinement's cost (7 ms at 3,815 states). Every 4th MaskBench schema has
/// about 30 larger ones (6K–85K states); whether minimizing them would pay is untested.
const MINIMIZE_UP_TO: usize = 4096;

/// States processed between checks of the compile's [`Interrupt`].
const STOP_CHECK_STATES: u32 = 1024;

/// `TermDfa::trans` entry for "no transition".
pub(super) const NONE: u32 = u32::MAX;

/// One terminal's DFA, re-indexed densely over the states reachable from its start.
#[derive(Clone)]
pub(super) struct TermDfa {
    pub(super) classes: [u8; 256],
    pub(super) stride: usize,
    /// `trans[s * stride + class]`, `NONE` for dead or for states that cannot reach a match.
    pub(super) trans: Vec<u32>,
    pub(super) complete: Vec<bool>,
    pub(super) start: u32,
}

impl TermDfa {
    /// A DFA from its parts (start state 0), with every transition into a state that
    /// cannot reach a complete one redirected to `NONE`.
    fn pruned(classes: [u8; 256], stride: usize, mut trans: Vec<u32>, complete: Vec<bool>) -> Self {
        let live = prune_dead(&mut trans, stride, &complete);
        Self {
            classes,
            stride,
            trans,
            complete,
            start: if live { 0 } else { NONE },
        }
    }

    /// The minimal DFA of the same language (states renumbered breadth-first from the
    /// start), by Hopcroft's partition refinement; `self` unchanged above
    /// [`MINIMIZE_UP_TO`] states. `self` must be pruned (every state can complete).
    ///
    /// Why: the lexer is the product of every terminal's DFA, and inside a counted
    /// string each layer holds every reachable combination of the terminals' states, so
    /// a terminal with states its language does not tell apart multiplies the layers.
    /// regex-automata's DFAs are built unminimized (its minimizer costs a second
    /// determinization), and products of them never pass through it; a URL pattern
    /// minimizes to a fifth of its states, and a lexer counting it to a quarter.
    /// Hopcroft's refinement, `O(k n log n)`, not Moore's, which needs a pass per split
    /// on long chains.
    fn minimized(self) -> Self {
        let n = self.complete.len();
        if self.start == NONE || n <= 2 || n > MINIMIZE_UP_TO {
            return self;
        }
        let k = self.stride;
        // State `n` is the sink "no transition" leads to.
        let m = n + 1;
        let target = |s: usize, c: usize| -> usize {
            match self.trans.get(s * k + c) {
                Some(&t) if s < n && t != NONE => t as usize,
                _ => n,
            }
        };
        // Predecessors by (class, target), as one array cut at `off[c * m + t]`.
        let mut off = vec![0u32; k * m + 1];
        for s in 0..m {
            for c in 0..k {
                off[c * m + target(s, c) + 1] += 1;
            }
        }
        for i in 1..off.len() {
            off[i] += off[i - 1];
        }
        let mut fill = off.clone();
        let mut pre = vec![0u32; m * k];
        for s in 0..m {
            for c in 0..k {
                let slot = &mut fill[c * m + target(s, c)];
                pre[*slot as usize] = s as u32;
                *slot += 1;
            }
        }
        // Blocks are ranges of `elems`; a block's marked states are moved to its front.
        let mut elems: Vec<u32> = (0..m as u32).collect();
        elems.sort_by_key(|&s| !self.complete.get(s as usize).copied().unwrap_or(false));
        let mut loc = vec![0u32; m];
        for (i, &s) in elems.iter().enumerate() {
            loc[s as usize] = i as u32;
        }
        let finals = self.complete.iter().filter(|&&c| c).count();
        let mut bounds: Vec<(u32, u32)> = Vec::new();
        let mut block_of = vec![0u32; m];
        for (lo, hi) in [(0, finals), (finals, m)] {
            if lo < hi {
                for &s in &elems[lo..hi] {
                    block_of[s as usize] = bounds.len() as u32;
                }
                bounds.push((lo as u32, hi as u32));
            }
        }
        let mut marked = vec![0u32; bounds.len()];
        let mut in_work = vec![true; bounds.len()];
        let mut work: Vec<u32> = (0..bounds.len() as u32).collect();
        let mut touched: Vec<u32> = Vec::new();
        let mut splitter: Vec<u32> = Vec::new();
        while let Some(a) = work.pop() {
            in_work[a as usize] = false;
            let (lo, hi) = bounds[a as usize];
            splitter.clear();
            splitter.extend_from_slice(&elems[lo as usize..hi as usize]);
            for c in 0..k {
                for &t in &splitter {
                    let i = c * m + t as usize;
                    for &s in &pre[off[i] as usize..off[i + 1] as usize] {
                        // A state has one target per class: it is marked at most once here.
                        let b = block_of[s as usize] as usize;
                        let (i, j) = (loc[s as usize], bounds[b].0 + marked[b]);
                        let other = elems[j as usize];
                        elems.swap(i as usize, j as usize);
                        loc[s as usize] = j;
                        loc[other as usize] = i;
                        if marked[b] == 0 {
                            touched.push(b as u32);
                        }
                        marked[b] += 1;
                    }
                }
                for b in touched.drain(..) {
                    let b = b as usize;
                    let (lo, hi) = bounds[b];
                    let cut = lo + std::mem::take(&mut marked[b]);
                    if cut == hi {
                        continue;
                    }
                    // The marked part becomes a new block.
                    let nb = bounds.len() as u32;
                    bounds.push((lo, cut));
                    bounds[b].0 = cut;
                    marked.push(0);
                    for &s in &elems[lo as usize..cut as usize] {
                        block_of[s as usize] = nb;
                    }
                    let smaller = if cut - lo <= hi - cut { nb } else { b as u32 };
                    let add = if in_work[b] { nb } else { smaller };
                    in_work.push(false);
                    in_work[add as usize] = true;
                    work.push(add);
                }
            }
        }
        // Renumber the blocks reachable from the start, breadth-first; the sink's block
        // (with any state that cannot complete: unreachable once pruned) is "no
        // transition".
        let sink = block_of[n] as usize;
        let mut id = vec![NONE; bounds.len()];
        let mut order: Vec<u32> = vec![self.start];
        id[block_of[self.start as usize] as usize] = 0;
        let mut trans: Vec<u32> = Vec::new();
        let mut complete: Vec<bool> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let s = order[i] as usize;
            complete.push(self.complete[s]);
            for c in 0..k {
                let t = target(s, c);
                let b = block_of[t] as usize;
                trans.push(if b == sink {
                    NONE
                } else {
                    if id[b] == NONE {
                        id[b] = order.len() as u32;
                        order.push(t as u32);
                    }
                    id[b]
                });
            }
            i += 1;
        }
        Self {
            classes: self.classes,
            stride: k,
            trans,
            complete,
            start: 0,
        }
    }
}

/// Options of the lexer build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LexerOptions {
    /// Counted layers kept explicit before each critical count: a mask automaton over
    /// the lexer accepts tokens of at most this many bytes (see `lexer::CountRun`).
    pub count_margin: u32,
    /// Most states the subset construction may make ([`MAX_LEXER_STATES`] by default);
    /// past it the build fails with [`GrammarError::TooLarge`].
    pub max_states: usize,
}

/// Default [`LexerOptions::count_margin`]: twice the longest token (128 bytes) of the
/// byte-level BPE vocabularies in use.
pub const COUNT_MARGIN: u32 = 256;

impl Default for LexerOptions {
    fn default() -> Self {
        Self {
            count_margin: COUNT_MARGIN,
            max_states: MAX_LEXER_STATES,
        }
    }
}

impl LexerOptions {
    /// The options a mask automaton over `vocab` needs and no more: a margin of its
    /// longest token (fewer explicit layers for vocabularies of short tokens).
    pub fn for_vocab(vocab: &crate::vocab::Vocab) -> Self {
        Self {
            count_margin: (vocab.max_token_len() as u32).max(1),
            ..Self::default()
        }
    }
}

/// Builds the lexer DFA of a grammar.
pub fn build_lexer(g: &Grammar) -> Result<LexerDfa, GrammarError> {
    build_lexer_with(g, &LexerOptions::default())
}

/// A combined-automaton state under construction: every plain terminal's state (and each
/// counted terminal's, before `open` and after `close`), sorted by terminal, plus where
/// the counted terminals are inside their units.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    plain: Vec<(u32, u32)>,
    count: Option<CountPos>,
}

/// A [`Key`] borrowed: what states are hashed and looked up by, without building a key.
#[derive(Hash, Clone, Copy)]
struct KeyRef<'a> {
    plain: &'a [(u32, u32)],
    count: Option<CountPos>,
}

impl KeyRef<'_> {
    fn is(&self, key: &Key) -> bool {
        self.plain == key.plain.as_slice() && self.count == key.count
    }
}

/// The subset construction's states by key: ids hashed by their key, each id's hash kept
/// beside it. Why not a `HashMap<Key, u32>`: that held every key twice (a clone beside
/// [`SubsetBuilder::keys`]), and each of its growths hashed every key vector again, a
/// tenth of a large counted lexer's build (93K states of key vectors dozens long).
#[derive(Default)]
struct StateIndex {
    table: hashbrown::HashTable<(u64, u32)>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl StateIndex {
    fn hash(&self, k: KeyRef<'_>) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(k)
    }

    /// The id of the state with key `k`, if any (`keys` by id).
    fn get(&self, keys: &[Key], k: KeyRef<'_>) -> Option<u32> {
        let h = self.hash(k);
        self.table
            .find(h, |&(hh, id)| hh == h && k.is(&keys[id as usize]))
            .map(|&(_, id)| id)
    }

    /// Records `id` under key `k`, which no state has yet.
    fn insert(&mut self, k: KeyRef<'_>, id: u32) {
        let h = self.hash(k);
        self.table.insert_unique(h, (h, id), |&(hh, _)| hh);
    }

    /// Forgets `id`, whose key is `k`.
    fn remove(&mut self, k: KeyRef<'_>, id: u32) {
        let h = self.hash(k);
        if let Ok(e) = self.table.find_entry(h, |&(_, x)| x == id) {
            e.remove();
        }
    }
}

impl Key {
    fn as_ref(&self) -> KeyRef<'_> {
        KeyRef {
            plain: &self.plain,
            count: self.count,
        }
    }
}

/// No state linked (see [`SubsetBuilder::up`]).
const NO_LINK: u32 = u32::MAX;

/// The plain terminals' states and the unit position of a counting state: what two
/// layers must agree on, state for state, to be alike.
type Combo = (Vec<(u32, u32)>, u32);

/// A run cut during the construction: its template layer (pre-renumbering ids) and,
/// per unit-start template state, the explicit state the last iteration exits to.
struct CutRun {
    template: Vec<u32>,
    len: u32,
    exits: Vec<(u32, u32)>,
}

/// Whether a counted terminal would be counted exactly (see `count`): its unit is
/// usable and its pattern's completion lengths are upward closed. Front ends ask before
/// counting a length beside a pattern. `Ok(false)` for a terminal that is not counted.
pub fn counted_is_exact(t: &Terminal) -> Result<bool, GrammarError> {
    count::counted_is_exact(t, regex_dfa, &term_dfa(t)?)
}

/// [`build_lexer`] with explicit options.
pub fn build_lexer_with(g: &Grammar, opts: &LexerOptions) -> Result<LexerDfa, GrammarError> {
    build_lexer_until(g, opts, &Interrupt::default())
}

/// [`build_lexer_with`], stopping with `stop`'s error once it says so.
pub(crate) fn build_lexer_until(
    g: &Grammar,
    opts: &LexerOptions,
    stop: &Interrupt,
) -> Result<LexerDfa, GrammarError> {
    // A declared terminal no post-lexer makes could never be lexed: refused by name here,
    // where every pipeline starts, so that an indenter can be set after the front end.
    g.post_lexer()?;
    let (lexer, _) = subset_construction(g, opts, true, false, stop)?;
    let lexer = with_modes(lexer, g)?;
    if g.longest_match {
        return add_shadows(lexer, opts.max_states);
    }
    Ok(lexer)
}

/// Each distinct set of two or more terminals that complete one lexeme (ascending; any
/// priorities), over `g`'s lexer with its modes as they are. Lexed in a mode `M`, a
/// lexeme completes its set's terminals that are in `M` (a mode's product is the global
/// one's projection), so contextual lexing reads from these, without building each
/// mode's lexer, which terminals a lexeme emits together in any mode.
pub(crate) fn completed_sets(
    g: &Grammar,
    opts: &LexerOptions,
    stop: &Interrupt,
) -> Result<Vec<Vec<TerminalId>>, GrammarError> {
    let (p, _) = subset_construction(g, opts, true, true, stop)?;
    Ok(p.completed)
}

/// [`build_lexer_with`] before its modes are laid on, with rows shifted between layers
/// (see [`SubsetBuilder::shift_row`]) only if `shift`; also returns how many rows were.
fn subset_construction(
    g: &Grammar,
    opts: &LexerOptions,
    shift: bool,
    record: bool,
    stop: &Interrupt,
) -> Result<(Product, usize), GrammarError> {
    // Terminals' automata are independent, and were four fifths of a median schema's
    // lexer build: made in parallel, and the first error in terminal order reported.
    let shared = shared_patterns(&g.terminals);
    let dfas: Vec<Result<TermDfa, GrammarError>> = g
        .terminals
        .par_iter()
        .map(|t| term_dfa_with(t, &shared))
        .collect();
    let dfas = dfas.into_iter().collect::<Result<Vec<_>, _>>()?;
    let counting = Counting::new(&g.terminals, &dfas, |t, re| {
        PatternCache::global()
            .dfa(t, re, true)
            .map(|d| TermDfa::clone(&d))
    })?;
    let prio: Vec<Priority> = g.terminals.iter().map(|t| t.priority).collect();

    let (classes, reps) = byte_classes(&dfas, counting.as_ref());
    let stride = reps.len();

    let mut b = SubsetBuilder {
        dfas: &dfas,
        counting: counting.as_ref(),
        stride,
        reps: &reps,
        index: StateIndex::default(),
        keys: Vec::new(),
        trans: Vec::new(),
        emits: Vec::new(),
        prio: &prio,
        shift,
        shift_source: Vec::new(),
        up: Vec::new(),
        down: Vec::new(),
        shifted: 0,
        max_states: opts.max_states,
        completed_sets: record.then(HashSet::new),
    };
    b.add(Key {
        plain: Vec::new(),
        count: None,
    })?; // state 0: dead
    let modes = mode_count(g)?;
    let start_plain = |m: u32| -> Vec<(u32, u32)> {
        dfas.iter()
            .enumerate()
            .filter(|&(i, d)| d.start != NONE && g.terminals[i].mode.in_mode(m))
            .map(|(i, d)| (i as u32, d.start))
            .collect()
    };
    // The start state is always 1, even if no terminal can start (then it has no exits).
    b.add(Key {
        plain: start_plain(0),
        count: None,
    })?;
    // Each further lexer mode's start next: plain states, below any run.
    let mut starts: Vec<u32> = vec![1];
    for m in 1..modes {
        let plain = start_plain(m);
        if plain.is_empty() {
            return Err(GrammarError::Unsupported {
                span: Default::default(),
                construct: format!("lexer mode {m}"),
                reason: "no terminal is lexed in it".into(),
            });
        }
        starts.push(b.add(Key { plain, count: None })?);
    }
    // Plain states in id order (as before counting existed); counted layers by count,
    // each finished before the next so that a layer can be compared with the one before.
    let mut plain_queue: std::collections::VecDeque<u32> = starts.iter().copied().collect();
    let mut layers: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
    let mut runs: Vec<CutRun> = Vec::new();
    let mut prev_layer: Option<(u32, Vec<Combo>)> = None;
    loop {
        while let Some(s) = plain_queue.pop_front() {
            if s % STOP_CHECK_STATES == 0 {
                stop.check()?;
            }
            b.process(s, &mut plain_queue, &mut layers)?;
        }
        stop.check()?;
        let Some((c, mut work)) = layers.pop_first() else {
            break;
        };
        let mut layer: Vec<u32> = Vec::new();
        while let Some(s) = work.pop() {
            layer.push(s);
            let mut found: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
            b.process(s, &mut plain_queue, &mut found)?;
            for (c2, v) in found {
                if c2 == c {
                    work.extend(v);
                } else {
                    layers.entry(c2).or_default().extend(v);
                }
            }
        }
        let k = counting.as_ref().expect("layers exist only when counting");
        let mut combos: Vec<Combo> = layer
            .iter()
            .map(|&s| {
                let key = &b.keys[s as usize];
                (
                    key.plain.clone(),
                    key.count.expect("a layer state counts").u,
                )
            })
            .collect();
        combos.sort();
        let settled = c > 0
            && !k.is_critical(c)
            && prev_layer
                .as_ref()
                .is_some_and(|(pc, pcombos)| *pc + 1 == c && *pcombos == combos);
        let margin = opts.count_margin.max(1);
        let run_len = k
            .next_critical(c)
            .and_then(|end| end.checked_sub(margin)?.checked_sub(c));
        // Any run length will do: every iteration ends `margin` layers before the next
        // critical count, so no token from any of them sees a count that tells it from
        // the template. (Runs used to be longer than the margin too, which left the
        // common `maxLength: 255` unrolled, 390 layers in a schema that needs 260.)
        if let (true, Some(len)) = (settled, run_len.filter(|&l| l >= 2)) {
            if let Some(run) = b.cut_run(c, len, &layer, &mut layers)? {
                runs.push(run);
                prev_layer = None;
                continue;
            }
        }
        prev_layer = Some((c, combos));
    }
    let shifted = b.shifted;
    let completed = b.take_completed_sets();
    let dfa = b.finish(classes, stride, runs, opts.count_margin, &g.terminals)?;
    Ok((
        Product {
            dfa,
            starts,
            completed,
        },
        shifted,
    ))
}

/// The subset construction's lexer, and the start state of each lexer mode (`[1]`
/// without modes), before [`with_modes`] checks and records them.
#[derive(Debug, PartialEq)]
struct Product {
    dfa: LexerDfa,
    starts: Vec<u32>,
    /// When recorded: each distinct set of two or more terminals some state completes,
    /// whatever their priorities, ascending.
    completed: Vec<Vec<TerminalId>>,
}

/// The lexer of `p` with `g`'s modes laid on; refuses a lexeme whose terminals disagree
/// on the next mode.
fn with_modes(p: Product, g: &Grammar) -> Result<LexerDfa, GrammarError> {
    if p.starts.len() == 1 {
        return Ok(p.dfa);
    }
    check_modes_agree(&p.dfa, g)?;
    // Starts are plain states made before any run's, so renumbering kept their ids; the
    // check above is the one invariant `with_modes` could still find broken.
    let then: Vec<u32> = g.terminals.iter().map(|t| t.mode.then).collect();
    Ok(p.dfa
        .with_modes(p.starts, &then)
        .expect("mode starts are plain, non-emitting states"))
}

/// How many lexer modes `g`'s terminals use (1 without modes); refuses modes beside a
/// post-lexer or longest-match lexing, which do not read them.
fn mode_count(g: &Grammar) -> Result<u32, GrammarError> {
    let modes = g
        .terminals
        .iter()
        .map(|t| t.mode.modes_named())
        .max()
        .unwrap_or(1);
    if modes > 1 && (g.longest_match || g.indenter.is_some()) {
        return Err(GrammarError::Unsupported {
            span: Default::default(),
            construct: "lexer modes".into(),
            reason: "not beside longest-match lexing or an indenter".into(),
        });
    }
    Ok(modes)
}

/// Refuses a lexeme that two terminals of equal priority match but that would continue
/// in different modes: the lexer could not tell which mode comes next.
fn check_modes_agree(lexer: &LexerDfa, g: &Grammar) -> Result<(), GrammarError> {
    for s in 0..lexer.num_states() {
        let e = lexer.emits(LexStateId::new(s));
        let Some(&first) = e.first() else { continue };
        let (a, then) = (
            &g.terminals[first.index()],
            g.terminals[first.index()].mode.then,
        );
        if let Some(t) = e.iter().find(|t| g.terminals[t.index()].mode.then != then) {
            let b = &g.terminals[t.index()];
            return Err(GrammarError::Unsupported {
                span: b.span,
                construct: format!("terminals {} and {}", a.name, b.name),
                reason: "they match the same text but the text after them is lexed in \
                         different lexer modes"
                    .into(),
            });
        }
    }
    Ok(())
}

/// Global byte classes, bytes no terminal DFA (nor the counting rules) distinguishes:
/// each byte's class, and one byte per class in class order.
fn byte_classes(dfas: &[TermDfa], counting: Option<&Counting>) -> (Vec<u8>, Vec<u8>) {
    let mut sig_class: HashMap<Vec<u8>, u8> = HashMap::new();
    let mut classes = vec![0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let mut sig: Vec<u8> = dfas.iter().map(|d| d.classes[b as usize]).collect();
        if let Some(k) = counting {
            let (open, close) = k.is_open_close(b);
            sig.extend([k.unit_class(b), u8::from(open), u8::from(close)]);
        }
        let next = sig_class.len();
        let c = *sig_class.entry(sig).or_insert_with(|| {
            reps.push(b);
            next as u8
        });
        classes[b as usize] = c;
    }
    (classes, reps)
}

/// The subset construction's tables, with the counting rules.
struct SubsetBuilder<'a> {
    dfas: &'a [TermDfa],
    counting: Option<&'a Counting>,
    stride: usize,
    /// One byte per class, in class order.
    reps: &'a [u8],
    index: StateIndex,
    keys: Vec<Key>,
    /// Rows of `stride` entries, one per state (filled when the state is processed).
    trans: Vec<u32>,
    emits: Vec<Vec<TerminalId>>,
    prio: &'a [Priority],
    /// Whether rows are shifted at all (tests compare with stepping every row).
    shift: bool,
    /// Per state, whether its row may be shifted into the layer above (see
    /// [`SubsetBuilder::shift_row`]): a counting state whose row is filled and was not
    /// rewritten into a run's template.
    shift_source: Vec<bool>,
    /// Per state, the state with the same plain part and unit position one count up
    /// ([`NO_LINK`]: not known yet), found once instead of hashed row after row.
    up: Vec<u32>,
    /// The inverse of `up`.
    down: Vec<u32>,
    /// Rows filled by shifting.
    shifted: usize,
    /// [`LexerOptions::max_states`].
    max_states: usize,
    /// When asked for, each distinct set of two or more terminals a state completes
    /// (whatever their priorities).
    completed_sets: Option<HashSet<Vec<u32>>>,
}

impl SubsetBuilder<'_> {
    fn add(&mut self, key: Key) -> Result<u32, GrammarError> {
        if self.keys.len() >= self.max_states {
            return Err(GrammarError::TooLarge {
                span: Default::default(),
                what: "lexer DFA states".into(),
                limit: self.max_states,
            });
        }
        let id = self.keys.len() as u32;
        self.index.insert(key.as_ref(), id);
        let complete = self.completed(&key);
        if let Some(sets) = &mut self.completed_sets {
            if complete.len() > 1 {
                sets.insert(complete.clone());
            }
        }
        self.emits.push(self.top(complete));
        self.keys.push(key);
        self.trans.extend(std::iter::repeat_n(0, self.stride));
        self.shift_source.push(false);
        self.up.push(NO_LINK);
        self.down.push(NO_LINK);
        Ok(id)
    }

    /// The recorded completed sets (empty when not recorded), as terminal ids, sorted.
    fn take_completed_sets(&mut self) -> Vec<Vec<TerminalId>> {
        let mut sets: Vec<Vec<TerminalId>> = self
            .completed_sets
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(|set| {
                set.into_iter()
                    .map(|t| TerminalId::new(t as usize))
                    .collect()
            })
            .collect();
        sets.sort();
        sets
    }

    /// The terminals a state's lexeme completes, ascending.
    fn completed(&self, key: &Key) -> Vec<u32> {
        // A counted terminal completes only once closed (outside the units).
        let counted = |t: u32| self.counting.is_some_and(|k| k.is_counted(t));
        key.plain
            .iter()
            .filter(|&&(t, st)| {
                self.dfas[t as usize].complete[st as usize] && (key.count.is_none() || !counted(t))
            })
            .map(|&(t, _)| t)
            .collect()
    }

    /// The top-priority terminals of `complete`: what a state emits.
    fn top(&self, complete: Vec<u32>) -> Vec<TerminalId> {
        let top = complete.iter().map(|&t| self.prio[t as usize]).max();
        complete
            .into_iter()
            .filter(|&t| Some(self.prio[t as usize]) == top)
            .map(|t| TerminalId::new(t as usize))
            .collect()
    }

    /// The key after byte `b`: its plain part written into `plain`, its count returned
    /// (both empty: dead).
    fn step(&self, key: &Key, b: u8, plain: &mut Vec<(u32, u32)>) -> Option<CountPos> {
        plain.clear();
        plain.extend(key.plain.iter().filter_map(|&(t, st)| {
            let d = &self.dfas[t as usize];
            let ns = d.trans[st as usize * d.stride + d.classes[b as usize] as usize];
            (ns != NONE).then_some((t, ns))
        }));
        let k = self.counting?;
        // Counted terminals enter the units together, from the start state only.
        let enter = key.count.is_none()
            && b == k.open
            && key
                .plain
                .iter()
                .any(|&(t, st)| k.is_counted(t) && st == self.dfas[t as usize].start);
        let count = if enter {
            Some(CountPos { u: 0, c: 0 })
        } else if let Some(p) = key.count {
            match k.step(p, b) {
                CountStep::Inside(next) => Some(next),
                CountStep::Closed => {
                    plain.retain(|&(t, _)| k.closes(t, p.c));
                    None
                }
                CountStep::Dead => {
                    plain.retain(|&(t, _)| !k.is_counted(t));
                    None
                }
            }
        } else {
            None
        };
        let p = count?;
        plain.retain(|&(t, s)| k.alive(t, s, p));
        let counting = plain.iter().any(|&(t, _)| k.is_counted(t));
        counting.then_some(p)
    }

    /// Fills state `s`'s row, adding the states it reaches: plain ones to `plain`,
    /// counting ones to `layers` by count.
    fn process(
        &mut self,
        s: u32,
        plain: &mut std::collections::VecDeque<u32>,
        layers: &mut std::collections::BTreeMap<u32, Vec<u32>>,
    ) -> Result<(), GrammarError> {
        if self.shift_row(s, layers)? {
            return Ok(());
        }
        let key = self.keys[s as usize].clone();
        // Stepped into one buffer and looked up by reference: a key is copied only for a
        // new state (a large schema's lexer takes millions of steps, most to known states).
        let mut stepped: Vec<(u32, u32)> = Vec::with_capacity(key.plain.len());
        // The last live step and its target: neighbouring classes mostly step alike (the
        // letters inside a string), and comparing two short lists is cheaper than hashing
        // one.
        let mut last: (Vec<(u32, u32)>, Option<CountPos>, u32) = (Vec::new(), None, u32::MAX);
        for (c, &byte) in self.reps.iter().enumerate() {
            let count = self.step(&key, byte, &mut stepped);
            let id = if stepped.is_empty() && count.is_none() {
                0
            } else if last.2 != u32::MAX && count == last.1 && stepped == last.0 {
                last.2
            } else if let Some(id) = self.index.get(
                &self.keys,
                KeyRef {
                    plain: &stepped,
                    count,
                },
            ) {
                id
            } else {
                let next = Key {
                    plain: stepped.clone(),
                    count,
                };
                let id = self.add(next)?;
                match count {
                    None => plain.push_back(id),
                    Some(p) => layers.entry(p.c).or_default().push(id),
                }
                id
            };
            if id != 0 && id != last.2 {
                last.0.clear();
                last.0.extend_from_slice(&stepped);
                last.1 = count;
                last.2 = id;
            }
            self.trans[s as usize * self.stride + c] = id;
        }
        self.shift_source[s as usize] = key.count.is_some();
        Ok(())
    }

    /// Fills counting state `s`'s row by shifting, one count up, the row of the state
    /// with the same plain part and unit position one count below, when that row is
    /// filled and no critical count separates the two (`false`: nothing done).
    ///
    /// Why: a step reads the count only by comparing it with the critical counts, so with
    /// none between them the two rows agree target for target, counts shifted by one. A counted string's layers
    /// within a token's length of each critical count are explicit (nearly all of a large
    /// counted lexer's states); shifting costs a lookup per distinct
    /// target where stepping cost one per byte class. States are made in the same order
    /// as stepping would make them, so the lexer is the same.
    fn shift_row(
        &mut self,
        s: u32,
        layers: &mut std::collections::BTreeMap<u32, Vec<u32>>,
    ) -> Result<bool, GrammarError> {
        let (Some(k), Some(p)) = (self.counting, self.keys[s as usize].count) else {
            return Ok(false);
        };
        // A step from count c reads the count at c (closing) and at c + 1 (alive after a
        // unit): the two rows agree if neither is critical.
        if !self.shift || p.c == 0 || k.is_critical(p.c) || k.is_critical(p.c + 1) {
            return Ok(false);
        }
        let s0 = match self.down[s as usize] {
            NO_LINK => {
                let below = KeyRef {
                    plain: &self.keys[s as usize].plain,
                    count: Some(CountPos { u: p.u, c: p.c - 1 }),
                };
                let Some(s0) = self.index.get(&self.keys, below) else {
                    return Ok(false);
                };
                self.link(s0, s);
                s0
            }
            s0 => s0,
        };
        if !self.shift_source[s0 as usize] {
            return Ok(false);
        }
        let stride = self.stride;
        // Neighbouring classes mostly share a target: the last one's shift is reused.
        let mut last = (u32::MAX, 0);
        for c in 0..stride {
            let t0 = self.trans[s0 as usize * stride + c];
            let t = if t0 == last.0 {
                last.1
            } else {
                let t = match self.keys[t0 as usize].count {
                    // Dead, or a closed lexeme's plain state: the same from either count.
                    None => t0,
                    Some(_) if self.up[t0 as usize] != NO_LINK => self.up[t0 as usize],
                    Some(q) => {
                        let up = Some(CountPos { u: q.u, c: q.c + 1 });
                        let found = self.index.get(
                            &self.keys,
                            KeyRef {
                                plain: &self.keys[t0 as usize].plain,
                                count: up,
                            },
                        );
                        let t = match found {
                            Some(id) => id,
                            None => {
                                let plain = self.keys[t0 as usize].plain.clone();
                                let id = self.add(Key { plain, count: up })?;
                                layers.entry(q.c + 1).or_default().push(id);
                                id
                            }
                        };
                        self.link(t0, t);
                        t
                    }
                };
                last = (t0, t);
                t
            };
            self.trans[s as usize * stride + c] = t;
        }
        self.shift_source[s as usize] = true;
        self.shifted += 1;
        Ok(true)
    }

    /// Records that `b` is `a` one count up.
    fn link(&mut self, a: u32, b: u32) {
        self.up[a as usize] = b;
        self.down[b as usize] = a;
    }

    /// Forgets `s`'s links (its key is about to change).
    fn unlink(&mut self, s: u32) {
        let up = std::mem::replace(&mut self.up[s as usize], NO_LINK);
        if up != NO_LINK {
            self.down[up as usize] = NO_LINK;
        }
        let down = std::mem::replace(&mut self.down[s as usize], NO_LINK);
        if down != NO_LINK {
            self.up[down as usize] = NO_LINK;
        }
    }

    /// Cuts a run at layer `c` (whose states are `layer`, equal to the layer before as
    /// far as other terminals and unit positions go): the layer becomes the template of
    /// `len` iterations, the states its unit completions created (the pending layer
    /// `c + 1`) become the exit layer `c + len`, and the template's completions loop back
    /// into it. `None` (nothing changed) if the completions do not reproduce the layer's
    /// unit-start states one for one.
    fn cut_run(
        &mut self,
        c: u32,
        len: u32,
        layer: &[u32],
        layers: &mut std::collections::BTreeMap<u32, Vec<u32>>,
    ) -> Result<Option<CutRun>, GrammarError> {
        let plain_of = |b: &Self, s: u32| b.keys[s as usize].plain.clone();
        let mut starts: Vec<Combo> = layer
            .iter()
            .filter(|&&s| self.keys[s as usize].count.is_some_and(|p| p.u == 0))
            .map(|&s| (plain_of(self, s), s))
            .collect();
        starts.sort();
        let mut pending: Vec<Combo> = layers
            .get(&(c + 1))
            .map(|v| v.iter().map(|&s| (plain_of(self, s), s)).collect())
            .unwrap_or_default();
        pending.sort();
        let same =
            starts.len() == pending.len() && starts.iter().zip(&pending).all(|(a, b)| a.0 == b.0);
        if !same || layers.keys().any(|&k| k > c + 1) {
            return Ok(None);
        }
        layers.remove(&(c + 1));
        let exit_count = c + len;
        let mut to_template: HashMap<u32, u32> = HashMap::new();
        let mut exits = Vec::with_capacity(starts.len());
        for ((plain, x), (_, e)) in starts.into_iter().zip(pending) {
            self.index.remove(self.keys[e as usize].as_ref(), e);
            self.unlink(e);
            let key = Key {
                plain,
                count: Some(CountPos {
                    u: 0,
                    c: exit_count,
                }),
            };
            self.index.insert(key.as_ref(), e);
            self.keys[e as usize] = key;
            layers.entry(exit_count).or_default().push(e);
            to_template.insert(e, x);
            exits.push((x, e));
        }
        for &x in layer {
            // Its row now leads into the template, not one count up.
            self.shift_source[x as usize] = false;
            let row = &mut self.trans[x as usize * self.stride..(x as usize + 1) * self.stride];
            for t in row {
                if let Some(&x2) = to_template.get(t) {
                    *t = x2;
                }
            }
        }
        Ok(Some(CutRun {
            template: layer.to_vec(),
            len,
            exits,
        }))
    }

    /// Renumbers the states (plain ones in construction order, then each run's template,
    /// unit-start states first) and freezes the lexer.
    fn finish(
        self,
        classes: Vec<u8>,
        stride: usize,
        runs: Vec<CutRun>,
        margin: u32,
        terminals: &[Terminal],
    ) -> Result<LexerDfa, GrammarError> {
        let n = self.keys.len();
        let mut in_run = vec![false; n];
        for r in &runs {
            for &s in &r.template {
                in_run[s as usize] = true;
            }
        }
        let mut order: Vec<u32> = (0..n as u32).filter(|&s| !in_run[s as usize]).collect();
        let run_from = order.len() as u32;
        let mut layout: Vec<(u32, u32, u32)> = Vec::with_capacity(runs.len()); // first, width, starts
        for r in &runs {
            let first = order.len() as u32;
            let is_start = |s: &u32| self.keys[*s as usize].count.is_some_and(|p| p.u == 0);
            let mut t = r.template.clone();
            t.sort_unstable_by_key(|s| (!is_start(s), *s));
            let starts = t.iter().filter(|s| is_start(s)).count() as u32;
            order.extend(&t);
            layout.push((first, t.len() as u32, starts));
        }
        let mut perm = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            perm[old as usize] = new as u32;
        }
        // Rows are reordered in place: a large lexer's table is tens of MB, and a second
        // copy of it, faulted in fresh, would be most of this step. Kept states keep their relative order, moving down only.
        let mut trans = self.trans;
        let template_rows: Vec<u32> = order[run_from as usize..]
            .iter()
            .flat_map(|&old| &trans[old as usize * stride..(old as usize + 1) * stride])
            .copied()
            .collect();
        for (new, &old) in order[..run_from as usize].iter().enumerate() {
            let old = old as usize;
            if new != old {
                trans.copy_within(old * stride..(old + 1) * stride, new * stride);
            }
        }
        trans[run_from as usize * stride..].copy_from_slice(&template_rows);
        if !runs.is_empty() {
            // Tens of MB in a counted schema's lexer: renumbered on every thread.
            trans.par_iter_mut().for_each(|t| *t = perm[*t as usize]);
        }
        let mut old_emits = self.emits;
        let emits: Vec<Vec<TerminalId>> = order
            .iter()
            .map(|&old| std::mem::take(&mut old_emits[old as usize]))
            .collect();
        let mut frozen = Vec::with_capacity(runs.len());
        let mut virtual_base = n as u64;
        for (r, &(first, width, starts)) in runs.iter().zip(&layout) {
            // The template's unit-start states, in their new order, and their exits.
            let exit_of: HashMap<u32, u32> = r.exits.iter().copied().collect();
            let exits = (first..first + starts)
                .map(|x| perm[exit_of[&order[x as usize]] as usize])
                .collect();
            frozen.push(CountRun {
                first,
                width,
                starts,
                len: r.len,
                virtual_base: virtual_base as u32,
                exits,
            });
            virtual_base += u64::from(width) * u64::from(r.len - 1);
            if virtual_base > u64::from(u32::MAX) {
                return Err(GrammarError::TooLarge {
                    span: Default::default(),
                    what: "counted lexer states (layers × states per layer)".into(),
                    limit: u32::MAX as usize,
                });
            }
        }
        let lex_terminals = terminals
            .iter()
            .map(|t| LexTerminal {
                name: t.name.clone(),
                ignored: t.ignored,
                droppable: t.droppable,
                // Set with the mode starts (`with_modes`), once the states are final.
                then: 0,
            })
            .collect();
        let margin = if frozen.is_empty() { 0 } else { margin };
        // The string facts read the keys, the frozen lexer the table: each is a serial pass
        // over every state (a counted schema's lexer has up to 90K), made side by side.
        let facts = || {
            crate::compile::lexer::strings::string_facts(
                self.dfas,
                self.counting,
                self.prio,
                |t| terminals[t].ignored,
                self.reps,
                order.iter().map(|&old| {
                    let k = &self.keys[old as usize];
                    (k.plain.as_slice(), k.count.map(|p| (p.u, p.c)))
                }),
            )
        };
        let frozen_lexer = || {
            // The construction above meets every invariant `from_parts_with_runs` checks.
            LexerDfa::from_parts_with_runs(
                classes,
                stride as u32,
                trans,
                emits,
                lex_terminals,
                CountRuns {
                    run_from,
                    runs: frozen,
                    margin,
                },
            )
            .expect("lexer tables built consistently")
        };
        let (facts, lexer) = rayon::join(facts, frozen_lexer);
        Ok(lexer.with_string_facts(facts))
    }
}

#[cfg(test)]
mod tests;

//! The frozen lexer DFA.

use serde::{Deserialize, Serialize};

use super::run::{CountRun, CountRuns};
use super::shadow::Shadows;
use super::strings::{BuildFacts, StringFacts};
use super::LexPos;
use crate::ids::{LexStateId, TerminalId};

/// What the lexer keeps about a terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LexTerminal {
    /// Display name.
    pub name: String,
    /// Ignored terminals are lexed but never handed to the parser.
    pub ignored: bool,
    /// Droppable terminals are shifted where some live parse can shift them and skipped
    /// where none can (never ignored too).
    pub droppable: bool,
    /// The lexer mode the lexeme after this terminal is lexed in (0 without modes; see
    /// [`LexerDfa::start_after`]).
    pub then: u32,
}

/// Why a set of lexer tables is not a valid [`LexerDfa`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LexerValidateError {
    /// The tables have inconsistent sizes or out-of-range entries.
    #[error("invalid lexer tables: {0}")]
    Invalid(String),
}

/// A byte-level DFA over all terminals of a grammar.
///
/// Layout: bytes map to equivalence classes (`classes`, 256 entries, each `< stride`);
/// `trans[s * stride + c]` is the next state; state 0 is dead (all its transitions go to
/// 0), state 1 is the start (empty lexeme; of mode 0 when there are lexer modes, each
/// mode's start being a plain state listed in `starts`). `emit_offsets[s]..emit_offsets[s + 1]` indexes
/// `emit`: the top-priority terminals the lexeme of state `s` completes, sorted. A state
/// other than 0 always has a path to a state that emits something (dead ends are merged
/// into 0 when the DFA is built).
///
/// A lexer with counted terminals may have [`CountRun`]s: their template layers are the
/// explicit states from `run_from` on, and their later iterations have *virtual* ids at
/// and above [`Self::num_states`]. [`Self::next`] is exact over all ids; per-state facts
/// of a virtual state are its template's ([`Self::rep`]). Build-time passes read the
/// collapsed table through [`Self::next_rep`] and [`Self::next_exit`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LexerDfa {
    classes: Vec<u8>,
    stride: u32,
    trans: Vec<u32>,
    emit_offsets: Vec<u32>,
    emit: Vec<TerminalId>,
    extendable: Vec<bool>,
    terminals: Vec<LexTerminal>,
    /// First template state of a run (`num_states` when there are none): states below
    /// it take the plain table lookup.
    run_from: u32,
    runs: Vec<CountRun>,
    /// Counted layers kept explicit before each bound; a token longer than this many
    /// bytes could see past a run, so the mask automaton refuses such vocabularies.
    margin: u32,
    /// Under longest-match lexing, the boundary table (see [`super::shadow`]); `None`
    /// under 1-lookahead maximal munch.
    shadows: Option<Shadows>,
    /// The start state of each lexer mode, by mode (`starts[0]` is [`Self::START`]);
    /// empty in a lexer without modes. Every start is a plain state (below `run_from`).
    starts: Vec<u32>,
    /// What the builder knew about the string states (not serialized; see
    /// [`super::strings`]).
    #[serde(skip)]
    facts: BuildFacts,
}

impl LexerDfa {
    /// The dead state: no lexeme continues from here.
    pub const DEAD: LexStateId = LexStateId::from_u32(0);
    /// The start state: the empty lexeme (of mode 0, where the input starts).
    pub const START: LexStateId = LexStateId::from_u32(1);

    /// Assembles and validates lexer tables. `per_state_emit[s]` lists the terminals state
    /// `s` emits.
    pub fn from_parts(
        classes: Vec<u8>,
        stride: u32,
        trans: Vec<u32>,
        per_state_emit: Vec<Vec<TerminalId>>,
        terminals: Vec<LexTerminal>,
    ) -> Result<Self, LexerValidateError> {
        let n = per_state_emit.len() as u32;
        Self::from_parts_with_runs(
            classes,
            stride,
            trans,
            per_state_emit,
            terminals,
            CountRuns {
                run_from: n,
                ..CountRuns::default()
            },
        )
    }

    /// [`Self::from_parts`] for a counting lexer (runs as described on the type).
    pub fn from_parts_with_runs(
        classes: Vec<u8>,
        stride: u32,
        trans: Vec<u32>,
        per_state_emit: Vec<Vec<TerminalId>>,
        terminals: Vec<LexTerminal>,
        runs: CountRuns,
    ) -> Result<Self, LexerValidateError> {
        let CountRuns {
            run_from,
            runs,
            margin,
        } = runs;
        let mut emit_offsets = Vec::with_capacity(per_state_emit.len() + 1);
        let mut emit = Vec::new();
        emit_offsets.push(0u32);
        for mut e in per_state_emit {
            e.sort();
            e.dedup();
            emit.extend(e);
            emit_offsets.push(
                u32::try_from(emit.len())
                    .map_err(|_| LexerValidateError::Invalid("too many emit entries".into()))?,
            );
        }
        let n = emit_offsets.len() - 1;
        let stride_us = stride as usize;
        let extendable = (0..n)
            .map(|s| {
                trans
                    .get(s * stride_us..(s + 1) * stride_us)
                    .is_some_and(|row| row.iter().any(|&t| t != 0))
            })
            .collect();
        let dfa = Self {
            classes,
            stride,
            trans,
            emit_offsets,
            emit,
            extendable,
            terminals,
            run_from,
            runs,
            margin,
            shadows: None,
            starts: Vec::new(),
            facts: BuildFacts::default(),
        };
        dfa.validate()?;
        Ok(dfa)
    }

    /// This lexer with lexer modes whose start states are `starts` (by mode; `starts[0]`
    /// must be [`Self::START`]), terminal `t` continuing in mode `then[t]`.
    pub fn with_modes(
        mut self,
        starts: Vec<u32>,
        then: &[u32],
    ) -> Result<Self, LexerValidateError> {
        if then.len() != self.terminals.len() {
            return Err(LexerValidateError::Invalid("one mode per terminal".into()));
        }
        for (t, &m) in self.terminals.iter_mut().zip(then) {
            t.then = m;
        }
        self.starts = if starts.len() > 1 { starts } else { Vec::new() };
        self.validate()?;
        Ok(self)
    }

    /// Whether the lexer has more than one mode.
    #[inline]
    pub fn has_modes(&self) -> bool {
        !self.starts.is_empty()
    }

    /// How many lexer modes there are (1 without modes).
    pub fn num_modes(&self) -> usize {
        self.starts.len().max(1)
    }

    /// The start state (empty lexeme) of mode `m`, `m` below [`Self::num_modes`].
    #[inline]
    pub fn mode_start(&self, m: u32) -> LexStateId {
        if self.starts.is_empty() {
            Self::START
        } else {
            LexStateId::from_u32(self.starts[m as usize])
        }
    }

    /// The mode the lexeme after one emitted in `p` is lexed in (see [`Self::start_after`]).
    pub fn mode_after(&self, p: LexStateId) -> u32 {
        let s = self.start_after(p).as_u32();
        self.starts.iter().position(|&x| x == s).unwrap_or(0) as u32
    }

    /// Whether `q` is some mode's start state (the empty lexeme).
    #[inline]
    pub fn is_start(&self, q: LexStateId) -> bool {
        q == Self::START || self.starts.contains(&q.as_u32())
    }

    /// The start state of the lexeme after one emitted in state `p`: the start of the
    /// mode its terminals name. For a boundary inhibitor that emits nothing (`DEAD`, the
    /// input's start; a further mode's start, its plain boundary), that mode's start.
    #[inline]
    pub fn start_after(&self, p: LexStateId) -> LexStateId {
        if self.starts.is_empty() {
            return Self::START;
        }
        match self.emits(p).first() {
            Some(t) => LexStateId::from_u32(self.starts[self.terminals[t.index()].then as usize]),
            None if self.starts.contains(&p.as_u32()) => p,
            None => Self::START,
        }
    }

    /// Attaches the builder's string facts (see [`super::strings`]); they must describe
    /// this lexer's explicit states.
    pub fn with_string_facts(mut self, facts: StringFacts) -> Self {
        debug_assert!(facts.split.is_empty() || facts.split.len() == self.num_states() + 1);
        self.facts = BuildFacts(Some(std::sync::Arc::new(facts)));
        self
    }

    /// The builder's string facts, if this lexer was built here (not loaded).
    pub fn string_facts(&self) -> Option<&StringFacts> {
        self.facts.0.as_deref()
    }

    /// This lexer with `extra` states inserted before the run templates: the lexer a
    /// mask automaton reads when some of its string states are split (see
    /// [`super::strings`]). Extra state `j` gets id `run_from + j`; `rows[j]` are its
    /// targets by byte class, in the new numbering (other extra states or dead), and
    /// `emits[j]` what it completes. Every id at or above `run_from` (templates and
    /// virtual states) moves up by the number of extra states; [`Self::run_from`] says
    /// where. No facts are carried over.
    pub fn with_extra_states(
        &self,
        rows: &[u32],
        emits: Vec<Vec<TerminalId>>,
    ) -> Result<LexerDfa, LexerValidateError> {
        use rayon::prelude::*;
        let m = emits.len() as u32;
        let stride = self.stride as usize;
        if rows.len() != emits.len() * stride {
            return Err(LexerValidateError::Invalid("extra rows".into()));
        }
        if u64::from(self.runs.last().map_or(0, |r| r.virtual_base)) + u64::from(m)
            > u64::from(u32::MAX)
        {
            return Err(LexerValidateError::Invalid("too many states".into()));
        }
        let from = self.run_from;
        let at = from as usize;
        let shift = |t: u32| if t >= from { t + m } else { t };
        // The table is copied on every thread: a counted schema's is tens of MB, written
        // into fresh memory.
        let mut trans = Vec::with_capacity(self.trans.len() + rows.len());
        trans.par_extend(self.trans[..at * stride].par_iter().map(|&t| shift(t)));
        trans.extend_from_slice(rows);
        trans.par_extend(self.trans[at * stride..].par_iter().map(|&t| shift(t)));
        // The old states' emissions and extendability are spliced around the extra ones'.
        let split = self.emit_offsets[at] as usize;
        let mut emit =
            Vec::with_capacity(self.emit.len() + emits.iter().map(Vec::len).sum::<usize>());
        emit.extend_from_slice(&self.emit[..split]);
        let mut emit_offsets = Vec::with_capacity(self.emit_offsets.len() + emits.len());
        emit_offsets.extend_from_slice(&self.emit_offsets[..=at]);
        let too_many = || LexerValidateError::Invalid("too many emit entries".into());
        for mut e in emits {
            e.sort();
            e.dedup();
            emit.extend(e);
            emit_offsets.push(u32::try_from(emit.len()).map_err(|_| too_many())?);
        }
        let added = (emit.len() - split) as u32;
        emit.extend_from_slice(&self.emit[split..]);
        for &o in &self.emit_offsets[at + 1..] {
            emit_offsets.push(o.checked_add(added).ok_or_else(too_many)?);
        }
        let mut extendable = Vec::with_capacity(self.extendable.len() + m as usize);
        extendable.extend_from_slice(&self.extendable[..at]);
        extendable.extend(rows.chunks(stride).map(|row| row.iter().any(|&t| t != 0)));
        extendable.extend_from_slice(&self.extendable[at..]);
        let runs = self
            .runs
            .iter()
            .map(|r| CountRun {
                first: r.first + m,
                virtual_base: r.virtual_base + m,
                exits: r.exits.iter().map(|&e| shift(e)).collect(),
                ..r.clone()
            })
            .collect();
        let dfa = Self {
            classes: self.classes.clone(),
            stride: self.stride,
            trans,
            emit_offsets,
            emit,
            extendable,
            terminals: self.terminals.clone(),
            run_from: from + m,
            runs,
            margin: self.margin,
            shadows: None,
            starts: self.starts.clone(),
            facts: BuildFacts::default(),
        };
        dfa.validate()?;
        Ok(dfa)
    }

    /// The first run template's id (the number of explicit states without runs).
    pub fn run_from(&self) -> u32 {
        self.run_from
    }

    /// Checks every invariant listed on the type.
    pub fn validate(&self) -> Result<(), LexerValidateError> {
        let bad = |m: &str| Err(LexerValidateError::Invalid(m.to_string()));
        if self.classes.len() != 256 {
            return bad("byte class table must have 256 entries");
        }
        if self.stride == 0 || self.stride > 256 {
            return bad("stride must be in 1..=256");
        }
        if self.classes.iter().any(|&c| c as u32 >= self.stride) {
            return bad("byte class out of range");
        }
        let n = self.emit_offsets.len().saturating_sub(1);
        if n < 2 {
            return bad("need at least the dead and start states");
        }
        if self.trans.len() != n * self.stride as usize {
            return bad("transition table size does not match states × stride");
        }
        // A maximum, not `any`: it vectorizes, and the table is millions of entries in a
        // large schema's lexer, validated each time the builder assembles one.
        if self
            .trans
            .iter()
            .copied()
            .max()
            .is_some_and(|t| t as usize >= n)
        {
            return bad("transition target out of range");
        }
        if self.trans[..self.stride as usize].iter().any(|&t| t != 0) {
            return bad("the dead state must stay dead");
        }
        if self.emit_offsets.windows(2).any(|w| w[0] > w[1])
            || *self.emit_offsets.last().unwrap_or(&0) as usize != self.emit.len()
        {
            return bad("emit offsets are not monotone");
        }
        if self.emit_offsets[1] != 0 {
            return bad("the dead state emits nothing");
        }
        if self.emit.iter().any(|t| t.index() >= self.terminals.len()) {
            return bad("emitted terminal out of range");
        }
        if self.terminals.iter().any(|t| t.ignored && t.droppable) {
            return bad("a terminal both ignored and droppable");
        }
        if self.extendable.len() != n {
            return bad("extendable table size");
        }
        self.validate_modes()?;
        if let Some(sh) = &self.shadows {
            if !self.runs.is_empty() {
                return bad("longest-match lexing with counted runs");
            }
            if sh.base < 2 || sh.base as usize > n {
                return bad("shadow base out of range");
            }
            if sh.boundary.len() != self.trans.len() {
                return bad("boundary table size does not match states × stride");
            }
            if sh.boundary.iter().any(|&t| t as usize >= n) {
                return bad("boundary target out of range");
            }
        }
        self.validate_runs()
    }

    /// The mode invariants: without modes every terminal continues in mode 0; with them
    /// each mode's start is a plain state that emits nothing (the first is `START`),
    /// every terminal names a mode, the terminals one state emits agree on the next, and
    /// lexemes are cut by maximal munch.
    fn validate_modes(&self) -> Result<(), LexerValidateError> {
        let bad = |m: &str| Err(LexerValidateError::Invalid(m.to_string()));
        let modes = self.num_modes() as u32;
        if self.terminals.iter().any(|t| t.then >= modes) {
            return bad("a terminal continues in a mode out of range");
        }
        if self.starts.is_empty() {
            return Ok(());
        }
        if self.shadows.is_some() {
            return bad("lexer modes under longest-match lexing");
        }
        if self.starts[0] != Self::START.as_u32() {
            return bad("mode 0 must start at START");
        }
        let plain = self.run_from.min(self.num_states() as u32);
        for &s in &self.starts {
            if s == 0
                || s >= plain
                || self.emit_offsets[s as usize] != self.emit_offsets[s as usize + 1]
            {
                return bad("a mode's start state is out of range or emits");
            }
        }
        for s in 0..self.num_states() {
            let e = &self.emit[self.emit_offsets[s] as usize..self.emit_offsets[s + 1] as usize];
            if let Some(first) = e.first() {
                let then = self.terminals[first.index()].then;
                if e.iter().any(|t| self.terminals[t.index()].then != then) {
                    return bad("a state emits terminals that continue in different modes");
                }
            }
        }
        Ok(())
    }

    /// The run invariants of [`CountRun`]: templates tile `run_from..num_states`, virtual
    /// ranges are disjoint and above every explicit state, exits are plain states, and a
    /// template row leads into its own template or out of every run.
    fn validate_runs(&self) -> Result<(), LexerValidateError> {
        let bad = |m: &str| Err(LexerValidateError::Invalid(m.to_string()));
        let n = self.num_states() as u64;
        if u64::from(self.run_from) > n || (self.runs.is_empty() && u64::from(self.run_from) != n) {
            return bad("run start out of range");
        }
        if self.run_from < 2 {
            return bad("the dead and start states cannot be in a run");
        }
        let mut next_first = u64::from(self.run_from);
        let mut next_virtual = n;
        for r in &self.runs {
            if u64::from(r.first) != next_first || r.width == 0 || r.starts > r.width {
                return bad("run templates do not tile the run states");
            }
            if r.len < 2 || r.exits.len() != r.starts as usize {
                return bad("run length or exits");
            }
            if u64::from(r.virtual_base) != next_virtual {
                return bad("run virtual ids out of order");
            }
            next_first += u64::from(r.width);
            next_virtual += r.virtual_len();
            if r.exits.iter().any(|&e| e >= self.run_from || e < 2) {
                return bad("run exit is not a plain state");
            }
        }
        if next_first != n || next_virtual > u64::from(u32::MAX) {
            return bad("run states do not end the table, or too many virtual ids");
        }
        let stride = self.stride as usize;
        for r in &self.runs {
            let rows =
                &self.trans[r.first as usize * stride..(r.first + r.width) as usize * stride];
            // Counted as a sum of 0/1, which vectorizes: a template is most of a large lexer.
            let outside = rows
                .iter()
                .map(|&t| u32::from(t >= self.run_from && t.wrapping_sub(r.first) >= r.width))
                .sum::<u32>();
            if outside > 0 {
                return bad("run template leads into another run");
            }
        }
        Ok(())
    }

    /// The number of explicit states (dead and start included); per-state tables have
    /// this many entries. Virtual states of runs have ids at and above it.
    pub fn num_states(&self) -> usize {
        self.emit_offsets.len() - 1
    }

    /// The counted runs (empty unless the grammar has counted terminals).
    pub fn runs(&self) -> &[CountRun] {
        &self.runs
    }

    /// Counted layers kept explicit before each bound (0 without runs): the longest
    /// token a mask automaton over this lexer may have.
    pub fn count_margin(&self) -> u32 {
        self.margin
    }

    /// The run holding `s`, for `s` at or above `run_from` and at least one run: by
    /// template range for explicit ids, by virtual range above them.
    #[inline]
    fn run_of(&self, s: u32) -> &CountRun {
        // Validated: the ranges tile every id from `run_from` to the last virtual one. An
        // id past them all (never made by `next`) falls to the last run, where decoding
        // still yields an index inside its template.
        let i = self.runs.partition_point(|r| {
            if s < self.num_states() as u32 {
                r.first + r.width <= s
            } else {
                u64::from(r.virtual_base) + r.virtual_len() <= u64::from(s)
            }
        });
        &self.runs[i.min(self.runs.len() - 1)]
    }

    /// The explicit state standing for `s`: `s` itself, or for a run's virtual state its
    /// template state. Emission, extendability, follow sets and mask-automaton start
    /// positions of `s` are those of its stand-in.
    #[inline]
    pub fn rep(&self, s: LexStateId) -> LexStateId {
        if s.index() < self.num_states() || self.runs.is_empty() {
            return s;
        }
        let r = self.run_of(s.as_u32());
        LexStateId::from_u32(r.first + r.decode(s.as_u32()).1)
    }

    /// The number of byte equivalence classes.
    pub fn num_classes(&self) -> usize {
        self.stride as usize
    }

    /// One byte per byte class (the first of each, classes in order of first byte): the
    /// bytes a search over the DFA needs to try.
    pub fn class_representatives(&self) -> Vec<u8> {
        let mut reps: Vec<u8> = Vec::new();
        let mut seen = vec![false; self.num_classes()];
        for b in 0..=255u8 {
            let c = self.class(b) as usize;
            if !seen[c] {
                seen[c] = true;
                reps.push(b);
            }
        }
        reps
    }

    /// The byte equivalence class of `b`.
    #[inline]
    pub fn class(&self, b: u8) -> u8 {
        self.classes[b as usize]
    }

    /// `pos` with its lexer state replaced by its stand-in ([`Self::rep`]): where follow
    /// sets and mask-automaton start positions are looked up.
    #[inline]
    pub fn rep_pos(&self, pos: LexPos) -> LexPos {
        match pos {
            LexPos::Pending(q) => LexPos::Pending(self.rep(q)),
            LexPos::Boundary(q) => LexPos::Boundary(self.rep(q)),
        }
    }

    /// The state after reading byte `b` in state `s` (`DEAD` if the lexeme cannot grow);
    /// exact for every id, virtual ones included.
    #[inline]
    pub fn next(&self, s: LexStateId, b: u8) -> LexStateId {
        if s.as_u32() < self.run_from {
            let i = s.index() * self.stride as usize + self.classes[b as usize] as usize;
            return LexStateId::from_u32(self.trans[i]);
        }
        self.next_in_run(s.as_u32(), b)
    }

    #[cold]
    fn next_in_run(&self, s: u32, b: u8) -> LexStateId {
        if self.runs.is_empty() {
            // Not a state of this lexer.
            return Self::DEAD;
        }
        let r = self.run_of(s);
        let (j, i) = r.decode(s);
        let row = (r.first + i) as usize * self.stride as usize;
        let t = self.trans[row + self.classes[b as usize] as usize];
        LexStateId::from_u32(r.follow(j, t))
    }

    /// `rep(next(s, b))` for an explicit `s`: the stored table, in which a run is one
    /// layer that loops on itself. Build-time passes that look at most
    /// [`Self::count_margin`] bytes ahead read the lexer this way and never meet a
    /// virtual id; passes that need everything reachable add [`Self::next_exit`].
    #[inline]
    pub fn next_rep(&self, s: LexStateId, b: u8) -> LexStateId {
        let i = s.index() * self.stride as usize + self.classes[b as usize] as usize;
        LexStateId::from_u32(self.trans[i])
    }

    /// For an explicit template state `s` whose byte `b` completes a unit: where the
    /// run's last iteration goes instead (the way out that the collapsed table hides).
    pub fn next_exit(&self, s: LexStateId, b: u8) -> Option<LexStateId> {
        self.run_exits(s)?.exit(self.next_rep(s, b))
    }

    /// The exits of the run whose template holds explicit state `s` (`None` for a state in
    /// no run), for reading [`Self::next_exit`] byte after byte with one run lookup:
    /// `run_exits(s)?.exit(next_rep(s, b))` is `next_exit(s, b)`.
    pub fn run_exits(&self, s: LexStateId) -> Option<RunExits<'_>> {
        let s = s.as_u32();
        if s < self.run_from || s as usize >= self.num_states() {
            return None;
        }
        let r = self.run_of(s);
        Some(RunExits {
            first: r.first,
            exits: &r.exits[..r.starts as usize],
        })
    }

    /// This lexer under longest-match lexing, with `shadows` its boundary table (see
    /// [`super::shadow`]); the transition table must already move the shadows.
    pub fn with_shadows(mut self, shadows: Shadows) -> Result<Self, LexerValidateError> {
        self.shadows = Some(shadows);
        self.validate()?;
        Ok(self)
    }

    /// Whether lexemes are cut by longest match (else by 1-lookahead maximal munch).
    #[inline]
    pub fn longest_match(&self) -> bool {
        self.shadows.is_some()
    }

    /// The state of the lexeme the first byte `b` after an emission starts, where the
    /// emitted lexeme's final state is `p` (`DEAD`: nothing inhibited): under maximal munch
    /// `next(START, b)` if `b` does not extend `p`, under longest match as the boundary
    /// table says. `DEAD` when the byte is not allowed there.
    #[inline]
    pub fn boundary_next(&self, p: LexStateId, b: u8) -> LexStateId {
        match &self.shadows {
            None => {
                let n = self.next(p, b);
                if self.is_dead(n) {
                    self.next(self.start_after(p), b)
                } else if self.has_modes() && self.is_start(p) {
                    // A further mode's plain boundary (see `plain_boundary`).
                    n
                } else {
                    Self::DEAD
                }
            }
            Some(sh) => {
                let i = p.index() * self.stride as usize + self.classes[b as usize] as usize;
                LexStateId::from_u32(sh.boundary[i])
            }
        }
    }

    /// [`Self::boundary_next`] for an explicit `p`, as build-time passes read the
    /// collapsed table (see [`Self::next_rep`]).
    #[inline]
    pub fn boundary_next_rep(&self, p: LexStateId, b: u8) -> LexStateId {
        if self.shadows.is_none() {
            let n = self.next_rep(p, b);
            if self.is_dead(n) {
                return self.next_rep(self.start_after(p), b);
            }
            if self.has_modes() && self.is_start(p) {
                return n;
            }
            return Self::DEAD;
        }
        self.boundary_next(p, b)
    }

    /// The boundary an emission in state `q` leaves: `Boundary(inhibitor(q))`. `DEAD`
    /// (nothing constrains the next byte, which starts a lexeme in mode 0) when `q`
    /// cannot grow, carries no shadow and continues in mode 0.
    #[inline]
    pub fn inhibitor(&self, q: LexStateId) -> LexStateId {
        let shadowed = self
            .shadows
            .as_ref()
            .is_some_and(|sh| q.as_u32() >= sh.base);
        if self.can_extend(q) || shadowed {
            q
        } else {
            self.plain_boundary(q)
        }
    }

    /// The boundary with nothing inhibited in the mode the lexeme after one emitted in
    /// `q` is lexed in: `DEAD` for mode 0, a further mode's start state for that mode.
    /// (A start state emits nothing, so it never inhibits: as a boundary it stands for
    /// its mode's plain one, and [`Self::boundary_next`] reads it so.)
    #[inline]
    pub fn plain_boundary(&self, q: LexStateId) -> LexStateId {
        match self.start_after(q) {
            Self::START => Self::DEAD,
            s => s,
        }
    }

    /// Whether boundary `p` inhibits nothing (`DEAD`, or a further mode's start).
    #[inline]
    pub fn is_plain_boundary(&self, p: LexStateId) -> bool {
        p == Self::DEAD || (self.has_modes() && self.is_start(p))
    }

    /// Whether `s` is the dead state.
    #[inline]
    pub fn is_dead(&self, s: LexStateId) -> bool {
        s == Self::DEAD
    }

    /// The terminals the lexeme of state `s` would be emitted as: the top-priority
    /// complete matches (more than one = lexically ambiguous).
    #[inline]
    pub fn emits(&self, s: LexStateId) -> &[TerminalId] {
        let s = self.rep(s);
        let a = self.emit_offsets[s.index()] as usize;
        let b = self.emit_offsets[s.index() + 1] as usize;
        &self.emit[a..b]
    }

    /// Whether some byte extends the lexeme of state `s`.
    #[inline]
    pub fn can_extend(&self, s: LexStateId) -> bool {
        self.extendable[self.rep(s).index()]
    }

    /// The terminals, indexed by [`TerminalId`].
    pub fn terminals(&self) -> &[LexTerminal] {
        &self.terminals
    }

    /// A terminal's display name.
    pub fn terminal_name(&self, t: TerminalId) -> &str {
        &self.terminals[t.index()].name
    }

    /// Whether a terminal is ignored.
    pub fn is_ignored(&self, t: TerminalId) -> bool {
        self.terminals[t.index()].ignored
    }

    /// Whether terminal `t` is droppable (see [`LexTerminal::droppable`]).
    pub fn is_droppable(&self, t: TerminalId) -> bool {
        self.terminals[t.index()].droppable
    }

    /// Whether any terminal is droppable.
    pub fn has_droppable(&self) -> bool {
        self.terminals.iter().any(|t| t.droppable)
    }
}

/// A run's ways out as seen from one of its template states (see
/// [`LexerDfa::run_exits`]): the unit-start states and where the last iteration's unit
/// completion into each leads.
#[derive(Debug, Clone, Copy)]
pub struct RunExits<'a> {
    first: u32,
    exits: &'a [u32],
}

impl RunExits<'_> {
    /// Where the last iteration goes instead of `t`, the collapsed table's target of a
    /// byte from the template state (`None` when `t` is no unit start: not a way out).
    #[inline]
    pub fn exit(&self, t: LexStateId) -> Option<LexStateId> {
        let i = t.as_u32().wrapping_sub(self.first) as usize;
        self.exits.get(i).map(|&e| LexStateId::from_u32(e))
    }
}

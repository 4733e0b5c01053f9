//! Counted terminals in the lexer builder: the unit automaton they share, when a counted
//! terminal is still alive, which counts behave alike, and how a count steps.
//!
//! A counted terminal (`ir::Counted`) is its pattern automaton `P` (its `regex`, `also`
//! and `except`) restricted to lexemes `open · unit{lo,hi} · close`. All counted
//! terminals of a grammar share `open`, `unit` and `close`, so while a lexeme is inside
//! the units its count `c` and its position `u` in the current unit are the same for all
//! of them: the lexer builder keys such states by every terminal's automaton state plus
//! `(u, c)`.
//!
//! Liveness must be exact (a lexer state that cannot complete would let masks allow dead
//! ends). A counted terminal in pattern state `s` at `(u, c)` can complete iff some
//! completion of `P` from `(s, u)` writes `k` more units with `lo ≤ c + k ≤ hi`. That is
//! decided here for patterns whose completion lengths are *upward closed* (a state that
//! can complete after `k` units can also after `k + 1`, as for any string or an e-mail
//! address): then it is `shortest(s, u) ≤ hi − c`, and `lo` only matters when closing.
//! Other patterns are refused ([`counted_is_exact`] lets a front end check first).
//!
//! Counts between two consecutive *critical* counts (each `lo`, `hi`, `hi + 1`, and
//! `hi − shortest` for every shortest completion) see the same live and closable
//! terminals, so once a layer of states equals the one before it, every layer up to the
//! next critical count is the same; `build` then keeps that layer once as a run
//! template (`lexer::CountRun`). Depends on the IR and `build`'s automata.

use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::Terminal;
use crate::compile::lexer::build::{TermDfa, NONE};

/// A counted terminal's bounds and its pattern's shortest completions.
struct CountedTerm {
    lo: u32,
    hi: Option<u32>,
    /// `shortest[s * unit_states + u]`: fewest units still to write from pattern state
    /// `s` at unit position `u` before `close` completes the pattern (`u32::MAX`: never).
    shortest: Vec<u32>,
}

/// The counted terminals of a grammar and their shared shape.
pub(super) struct Counting {
    pub open: u8,
    close: u8,
    unit: TermDfa,
    /// Per terminal of the grammar, its entry in `terms` if counted.
    index: Vec<Option<usize>>,
    terms: Vec<CountedTerm>,
    /// Counts at or above `sat` behave alike (the builder clamps to it): every bounded
    /// terminal is dead there and every unbounded one may close.
    sat: u32,
    /// Sorted, deduplicated critical counts, all at most `sat`.
    critical: Vec<u32>,
}

/// Where a counted lexeme is, as far as the count goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct CountPos {
    /// State in the current unit (0: between units).
    pub u: u32,
    /// Units completed.
    pub c: u32,
}

/// What a byte does to a lexeme inside the units.
pub(super) enum CountStep {
    /// Still inside, here.
    Inside(CountPos),
    /// The byte closes the lexeme (at a unit boundary).
    Closed,
    /// The units cannot go on.
    Dead,
}

fn unsupported(t: &Terminal, reason: String) -> GrammarError {
    GrammarError::Unsupported {
        span: t.span,
        construct: "counted terminal".into(),
        reason,
    }
}

/// Whether a counted terminal (its pattern and unit automata built by `dfa`) is counted
/// exactly: its unit is usable and its pattern's completion lengths are upward closed.
pub fn counted_is_exact(
    t: &Terminal,
    dfa: impl Fn(&Terminal, &str, bool) -> Result<TermDfa, GrammarError>,
    pattern: &TermDfa,
) -> Result<bool, GrammarError> {
    let Some(c) = &t.counted else {
        return Ok(false);
    };
    let unit = dfa(t, &c.unit, true)?;
    check_unit(t, &unit, c.close)?;
    Ok(shortest_completions(pattern, &unit, c.open, c.close).is_some())
}

impl Counting {
    /// Collects the counted terminals of `terminals`, whose pattern automata are `dfas`
    /// (the unit automaton built by `unit_dfa`); `None` when there are none.
    pub fn new(
        terminals: &[Terminal],
        dfas: &[TermDfa],
        unit_dfa: impl Fn(&Terminal, &str) -> Result<TermDfa, GrammarError>,
    ) -> Result<Option<Self>, GrammarError> {
        let Some(first) = terminals.iter().find(|t| t.counted.is_some()) else {
            return Ok(None);
        };
        let shape = first.counted.as_ref().expect("found counted");
        let unit = unit_dfa(first, &shape.unit)?;
        check_unit(first, &unit, shape.close)?;
        let mut index = vec![None; terminals.len()];
        let mut terms = Vec::new();
        for (i, t) in terminals.iter().enumerate() {
            let Some(c) = &t.counted else { continue };
            if (c.open, &c.unit, c.close) != (shape.open, &shape.unit, shape.close) {
                return Err(unsupported(
                    t,
                    "counted terminals must share their opening, unit and closing".into(),
                ));
            }
            if c.hi.is_some_and(|h| h < c.lo) {
                return Err(unsupported(
                    t,
                    format!("count {}..{:?} is empty", c.lo, c.hi),
                ));
            }
            let shortest =
                shortest_completions(&dfas[i], &unit, c.open, c.close).ok_or_else(|| {
                    unsupported(
                        t,
                        "its pattern's completion lengths have gaps (a count cannot \
                         tell when it dies)"
                            .into(),
                    )
                })?;
            index[i] = Some(terms.len());
            terms.push(CountedTerm {
                lo: c.lo,
                hi: c.hi,
                shortest,
            });
        }
        let sat = terms
            .iter()
            .map(|t| t.hi.map_or(t.lo, |h| h + 1))
            .max()
            .unwrap_or(0);
        let mut critical: Vec<u32> = vec![0, sat];
        for t in &terms {
            critical.push(t.lo);
            if let Some(h) = t.hi {
                critical.extend([h, h + 1]);
                critical.extend(t.shortest.iter().filter_map(|&m| h.checked_sub(m)));
            }
        }
        critical.retain(|&x| x <= sat);
        critical.sort_unstable();
        critical.dedup();
        Ok(Some(Self {
            open: shape.open,
            close: shape.close,
            unit,
            index,
            terms,
            sat,
            critical,
        }))
    }

    /// Whether terminal `t` is counted.
    pub fn is_counted(&self, t: u32) -> bool {
        self.index[t as usize].is_some()
    }

    /// Whether counted terminal `t` in pattern state `s` can still complete from `p`.
    pub fn alive(&self, t: u32, s: u32, p: CountPos) -> bool {
        let Some(i) = self.index[t as usize] else {
            return true;
        };
        let term = &self.terms[i];
        let m = term.shortest[s as usize * self.unit.complete.len() + p.u as usize];
        m != u32::MAX
            && term
                .hi
                .is_none_or(|h| u64::from(p.c) + u64::from(m) <= u64::from(h))
    }

    /// Whether counted terminal `t` may close after `c` units.
    pub fn closes(&self, t: u32, c: u32) -> bool {
        let Some(i) = self.index[t as usize] else {
            return true;
        };
        let term = &self.terms[i];
        term.lo <= c && term.hi.is_none_or(|h| c <= h)
    }

    /// Where byte `b` leads from `p` inside the units.
    pub fn step(&self, p: CountPos, b: u8) -> CountStep {
        if p.u == 0 && b == self.close {
            return CountStep::Closed;
        }
        let u = &self.unit;
        let n = u.trans[p.u as usize * u.stride + u.classes[b as usize] as usize];
        if n == NONE {
            return CountStep::Dead;
        }
        CountStep::Inside(if u.complete[n as usize] {
            CountPos {
                u: 0,
                c: (p.c + 1).min(self.sat),
            }
        } else {
            CountPos { u: n, c: p.c }
        })
    }

    /// The unit automaton's byte classes (bytes it tells apart).
    pub fn unit_class(&self, b: u8) -> u8 {
        self.unit.classes[b as usize]
    }

    /// Whether `b` is the opening or the closing byte.
    pub fn is_open_close(&self, b: u8) -> (bool, bool) {
        (b == self.open, b == self.close)
    }

    /// Whether `c` is a critical count (the layers at `c - 1` and `c` may differ).
    pub fn is_critical(&self, c: u32) -> bool {
        self.critical.binary_search(&c).is_ok()
    }

    /// The first critical count above `c` (`None` at or past saturation).
    pub fn next_critical(&self, c: u32) -> Option<u32> {
        let i = self.critical.partition_point(|&x| x <= c);
        self.critical.get(i).copied()
    }
}

/// Checks what exact counting needs of a unit automaton: the start does not end a unit
/// and is never re-entered, a unit's end has no way on (units are prefix-free), and no
/// unit starts with the closing byte.
fn check_unit(t: &Terminal, u: &TermDfa, close: u8) -> Result<(), GrammarError> {
    let n = u.complete.len();
    if n == 0 || u.start != 0 || u.complete[0] {
        return Err(unsupported(t, "the unit matches the empty string".into()));
    }
    for s in 0..n {
        let row = &u.trans[s * u.stride..(s + 1) * u.stride];
        if u.complete[s] && row.iter().any(|&x| x != NONE) {
            return Err(unsupported(t, "the unit is not prefix-free".into()));
        }
        if row.contains(&0) {
            return Err(unsupported(t, "the unit's start is re-entered".into()));
        }
    }
    if u.trans[u.classes[close as usize] as usize] != NONE {
        return Err(unsupported(t, "a unit starts with the closing byte".into()));
    }
    Ok(())
}

/// For pattern `p` inside the units, the fewest units still to write from each (pattern
/// state, unit position) before `close` completes it (`u32::MAX`: never), or `None` when
/// its completion lengths are not upward closed.
///
/// Over the product graph, a unit completion costs 1 and every other byte 0. Completion
/// lengths are upward closed iff every node that can complete with 0 more units can also
/// with exactly 1: the nodes completing with exactly `k + 1` units are a monotone
/// function of those completing with `k`, so the inclusion then holds for every `k`.
fn shortest_completions(p: &TermDfa, unit: &TermDfa, open: u8, close: u8) -> Option<Vec<u32>> {
    let nu = unit.complete.len();
    let n = p.complete.len() * nu;
    let node = |s: u32, u: u32| s as usize * nu + u as usize;
    // Reverse edges: (target, cost) → sources; `done` is the completion. Forward edges
    // too, to know which nodes a lexeme can reach after `open`.
    let done = n;
    let mut rev0: Vec<Vec<u32>> = vec![Vec::new(); n + 1];
    let mut rev1: Vec<Vec<u32>> = vec![Vec::new(); n + 1];
    let mut fwd: Vec<Vec<u32>> = vec![Vec::new(); n + 1];
    for s in 0..p.complete.len() as u32 {
        for u in 0..nu as u32 {
            if unit.complete[u as usize] {
                continue;
            }
            for b in 0..=255u8 {
                let ps = p.trans[s as usize * p.stride + p.classes[b as usize] as usize];
                if ps == NONE {
                    continue;
                }
                let from = node(s, u) as u32;
                if u == 0 && b == close {
                    if p.complete[ps as usize] {
                        rev0[done].push(from);
                    }
                    continue;
                }
                let un = unit.trans[u as usize * unit.stride + unit.classes[b as usize] as usize];
                if un == NONE {
                    continue;
                }
                let (to, rev) = if unit.complete[un as usize] {
                    (node(ps, 0), &mut rev1)
                } else {
                    (node(ps, un), &mut rev0)
                };
                rev[to].push(from);
                fwd[from as usize].push(to as u32);
            }
        }
    }
    // 0-1 breadth-first search backwards from the completion.
    let mut dist = vec![u32::MAX; n + 1];
    dist[done] = 0;
    let mut deque = std::collections::VecDeque::from([done]);
    while let Some(x) = deque.pop_front() {
        let d = dist[x];
        for &y in &rev0[x] {
            if dist[y as usize] > d {
                dist[y as usize] = d;
                deque.push_front(y as usize);
            }
        }
        for &y in &rev1[x] {
            if dist[y as usize] > d + 1 {
                dist[y as usize] = d + 1;
                deque.push_back(y as usize);
            }
        }
    }
    // Nodes completing with exactly 0 / exactly 1 more unit.
    let closure0 = |seeds: Vec<usize>| {
        let mut seen = vec![false; n + 1];
        let mut work = seeds;
        while let Some(x) = work.pop() {
            if std::mem::replace(&mut seen[x], true) {
                continue;
            }
            work.extend(rev0[x].iter().map(|&y| y as usize));
        }
        seen
    };
    let zero = closure0(vec![done]);
    let one_seeds: Vec<usize> = (0..n)
        .filter(|&x| zero[x])
        .flat_map(|x| rev1[x].iter().map(|&y| y as usize))
        .collect();
    let one = closure0(one_seeds);
    // Only nodes a lexeme reaches after `open` matter.
    let mut reached = vec![false; n + 1];
    let entry = (p.start != NONE)
        .then(|| p.trans[p.start as usize * p.stride + p.classes[open as usize] as usize])
        .filter(|&e| e != NONE);
    let mut work: Vec<usize> = entry.map(|e| node(e, 0)).into_iter().collect();
    while let Some(x) = work.pop() {
        if !std::mem::replace(&mut reached[x], true) {
            work.extend(fwd[x].iter().map(|&y| y as usize));
        }
    }
    if (0..n).any(|x| reached[x] && zero[x] && !one[x]) {
        return None;
    }
    dist.truncate(n);
    Some(dist)
}

/// A counted terminal whose bound is a filter on unit counts, as a single automaton over
/// the lexer's byte classes: its pattern inside the units, without the count.
pub(super) struct FilterComponent {
    /// `(lo, hi)` in units.
    pub bounds: (u32, Option<u32>),
    /// The automaton: states are (pattern state, unit position) pairs, then closed pattern
    /// states.
    pub comp: crate::lexer::strings::Component,
    /// `index[s * unit_states + u]`: the automaton state of pattern state `s` at unit
    /// position `u` (`NONE` if not a state).
    pub index: Vec<u32>,
    /// `closed[s]`: the automaton state of pattern state `s` after the close (`NONE` if
    /// not a state).
    pub closed: Vec<u32>,
}

impl Counting {
    /// Counted terminal `t` (pattern automaton `p`) as a [`FilterComponent`], when its
    /// count can be applied as a filter on unit counts (`lexer::strings`): from every
    /// (pattern state, unit position) a lexeme reaches, the fewest units still to write is
    /// 0 between units and 1 inside one, as for a plain string, and the pattern completes
    /// only at the close. Then whether `t` survives a token depends only on the token's
    /// units counted from the unit position, and on the count so far. `reps`: one byte
    /// per byte class of the lexer.
    pub fn filter_component(&self, t: u32, p: &TermDfa, reps: &[u8]) -> Option<FilterComponent> {
        use crate::lexer::strings::{Component, NO_STATE};
        let term = &self.terms[self.index[t as usize]?];
        let unit = &self.unit;
        let nu = unit.complete.len();
        let entry = (p.start != NONE)
            .then(|| p.trans[p.start as usize * p.stride + p.classes[self.open as usize] as usize])
            .filter(|&e| e != NONE)?;
        let ptrans =
            |s: u32, b: u8| p.trans[s as usize * p.stride + p.classes[b as usize] as usize];
        let live = |s: u32, u: u32| term.shortest[s as usize * nu + u as usize] != u32::MAX;
        if !live(entry, 0) {
            return None;
        }
        // Nodes: (pattern state, unit position), or (closed pattern state, NONE).
        let mut nodes: Vec<(u32, u32)> = vec![(entry, 0)];
        let mut index = vec![NONE; p.complete.len() * nu];
        let mut closed = vec![NONE; p.complete.len()];
        index[entry as usize * nu] = 0;
        let mut rows: Vec<u32> = Vec::new();
        let mut i = 0;
        while i < nodes.len() {
            let (s, u) = nodes[i];
            i += 1;
            if u == NONE {
                // A closed lexeme: the pattern must end here.
                let row = &p.trans[s as usize * p.stride..(s as usize + 1) * p.stride];
                if !p.complete[s as usize] || row.iter().any(|&x| x != NONE) {
                    return None;
                }
                rows.extend(std::iter::repeat_n(NO_STATE, reps.len()));
                continue;
            }
            if p.complete[s as usize]
                || term.shortest[s as usize * nu + u as usize] != u32::from(u != 0)
            {
                return None;
            }
            for &b in reps {
                let ps = ptrans(s, b);
                let target = if ps == NONE {
                    NO_STATE
                } else if u == 0 && b == self.close {
                    let slot = &mut closed[ps as usize];
                    if *slot == NONE {
                        *slot = nodes.len() as u32;
                        nodes.push((ps, NONE));
                    }
                    *slot
                } else {
                    let un =
                        unit.trans[u as usize * unit.stride + unit.classes[b as usize] as usize];
                    let u2 = if un == NONE {
                        NONE
                    } else if unit.complete[un as usize] {
                        0
                    } else {
                        un
                    };
                    if u2 == NONE || !live(ps, u2) {
                        NO_STATE
                    } else {
                        let slot = &mut index[ps as usize * nu + u2 as usize];
                        if *slot == NONE {
                            *slot = nodes.len() as u32;
                            nodes.push((ps, u2));
                        }
                        *slot
                    }
                };
                rows.push(target);
            }
        }
        let complete = nodes.iter().map(|&(_, u)| u == NONE).collect();
        Some(FilterComponent {
            bounds: (term.lo, term.hi),
            comp: Component {
                trans: rows,
                complete,
            },
            index,
            closed,
        })
    }

    /// Number of unit positions.
    pub fn unit_states(&self) -> usize {
        self.unit.complete.len()
    }

    /// The unit automaton, for measuring tokens in units.
    pub fn unit_dfa(&self) -> crate::lexer::strings::UnitDfa {
        let u = &self.unit;
        crate::lexer::strings::UnitDfa {
            classes: u.classes.to_vec(),
            stride: u.stride as u32,
            trans: u
                .trans
                .iter()
                .map(|&x| {
                    if x == NONE {
                        crate::lexer::strings::NO_STATE
                    } else {
                        x
                    }
                })
                .collect(),
            complete: u.complete.clone(),
            close: self.close,
        }
    }
}

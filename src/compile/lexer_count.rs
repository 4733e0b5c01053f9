//! Counted terminals in the lexer builder: the unit automaton they share, which counts
//! behave alike, and how one count's layer of lexer states steps to the next.
//!
//! A counted terminal (`ir::Counted`) is `open · unit{lo,hi} · close`. All counted
//! terminals of a grammar share `open`, `unit` and `close`, so while a lexeme is inside
//! the units its count `c` and its position `u` in the current unit are the same for all
//! of them: the lexer builder keys such states by the other terminals' states plus
//! `(u, c)`, and derives which counted terminals are still alive from `(u, c)` alone.
//!
//! Counts between two consecutive *critical* counts (each `lo`, `hi` and `hi + 1`) see the
//! same alive and closable terminals, so once a layer of states equals the one before it,
//! every layer up to the next critical count is the same; `lexer_build` then keeps that
//! layer once as a run template (`lexer::CountRun`) and resumes `margin` layers before
//! the critical count. Depends on the IR and `lexer_build`'s terminal automata.

use super::error::GrammarError;
use super::ir::{Counted, Terminal};

/// What a unit automaton must be for counting to be exact.
pub(super) struct UnitDfa {
    pub classes: [u8; 256],
    pub stride: usize,
    /// `trans[u * stride + class]`; `NONE` for no transition. State 0 is the start.
    pub trans: Vec<u32>,
    /// Whether state `u` ends a unit.
    pub complete: Vec<bool>,
}

/// `trans` entry for "no transition".
pub(super) const NONE: u32 = u32::MAX;

/// The counted terminals of a grammar and their shared shape.
pub(super) struct Counting {
    pub open: u8,
    pub close: u8,
    pub unit: UnitDfa,
    /// `(terminal, lo, hi)`.
    pub terms: Vec<(u32, u32, Option<u32>)>,
    /// Counts at or above `sat` behave alike (the builder clamps to it): every bounded
    /// terminal is dead there and every unbounded one may close.
    pub sat: u32,
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
    /// No counted terminal lives on.
    Dead,
}

/// A counted terminal's state outside the units: before `open`, or after `close`.
pub(super) const OPEN: u32 = 0;
/// See [`OPEN`].
pub(super) const CLOSED: u32 = 1;

fn unsupported(t: &Terminal, reason: String) -> GrammarError {
    GrammarError::Unsupported {
        span: t.span,
        construct: "counted terminal".into(),
        reason,
    }
}

impl Counting {
    /// Collects the counted terminals of `terminals` (with their unit automaton built by
    /// `unit_dfa`); `None` when there are none.
    pub fn new(
        terminals: &[Terminal],
        unit_dfa: impl Fn(&Terminal, &str) -> Result<UnitDfa, GrammarError>,
    ) -> Result<Option<Self>, GrammarError> {
        let mut shape: Option<(&Counted, &Terminal)> = None;
        let mut terms = Vec::new();
        for (i, t) in terminals.iter().enumerate() {
            let Some(c) = &t.counted else { continue };
            match shape {
                None => shape = Some((c, t)),
                Some((s, _)) if (s.open, &s.unit, s.close) != (c.open, &c.unit, c.close) => {
                    return Err(unsupported(
                        t,
                        "counted terminals must share their opening, unit and closing".into(),
                    ));
                }
                Some(_) => {}
            }
            if c.hi.is_some_and(|h| h < c.lo) {
                return Err(unsupported(
                    t,
                    format!("count {}..{:?} is empty", c.lo, c.hi),
                ));
            }
            terms.push((i as u32, c.lo, c.hi));
        }
        let Some((c, t)) = shape else {
            return Ok(None);
        };
        let unit = unit_dfa(t, &c.unit)?;
        check_unit(t, &unit, c.close)?;
        let sat = terms
            .iter()
            .map(|&(_, lo, hi)| hi.map_or(lo, |h| h + 1))
            .max()
            .unwrap_or(0);
        let mut critical: Vec<u32> = terms
            .iter()
            .flat_map(|&(_, lo, hi)| [Some(lo), hi, hi.map(|h| h + 1)])
            .flatten()
            .chain([0, sat])
            .filter(|&x| x <= sat)
            .collect();
        critical.sort_unstable();
        critical.dedup();
        Ok(Some(Self {
            open: c.open,
            close: c.close,
            unit,
            terms,
            sat,
            critical,
        }))
    }

    /// Whether counted terminal `(lo, hi)` can still complete from `p`: a unit begun
    /// needs one more count.
    fn alive(p: CountPos, hi: Option<u32>) -> bool {
        hi.is_none_or(|h| if p.u == 0 { p.c <= h } else { p.c < h })
    }

    /// Whether some counted terminal is alive at `p`.
    pub fn any_alive(&self, p: CountPos) -> bool {
        self.terms.iter().any(|&(_, _, hi)| Self::alive(p, hi))
    }

    /// The counted terminals that `close` completes at count `c`.
    pub fn closing(&self, c: u32) -> impl Iterator<Item = u32> + '_ {
        self.terms
            .iter()
            .filter(move |&&(_, lo, hi)| lo <= c && hi.is_none_or(|h| c <= h))
            .map(|&(t, _, _)| t)
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
        let next = if u.complete[n as usize] {
            CountPos {
                u: 0,
                c: (p.c + 1).min(self.sat),
            }
        } else {
            CountPos { u: n, c: p.c }
        };
        if self.any_alive(next) {
            CountStep::Inside(next)
        } else {
            CountStep::Dead
        }
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
fn check_unit(t: &Terminal, u: &UnitDfa, close: u8) -> Result<(), GrammarError> {
    let n = u.complete.len();
    if n == 0 || u.complete[0] {
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

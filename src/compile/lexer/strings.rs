//! Pass: the lexer builder's states → [`StringFacts`], which of its string states the
//! mask automaton may read as the union of single-terminal automata.
//!
//! A state qualifies when every terminal still alive in it is a *string terminal* (its
//! language lies inside `"` · (a byte other than `"` and `\`, or `\` and any byte)* · `"`,
//! a prefix-free language, so no alive terminal's lexeme can end where another one's
//! continues), all of them have the same priority (so none suppresses another), and each
//! counted one among them has a bound that is a filter on unit counts
//! (`Counting::filter_bounds`). Ignored terminals never qualify. See `lexer::strings`
//! for why the union is then exact. Depends on `build`'s automata and counting.

use crate::compile::grammar::ir::Priority;
use crate::compile::lexer::build::{TermDfa, NONE};
use crate::compile::lexer::count::Counting;
use crate::ids::TerminalId;
use crate::lexer::strings::{Component, StringFacts, NO_STATE};

/// Whether every word of `d` is a quoted string as described in the module docs: a walk
/// of `d` beside that language's four-state automaton never has `d` alive where the
/// string is not, nor `d` complete anywhere but right after the closing quote.
pub(super) fn within_quoted_string(d: &TermDfa) -> bool {
    // 0: before the opening quote, 1: inside, 2: after a backslash, 3: closed.
    fn step(q: u8, b: u8) -> Option<u8> {
        match (q, b) {
            (0, b'"') => Some(1),
            (0, _) | (3, _) => None,
            (1, b'"') => Some(3),
            (1, b'\\') => Some(2),
            (1, _) | (2, _) => Some(1),
            _ => None,
        }
    }
    if d.start == NONE {
        return false;
    }
    // One byte per pair of (class of `d`, quote / backslash / other).
    let cat = |b: u8| match b {
        b'"' => 0,
        b'\\' => 1,
        _ => 2,
    };
    let bytes = distinct_bytes(|b| (d.classes[b as usize], cat(b)));
    let n = d.complete.len();
    let mut seen = vec![[false; 4]; n];
    let mut work = vec![(d.start, 0u8)];
    while let Some((s, q)) = work.pop() {
        if std::mem::replace(&mut seen[s as usize][q as usize], true) {
            continue;
        }
        if d.complete[s as usize] && q != 3 {
            return false;
        }
        for &b in &bytes {
            let t = d.trans[s as usize * d.stride + d.classes[b as usize] as usize];
            if t == NONE {
                continue;
            }
            match step(q, b) {
                Some(q2) => work.push((t, q2)),
                None => return false,
            }
        }
    }
    true
}

/// The first byte of each distinct value of `key` (the bytes a walk must try).
pub(super) fn distinct_bytes<K: PartialEq>(key: impl Fn(u8) -> K) -> Vec<u8> {
    let mut keys: Vec<K> = Vec::new();
    let mut out = Vec::new();
    for b in 0..=255u8 {
        let k = key(b);
        if !keys.contains(&k) {
            keys.push(k);
            out.push(b);
        }
    }
    out
}

/// Terminal `t`'s automaton over the lexer's byte classes (one representative byte each).
fn component(d: &TermDfa, reps: &[u8]) -> Component {
    let trans = (0..d.complete.len())
        .flat_map(|s| {
            reps.iter().map(move |&b| {
                let t = d.trans[s * d.stride + d.classes[b as usize] as usize];
                if t == NONE {
                    NO_STATE
                } else {
                    t
                }
            })
        })
        .collect();
    Component {
        trans,
        complete: d.complete.clone(),
    }
}

/// How a string terminal's states in the lexer's keys map to its component's states.
enum Map {
    /// An uncounted terminal: its automaton is the component.
    Same,
    /// A counted one: by (pattern state, unit position), or after the close.
    Counted {
        index: Vec<u32>,
        closed: Vec<u32>,
        units: usize,
    },
}

/// The facts for a lexer whose explicit states, in their final order, are `states`: each
/// one's alive terminals with their automaton states, and its `(unit position, count)`
/// when it counts. `dfas` are the terminals' automata, `reps` one byte per byte class.
pub(super) fn string_facts<'a>(
    dfas: &[TermDfa],
    counting: Option<&Counting>,
    prio: &[Priority],
    ignored: impl Fn(usize) -> bool,
    reps: &[u8],
    states: impl Iterator<Item = (&'a [(u32, u32)], Option<(u32, u32)>)>,
) -> StringFacts {
    let nt = dfas.len();
    let mut comps: Vec<Option<(Component, Map)>> = Vec::with_capacity(nt);
    let mut bounds: Vec<Option<(u32, Option<u32>)>> = vec![None; nt];
    for t in 0..nt {
        let d = &dfas[t];
        comps.push(if ignored(t) || !within_quoted_string(d) {
            None
        } else if let Some(k) = counting.filter(|k| k.is_counted(t as u32)) {
            k.filter_component(t as u32, d, reps).map(|f| {
                bounds[t] = Some(f.bounds);
                let map = Map::Counted {
                    index: f.index,
                    closed: f.closed,
                    units: k.unit_states(),
                };
                (f.comp, map)
            })
        } else {
            Some((component(d, reps), Map::Same))
        });
    }
    let state_of = |t: usize, s: u32, c: Option<(u32, u32)>| -> Option<u32> {
        let (_, map) = comps[t].as_ref()?;
        let x = match map {
            Map::Same => s,
            Map::Counted {
                index,
                closed,
                units,
            } => match c {
                Some((u, _)) => index[s as usize * units + u as usize],
                None => closed[s as usize],
            },
        };
        (x != NONE).then_some(x)
    };
    let mut used = vec![false; nt];
    let mut split = vec![0u32];
    let mut pairs: Vec<(TerminalId, u32)> = Vec::new();
    let mut count = Vec::new();
    let mut mapped: Vec<(TerminalId, u32)> = Vec::new();
    for (i, (plain, c)) in states.enumerate() {
        mapped.clear();
        let ok = i >= 2
            && !plain.is_empty()
            && plain.iter().all(|&(t, s)| {
                let x = state_of(t as usize, s, c)
                    .filter(|_| prio[t as usize] == prio[plain[0].0 as usize]);
                if let Some(x) = x {
                    mapped.push((TerminalId::new(t as usize), x));
                }
                x.is_some()
            });
        if ok {
            for &(t, _) in &mapped {
                used[t.index()] = true;
            }
            pairs.extend_from_slice(&mapped);
        }
        split.push(pairs.len() as u32);
        count.push(c);
    }
    let components = comps
        .into_iter()
        .zip(&used)
        .map(|(c, &u)| c.filter(|_| u).map(|(c, _)| c))
        .collect();
    StringFacts {
        components,
        bounds,
        split,
        pairs,
        count,
        unit: counting.map(Counting::unit_dfa),
    }
}

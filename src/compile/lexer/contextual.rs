//! Contextual lexing: lexer modes laid on a grammar from its follow sets, so that a lexeme
//! is lexed, by DESIGN.md §1's maximal munch, only among the terminals that can follow the
//! lexeme before it somewhere in the grammar.
//!
//! Under global lexing every terminal competes for every lexeme, so a free-text terminal
//! beside a JSON body (`TEXT: /[^<]+/` around `%json {…}`) takes the body's text and the
//! body is never lexed. Here the text after `<tool_call>` is lexed among the body's first
//! terminals only, and `TEXT` competes only where it can follow.
//!
//! How (all of it at compile time; the lexer, the recognizer and the automaton read the
//! result as any other [`LexMode`]s):
//! - FOLLOW of each terminal over the grammar: the terminals that come right after it
//!   in some sentential form (an SLR-style set: it ignores the parse's context, so it may
//!   hold more than a given parse can take, never less). The input starts in FIRST of the
//!   start symbol.
//! - Each distinct set is a mode; a terminal continues in its FOLLOW's mode. One whose
//!   FOLLOW is empty (it ends every input it is in) continues in mode 0: nothing may
//!   follow it, and which terminals are tried there changes no verdict.
//! - A lexeme that two terminals emit (equal top priority) must continue in one mode, so
//!   those terminals' modes are merged into their union, and the lexer is built again
//!   until no lexeme disagrees. Merging only grows modes: it ends, at worst, in one mode.
//! - An ignored terminal (`%ignore`) may come between any two lexemes and leaves the mode
//!   as it was: it gets a copy per mode, lexed in that mode and continuing in it.
//!
//! Cost: one lexer build per merging round (one or two for the tool-call grammars this is
//! for) before the compile's own.

use std::collections::HashMap;

use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::{Grammar, LexMode, Symbol};
use crate::compile::interrupt::Interrupt;
use crate::compile::lr::first::First;
use crate::ids::TerminalId;
use crate::termset::TermSet;

use super::build::{disagreeing_emissions, LexerOptions};

/// `g` with lexer modes from its follow sets (see the module doc). Refused by name beside
/// an indenter, longest-match lexing, droppable terminals or modes already laid (a
/// structural tag's), none of which it composes with.
pub(crate) fn lay_follow_modes(
    g: &Grammar,
    opts: &LexerOptions,
    stop: &Interrupt,
) -> Result<Grammar, GrammarError> {
    let beside = if g.indenter.is_some() {
        Some("an indenter")
    } else if g.longest_match {
        Some("longest-match lexing")
    } else if g.terminals.iter().any(|t| t.droppable) {
        Some("droppable terminals")
    } else if g.terminals.iter().any(|t| t.mode != LexMode::default()) {
        Some("lexer modes of its own")
    } else {
        None
    };
    if let Some(what) = beside {
        return Err(GrammarError::Unsupported {
            span: Default::default(),
            construct: "contextual lexing".into(),
            reason: format!("not beside {what}"),
        });
    }
    let follow = FollowSets::compute(g, stop)?;
    let mut modes = Modes::new(&follow);
    loop {
        stop.check()?;
        let laid = modes.lay_on(g);
        let sets = disagreeing_emissions(&laid, opts, stop)?;
        if sets.is_empty() {
            return Ok(laid);
        }
        let next = |t: &TerminalId| modes.of_laid(laid.terminals[t.index()].mode.then);
        let merges: Vec<Vec<usize>> = sets.iter().map(|e| e.iter().map(next).collect()).collect();
        for e in merges {
            for &m in &e[1..] {
                modes.merge(e[0], m);
            }
        }
    }
}

/// FIRST of the start symbol and FOLLOW of each terminal, over the grammar's terminals.
struct FollowSets {
    start: TermSet,
    /// Per terminal; empty for ignored and unused ones.
    of: Vec<TermSet>,
}

impl FollowSets {
    /// By worklist, as FIRST: `B → … A β` puts FIRST(β) into FOLLOW(A) and, when β is
    /// nullable, FOLLOW(B) too (an edge along which sets propagate); a terminal's FOLLOW
    /// is the same union over its occurrences.
    fn compute(g: &Grammar, stop: &Interrupt) -> Result<Self, GrammarError> {
        let width = g.terminals.len();
        let first = First::compute(g, width, stop)?;
        let nt = g.nonterminals.len();
        let mut of_nt = vec![TermSet::new(width); nt];
        let mut into: Vec<Vec<u32>> = vec![Vec::new(); nt];
        // Occurrences of terminals: (terminal, FIRST of what follows, its lhs if nullable).
        let mut at: Vec<(TerminalId, TermSet, Option<usize>)> = Vec::new();
        for p in &g.productions {
            let lhs = p.lhs.index();
            for (i, s) in p.rhs.iter().enumerate() {
                let mut words = TermSet::new(width).words().to_vec();
                let nullable = first.of_string_into(&p.rhs[i + 1..], &mut words);
                let set = TermSet::from_words(&words, width).expect("FIRST of this universe");
                match *s {
                    Symbol::N(a) => {
                        of_nt[a.index()].union_with(&set);
                        if nullable && a.index() != lhs {
                            into[lhs].push(a.as_u32());
                        }
                    }
                    Symbol::T(t) => at.push((t, set, nullable.then_some(lhs))),
                }
            }
        }
        let mut work: Vec<u32> = (0..nt as u32).rev().collect();
        let mut queued = vec![true; nt];
        while let Some(b) = work.pop() {
            queued[b as usize] = false;
            for &a in &into[b as usize] {
                let from = of_nt[b as usize].clone();
                if of_nt[a as usize].union_with(&from) && !queued[a as usize] {
                    queued[a as usize] = true;
                    work.push(a);
                }
            }
        }
        stop.check()?;
        let mut of = vec![TermSet::new(width); width];
        for (t, mut set, lhs) in at {
            if let Some(b) = lhs {
                set.union_with(&of_nt[b]);
            }
            of[t.index()].union_with(&set);
        }
        Ok(Self {
            start: first.first[g.start.index()].clone(),
            of,
        })
    }
}

/// Modes as sets of (non-ignored) terminals, merged by union-find.
struct Modes {
    /// Per mode as first made: its terminals; `sets[0]` is FIRST of the start symbol.
    sets: Vec<TermSet>,
    /// Union-find parents over `sets`.
    parent: Vec<usize>,
    /// Per terminal, the mode (as first made) its next lexeme is lexed in.
    then: Vec<usize>,
    /// Per mode of the last [`Modes::lay_on`], the mode (as first made) it stands for.
    laid: Vec<usize>,
}

impl Modes {
    fn new(f: &FollowSets) -> Self {
        let mut index: HashMap<TermSet, usize> = HashMap::new();
        let mut sets = vec![f.start.clone()];
        index.insert(f.start.clone(), 0);
        let then =
            f.of.iter()
                .map(|set| {
                    if set.is_empty() {
                        return 0;
                    }
                    *index.entry(set.clone()).or_insert_with(|| {
                        sets.push(set.clone());
                        sets.len() - 1
                    })
                })
                .collect();
        Self {
            parent: (0..sets.len()).collect(),
            sets,
            then,
            laid: Vec::new(),
        }
    }

    fn find(&mut self, mut m: usize) -> usize {
        while self.parent[m] != m {
            self.parent[m] = self.parent[self.parent[m]];
            m = self.parent[m];
        }
        m
    }

    fn merge(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        // The smaller root stays, so the start's mode keeps root 0.
        let (lo, hi) = (a.min(b), a.max(b));
        self.parent[hi] = lo;
    }

    /// The mode (as first made) standing for mode `m` of the last [`Modes::lay_on`].
    fn of_laid(&self, m: u32) -> usize {
        self.laid[m as usize]
    }

    /// `g` with the current modes: numbered in order of their roots (the start's first),
    /// each non-ignored terminal lexed in every mode whose union holds it, and each
    /// ignored terminal copied into every mode.
    fn lay_on(&mut self, g: &Grammar) -> Grammar {
        let n = self.sets.len();
        let roots: Vec<usize> = (0..n).map(|m| self.find(m)).collect();
        let mut number = vec![u32::MAX; n];
        self.laid.clear();
        for m in 0..n {
            if roots[m] == m {
                number[m] = self.laid.len() as u32;
                self.laid.push(m);
            }
        }
        let width = g.terminals.len();
        let mut union = vec![TermSet::new(width); self.laid.len()];
        for m in 0..n {
            union[number[roots[m]] as usize].union_with(&self.sets[m]);
        }
        let mut out = g.clone();
        for (i, t) in out.terminals.iter_mut().enumerate() {
            if t.ignored {
                t.mode = LexMode::only(0, 0);
                continue;
            }
            let id = TerminalId::new(i);
            t.mode = LexMode {
                lexed_in: (0..union.len() as u32)
                    .filter(|&m| union[m as usize].contains(id))
                    .collect(),
                then: number[roots[self.then[i]]],
            };
        }
        for m in 1..self.laid.len() as u32 {
            for t in g.terminals.iter().filter(|t| t.ignored) {
                let mut copy = t.clone();
                copy.name = format!("{}@mode{m}", t.name);
                copy.mode = LexMode::only(m, m);
                out.terminals.push(copy);
            }
        }
        out
    }
}

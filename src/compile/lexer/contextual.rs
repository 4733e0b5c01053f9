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
//!   those terminals' modes are merged into their union. Which terminals a lexeme emits
//!   in a mode comes from the global lexer: lexed in mode `M`, a lexeme completes what
//!   its global state completes, less the terminals outside `M`, and emits the top
//!   priority of those. Merging grows modes, so it repeats until nothing changes; it
//!   ends, at worst, in one mode.
//! - An ignored terminal (`%ignore`) may come between any two lexemes and leaves the mode
//!   as it was: it gets a copy per mode, lexed in that mode and continuing in it.
//!
//! Cost: one global lexer build (recording each state's completed terminals) before the
//! compile's own, and set operations over modes × distinct completed sets per round.

use std::collections::HashMap;

use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::{Grammar, LexMode, Symbol};
use crate::compile::interrupt::Interrupt;
use crate::compile::lr::first::First;
use crate::ids::TerminalId;
use crate::termset::TermSet;

use super::build::{completed_sets, LexerOptions};

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
    let completed = completed_sets(g, opts, stop)?;
    modes.merge_disagreeing(g, &completed, stop)?;
    Ok(modes.lay_on(g))
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
                let mut words = vec![0u64; width.div_ceil(64)];
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
            let from = of_nt[b as usize].clone();
            for &a in &into[b as usize] {
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
        }
    }

    fn find(&mut self, mut m: usize) -> usize {
        while self.parent[m] != m {
            self.parent[m] = self.parent[self.parent[m]];
            m = self.parent[m];
        }
        m
    }

    /// Merges the modes of `a` and `b`; returns whether they were apart.
    fn merge(&mut self, a: usize, b: usize) -> bool {
        let (a, b) = (self.find(a), self.find(b));
        // The smaller root stays, so the start's mode keeps root 0.
        let (lo, hi) = (a.min(b), a.max(b));
        self.parent[hi] = lo;
        lo != hi
    }

    /// Merges modes until no lexeme's terminals disagree on the next mode: lexed in a
    /// mode, a lexeme whose global lexer state completes `set` emits the top-priority
    /// terminals of `set` in that mode (an ignored one continuing in the mode itself), and
    /// those must continue in one mode. Each merge grows a mode, so this repeats until
    /// nothing changes.
    fn merge_disagreeing(
        &mut self,
        g: &Grammar,
        completed: &[Vec<TerminalId>],
        stop: &Interrupt,
    ) -> Result<(), GrammarError> {
        let width = g.terminals.len();
        loop {
            stop.check()?;
            let n = self.sets.len();
            let mut terminals: HashMap<usize, TermSet> = HashMap::new();
            for m in 0..n {
                let r = self.find(m);
                terminals
                    .entry(r)
                    .or_insert_with(|| TermSet::new(width))
                    .union_with(&self.sets[m]);
            }
            let mut merges: Vec<Vec<usize>> = Vec::new();
            for (&r, in_mode) in &terminals {
                for set in completed {
                    let here = set
                        .iter()
                        .filter(|t| g.terminals[t.index()].ignored || in_mode.contains(**t));
                    let Some(top) = here.clone().map(|t| g.terminals[t.index()].priority).max()
                    else {
                        continue;
                    };
                    let next: Vec<usize> = here
                        .filter(|t| g.terminals[t.index()].priority == top)
                        .map(|t| match g.terminals[t.index()].ignored {
                            true => r,
                            false => self.then[t.index()],
                        })
                        .collect();
                    if next.iter().any(|&m| m != next[0]) {
                        merges.push(next);
                    }
                }
            }
            // Every merge of a round is read off the same modes, so the order they are
            // made in changes nothing.
            let mut changed = false;
            for next in merges {
                for &m in &next[1..] {
                    changed |= self.merge(next[0], m);
                }
            }
            if !changed {
                return Ok(());
            }
        }
    }

    /// `g` with the current modes: numbered in order of their roots (the start's first),
    /// each non-ignored terminal lexed in every mode whose union holds it, and each
    /// ignored terminal copied into every mode.
    fn lay_on(mut self, g: &Grammar) -> Grammar {
        let n = self.sets.len();
        let roots: Vec<usize> = (0..n).map(|m| self.find(m)).collect();
        let mut number = vec![u32::MAX; n];
        let mut count = 0u32;
        for m in 0..n {
            if roots[m] == m {
                number[m] = count;
                count += 1;
            }
        }
        let width = g.terminals.len();
        let mut union = vec![TermSet::new(width); count as usize];
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
        for m in 1..count {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::{compile_grammar, GrammarFormat};

    fn grammar(text: &str) -> Grammar {
        compile_grammar(text, GrammarFormat::Lark).unwrap()
    }

    fn names(g: &Grammar, set: &TermSet) -> Vec<String> {
        let mut v: Vec<String> = set
            .iter()
            .map(|t| g.terminals[t.index()].name.clone())
            .collect();
        v.sort();
        v
    }

    /// FOLLOW steps over nullable symbols and takes the enclosing rule's FOLLOW at a
    /// rule's end.
    #[test]
    fn follow_sets_step_over_nullable_symbols() {
        let g = grammar(
            "start: A b C | b D\nb: B? E?\nA: \"a\"\nB: \"b\"\nC: \"c\"\nD: \"d\"\nE: \"e\"\n",
        );
        let f = FollowSets::compute(&g, &Interrupt::default()).unwrap();
        let of = |name: &str| names(&g, &f.of[g.terminal_named(name).unwrap().index()]);
        assert_eq!(names(&g, &f.start), ["A", "B", "D", "E"]);
        assert_eq!(of("A"), ["B", "C", "E"]);
        assert_eq!(of("B"), ["C", "D", "E"]);
        assert_eq!(of("E"), ["C", "D"]);
        assert!(of("C").is_empty() && of("D").is_empty());
    }

    /// Two terminals one lexeme emits continue in one mode (their FOLLOW sets' union);
    /// an ignored terminal gets a copy per mode, continuing in it.
    #[test]
    fn modes_merge_where_a_lexeme_emits_two_terminals() {
        let g = grammar(
            "start: X \"=\" V | Y \":\" W\nX: /[a-z]+/\nY: /[a-z]+/\nV: /[0-9]+/\nW: /[0-9]+/\n\
             %ignore \" \"\n",
        );
        let laid = lay_follow_modes(&g, &LexerOptions::default(), &Interrupt::default()).unwrap();
        let mode = |name: &str| {
            laid.terminals[laid.terminal_named(name).unwrap().index()]
                .mode
                .clone()
        };
        // `X` and `Y` match the same words: they continue where both `=` and `:` are.
        assert_eq!(mode("X").then, mode("Y").then);
        let after_name = mode("X").then;
        assert!(mode("\"=\"").in_mode(after_name) && mode("\":\"").in_mode(after_name));
        // `V` and `W` too, and neither is lexed where a name is.
        assert_eq!(mode("V").then, mode("W").then);
        assert!(!mode("V").in_mode(0) && mode("X").in_mode(0));
        // One ignored copy per mode, each continuing in its own.
        let modes = laid
            .terminals
            .iter()
            .map(|t| t.mode.modes_named())
            .max()
            .unwrap();
        let ignored: Vec<&LexMode> = laid
            .terminals
            .iter()
            .filter(|t| t.ignored)
            .map(|t| &t.mode)
            .collect();
        assert_eq!(ignored.len() as u32, modes);
        for m in ignored {
            assert_eq!(m.lexed_in, [m.then]);
        }
    }
}

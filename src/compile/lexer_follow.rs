//! Pass: lexer DFA → [`LexFollow`] tables, by fixpoint iteration over lexer states.
//!
//! With `C(q)` the terminals reachable from state `q` by zero or more bytes (a complete
//! non-ignored terminal, or `B(q)` after an ignored one) and `B(p)` the terminals that can
//! start at a boundary inhibited by `p` (end of input, plus `C(next(START, b))` for every
//! byte `b` that does not extend `p`), the tables are `B` and `C⁺(q) = ⋃ C(next(q, b))`.
//!
//! A counted run's template stands for all its iterations: its successors are those of
//! the collapsed table plus the run's exits ([`LexerDfa::next_exit`]), so what any
//! iteration can reach is reached.

use crate::ids::{LexStateId, TerminalId};
use crate::lexer::{LexFollow, LexerDfa};
use crate::termset::TermSet;

/// Computes the follow tables of a lexer.
pub fn build_follow(lexer: &LexerDfa) -> LexFollow {
    let n = lexer.num_states();
    let nt = lexer.terminals().len();
    let eof = TerminalId::new(nt);
    let reps = lexer.class_representatives();
    let id = LexStateId::new;
    let inhibitor = |q: usize| {
        if lexer.can_extend(id(q)) {
            q
        } else {
            0
        }
    };
    let mut c = vec![TermSet::new(nt + 1); n];
    let mut b = vec![TermSet::new(nt + 1); n];
    for s in &mut b {
        s.insert(eof);
    }
    // Every live successor of `q` on `byte`, the way out of a run included.
    let successors = |q: usize, byte: u8| {
        let q = id(q);
        [Some(lexer.next_rep(q, byte)), lexer.next_exit(q, byte)]
            .into_iter()
            .flatten()
            .filter(|q1| !lexer.is_dead(*q1))
    };
    loop {
        let mut changed = false;
        // Successors mostly have higher ids, so a descending pass carries most of the
        // reachability at once (a long counted string would otherwise take a pass per
        // character).
        for q in (1..n).rev() {
            let mut acc = c[q].clone();
            for &t in lexer.emits(id(q)) {
                if lexer.is_ignored(t) {
                    acc.union_with(&b[inhibitor(q)]);
                } else {
                    acc.insert(t);
                }
            }
            for &byte in &reps {
                for q1 in successors(q, byte) {
                    acc.union_with(&c[q1.index()]);
                }
            }
            if acc != c[q] {
                c[q] = acc;
                changed = true;
            }
        }
        for (p, bp) in b.iter_mut().enumerate() {
            let mut acc = bp.clone();
            for &byte in &reps {
                if lexer.is_dead(lexer.next_rep(id(p), byte)) {
                    let q1 = lexer.next_rep(LexerDfa::START, byte);
                    if !lexer.is_dead(q1) {
                        acc.union_with(&c[q1.index()]);
                    }
                }
            }
            if acc != *bp {
                *bp = acc;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let pending = (0..n)
        .map(|q| {
            let mut acc = TermSet::new(nt + 1);
            if q != 0 {
                for &byte in &reps {
                    for q1 in successors(q, byte) {
                        acc.union_with(&c[q1.index()]);
                    }
                }
            }
            acc
        })
        .collect();
    // Shapes match the lexer by construction.
    LexFollow::from_parts(b, pending, n, nt).expect("follow tables built consistently")
}

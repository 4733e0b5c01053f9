//! Pass: grammar behind an indenter → whether the mask automaton can carry its
//! indentation, and if not, why (a sentence naming the production).
//!
//! The automaton reads LR stacks, never the indenter's levels and bracket count. It can
//! still decide a token exactly when the grammar keeps those two visible in its parses:
//! - **Balanced brackets.** In every production the open brackets and closing ones
//!   (any kinds, as the indenter counts them) nest: no prefix closes more than it opened,
//!   and the whole opens as many as it closes. Then every viable prefix leaves exactly the
//!   indenter's count of brackets unclosed on the stack, so a closing bracket the
//!   indenter would refuse (none open) is one no parse can shift anyway.
//! - **Balanced levels.** The same for `_INDENT` / `_DEDENT`: a complete document closes
//!   every level it opened, so "some number of `_DEDENT` then end of input" is accepted
//!   only with as many as the indenter has open levels, and the automaton may ask the
//!   former (it cannot count the levels).
//! - **No newline between brackets.** No production puts a symbol that can derive `_NL`
//!   between an open bracket and its partner. Then no parse can shift `_NL` while a
//!   bracket is open, and a lexeme's follow set read outside brackets decides as the one
//!   read inside does wherever the inside one holds nothing more.
//!
//! SynCode's `python.lark` meets all three.

use crate::compile::grammar::ir::{Grammar, Indenter, Symbol};
use crate::ids::TerminalId;

/// Why the mask automaton cannot carry `ind` for `g`, or `None` when it can (see the
/// module doc).
pub fn automaton_refusal(g: &Grammar, ind: &Indenter) -> Option<String> {
    let nt_name = |s: &Symbol| match *s {
        Symbol::T(t) => g.terminal(t).name.clone(),
        Symbol::N(n) => g.nonterminal(n).name.clone(),
    };
    let show = |p: &crate::compile::grammar::ir::Production| {
        let rhs: Vec<String> = p.rhs.iter().map(nt_name).collect();
        format!("{} → {}", g.nonterminal(p.lhs).name, rhs.join(" "))
    };
    let bracket = |t: TerminalId| -> i32 {
        if ind.open.contains(&t) {
            1
        } else if ind.close.contains(&t) {
            -1
        } else {
            0
        }
    };
    let level = |t: TerminalId| -> i32 {
        if t == ind.indent {
            1
        } else if t == ind.dedent {
            -1
        } else {
            0
        }
    };
    let balanced = |rhs: &[Symbol], f: &dyn Fn(TerminalId) -> i32| {
        let mut depth = 0i32;
        for s in rhs {
            if let Symbol::T(t) = *s {
                depth += f(t);
                if depth < 0 {
                    return false;
                }
            }
        }
        depth == 0
    };
    for p in &g.productions {
        if !balanced(&p.rhs, &bracket) {
            return Some(format!(
                "its brackets do not pair up within one production (`{}`)",
                show(p)
            ));
        }
        if !balanced(&p.rhs, &level) {
            return Some(format!(
                "`{}` and `{}` do not pair up within one production (`{}`)",
                g.terminal(ind.indent).name,
                g.terminal(ind.dedent).name,
                show(p)
            ));
        }
    }
    // Nonterminals that can derive a string holding the newline terminal (least fixpoint).
    let mut derives_nl = vec![false; g.nonterminals.len()];
    loop {
        let mut changed = false;
        for p in &g.productions {
            if derives_nl[p.lhs.index()] {
                continue;
            }
            let holds = p.rhs.iter().any(|s| match *s {
                Symbol::T(t) => t == ind.nl,
                Symbol::N(n) => derives_nl[n.index()],
            });
            if holds {
                derives_nl[p.lhs.index()] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for p in &g.productions {
        let mut depth = 0i32;
        for s in &p.rhs {
            let nl = match *s {
                Symbol::T(t) => {
                    depth += bracket(t);
                    t == ind.nl
                }
                Symbol::N(n) => derives_nl[n.index()],
            };
            if nl && depth > 0 {
                return Some(format!(
                    "`{}` can come between brackets (`{}`)",
                    g.terminal(ind.nl).name,
                    show(p)
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::frontend::lark::compile as parse_lark;

    fn refusal(src: &str) -> Option<String> {
        let g = parse_lark(src).expect("grammar");
        let ind = g.post_lexer().expect("indenter").expect("an indenter");
        automaton_refusal(&g, &ind)
    }

    /// Terminals, and a block using both `_INDENT` and `_DEDENT` (pruning would drop them
    /// otherwise), for each case to reach from its start rule.
    const HEAD: &str = "NAME: /[a-z]+/\n_NL: /\\n[ ]*/\n%ignore \" \"\n%declare _INDENT _DEDENT\n\
                        block: NAME \":\" _NL _INDENT NAME _NL _DEDENT\n";

    #[test]
    fn python_like_blocks_are_carried() {
        let g = format!(
            "{HEAD}start: (_NL | stmt)*\nstmt: NAME \"(\" NAME? \")\" _NL | NAME \":\" suite\n\
             suite: _NL _INDENT stmt+ _DEDENT\n"
        );
        assert_eq!(refusal(&g), None);
    }

    #[test]
    fn brackets_split_over_two_productions_are_refused() {
        let g = format!("{HEAD}start: block | open NAME \")\" _NL\nopen: NAME \"(\"\n");
        let why = refusal(&g).expect("refused");
        assert!(why.contains("brackets do not pair up"), "{why}");
        assert!(why.contains("start → open NAME"), "{why}");
    }

    #[test]
    fn an_indent_without_its_dedent_is_refused() {
        let g = format!("{HEAD}start: block | NAME \":\" _NL _INDENT NAME _NL\n");
        let why = refusal(&g).expect("refused");
        assert!(
            why.contains("`_INDENT` and `_DEDENT` do not pair up"),
            "{why}"
        );
    }

    #[test]
    fn a_newline_between_brackets_is_refused() {
        let g = format!("{HEAD}start: block | \"(\" line \")\"\nline: NAME _NL\n");
        let why = refusal(&g).expect("refused");
        assert!(why.contains("`_NL` can come between brackets"), "{why}");
    }
}

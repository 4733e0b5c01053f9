//! The oracle's indentation post-lexer: Lark's `Indenter` run on the lexemes as they close
//! (see [`crate::compile::grammar::ir::IndenterSpec`]), written for the oracle alone.
//!
//! A lexeme read as several terminals can leave the indentation in several states (a
//! comment that is both ignored and a newline is skipped, or read as a newline that
//! dedents), so the oracle keeps one chart node per indentation state (a *thread*);
//! readings that meet again with the same indentation are joined ([`merge`]), so that a
//! program's comment lines do not double the threads one by one.

use super::earley::{Chart, Earley, Node};
use crate::ids::TerminalId;
use crate::lexer::{Indenter, Tail};

/// The indentation state of one thread: open levels (the first is 0) and open brackets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Levels {
    pub stack: Vec<u32>,
    pub brackets: u32,
}

impl Default for Levels {
    fn default() -> Self {
        Self {
            stack: vec![0],
            brackets: 0,
        }
    }
}

/// One chart node with its indentation.
#[derive(Clone)]
pub struct Thread {
    pub at: Node,
    pub levels: Levels,
}

/// `threads` with those of equal indentation joined into one node each.
pub fn merge(earley: &Earley, chart: &mut Chart, threads: Vec<Thread>) -> Vec<Thread> {
    let mut groups: Vec<(Levels, Vec<Node>)> = Vec::new();
    for t in threads {
        match groups.iter_mut().find(|(l, _)| *l == t.levels) {
            Some((_, nodes)) => {
                if !nodes.contains(&t.at) {
                    nodes.push(t.at);
                }
            }
            None => groups.push((t.levels, vec![t.at])),
        }
    }
    groups
        .into_iter()
        .map(|(levels, nodes)| Thread {
            at: earley.join(chart, &nodes),
            levels,
        })
        .collect()
}

/// Reads a closed lexeme emitted as `real` (non-ignored terminals; `stay`: the lexeme may
/// also be skipped) into `t` under indenter `ind`: every way the lexeme can be read, one
/// thread each (none if it fits no parse). `tail` is the lexeme's.
pub fn read(
    earley: &Earley,
    chart: &mut Chart,
    ind: &Indenter,
    t: &Thread,
    real: &[TerminalId],
    stay: bool,
    tail: Tail,
) -> Vec<Thread> {
    let mut out: Vec<Thread> = Vec::new();
    let advance = |chart: &mut Chart,
                   levels: Levels,
                   terms: &[TerminalId],
                   skip: bool,
                   out: &mut Vec<Thread>| {
        if let Some(at) = earley.scan(chart, t.at, terms, skip) {
            out.push(Thread { at, levels });
        }
    };
    // Terminals that leave the indentation as it is, read together (with the skip).
    let mut plain: Vec<TerminalId> = Vec::new();
    let mut stays = stay;
    for &term in real {
        if term == ind.nl {
            if t.levels.brackets > 0 {
                // Inside brackets the indenter drops the newline.
                stays = true;
            } else if let Some(th) = newline(earley, chart, ind, t, tail) {
                out.push(th);
            }
        } else if ind.open.contains(&term) {
            let levels = Levels {
                brackets: t.levels.brackets + 1,
                ..t.levels.clone()
            };
            advance(chart, levels, &[term], false, &mut out);
        } else if ind.close.contains(&term) {
            if t.levels.brackets > 0 {
                let levels = Levels {
                    brackets: t.levels.brackets - 1,
                    ..t.levels.clone()
                };
                advance(chart, levels, &[term], false, &mut out);
            }
        } else {
            plain.push(term);
        }
    }
    if !plain.is_empty() || stays {
        advance(chart, t.levels.clone(), &plain, stays, &mut out);
    }
    out
}

/// A newline lexeme outside brackets: the newline, then one indent if the next line is
/// deeper, or one dedent per level it closes (it must land on an open level).
fn newline(
    earley: &Earley,
    chart: &mut Chart,
    ind: &Indenter,
    t: &Thread,
    tail: Tail,
) -> Option<Thread> {
    // Lark splits the lexeme at its last newline; a lexeme without one is not a newline.
    if !tail.newline {
        return None;
    }
    let mut at = earley.scan(chart, t.at, &[ind.nl], false)?;
    let mut levels = t.levels.clone();
    let width = tail.width;
    let top = *levels.stack.last().expect("level 0 is never closed");
    if width > top {
        levels.stack.push(width);
        at = earley.scan(chart, at, &[ind.indent], false)?;
    } else {
        while width < *levels.stack.last().expect("level 0 is never closed") {
            levels.stack.pop();
            at = earley.scan(chart, at, &[ind.dedent], false)?;
        }
        if width != *levels.stack.last().expect("level 0 is never closed") {
            return None;
        }
    }
    Some(Thread { at, levels })
}

/// Whether the thread's document is complete once its open levels are closed.
pub fn accepts(earley: &Earley, chart: &Chart, ind: Option<&Indenter>, t: &Thread) -> bool {
    let Some(ind) = ind else {
        return earley.accepts(chart, t.at);
    };
    if t.levels.stack.len() == 1 {
        return earley.accepts(chart, t.at);
    }
    let mut chart = chart.clone();
    let mut at = t.at;
    for _ in 1..t.levels.stack.len() {
        match earley.scan(&mut chart, at, &[ind.dedent], false) {
            Some(n) => at = n,
            None => return false,
        }
    }
    earley.accepts(&chart, at)
}

#[cfg(test)]
mod tests {
    use crate::compile::{build_lexer, frontend::lark};
    use crate::reference::Reference;

    /// A Python-like grammar behind the indenter: blocks, brackets, comments (ignored and
    /// part of newlines, as in SynCode's python.lark).
    const GRAMMAR: &str = r#"
start: (_NL | stmt)*
stmt: NAME "=" expr _NL | "if" expr ":" suite
suite: _NL _INDENT stmt+ _DEDENT
expr: NAME | "(" expr ")" | "[" (expr ("," expr)*)? "]"
NAME: /[a-z]+/
_NL: (/\r?\n[\t ]*/ | COMMENT)+
COMMENT: /#[^\n]*/
%ignore /[\t ]/
%ignore COMMENT
%declare _INDENT _DEDENT
"#;

    fn oracle() -> Reference {
        let g = lark::compile(GRAMMAR).expect("grammar");
        assert!(g.indenter.is_some(), "the indenter turns on by itself");
        Reference::new(&g, &build_lexer(&g).expect("lexer"))
    }

    #[test]
    fn blocks_dedents_and_brackets_are_read_as_lark_indents_them() {
        let r = oracle();
        for doc in [
            "",
            "\n",
            "x = a\n",
            "if a:\n    x = b\n",
            // Two levels closed by one newline.
            "if a:\n    if b:\n        x = c\ny = d\n",
            "if a:\n\tx = b\n",
            // A tab is 8 columns, as eight spaces.
            "if a:\n\tx = b\n        y = c\n",
            // Blank and comment lines inside a block.
            "if a:\n    x = b\n\n    # note\n    y = c\n",
            // Newlines inside brackets are not newlines.
            "x = [a,\n  b]\n",
            "if a:\n    x = (b\n)\n    y = c\n",
        ] {
            assert!(r.is_complete(doc.as_bytes()), "{doc:?} is not complete");
        }
    }

    #[test]
    fn wrong_indentation_is_rejected_at_the_line_it_starts() {
        let r = oracle();
        // (document, the longest viable prefix's length)
        for (doc, ok_len) in [
            // A dedent to a level that was never opened.
            ("if a:\n    x = b\n  y = c\n", 18),
            // An indent where no block starts.
            ("x = a\n    y = b\n", 10),
            // A block that does not indent.
            ("if a:\nx = b\n", 6),
            // Four columns are not the tab's eight.
            ("if a:\n\tx = b\n    y = c\n", 17),
        ] {
            let b = doc.as_bytes();
            assert!(
                r.is_viable(&b[..ok_len]),
                "{doc:?}: prefix {ok_len} not viable"
            );
            assert!(
                !r.is_viable(&b[..ok_len + 1]),
                "{doc:?}: byte {ok_len} accepted"
            );
        }
        // Open levels close at the end of input, but a statement still needs its newline;
        // an open bracket does not close.
        assert!(!r.is_complete(b"if a:\n    x = b"));
        assert!(r.is_viable(b"if a:\n    x = b"));
        assert!(!r.is_complete(b"x = (a\n"));
        assert!(r.is_viable(b"x = (a\n"));
        // A closing bracket nothing opened.
        assert!(!r.is_viable(b"x = a)"));
    }
}

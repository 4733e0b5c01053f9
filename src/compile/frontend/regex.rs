//! The regex front end: a whole-output regular expression as a constraint (the output
//! must match it completely). It becomes a grammar with one terminal, `start: REGEX`, plus
//! `start: ε` when the expression matches the empty string (terminals must consume input,
//! so the terminal is the expression's non-empty part, computed on the parsed HIR).
//!
//! Syntax is `regex-syntax`'s (Rust `regex`), Unicode-aware, `.` without `\n`. Leading
//! `^`/`\A` and trailing `$`/`\z` are accepted and ignored (the match is anchored anyway);
//! any other assertion (`\b`, look-around, inner anchors) is refused by name.

use regex_syntax::hir::{Hir, HirKind, Look, Repetition};

use crate::compile::error::{GrammarError, Span};
use crate::compile::grammar::ir::{Grammar, Nonterminal, Priority, Production, Symbol, Terminal};
use crate::ids::{NonterminalId, TerminalId};

/// Name of the single terminal.
const TERMINAL: &str = "REGEX";

/// Compiles a whole-output regular expression into the grammar IR.
pub fn compile(pattern: &str) -> Result<Grammar, GrammarError> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .build()
        .parse(pattern)
        .map_err(|e| GrammarError::BadRegex {
            span: Span::default(),
            terminal: TERMINAL.into(),
            message: e.to_string(),
        })?;
    let hir = strip_anchors(hir);
    if !hir.properties().look_set().is_empty() {
        return Err(GrammarError::Unsupported {
            span: Span::default(),
            construct: "assertion inside a regex (\\b, \\B, inner ^ or $)".into(),
            reason: "the constraint is a regular language of whole outputs; only a leading ^ \
                     and a trailing $ are accepted (and ignored)"
                .into(),
        });
    }
    let matches_empty = hir.properties().minimum_len() == Some(0);
    let body = nonempty(&hir);
    let has_body = body.properties().minimum_len().is_some();
    if !has_body && !matches_empty {
        return Err(GrammarError::BadRegex {
            span: Span::default(),
            terminal: TERMINAL.into(),
            message: "the expression matches nothing".into(),
        });
    }
    if !has_body {
        return Err(GrammarError::Unsupported {
            span: Span::default(),
            construct: "a regex matching only the empty string".into(),
            reason: "the output could only be empty; there is nothing to constrain".into(),
        });
    }
    let start = NonterminalId::new(0);
    let mut productions = vec![Production {
        lhs: start,
        rhs: vec![Symbol::T(TerminalId::new(0))],
        priority: 0,
    }];
    if matches_empty {
        productions.push(Production {
            lhs: start,
            rhs: Vec::new(),
            priority: 0,
        });
    }
    let g = Grammar {
        terminals: vec![Terminal::new(
            TERMINAL.into(),
            printable(&body).to_string(),
            Priority::default(),
            Span::default(),
        )],
        nonterminals: vec![Nonterminal {
            name: "start".into(),
            span: Span::default(),
        }],
        productions,
        start,
        indenter: None,
        declared: Vec::new(),
        longest_match: false,
    };
    // Built above with one terminal and one nonterminal that has a production.
    debug_assert!(g.validate().is_ok());
    Ok(g)
}

fn is_start(h: &Hir) -> bool {
    matches!(h.kind(), HirKind::Look(Look::Start | Look::StartLF))
}

fn is_end(h: &Hir) -> bool {
    matches!(h.kind(), HirKind::Look(Look::End | Look::EndLF))
}

/// Drops a leading start anchor and a trailing end anchor (per alternative).
fn strip_anchors(h: Hir) -> Hir {
    match h.kind() {
        HirKind::Alternation(alts) => {
            Hir::alternation(alts.iter().cloned().map(strip_anchors).collect())
        }
        HirKind::Capture(c) => strip_anchors((*c.sub).clone()),
        HirKind::Concat(items) => {
            let mut items: Vec<Hir> = items.clone();
            if items.first().is_some_and(is_start) {
                items.remove(0);
            }
            if items.last().is_some_and(is_end) {
                items.pop();
            }
            Hir::concat(items)
        }
        _ if is_start(&h) || is_end(&h) => Hir::empty(),
        _ => h,
    }
}

/// The language of `h` without the empty string (`Hir::fail()` when nothing is left).
fn nonempty(h: &Hir) -> Hir {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => Hir::fail(),
        HirKind::Literal(_) | HirKind::Class(_) => h.clone(),
        HirKind::Capture(c) => nonempty(&c.sub),
        HirKind::Alternation(alts) => union(alts.iter().map(nonempty).collect()),
        // A non-empty word of sub{min,max} starts with a non-empty word of sub (the empty
        // iterations before it can be dropped), followed by at most max-1 more.
        HirKind::Repetition(r) => {
            if r.max == Some(0) {
                return Hir::fail();
            }
            let first = nonempty(&r.sub);
            let rest = Hir::repetition(Repetition {
                min: r.min.saturating_sub(1),
                max: r.max.map(|m| m - 1),
                greedy: r.greedy,
                sub: r.sub.clone(),
            });
            Hir::concat(vec![first, rest])
        }
        // The first non-empty item starts the word; the items before it match ε.
        HirKind::Concat(items) => {
            let mut alts = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let mut parts = vec![nonempty(item)];
                parts.extend(items[i + 1..].iter().cloned());
                alts.push(Hir::concat(parts));
                if item.properties().minimum_len() != Some(0) {
                    break;
                }
            }
            union(alts)
        }
    }
}

/// The alternation of the expressions that match something (`Hir::alternation` would
/// report an alternation with a failing branch as matching nothing at all).
fn union(alts: Vec<Hir>) -> Hir {
    let alts: Vec<Hir> = alts
        .into_iter()
        .filter(|h| h.properties().minimum_len().is_some())
        .collect();
    if alts.is_empty() {
        Hir::fail()
    } else {
        Hir::alternation(alts)
    }
}

/// Wraps repeated repetitions in a group: the HIR printer writes `(?:x+)?` as `x+?`,
/// which reads back as a lazy `+`.
fn printable(h: &Hir) -> Hir {
    match h.kind() {
        HirKind::Repetition(r) => {
            let sub = printable(&r.sub);
            let sub = if matches!(sub.kind(), HirKind::Repetition(_)) {
                Hir::capture(regex_syntax::hir::Capture {
                    index: 1,
                    name: None,
                    sub: Box::new(sub),
                })
            } else {
                sub
            };
            Hir::repetition(Repetition {
                min: r.min,
                max: r.max,
                greedy: r.greedy,
                sub: Box::new(sub),
            })
        }
        HirKind::Concat(v) => Hir::concat(v.iter().map(printable).collect()),
        HirKind::Alternation(v) => Hir::alternation(v.iter().map(printable).collect()),
        HirKind::Capture(c) => printable(&c.sub),
        _ => h.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn language(pattern: &str, words: &[&str]) -> Vec<bool> {
        let g = compile(pattern).expect("compiles");
        let re = regex_automata::meta::Regex::new(&format!("^(?:{})$", g.terminals[0].regex))
            .expect("terminal regex parses");
        let empty = g.productions.iter().any(|p| p.rhs.is_empty());
        words
            .iter()
            .map(|w| if w.is_empty() { empty } else { re.is_match(w) })
            .collect()
    }

    #[test]
    fn nonempty_part_plus_epsilon_is_the_language() {
        let words = [
            "", "a", "aa", "ab", "b", "ba", "abab", "aab", "c", "ac", "abc",
        ];
        for pattern in [
            "a*",
            "(ab)*",
            "a*b*",
            "(a|b?)c?",
            "(a*)*",
            "((a?)(b?)){2,3}",
            "a{0,2}b?",
            "^a*$",
            "a|",
            "(a*|b)+c*",
            "(?:a?){0}b?",
        ] {
            let full = regex_automata::meta::Regex::new(&format!(
                "^(?:{})$",
                pattern.trim_start_matches('^').trim_end_matches('$')
            ))
            .expect("pattern parses");
            let want: Vec<bool> = words.iter().map(|w| full.is_match(w)).collect();
            assert_eq!(language(pattern, &words), want, "{pattern}");
        }
    }

    #[test]
    fn assertions_and_empty_languages_are_refused_by_name() {
        let e = compile(r"a\bb").unwrap_err().to_string();
        assert!(e.contains("assertion"), "{e}");
        let e = compile("a$b").unwrap_err().to_string();
        assert!(e.contains("assertion"), "{e}");
        let e = compile("").unwrap_err().to_string();
        assert!(e.contains("only the empty string"), "{e}");
        let e = compile("[^\\x00-\\x{10FFFF}]").unwrap_err().to_string();
        assert!(e.contains("matches nothing"), "{e}");
        let e = compile("a(").unwrap_err().to_string();
        assert!(e.contains("REGEX"), "{e}");
    }
}

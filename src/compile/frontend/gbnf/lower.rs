//! GBNF rules → grammar IR.
//!
//! GBNF has no lexer: it is a grammar over characters. To keep its language exactly under
//! our maximal-munch lexer, every terminal is one character: the character sets the
//! grammar uses are split into disjoint *atoms* (intervals of code points that no set
//! boundary cuts), each atom is a terminal, and a set is a nonterminal choosing among its
//! atoms. No terminal is a prefix of another (UTF-8 is prefix-free) and no two terminals
//! share a character, so lexing is unambiguous and never merges characters.

use hashbrown::HashMap;

use super::parse::{parse, CharSet, Expr, Rule};
use crate::compile::error::{GrammarError, Span};
use crate::compile::grammar::ebnf::{BnfBuilder, Ebnf};
use crate::compile::grammar::ir::{Grammar, Nonterminal, Priority, Symbol, Terminal};
use crate::compile::grammar::prune::{
    check_acyclic, check_no_hidden_left_recursion, prune_unreachable, remove_unproductive,
};
use crate::ids::{NonterminalId, TerminalId};

/// Most distinct atoms (terminals) a GBNF grammar may split into.
const MAX_ATOMS: usize = 20_000;

fn collect_sets(e: &Expr, out: &mut Vec<CharSet>) {
    match e {
        Expr::Alt(v) | Expr::Seq(v) => v.iter().for_each(|x| collect_sets(x, out)),
        Expr::Repeat { inner, .. } => collect_sets(inner, out),
        Expr::Chars(s) => out.push(s.clone()),
        Expr::Ref { .. } | Expr::Special { .. } => {}
    }
}

fn show_char(c: u32) -> String {
    match char::from_u32(c) {
        Some(ch) if !ch.is_control() && ch != ' ' => ch.to_string(),
        _ => format!("\\u{{{c:x}}}"),
    }
}

struct Atoms {
    /// Disjoint intervals, sorted.
    atoms: Vec<(u32, u32)>,
}

impl Atoms {
    fn build(sets: &[CharSet]) -> Self {
        let mut points: Vec<u32> = Vec::new();
        for s in sets {
            for &(a, b) in s {
                points.push(a);
                points.push(b + 1);
            }
        }
        points.sort_unstable();
        points.dedup();
        let mut covered: Vec<(u32, u32)> = sets.iter().flatten().copied().collect();
        covered.sort_unstable();
        let covers = |a: u32, b: u32| covered.iter().any(|&(x, y)| x <= a && b <= y);
        let atoms = points
            .windows(2)
            .map(|w| (w[0], w[1] - 1))
            .filter(|&(a, b)| covers(a, b))
            .collect();
        Atoms { atoms }
    }

    /// The atoms (by index) that make up `set`.
    fn of(&self, set: &CharSet) -> Vec<usize> {
        self.atoms
            .iter()
            .enumerate()
            .filter(|(_, &(a, b))| set.iter().any(|&(x, y)| x <= a && b <= y))
            .map(|(i, _)| i)
            .collect()
    }
}

/// The special tokens rules name, in order of first use, with where each is first named.
fn collect_specials(e: &Expr, out: &mut Vec<(String, Span)>) {
    match e {
        Expr::Alt(v) | Expr::Seq(v) => v.iter().for_each(|x| collect_specials(x, out)),
        Expr::Repeat { inner, .. } => collect_specials(inner, out),
        Expr::Special { name, span } => {
            if !out.iter().any(|(n, _)| n == name) {
                out.push((name.clone(), *span));
            }
        }
        Expr::Chars(_) | Expr::Ref { .. } => {}
    }
}

/// Terminal ids: one per character atom, then one per special token (in `specials`).
struct TerminalIds<'a> {
    atoms: &'a Atoms,
    specials: &'a [(String, Span)],
}

fn to_ebnf(
    e: &Expr,
    terms: &TerminalIds<'_>,
    set_cache: &mut HashMap<CharSet, Vec<usize>>,
    ids: &HashMap<String, NonterminalId>,
) -> Result<Ebnf, GrammarError> {
    let atoms = terms.atoms;
    Ok(match e {
        Expr::Alt(v) => Ebnf::Alt(
            v.iter()
                .map(|x| to_ebnf(x, terms, set_cache, ids))
                .collect::<Result<_, _>>()?,
        ),
        Expr::Seq(v) => Ebnf::Seq(
            v.iter()
                .map(|x| to_ebnf(x, terms, set_cache, ids))
                .collect::<Result<_, _>>()?,
        ),
        Expr::Repeat { inner, min, max } => Ebnf::Repeat {
            inner: Box::new(to_ebnf(inner, terms, set_cache, ids)?),
            min: *min,
            max: *max,
        },
        Expr::Chars(set) => {
            let list = set_cache
                .entry(set.clone())
                .or_insert_with(|| atoms.of(set))
                .clone();
            let syms: Vec<Ebnf> = list
                .into_iter()
                .map(|i| Ebnf::Sym(Symbol::T(TerminalId::new(i))))
                .collect();
            if syms.len() == 1 {
                syms.into_iter().next().expect("one atom")
            } else {
                Ebnf::Alt(syms)
            }
        }
        Expr::Special { name, .. } => {
            let k = terms
                .specials
                .iter()
                .position(|(n, _)| n == name)
                .expect("every special token is collected before lowering");
            Ebnf::Sym(Symbol::T(TerminalId::new(atoms.atoms.len() + k)))
        }
        Expr::Ref { name, span } => match ids.get(name) {
            Some(&n) => Ebnf::Sym(Symbol::N(n)),
            None => {
                return Err(GrammarError::Undefined {
                    span: *span,
                    kind: "rule",
                    name: name.clone(),
                })
            }
        },
    })
}

/// Compiles GBNF text (start rule `root`) into the grammar IR.
pub fn lower(src: &str, start: &str) -> Result<Grammar, GrammarError> {
    let rules: Vec<Rule> = parse(src)?;
    let mut ids: HashMap<String, NonterminalId> = HashMap::new();
    let mut first: HashMap<String, Span> = HashMap::new();
    for (i, r) in rules.iter().enumerate() {
        if let Some(&f) = first.get(&r.name) {
            return Err(GrammarError::Duplicate {
                span: r.span,
                first: f,
                name: r.name.clone(),
            });
        }
        first.insert(r.name.clone(), r.span);
        ids.insert(r.name.clone(), NonterminalId::new(i));
    }
    let Some(&start_id) = ids.get(start) else {
        return Err(GrammarError::NoStart {
            name: start.to_string(),
        });
    };
    let mut sets = Vec::new();
    for r in &rules {
        collect_sets(&r.body, &mut sets);
    }
    sets.sort();
    sets.dedup();
    let atoms = Atoms::build(&sets);
    if atoms.atoms.len() > MAX_ATOMS {
        return Err(GrammarError::TooLarge {
            span: Span::default(),
            what: "distinct character classes".into(),
            limit: MAX_ATOMS,
        });
    }
    let mut specials = Vec::new();
    for r in &rules {
        collect_specials(&r.body, &mut specials);
    }
    let mut terminals: Vec<Terminal> = atoms
        .atoms
        .iter()
        .map(|&(a, b)| {
            let name = if a == b {
                format!("'{}'", show_char(a))
            } else {
                format!("[{}-{}]", show_char(a), show_char(b))
            };
            let regex = format!("[\\x{{{a:x}}}-\\x{{{b:x}}}]");
            Terminal::new(name, regex, Priority::default(), Span::default())
        })
        .collect();
    terminals.extend(
        specials
            .iter()
            .map(|(name, span)| crate::compile::frontend::special::terminal(name, *span)),
    );
    let terms = TerminalIds {
        atoms: &atoms,
        specials: &specials,
    };
    let nonterminals = rules
        .iter()
        .map(|r| Nonterminal {
            name: r.name.clone(),
            span: r.span,
        })
        .collect();
    let mut bnf = BnfBuilder::new(nonterminals);
    let mut cache = HashMap::new();
    for (i, r) in rules.iter().enumerate() {
        let body = to_ebnf(&r.body, &terms, &mut cache, &ids)?;
        bnf.define(NonterminalId::new(i), &body, 0, r.span)?;
    }
    let (nonterminals, productions) = bnf.finish();
    let g = remove_unproductive(prune_unreachable(Grammar {
        terminals,
        nonterminals,
        productions,
        start: start_id,
        indenter: None,
        declared: Vec::new(),
        longest_match: false,
    }))?;
    check_acyclic(&g)?;
    check_no_hidden_left_recursion(&g)?;
    debug_assert_eq!(g.validate(), Ok(()));
    Ok(g)
}

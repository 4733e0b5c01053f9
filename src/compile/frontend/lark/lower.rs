//! Lark statements → grammar IR: resolve names, turn terminal definitions into regexes,
//! give anonymous strings and regexes in rules their own terminals (reusing a named
//! terminal with the same pattern, as Lark does), apply `%ignore`, `%import common.X` and
//! `%declare`, then lower rule bodies through [`crate::compile::grammar::ebnf`], and add
//! the grammar of each `%json { … }` schema a rule uses.

use hashbrown::{HashMap, HashSet};

use super::parse::{parse, Def, Expr, Stmt};
use super::JSON_ITEM;
use crate::compile::error::{GrammarError, Span};
use crate::compile::frontend::json_schema::{self, SchemaError, SchemaOptions};
use crate::compile::grammar::ebnf::{BnfBuilder, Ebnf};
use crate::compile::grammar::ir::{
    Grammar, IndenterSpec, Nonterminal, Priority, Production, Symbol, Terminal,
};
use crate::compile::interrupt::Interrupt;

/// The pattern of a declared terminal: an empty class, which no lexeme matches.
const NEVER: &str = "[a&&b]";
use crate::compile::grammar::prune::{
    check_acyclic, check_no_hidden_left_recursion, prune_unreachable, remove_unproductive,
};
use crate::ids::{NonterminalId, TerminalId};

/// The text behind `%import common.X`.
const COMMON: &str = include_str!("common.lark");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Module {
    Main,
    Common,
}

/// Where a terminal name of the main grammar gets its definition.
#[derive(Debug, Clone)]
enum TermSrc {
    Def(Def),
    Imported { name: String, span: Span },
}

struct Lowerer {
    main_terms: HashMap<String, TermSrc>,
    common_terms: HashMap<String, Def>,
    declared: HashMap<String, Span>,
    rules: Vec<Def>,
    rule_ids: HashMap<String, NonterminalId>,
    terminals: Vec<Terminal>,
    named_ids: HashMap<String, TerminalId>,
    anon_ids: HashMap<String, TerminalId>,
    regex_cache: HashMap<(Module, String), String>,
    visiting: HashSet<(Module, String)>,
    anon_count: usize,
    /// Each `%json` of a rule (by where it is written): the nonterminal standing for its
    /// schema's documents, defined once the rules are lowered ([`graft_schemas`]).
    schemas: Vec<Embedded>,
}

fn escape_literal(value: &str, ci: bool) -> String {
    let e = regex_syntax::escape(value);
    if ci {
        format!("(?i:{e})")
    } else {
        e
    }
}

fn class_char(c: char) -> String {
    format!("\\x{{{:x}}}", c as u32)
}

impl Lowerer {
    /// Reads the statements: terminal and rule definitions, `%import`s from the built-in
    /// `common` module (under their aliases), `%declare`d names. `defs` are the grammar's
    /// definitions (for duplicate names).
    fn collect(&mut self, stmts: &[Stmt], defs: &HashMap<String, Def>) -> Result<(), GrammarError> {
        let mut first_span: HashMap<String, Span> =
            defs.iter().map(|(n, d)| (n.clone(), d.span)).collect();
        for s in stmts {
            match s {
                Stmt::Def(d) if d.is_term => {
                    self.main_terms
                        .insert(d.name.clone(), TermSrc::Def(d.clone()));
                }
                Stmt::Def(d) => {
                    self.rule_ids
                        .insert(d.name.clone(), NonterminalId::new(self.rules.len()));
                    self.rules.push(d.clone());
                }
                Stmt::Import {
                    module,
                    names,
                    span,
                } => {
                    if module.len() != 1 || module[0] != "common" {
                        return Err(GrammarError::Unsupported {
                            span: *span,
                            construct: format!("%import {}", module.join(".")),
                            reason: "only the built-in `common` module can be imported".into(),
                        });
                    }
                    for (name, alias, nspan) in names {
                        if !self.common_terms.contains_key(name) {
                            return Err(GrammarError::Undefined {
                                span: *nspan,
                                kind: "terminal in module `common`",
                                name: name.clone(),
                            });
                        }
                        if let Some(first) = first_span.get(alias) {
                            if first != nspan {
                                return Err(GrammarError::Duplicate {
                                    span: *nspan,
                                    first: *first,
                                    name: alias.clone(),
                                });
                            }
                        }
                        first_span.insert(alias.clone(), *nspan);
                        self.main_terms.insert(
                            alias.clone(),
                            TermSrc::Imported {
                                name: name.clone(),
                                span: *nspan,
                            },
                        );
                    }
                }
                Stmt::Declare { names, .. } => {
                    for (n, nspan) in names {
                        self.declared.entry(n.clone()).or_insert(*nspan);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Marks the `%ignore`d terminals (a name, or an anonymous pattern made a terminal).
    fn ignore(&mut self, stmts: &[Stmt]) -> Result<(), GrammarError> {
        for s in stmts {
            if let Stmt::Ignore { body, span } = s {
                match body {
                    Expr::Name { name, span: nspan } => {
                        if name.chars().any(|c| c.is_ascii_lowercase()) {
                            return Err(GrammarError::Syntax {
                                span: *nspan,
                                message: format!("%ignore takes terminals, not rule `{name}`"),
                            });
                        }
                        let id = self.named_terminal(name, *nspan)?;
                        self.terminals[id.index()].ignored = true;
                    }
                    other => {
                        self.anonymous(other, *span, true)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Lowers the rules to BNF, with a nonterminal for each `%json` in them whose
    /// schema's documents are grafted in (lowered with `schema`, stopped by `stop`).
    fn lower_rules(
        &mut self,
        schema: &SchemaOptions,
        stop: &Interrupt,
    ) -> Result<(Vec<Nonterminal>, Vec<Production>), GrammarError> {
        let mut nonterminals: Vec<Nonterminal> = self
            .rules
            .iter()
            .map(|d| Nonterminal {
                name: d.name.clone(),
                span: d.span,
            })
            .collect();
        for d in &self.rules {
            each_schema(&d.body, &mut |span, body, schema| {
                self.schemas.push(Embedded {
                    span,
                    body,
                    schema: schema.to_string(),
                    nonterminal: NonterminalId::new(nonterminals.len()),
                });
                nonterminals.push(Nonterminal {
                    name: format!("{JSON_ITEM}{span}"),
                    span,
                });
            });
        }
        let mut bnf = BnfBuilder::new(nonterminals);
        let rules = self.rules.clone();
        for (i, d) in rules.iter().enumerate() {
            let body = self.rule_ebnf(&d.body)?;
            bnf.define(
                NonterminalId::new(i),
                &body,
                d.priority.unwrap_or(0),
                d.span,
            )?;
        }
        let (mut nonterminals, mut productions) = bnf.finish();
        graft_schemas(
            &self.schemas,
            (schema, stop),
            &mut self.terminals,
            &mut nonterminals,
            &mut productions,
        )?;
        Ok((nonterminals, productions))
    }

    fn def_of(&self, module: Module, name: &str) -> Option<(Module, Def)> {
        match module {
            Module::Common => self
                .common_terms
                .get(name)
                .map(|d| (Module::Common, d.clone())),
            Module::Main => match self.main_terms.get(name)? {
                TermSrc::Def(d) => Some((Module::Main, d.clone())),
                TermSrc::Imported { name, .. } => self
                    .common_terms
                    .get(name)
                    .map(|d| (Module::Common, d.clone())),
            },
        }
    }

    /// The regex of terminal `name` as seen from `module`.
    fn term_regex(
        &mut self,
        module: Module,
        name: &str,
        use_span: Span,
    ) -> Result<String, GrammarError> {
        if let Some(r) = self.regex_cache.get(&(module, name.to_string())) {
            return Ok(r.clone());
        }
        let Some((def_module, def)) = self.def_of(module, name) else {
            if module == Module::Main && self.declared.contains_key(name) {
                // A terminal only a post-lexer makes: no lexeme is ever it
                // (`Grammar::post_lexer` checks a post-lexer does make it).
                return Ok(NEVER.to_string());
            }
            return Err(GrammarError::Undefined {
                span: use_span,
                kind: "terminal",
                name: name.to_string(),
            });
        };
        let key = (module, name.to_string());
        if self.visiting.len() > super::parse::MAX_NESTING {
            return Err(GrammarError::TooLarge {
                span: def.span,
                what: "chain of terminals defined by terminals".into(),
                limit: super::parse::MAX_NESTING,
            });
        }
        if !self.visiting.insert(key.clone()) {
            return Err(GrammarError::RecursiveTerminal {
                span: def.span,
                terminal: name.to_string(),
            });
        }
        let r = self.expr_regex(def_module, &def.name, &def.body)?;
        self.visiting.remove(&key);
        self.regex_cache.insert(key, r.clone());
        Ok(r)
    }

    fn expr_regex(
        &mut self,
        module: Module,
        owner: &str,
        e: &Expr,
    ) -> Result<String, GrammarError> {
        Ok(match e {
            Expr::Str { value, ci, .. } => escape_literal(value, *ci),
            Expr::Regex {
                pattern,
                flags,
                span,
            } => regex_with_flags(pattern, flags, owner, *span)?,
            Expr::Range { from, to, .. } => format!("[{}-{}]", class_char(*from), class_char(*to)),
            Expr::Json { span, .. } => {
                return Err(GrammarError::Unsupported {
                    span: *span,
                    construct: "%json".into(),
                    reason: format!(
                        "terminal `{owner}` uses a JSON Schema; a schema's documents are a rule's, \
                         so rules may use `%json` but terminals may not"
                    ),
                })
            }
            Expr::Special { name, span } => {
                return Err(GrammarError::Unsupported {
                    span: *span,
                    construct: name.clone(),
                    reason: format!(
                        "terminal `{owner}` uses a special token; a special token is a token of \
                         its own, so rules may name it but terminals may not"
                    ),
                })
            }
            Expr::Name { name, span } => {
                if name.chars().any(|c| c.is_ascii_lowercase()) {
                    return Err(GrammarError::Syntax {
                        span: *span,
                        message: format!("terminal `{owner}` refers to rule `{name}`; terminals may only use terminals"),
                    });
                }
                format!("(?:{})", self.term_regex(module, name, *span)?)
            }
            Expr::Seq(items) => {
                let mut s = String::new();
                for it in items {
                    s.push_str(&format!("(?:{})", self.expr_regex(module, owner, it)?));
                }
                s
            }
            Expr::Alt(items) => {
                let parts = items
                    .iter()
                    .map(|it| self.expr_regex(module, owner, it))
                    .collect::<Result<Vec<_>, _>>()?;
                format!("(?:{})", parts.join("|"))
            }
            Expr::Repeat { inner, min, max } => {
                let r = self.expr_regex(module, owner, inner)?;
                let q = match (min, max) {
                    (0, Some(1)) => "?".to_string(),
                    (0, None) => "*".to_string(),
                    (1, None) => "+".to_string(),
                    (m, None) => format!("{{{m},}}"),
                    (m, Some(n)) => format!("{{{m},{n}}}"),
                };
                format!("(?:{r}){q}")
            }
        })
    }

    /// The id of named terminal `name` (defined or imported), made on first use.
    fn named_terminal(&mut self, name: &str, span: Span) -> Result<TerminalId, GrammarError> {
        if let Some(&id) = self.named_ids.get(name) {
            return Ok(id);
        }
        let regex = self.term_regex(Module::Main, name, span)?;
        let (prio, literal, def_span) = match self.def_of(Module::Main, name) {
            Some((_, d)) => (
                d.priority.unwrap_or(0),
                matches!(d.body, Expr::Str { .. }),
                match self.main_terms.get(name) {
                    Some(TermSrc::Imported { span, .. }) => *span,
                    _ => d.span,
                },
            ),
            None => (0, false, span),
        };
        let id = TerminalId::new(self.terminals.len());
        let priority = Priority {
            user: prio,
            literal,
        };
        self.terminals
            .push(Terminal::new(name.to_string(), regex, priority, def_span));
        self.named_ids.insert(name.to_string(), id);
        Ok(id)
    }

    /// A named terminal of the main grammar whose whole body is exactly `e` (Lark reuses
    /// such a terminal for an anonymous pattern in a rule).
    fn named_with_body(&self, e: &Expr) -> Option<String> {
        let same = |a: &Expr, b: &Expr| match (a, b) {
            (
                Expr::Str {
                    value: v1, ci: c1, ..
                },
                Expr::Str {
                    value: v2, ci: c2, ..
                },
            ) => v1 == v2 && c1 == c2,
            (
                Expr::Regex {
                    pattern: p1,
                    flags: f1,
                    ..
                },
                Expr::Regex {
                    pattern: p2,
                    flags: f2,
                    ..
                },
            ) => p1 == p2 && f1 == f2,
            _ => false,
        };
        let mut names: Vec<&String> = self
            .main_terms
            .iter()
            .filter(|(_, src)| matches!(src, TermSrc::Def(d) if same(&d.body, e)))
            .map(|(n, _)| n)
            .collect();
        names.sort();
        names.first().map(|s| s.to_string())
    }

    fn anonymous(
        &mut self,
        e: &Expr,
        span: Span,
        ignored: bool,
    ) -> Result<TerminalId, GrammarError> {
        if !ignored {
            if let Some(name) = self.named_with_body(e) {
                return self.named_terminal(&name, span);
            }
        }
        let (name, literal) = match e {
            Expr::Str { value, ci, .. } => {
                (format!("{value:?}{}", if *ci { "i" } else { "" }), true)
            }
            _ => {
                self.anon_count += 1;
                (
                    format!(
                        "__{}_{}",
                        if ignored { "IGNORE" } else { "ANON" },
                        self.anon_count - 1
                    ),
                    false,
                )
            }
        };
        let regex = self.expr_regex(Module::Main, &name, e)?;
        let key = format!("{ignored}/{regex}");
        if let Some(&id) = self.anon_ids.get(&key) {
            return Ok(id);
        }
        let id = TerminalId::new(self.terminals.len());
        self.terminals.push(Terminal {
            ignored,
            ..Terminal::new(name, regex, Priority { user: 0, literal }, span)
        });
        self.anon_ids.insert(key, id);
        Ok(id)
    }

    fn rule_ebnf(&mut self, e: &Expr) -> Result<Ebnf, GrammarError> {
        Ok(match e {
            Expr::Name { name, span } => {
                if name.chars().any(|c| c.is_ascii_lowercase()) {
                    match self.rule_ids.get(name.as_str()) {
                        Some(&n) => Ebnf::Sym(Symbol::N(n)),
                        None => {
                            return Err(GrammarError::Undefined {
                                span: *span,
                                kind: "rule",
                                name: name.clone(),
                            })
                        }
                    }
                } else {
                    Ebnf::Sym(Symbol::T(self.named_terminal(name, *span)?))
                }
            }
            Expr::Str { span, .. } | Expr::Regex { span, .. } | Expr::Range { span, .. } => {
                Ebnf::Sym(Symbol::T(self.anonymous(e, *span, false)?))
            }
            Expr::Json { span, .. } => {
                // Every `%json` of a rule got its nonterminal before the rules were lowered.
                let e = self
                    .schemas
                    .iter()
                    .find(|e| e.span == *span)
                    .expect("each %json is listed before lowering");
                Ebnf::Sym(Symbol::N(e.nonterminal))
            }
            Expr::Special { name, span } => {
                let key = format!("special/{name}");
                let id = match self.anon_ids.get(&key) {
                    Some(&id) => id,
                    None => {
                        let id = TerminalId::new(self.terminals.len());
                        self.terminals
                            .push(crate::compile::frontend::special::terminal(name, *span));
                        self.anon_ids.insert(key, id);
                        id
                    }
                };
                Ebnf::Sym(Symbol::T(id))
            }
            Expr::Seq(items) => Ebnf::Seq(
                items
                    .iter()
                    .map(|i| self.rule_ebnf(i))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Alt(items) => Ebnf::Alt(
                items
                    .iter()
                    .map(|i| self.rule_ebnf(i))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Repeat { inner, min, max } => Ebnf::Repeat {
                inner: Box::new(self.rule_ebnf(inner)?),
                min: *min,
                max: *max,
            },
        })
    }
}

/// Lark regex flags → an inline-flag group. `u` is the default; `l` (locale) has no
/// meaning on bytes and is refused.
fn regex_with_flags(
    pattern: &str,
    flags: &str,
    owner: &str,
    span: Span,
) -> Result<String, GrammarError> {
    let mut inline = String::new();
    for f in flags.chars() {
        match f {
            'i' | 'm' | 's' | 'x' => inline.push(f),
            'u' => {}
            other => {
                return Err(GrammarError::Unsupported {
                    span,
                    construct: format!("/…/{other}"),
                    reason: format!("regex flag `{other}` in terminal `{owner}` is not supported"),
                })
            }
        }
    }
    Ok(if inline.is_empty() {
        format!("(?:{pattern})")
    } else {
        format!("(?{inline}:{pattern})")
    })
}

fn collect_defs(stmts: &[Stmt]) -> Result<HashMap<String, Def>, GrammarError> {
    let mut out: HashMap<String, Def> = HashMap::new();
    for s in stmts {
        if let Stmt::Def(d) = s {
            if let Some(first) = out.get(&d.name) {
                return Err(GrammarError::Duplicate {
                    span: d.span,
                    first: first.span,
                    name: d.name.clone(),
                });
            }
            out.insert(d.name.clone(), d.clone());
        }
    }
    Ok(out)
}

/// A `%json` of a rule: where it and its schema's `{` are written, the schema's text, and
/// the nonterminal standing for its documents.
struct Embedded {
    span: Span,
    body: Span,
    schema: String,
    nonterminal: NonterminalId,
}

/// Calls `visit` with each `%json` in `e` (where it and its `{` are written, and its
/// schema text).
fn each_schema(e: &Expr, visit: &mut impl FnMut(Span, Span, &str)) {
    match e {
        Expr::Json { schema, body, span } => visit(*span, *body, schema),
        Expr::Alt(items) | Expr::Seq(items) => items.iter().for_each(|i| each_schema(i, visit)),
        Expr::Repeat { inner, .. } => each_schema(inner, visit),
        Expr::Str { .. }
        | Expr::Regex { .. }
        | Expr::Range { .. }
        | Expr::Name { .. }
        | Expr::Special { .. } => {}
    }
}

/// Lowers each `%json` schema (with `options`, until `stop` says to stop) and adds its
/// grammar beside the rules': its terminals, nonterminals (names prefixed by where
/// `%json` is written) and productions, ids shifted past the rules' own, and the
/// production from its [`Embedded::nonterminal`] to its start. The grammars share one
/// lexer with the rules' terminals (DESIGN.md §1). A schema that is not JSON is reported
/// at the grammar's line and column.
fn graft_schemas(
    schemas: &[Embedded],
    (options, stop): (&SchemaOptions, &Interrupt),
    terminals: &mut Vec<Terminal>,
    nonterminals: &mut Vec<Nonterminal>,
    productions: &mut Vec<Production>,
) -> Result<(), GrammarError> {
    for Embedded {
        span,
        body,
        schema,
        nonterminal: at,
    } in schemas
    {
        let embedded = |e: SchemaError| match e.into_stopped() {
            Ok(stopped) => stopped,
            Err(SchemaError::Json { line, col, message }) => GrammarError::EmbeddedSchema {
                span: *span,
                error: Box::new(SchemaError::Json {
                    line: line + body.line as usize - 1,
                    col: if line == 1 {
                        col + body.col as usize - 1
                    } else {
                        col
                    },
                    message,
                }),
            },
            Err(e) => GrammarError::EmbeddedSchema {
                span: *span,
                error: Box::new(e),
            },
        };
        let g = json_schema::compile_until(schema, options, stop)
            .map_err(embedded)?
            .grammar;
        let (t0, n0) = (terminals.len(), nonterminals.len());
        let shift = |s: Symbol| match s {
            Symbol::T(t) => Symbol::T(TerminalId::new(t0 + t.index())),
            Symbol::N(n) => Symbol::N(NonterminalId::new(n0 + n.index())),
        };
        terminals.extend(g.terminals.into_iter().map(|mut t| {
            t.name = format!("{JSON_ITEM}{span}.{}", t.name);
            t.span = *span;
            t
        }));
        nonterminals.extend(g.nonterminals.into_iter().map(|n| Nonterminal {
            name: format!("{JSON_ITEM}{span}.{}", n.name),
            span: *span,
        }));
        productions.extend(g.productions.into_iter().map(|p| Production {
            lhs: NonterminalId::new(n0 + p.lhs.index()),
            rhs: p.rhs.into_iter().map(shift).collect(),
            priority: p.priority,
        }));
        productions.push(Production {
            lhs: *at,
            rhs: vec![shift(Symbol::N(g.start))],
            priority: 0,
        });
    }
    // Grouped by left-hand side again, as `BnfBuilder::finish` leaves them.
    productions.sort_by_key(|p| p.lhs);
    Ok(())
}

/// Compiles Lark grammar text with start rule `start` into the IR, its `%json` schemas
/// lowered with `schema`, stopping with `stop`'s error once it says so.
pub fn lower(
    src: &str,
    start: &str,
    schema: &SchemaOptions,
    stop: &Interrupt,
) -> Result<Grammar, GrammarError> {
    let stmts = parse(src)?;
    // The embedded common grammar is part of the binary and known to parse.
    let common_stmts = parse(COMMON).expect("common.lark parses");
    let common_terms = collect_defs(&common_stmts)?;
    let defs = collect_defs(&stmts)?;

    let mut lw = Lowerer {
        main_terms: HashMap::new(),
        common_terms,
        declared: HashMap::new(),
        rules: Vec::new(),
        rule_ids: HashMap::new(),
        terminals: Vec::new(),
        named_ids: HashMap::new(),
        anon_ids: HashMap::new(),
        regex_cache: HashMap::new(),
        visiting: HashSet::new(),
        anon_count: 0,
        schemas: Vec::new(),
    };
    lw.collect(&stmts, &defs)?;
    let Some(&start_id) = lw.rule_ids.get(start) else {
        return Err(GrammarError::NoStart {
            name: start.to_string(),
        });
    };

    lw.ignore(&stmts)?;
    let (nonterminals, productions) = lw.lower_rules(schema, stop)?;
    // Declared `_INDENT` and `_DEDENT` beside an `_NL` terminal: the grammar runs behind
    // Lark's indenter, configured as SynCode's Python setup does (Lark's bracket names).
    let indenter = (lw.declared.contains_key("_INDENT")
        && lw.declared.contains_key("_DEDENT")
        && lw.terminals.iter().any(|t| t.name == "_NL"))
    .then(|| IndenterSpec::named("_NL", "_INDENT", "_DEDENT"));
    let mut declared: Vec<(String, Span)> = lw.declared.into_iter().collect();
    declared.sort_by(|a, b| a.0.cmp(&b.0));
    let g = Grammar {
        terminals: lw.terminals,
        nonterminals,
        productions,
        start: start_id,
        indenter,
        declared,
        longest_match: false,
    };
    let mut g = remove_unproductive(prune_unreachable(g))?;
    // Patterns written for Python `re` may assert what maximal munch already decides.
    crate::compile::lexer::build::remove_vacuous_look_around(&mut g)?;
    check_acyclic(&g)?;
    check_no_hidden_left_recursion(&g)?;
    // Lowering only produces in-range ids and at least one production per rule.
    debug_assert_eq!(g.validate(), Ok(()));
    Ok(g)
}

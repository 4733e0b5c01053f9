//! Lark grammar text → statements (the syntax tree before names are resolved).

use super::token::{tokenize, Tok, Token};
use crate::compile::error::{GrammarError, Span};

/// An expression in a rule or terminal body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Alternatives.
    Alt(Vec<Expr>),
    /// Concatenation (empty = ε).
    Seq(Vec<Expr>),
    /// `inner` repeated `min..=max` times.
    Repeat {
        inner: Box<Expr>,
        min: u32,
        max: Option<u32>,
    },
    /// A string literal; `ci` is the `i` flag.
    Str { value: String, ci: bool, span: Span },
    /// A regex literal and its flags.
    Regex {
        pattern: String,
        flags: String,
        span: Span,
    },
    /// A character range `"a".."z"`.
    Range { from: char, to: char, span: Span },
    /// A reference to a rule or terminal (modifiers stripped).
    Name { name: String, span: Span },
    /// A special token, `<|name|>` or `<[id]>` (see `frontend::special`); rules only.
    Special { name: String, span: Span },
    /// `%json { … }`: the documents of a JSON Schema (its text, and where its `{` is);
    /// rules only.
    Json {
        schema: String,
        body: Span,
        span: Span,
    },
}

/// A rule or terminal definition.
#[derive(Debug, Clone)]
pub struct Def {
    /// Name without `!`/`?` modifiers.
    pub name: String,
    /// Whether it is a terminal (uppercase name).
    pub is_term: bool,
    /// Declared priority (`name.N`).
    pub priority: Option<i32>,
    /// The body.
    pub body: Expr,
    /// Where the definition starts.
    pub span: Span,
}

/// One statement of a Lark grammar.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `name: body` / `NAME: body`.
    Def(Def),
    /// `%ignore body`.
    Ignore { body: Expr, span: Span },
    /// `%import module.NAME [-> ALIAS]` or `%import module (A, B)`.
    Import {
        module: Vec<String>,
        names: Vec<(String, String, Span)>,
        span: Span,
    },
    /// `%declare A B`.
    Declare { names: Vec<(String, Span)> },
}

/// Deepest nesting of groups the parser accepts; bounds recursion (and stack use) here
/// and in every later pass that walks the expression tree.
pub const MAX_NESTING: usize = 200;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
}

/// Strips Lark's tree-shaping modifiers (`!`, `?`) from a rule name.
pub fn bare_name(s: &str) -> &str {
    s.trim_start_matches(['!', '?'])
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }
    fn span(&self) -> Span {
        self.toks[self.pos].span
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }
    fn err<T>(&self, message: impl Into<String>) -> Result<T, GrammarError> {
        Err(GrammarError::Syntax {
            span: self.span(),
            message: message.into(),
        })
    }
    fn describe(t: &Tok) -> String {
        match t {
            Tok::Rule(s) | Tok::Term(s) => format!("name `{s}`"),
            Tok::Str(s, _) => format!("string {s:?}"),
            Tok::Regex(s, _) => format!("regex /{s}/"),
            Tok::Number(n) => format!("number {n}"),
            Tok::Directive(d) => format!("`%{d}`"),
            Tok::Newline => "end of line".into(),
            Tok::Eof => "end of input".into(),
            other => format!("`{other:?}`"),
        }
    }
    fn expect_end(&mut self) -> Result<(), GrammarError> {
        match self.peek() {
            Tok::Newline => {
                self.bump();
                Ok(())
            }
            Tok::Eof => Ok(()),
            t => {
                let d = Self::describe(t);
                self.err(format!("expected end of line, found {d}"))
            }
        }
    }

    fn statements(&mut self) -> Result<Vec<Stmt>, GrammarError> {
        let mut out = Vec::new();
        loop {
            match self.peek().clone() {
                Tok::Eof => return Ok(out),
                Tok::Newline => {
                    self.bump();
                }
                Tok::Directive(d) => out.push(self.directive(&d)?),
                Tok::Rule(_) | Tok::Term(_) => out.push(self.definition()?),
                t => {
                    return self.err(format!(
                        "expected a definition, found {}",
                        Self::describe(&t)
                    ))
                }
            }
        }
    }

    fn definition(&mut self) -> Result<Stmt, GrammarError> {
        let head = self.bump();
        let (raw, is_term) = match &head.tok {
            Tok::Rule(s) => (s.clone(), false),
            Tok::Term(s) => (s.clone(), true),
            _ => unreachable!("caller checked for a name"),
        };
        let mut priority = None;
        if *self.peek() == Tok::Dot {
            self.bump();
            match self.bump().tok {
                Tok::Number(n) => {
                    priority = Some(i32::try_from(n).map_err(|_| GrammarError::Syntax {
                        span: head.span,
                        message: "priority out of range".into(),
                    })?)
                }
                _ => return self.err("expected a priority number after `.`"),
            }
        }
        if *self.peek() == Tok::LBrace {
            return Err(GrammarError::Unsupported {
                span: head.span,
                construct: format!("{raw}{{…}}"),
                reason: "rule templates are not supported; write the rule out".into(),
            });
        }
        if *self.peek() != Tok::Colon {
            let d = Self::describe(self.peek());
            return self.err(format!("expected `:` after `{raw}`, found {d}"));
        }
        self.bump();
        let body = self.expansions()?;
        self.expect_end()?;
        Ok(Stmt::Def(Def {
            name: bare_name(&raw).to_string(),
            is_term,
            priority,
            body,
            span: head.span,
        }))
    }

    fn directive(&mut self, d: &str) -> Result<Stmt, GrammarError> {
        let span = self.span();
        self.bump();
        match d {
            "ignore" => {
                let body = self.expansions()?;
                self.expect_end()?;
                Ok(Stmt::Ignore { body, span })
            }
            "declare" => {
                let mut names = Vec::new();
                while let Tok::Term(n) | Tok::Rule(n) = self.peek().clone() {
                    names.push((n, self.span()));
                    self.bump();
                }
                if names.is_empty() {
                    return self.err("expected names after %declare");
                }
                self.expect_end()?;
                Ok(Stmt::Declare { names })
            }
            "import" => self.import(span),
            other => Err(GrammarError::Unsupported {
                span,
                construct: format!("%{other}"),
                reason: match other {
                    "override" | "extend" => {
                        "grammar composition is not supported; edit the definition instead".into()
                    }
                    _ => "unknown directive".into(),
                },
            }),
        }
    }

    fn import(&mut self, span: Span) -> Result<Stmt, GrammarError> {
        let mut module = Vec::new();
        if *self.peek() == Tok::Dot {
            return Err(GrammarError::Unsupported {
                span,
                construct: "%import .relative".into(),
                reason: "only the built-in `common` module can be imported".into(),
            });
        }
        loop {
            match self.peek().clone() {
                Tok::Rule(n) | Tok::Term(n) => {
                    module.push(n);
                    self.bump();
                }
                _ => return self.err("expected a module path after %import"),
            }
            if *self.peek() == Tok::Dot {
                self.bump();
            } else {
                break;
            }
        }
        let mut names = Vec::new();
        if *self.peek() == Tok::LParen {
            self.bump();
            loop {
                let s = self.span();
                match self.bump().tok {
                    Tok::Rule(n) | Tok::Term(n) => names.push((n.clone(), n, s)),
                    _ => return self.err("expected a name in the import list"),
                }
                match self.bump().tok {
                    Tok::Comma => continue,
                    Tok::RParen => break,
                    _ => return self.err("expected `,` or `)` in the import list"),
                }
            }
        } else {
            if module.len() < 2 {
                return self.err("expected `%import module.NAME` or `%import module (NAMES)`");
            }
            // Popping from a path of length ≥ 2 always succeeds.
            let name = module.pop().expect("path has two parts");
            let mut alias = name.clone();
            if *self.peek() == Tok::Arrow {
                self.bump();
                match self.bump().tok {
                    Tok::Rule(n) | Tok::Term(n) => alias = n,
                    _ => return self.err("expected a name after `->`"),
                }
            }
            names.push((name, alias, span));
        }
        self.expect_end()?;
        Ok(Stmt::Import {
            module,
            names,
            span,
        })
    }

    fn expansions(&mut self) -> Result<Expr, GrammarError> {
        let mut alts = vec![self.alias()?];
        while *self.peek() == Tok::Pipe {
            self.bump();
            alts.push(self.alias()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().expect("one alternative")
        } else {
            Expr::Alt(alts)
        })
    }

    fn alias(&mut self) -> Result<Expr, GrammarError> {
        let e = self.expansion()?;
        if *self.peek() == Tok::Arrow {
            self.bump();
            match self.bump().tok {
                // Aliases only rename tree nodes; the language is unchanged.
                Tok::Rule(_) | Tok::Term(_) => {}
                _ => return self.err("expected a name after `->`"),
            }
        }
        Ok(e)
    }

    fn expansion(&mut self) -> Result<Expr, GrammarError> {
        let mut items = Vec::new();
        loop {
            match self.peek() {
                Tok::Pipe | Tok::RParen | Tok::RBrack | Tok::Newline | Tok::Eof | Tok::Arrow => {
                    break
                }
                _ => items.push(self.expr()?),
            }
        }
        Ok(if items.len() == 1 {
            items.pop().expect("one item")
        } else {
            Expr::Seq(items)
        })
    }

    fn count(&mut self) -> Result<u32, GrammarError> {
        match self.bump().tok {
            Tok::Number(n) if n >= 0 => u32::try_from(n).or_else(|_| self.err("count too large")),
            _ => self.err("expected a non-negative count"),
        }
    }

    fn expr(&mut self) -> Result<Expr, GrammarError> {
        let atom = self.atom()?;
        let (min, max) = match self.peek() {
            Tok::Question => (0, Some(1)),
            Tok::Star => (0, None),
            Tok::Plus => (1, None),
            Tok::Tilde => {
                let tilde = self.span();
                self.bump();
                let lo = self.count()?;
                let hi = if *self.peek() == Tok::DotDot {
                    self.bump();
                    self.count()?
                } else {
                    lo
                };
                if hi < lo {
                    return Err(GrammarError::Syntax {
                        span: tilde,
                        message: format!("repetition range {lo}..{hi} is empty"),
                    });
                }
                return Ok(Expr::Repeat {
                    inner: Box::new(atom),
                    min: lo,
                    max: Some(hi),
                });
            }
            _ => return Ok(atom),
        };
        self.bump();
        Ok(Expr::Repeat {
            inner: Box::new(atom),
            min,
            max,
        })
    }

    fn atom(&mut self) -> Result<Expr, GrammarError> {
        let t = self.bump();
        if matches!(t.tok, Tok::LParen | Tok::LBrack) {
            self.depth += 1;
            if self.depth > MAX_NESTING {
                return Err(GrammarError::TooLarge {
                    span: t.span,
                    what: "nesting of groups".into(),
                    limit: MAX_NESTING,
                });
            }
        }
        self.atom_inner(t)
    }

    fn atom_inner(&mut self, t: Token) -> Result<Expr, GrammarError> {
        match t.tok {
            Tok::LParen => {
                let e = self.expansions()?;
                if self.bump().tok != Tok::RParen {
                    return Err(GrammarError::Syntax {
                        span: t.span,
                        message: "unclosed `(`".into(),
                    });
                }
                self.depth -= 1;
                Ok(e)
            }
            Tok::LBrack => {
                let e = self.expansions()?;
                if self.bump().tok != Tok::RBrack {
                    return Err(GrammarError::Syntax {
                        span: t.span,
                        message: "unclosed `[`".into(),
                    });
                }
                self.depth -= 1;
                Ok(Expr::Repeat {
                    inner: Box::new(e),
                    min: 0,
                    max: Some(1),
                })
            }
            Tok::Str(value, ci) => {
                if *self.peek() == Tok::DotDot {
                    self.bump();
                    let Tok::Str(to, _) = self.bump().tok else {
                        return self.err("expected a string after `..`");
                    };
                    let one = |s: &str| {
                        let mut it = s.chars();
                        match (it.next(), it.next()) {
                            (Some(c), None) => Some(c),
                            _ => None,
                        }
                    };
                    let (Some(a), Some(b)) = (one(&value), one(&to)) else {
                        return Err(GrammarError::Syntax {
                            span: t.span,
                            message: "a range needs one-character strings".into(),
                        });
                    };
                    if b < a {
                        return Err(GrammarError::Syntax {
                            span: t.span,
                            message: format!("empty range {a:?}..{b:?}"),
                        });
                    }
                    return Ok(Expr::Range {
                        from: a,
                        to: b,
                        span: t.span,
                    });
                }
                Ok(Expr::Str {
                    value,
                    ci,
                    span: t.span,
                })
            }
            Tok::Regex(pattern, flags) => Ok(Expr::Regex {
                pattern,
                flags,
                span: t.span,
            }),
            Tok::Special(name) => Ok(Expr::Special { name, span: t.span }),
            Tok::Json(schema, body) => Ok(Expr::Json {
                schema,
                body,
                span: t.span,
            }),
            Tok::Rule(n) | Tok::Term(n) => {
                if *self.peek() == Tok::LBrace {
                    return Err(GrammarError::Unsupported {
                        span: t.span,
                        construct: format!("{n}{{…}}"),
                        reason: "rule templates are not supported".into(),
                    });
                }
                Ok(Expr::Name {
                    name: bare_name(&n).to_string(),
                    span: t.span,
                })
            }
            other => Err(GrammarError::Syntax {
                span: t.span,
                message: format!("unexpected {}", Self::describe(&other)),
            }),
        }
    }
}

/// Parses Lark grammar text into statements.
pub fn parse(src: &str) -> Result<Vec<Stmt>, GrammarError> {
    let toks = tokenize(src)?;
    Parser {
        toks,
        pos: 0,
        depth: 0,
    }
    .statements()
}

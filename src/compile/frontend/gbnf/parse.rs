//! GBNF text → rules (syntax tree), following llama.cpp's grammar parser: `name ::= …`,
//! `"literals"` and `[classes]` with escapes, `.`, groups, `* + ?`, `{m}`, `{m,}`,
//! `{m,n}`, `#` comments. A rule ends at a newline outside parentheses unless the line
//! ends with `|`.

use crate::compile::error::{GrammarError, Span};

/// A set of Unicode scalar values as sorted, disjoint, inclusive ranges.
pub type CharSet = Vec<(u32, u32)>;

/// A GBNF expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Alt(Vec<Expr>),
    Seq(Vec<Expr>),
    Repeat {
        inner: Box<Expr>,
        min: u32,
        max: Option<u32>,
    },
    /// One character from the set.
    Chars(CharSet),
    /// A rule reference.
    Ref {
        name: String,
        span: Span,
    },
    /// A special token, `<|name|>` or `<[id]>` (see `frontend::special`).
    Special {
        name: String,
        span: Span,
    },
}

/// `name ::= body`.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub body: Expr,
    pub span: Span,
}

/// Largest count accepted in `{m,n}` before lowering applies its own limit.
const MAX_COUNT: u32 = 1_000_000;

/// Deepest nesting of parentheses accepted; bounds recursion here and in later passes.
pub const MAX_NESTING: usize = 200;

struct Parser {
    depth: usize,
    chars: Vec<char>,
    pos: usize,
    line: u32,
    col: u32,
}

/// Normalizes a set: sorts and merges ranges.
pub fn normalize(mut set: CharSet) -> CharSet {
    set.sort();
    let mut out: CharSet = Vec::new();
    for (a, b) in set {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// All scalar values minus `set` (surrogates are never characters).
pub fn complement(set: &CharSet) -> CharSet {
    let mut out = Vec::new();
    let mut next = 0u32;
    for &(a, b) in set {
        if a > next {
            out.push((next, a - 1));
        }
        next = b + 1;
    }
    if next <= 0x10FFFF {
        out.push((next, 0x10FFFF));
    }
    remove_surrogates(out)
}

fn remove_surrogates(set: CharSet) -> CharSet {
    let mut out = Vec::new();
    for (a, b) in set {
        if b < 0xD800 || a > 0xDFFF {
            out.push((a, b));
            continue;
        }
        if a < 0xD800 {
            out.push((a, 0xD7FF));
        }
        if b > 0xDFFF {
            out.push((0xE000, b));
        }
    }
    out
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.pos + k).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn span(&self) -> Span {
        Span {
            line: self.line,
            col: self.col,
        }
    }
    fn err<T>(&self, message: impl Into<String>) -> Result<T, GrammarError> {
        Err(GrammarError::Syntax {
            span: self.span(),
            message: message.into(),
        })
    }

    fn space(&mut self, newline_ok: bool) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => {
                    self.bump();
                }
                '#' => {
                    while let Some(c) = self.peek() {
                        if c == '\n' || c == '\r' {
                            break;
                        }
                        self.bump();
                    }
                }
                '\r' | '\n' if newline_ok => {
                    self.bump();
                }
                _ => return,
            }
        }
    }

    fn name(&mut self) -> Result<String, GrammarError> {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|c| is_word_char(*c)) {
            s.push(c);
            self.bump();
        }
        if s.is_empty() {
            return self.err("expected a rule name");
        }
        Ok(s)
    }

    fn hex(&mut self, n: usize, start: Span) -> Result<u32, GrammarError> {
        let mut v = 0u32;
        for _ in 0..n {
            match self.bump().and_then(|c| c.to_digit(16)) {
                Some(d) => v = v * 16 + d,
                None => {
                    return Err(GrammarError::Syntax {
                        span: start,
                        message: format!("expected {n} hex digits in escape"),
                    })
                }
            }
        }
        Ok(v)
    }

    /// One (possibly escaped) character of a literal or class.
    fn char(&mut self) -> Result<u32, GrammarError> {
        let start = self.span();
        match self.bump() {
            None => self.err("unexpected end of input"),
            Some('\\') => {
                let e = self.bump();
                let v = match e {
                    Some('x') => self.hex(2, start)?,
                    Some('u') => self.hex(4, start)?,
                    Some('U') => self.hex(8, start)?,
                    Some('t') => 9,
                    Some('r') => 13,
                    Some('n') => 10,
                    Some('\\') => '\\' as u32,
                    Some('"') => '"' as u32,
                    Some('[') => '[' as u32,
                    Some(']') => ']' as u32,
                    Some('-') => '-' as u32,
                    Some('^') => '^' as u32,
                    Some(other) => {
                        return Err(GrammarError::Syntax {
                            span: start,
                            message: format!("unknown escape `\\{other}`"),
                        })
                    }
                    None => return self.err("unexpected end of input after `\\`"),
                };
                if v > 0x10FFFF || (0xD800..=0xDFFF).contains(&v) {
                    return Err(GrammarError::Syntax {
                        span: start,
                        message: format!("escape U+{v:X} is not a character"),
                    });
                }
                Ok(v)
            }
            Some(c) => Ok(c as u32),
        }
    }

    fn alternates(&mut self, nested: bool) -> Result<Expr, GrammarError> {
        let mut alts = vec![self.sequence(nested)?];
        while self.peek() == Some('|') {
            self.bump();
            self.space(true);
            alts.push(self.sequence(nested)?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().expect("one alternative")
        } else {
            Expr::Alt(alts)
        })
    }

    fn count(&mut self) -> Result<u32, GrammarError> {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|c| c.is_ascii_digit()) {
            s.push(c);
            self.bump();
        }
        match s.parse::<u32>() {
            Ok(n) if n <= MAX_COUNT => Ok(n),
            Ok(_) | Err(_) if !s.is_empty() => self.err(format!("count `{s}` is too large")),
            _ => self.err("expected a number"),
        }
    }

    fn sequence(&mut self, nested: bool) -> Result<Expr, GrammarError> {
        let mut items: Vec<Expr> = Vec::new();
        loop {
            let span = self.span();
            let item = match self.peek() {
                Some('"') => self.string_literal(span)?,
                Some('[') => self.char_class(span)?,
                Some('.') => {
                    self.bump();
                    Expr::Chars(complement(&Vec::new()))
                }
                Some('(') => self.group(span)?,
                Some('<') => Expr::Special {
                    name: crate::compile::frontend::special::read(|| self.bump(), span)?,
                    span,
                },
                Some('!') => {
                    return Err(GrammarError::Unsupported {
                        span,
                        construct: "!<token>".into(),
                        reason: "negated token references (any token but one) are not one \
                                 token's text; they are not supported"
                            .into(),
                    })
                }
                Some(c) if is_word_char(c) => {
                    let name = self.name()?;
                    Expr::Ref { name, span }
                }
                _ => break,
            };
            self.space(nested);
            let item = self.postfix(item, nested, span)?;
            if matches!(self.peek(), Some('*' | '+' | '?' | '{')) {
                return self.err("repetition operator applied twice; use parentheses");
            }
            items.push(item);
        }
        Ok(if items.len() == 1 {
            items.pop().expect("one item")
        } else {
            Expr::Seq(items)
        })
    }

    /// A `"…"` literal (the opening quote is next), as a sequence of characters.
    fn string_literal(&mut self, span: Span) -> Result<Expr, GrammarError> {
        self.bump();
        let mut seq = Vec::new();
        loop {
            match self.peek() {
                None | Some('\n') | Some('\r') => {
                    return Err(GrammarError::Syntax {
                        span,
                        message: "unterminated string".into(),
                    })
                }
                Some('"') => {
                    self.bump();
                    break;
                }
                _ => {
                    let c = self.char()?;
                    seq.push(Expr::Chars(vec![(c, c)]));
                }
            }
        }
        Ok(Expr::Seq(seq))
    }

    /// A `[…]` class (the bracket is next), negated by a leading `^`.
    fn char_class(&mut self, span: Span) -> Result<Expr, GrammarError> {
        self.bump();
        let negated = if self.peek() == Some('^') {
            self.bump();
            true
        } else {
            false
        };
        let mut set = Vec::new();
        loop {
            match self.peek() {
                None | Some('\n') | Some('\r') => {
                    return Err(GrammarError::Syntax {
                        span,
                        message: "unterminated character class".into(),
                    })
                }
                Some(']') => {
                    self.bump();
                    break;
                }
                _ => {
                    let a = self.char()?;
                    if self.peek() == Some('-') && self.peek_at(1) != Some(']') {
                        self.bump();
                        let b = self.char()?;
                        if b < a {
                            return Err(GrammarError::Syntax {
                                span,
                                message: "character range is out of order".into(),
                            });
                        }
                        set.push((a, b));
                    } else {
                        set.push((a, a));
                    }
                }
            }
        }
        let set = remove_surrogates(normalize(set));
        let set = if negated { complement(&set) } else { set };
        if set.is_empty() {
            return Err(GrammarError::Syntax {
                span,
                message: "character class matches nothing".into(),
            });
        }
        Ok(Expr::Chars(set))
    }

    /// A parenthesised group (the `(` is next), at most [`MAX_NESTING`] deep.
    fn group(&mut self, span: Span) -> Result<Expr, GrammarError> {
        self.bump();
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(GrammarError::TooLarge {
                span,
                what: "nesting of groups".into(),
                limit: MAX_NESTING,
            });
        }
        self.space(true);
        let e = self.alternates(true)?;
        self.depth -= 1;
        if self.peek() != Some(')') {
            return Err(GrammarError::Syntax {
                span,
                message: "unclosed `(`".into(),
            });
        }
        self.bump();
        Ok(e)
    }

    /// `item` with the repetition operator that follows it, if any (`*`, `+`, `?`,
    /// `{m}`, `{m,}`, `{m,n}`).
    fn postfix(&mut self, item: Expr, nested: bool, span: Span) -> Result<Expr, GrammarError> {
        Ok(match self.peek() {
            Some('*') | Some('+') | Some('?') => {
                // The match arm guarantees a character.
                let op = self.bump().expect("peeked");
                let (min, max) = match op {
                    '*' => (0, None),
                    '+' => (1, None),
                    _ => (0, Some(1)),
                };
                self.space(nested);
                Expr::Repeat {
                    inner: Box::new(item),
                    min,
                    max,
                }
            }
            Some('{') => {
                self.bump();
                self.space(true);
                let min = self.count()?;
                self.space(true);
                let max = if self.peek() == Some(',') {
                    self.bump();
                    self.space(true);
                    if self.peek() == Some('}') {
                        None
                    } else {
                        Some(self.count()?)
                    }
                } else {
                    Some(min)
                };
                self.space(true);
                if self.peek() != Some('}') {
                    return self.err("expected `}` after repetition count");
                }
                self.bump();
                if let Some(m) = max {
                    if m < min {
                        return Err(GrammarError::Syntax {
                            span,
                            message: format!("repetition {{{min},{m}}} is empty"),
                        });
                    }
                }
                self.space(nested);
                Expr::Repeat {
                    inner: Box::new(item),
                    min,
                    max,
                }
            }
            _ => item,
        })
    }

    fn rules(&mut self) -> Result<Vec<Rule>, GrammarError> {
        let mut out = Vec::new();
        self.space(true);
        while self.peek().is_some() {
            let span = self.span();
            let name = self.name()?;
            self.space(false);
            if !(self.peek() == Some(':')
                && self.peek_at(1) == Some(':')
                && self.peek_at(2) == Some('='))
            {
                return self.err(format!("expected `::=` after rule name `{name}`"));
            }
            self.bump();
            self.bump();
            self.bump();
            self.space(true);
            let body = self.alternates(false)?;
            match self.peek() {
                None | Some('\n') | Some('\r') => {}
                Some(c) => return self.err(format!("expected end of line, found {c:?}")),
            }
            self.space(true);
            out.push(Rule { name, body, span });
        }
        Ok(out)
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Parses GBNF text into rules.
pub fn parse(src: &str) -> Result<Vec<Rule>, GrammarError> {
    Parser {
        depth: 0,
        chars: src.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
    }
    .rules()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_complement() {
        let r = parse("root ::= [^a-c\\n] \"x\"{2,3}\n").unwrap();
        let Expr::Seq(items) = &r[0].body else {
            panic!()
        };
        let Expr::Chars(set) = &items[0] else {
            panic!()
        };
        assert_eq!(set[0], (0, 9));
        assert_eq!(set[1], (11, 0x60));
        assert_eq!(set[2], (0x64, 0xD7FF));
        assert_eq!(set[3], (0xE000, 0x10FFFF));
    }

    #[test]
    fn multiline_rules() {
        let r = parse("root ::=\n  \"a\" (\n \"b\"\n | \"c\" ) |\n  \"d\"\nx ::= \"e\" # hi\n")
            .unwrap();
        assert_eq!(r.len(), 2);
        assert!(matches!(r[0].body, Expr::Alt(ref v) if v.len() == 2));
    }
}

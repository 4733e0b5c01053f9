//! The tokenizer for Lark grammar text: names, strings, regexes, operators, directives and
//! statement-ending newlines, each with its line:column.
//!
//! Newlines end statements, except inside brackets and before a line that continues the
//! previous one with `|` (Lark's `_NL_OR`).

use crate::compile::error::{GrammarError, Span};

/// One token of Lark grammar text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// A rule name (lowercase); modifiers `!` `?` are kept in the text.
    Rule(String),
    /// A terminal name (uppercase, may start with `_`).
    Term(String),
    /// A string literal after escape processing, and whether it has the `i` flag.
    Str(String, bool),
    /// A regex literal (between slashes, `\/` unescaped) and its flags.
    Regex(String, String),
    /// A special token, `<|name|>` or `<[id]>` as written (see `frontend::special`).
    Special(String),
    /// An integer (priorities and repetition counts).
    Number(i64),
    /// `%ignore`, `%import`, … (the word after `%`).
    Directive(String),
    /// `%json { … }`: the JSON Schema's text, from its `{` to the matching `}`, and where
    /// that `{` is.
    Json(String, Span),
    Colon,
    Pipe,
    LParen,
    RParen,
    LBrack,
    RBrack,
    LBrace,
    RBrace,
    Question,
    Star,
    Plus,
    Tilde,
    Dot,
    DotDot,
    Arrow,
    Comma,
    Newline,
    Eof,
}

/// A token and where it starts.
#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    line: u32,
    col: u32,
    depth: i32,
    _src: &'a str,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.pos + k).copied()
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
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
    fn err(&self, span: Span, message: impl Into<String>) -> GrammarError {
        GrammarError::Syntax {
            span,
            message: message.into(),
        }
    }

    /// The JSON object after `%json` (blanks and newlines before it skipped), as written:
    /// from its `{` to the `}` that closes it, braces inside strings not counted.
    fn json_object(&mut self, span: Span) -> Result<(String, Span), GrammarError> {
        while self.peek().is_some_and(|c| c.is_whitespace()) {
            self.bump();
        }
        if self.peek() != Some('{') {
            return Err(self.err(span, "expected a JSON Schema object `{ … }` after `%json`"));
        }
        let at = Span {
            line: self.line,
            col: self.col,
        };
        let (mut text, mut depth, mut in_string) = (String::new(), 0usize, false);
        while let Some(c) = self.bump() {
            text.push(c);
            match c {
                '\\' if in_string => {
                    if let Some(e) = self.bump() {
                        text.push(e);
                    }
                }
                '"' => in_string = !in_string,
                '{' if !in_string => depth += 1,
                '}' if !in_string => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok((text, at));
                    }
                }
                _ => {}
            }
        }
        Err(self.err(span, "unterminated `%json` schema (no `}` closes its `{`)"))
    }

    /// Skips spaces, tabs, carriage returns and `//` comments on the current line.
    fn skip_inline(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\r' | '\x0c') => {
                    self.bump();
                }
                Some('/') if self.peek_at(1) == Some('/') => self.skip_line(),
                // Lark accepts `#` comments as well as `//`.
                Some('#') => self.skip_line(),
                _ => return,
            }
        }
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.bump();
        }
    }

    /// After a newline: skip blank and comment-only lines; report whether the next
    /// significant character is `|` (a continuation).
    fn skip_blank_lines(&mut self) -> bool {
        loop {
            self.skip_inline();
            if self.peek() == Some('\n') {
                self.bump();
                continue;
            }
            return self.peek() == Some('|');
        }
    }

    fn string(&mut self, start: Span) -> Result<Tok, GrammarError> {
        self.bump(); // opening quote
        let mut out = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(self.err(start, "unterminated string"));
            };
            match c {
                '"' => break,
                '\n' => return Err(self.err(start, "unterminated string (newline inside)")),
                '\\' => {
                    let Some(e) = self.bump() else {
                        return Err(self.err(start, "unterminated string"));
                    };
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        '0' => out.push('\0'),
                        '\\' => out.push('\\'),
                        '"' => out.push('"'),
                        '\'' => out.push('\''),
                        'x' | 'u' | 'U' => {
                            let n = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let mut v = 0u32;
                            for _ in 0..n {
                                let d =
                                    self.bump().and_then(|c| c.to_digit(16)).ok_or_else(|| {
                                        self.err(start, format!("bad \\{e} escape in string"))
                                    })?;
                                v = v * 16 + d;
                            }
                            let ch = char::from_u32(v).ok_or_else(|| {
                                self.err(start, format!("\\{e} escape is not a character"))
                            })?;
                            out.push(ch);
                        }
                        // Python keeps unknown escapes as written.
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        let ci = if self.peek() == Some('i') && !self.peek_at(1).is_some_and(is_name_char) {
            self.bump();
            true
        } else {
            false
        };
        Ok(Tok::Str(out, ci))
    }

    fn regex(&mut self, start: Span) -> Result<Tok, GrammarError> {
        self.bump(); // opening slash
        let mut out = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(self.err(start, "unterminated regular expression"));
            };
            match c {
                '/' => break,
                '\n' => {
                    return Err(self.err(start, "unterminated regular expression (newline inside)"))
                }
                '\\' => match self.bump() {
                    Some('/') => out.push('/'),
                    Some(e) => {
                        out.push('\\');
                        out.push(e);
                    }
                    None => return Err(self.err(start, "unterminated regular expression")),
                },
                c => out.push(c),
            }
        }
        let mut flags = String::new();
        while let Some(c) = self.peek() {
            if "imslux".contains(c) {
                flags.push(c);
                self.bump();
            } else {
                break;
            }
        }
        if self.peek().is_some_and(is_name_char) {
            return Err(self.err(self.span(), "unknown regular expression flag"));
        }
        Ok(Tok::Regex(out, flags))
    }

    fn name(&mut self, start: Span) -> Result<Tok, GrammarError> {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            let modifier = (c == '!' || c == '?') && s.chars().all(|x| x == '!' || x == '?');
            if modifier || is_name_char(c) {
                s.push(c);
                self.bump();
            } else {
                break;
            }
        }
        let bare = s.trim_start_matches(['!', '?']);
        let letters: Vec<char> = bare.chars().filter(|c| c.is_ascii_alphabetic()).collect();
        if letters.is_empty() || bare.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(self.err(start, format!("bad name `{s}`")));
        }
        if letters.iter().all(|c| c.is_ascii_uppercase()) && bare.len() == s.len() {
            Ok(Tok::Term(s))
        } else if letters.iter().all(|c| c.is_ascii_lowercase()) {
            Ok(Tok::Rule(s))
        } else {
            Err(self.err(
                start,
                format!("name `{s}` mixes cases: rules are lowercase, terminals uppercase"),
            ))
        }
    }

    fn number(&mut self, start: Span) -> Result<Tok, GrammarError> {
        let mut s = String::new();
        if self.peek() == Some('-') {
            s.push('-');
            self.bump();
        }
        while let Some(c) = self.peek().filter(|c| c.is_ascii_digit()) {
            s.push(c);
            self.bump();
        }
        s.parse::<i64>()
            .map(Tok::Number)
            .map_err(|_| self.err(start, format!("bad number `{s}`")))
    }

    fn next(&mut self) -> Result<Token, GrammarError> {
        self.skip_inline();
        let span = self.span();
        let Some(c) = self.peek() else {
            return Ok(Token {
                tok: Tok::Eof,
                span,
            });
        };
        let tok = match c {
            '\n' => {
                self.bump();
                let continues = self.skip_blank_lines();
                if self.depth > 0 || continues {
                    return self.next();
                }
                Tok::Newline
            }
            '"' => self.string(span)?,
            '/' => self.regex(span)?,
            '<' => Tok::Special(crate::compile::frontend::special::read(
                || self.bump(),
                span,
            )?),
            '%' => {
                self.bump();
                let mut w = String::new();
                while let Some(c) = self.peek().filter(|c| c.is_ascii_alphabetic()) {
                    w.push(c);
                    self.bump();
                }
                if w.is_empty() {
                    return Err(self.err(span, "expected a directive name after `%`"));
                }
                if w == "json" {
                    let (text, at) = self.json_object(span)?;
                    Tok::Json(text, at)
                } else {
                    Tok::Directive(w)
                }
            }
            '-' if self.peek_at(1) == Some('>') => {
                self.bump();
                self.bump();
                Tok::Arrow
            }
            '-' | '0'..='9' => self.number(span)?,
            '.' if self.peek_at(1) == Some('.') => {
                self.bump();
                self.bump();
                Tok::DotDot
            }
            c if is_name_char(c)
                || c == '!'
                || c == '?' && self.peek_at(1).is_some_and(is_name_char) =>
            {
                self.name(span)?
            }
            _ => {
                self.bump();
                match c {
                    ':' => Tok::Colon,
                    '|' => Tok::Pipe,
                    '(' => {
                        self.depth += 1;
                        Tok::LParen
                    }
                    ')' => {
                        self.depth -= 1;
                        Tok::RParen
                    }
                    '[' => {
                        self.depth += 1;
                        Tok::LBrack
                    }
                    ']' => {
                        self.depth -= 1;
                        Tok::RBrack
                    }
                    '{' => Tok::LBrace,
                    '}' => Tok::RBrace,
                    '?' => Tok::Question,
                    '*' => Tok::Star,
                    '+' => Tok::Plus,
                    '~' => Tok::Tilde,
                    '.' => Tok::Dot,
                    ',' => Tok::Comma,
                    other => return Err(self.err(span, format!("unexpected character {other:?}"))),
                }
            }
        };
        Ok(Token { tok, span })
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits Lark grammar text into tokens, ending with [`Tok::Eof`].
pub fn tokenize(src: &str) -> Result<Vec<Token>, GrammarError> {
    let mut lx = Lexer {
        chars: src.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        depth: 0,
        _src: src,
    };
    let mut out = Vec::new();
    loop {
        let t = lx.next()?;
        let end = t.tok == Tok::Eof;
        out.push(t);
        if end {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn continuation_lines_and_comments() {
        let t = toks("a: B // c\n  | C\n\nd: E\n");
        assert_eq!(
            t,
            vec![
                Tok::Rule("a".into()),
                Tok::Colon,
                Tok::Term("B".into()),
                Tok::Pipe,
                Tok::Term("C".into()),
                Tok::Newline,
                Tok::Rule("d".into()),
                Tok::Colon,
                Tok::Term("E".into()),
                Tok::Newline,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn strings_regexes_priorities() {
        let t = toks(r#"VAR.-1: "a\"b"i /x\/y/is "\\true""#);
        assert_eq!(
            t,
            vec![
                Tok::Term("VAR".into()),
                Tok::Dot,
                Tok::Number(-1),
                Tok::Colon,
                Tok::Str("a\"b".into(), true),
                Tok::Regex("x/y".into(), "is".into()),
                Tok::Str("\\true".into(), false),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn positions() {
        let t = tokenize("a: b\n  c").unwrap();
        assert_eq!(t[4].span, Span { line: 2, col: 3 });
    }
}

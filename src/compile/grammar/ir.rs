//! The grammar IR: what every front end (Lark, GBNF, JSON Schema, regex) lowers
//! into, and what the lexer builder, the LR table builder and the reference oracle read.
//!
//! A grammar is a list of terminals (regular expressions with a priority, some ignored)
//! and a plain BNF over terminals and nonterminals: EBNF operators have already been
//! expanded by `crate::compile::grammar::ebnf`. The grammar may be ambiguous; it need not be LR(k).

use crate::compile::error::{GrammarError, Span};
use crate::ids::{NonterminalId, ProductionId, TerminalId};
pub use crate::lexer::Indenter;

/// How terminals are ranked when one lexeme matches several of them: `user` first (the
/// grammar's declared priority), then a literal string beats a regular expression (so that
/// a keyword `"if"` wins over `NAME` on the lexeme `if`, as in Lark). Equal priorities make
/// the lexeme lexically ambiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Priority {
    /// Declared priority (Lark `NAME.2`); default 0.
    pub user: i32,
    /// Whether the terminal is a single literal string.
    pub literal: bool,
}

/// One terminal of the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminal {
    /// Display name (`NAME`, or the quoted literal for anonymous strings).
    pub name: String,
    /// A `regex-syntax` pattern matching exactly the terminal's lexemes.
    pub regex: String,
    /// Ranking among terminals matching the same lexeme.
    pub priority: Priority,
    /// Ignored terminals are lexed but never handed to the parser.
    pub ignored: bool,
    /// Droppable terminals are handed to the parser where some live parse can shift them
    /// and skipped where none can (SynCode's Go `EOS`; DESIGN.md §1). Never ignored too.
    pub droppable: bool,
    /// Further patterns every lexeme must also match in full: the terminal is the
    /// intersection of `regex` and these (empty for all but JSON Schema's
    /// `pattern` beside a length or a `format`).
    pub also: Vec<String>,
    /// Patterns no lexeme may match in full: the terminal is then also the difference
    /// (empty for all but JSON Schema's `not` of a string language).
    pub except: Vec<String>,
    /// A count on the lexeme (JSON Schema's long string lengths): when set, the terminal's
    /// lexemes are exactly `open · unit{lo,hi} · close`, and `regex` (a display form),
    /// `also` and `except` are not read by the lexer builder.
    pub counted: Option<Counted>,
    /// Divisibility conditions every lexeme must also meet (empty for all but JSON
    /// Schema's `multipleOf` by an integer whose multiples no compact regex spells).
    pub divisibility: Vec<Divisibility>,
    /// The special token this terminal is (`<|tool_call|>`: its name as the tokenizer
    /// spells it, or `<[128010]>` by id until [`Grammar::resolve_special_tokens`] names
    /// it): its one lexeme is `vocab::special_lexeme` of the name, which only that token
    /// produces, and `regex` is a display form. `None` for every other terminal.
    pub special: Option<String>,
    /// The lexer mode it is lexed in and the one the lexeme after it starts in (both 0
    /// in a grammar without modes). See [`LexMode`].
    pub mode: LexMode,
    /// Where it was defined (or first used, for anonymous terminals).
    pub span: Span,
}

impl Terminal {
    /// A terminal matching `regex`, ranked by `priority`, defined at `span`: neither
    /// ignored nor droppable, with no further conditions, lexed in mode 0.
    pub fn new(name: String, regex: String, priority: Priority, span: Span) -> Self {
        Self {
            name,
            regex,
            priority,
            ignored: false,
            droppable: false,
            also: Vec::new(),
            except: Vec::new(),
            counted: None,
            divisibility: Vec::new(),
            special: None,
            mode: LexMode::default(),
            span,
        }
    }
}

/// Lexer modes: terminal-determined contextual lexing. A lexeme is lexed, by DESIGN.md
/// §1's maximal munch, among the terminals of one mode only; the lexeme after it is lexed
/// in the mode its terminal names (`then`). The input starts in mode 0. Terminals a lexeme
/// may be emitted as (equal top priority) must agree on `then`, so the lexer stays
/// deterministic. Structural tags use this to lex free text and the tool-call bodies
/// inside it with different terminals; contextual lexing (`lexer::contextual`) makes a
/// mode of each set of terminals that can follow a lexeme.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LexMode {
    /// The modes whose lexemes this terminal competes for, ascending (empty: never
    /// lexed).
    pub lexed_in: Vec<u32>,
    /// The mode the next lexeme is lexed in.
    pub then: u32,
}

impl Default for LexMode {
    /// Lexed in mode 0, followed by mode 0: a grammar without modes.
    fn default() -> Self {
        Self::only(0, 0)
    }
}

impl LexMode {
    /// Lexed in mode `lexed_in` alone, the next lexeme in `then`.
    pub fn only(lexed_in: u32, then: u32) -> Self {
        Self {
            lexed_in: vec![lexed_in],
            then,
        }
    }

    /// Whether the terminal competes in mode `m`.
    pub fn in_mode(&self, m: u32) -> bool {
        self.lexed_in.binary_search(&m).is_ok()
    }

    /// One more than the highest mode named (1 in a grammar without modes).
    pub fn modes_named(&self) -> u32 {
        self.lexed_in
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .max(self.then)
            + 1
    }
}

/// A condition on a terminal's lexemes: each is a JSON integer `-?(0|[1-9][0-9]*)` whose
/// value is (`multiple`) or is not a multiple of `divisor`. The lexer builder runs it as
/// a remainder automaton of `divisor` states, which no regex spells compactly (the one
/// for 11 has millions of characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Divisibility {
    /// The divisor, at least 1 and at most [`MAX_DIVISOR`].
    pub divisor: u32,
    /// Multiples when true, the other integers when false.
    pub multiple: bool,
}

/// Largest [`Divisibility::divisor`]: one lexer state per remainder.
pub const MAX_DIVISOR: u32 = 10_000;

/// A terminal whose lexemes are an opening byte, between `lo` and `hi` *units*, and a
/// closing byte: a JSON string of bounded length, where a unit is one character as the
/// literal spells it (raw, short escape, `\uXXXX` or a surrogate pair).
///
/// The lexer counts units instead of unrolling `unit{lo,hi}` into states, so bounds in
/// the hundreds of thousands cost about as much as a few hundred. Invariants the lexer
/// builder checks: `unit` is prefix-free and never empty, no unit starts with `close`,
/// and every counted terminal of a grammar has the same `open`, `unit` and `close` (so
/// the count is a property of the lexeme, shared by all of them).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Counted {
    /// The byte that opens the lexeme (`"`).
    pub open: u8,
    /// A `regex-syntax` pattern matching exactly one unit.
    pub unit: String,
    /// The byte that closes the lexeme (`"`).
    pub close: u8,
    /// Fewest units.
    pub lo: u32,
    /// Most units (`None`: unbounded).
    pub hi: Option<u32>,
}

/// A grammar symbol on the right-hand side of a production.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Symbol {
    /// A terminal.
    T(TerminalId),
    /// A nonterminal.
    N(NonterminalId),
}

/// One nonterminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nonterminal {
    /// Display name (rule name, or a generated `rule__kindN` for expanded EBNF).
    pub name: String,
    /// Where it was defined (generated ones take their parent's span).
    pub span: Span,
}

/// One production `lhs → rhs` (an empty `rhs` derives ε).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Production {
    /// The nonterminal being defined.
    pub lhs: NonterminalId,
    /// The right-hand side.
    pub rhs: Vec<Symbol>,
    /// Declared rule priority. Kept for diagnostics; it does not change the language, and
    /// a GLR recognizer accepts exactly the language, so recognition ignores it.
    pub priority: i32,
}

/// A grammar in IR form.
///
/// Invariants (checked by [`Grammar::validate`]): every id is in range, every nonterminal
/// has at least one production, and `start` is a nonterminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grammar {
    /// Terminals, indexed by [`TerminalId`].
    pub terminals: Vec<Terminal>,
    /// Nonterminals, indexed by [`NonterminalId`].
    pub nonterminals: Vec<Nonterminal>,
    /// Productions, indexed by [`ProductionId`], grouped by `lhs` in definition order.
    pub productions: Vec<Production>,
    /// The start symbol.
    pub start: NonterminalId,
    /// Lark's indentation post-lexer, when the grammar runs behind one (see
    /// [`IndenterSpec`]).
    pub indenter: Option<IndenterSpec>,
    /// Terminals declared without a pattern (`%declare`): only a post-lexer makes them.
    /// Each one a rule uses must be the indenter's `_INDENT` or `_DEDENT`
    /// ([`Grammar::post_lexer`]).
    pub declared: Vec<(String, Span)>,
    /// Whether lexemes are cut by longest match, falling back to the last complete match
    /// when a lexeme dies incomplete (flex's rule, and in effect Lark's), instead of
    /// DESIGN.md §1's 1-lookahead maximal munch. See `lexer::shadow`.
    pub longest_match: bool,
}

/// Lark's `Indenter` post-lexer as SynCode's Python setup configures it, by terminal
/// names (pruning renumbers terminals; [`Grammar::post_lexer`] resolves them). After a
/// `nl` lexeme outside brackets, the spaces and tabs after its last newline (a tab counts
/// `tab_len`) are compared with a stack of levels, starting at 0: deeper pushes one
/// `indent`, shallower pops one `dedent` per level and must land on a level on the
/// stack. Inside `open` … `close` brackets an `nl` lexeme is dropped. At the end of input
/// every open level is closed with a `dedent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndenterSpec {
    pub nl: String,
    pub indent: String,
    pub dedent: String,
    pub open: Vec<String>,
    pub close: Vec<String>,
    pub tab_len: u32,
}

impl IndenterSpec {
    /// Lark's `PythonIndenter` with these newline, indent and dedent terminals: Lark's
    /// bracket names, Lark's tab width.
    pub fn named(nl: &str, indent: &str, dedent: &str) -> Self {
        let names = |ns: [&str; 3]| ns.map(String::from).to_vec();
        Self {
            nl: nl.into(),
            indent: indent.into(),
            dedent: dedent.into(),
            open: names(["LPAR", "LSQB", "LBRACE"]),
            close: names(["RPAR", "RSQB", "RBRACE"]),
            tab_len: DEFAULT_TAB_LEN,
        }
    }
}

/// Lark's default tab width for its `Indenter`.
pub const DEFAULT_TAB_LEN: u32 = 8;

/// Lark's names of the bracket terminals its `PythonIndenter` counts, with the literal
/// each one is (stackmask names anonymous literals by their quoted text).
pub const LARK_BRACKETS: [(&str, &str, bool); 6] = [
    ("LPAR", "\"(\"", true),
    ("LSQB", "\"[\"", true),
    ("LBRACE", "\"{\"", true),
    ("RPAR", "\")\"", false),
    ("RSQB", "\"]\"", false),
    ("RBRACE", "\"}\"", false),
];

impl Grammar {
    /// Marks the terminals named in `names` droppable (see [`Terminal::droppable`]).
    /// A name no terminal has, or an ignored terminal, is an error, and then nothing
    /// changes.
    pub fn set_droppable(&mut self, names: &[String]) -> Result<(), GrammarError> {
        let mut ids = Vec::with_capacity(names.len());
        for name in names {
            let Some(i) = self.terminals.iter().position(|t| &t.name == name) else {
                return Err(GrammarError::Undefined {
                    span: Span::default(),
                    kind: "terminal",
                    name: name.clone(),
                });
            };
            if self.terminals[i].ignored {
                return Err(GrammarError::Unsupported {
                    span: self.terminals[i].span,
                    construct: format!("droppable terminal `{name}`"),
                    reason: "it is ignored (%ignore): it never reaches the parser".into(),
                });
            }
            ids.push(i);
        }
        for i in ids {
            self.terminals[i].droppable = true;
        }
        Ok(())
    }

    /// Runs the grammar behind Lark's indenter with `spec` (replacing one it turned on by
    /// itself). An indenter naming a terminal the grammar lacks, or leaving a declared
    /// terminal that rules use unmade, is an error, and then nothing changes.
    pub fn set_indenter(&mut self, spec: IndenterSpec) -> Result<(), GrammarError> {
        let before = self.indenter.replace(spec);
        if let Err(e) = self.post_lexer() {
            self.indenter = before;
            return Err(e);
        }
        Ok(())
    }

    /// The indenter's tab width (columns a tab counts; Lark's default is 8). An error
    /// without an indenter, or for 0.
    pub fn set_tab_len(&mut self, columns: u32) -> Result<(), GrammarError> {
        let unsupported = |reason: &str| GrammarError::Unsupported {
            span: Span::default(),
            construct: format!("tab width {columns}"),
            reason: reason.into(),
        };
        if columns == 0 {
            return Err(unsupported("a tab counts at least one column"));
        }
        match &mut self.indenter {
            Some(spec) => {
                spec.tab_len = columns;
                Ok(())
            }
            None => Err(unsupported("the grammar runs behind no indenter")),
        }
    }

    /// The terminal named `name` (a Lark bracket name such as `LPAR` also finds the
    /// quoted literal it stands for).
    pub fn terminal_named(&self, name: &str) -> Option<TerminalId> {
        let quoted = LARK_BRACKETS
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, q, _)| *q);
        self.terminals
            .iter()
            .position(|t| t.name == name || Some(t.name.as_str()) == quoted)
            .map(TerminalId::new)
    }

    /// The post-lexer this grammar runs behind, with terminal ids: `None` without one.
    /// A declared terminal the indenter does not make, or an indenter naming a terminal
    /// the grammar lacks, is an error.
    pub fn post_lexer(&self) -> Result<Option<Indenter>, GrammarError> {
        let undefined = |name: &str| GrammarError::Undefined {
            span: Span::default(),
            kind: "terminal (indenter)",
            name: name.to_string(),
        };
        let ind = match &self.indenter {
            None => None,
            Some(spec) => {
                let id = |n: &str| self.terminal_named(n).ok_or_else(|| undefined(n));
                // Brackets the grammar does not use are not counted.
                let ids =
                    |ns: &[String]| ns.iter().filter_map(|n| self.terminal_named(n)).collect();
                let mut ind = Indenter {
                    nl: id(&spec.nl)?,
                    indent: id(&spec.indent)?,
                    dedent: id(&spec.dedent)?,
                    open: ids(&spec.open),
                    close: ids(&spec.close),
                    tab_len: spec.tab_len,
                    automaton_refusal: None,
                };
                ind.automaton_refusal =
                    crate::compile::grammar::indent_check::automaton_refusal(self, &ind);
                Some(ind)
            }
        };
        for (name, span) in &self.declared {
            let made = self
                .indenter
                .as_ref()
                .is_some_and(|s| &s.indent == name || &s.dedent == name);
            if !made && self.terminals.iter().any(|t| &t.name == name) {
                return Err(GrammarError::Unsupported {
                    span: *span,
                    construct: format!("%declare {name}"),
                    reason: format!(
                        "terminal `{name}` has no pattern: only a post-lexer could make it, and \
                         the one stackmask runs, Lark's indenter, does not (it makes `_INDENT` \
                         and `_DEDENT` beside `_NL`, or the terminals `--indenter` names)"
                    ),
                });
            }
        }
        Ok(ind)
    }

    /// Whether some terminal is a special token.
    pub fn has_special_tokens(&self) -> bool {
        self.terminals.iter().any(|t| t.special.is_some())
    }

    /// Checks each special-token terminal against `vocab` and names the ones given by id
    /// (`<[128010]>` becomes `<|python_tag|>`): the token must be one of the vocabulary's
    /// named special tokens, and not an end-of-sequence token (end of sequence stays
    /// allowed exactly where the document is complete). Idempotent.
    pub fn resolve_special_tokens(
        &mut self,
        vocab: &crate::vocab::Vocab,
    ) -> Result<(), GrammarError> {
        use crate::ids::TokenId;
        use crate::vocab::TokenKind;
        for t in &mut self.terminals {
            let Some(written) = t.special.clone() else {
                continue;
            };
            let span = t.span;
            let err = |reason: String| GrammarError::SpecialToken {
                span,
                token: written.clone(),
                reason,
            };
            let id = match written
                .strip_prefix("<[")
                .and_then(|r| r.strip_suffix("]>"))
            {
                Some(digits) => TokenId::from_u32(
                    digits
                        .parse()
                        .map_err(|_| err("a token id is a decimal number below 2^32".into()))?,
                ),
                // A special token of that name, else a normal token spelling it (an
                // added token such as Qwen2.5's `<tool_call>`).
                None => vocab
                    .special_tokens()
                    .iter()
                    .find(|(_, n)| *n == written)
                    .map(|(id, _)| *id)
                    .or_else(|| {
                        vocab
                            .mask_tokens()
                            .find(|(_, b)| *b == written.as_bytes())
                            .map(|(id, _)| id)
                    })
                    .ok_or_else(|| {
                        err(format!(
                            "tokenizer {} has no special token of that name",
                            vocab.name()
                        ))
                    })?,
            };
            match vocab.kind(id) {
                Ok(TokenKind::Special) => {}
                Ok(TokenKind::Normal) => {
                    // A normal token is text: the grammar reads its text as a literal,
                    // which other tokens may spell too.
                    let text = vocab
                        .mask_bytes(id)
                        .and_then(|b| std::str::from_utf8(b).ok())
                        .ok_or_else(|| {
                            err(format!(
                                "token {id} is a normal token of tokenizer {} whose bytes are \
                                 not UTF-8 text",
                                vocab.name()
                            ))
                        })?;
                    t.regex = regex_syntax::escape(text);
                    t.special = None;
                    continue;
                }
                Ok(TokenKind::Unused) | Err(_) => {
                    return Err(err(format!("tokenizer {} has no token {id}", vocab.name())))
                }
            }
            if vocab.eos().contains(&id) {
                return Err(err(format!(
                    "token {id} is an end-of-sequence token, which masks allow exactly where \
                     the document is complete; a grammar cannot place it"
                )));
            }
            let name = vocab
                .special_tokens()
                .iter()
                .find(|(t, _)| *t == id)
                .map(|(_, n)| n.clone())
                .filter(|n| !n.is_empty())
                .ok_or_else(|| err(format!("special token {id} has no name")))?;
            t.regex = regex_syntax::escape(&name);
            t.special = Some(name);
        }
        Ok(())
    }

    /// The terminal with this id.
    pub fn terminal(&self, t: TerminalId) -> &Terminal {
        &self.terminals[t.index()]
    }

    /// The nonterminal with this id.
    pub fn nonterminal(&self, n: NonterminalId) -> &Nonterminal {
        &self.nonterminals[n.index()]
    }

    /// The productions of `n`, with their ids.
    pub fn productions_of(
        &self,
        n: NonterminalId,
    ) -> impl Iterator<Item = (ProductionId, &Production)> + '_ {
        self.productions
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.lhs == n)
            .map(|(i, p)| (ProductionId::new(i), p))
    }

    /// A symbol's display name.
    pub fn symbol_name(&self, s: Symbol) -> &str {
        match s {
            Symbol::T(t) => &self.terminal(t).name,
            Symbol::N(n) => &self.nonterminal(n).name,
        }
    }

    /// Which nonterminals derive the empty string, by fixpoint iteration.
    pub fn nullable(&self) -> Vec<bool> {
        let mut nullable = vec![false; self.nonterminals.len()];
        loop {
            let mut changed = false;
            for p in &self.productions {
                if !nullable[p.lhs.index()]
                    && p.rhs
                        .iter()
                        .all(|s| matches!(s, Symbol::N(n) if nullable[n.index()]))
                {
                    nullable[p.lhs.index()] = true;
                    changed = true;
                }
            }
            if !changed {
                return nullable;
            }
        }
    }

    /// Checks the IR invariants; front ends call this before handing a grammar on.
    pub fn validate(&self) -> Result<(), String> {
        let nt = self.nonterminals.len();
        let tt = self.terminals.len();
        if self.start.index() >= nt {
            return Err("start symbol out of range".into());
        }
        let mut has_prod = vec![false; nt];
        for (i, p) in self.productions.iter().enumerate() {
            if p.lhs.index() >= nt {
                return Err(format!("production {i}: lhs out of range"));
            }
            has_prod[p.lhs.index()] = true;
            for s in &p.rhs {
                let ok = match s {
                    Symbol::T(t) => t.index() < tt,
                    Symbol::N(n) => n.index() < nt,
                };
                if !ok {
                    return Err(format!("production {i}: symbol out of range"));
                }
            }
        }
        if let Some(i) = has_prod.iter().position(|h| !h) {
            return Err(format!(
                "nonterminal `{}` has no production",
                self.nonterminals[i].name
            ));
        }
        Ok(())
    }

    /// Prints the grammar: terminals (with priority and pattern), then productions.
    pub fn display(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "terminals ({}):", self.terminals.len());
        for t in &self.terminals {
            let _ = writeln!(
                s,
                "  {:<24} prio={}{}{}  /{}/",
                t.name,
                t.priority.user,
                if t.priority.literal { " literal" } else { "" },
                if t.ignored { " ignored" } else { "" },
                t.regex
            );
        }
        let _ = writeln!(
            s,
            "rules ({} nonterminals, {} productions), start = {}:",
            self.nonterminals.len(),
            self.productions.len(),
            self.nonterminal(self.start).name
        );
        for p in &self.productions {
            let rhs: Vec<&str> = p.rhs.iter().map(|&x| self.symbol_name(x)).collect();
            let _ = writeln!(
                s,
                "  {} -> {}",
                self.nonterminal(p.lhs).name,
                if rhs.is_empty() {
                    "ε".to_string()
                } else {
                    rhs.join(" ")
                }
            );
        }
        s
    }
}

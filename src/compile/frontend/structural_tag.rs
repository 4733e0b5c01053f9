//! Front end: a structural tag (XGrammar's, as vLLM and SGLang send it) → the grammar IR,
//! with lexer modes.
//!
//! ```json
//! {"type": "structural_tag",
//!  "structures": [{"begin": "<function=get_weather>", "schema": {…}, "end": "</function>"}],
//!  "triggers": ["<function="],
//!  "at_least_one": false}
//! ```
//!
//! The output is free text. Where a trigger first occurs in it, the text from the trigger
//! on must be the begin of a structure whose begin starts with that trigger, then its
//! body, then its end; then free text again, any number of times (at least once with
//! `at_least_one`). A body is a JSON Schema (`schema`), a Lark grammar (`grammar`) or a
//! regular expression (`regex`). A trigger, a begin and an end written `<|name|>` or
//! `<[id]>` is that special token; a begin may go on after a special trigger.
//!
//! Lexing (`LexMode`): free text is mode 0, where `FREE` (text with no trigger) and one
//! `TEXT·trigger` terminal per text trigger (text up to and including the first trigger)
//! compete, so a free-text lexeme ends exactly at the first trigger whatever the tokens
//! are. After a trigger the rest of each begin is lexed in the trigger's mode, a body in
//! a mode of its own with its end string, and the end returns to mode 0. So a body's
//! terminals never compete with free text. What this cannot express is refused: an end
//! string whose whole text a body terminal also matches (the lexer could not tell which
//! mode follows), and an empty end. Between a body's terminals and its end, DESIGN.md §1's
//! maximal munch holds: an end `}\n</tool_call>` makes the lexeme `}\n` inside the body
//! wait for the end, so a body whose `}` is followed by a newline and more body is lexed
//! as a failed end.

use serde_json::Value;

use crate::compile::error::{GrammarError, Span};
use crate::compile::frontend::json_schema::{self, SchemaOptions};
use crate::compile::frontend::{lark, regex, special};
use crate::compile::grammar::ir::{
    Grammar, LexMode, Nonterminal, Priority, Production, Symbol, Terminal,
};
use crate::compile::interrupt::Interrupt;
use crate::ids::{NonterminalId, TerminalId};

/// Parses a structural tag spec and lowers it (bodies' schemas with `options`, until
/// `stop` says to stop).
pub(crate) fn compile_until(
    text: &str,
    options: &SchemaOptions,
    stop: &Interrupt,
) -> Result<Grammar, GrammarError> {
    let spec = Spec::parse(text)?;
    lower(&spec, options, stop)
}

/// Parses and lowers a structural tag spec with default schema options.
pub fn compile(text: &str) -> Result<Grammar, GrammarError> {
    compile_with(text, &SchemaOptions::default())
}

/// Parses and lowers a structural tag spec, its JSON Schema bodies (and Lark bodies'
/// `%json` schemas) with `options`.
pub fn compile_with(text: &str, options: &SchemaOptions) -> Result<Grammar, GrammarError> {
    compile_until(text, options, &Interrupt::default())
}

/// Whether `text` is a structural tag spec rather than a JSON Schema: a JSON object whose
/// `type` is `"structural_tag"` (no JSON Schema type is spelled so).
pub fn is_spec(text: &str) -> bool {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("type")?.as_str().map(|t| t == "structural_tag"))
        .unwrap_or(false)
}

fn bad(message: impl Into<String>) -> GrammarError {
    GrammarError::StructuralTag {
        message: message.into(),
    }
}

/// A structure's body.
#[derive(Debug, Clone)]
enum Body {
    Schema(String),
    Lark(String),
    Regex(String),
}

#[derive(Debug, Clone)]
struct Structure {
    begin: String,
    body: Body,
    end: String,
}

#[derive(Debug, Clone)]
struct Spec {
    structures: Vec<Structure>,
    triggers: Vec<String>,
    at_least_one: bool,
}

/// Whether a string is written in a special token's frame (`<|…|>`, `<[…]>`).
fn framed(text: &str) -> bool {
    let Some(inner) = text.strip_prefix('<').and_then(|t| t.strip_suffix('>')) else {
        return false;
    };
    (inner.starts_with('|') && inner.ends_with('|') && inner.len() >= 2)
        || (inner.starts_with('[') && inner.ends_with(']'))
}

/// A string written as one special token (`<|name|>`, `<[id]>`), as `special::written`
/// names it ([`check_special`] has refused the framed strings it does not take).
fn special_name(text: &str) -> Option<String> {
    framed(text)
        .then(|| special::written(text, Span::default()).ok())
        .flatten()
}

/// Refuses a string in a special token's frame that is not one special token
/// (`<[1,2]>`, a token set; `<|a b|>`), naming where it is written.
fn check_special(text: &str, what: &str) -> Result<(), GrammarError> {
    if framed(text) {
        if let Err(e) = special::written(text, Span::default()) {
            return Err(bad(format!("{what} `{text}`: {e}")));
        }
    }
    Ok(())
}

impl Spec {
    fn parse(text: &str) -> Result<Self, GrammarError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| bad(format!("not JSON at {}:{}: {e}", e.line(), e.column())))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("the spec must be a JSON object"))?;
        for key in obj.keys() {
            if !matches!(
                key.as_str(),
                "type" | "structures" | "triggers" | "at_least_one"
            ) {
                return Err(bad(format!("unknown field `{key}`")));
            }
        }
        if let Some(t) = obj.get("type") {
            if t.as_str() != Some("structural_tag") {
                return Err(bad("`type` must be \"structural_tag\""));
            }
        }
        let strings = |key: &str| -> Result<Vec<String>, GrammarError> {
            let a = obj
                .get(key)
                .and_then(Value::as_array)
                .ok_or_else(|| bad(format!("`{key}` must be an array")))?;
            a.iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| bad(format!("`{key}` must hold strings")))
                })
                .collect()
        };
        let triggers = strings("triggers")?;
        let at_least_one = match obj.get("at_least_one") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("`at_least_one` must be true or false")),
        };
        let list = obj
            .get("structures")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("`structures` must be an array"))?;
        let mut structures = Vec::with_capacity(list.len());
        for (i, s) in list.iter().enumerate() {
            let o = s
                .as_object()
                .ok_or_else(|| bad(format!("structure {i} must be an object")))?;
            let field = |k: &str| -> Result<String, GrammarError> {
                o.get(k)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("structure {i}: `{k}` must be a string")))
            };
            for key in o.keys() {
                if !matches!(
                    key.as_str(),
                    "begin" | "end" | "schema" | "grammar" | "regex"
                ) {
                    return Err(bad(format!("structure {i}: unknown field `{key}`")));
                }
            }
            let bodies: Vec<Body> = [
                o.get("schema").map(|x| Body::Schema(x.to_string())),
                o.get("grammar")
                    .map(|x| x.as_str().map(|t| Body::Lark(t.to_string())))
                    .map(|b| {
                        b.ok_or_else(|| bad(format!("structure {i}: `grammar` must be a string")))
                    })
                    .transpose()?,
                o.get("regex")
                    .map(|x| x.as_str().map(|t| Body::Regex(t.to_string())))
                    .map(|b| {
                        b.ok_or_else(|| bad(format!("structure {i}: `regex` must be a string")))
                    })
                    .transpose()?,
            ]
            .into_iter()
            .flatten()
            .collect();
            let [body] = <[Body; 1]>::try_from(bodies).map_err(|_| {
                bad(format!(
                    "structure {i}: give exactly one body: `schema`, `grammar` or `regex`"
                ))
            })?;
            structures.push(Structure {
                begin: field("begin")?,
                body,
                end: field("end")?,
            });
        }
        if structures.is_empty() {
            return Err(bad("`structures` is empty"));
        }
        Ok(Self {
            structures,
            triggers,
            at_least_one,
        })
    }
}

/// Where a trigger's text first ends in `text` (`None`: it does not occur).
fn first_end(text: &str, trigger: &str) -> Option<usize> {
    text.find(trigger).map(|i| i + trigger.len())
}

/// The trigger a begin starts with, by index: among the text triggers, the one whose
/// occurrence ends first (the longest of those ending there), which must start the
/// begin; or a special trigger the begin starts with. Returns it with the rest of the
/// begin.
fn trigger_of<'a>(
    i: usize,
    begin: &'a str,
    triggers: &[String],
    special: &[Option<String>],
) -> Result<(usize, &'a str), GrammarError> {
    for (k, t) in triggers.iter().enumerate() {
        if special[k].is_some() && begin.starts_with(t.as_str()) {
            return Ok((k, &begin[t.len()..]));
        }
    }
    let first = triggers
        .iter()
        .enumerate()
        .filter(|(k, _)| special[*k].is_none())
        .filter_map(|(k, t)| Some((first_end(begin, t)?, std::cmp::Reverse(t.len()), k)))
        .min();
    match first {
        Some((end, _, k))
            if begin.starts_with(triggers[k].as_str()) && end == triggers[k].len() =>
        {
            Ok((k, &begin[end..]))
        }
        Some((_, _, k)) => Err(bad(format!(
            "structure {i}: trigger `{}` occurs in begin `{begin}` before the begin is over \
             with a trigger it starts with",
            triggers[k]
        ))),
        None => Err(bad(format!(
            "structure {i}: begin `{begin}` starts with no trigger"
        ))),
    }
}

/// The IR being built, terminals and nonterminals appended as they are made.
#[derive(Default)]
struct Builder {
    terminals: Vec<Terminal>,
    nonterminals: Vec<Nonterminal>,
    productions: Vec<Production>,
}

impl Builder {
    fn terminal(&mut self, t: Terminal) -> Symbol {
        self.terminals.push(t);
        Symbol::T(TerminalId::new(self.terminals.len() - 1))
    }

    fn nonterminal(&mut self, name: &str) -> NonterminalId {
        self.nonterminals.push(Nonterminal {
            name: name.to_string(),
            span: Span::default(),
        });
        NonterminalId::new(self.nonterminals.len() - 1)
    }

    fn rule(&mut self, lhs: NonterminalId, rhs: Vec<Symbol>) {
        self.productions.push(Production {
            lhs,
            rhs,
            priority: 0,
        });
    }

    /// Adds `g` (a body) with every terminal lexed in `mode`, names prefixed; returns
    /// its start symbol.
    fn graft(&mut self, g: Grammar, prefix: &str, mode: u32) -> Symbol {
        let (t0, n0) = (self.terminals.len(), self.nonterminals.len());
        let shift = |s: Symbol| match s {
            Symbol::T(t) => Symbol::T(TerminalId::new(t0 + t.index())),
            Symbol::N(n) => Symbol::N(NonterminalId::new(n0 + n.index())),
        };
        self.terminals.extend(g.terminals.into_iter().map(|mut t| {
            t.name = format!("{prefix}{}", t.name);
            t.mode = LexMode::only(mode, mode);
            t
        }));
        self.nonterminals
            .extend(g.nonterminals.into_iter().map(|n| Nonterminal {
                name: format!("{prefix}{}", n.name),
                span: n.span,
            }));
        self.productions
            .extend(g.productions.into_iter().map(|p| Production {
                lhs: NonterminalId::new(n0 + p.lhs.index()),
                rhs: p.rhs.into_iter().map(shift).collect(),
                priority: p.priority,
            }));
        shift(Symbol::N(g.start))
    }
}

/// A terminal: `regex` lexed in mode `lexed_in`, the next lexeme in `then`.
fn term(name: String, regex: String, literal: bool, user: i32, mode: (u32, u32)) -> Terminal {
    Terminal {
        mode: LexMode::only(mode.0, mode.1),
        ..Terminal::new(name, regex, Priority { user, literal }, Span::default())
    }
}

/// `text` as a terminal lexed in `mode.0`, then `mode.1`: its special token's, or a
/// literal.
fn literal(name: String, text: &str, mode: (u32, u32)) -> Terminal {
    match special_name(text) {
        Some(s) => {
            let mut t = special::terminal(&s, Span::default());
            t.mode = LexMode::only(mode.0, mode.1);
            t
        }
        None => term(name, regex_syntax::escape(text), true, 0, mode),
    }
}

/// Per trigger, its structures (index, and the rest of the begin after the trigger),
/// after checking the triggers and the structures' begins and ends; and which triggers
/// are special tokens.
type ByTrigger<'a> = (Vec<Vec<(usize, &'a str)>>, Vec<Option<String>>);

fn group_by_trigger(spec: &Spec) -> Result<ByTrigger<'_>, GrammarError> {
    let triggers = &spec.triggers;
    if triggers.is_empty() {
        return Err(bad("`triggers` is empty"));
    }
    let special: Vec<Option<String>> = triggers.iter().map(|t| special_name(t)).collect();
    for (k, t) in triggers.iter().enumerate() {
        check_special(t, "trigger")?;
        if t.is_empty() {
            return Err(bad(format!("trigger {k} is empty")));
        }
        if triggers[..k].contains(t) {
            return Err(bad(format!("trigger `{t}` is listed twice")));
        }
    }
    // Each structure's trigger and the rest of its begin; per trigger, its structures.
    let mut of_trigger: Vec<Vec<(usize, &str)>> = vec![Vec::new(); triggers.len()];
    for (i, s) in spec.structures.iter().enumerate() {
        if s.end.is_empty() {
            return Err(bad(format!(
                "structure {i}: the end is empty (free text after a body could not be told \
                 from the body)"
            )));
        }
        let (k, rest) = trigger_of(i, &s.begin, triggers, &special)?;
        check_special(
            rest,
            &format!("structure {i}: the begin after its trigger,"),
        )?;
        check_special(&s.end, &format!("structure {i}: end"))?;
        if let Some(&(j, _)) = of_trigger[k].iter().find(|(_, r)| *r == rest) {
            return Err(bad(format!("structures {j} and {i} have the same begin")));
        }
        of_trigger[k].push((i, rest));
    }
    for (k, list) in of_trigger.iter().enumerate() {
        if list.is_empty() {
            return Err(bad(format!(
                "trigger `{}` starts no structure's begin",
                triggers[k]
            )));
        }
        if list.len() > 1 && list.iter().any(|(_, r)| r.is_empty()) {
            return Err(bad(format!(
                "trigger `{}` is one structure's whole begin and starts others' too",
                triggers[k]
            )));
        }
    }
    Ok((of_trigger, special))
}

fn lower(spec: &Spec, options: &SchemaOptions, stop: &Interrupt) -> Result<Grammar, GrammarError> {
    let triggers = &spec.triggers;
    let (of_trigger, special) = group_by_trigger(spec)?;
    // Modes: 0 free text; one per trigger whose begins go on after it; one per body.
    let mut next_mode = 1u32;
    let begins_mode: Vec<Option<u32>> = of_trigger
        .iter()
        .map(|list| {
            (!list[0].1.is_empty()).then(|| {
                next_mode += 1;
                next_mode - 1
            })
        })
        .collect();
    let body_mode: Vec<u32> = (0..spec.structures.len())
        .map(|_| {
            next_mode += 1;
            next_mode - 1
        })
        .collect();

    let mut b = Builder::default();
    let start = b.nonterminal("start");
    let segs = b.nonterminal("calls");
    let seg = b.nonterminal("call");
    // Free text: no trigger in it; it ends where one begins (special) or at the end.
    let texts: Vec<&String> = triggers
        .iter()
        .zip(&special)
        .filter(|(_, s)| s.is_none())
        .map(|(t, _)| t)
        .collect();
    let any_trigger = texts
        .iter()
        .map(|t| regex_syntax::escape(t))
        .collect::<Vec<_>>()
        .join("|");
    let mut free = term("FREE".into(), r"(?s:.)+".into(), false, 0, (0, 0));
    if !texts.is_empty() {
        free.except = vec![format!("(?s:.*(?:{any_trigger}).*)")];
    }
    let free = b.terminal(free);
    // Per trigger, the terminal that ends free text with it.
    let mut trigger_sym: Vec<Symbol> = Vec::with_capacity(triggers.len());
    for (k, t) in triggers.iter().enumerate() {
        let then = begins_mode[k].unwrap_or_else(|| body_mode[of_trigger[k][0].0]);
        let sym = match &special[k] {
            Some(_) => b.terminal(literal(t.clone(), t, (0, then))),
            None => {
                // Text with no earlier trigger, then this one; a longer trigger ending
                // at the same byte wins.
                let mut x = term(
                    format!("TEXT·{t}"),
                    format!("(?s:.*){}", regex_syntax::escape(t)),
                    false,
                    t.len().min(i32::MAX as usize) as i32,
                    (0, then),
                );
                x.except = vec![format!("(?s:.*(?:{any_trigger})(?s:.+))")];
                b.terminal(x)
            }
        };
        trigger_sym.push(sym);
    }
    for (k, list) in of_trigger.iter().enumerate() {
        for &(i, rest) in list {
            stop.check()?;
            let s = &spec.structures[i];
            let m = body_mode[i];
            let g = body_grammar(&s.body, options, stop).map_err(|e| match e {
                GrammarError::Cancelled | GrammarError::TimeLimit { .. } => e,
                e => GrammarError::InStructure {
                    index: i,
                    error: Box::new(e),
                },
            })?;
            if g.indenter.is_some() || g.longest_match || !g.declared.is_empty() {
                return Err(GrammarError::InStructure {
                    index: i,
                    error: Box::new(bad("a body runs without a post-lexer or longest match")),
                });
            }
            let body = b.graft(g, &format!("structure {i}."), m);
            let mut rhs = vec![trigger_sym[k]];
            if let Some(bm) = begins_mode[k] {
                rhs.push(b.terminal(literal(format!("structure {i}.begin"), rest, (bm, m))));
            }
            rhs.push(body);
            rhs.push(b.terminal(literal(format!("structure {i}.end"), &s.end, (m, 0))));
            if special[k].is_some() {
                let mut with_text = vec![free];
                with_text.extend(&rhs);
                b.rule(seg, with_text);
            }
            b.rule(seg, rhs);
        }
    }
    // start: calls FREE?; calls: call* (call+ with at_least_one), left-recursive.
    b.rule(start, vec![Symbol::N(segs)]);
    b.rule(start, vec![Symbol::N(segs), free]);
    if spec.at_least_one {
        b.rule(segs, vec![Symbol::N(seg)]);
    } else {
        b.rule(segs, vec![]);
    }
    b.rule(segs, vec![Symbol::N(segs), Symbol::N(seg)]);
    let Builder {
        terminals,
        nonterminals,
        mut productions,
    } = b;
    productions.sort_by_key(|p| p.lhs);
    let g = Grammar {
        terminals,
        nonterminals,
        productions,
        start,
        indenter: None,
        declared: Vec::new(),
        longest_match: false,
    };
    // Built consistently above; a failure here is a bug, reported rather than panicking.
    g.validate().map_err(|m| bad(format!("internal: {m}")))?;
    Ok(g)
}

/// A body's own grammar.
fn body_grammar(
    body: &Body,
    options: &SchemaOptions,
    stop: &Interrupt,
) -> Result<Grammar, GrammarError> {
    match body {
        Body::Schema(text) => json_schema::compile_until(text, options, stop)
            .map(|l| l.grammar)
            .map_err(|e| e.into_stopped().unwrap_or_else(GrammarError::from)),
        Body::Lark(text) => lark::compile_until(text, options, stop),
        Body::Regex(text) => regex::compile(text),
    }
}

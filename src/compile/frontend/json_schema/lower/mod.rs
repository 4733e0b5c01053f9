//! Schema → grammar IR.
//!
//! Strings are split between two kinds of terminals so that the lexer itself can tell
//! a property name from every other string: each string *literal* the schema mentions
//! (property names, `enum`/`const` strings) is a terminal of priority 1 matching all
//! spellings of exactly that value; every other string terminal (any string, a pattern,
//! a format, a length) has priority 0. A lexeme equal to a literal is therefore only
//! ever emitted as that literal, and each string-valued nonterminal lists, besides its
//! own terminal, the literals whose value it accepts — decided here, once all literals
//! are known, by matching the value. "Any key but the declared ones" is then just the
//! generic string plus the other literals: exact without regex complement.

use crate::compile::interrupt::Interrupt;
use hashbrown::HashMap;
use regex_syntax::hir::{Hir, Repetition};
use serde_json::{Map, Value};

use super::complement::{
    any_string_hir, complement, complement_within, scalar_values, string_language,
};
use super::finite;
use super::format::{format, Format};
use super::key;
use super::number::{
    decimal_half, decimal_range, integer_range, multiple_of, value_spellings, Bound, Side,
    ANY_INTEGER, ANY_NUMBER, NON_INTEGER,
};
use super::resolve::{
    conjoin, contains_list, is_trivial, json_equal, type_set, Disjunction, Flat, Resolver,
    ASSERTIONS,
};
use super::string::{
    any_char, char_len, has_bounded_repetition, literal_regex, parse_pattern, parse_value_regex,
    quoted_regex, spell, split_pattern, PatternSplit, ValueMatcher, ANY_STRING,
};
use super::{Dropped, LoweredSchema, SchemaError, SchemaOptions};
use crate::compile::error::{GrammarError, Span};
use crate::compile::grammar::ebnf::{BnfBuilder, Ebnf};
use crate::compile::grammar::ir::{
    Counted, Divisibility, Grammar, LexMode, Nonterminal, Priority, Symbol, Terminal, MAX_DIVISOR,
};
use crate::compile::grammar::prune::{
    check_acyclic, check_no_hidden_left_recursion, prune_unreachable, remove_unproductive_until,
};
use crate::compile::lexer::build::counted_is_exact;
use crate::ids::{NonterminalId, TerminalId};

mod array;
mod negation;
mod object;
mod oneof;
mod scalar;
use oneof::*;

/// Longest string length (`maxLength`, or `minLength` without a maximum) compiled
/// exactly: each counted character is a few lexer states, and every lexer state inside a
/// string is a position the tokenizer tries are built from.
pub const MAX_COUNTED_LENGTH: u64 = 4096;
/// Shortest length bound (the larger of the two) lowered as a counted terminal when it
/// is a string's only constraint. Strings counted together share the lexer's count, so
/// their layers settle early even when a schema has dozens of them. Shorter bounds are
/// unrolled into the regex: below this, counting only adds bounds for the layers to
/// settle between. Unrolled, `maxLength: 255` (the commonest bound in MaskBench) was a
/// 13,266-state regex-automata build of 40 ms per terminal; counted, its unit is built
/// once (5% of the 54 slowest schemas' TTFM; few small schemas have such strings).
pub const COUNTED_LENGTH_FROM: u64 = 32;
/// Shortest length bound (the larger of the two) lowered as a counted terminal beside a
/// pattern, `format` or `not` (when counting it is exact). Lower, the exactness check
/// and the counted pattern's layers cost more than unrolling (a `minLength: 100` beside
/// three patterns took twice as long counted).
pub const COUNTED_FROM: u64 = 256;
/// [`COUNTED_FROM`] for patterns, formats and `not`s with no bounded repetition of
/// their own (`\S+@\S+`, `email`). Unrolled, such a pattern times every length is a
/// product regex-automata builds state by state (tens of thousands of states for
/// `maxLength: 255` beside an email pattern), where counting builds the pattern once.
/// Patterns that count characters themselves are what make counting dearer (a guess at
/// why: the pattern's counter moves with the length's, so their unrolled product stays
/// small). Below 128, counting gains nothing measurable on MaskBench's short bounds.
pub const COUNTED_FREE_PATTERN_FROM: u64 = 128;
/// Longest string length compiled as a counted terminal (a length with no other string
/// constraint beside it): the lexer keeps a few hundred layers per bound and numbers the
/// rest, so this only bounds the id space.
pub const MAX_LEXER_COUNT: u64 = 1 << 24;
/// Largest `minItems`/`maxItems` compiled exactly (each counted item is a nonterminal).
pub const MAX_COUNTED_ITEMS: u64 = 1024;
/// Most (declared properties + 1) × (largest property count + 1) an object with
/// `minProperties` / `maxProperties` is compiled with: one grammar state per pair.
pub const MAX_COUNTED_PROPERTY_STATES: u64 = 4096;
/// Objects with more members than this skip optional ones [`SKIP_HOP`] at a time: the
/// next key picks the pair written last among that many directly, farther back through
/// a chain, so a commit that skips k optional members reduces k / SKIP_HOP unit rules
/// instead of k (about 0.5 µs each), for SKIP_HOP productions per member. Smaller
/// objects skip one at a time: their chains are short and the extra productions cost
/// compile time (+13% at the median schema when every object hops by 8).
const HOP_OVER: usize = 32;
/// See [`HOP_OVER`].
const SKIP_HOP: usize = 8;
/// Most `patternProperties` patterns with different schemas on one object: each
/// non-empty set of them is a region of names with its own key terminal.
const MAX_PATTERN_REGIONS_OF: usize = 3;
/// Most distinct values `uniqueItems` is compiled over: one grammar state per subset.
const MAX_UNIQUE_VALUES: usize = 8;
/// Deepest nesting of `anyOf` inside `not` that is negated member by member.
const MAX_NEGATION_DEPTH: usize = 16;
/// Most alternatives `anyOf`/`oneOf` may distribute into at one schema node.
const MAX_EXPANSIONS: usize = 256;
/// Most disjunctions distributed at one schema node (bounds self-referencing ones).
const MAX_DISTRIBUTION_STEPS: usize = 4096;

const TYPES: [&str; 6] = ["null", "boolean", "object", "array", "number", "string"];

/// Deferred body of a string-valued nonterminal, filled once all literals are known.
enum StringRule {
    /// Any string: the generic terminal and every literal.
    Any,
    /// A constrained string: its terminal and the literals its matcher accepts.
    Constrained(TerminalId, ValueMatcher),
    /// Any string except the listed values: the generic terminal and the other literals.
    Except(Vec<String>),
}

/// The forms of `not` that are compiled.
#[derive(Default)]
struct Negation {
    /// `not {}`: nothing is valid.
    nothing: bool,
    /// `not {type: …}`: these types are excluded.
    excluded: Vec<String>,
    /// `not {required: [x]}`: objects only, without `x` (one name per such `not`).
    absent: Vec<String>,
    /// `not` of one string language (`pattern`, a regular `format`, string `enum` /
    /// `const`, or lengths): strings in any of these are excluded.
    strings: Vec<Hir>,
    /// Set by `not` of a string keyword that every non-string satisfies vacuously
    /// (`pattern`, `format`, lengths without `type: string`): strings only.
    strings_only: bool,
    /// `not {const: true}` and the like: these booleans are excluded.
    bools: Vec<bool>,
    /// `not {multipleOf: k}` for integers `k`: numbers only, and no multiple of any `k`.
    multiples: Vec<u32>,
}

impl Negation {
    /// ¬A ∧ ¬B, for `not {anyOf: [A, B]}` and for two `not`s met in an `allOf`.
    fn and(mut self, o: Negation) -> Negation {
        self.nothing |= o.nothing;
        self.excluded.extend(o.excluded);
        self.absent.extend(o.absent);
        self.strings.extend(o.strings);
        self.strings_only |= o.strings_only;
        self.bools.extend(o.bools);
        self.multiples.extend(o.multiples);
        self
    }
}

struct Fixed {
    lbrace: Symbol,
    rbrace: Symbol,
    lbrack: Symbol,
    rbrack: Symbol,
    comma: Symbol,
    colon: Symbol,
    tru: Symbol,
    fals: Symbol,
    null: Symbol,
    string: TerminalId,
    number: Symbol,
}

struct Lowerer<'a> {
    resolver: Resolver<'a>,
    opts: SchemaOptions,
    /// Checked at every schema node.
    stop: Interrupt,
    terminals: Vec<Terminal>,
    term_ids: HashMap<TermKey, TerminalId>,
    /// Counted string terminals by their count and pattern.
    counted_ids: HashMap<CountedPattern, TerminalId>,
    nonterminals: Vec<Nonterminal>,
    bodies: Vec<Option<Ebnf>>,
    memo: HashMap<String, NonterminalId>,
    literals: Vec<(String, TerminalId)>,
    literal_ids: HashMap<String, TerminalId>,
    string_rules: Vec<(NonterminalId, StringRule)>,
    /// Declared names a pattern-key rule must not list (they have their own slots).
    exclusions: Vec<(NonterminalId, Vec<String>)>,
    string_memo: HashMap<String, NonterminalId>,
    /// The nonterminal of each `key : value` pair by (key, value) (see [`Lowerer::pair`]).
    pairs: HashMap<(Symbol, Symbol), NonterminalId>,
    /// The nonterminal of each `: value` by value (see [`Lowerer::pair`]).
    colon_values: HashMap<Symbol, NonterminalId>,
    /// Whether a counted string's pattern (regex, `also`, `except`) counts exactly: the
    /// check determinizes the pattern, and schemas repeat their string shapes.
    counts_exactly: HashMap<String, bool>,
    any_string: Option<NonterminalId>,
    any_value: Option<NonterminalId>,
    dropped: Vec<Dropped>,
    fixed: Option<Fixed>,
}

fn e_sym(s: Symbol) -> Ebnf {
    Ebnf::Sym(s)
}

/// The empty language: an alternation of nothing (so `Alt` of an empty list is one too).
fn nothing() -> Ebnf {
    Ebnf::Alt(Vec::new())
}

fn eps() -> Ebnf {
    Ebnf::Seq(Vec::new())
}

fn invalid(keyword: &str, pointer: &str, reason: &str) -> SchemaError {
    SchemaError::Invalid {
        keyword: keyword.to_string(),
        pointer: pointer.to_string(),
        reason: reason.to_string(),
    }
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// A nonnegative integer keyword value (`minLength`, `maxItems`…).
fn count(m: &Map<String, Value>, k: &str, pointer: &str) -> Result<Option<u64>, SchemaError> {
    match m.get(k) {
        None => Ok(None),
        Some(v) => match (v.as_u64(), v.as_f64()) {
            (Some(n), _) => Ok(Some(n)),
            (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < 1e18 => Ok(Some(f as u64)),
            _ => Err(invalid(k, pointer, "must be a nonnegative integer")),
        },
    }
}

/// What makes two terminals the same: regex, `also`, `except`, priority, divisibility.
type TermKey = (String, Vec<String>, Vec<String>, i32, Vec<Divisibility>);

/// A `multipleOf` value that is an integer from 1 to [`MAX_DIVISOR`].
pub(super) fn integer_divisor(v: &Value) -> Option<u32> {
    // `2.0` is the integer 2; the range check below also bounds the float's cast.
    let x = v
        .as_f64()
        .filter(|x| x.fract() == 0.0 && (1.0..=MAX_DIVISOR as f64).contains(x))?;
    Some(x as u32)
}

/// Which numbers a number schema starts from, before its bounds and multiples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberSet {
    /// `type: integer`: integers, spelled without fraction or exponent.
    Integers,
    /// `type: number`: every JSON number.
    All,
    /// `type: number` with `not: {type: integer}`: the spellings of [`NON_INTEGER`].
    NonIntegers,
}

fn json_type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_allows(types: &Option<Vec<String>>, t: &str) -> bool {
    match types {
        None => true,
        Some(ts) => ts
            .iter()
            .any(|x| x == t || (x == "number" && t == "integer")),
    }
}

impl<'a> Lowerer<'a> {
    fn new(root: &'a Value, opts: SchemaOptions, stop: Interrupt) -> Self {
        let mut l = Lowerer {
            resolver: Resolver::new(root, opts.lenient),
            opts,
            stop,
            terminals: Vec::new(),
            term_ids: HashMap::new(),
            counted_ids: HashMap::new(),
            nonterminals: Vec::new(),
            bodies: Vec::new(),
            memo: HashMap::new(),
            literals: Vec::new(),
            literal_ids: HashMap::new(),
            string_rules: Vec::new(),
            exclusions: Vec::new(),
            string_memo: HashMap::new(),
            pairs: HashMap::new(),
            colon_values: HashMap::new(),
            counts_exactly: HashMap::new(),
            any_string: None,
            any_value: None,
            dropped: Vec::new(),
            fixed: None,
        };
        let punct =
            |l: &mut Self, s: &str| Symbol::T(l.terminal(s, &regex_syntax::escape(s), 0, true));
        let fixed = Fixed {
            lbrace: punct(&mut l, "{"),
            rbrace: punct(&mut l, "}"),
            lbrack: punct(&mut l, "["),
            rbrack: punct(&mut l, "]"),
            comma: punct(&mut l, ","),
            colon: punct(&mut l, ":"),
            tru: punct(&mut l, "true"),
            fals: punct(&mut l, "false"),
            null: punct(&mut l, "null"),
            string: l.terminal("STRING", ANY_STRING, 0, false),
            number: Symbol::T(l.terminal("NUMBER", ANY_NUMBER, 0, false)),
        };
        if !opts.compact {
            let ws = l.terminal("WS", r"[ \t\n\r]+", 0, false);
            l.terminals[ws.index()].ignored = true;
        }
        l.fixed = Some(fixed);
        l
    }

    fn f(&self) -> &Fixed {
        // Set in `new` before any lowering.
        self.fixed.as_ref().expect("fixed terminals")
    }

    fn terminal(&mut self, name: &str, regex: &str, priority: i32, literal: bool) -> TerminalId {
        let key = (
            regex.to_string(),
            Vec::new(),
            Vec::new(),
            priority,
            Vec::new(),
        );
        self.make_terminal(name, key, literal)
    }

    /// A string terminal whose lexemes match `regex` and every pattern of `also`, and
    /// no pattern of `except`.
    fn terminal_also(
        &mut self,
        name: &str,
        regex: &str,
        also: Vec<String>,
        except: Vec<String>,
    ) -> TerminalId {
        self.make_terminal(
            name,
            (regex.to_string(), also, except, 0, Vec::new()),
            false,
        )
    }

    /// The terminal of `key` (made on first use).
    fn make_terminal(&mut self, name: &str, key: TermKey, literal: bool) -> TerminalId {
        if let Some(&t) = self.term_ids.get(&key) {
            return t;
        }
        let id = TerminalId::new(self.terminals.len());
        self.terminals.push(Terminal {
            name: name.to_string(),
            regex: key.0.clone(),
            priority: Priority {
                user: key.3,
                literal,
            },
            ignored: false,
            droppable: false,
            also: key.1.clone(),
            except: key.2.clone(),
            counted: None,
            divisibility: key.4.clone(),
            special: None,
            mode: LexMode::default(),
            span: Span::default(),
        });
        self.term_ids.insert(key, id);
        id
    }

    /// The terminal of a counted string whose characters match `regex` and every `also`,
    /// and no `except` (see `ir::Counted`).
    fn counted_terminal(&mut self, name: &str, t: CountedPattern) -> TerminalId {
        if let Some(&id) = self.counted_ids.get(&t) {
            return id;
        }
        let id = TerminalId::new(self.terminals.len());
        self.terminals.push(t.terminal(name));
        self.counted_ids.insert(t, id);
        id
    }

    /// The priority-1 terminal for the string literal `value`.
    fn literal(&mut self, value: &str) -> TerminalId {
        if let Some(&t) = self.literal_ids.get(value) {
            return t;
        }
        let name = serde_json::to_string(value).unwrap_or_default();
        let t = self.terminal(&name, &literal_regex(value), 1, false);
        self.literal_ids.insert(value.to_string(), t);
        self.literals.push((value.to_string(), t));
        t
    }

    fn nonterminal(&mut self, name: String) -> NonterminalId {
        let id = NonterminalId::new(self.nonterminals.len());
        self.nonterminals.push(Nonterminal {
            name,
            span: Span::default(),
        });
        self.bodies.push(None);
        id
    }

    fn define(&mut self, n: NonterminalId, body: Ebnf) {
        self.bodies[n.index()] = Some(body);
    }

    /// A keyword that cannot be enforced: an error, or recorded and ignored if lenient.
    fn refuse(&mut self, keyword: &str, pointer: &str, reason: &str) -> Result<(), SchemaError> {
        if self.opts.lenient {
            self.dropped.push(Dropped {
                keyword: keyword.to_string(),
                pointer: pointer.to_string(),
                reason: reason.to_string(),
            });
            Ok(())
        } else {
            Err(SchemaError::Unsupported {
                keyword: keyword.to_string(),
                pointer: pointer.to_string(),
                reason: reason.to_string(),
            })
        }
    }

    fn string_nt(&mut self, key: String, rule: StringRule) -> NonterminalId {
        if let Some(&n) = self.string_memo.get(&key) {
            return n;
        }
        let n = self.nonterminal(format!("string<{key}>"));
        self.string_memo.insert(key, n);
        self.string_rules.push((n, rule));
        n
    }

    fn any_string(&mut self) -> Symbol {
        if self.any_string.is_none() {
            let n = self.nonterminal("string".into());
            self.string_rules.push((n, StringRule::Any));
            self.any_string = Some(n);
        }
        Symbol::N(self.any_string.expect("just set"))
    }

    /// Any JSON value.
    fn any_value(&mut self) -> Symbol {
        if let Some(n) = self.any_value {
            return Symbol::N(n);
        }
        let v = self.nonterminal("value".into());
        self.any_value = Some(v);
        let s = self.any_string();
        let fx = self.f();
        let (lb, rb, lk, rk, comma, colon) = (
            fx.lbrace, fx.rbrace, fx.lbrack, fx.rbrack, fx.comma, fx.colon,
        );
        let scalars = [fx.number, fx.tru, fx.fals, fx.null];
        let member = Ebnf::Seq(vec![e_sym(s), e_sym(colon), e_sym(Symbol::N(v))]);
        let list = |item: Ebnf| {
            Ebnf::optional(Ebnf::Seq(vec![
                item.clone(),
                Ebnf::Repeat {
                    inner: Box::new(Ebnf::Seq(vec![e_sym(comma), item])),
                    min: 0,
                    max: None,
                },
            ]))
        };
        let obj = Ebnf::Seq(vec![e_sym(lb), list(member), e_sym(rb)]);
        let arr = Ebnf::Seq(vec![e_sym(lk), list(e_sym(Symbol::N(v))), e_sym(rk)]);
        let mut alts = vec![obj, arr, e_sym(s)];
        alts.extend(scalars.into_iter().map(e_sym));
        self.define(v, Ebnf::Alt(alts));
        Symbol::N(v)
    }

    /// The symbol for a schema node (memoized; `$ref`-only nodes by target, so that
    /// recursive schemas become recursive rules).
    fn schema(&mut self, node: &Value, pointer: &str) -> Result<Symbol, SchemaError> {
        self.stop
            .check()
            .map_err(|e| SchemaError::Grammar(Box::new(e)))?;
        match node {
            Value::Bool(true) => return Ok(self.any_value()),
            Value::Object(m) if is_trivial(node) => {
                let _ = m;
                return Ok(self.any_value());
            }
            _ => {}
        }
        let key = match node.as_object() {
            Some(m)
                if m.get("$ref").is_some_and(Value::is_string)
                    && m.keys()
                        .all(|k| k == "$ref" || !ASSERTIONS.contains(&k.as_str())) =>
            {
                let r = m["$ref"].as_str().unwrap_or_default();
                match self.resolver.target(r, pointer) {
                    Ok((_, tp)) => format!("ref:{tp}"),
                    Err(e @ SchemaError::Unsupported { .. }) if self.opts.lenient => {
                        if let SchemaError::Unsupported {
                            keyword,
                            pointer,
                            reason,
                        } = e
                        {
                            self.refuse(&keyword, &pointer, &reason)?;
                        }
                        return Ok(self.any_value());
                    }
                    Err(e) => return Err(e),
                }
            }
            _ => key::schema_key(node),
        };
        if let Some(&n) = self.memo.get(&key) {
            return Ok(Symbol::N(n));
        }
        let n = self.nonterminal(if pointer.is_empty() {
            "#".into()
        } else {
            pointer.to_string()
        });
        let finite = node
            .as_object()
            .and_then(finite::candidates)
            .and_then(|values| finite::filter(self.resolver.root(), node, &values))
            .map(|values| serde_json::json!({ "enum": values }))
            // A node that is its values and annotations has the key of its values: it
            // would be its own body.
            .filter(|only| key::schema_key(only) != key);
        self.memo.insert(key, n);
        let body = if let Some(only) = finite {
            // Only the listed values that satisfy the whole node (see `finite`); when the
            // validator cannot decide, the keywords are lowered (or refused) as usual.
            e_sym(self.schema(&only, &format!("{pointer}/enum"))?)
        } else if let Some(r) = key_ref(node) {
            let (t, tp) = self.resolver.target(&r, pointer)?;
            let t = t.clone();
            e_sym(self.schema(&t, &tp)?)
        } else {
            let flat = self.resolver.flatten(node, pointer)?;
            self.flat(flat, pointer)?
        };
        self.define(n, body);
        Ok(Symbol::N(n))
    }

    /// Distributes the disjunctions of a flattened node over its base and lowers each.
    fn flat(&mut self, flat: Flat, pointer: &str) -> Result<Ebnf, SchemaError> {
        if flat.never {
            return Ok(nothing());
        }
        let mut done: Vec<Map<String, Value>> = Vec::new();
        let mut todo = vec![flat];
        // Distribution steps taken: an alternative that references its own definition
        // (`x: {anyOf: [{$ref: x}]}`) brings back the disjunction it came from.
        let mut steps = 0usize;
        while let Some(mut f) = todo.pop() {
            if f.never {
                continue;
            }
            let Some(Disjunction {
                keyword: kw,
                alternatives: alts,
                after_properties: after_props,
            }) = f.disjunctions.pop()
            else {
                if let Some(forms) = self.not_as_complement(&f.base, pointer) {
                    // ¬X as the union of X's complement forms, distributed like an anyOf.
                    f.base.remove("not");
                    f.disjunctions.push(Disjunction::new("anyOf", forms, false));
                    todo.push(f);
                    continue;
                }
                done.push(f.base);
                continue;
            };
            // Refusals name the schema's keyword, not the complements it was turned into.
            let named = if kw == COMPLEMENT { "oneOf" } else { kw };
            if kw == "oneOf" {
                if let Some(values) = self.finite_oneof(&alts) {
                    // Exactly-one decided value by value: the oneOf becomes an enum.
                    let only = Map::from_iter([("enum".to_string(), Value::Array(values))]);
                    f.base = self.resolver.merge(f.base, only, pointer)?;
                    todo.push(f);
                    continue;
                }
            }
            steps += 1;
            if steps > MAX_DISTRIBUTION_STEPS {
                self.refuse(
                    named,
                    pointer,
                    "anyOf/oneOf alternatives that do not end (a definition referencing itself)",
                )?;
                break;
            }
            let mut branches = Vec::new();
            // For `oneOf`: each alternative's own keywords (without the context's).
            let mut alone = Vec::new();
            // For `oneOf`: each branch's own disjunctions (the alternative's, not the
            // ones shared with its siblings), for the disjointness proof.
            let mut own = Vec::new();
            // For `oneOf`: each alternative, for the complements that make them exclusive.
            let mut alt_flats: Vec<(Flat, &str)> = Vec::new();
            for (alt, ap) in &alts {
                let af = self.resolver.flatten(alt, ap)?;
                if af.never {
                    continue;
                }
                if kw == "oneOf" {
                    alt_flats.push((af.clone(), ap.as_str()));
                }
                if kw == "oneOf" {
                    own.push(af.disjunctions.clone());
                    alone.push(af.base.clone());
                }
                // Properties keep the order of the schema text: the node's first when its
                // `properties` comes before the combinator, else the alternative's (often
                // a discriminating `type`, the variant's own fields). Over all of
                // MaskBench (Llama-3) this rejects 161 valid instances; the alternative's
                // properties always first rejected 177, the node's always first 169.
                // A complement's keywords go last: they only exclude, and the branch's
                // own properties keep their places ahead of the names they mention.
                let base = if kw == COMPLEMENT || after_props {
                    self.resolver.merge(f.base.clone(), af.base, ap)?
                } else {
                    self.resolver.merge(af.base, f.base.clone(), ap)?
                };

                let mut disj = f.disjunctions.clone();
                disj.extend(af.disjunctions);
                branches.push(Flat {
                    base,
                    disjunctions: disj,
                    never: false,
                });
            }
            if kw == "oneOf" && branches.len() > 1 {
                let overlapping = (0..branches.len()).any(|i| {
                    (i + 1..branches.len()).any(|j| {
                        let a = (&branches[i].base, own[i].as_slice());
                        let b = (&branches[j].base, own[j].as_slice());
                        !self.resolver.probe(|r| flats_disjoint(a, b, r, 0))
                    })
                });
                let by_type = if overlapping {
                    self.resolver
                        .probe(|r| oneof_by_type(&branches, &alone, &own, r))
                } else {
                    None
                };
                if let Some(excluded) = by_type {
                    // Values of an excluded type satisfy two alternatives (or none): no
                    // branch keeps them; on every other type the branches are disjoint.
                    let kept: Vec<Value> = TYPES
                        .iter()
                        .filter(|t| !excluded.contains(t))
                        .map(|t| Value::String(t.to_string()))
                        .collect();
                    let only = Map::from_iter([("type".to_string(), Value::Array(kept))]);
                    for b in branches.iter_mut() {
                        b.base = self.resolver.merge(
                            std::mem::take(&mut b.base),
                            only.clone(),
                            pointer,
                        )?;
                    }
                } else if let Some(pairs) = overlapping
                    .then(|| self.pairwise_complements(&branches, &alt_flats))
                    .flatten()
                {
                    // Exactly one: alternative i and the complement of every other one
                    // (the branches are then disjoint by construction).
                    for (b, cs) in branches.iter_mut().zip(pairs) {
                        for c in cs {
                            b.disjunctions.push(Disjunction::new(COMPLEMENT, c, true));
                        }
                    }
                } else if overlapping {
                    self.refuse(
                        "oneOf",
                        pointer,
                        "alternatives that are not provably disjoint (exactly-one cannot be enforced)",
                    )?;
                }
            }
            if done.len() + todo.len() + branches.len() > MAX_EXPANSIONS {
                self.refuse(
                    named,
                    pointer,
                    "too many combinations of anyOf/oneOf alternatives",
                )?;
                break;
            }
            f.disjunctions.clear();
            todo.extend(branches);
        }
        let mut alts = Vec::new();
        for m in done {
            alts.push(self.keywords(&m, pointer)?);
        }
        Ok(Ebnf::Alt(alts))
    }

    /// Lowers one flat keyword map (no combinators).
    fn keywords(&mut self, m: &Map<String, Value>, pointer: &str) -> Result<Ebnf, SchemaError> {
        let mut types = type_set(m.get("type"));
        let mut forbidden: Vec<String> = Vec::new();
        let mut not_strings: Vec<Hir> = Vec::new();
        let mut not_bools: Vec<bool> = Vec::new();
        // Set by `not: {type: integer}` beside numbers: only non-integral ones are kept.
        let mut non_integer = false;
        // `not: {multipleOf: k}`: numbers that are no multiple of these.
        let mut not_multiples: Vec<u32> = Vec::new();
        if let Some(n) = m.get("not") {
            let neg = self.negation(n, pointer)?;
            if neg.nothing {
                return Ok(nothing());
            }
            not_strings = neg.strings;
            not_bools = neg.bools;
            if neg.strings_only {
                keep_only(&mut types, &["string"]);
            }
            let ts = neg.excluded;
            if !ts.is_empty() {
                let all = types
                    .take()
                    .unwrap_or_else(|| TYPES.iter().map(|s| s.to_string()).collect());
                let mut keep: Vec<String> = Vec::new();
                for t in all {
                    if ts.contains(&t) || (t == "integer" && ts.iter().any(|x| x == "number")) {
                        continue;
                    }
                    if t == "number" && ts.iter().any(|x| x == "integer") {
                        // Numbers that are not integers (see `NON_INTEGER`).
                        non_integer = true;
                    }
                    keep.push(t);
                }
                types = Some(keep);
            }
            if !neg.multiples.is_empty() {
                // `multipleOf` holds vacuously for non-numbers: its negation admits numbers.
                keep_only(&mut types, &["number", "integer"]);
                not_multiples = neg.multiples;
            }
            if !neg.absent.is_empty() {
                // `required` holds vacuously for non-objects, so its negation admits
                // objects only.
                keep_only(&mut types, &["object"]);
                forbidden.extend(neg.absent);
            }
        }
        for k in m.keys() {
            let reason = match k.as_str() {
                "not" => continue,
                "if" | "then" | "else" => "conditional schemas are not compiled",
                "dependencies" | "dependentRequired" | "dependentSchemas" => {
                    "property dependencies are not compiled"
                }
                "propertyNames" if !is_trivial(&m[k]) && self.property_names(m).is_none() => {
                    "propertyNames is compiled only as one string language (pattern, format, lengths or a string enum)"
                }
                "contains" | "minContains" | "maxContains" if !contains_compiles(m) => {
                    "contains is compiled only as a matching item (for at most three schemas) among items of one schema: no counts, tuples or maxItems"
                }
                "unevaluatedProperties" | "unevaluatedItems" if !is_trivial(&m[k]) => {
                    "unevaluated* is not compiled"
                }
                "$dynamicRef" | "$recursiveRef" => "dynamic references are not compiled",
                _ => continue,
            };
            self.refuse(k, pointer, reason)?;
        }
        if let Some(ts) = &types {
            for t in ts {
                if !TYPES.contains(&t.as_str()) && t != "integer" {
                    return Err(invalid("type", pointer, &format!("unknown type `{t}`")));
                }
            }
        }
        // Integral listed values are excluded along with the integer type.
        let kept = |v: &&Value| !(non_integer && json_type_of(v) == "integer");
        let listed: Option<Vec<Value>> = match m.get("enum") {
            Some(Value::Array(values)) => Some(values.iter().filter(kept).cloned().collect()),
            Some(_) => return Err(invalid("enum", pointer, "must be an array")),
            None => None,
        };
        let listed = listed.as_deref();
        if let Some(c) = m.get("const") {
            // Both may meet in a merged allOf / anyOf branch: the const, if enumerated.
            let ok = listed.is_none_or(|vs| vs.iter().any(|v| json_equal(v, c))) && kept(&c);
            let values = if ok { std::slice::from_ref(c) } else { &[] };
            let not = (not_strings.as_slice(), not_bools.as_slice());
            return self.enumerated(values, m, &types, &forbidden, not, pointer);
        }
        if let Some(values) = listed {
            let not = (not_strings.as_slice(), not_bools.as_slice());
            return self.enumerated(values, m, &types, &forbidden, not, pointer);
        }
        if types.is_none() {
            types = Some(TYPES.iter().map(|s| s.to_string()).collect());
        }
        let ts = types.unwrap_or_default();
        let mut alts = Vec::new();
        let has_number = ts.iter().any(|t| t == "number");
        for t in &ts {
            let e = match t.as_str() {
                "null" => e_sym(self.f().null),
                "boolean" => {
                    let (t, f) = (self.f().tru, self.f().fals);
                    let kept = [(true, t), (false, f)]
                        .into_iter()
                        .filter(|(b, _)| !not_bools.contains(b))
                        .map(|(_, s)| e_sym(s));
                    Ebnf::Alt(kept.collect())
                }
                "integer" if has_number => continue,
                "integer" => self.number(m, NumberSet::Integers, &not_multiples, pointer)?,
                "number" if non_integer => {
                    self.number(m, NumberSet::NonIntegers, &not_multiples, pointer)?
                }
                "number" => self.number(m, NumberSet::All, &not_multiples, pointer)?,
                "string" => self.string(m, &not_strings, pointer)?,
                "array" => self.array(m, pointer)?,
                "object" => self.object(m, &forbidden, pointer)?,
                _ => continue,
            };
            alts.push(e);
        }
        Ok(Ebnf::Alt(alts))
    }

    /// Fills the string rules now that every literal is known, and builds the grammar.
    fn finish(mut self, root: Symbol) -> Result<LoweredSchema, SchemaError> {
        self.stop
            .check()
            .map_err(|e| SchemaError::Grammar(Box::new(e)))?;
        let string = Symbol::T(self.f().string);
        let rules = std::mem::take(&mut self.string_rules);
        let exclusions: HashMap<NonterminalId, Vec<String>> =
            std::mem::take(&mut self.exclusions).into_iter().collect();
        for (n, rule) in rules {
            let mut alts = Vec::new();
            match rule {
                StringRule::Any => {
                    alts.push(e_sym(string));
                    alts.extend(self.literals.iter().map(|(_, t)| e_sym(Symbol::T(*t))));
                }
                StringRule::Except(names) => {
                    alts.push(e_sym(string));
                    alts.extend(
                        self.literals
                            .iter()
                            .filter(|(v, _)| !names.contains(v))
                            .map(|(_, t)| e_sym(Symbol::T(*t))),
                    );
                }
                StringRule::Constrained(t, mm) => {
                    let skip = exclusions.get(&n);
                    alts.push(e_sym(Symbol::T(t)));
                    alts.extend(
                        self.literals
                            .iter()
                            .filter(|(v, _)| mm.is_match(v) && skip.is_none_or(|s| !s.contains(v)))
                            .map(|(_, t)| e_sym(Symbol::T(*t))),
                    );
                }
            }
            self.define(n, Ebnf::Alt(alts));
        }
        let start = match root {
            Symbol::N(n) => n,
            Symbol::T(_) => {
                let s = self.nonterminal("start".into());
                self.define(s, e_sym(root));
                s
            }
        };
        let mut bnf = BnfBuilder::new(self.nonterminals.clone());
        let stop = |l: &Interrupt| l.check().map_err(|e| SchemaError::Grammar(Box::new(e)));
        for (i, b) in self.bodies.iter().enumerate() {
            if i % 1024 == 0 {
                stop(&self.stop)?;
            }
            let body = b.clone().unwrap_or_else(nothing);
            bnf.define(NonterminalId::new(i), &body, 0, Span::default())
                .map_err(|e| SchemaError::Grammar(Box::new(e)))?;
        }
        let (nonterminals, productions) = bnf.finish();
        let g = Grammar {
            terminals: self.terminals,
            nonterminals,
            productions,
            start,
            indenter: None,
            declared: Vec::new(),
            longest_match: false,
        };
        stop(&self.stop)?;
        let g =
            remove_unproductive_until(prune_unreachable(g), &self.stop).map_err(|e| match e {
                GrammarError::NoDocument { .. } => SchemaError::Unsatisfiable,
                e => SchemaError::Grammar(Box::new(e)),
            })?;
        let g = drop_unused_terminals(g);
        stop(&self.stop)?;
        check_acyclic(&g).map_err(|e| SchemaError::Grammar(Box::new(e)))?;
        check_no_hidden_left_recursion(&g).map_err(|e| SchemaError::Grammar(Box::new(e)))?;
        debug_assert_eq!(g.validate(), Ok(()));
        let mut dropped = self.dropped;
        dropped.extend(self.resolver.take_dropped());
        Ok(LoweredSchema {
            grammar: g,
            dropped,
        })
    }
}

/// Removes terminals no production uses (except ignored ones), renumbering the rest:
/// an unused terminal would still steal lexemes from the used ones.
fn drop_unused_terminals(mut g: Grammar) -> Grammar {
    let mut used = vec![false; g.terminals.len()];
    for p in &g.productions {
        for s in &p.rhs {
            if let Symbol::T(t) = s {
                used[t.index()] = true;
            }
        }
    }
    let mut map = vec![None; g.terminals.len()];
    let mut kept = Vec::new();
    for (i, t) in g.terminals.iter().enumerate() {
        if used[i] || t.ignored {
            map[i] = Some(TerminalId::new(kept.len()));
            kept.push(t.clone());
        }
    }
    for p in &mut g.productions {
        for s in &mut p.rhs {
            if let Symbol::T(t) = s {
                // Every terminal in a production was marked used above.
                *t = map[t.index()].expect("used terminal");
            }
        }
    }
    g.terminals = kept;
    g
}

fn key_ref(node: &Value) -> Option<String> {
    let m = node.as_object()?;
    let r = m.get("$ref")?.as_str()?;
    m.keys()
        .all(|k| k == "$ref" || !ASSERTIONS.contains(&k.as_str()))
        .then(|| r.to_string())
}

/// Narrows a `type` list (`None`: every type) to those of `kept` that are in it.
fn keep_only(types: &mut Option<Vec<String>>, kept: &[&str]) {
    let all = types
        .take()
        .unwrap_or_else(|| TYPES.iter().map(|s| s.to_string()).collect());
    *types = Some(
        all.into_iter()
            .filter(|x| kept.contains(&x.as_str()))
            .collect(),
    );
}

/// Keywords that constrain values of one JSON type (and hold for every other type).
fn constrains(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "minLength" | "maxLength" | "pattern" | "format" => "string",
        "multipleOf" | "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => "number",
        "items" | "prefixItems" | "additionalItems" | "minItems" | "maxItems" | "uniqueItems"
        | "contains" | "minContains" | "maxContains" => "array",
        "required"
        | "properties"
        | "patternProperties"
        | "additionalProperties"
        | "minProperties"
        | "maxProperties"
        | "propertyNames"
        | "dependencies"
        | "dependentRequired"
        | "dependentSchemas" => "object",
        _ => return None,
    })
}

/// Whether a flat schema (its keywords `m`, no pending disjunctions) accepts every value
/// of type `t`; `false` when not known.
fn accepts_all_of(m: &Map<String, Value>, t: &str) -> bool {
    m.iter().all(|(k, v)| match k.as_str() {
        "type" => type_set(Some(v)).is_some_and(|ts| ts.iter().any(|x| x == t)),
        k if !ASSERTIONS.contains(&k) => true,
        k => constrains(k).is_some_and(|c| c != t),
    })
}

/// The only names objects of a flat schema may have (`additionalProperties: false`, no
/// `patternProperties`): its declared properties.
fn closed_names(m: &Map<String, Value>) -> Option<Vec<String>> {
    if m.get("additionalProperties") != Some(&Value::Bool(false))
        || m.contains_key("patternProperties")
    {
        return None;
    }
    Some(
        m.get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default(),
    )
}

/// Whether an array schema's `contains` lowers exactly: at least one matching item for
/// each of up to [`MAX_CONTAINS`] schemas (no `minContains` above one, no `maxContains`),
/// items of one schema, at most one item required and no maximum (counting around the
/// witnesses is not compiled).
fn contains_compiles(m: &Map<String, Value>) -> bool {
    let small = |k: &str, most: u64| {
        m.get(k)
            .is_none_or(|v| v.as_u64().is_some_and(|n| n <= most))
    };
    let conds = m.get("contains").map_or(0, |c| contains_list(c).len());
    (1..=MAX_CONTAINS).contains(&conds)
        && (conds == 1 || !m.contains_key("minContains"))
        && small("minContains", 1)
        && small("minItems", 1)
        && !m.contains_key("maxContains")
        && !m.contains_key("maxItems")
        && !m.contains_key("prefixItems")
        && !m.get("items").is_some_and(Value::is_array)
        && m.get("items") != Some(&Value::Bool(false))
}

/// Most `contains` one array may have to witness (their orders grow factorially).
const MAX_CONTAINS: usize = 3;

/// The kind of the disjunctions `oneOf` adds to a branch: the union forms of another
/// alternative's complement (an `anyOf` whose keywords merge after the branch's own).
const COMPLEMENT: &str = "oneOf/complement";

/// The disjunctions still to distribute over a flat schema (see [`Flat::disjunctions`]).
type Disjunctions = Vec<Disjunction>;

/// A flat schema as its own keywords and the disjunctions still to distribute over them.
type Pending<'s> = (&'s Map<String, Value>, &'s [Disjunction]);

/// Lowers a parsed schema.
pub fn lower(
    schema: &Value,
    opts: &SchemaOptions,
    stop: &Interrupt,
) -> Result<LoweredSchema, SchemaError> {
    let schema = super::draft::normalize(schema);
    let schema: &Value = &schema;
    let mut l = Lowerer::new(schema, *opts, stop.clone());
    let root = l.schema(schema, "")?;
    l.finish(root)
}

/// A counted string terminal: its count and the pattern its characters match.
#[derive(Clone, PartialEq, Eq, Hash)]
struct CountedPattern {
    counted: Counted,
    regex: String,
    also: Vec<String>,
    except: Vec<String>,
}

impl CountedPattern {
    fn terminal(&self, name: &str) -> Terminal {
        Terminal {
            name: name.to_string(),
            regex: self.regex.clone(),
            priority: Priority::default(),
            ignored: false,
            droppable: false,
            also: self.also.clone(),
            except: self.except.clone(),
            counted: Some(self.counted.clone()),
            divisibility: Vec::new(),
            special: None,
            mode: LexMode::default(),
            span: Span::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ordered_splits;
    use crate::compile::frontend::json_schema::{compile_value, SchemaOptions};
    use crate::compile::grammar::ir::{Production, Symbol};
    use crate::ids::TerminalId;
    use serde_json::Value;

    #[test]
    fn subschemas_differing_only_in_annotations_share_their_rules() {
        let object = |note: &str| {
            serde_json::json!({
                "type": "object", "description": note, "x-vendor": note,
                "properties": {"k": {"type": "integer", "minimum": 3, "title": note}}
            })
        };
        let schema = |a: Value, b: Value| {
            let s = serde_json::json!({"type": "object", "properties": {"a": a, "b": b}});
            compile_value(&s, &SchemaOptions::default())
                .expect("compiles")
                .grammar
        };
        let same = schema(object("one"), object("one"));
        let annotated = schema(object("one"), object("two"));
        assert_eq!(annotated.nonterminals.len(), same.nonterminals.len());
        assert_eq!(annotated.productions.len(), same.productions.len());
        // An assertion that differs still gets rules of its own.
        let mut other = object("one");
        other["properties"]["k"]["minimum"] = serde_json::json!(4);
        assert!(schema(object("one"), other).nonterminals.len() > same.nonterminals.len());
    }

    /// A property declared alike in several objects is one `key : value` nonterminal,
    /// whose `: value` is shared with every key of that value; a different value gets
    /// its own pair. So the parser states after a key and after its colon are made once.
    #[test]
    fn alike_properties_share_one_pair_across_objects() {
        let s = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"name": {"type": "string"}, "x": {"type": "integer"}}},
            "b": {"type": "object", "properties": {"name": {"type": "string"}, "y": {"type": "boolean"}}},
            "c": {"type": "object", "properties": {"name": {"type": "integer"}, "z": {"type": "string"}}}
        }});
        let g = compile_value(&s, &SchemaOptions::default())
            .expect("compiles")
            .grammar;
        let term = |name: &str| {
            let i = g.terminals.iter().position(|t| t.name == name);
            Symbol::T(TerminalId::new(
                i.unwrap_or_else(|| panic!("no terminal {name}")),
            ))
        };
        let key_pairs = |key: Symbol| -> Vec<&Production> {
            g.productions
                .iter()
                .filter(|p| p.rhs.len() == 2 && p.rhs[0] == key)
                .collect()
        };
        // "name" with a string value (twice) and with an integer value.
        let names = key_pairs(term("\"name\""));
        assert_eq!(names.len(), 2, "{names:?}");
        // "z" is a string too: its pair ends in the same `: value` as "name"'s string one.
        let z = key_pairs(term("\"z\""));
        assert_eq!(z.len(), 1);
        assert!(names.iter().any(|p| p.rhs[1] == z[0].rhs[1]));
        // Each pair is used where its objects list their members, not written out again.
        let colon = term(":");
        let colon_rules = g
            .productions
            .iter()
            .filter(|p| p.rhs.first() == Some(&colon))
            .count();
        // String, integer, boolean, the three objects, and any value (the additional
        // properties every object allows).
        assert_eq!(colon_rules, 7, "one `: value` per value schema");
    }

    /// Lengths from `COUNTED_FREE_PATTERN_FROM` beside a pattern or format with no
    /// bounded repetition are counted; beside one that counts characters itself they are
    /// unrolled until `COUNTED_FROM`; shorter ones always are.
    #[test]
    fn lengths_beside_free_patterns_are_counted_from_their_own_bound() {
        use super::{COUNTED_FREE_PATTERN_FROM as FREE, COUNTED_FROM};
        let counted = |extra: Value, max: u64| {
            let mut s = serde_json::json!({"type": "string", "maxLength": max});
            for (k, v) in extra.as_object().expect("an object") {
                s[k] = v.clone();
            }
            let g = compile_value(&s, &SchemaOptions::default())
                .expect("compiles")
                .grammar;
            g.terminals.iter().any(|t| t.counted.is_some())
        };
        let email = serde_json::json!({"format": "email"});
        let free = serde_json::json!({"pattern": "^\\S+@\\S+$"});
        // `[a-z]+` spelled with a bound: still exact to count, but it counts by itself.
        let bounded = serde_json::json!({"pattern": "^(?:[a-z]{1,3})+$"});
        assert!(counted(email.clone(), FREE));
        assert!(counted(free.clone(), FREE));
        assert!(!counted(email, FREE - 1));
        assert!(!counted(free, FREE - 1));
        assert!(!counted(bounded.clone(), COUNTED_FROM - 1));
        assert!(counted(bounded, COUNTED_FROM));
    }

    #[test]
    fn ordered_splits_are_every_ordered_partition_once() {
        // The ordered Bell (Fubini) numbers: 1, 1, 3, 13, 75.
        for (n, want) in [(0u32, 1usize), (1, 1), (2, 3), (3, 13), (4, 75)] {
            let set = (1u32 << n) - 1;
            let splits = ordered_splits(set);
            assert_eq!(splits.len(), want, "{n} elements");
            let mut seen = std::collections::HashSet::new();
            for s in &splits {
                // Nonempty, pairwise disjoint groups covering the set.
                assert!(s.iter().all(|&g| g != 0));
                assert_eq!(s.iter().fold(0, |a, &g| a | g), set);
                assert_eq!(s.iter().map(|g| g.count_ones()).sum::<u32>(), n);
                assert!(seen.insert(s.clone()), "{s:?} twice");
            }
        }
    }
}

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
    Counted, Divisibility, Grammar, Nonterminal, Priority, Symbol, Terminal, MAX_DIVISOR,
};
use crate::compile::grammar::prune::{
    check_acyclic, check_no_hidden_left_recursion, prune_unreachable, remove_unproductive,
};
use crate::compile::lexer::build::counted_is_exact;
use crate::ids::{NonterminalId, TerminalId};

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
    fn new(root: &'a Value, opts: SchemaOptions) -> Self {
        let mut l = Lowerer {
            resolver: Resolver::new(root, opts.lenient),
            opts,
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
            also: key.1.clone(),
            except: key.2.clone(),
            counted: None,
            divisibility: key.4.clone(),
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

    /// For each branch of a `oneOf`, the complement of every other alternative (see
    /// `complement`); where one has none, its complement within the branch's finite set
    /// of names (`complement_within`). `None` when some pair has neither.
    fn pairwise_complements(
        &self,
        branches: &[Flat],
        alt_flats: &[(Flat, &str)],
    ) -> Option<Vec<Vec<Forms>>> {
        // Each alternative's complement, when it has a compiled form (computed only here:
        // deep ones are costly, and disjoint alternatives never need them).
        let complements: Vec<Option<Forms>> = alt_flats
            .iter()
            .map(|(af, ap)| self.resolver.probe(|r| complement(af, ap, r)))
            .collect();
        let mut out = Vec::with_capacity(branches.len());
        for (i, b) in branches.iter().enumerate() {
            let names = closed_names(&b.base);
            let mut cs = Vec::new();
            for (j, c) in complements.iter().enumerate() {
                if i == j {
                    continue;
                }
                let c = match (c, &names) {
                    (Some(c), _) => c.clone(),
                    (None, Some(names)) => {
                        let (af, ap) = &alt_flats[j];
                        self.resolver
                            .probe(|r| complement_within(af, ap, r, names))?
                    }
                    (None, None) => return None,
                };
                cs.push(c);
            }
            out.push(cs);
        }
        Some(out)
    }

    /// The values satisfying exactly one of `alts` when every alternative is a finite
    /// list: the validator decides each listed value (see `finite`), so overlapping
    /// lists, numerically equal spellings and context keywords are all exact.
    fn finite_oneof(&self, alts: &[(Value, String)]) -> Option<Vec<Value>> {
        let values = oneof_candidates(alts, &self.resolver)?;
        let node =
            serde_json::json!({ "oneOf": alts.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>() });
        finite::filter(self.resolver.root(), &node, &values)
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

    /// `enum`/`const`: the listed values that the rest of the schema accepts.
    fn enumerated(
        &mut self,
        values: &[Value],
        m: &Map<String, Value>,
        types: &Option<Vec<String>>,
        forbidden: &[String],
        (not_strings, not_bools): (&[Hir], &[bool]),
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        // Strings outside every language of `not_strings`.
        let kept = ValueMatcher::all(&[])
            .and_then(|mm| mm.except(not_strings))
            .map_err(|e| SchemaError::Unsupported {
                keyword: "not".into(),
                pointer: pointer.to_string(),
                reason: e,
            })?;
        let mut alts = Vec::new();
        for v in values {
            if v.as_str().is_some_and(|s| !kept.is_match(s))
                || v.as_bool().is_some_and(|b| not_bools.contains(&b))
            {
                continue;
            }
            let t = json_type_of(v);
            if !type_allows(types, t) {
                continue;
            }
            if v.as_object()
                .is_some_and(|o| forbidden.iter().any(|f| o.contains_key(f)))
            {
                continue;
            }
            if !self.value_ok(v, m, pointer)? {
                continue;
            }
            alts.push(self.exact_value(v)?);
        }
        Ok(Ebnf::Alt(alts))
    }

    /// Whether an enumerated value satisfies the scalar keywords beside the `enum`.
    fn value_ok(
        &mut self,
        v: &Value,
        m: &Map<String, Value>,
        pointer: &str,
    ) -> Result<bool, SchemaError> {
        match v {
            Value::String(s) => {
                if let Some(n) = count(m, "minLength", pointer)? {
                    if (s.chars().count() as u64) < n {
                        return Ok(false);
                    }
                }
                if let Some(n) = count(m, "maxLength", pointer)? {
                    if (s.chars().count() as u64) > n {
                        return Ok(false);
                    }
                }
                for p in m.get("pattern").map(contains_list).unwrap_or_default() {
                    let Some(p) = p.as_str() else {
                        return Err(invalid("pattern", pointer, "must be a string"));
                    };
                    match parse_pattern(p).and_then(|h| ValueMatcher::new(&h)) {
                        Ok(mm) if !mm.is_match(s) => return Ok(false),
                        Ok(_) => {}
                        Err(e) => {
                            self.refuse("pattern", pointer, &e)?;
                        }
                    }
                }
                Ok(true)
            }
            Value::Number(n) => {
                let Some(x) = n.as_f64() else { return Ok(true) };
                let get = |k: &str| m.get(k).and_then(Value::as_f64);
                let excl_bool = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
                if let Some(lo) = get("minimum") {
                    if x < lo || (excl_bool("exclusiveMinimum") && x == lo) {
                        return Ok(false);
                    }
                }
                if let Some(hi) = get("maximum") {
                    if x > hi || (excl_bool("exclusiveMaximum") && x == hi) {
                        return Ok(false);
                    }
                }
                if get("exclusiveMinimum").is_some_and(|lo| x <= lo)
                    || get("exclusiveMaximum").is_some_and(|hi| x >= hi)
                {
                    return Ok(false);
                }
                if let Some(d) = get("multipleOf") {
                    if d > 0.0 && (x / d).fract() != 0.0 {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Value::Array(_) | Value::Object(_) => {
                let structural = [
                    "items",
                    "prefixItems",
                    "additionalItems",
                    "minItems",
                    "maxItems",
                    "uniqueItems",
                    "properties",
                    "required",
                    "additionalProperties",
                    "patternProperties",
                    "minProperties",
                    "maxProperties",
                ];
                if let Some(k) = structural.iter().find(|k| m.contains_key(**k)) {
                    self.refuse(
                        "enum",
                        pointer,
                        &format!("an array/object value beside `{k}`"),
                    )?;
                }
                Ok(true)
            }
            _ => Ok(true),
        }
    }

    /// Exactly one JSON value (objects with their keys in the order given).
    fn exact_value(&mut self, v: &Value) -> Result<Ebnf, SchemaError> {
        let fx = self.f();
        let (lb, rb, lk, rk, comma, colon) = (
            fx.lbrace, fx.rbrace, fx.lbrack, fx.rbrack, fx.comma, fx.colon,
        );
        Ok(match v {
            Value::Null => e_sym(fx.null),
            Value::Bool(true) => e_sym(fx.tru),
            Value::Bool(false) => e_sym(fx.fals),
            Value::String(s) => e_sym(Symbol::T(self.literal(s))),
            Value::Number(n) => {
                let re = value_spellings(n);
                e_sym(Symbol::T(self.terminal(&n.to_string(), &re, 0, false)))
            }
            Value::Array(a) => {
                let mut seq = vec![e_sym(lk)];
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        seq.push(e_sym(comma));
                    }
                    seq.push(self.exact_value(x)?);
                }
                seq.push(e_sym(rk));
                Ebnf::Seq(seq)
            }
            Value::Object(o) => {
                let mut seq = vec![e_sym(lb)];
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        seq.push(e_sym(comma));
                    }
                    seq.push(e_sym(Symbol::T(self.literal(k))));
                    seq.push(e_sym(colon));
                    seq.push(self.exact_value(x)?);
                }
                seq.push(e_sym(rb));
                Ebnf::Seq(seq)
            }
        })
    }

    /// Numbers of `set` meeting `m`'s bounds and `multipleOf`, and no multiple of any
    /// of `not_multiples`.
    fn number(
        &mut self,
        m: &Map<String, Value>,
        set: NumberSet,
        not_multiples: &[u32],
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        if set == NumberSet::All && !not_multiples.is_empty() {
            // The non-multiples of integers: the other integers and every non-integer.
            let ints = self.number(m, NumberSet::Integers, not_multiples, pointer)?;
            let fracs = self.number(m, NumberSet::NonIntegers, &[], pointer)?;
            return Ok(Ebnf::Alt(vec![ints, fracs]));
        }
        let mut integer = set == NumberSet::Integers;
        // Divisibility conditions the lexer runs as remainder automata.
        let mut divisible: Vec<Divisibility> = Vec::new();
        if set == NumberSet::Integers {
            divisible.extend(not_multiples.iter().map(|&divisor| Divisibility {
                divisor,
                multiple: false,
            }));
        }
        // The multiples (and the non-integers), as languages every number terminal here
        // is intersected with.
        let mut div: Vec<String> = Vec::new();
        if set == NumberSet::NonIntegers {
            div.push(NON_INTEGER.to_string());
        }
        if let Some(d) = m.get("multipleOf") {
            match d.as_f64() {
                Some(1.0) => integer = true,
                // Rust prints a finite f64 in plain decimal: the divisor as written.
                Some(x) if x > 0.0 => match multiple_of(&format!("{x}")) {
                    Some((re, integral)) => {
                        integer |= integral;
                        div.push(re);
                    }
                    None => match integer_divisor(d) {
                        Some(divisor) => {
                            integer = true;
                            divisible.push(Divisibility {
                                divisor,
                                multiple: true,
                            });
                        }
                        None => self.refuse(
                            "multipleOf",
                            pointer,
                            &format!(
                                "divisibility is compiled only by powers of ten and by integers up to {MAX_DIVISOR}"
                            ),
                        )?,
                    },
                },
                _ => return Err(invalid("multipleOf", pointer, "must be a positive number")),
            }
        }
        // Bounds, as exact rationals limited to integers.
        let mut lo: Option<(f64, bool)> = None;
        let mut hi: Option<(f64, bool)> = None;
        let num = |k: &str| -> Result<Option<f64>, SchemaError> {
            match m.get(k) {
                None => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(Value::Bool(_)) => Ok(None),
                Some(_) => Err(invalid(k, pointer, "must be a number")),
            }
        };
        let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        if let Some(x) = num("minimum")? {
            lo = Some((x, flag("exclusiveMinimum")));
        }
        if let Some(x) = num("maximum")? {
            hi = Some((x, flag("exclusiveMaximum")));
        }
        if let Some(x) = num("exclusiveMinimum")? {
            if lo.is_none_or(|(l, _)| x >= l) {
                lo = Some((x, true));
            }
        }
        if let Some(x) = num("exclusiveMaximum")? {
            if hi.is_none_or(|(h, _)| x <= h) {
                hi = Some((x, true));
            }
        }
        if lo.is_none() && hi.is_none() {
            let re = if integer { ANY_INTEGER } else { ANY_NUMBER };
            let name = if integer { "INTEGER" } else { "NUMBER" };
            return Ok(self.number_terminal(name, re, div, divisible));
        }
        const LIMIT: f64 = 1e30;
        let to_bound = |b: Option<(f64, bool)>, upper: bool| -> Option<Option<Bound>> {
            match b {
                None => Some(None),
                Some((x, _)) if !x.is_finite() || x.abs() > LIMIT => None,
                Some((x, excl)) if integer => {
                    // Integers in the range: round the bound inward.
                    let v = if upper {
                        if excl && x.fract() == 0.0 {
                            x - 1.0
                        } else {
                            x.floor()
                        }
                    } else if excl && x.fract() == 0.0 {
                        x + 1.0
                    } else {
                        x.ceil()
                    };
                    Some(Some(Bound {
                        value: v as i128,
                        exclusive: false,
                    }))
                }
                Some((x, excl)) if x.fract() == 0.0 => Some(Some(Bound {
                    value: x as i128,
                    exclusive: excl,
                })),
                Some(_) => None,
            }
        };
        let fractional = |b: Option<(f64, bool)>| b.is_some_and(|(x, _)| x.fract() != 0.0);
        if !integer
            && (fractional(lo) || fractional(hi))
            && [lo, hi]
                .iter()
                .flatten()
                .all(|(x, _)| x.is_finite() && x.abs() <= LIMIT)
        {
            return self.decimal_between(lo, hi, div, pointer);
        }
        let (Some(lb), Some(ub)) = (to_bound(lo, false), to_bound(hi, true)) else {
            let kw = if lo.is_some_and(|(x, _)| x.fract() != 0.0 || x.abs() > LIMIT) {
                "minimum"
            } else {
                "maximum"
            };
            self.refuse(
                kw,
                pointer,
                "a non-integer bound on a number is not compiled",
            )?;
            let re = if integer { ANY_INTEGER } else { ANY_NUMBER };
            return Ok(self.number_terminal("NUMBER", re, div, divisible));
        };
        let re = if integer {
            integer_range(lb, ub)
        } else {
            decimal_range(lb, ub)
        };
        Ok(match re {
            None => nothing(),
            Some(re) => {
                let name = format!(
                    "{}[{:?}..{:?}]",
                    if integer { "INTEGER" } else { "NUMBER" },
                    lo,
                    hi
                );
                self.number_terminal(&name, &re, div, divisible)
            }
        })
    }

    /// A number terminal: `re` intersected with `also` (the multiples, when constrained).
    fn number_terminal(
        &mut self,
        name: &str,
        re: &str,
        also: Vec<String>,
        divisible: Vec<Divisibility>,
    ) -> Ebnf {
        let key = (re.to_string(), also, Vec::new(), 0, divisible);
        e_sym(Symbol::T(self.make_terminal(name, key, false)))
    }

    /// Decimals (no exponent) between bounds of which one at least is not an integer:
    /// the lower half-line's terminal intersected with the upper one's.
    fn decimal_between(
        &mut self,
        lo: Option<(f64, bool)>,
        hi: Option<(f64, bool)>,
        div: Vec<String>,
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        if let (Some((l, le)), Some((h, he))) = (lo, hi) {
            if l > h || (l == h && (le || he)) {
                return Ok(nothing());
            }
        }
        let half = |b: Option<(f64, bool)>, side: Side| -> Option<String> {
            let (x, exclusive) = b?;
            if x.fract() == 0.0 {
                let bound = Some(Bound {
                    value: x as i128,
                    exclusive,
                });
                return match side {
                    Side::Above => decimal_range(bound, None),
                    Side::Below => decimal_range(None, bound),
                };
            }
            // Rust prints a finite f64 in plain decimal, shortest round-trip digits: the
            // bound as the schema wrote it.
            decimal_half(&format!("{x}"), exclusive, side)
        };
        let mut halves = Vec::new();
        for (b, side, kw) in [(lo, Side::Above, "minimum"), (hi, Side::Below, "maximum")] {
            match (b, half(b, side)) {
                (_, Some(re)) => halves.push(re),
                (None, None) => {}
                (Some(_), None) => {
                    self.refuse(kw, pointer, "a bound that is not a plain decimal")?;
                    halves.push(ANY_NUMBER.to_string());
                }
            }
        }
        // At least one bound is set (the caller checked).
        let main = halves.remove(0);
        halves.extend(div);
        let name = format!("NUMBER[{lo:?}..{hi:?}]");
        Ok(self.number_terminal(&name, &main, halves, Vec::new()))
    }

    /// A string schema: the intersection of its `pattern`, `format` and length languages,
    /// minus the languages of `except` (from a `not`).
    fn string(
        &mut self,
        m: &Map<String, Value>,
        except: &[Hir],
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        let mut parts: Vec<(&str, Hir)> = Vec::new();
        // One pattern, or the list an allOf merge leaves: every one must match.
        for p in m.get("pattern").map(contains_list).unwrap_or_default() {
            let Some(p) = p.as_str() else {
                return Err(invalid("pattern", pointer, "must be a string"));
            };
            match parse_pattern(p) {
                Ok(h) => parts.push(("pattern", h)),
                Err(e) => self.refuse("pattern", pointer, &format!("{e} in /{p}/"))?,
            }
        }
        if let Some(f) = m.get("format").and_then(Value::as_str) {
            match format(f) {
                Format::Regular(re) => parts.push(("format", parse_value_regex(&re))),
                Format::NotRegular => self.refuse(
                    "format",
                    pointer,
                    &format!("format `{f}` is not a regular language"),
                )?,
                Format::Annotation => {}
            }
        }
        let min = count(m, "minLength", pointer)?;
        let max = count(m, "maxLength", pointer)?;
        // The length bounds as one more value language, unless a part already implies them.
        let lo = min.unwrap_or(0);
        let implied = parts.iter().any(|(_, h)| {
            let (pmin, pmax) = char_len(h);
            pmin as u64 >= lo && max.is_none_or(|x| pmax.is_some_and(|p| p as u64 <= x))
        });
        if (lo > 0 || max.is_some()) && !implied {
            if max.is_some_and(|x| x < lo) {
                return Ok(nothing());
            }
            let longest = max.unwrap_or(lo);
            let kw = if max.is_some() {
                "maxLength"
            } else {
                "minLength"
            };
            // Beside other constraints, a length is counted from `COUNTED_FROM`, or from
            // `COUNTED_FREE_PATTERN_FROM` when none of them counts characters itself.
            let counts_beside = longest >= COUNTED_FROM
                || longest >= COUNTED_FREE_PATTERN_FROM
                    && !parts.iter().any(|(_, h)| has_bounded_repetition(h))
                    && !except.iter().any(has_bounded_repetition);
            if longest > MAX_LEXER_COUNT {
                self.refuse(
                    kw,
                    pointer,
                    &format!("lengths above {MAX_LEXER_COUNT} characters are not compiled"),
                )?;
            } else if longest >= COUNTED_LENGTH_FROM && parts.is_empty() && except.is_empty() {
                // The length is the only constraint: the lexer counts characters instead
                // of unrolling them (`ir::Counted`).
                return Ok(self.counted_string(lo as u32, max.map(|x| x as u32), pointer));
            } else if let Some(e) = counts_beside
                .then(|| self.counted_pattern(&parts, except, lo as u32, max, pointer))
                .transpose()?
                .flatten()
            {
                return Ok(e);
            } else if longest > MAX_COUNTED_LENGTH {
                self.refuse(
                    kw,
                    pointer,
                    &format!(
                        "lengths above {MAX_COUNTED_LENGTH} characters are not compiled beside \
                         a pattern, format or `not` that a longer string cannot always still \
                         complete"
                    ),
                )?;
            } else {
                parts.push((
                    kw,
                    Hir::repetition(Repetition {
                        min: lo as u32,
                        max: max.map(|x| x as u32),
                        greedy: true,
                        sub: Box::new(any_char()),
                    }),
                ));
            }
        }
        if parts.is_empty() {
            if except.is_empty() {
                return Ok(e_sym(self.any_string()));
            }
            parts.push(("not", any_string_hir()));
        }
        // The terminal is the intersection of the parts' quoted languages: the first as
        // its regex, the others as `also` (intersected in the lexer builder).
        let (mut res, not_res) = quoted_parts(&parts, except, pointer)?;
        let matcher = value_matcher(&parts, except, pointer)?;
        let key = format!("{}\u{1}{}", res.join("\u{0}"), not_res.join("\u{0}"));
        if let Some(&n) = self.string_memo.get(&key) {
            return Ok(e_sym(Symbol::N(n)));
        }
        let re = res.remove(0);
        let t = self.terminal_also(&format!("STRING<{pointer}>"), &re, res, not_res);
        let n = self.string_nt(key, StringRule::Constrained(t, matcher));
        Ok(e_sym(Symbol::N(n)))
    }

    /// A string of `lo` to `hi` characters and no other constraint, as a counted
    /// terminal.
    fn counted_string(&mut self, lo: u32, hi: Option<u32>, pointer: &str) -> Ebnf {
        let key = format!("\u{2}{lo}..{hi:?}");
        if let Some(&n) = self.string_memo.get(&key) {
            return e_sym(Symbol::N(n));
        }
        let t = CountedPattern {
            counted: counted_chars(lo, hi),
            regex: ANY_STRING.to_string(),
            also: Vec::new(),
            except: Vec::new(),
        };
        let t = self.counted_terminal(&format!("STRING<{pointer}>"), t);
        let matcher = ValueMatcher::lengths(u64::from(lo), hi.map(u64::from));
        let n = self.string_nt(key, StringRule::Constrained(t, matcher));
        e_sym(Symbol::N(n))
    }

    /// A string of `lo` to `hi` characters in the languages `parts` and none of `except`,
    /// as a counted terminal with that pattern — when the lexer counts it exactly (a
    /// value the pattern can complete after `k` more characters can also after `k + 1`:
    /// `lexer::build::counted_is_exact`). `None` otherwise.
    fn counted_pattern(
        &mut self,
        parts: &[(&str, Hir)],
        except: &[Hir],
        lo: u32,
        hi: Option<u64>,
        pointer: &str,
    ) -> Result<Option<Ebnf>, SchemaError> {
        let hi = hi.map(|x| x as u32);
        let mut parts = parts.to_vec();
        if parts.is_empty() {
            parts.push(("not", any_string_hir()));
        }
        let (mut res, not_res) = quoted_parts(&parts, except, pointer)?;
        let regex = res.remove(0);
        let t = CountedPattern {
            counted: counted_chars(lo, hi),
            regex,
            also: res,
            except: not_res,
        };
        let pattern = format!(
            "{}\u{0}{}\u{1}{}",
            t.regex,
            t.also.join("\u{0}"),
            t.except.join("\u{0}")
        );
        let key = format!("\u{2}{lo}..{hi:?}\u{1}{pattern}");
        if let Some(&n) = self.string_memo.get(&key) {
            return Ok(Some(e_sym(Symbol::N(n))));
        }
        // A pattern the lexer builder cannot take (too large a DFA, say) is not counted
        // either: the caller unrolls or refuses it, and the builder reports it there.
        let exact = *self
            .counts_exactly
            .entry(pattern)
            .or_insert_with(|| counted_is_exact(&t.terminal("")).unwrap_or(false));
        if !exact {
            return Ok(None);
        }
        let matcher =
            value_matcher(&parts, except, pointer)?.with_lengths(u64::from(lo), hi.map(u64::from));
        let t = self.counted_terminal(&format!("STRING<{pointer}>"), t);
        let n = self.string_nt(key, StringRule::Constrained(t, matcher));
        Ok(Some(e_sym(Symbol::N(n))))
    }

    /// `uniqueItems` over items drawn from a short list of values (an `enum`/`const` of
    /// strings, booleans or null): one nonterminal per set of values used so far, so no
    /// value can come twice. `None` when the items are not such a list.
    fn unique_items(
        &mut self,
        m: &Map<String, Value>,
        min: u64,
        max: Option<u64>,
        pointer: &str,
    ) -> Result<Option<Ebnf>, SchemaError> {
        let tuple = m.contains_key("prefixItems") || m.get("items").is_some_and(Value::is_array);
        let Some(items) = m
            .get("items")
            .filter(|_| !tuple && !m.contains_key("contains"))
        else {
            return Ok(None);
        };
        let at = format!("{pointer}/items");
        let Some(listed) = oneof_candidates(&[(items.clone(), at)], &self.resolver) else {
            return Ok(None);
        };
        let Some(values) = finite::filter(self.resolver.root(), items, &listed) else {
            return Ok(None);
        };
        if values.len() > MAX_UNIQUE_VALUES
            || values
                .iter()
                .any(|v| v.is_number() || v.is_array() || v.is_object())
        {
            return Ok(None);
        }
        let k = values.len();
        let max = max.map_or(k, |x| (x as usize).min(k));
        let min = min as usize;
        if min > max {
            return Ok(Some(nothing()));
        }
        let mut syms = Vec::with_capacity(k);
        for v in &values {
            let e = self.exact_value(v)?;
            let n = self.nonterminal(format!("{pointer}/unique:{v}"));
            self.define(n, e);
            syms.push(Symbol::N(n));
        }
        let fx = self.f();
        let (lk, rk, comma) = (fx.lbrack, fx.rbrack, fx.comma);
        // used[s]: the values in bit set s are written; more may follow, each new.
        let used: Vec<NonterminalId> = (0..1usize << k)
            .map(|s| self.nonterminal(format!("{pointer}/unique{s:b}")))
            .collect();
        for (s, &nt) in used.iter().enumerate() {
            let n = s.count_ones() as usize;
            let mut alts = Vec::new();
            if n >= min {
                alts.push(eps());
            }
            if n < max {
                for (j, &sym) in syms.iter().enumerate().filter(|(j, _)| s & (1 << j) == 0) {
                    alts.push(Ebnf::Seq(vec![
                        e_sym(comma),
                        e_sym(sym),
                        e_sym(Symbol::N(used[s | 1 << j])),
                    ]));
                }
            }
            self.define(nt, Ebnf::Alt(alts));
        }
        let mut body = Vec::new();
        if min == 0 {
            body.push(eps());
        }
        if max > 0 {
            for (j, &sym) in syms.iter().enumerate() {
                body.push(Ebnf::Seq(vec![e_sym(sym), e_sym(Symbol::N(used[1 << j]))]));
            }
        }
        let body = Ebnf::Alt(body);
        Ok(Some(Ebnf::Seq(vec![e_sym(lk), body, e_sym(rk)])))
    }

    fn array(&mut self, m: &Map<String, Value>, pointer: &str) -> Result<Ebnf, SchemaError> {
        let min = count(m, "minItems", pointer)?.unwrap_or(0);
        let max = count(m, "maxItems", pointer)?;
        if min > MAX_COUNTED_ITEMS || max.is_some_and(|x| x > MAX_COUNTED_ITEMS) {
            let kw = if min > MAX_COUNTED_ITEMS {
                "minItems"
            } else {
                "maxItems"
            };
            self.refuse(
                kw,
                pointer,
                &format!("item counts above {MAX_COUNTED_ITEMS} are not compiled exactly"),
            )?;
        }
        let min = if min > MAX_COUNTED_ITEMS { 0 } else { min };
        let max = max.filter(|&x| x <= MAX_COUNTED_ITEMS);
        if m.get("uniqueItems") == Some(&Value::Bool(true)) && max.is_none_or(|x| x > 1) {
            if let Some(e) = self.unique_items(m, min, max, pointer)? {
                return Ok(e);
            }
            self.refuse(
                "uniqueItems",
                pointer,
                &format!(
                    "uniqueness of items is not a context-free property (compiled only over \
                     at most {MAX_UNIQUE_VALUES} listed strings, booleans or null)"
                ),
            )?;
        }
        let (prefix, rest, prefix_kw): (Vec<Value>, Value, &str) =
            match (m.get("prefixItems"), m.get("items")) {
                (Some(Value::Array(p)), items) => (
                    p.clone(),
                    items.cloned().unwrap_or(Value::Bool(true)),
                    "prefixItems",
                ),
                (_, Some(Value::Array(p))) => (
                    p.clone(),
                    m.get("additionalItems")
                        .cloned()
                        .unwrap_or(Value::Bool(true)),
                    "items",
                ),
                (_, Some(items)) => (Vec::new(), items.clone(), "items"),
                (_, None) => (Vec::new(), Value::Bool(true), "items"),
            };
        let mut item_syms = Vec::new();
        for (i, p) in prefix.iter().enumerate() {
            item_syms.push(self.schema(p, &format!("{pointer}/{prefix_kw}/{i}"))?);
        }
        let rest_ptr = if prefix.is_empty() || prefix_kw == "prefixItems" {
            format!("{pointer}/items")
        } else {
            format!("{pointer}/additionalItems")
        };
        let rest_sym = if rest == Value::Bool(false) {
            None
        } else {
            Some(self.schema(&rest, &rest_ptr)?)
        };
        let comma = self.f().comma;
        // Elements from index i on (`first`: nothing written yet).
        fn elements(
            i: u64,
            first: bool,
            items: &[Symbol],
            rest: Option<Symbol>,
            min: u64,
            max: Option<u64>,
            comma: Symbol,
        ) -> Ebnf {
            if max.is_some_and(|x| i >= x) {
                return eps();
            }
            let sep = |e: Ebnf| {
                if first {
                    e
                } else {
                    Ebnf::Seq(vec![e_sym(comma), e])
                }
            };
            if (i as usize) < items.len() {
                let this = Ebnf::Seq(vec![
                    sep(e_sym(items[i as usize])),
                    elements(i + 1, false, items, rest, min, max, comma),
                ]);
                return if i >= min {
                    Ebnf::Alt(vec![eps(), this])
                } else {
                    this
                };
            }
            let need = min.saturating_sub(i);
            let Some(r) = rest else {
                return if need > 0 { nothing() } else { eps() };
            };
            let allow = max.map(|x| x - i);
            let tail = |lo: u64, hi: Option<u64>| Ebnf::Repeat {
                inner: Box::new(Ebnf::Seq(vec![e_sym(comma), e_sym(r)])),
                min: lo as u32,
                max: hi.map(|h| h as u32),
            };
            if first {
                let some = Ebnf::Seq(vec![
                    e_sym(r),
                    tail(need.saturating_sub(1), allow.map(|a| a.saturating_sub(1))),
                ]);
                if need == 0 {
                    Ebnf::Alt(vec![eps(), some])
                } else {
                    some
                }
            } else {
                tail(need, allow)
            }
        }
        if max.is_some_and(|x| x < min) {
            return Ok(nothing());
        }
        let (lk, rk) = (self.f().lbrack, self.f().rbrack);
        if let (Some(c), Some(r)) = (m.get("contains"), rest_sym) {
            if contains_compiles(m) {
                let body = self.witnessed(&rest, &contains_list(c), r, pointer)?;
                return Ok(Ebnf::Seq(vec![e_sym(lk), body, e_sym(rk)]));
            }
        }
        let body = elements(0, true, &item_syms, rest_sym, min, max, comma);
        Ok(Ebnf::Seq(vec![e_sym(lk), body, e_sym(rk)]))
    }

    /// The items of an array (of schema `rest`, lowered as `r`) among which each of
    /// `conds` is matched by some item: for every ordered split of `conds` into groups,
    /// one witness per group (matching `rest` and the whole group) in that order, any
    /// items around them. Ambiguous where several items match; the GLR keeps every reading.
    fn witnessed(
        &mut self,
        rest: &Value,
        conds: &[Value],
        r: Symbol,
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        let comma = self.f().comma;
        let any = |e: Ebnf| Ebnf::Repeat {
            inner: Box::new(e),
            min: 0,
            max: None,
        };
        let mut alts = Vec::new();
        for groups in ordered_splits((1u32 << conds.len()) - 1) {
            let mut seq = vec![any(Ebnf::Seq(vec![e_sym(r), e_sym(comma)]))];
            for (i, g) in groups.iter().enumerate() {
                let mut all = vec![rest.clone()];
                all.extend(
                    (0..conds.len())
                        .filter(|k| g >> k & 1 == 1)
                        .map(|k| conds[k].clone()),
                );
                let w = self.schema(
                    &serde_json::json!({ "allOf": all }),
                    &format!("{pointer}/contains"),
                )?;
                if i > 0 {
                    seq.push(any(Ebnf::Seq(vec![e_sym(comma), e_sym(r)])));
                    seq.push(e_sym(comma));
                }
                seq.push(e_sym(w));
            }
            seq.push(any(Ebnf::Seq(vec![e_sym(comma), e_sym(r)])));
            alts.push(Ebnf::Seq(seq));
        }
        Ok(Ebnf::Alt(alts))
    }

    /// The union forms of a `not` that [`Self::negation`] would refuse but whose subschema
    /// has a complement (see `complement`): `not: {properties: …}`, bounds, items….
    fn not_as_complement(
        &mut self,
        m: &Map<String, Value>,
        pointer: &str,
    ) -> Option<Vec<(Value, String)>> {
        let n = m.get("not")?;
        // Would the direct forms refuse it? Asked leniently, then forgotten.
        let (lenient, reported) = (self.opts.lenient, self.dropped.len());
        self.opts.lenient = true;
        let direct = self.negation(n, pointer);
        let refused = self.dropped.len() > reported;
        self.dropped.truncate(reported);
        self.opts.lenient = lenient;
        if direct.is_err() || !refused {
            return None;
        }
        let at = format!("{pointer}/not");
        let f = self.resolver.probe(|r| r.flatten(n, &at).ok())?;
        self.resolver.probe(|r| complement(&f, &at, r))
    }

    /// What a `not` subschema excludes, in the forms compiled exactly: a conjunction of
    /// excluded types and absent names (so `anyOf` members negate one by one).
    fn negation(&mut self, n: &Value, pointer: &str) -> Result<Negation, SchemaError> {
        self.negation_at(n, pointer, 0)
    }

    /// [`Self::negation`] `depth` anyOf levels down (a reference cycle through `anyOf`
    /// would otherwise recurse forever).
    fn negation_at(
        &mut self,
        n: &Value,
        pointer: &str,
        depth: usize,
    ) -> Result<Negation, SchemaError> {
        if depth > MAX_NEGATION_DEPTH {
            self.refuse("not", pointer, "`not` of a recursive anyOf is not compiled")?;
            return Ok(Negation::default());
        }
        if is_trivial(n) {
            return Ok(Negation {
                nothing: true,
                ..Default::default()
            });
        }
        if *n == Value::Bool(false) {
            return Ok(Negation::default());
        }
        let flat = self.resolver.flatten(n, &format!("{pointer}/not"))?;
        if flat.never {
            return Ok(Negation::default());
        }
        if flat.base.is_empty() {
            if let [Disjunction {
                keyword: "anyOf",
                alternatives: alts,
                ..
            }] = flat.disjunctions.as_slice()
            {
                let mut out = Negation::default();
                for (alt, ap) in alts {
                    out = out.and(self.negation_at(alt, ap, depth + 1)?);
                }
                return Ok(out);
            }
        }
        if flat.disjunctions.is_empty() {
            let keys: Vec<&str> = flat
                .base
                .keys()
                .map(String::as_str)
                .filter(|k| ASSERTIONS.contains(k))
                .collect();
            if keys == ["type"] {
                return Ok(Negation {
                    excluded: type_set(flat.base.get("type")).unwrap_or_default(),
                    ..Default::default()
                });
            }
            if keys == ["required"] {
                if let Some([Value::String(name)]) =
                    flat.base["required"].as_array().map(Vec::as_slice)
                {
                    return Ok(Negation {
                        absent: vec![name.clone()],
                        ..Default::default()
                    });
                }
            }
            if let Some(values) = scalar_values(&flat.base) {
                let mut neg = Negation::default();
                let mut literals = Vec::new();
                for v in values {
                    match v {
                        Value::String(s) => literals.push(Hir::literal(s.as_bytes())),
                        Value::Bool(b) => neg.bools.push(b),
                        _ => neg.excluded.push("null".to_string()),
                    }
                }
                if !literals.is_empty() {
                    neg.strings.push(Hir::alternation(literals));
                }
                return Ok(neg);
            }
            if let Some((h, vacuous)) = string_language(&flat.base) {
                return Ok(Negation {
                    strings: vec![h],
                    strings_only: vacuous,
                    ..Default::default()
                });
            }
            if keys == ["multipleOf"] {
                if let Some(k) = integer_divisor(&flat.base["multipleOf"]) {
                    return Ok(Negation {
                        multiples: vec![k],
                        ..Default::default()
                    });
                }
            }
        }
        self.refuse(
            "not",
            pointer,
            "only `not` of types, of required properties, of one string language (pattern, format, string enum, lengths), or of an anyOf of those is compiled",
        )?;
        Ok(Negation::default())
    }

    /// The nonterminal for property names in the value language `h`, except `names`
    /// (declared names are lexed as their literals and belong to their own pairs).
    fn key_nt(
        &mut self,
        h: &Hir,
        names: &[String],
        pointer: &str,
    ) -> Result<NonterminalId, SchemaError> {
        self.key_nt_region(std::slice::from_ref(h), &[], names, pointer)
    }

    /// A key nonterminal for the names in every language of `ins` and in none of `outs`
    /// (one terminal, intersected and subtracted in the lexer builder), less `names`.
    fn key_nt_region(
        &mut self,
        ins: &[Hir],
        outs: &[Hir],
        names: &[String],
        pointer: &str,
    ) -> Result<NonterminalId, SchemaError> {
        let quoted = |h: &Hir| {
            quoted_regex(h).map_err(|e| SchemaError::Unsupported {
                keyword: "patternProperties".into(),
                pointer: pointer.to_string(),
                reason: e,
            })
        };
        let mut res = ins.iter().map(quoted).collect::<Result<Vec<_>, _>>()?;
        let not_res = outs.iter().map(quoted).collect::<Result<Vec<_>, _>>()?;
        let mm = ValueMatcher::all(ins)
            .and_then(|mm| mm.except(outs))
            .map_err(|e| invalid("patternProperties", pointer, &e))?;
        let key = format!(
            "{}\u{0}except:{}\u{0}names:{}",
            res.join("\u{0}"),
            not_res.join("\u{0}"),
            names.join("\u{0}")
        );
        let main = res.remove(0);
        let t = self.terminal_also(&format!("KEY<{pointer}>"), &main, res, not_res);
        let kn = self.string_nt(key, StringRule::Constrained(t, mm));
        self.exclusions.push((kn, names.to_vec()));
        Ok(kn)
    }

    /// The language `propertyNames` holds names to: `Some(None)` when it holds every
    /// name (absent, or asserting nothing of strings), `Some(Some(h))` for one string
    /// language, `None` when it is not one the lowering compiles.
    fn property_names(&self, m: &Map<String, Value>) -> Option<Option<Hir>> {
        let Some(pn) = m.get("propertyNames").filter(|v| !is_trivial(v)) else {
            return Some(None);
        };
        let f = self.resolver.probe(|r| r.flatten(pn, "").ok())?;
        if f.never {
            // No name is allowed: only the empty object.
            return Some(Some(Hir::fail()));
        }
        if !f.disjunctions.is_empty() {
            return None;
        }
        let strings_only = f.base.iter().all(|(k, v)| {
            !ASSERTIONS.contains(&k.as_str())
                || (k == "type"
                    && type_set(Some(v)).is_some_and(|ts| ts.iter().any(|t| t == "string")))
        });
        if strings_only {
            return Some(None);
        }
        string_language(&f.base).map(|(h, _)| Some(h))
    }

    fn object(
        &mut self,
        m: &Map<String, Value>,
        forbidden: &[String],
        pointer: &str,
    ) -> Result<Ebnf, SchemaError> {
        // Names outside `propertyNames`' language: declared ones may not appear, the
        // others' keys are drawn from it.
        let names_in = match self.property_names(m) {
            Some(Some(h)) => {
                let mm =
                    ValueMatcher::new(&h).map_err(|e| invalid("propertyNames", pointer, &e))?;
                Some((h, mm))
            }
            _ => None,
        };
        // `propertyNames: false`: no name at all (and no key terminal for the empty language).
        let no_names = names_in
            .as_ref()
            .is_some_and(|(h, _)| h.properties().minimum_len().is_none());
        let name_ok = |k: &str| !no_names && names_in.as_ref().is_none_or(|(_, mm)| mm.is_match(k));
        let empty = Map::new();
        let props = match m.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(invalid("properties", pointer, "must be an object")),
        };
        let required: Vec<String> = match m.get("required") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            Some(Value::Bool(_)) => Vec::new(), // draft-3 style, per property; not an assertion here
            Some(_) => return Err(invalid("required", pointer, "must be an array of names")),
        };
        let addl = m
            .get("additionalProperties")
            .cloned()
            .unwrap_or(Value::Bool(true));
        let addl = if addl.is_object() || addl.is_boolean() {
            addl
        } else {
            return Err(invalid("additionalProperties", pointer, "must be a schema"));
        };
        let mut patterns: Vec<(String, Value)> = match m.get("patternProperties") {
            None => Vec::new(),
            Some(Value::Object(p)) => p.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(_) => return Err(invalid("patternProperties", pointer, "must be an object")),
        };
        if no_names {
            patterns.clear();
        }
        let addl = if no_names { Value::Bool(false) } else { addl };
        let addl_false = addl == Value::Bool(false);
        if !patterns.is_empty()
            && !addl_false
            && patterns.iter().all(|(_, s)| is_trivial(s))
            && is_trivial(&addl)
        {
            patterns.clear();
        }
        // Every pattern (as a value language) decides which schemas a declared name gets.
        let mut pattern_hirs = Vec::new();
        for (p, _) in &patterns {
            match parse_pattern(p).and_then(|h| ValueMatcher::new(&h).map(|mm| (h, mm))) {
                Ok(x) => pattern_hirs.push(x),
                Err(e) => {
                    self.refuse("patternProperties", pointer, &format!("{e} in /{p}/"))?;
                    return Ok(nothing());
                }
            }
        }
        // `^name$` patterns name one property each: they join the declared ones. The
        // others give the names that are not declared their schema.
        let mut pattern_names: Vec<String> = Vec::new();
        let mut open_patterns: Vec<usize> = Vec::new();
        let mut open_splits: Vec<Option<PatternSplit>> = Vec::new();
        for (i, (p, _)) in patterns.iter().enumerate() {
            match split_pattern(p) {
                Some(PatternSplit::Name(name)) => pattern_names.push(name),
                split => {
                    open_patterns.push(i);
                    open_splits.push(split);
                }
            }
        }
        // Beside additional properties, the names no pattern matches need their own
        // terminal: written out as the complement of the one open pattern.
        // Names no open pattern matches get additionalProperties: written out for the
        // shapes `split_pattern` knows, else as any name minus the patterns' languages.
        let mut complement: Option<PatternSplit> = None;
        let mut complement_except = false;
        if !addl_false && !open_patterns.is_empty() {
            match (open_patterns.len(), open_splits.pop().flatten()) {
                (1, Some(split)) => complement = Some(split),
                _ => complement_except = true,
            }
        }
        // Patterns with different schemas: a name gets the conjunction of those it matches,
        // so every non-empty set of patterns is its own region of names (at most 2^3 - 1).
        let regions = open_patterns.len() > 1
            && open_patterns
                .iter()
                .any(|&i| patterns[i].1 != patterns[open_patterns[0]].1);
        if regions && open_patterns.len() > MAX_PATTERN_REGIONS_OF {
            self.refuse(
                "patternProperties",
                pointer,
                &format!(
                    "more than {MAX_PATTERN_REGIONS_OF} patterns with different schemas (a name \
                     matching several must satisfy each)"
                ),
            )?;
            open_patterns.truncate(1);
        }
        let regions = regions && open_patterns.len() > 1;
        // The conjunction of the patterns a name matches, if any.
        let matched = |name: &str| -> Option<Value> {
            let mut schema: Option<Value> = None;
            for ((_, ps), (_, mm)) in patterns.iter().zip(&pattern_hirs) {
                if mm.is_match(name) {
                    schema = Some(match schema {
                        None => ps.clone(),
                        Some(s) => conjoin(&s, ps),
                    });
                }
            }
            schema
        };
        // The schema of a name that is not in `properties`: every pattern it matches, or
        // additionalProperties when none does.
        let unlisted = |name: &str| matched(name).unwrap_or_else(|| addl.clone());
        // Declared properties in order: `properties`, then required names it lacks.
        let mut declared: Vec<(String, Value, String)> = Vec::new();
        for (k, v) in props {
            let schema = matched(k).map_or_else(|| v.clone(), |p| conjoin(v, &p));
            declared.push((
                k.clone(),
                schema,
                format!("{pointer}/properties/{}", escape_pointer(k)),
            ));
        }
        for r in &required {
            if !declared.iter().any(|d| &d.0 == r) {
                let schema = unlisted(r);
                declared.push((r.clone(), schema, format!("{pointer}/additionalProperties")));
            }
        }
        // A declared name outside propertyNames' language may not appear.
        for d in declared.iter_mut().filter(|d| !name_ok(&d.0)) {
            if required.contains(&d.0) {
                return Ok(nothing());
            }
            d.1 = Value::Bool(false);
        }
        // `not: {required: [x]}`: x may not appear at all (a declared slot that accepts
        // nothing, so it is also excluded from the additional keys).
        for name in forbidden {
            if required.contains(name) {
                return Ok(nothing());
            }
            match declared.iter_mut().find(|d| &d.0 == name) {
                Some(d) => d.1 = Value::Bool(false),
                None => declared.push((name.clone(), Value::Bool(false), format!("{pointer}/not"))),
            }
        }
        let n = declared.len();
        let nreq = declared.iter().filter(|d| required.contains(&d.0)).count() as u64;
        // `^name$` names that are neither in `properties` nor required are extra pairs,
        // written in any order among the additional ones.
        let extra_names: Vec<String> = pattern_names
            .iter()
            .filter(|n| !declared.iter().any(|d| &d.0 == *n) && name_ok(n))
            .cloned()
            .collect();
        let extra_allowed = !addl_false || !open_patterns.is_empty() || !extra_names.is_empty();
        // Property counts. Declared names are written at most once each, so counting the
        // pairs written is counting properties; additional pairs may repeat a key, so a
        // minimum above what the required names give (other than "not empty") is refused
        // beside them. A maximum counts pairs: a text that repeats a key is rejected.
        let minp = count(m, "minProperties", pointer)?;
        let maxp = count(m, "maxProperties", pointer)?;
        let mut lo = 0;
        let mut counted = false;
        if let Some(minp) = minp {
            if minp > nreq && minp > 1 && extra_allowed {
                self.refuse(
                    "minProperties",
                    pointer,
                    "a minimum above the required properties (other than one) beside \
                     additional properties, whose keys may repeat",
                )?;
            } else {
                lo = minp;
                counted |= minp > 1 && minp > nreq;
            }
        }
        if maxp.is_some_and(|x| x < lo) {
            return Ok(nothing());
        }
        let mut maxp = maxp.filter(|&x| extra_allowed || x < n as u64);
        counted |= maxp.is_some();
        let cap = maxp.unwrap_or(lo);
        if counted && (n as u64 + 1) * (cap + 1) > MAX_COUNTED_PROPERTY_STATES {
            let kw = if maxp.is_some() {
                "maxProperties"
            } else {
                "minProperties"
            };
            self.refuse(
                kw,
                pointer,
                &format!(
                    "{n} properties counted up to {cap} need more than \
                     {MAX_COUNTED_PROPERTY_STATES} grammar states"
                ),
            )?;
            counted = false;
            maxp = None;
            lo = lo.min(1);
        }
        // Uncounted, the body only knows whether something was written (count 0 or 1+).
        let (cap, saturates) = if counted {
            (cap, maxp.is_none())
        } else {
            (1, true)
        };
        let lo = lo.min(cap);
        let names: Vec<String> = declared.iter().map(|d| d.0.clone()).collect();
        let fx = self.f();
        let (lb, rb, comma, colon) = (fx.lbrace, fx.rbrace, fx.comma, fx.colon);
        // One key-value pair per declared property.
        let mut kvs = Vec::with_capacity(n);
        for (k, s, p) in &declared {
            let key = self.literal(k);
            let v = self.schema(s, p)?;
            let pair = self.pair(Symbol::T(key), v, p);
            kvs.push(e_sym(Symbol::N(pair)));
        }
        // The extra pairs: `^name$` pattern properties, open pattern properties (and, beside
        // additional properties, the names no pattern matches), or additional properties.
        // Their keys exclude every name that has a pair of its own.
        let mut excluded = names.clone();
        excluded.extend(extra_names.iter().cloned());
        let mut pairs = Vec::new();
        for name in &extra_names {
            let key = self.literal(name);
            let v = self.schema(&unlisted(name), &format!("{pointer}/patternProperties"))?;
            let pair = self.pair(Symbol::T(key), v, pointer);
            pairs.push(e_sym(Symbol::N(pair)));
        }
        if regions {
            if names_in.is_some() {
                self.refuse(
                    "propertyNames",
                    pointer,
                    "beside patternProperties patterns with different schemas",
                )?;
            }
            let k = open_patterns.len();
            for set in 1u32..(1 << k) {
                let (ins, outs): (Vec<usize>, Vec<usize>) = open_patterns.iter().enumerate().fold(
                    (Vec::new(), Vec::new()),
                    |(mut ins, mut outs), (j, &i)| {
                        if set & (1 << j) != 0 {
                            ins.push(i)
                        } else {
                            outs.push(i)
                        }
                        (ins, outs)
                    },
                );
                let schema = ins[1..].iter().fold(patterns[ins[0]].1.clone(), |acc, &i| {
                    conjoin(&acc, &patterns[i].1)
                });
                let v = self.schema(
                    &schema,
                    &format!(
                        "{pointer}/patternProperties/{}",
                        escape_pointer(&patterns[ins[0]].0)
                    ),
                )?;
                let in_h: Vec<Hir> = ins.iter().map(|&i| pattern_hirs[i].0.clone()).collect();
                let out_h: Vec<Hir> = outs.iter().map(|&i| pattern_hirs[i].0.clone()).collect();
                let kn = self.key_nt_region(&in_h, &out_h, &excluded, pointer)?;
                let pair = self.pair(Symbol::N(kn), v, pointer);
                pairs.push(e_sym(Symbol::N(pair)));
            }
        }
        if !open_patterns.is_empty() && !regions {
            let (p, s) = &patterns[open_patterns[0]];
            let v = self.schema(
                s,
                &format!("{pointer}/patternProperties/{}", escape_pointer(p)),
            )?;
            let mut key_alts = Vec::new();
            for &i in &open_patterns {
                // Beside propertyNames, only a pattern matching every name is compiled:
                // its keys are then propertyNames' (no intersection of two is written).
                let h = match &names_in {
                    None => &pattern_hirs[i].0,
                    Some((h, _))
                        if matches!(split_pattern(&patterns[i].0), Some(PatternSplit::All)) =>
                    {
                        h
                    }
                    Some((h, _)) => {
                        self.refuse(
                            "propertyNames",
                            pointer,
                            "beside a patternProperties pattern that does not match every name",
                        )?;
                        h
                    }
                };
                let kn = self.key_nt(h, &excluded, pointer)?;
                key_alts.push(e_sym(Symbol::N(kn)));
            }
            pairs.push(Ebnf::Seq(vec![Ebnf::Alt(key_alts), e_sym(colon), e_sym(v)]));
        }
        // The names no open pattern matches, beside additional properties.
        let complement_key = match &complement {
            Some(PatternSplit::Complement(h)) => Some(self.key_nt(h, &excluded, pointer)?),
            _ if complement_except => {
                let outs: Vec<Hir> = open_patterns
                    .iter()
                    .map(|&i| pattern_hirs[i].0.clone())
                    .collect();
                Some(self.key_nt_region(&[any_string_hir()], &outs, &excluded, pointer)?)
            }
            _ => None,
        };
        if let Some(kn) = complement_key {
            if names_in.is_some() {
                self.refuse(
                    "propertyNames",
                    pointer,
                    "beside names that no patternProperties pattern matches",
                )?;
            }
            let v = self.schema(&addl, &format!("{pointer}/additionalProperties"))?;
            let pair = self.pair(Symbol::N(kn), v, pointer);
            pairs.push(e_sym(Symbol::N(pair)));
        } else if !addl_false && open_patterns.is_empty() {
            let v = self.schema(&addl, &format!("{pointer}/additionalProperties"))?;
            let key = if let Some((h, _)) = &names_in {
                Symbol::N(self.key_nt(h, &excluded, pointer)?)
            } else if excluded.is_empty() {
                self.any_string()
            } else {
                Symbol::N(self.string_nt(
                    format!("except:{}", excluded.join("\u{0}")),
                    StringRule::Except(excluded.clone()),
                ))
            };
            let pair = self.pair(key, v, pointer);
            pairs.push(e_sym(Symbol::N(pair)));
        }
        let extra = (!pairs.is_empty()).then_some(Ebnf::Alt(pairs));
        // Uncounted objects lower left-linearly. The rest of this function lowers counted
        // ones, whose count is part of every nonterminal: right-recursive (a few stack
        // entries per member, at most MAX_COUNTED_PROPERTY_STATES nonterminals).
        if !counted {
            let optional: Vec<bool> = declared.iter().map(|d| !required.contains(&d.0)).collect();
            let members = self.members_left_linear(pointer, kvs, &optional, extra, lo > 0);
            return Ok(Ebnf::Seq(vec![e_sym(lb), members, e_sym(rb)]));
        }
        // Extra pairs once the count no longer matters: any number of them, flat.
        let tail = match &extra {
            Some(x) => {
                let t = self.nonterminal(format!("{pointer}/extra*"));
                let body = Ebnf::Repeat {
                    inner: Box::new(Ebnf::Seq(vec![e_sym(comma), x.clone()])),
                    min: 0,
                    max: None,
                };
                self.define(t, body);
                Some(e_sym(Symbol::N(t)))
            }
            None => None,
        };
        // body[i][c]: from declared property i on, with c properties written (at least c
        // when the count saturates at `cap`).
        let body: Vec<Vec<NonterminalId>> = (0..=n)
            .map(|i| {
                (0..=cap)
                    .map(|c| {
                        self.nonterminal(match (counted, c) {
                            (false, 0) => format!("{pointer}/props{i}"),
                            (false, _) => format!("{pointer}/props{i},"),
                            (true, _) => format!("{pointer}/props{i}#{c}"),
                        })
                    })
                    .collect()
            })
            .collect();
        let next = |c: u64| -> Option<u64> {
            if c < cap {
                Some(c + 1)
            } else {
                saturates.then_some(cap)
            }
        };
        // What follows a pair that brought the count to c: extra pairs, then body[i][·].
        let mut after_memo: HashMap<(usize, u64), Ebnf> = HashMap::new();
        let mut after = |me: &mut Self, i: usize, c: u64| -> Ebnf {
            let cont = e_sym(Symbol::N(body[i][c as usize]));
            let (Some(x), Some(tail)) = (&extra, &tail) else {
                return cont;
            };
            if saturates && c == cap {
                return Ebnf::Seq(vec![tail.clone(), cont]);
            }
            if let Some(e) = after_memo.get(&(i, c)) {
                return e.clone();
            }
            // Below the cap each extra pair is counted: a chain of at most `cap` steps.
            let mut chain: Vec<NonterminalId> = Vec::new();
            let mut k = c;
            loop {
                chain.push(me.nonterminal(format!("{pointer}/extra{i}#{k}")));
                match next(k) {
                    Some(k2) if !(saturates && k2 == cap) && k2 != k => k = k2,
                    _ => break,
                }
            }
            for (j, &nt) in chain.iter().enumerate() {
                let k = c + j as u64;
                let mut alts = vec![e_sym(Symbol::N(body[i][k as usize]))];
                if let Some(k2) = next(k) {
                    let rest = match chain.get(j + 1) {
                        Some(&n2) => e_sym(Symbol::N(n2)),
                        None => {
                            Ebnf::Seq(vec![tail.clone(), e_sym(Symbol::N(body[i][k2 as usize]))])
                        }
                    };
                    alts.push(Ebnf::Seq(vec![e_sym(comma), x.clone(), rest]));
                }
                me.define(nt, Ebnf::Alt(alts));
            }
            let e = e_sym(Symbol::N(chain[0]));
            after_memo.insert((i, c), e.clone());
            e
        };
        for i in 0..=n {
            for c in 0..=cap {
                let nt = body[i][c as usize];
                if i == n {
                    self.define(nt, if c >= lo { eps() } else { nothing() });
                    continue;
                }
                let mut alts = Vec::new();
                if let Some(c2) = next(c) {
                    let mut this = Vec::new();
                    if c > 0 {
                        this.push(e_sym(comma));
                    }
                    this.push(kvs[i].clone());
                    this.push(after(self, i + 1, c2));
                    alts.push(Ebnf::Seq(this));
                }
                if !required.contains(&declared[i].0) {
                    alts.push(e_sym(Symbol::N(body[i + 1][c as usize])));
                }
                self.define(nt, Ebnf::Alt(alts));
            }
        }
        let mut start = vec![e_sym(Symbol::N(body[0][0]))];
        if let (Some(x), Some(c2)) = (&extra, next(0)) {
            start.push(Ebnf::Seq(vec![x.clone(), after(self, 0, c2)]));
        }
        Ok(Ebnf::Seq(vec![e_sym(lb), Ebnf::Alt(start), e_sym(rb)]))
    }

    /// The members of an object whose property count is not constrained, as a left-linear
    /// grammar: `L_q` is a non-empty prefix whose last declared pair is `q` (extra pairs
    /// may follow it), `W_q` a prefix after which `q` may come next, comma included, and
    /// `E` a prefix of extra pairs only. Left-linear because a right-recursive spelling
    /// keeps a few parse-stack entries per written member until the object closes, and a
    /// 200-member object then costs every mask and the closing commit hundreds of entries;
    /// here each pair is reduced as soon as it ends. Skipping optional members is the
    /// chain `W_q → W_{q-hop}` (`hop` is 1, or [`SKIP_HOP`] over [`HOP_OVER`] members),
    /// which LALR(1) resolves on the next key (keys are distinct terminals), so the size
    /// stays linear in the number of members.
    fn members_left_linear(
        &mut self,
        pointer: &str,
        kvs: Vec<Ebnf>,
        optional: &[bool],
        extra: Option<Ebnf>,
        nonempty: bool,
    ) -> Ebnf {
        let n = kvs.len();
        let comma = self.f().comma;
        let x = extra.map(|x| {
            let nt = self.nonterminal(format!("{pointer}/extra"));
            self.define(nt, x);
            e_sym(Symbol::N(nt))
        });
        let e = x.as_ref().map(|x| {
            let nt = self.nonterminal(format!("{pointer}/extras"));
            let e = e_sym(Symbol::N(nt));
            self.define(
                nt,
                Ebnf::Alt(vec![
                    x.clone(),
                    Ebnf::Seq(vec![e.clone(), e_sym(comma), x.clone()]),
                ]),
            );
            e
        });
        let l: Vec<NonterminalId> = (0..n)
            .map(|q| self.nonterminal(format!("{pointer}/last{q}")))
            .collect();
        let w: Vec<NonterminalId> = (0..n)
            .map(|q| self.nonterminal(format!("{pointer}/before{q}")))
            .collect();
        let hop = if n > HOP_OVER { SKIP_HOP } else { 1 };
        let mut free_before = true;
        for (q, kv) in kvs.into_iter().enumerate() {
            // The last pair written is one of the `hop` members before q (back to the
            // nearest required one), extras alone or, further back, whatever may precede
            // member q - hop (optional, as all after it).
            let mut before = Vec::new();
            for d in 1..=hop {
                let Some(p) = q.checked_sub(d) else {
                    if let Some(e) = &e {
                        before.push(Ebnf::Seq(vec![e.clone(), e_sym(comma)]));
                    }
                    break;
                };
                before.push(Ebnf::Seq(vec![e_sym(Symbol::N(l[p])), e_sym(comma)]));
                if !optional[p] {
                    break;
                }
                if d == hop {
                    before.push(e_sym(Symbol::N(w[p])));
                }
            }
            self.define(w[q], Ebnf::Alt(before));
            let mut last = vec![Ebnf::Seq(vec![e_sym(Symbol::N(w[q])), kv.clone()])];
            if free_before {
                last.push(kv);
            }
            if let Some(x) = &x {
                last.push(Ebnf::Seq(vec![
                    e_sym(Symbol::N(l[q])),
                    e_sym(comma),
                    x.clone(),
                ]));
            }
            self.define(l[q], Ebnf::Alt(last));
            free_before &= optional[q];
        }
        // The object may end after any member all of whose successors are optional, after
        // extras alone or with nothing written when every member is optional.
        let mut ends = Vec::new();
        for q in (0..n).rev() {
            ends.push(e_sym(Symbol::N(l[q])));
            if !optional[q] {
                break;
            }
        }
        if free_before {
            if let Some(e) = e {
                ends.push(e);
            }
            if !nonempty {
                ends.push(eps());
            }
        }
        Ebnf::Alt(ends)
    }

    /// The nonterminal of the pair `key : value`, one per (key, value) across the schema,
    /// made of the key and the nonterminal of `: value`, one per value. Written inline in
    /// each object's members, a property's parser states (after its key, after its colon)
    /// were each object's own, and every one a stack top the mask automaton explores a
    /// start for; shared, objects declaring the same property (a Kubernetes schema's
    /// `metadata`, `name`, …) and values of one schema share them (~10% fewer compile
    /// instructions on large schemas), at two more reductions per pair in a commit.
    fn pair(&mut self, key: Symbol, value: Symbol, pointer: &str) -> NonterminalId {
        if let Some(&n) = self.pairs.get(&(key, value)) {
            return n;
        }
        let c = match self.colon_values.get(&value) {
            Some(&c) => c,
            None => {
                let c = self.nonterminal(format!("{pointer}/:value"));
                let colon = self.f().colon;
                self.define(c, Ebnf::Seq(vec![e_sym(colon), e_sym(value)]));
                self.colon_values.insert(value, c);
                c
            }
        };
        let n = self.nonterminal(format!("{pointer}/pair"));
        self.define(n, Ebnf::Seq(vec![e_sym(key), e_sym(Symbol::N(c))]));
        self.pairs.insert((key, value), n);
        n
    }

    /// Fills the string rules now that every literal is known, and builds the grammar.
    fn finish(mut self, root: Symbol) -> Result<LoweredSchema, SchemaError> {
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
        for (i, b) in self.bodies.iter().enumerate() {
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
        };
        let g = remove_unproductive(prune_unreachable(g)).map_err(|e| match e {
            GrammarError::NoDocument { .. } => SchemaError::Unsatisfiable,
            e => SchemaError::Grammar(Box::new(e)),
        })?;
        let g = drop_unused_terminals(g);
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

/// `oneOf` decided type by type: for each JSON type, either at least two alternatives
/// accept all its values (no value of it satisfies exactly one: the type is excluded) or
/// the branches restricted to it are pairwise disjoint. Returns the excluded types, or
/// `None` when some type is neither (then the caller needs complements or refuses).
fn oneof_by_type(
    branches: &[Flat],
    alone: &[Map<String, Value>],
    own: &[Disjunctions],
    resolver: &Resolver<'_>,
) -> Option<Vec<&'static str>> {
    let mut excluded = Vec::new();
    for t in TYPES {
        let universal = (0..alone.len())
            .filter(|&i| own[i].is_empty() && accepts_all_of(&alone[i], t))
            .count();
        if universal >= 2 {
            excluded.push(t);
            continue;
        }
        // The branches restricted to `t` (integers are numbers).
        let only = Map::from_iter([("type".to_string(), Value::String(t.to_string()))]);
        let restricted: Vec<Option<Map<String, Value>>> = branches
            .iter()
            .map(|b| resolver.merge(b.base.clone(), only.clone(), "").ok())
            .collect();
        for i in 0..branches.len() {
            for j in i + 1..branches.len() {
                let (Some(a), Some(b)) = (&restricted[i], &restricted[j]) else {
                    return None;
                };
                if !flats_disjoint((a, &own[i]), (b, &own[j]), resolver, 0) {
                    return None;
                }
            }
        }
    }
    Some(excluded)
}

/// The values a `oneOf` can take when every alternative lists its values
/// (`enum`/`const`, possibly through `$ref` or `allOf`), in first-listed order.
fn oneof_candidates(alts: &[(Value, String)], resolver: &Resolver<'_>) -> Option<Vec<Value>> {
    let mut out: Vec<Value> = Vec::new();
    for (alt, at) in alts {
        let f = resolver.probe(|r| r.flatten(alt, at).ok())?;
        if f.never {
            continue;
        }
        if !f.disjunctions.is_empty() {
            return None;
        }
        let listed = match (f.base.get("const"), f.base.get("enum")) {
            (Some(c), _) => vec![c.clone()],
            (_, Some(Value::Array(e))) => e.clone(),
            _ => return None,
        };
        // Kept apart when only numerically equal (1 and 1.0): each spelling is a value.
        for v in listed {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    Some(out)
}

/// Schemas (with their pointers) whose union is a complement.
type Forms = Vec<(Value, String)>;

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

/// Every ordered split of the set `set` (a bit set) into nonempty groups.
fn ordered_splits(set: u32) -> Vec<Vec<u32>> {
    if set == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    // Every nonempty subset of `set` as the first group.
    let mut g = set;
    while g != 0 {
        for mut rest in ordered_splits(set & !g) {
            rest.insert(0, g);
            out.push(rest);
        }
        g = (g - 1) & set;
    }
    out
}

/// The kind of the disjunctions `oneOf` adds to a branch: the union forms of another
/// alternative's complement (an `anyOf` whose keywords merge after the branch's own).
const COMPLEMENT: &str = "oneOf/complement";

/// The disjunctions still to distribute over a flat schema (see [`Flat::disjunctions`]).
type Disjunctions = Vec<Disjunction>;

/// A flat schema as its own keywords and the disjunctions still to distribute over them.
type Pending<'s> = (&'s Map<String, Value>, &'s [Disjunction]);

/// Whether two flat schemas, each with disjunctions still pending, provably accept no
/// common value: their keywords are disjoint, or every alternative of one pending
/// disjunction (with the keywords it is conjoined with) is disjoint from the other side.
/// Sound because a schema is contained in the union of any one disjunction's alternatives.
fn flats_disjoint(a: Pending<'_>, b: Pending<'_>, resolver: &Resolver<'_>, depth: usize) -> bool {
    // Alternatives that nest disjunctions in themselves (through `$ref`) recurse forever.
    if depth > 6 {
        return false;
    }
    if disjoint(a.0, b.0, resolver, 0) {
        return true;
    }
    let split = |x: Pending<'_>, y: Pending<'_>| {
        x.1.iter().any(|d| {
            d.alternatives.iter().all(|(alt, at)| {
                let Ok(af) = resolver.flatten(alt, at) else {
                    return false;
                };
                if af.never {
                    return true;
                }
                // The conjunction with x's keywords only sharpens the proof; when the
                // two cannot be merged, the alternative alone still contains it.
                let base = resolver
                    .merge(af.base.clone(), x.0.clone(), at)
                    .unwrap_or(af.base);
                flats_disjoint((&base, &af.disjunctions), y, resolver, depth + 1)
            })
        })
    };
    split(a, b) || split(b, a)
}

/// Whether two flat schemas provably accept no common value.
fn disjoint(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    resolver: &Resolver<'_>,
    depth: usize,
) -> bool {
    // Recursive definitions can nest required properties forever; past this, not proven.
    if depth > 16 {
        return false;
    }
    let types_of = |m: &Map<String, Value>| -> Vec<String> {
        let listed: Option<Vec<Value>> = match (m.get("const"), m.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (_, Some(Value::Array(e))) => Some(e.clone()),
            _ => None,
        };
        if let Some(vals) = listed {
            return vals.iter().map(|v| json_type_of(v).to_string()).collect();
        }
        type_set(m.get("type")).unwrap_or_else(|| TYPES.iter().map(|s| s.to_string()).collect())
    };
    // `not: {required: [..]}` fails on every non-object (`required` holds for them).
    let not_required = |m: &Map<String, Value>| -> Option<Vec<String>> {
        let n = m.get("not")?.as_object()?;
        let names: Vec<String> = n
            .get("required")?
            .as_array()?
            .iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect::<Option<_>>()?;
        (n.len() == 1 && !names.is_empty()).then_some(names)
    };
    let objects_only = |m: &Map<String, Value>, mut ts: Vec<String>| {
        if not_required(m).is_some() {
            ts.retain(|t| t == "object");
        }
        ts
    };
    let (ta, tb) = (objects_only(a, types_of(a)), objects_only(b, types_of(b)));
    let overlaps = |x: &str, y: &str| {
        x == y || (x == "number" && y == "integer") || (x == "integer" && y == "number")
    };
    let shared: Vec<&String> = ta
        .iter()
        .filter(|x| tb.iter().any(|y| overlaps(x, y)))
        .collect();
    if shared.is_empty() {
        return true;
    }
    let values = |m: &Map<String, Value>| -> Option<Vec<Value>> {
        match (m.get("const"), m.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (_, Some(Value::Array(e))) => Some(e.clone()),
            _ => None,
        }
    };
    if let (Some(x), Some(y)) = (values(a), values(b)) {
        return !x.iter().any(|v| y.iter().any(|w| json_equal(v, w)));
    }
    if shared.iter().any(|t| *t != "object") {
        return false;
    }
    // Objects: a required property whose values are disjoint in both, or a required
    // name the other side forbids.
    let props = |m: &Map<String, Value>| {
        m.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let req = |m: &Map<String, Value>| -> Vec<String> {
        m.get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (pa, pb, ra, rb) = (props(a), props(b), req(a), req(b));
    let resolved = |v: &Value| -> Map<String, Value> {
        resolver.flatten(v, "").map(|f| f.base).unwrap_or_default()
    };
    for k in ra.iter().filter(|k| rb.contains(k)) {
        if let (Some(x), Some(y)) = (pa.get(k), pb.get(k)) {
            if disjoint(&resolved(x), &resolved(y), resolver, depth + 1) {
                return true;
            }
        }
    }
    let forbids = |m: &Map<String, Value>, p: &Map<String, Value>, name: &str| {
        m.get("additionalProperties") == Some(&Value::Bool(false))
            && !m.contains_key("patternProperties")
            && !p.contains_key(name)
    };
    // One side lacks one of the names the other requires.
    let lacks = |m: &Map<String, Value>, req: &[String]| {
        not_required(m).is_some_and(|names| names.iter().all(|n| req.contains(n)))
    };
    ra.iter().any(|k| forbids(b, &pb, k))
        || rb.iter().any(|k| forbids(a, &pa, k))
        || lacks(a, &rb)
        || lacks(b, &ra)
}

/// Lowers a parsed schema.
pub fn lower(schema: &Value, opts: &SchemaOptions) -> Result<LoweredSchema, SchemaError> {
    let schema = super::draft::normalize(schema);
    let schema: &Value = &schema;
    let mut l = Lowerer::new(schema, *opts);
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
            also: self.also.clone(),
            except: self.except.clone(),
            counted: Some(self.counted.clone()),
            divisibility: Vec::new(),
            span: Span::default(),
        }
    }
}

/// The count of a JSON string of `lo` to `hi` characters.
fn counted_chars(lo: u32, hi: Option<u32>) -> Counted {
    Counted {
        open: b'"',
        // Spelling one character cannot fail: it is a plain class.
        unit: spell(&any_char())
            .expect("one character spells")
            .to_string(),
        close: b'"',
        lo,
        hi,
    }
}

/// The matcher of a string's value languages `parts` minus the languages `except`.
fn value_matcher(
    parts: &[(&str, Hir)],
    except: &[Hir],
    pointer: &str,
) -> Result<ValueMatcher, SchemaError> {
    let hirs: Vec<Hir> = parts.iter().map(|(_, h)| h.clone()).collect();
    ValueMatcher::all(&hirs)
        .and_then(|mm| mm.except(except))
        .map_err(|e| SchemaError::Unsupported {
            keyword: parts[0].0.into(),
            pointer: pointer.to_string(),
            reason: e,
        })
}

/// The quoted regexes of a string's value languages `parts` and of the languages
/// `except` it must avoid.
fn quoted_parts(
    parts: &[(&str, Hir)],
    except: &[Hir],
    pointer: &str,
) -> Result<(Vec<String>, Vec<String>), SchemaError> {
    let quote = |kw: &str, h: &Hir| {
        quoted_regex(h).map_err(|e| SchemaError::Unsupported {
            keyword: kw.to_string(),
            pointer: pointer.to_string(),
            reason: e,
        })
    };
    let res = parts
        .iter()
        .map(|(kw, h)| quote(kw, h))
        .collect::<Result<_, _>>()?;
    let not_res = except
        .iter()
        .map(|h| quote("not", h))
        .collect::<Result<_, _>>()?;
    Ok((res, not_res))
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

//! One terminal → its DFA ([`TermDfa`]): a regex through regex-automata (leftmost-first,
//! so lazy quantifiers stop at their earliest match), a literal, a finite pattern's words
//! or a layered repetition built directly, intersections and differences by product,
//! divisibility by a remainder automaton, then pruning and Hopcroft minimization. Pattern
//! DFAs come from the process's [`PatternCache`] when an earlier compile built them.

use std::sync::Arc;

use super::pattern_cache::PatternCache;
use super::*;

/// Checks that `regex` is a pattern the lexer can run (parses, no assertions, and for a
/// terminal's main pattern, no empty lexeme); returns its syntax tree.
pub(super) fn check_regex(
    t: &Terminal,
    regex: &str,
    main: bool,
) -> Result<regex_syntax::hir::Hir, GrammarError> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .build()
        .parse(regex)
        .map_err(|e| {
            let msg = e.to_string();
            if msg.contains("look-around") {
                GrammarError::Unsupported {
                    span: t.span,
                    construct: "look-around (?=…) (?!…) (?<=…) (?<!…)".into(),
                    reason: format!(
                        "terminal `{}` uses look-around, which has no finite automaton here; rewrite it without",
                        t.name
                    ),
                }
            } else {
                GrammarError::BadRegex {
                    span: t.span,
                    terminal: t.name.clone(),
                    message: msg,
                }
            }
        })?;
    let props = hir.properties();
    if !props.look_set().is_empty() {
        return Err(GrammarError::Unsupported {
            span: t.span,
            construct: "anchor or word boundary (^ $ \\b \\B \\A \\z)".into(),
            reason: format!(
                "terminal `{}` uses an assertion that depends on text outside the lexeme",
                t.name
            ),
        });
    }
    if main && props.minimum_len() == Some(0) {
        return Err(GrammarError::EmptyTerminal {
            span: t.span,
            terminal: t.name.clone(),
        });
    }
    Ok(hir)
}

/// The DFA of one nonempty byte string: state `i` has read its first `i` bytes. Built
/// directly, since most terminals of JSON Schema grammars (keys, enum values,
/// punctuation) are literals, and a regex-automata build costs tens of microseconds each.
/// Classes are numbered in byte order of their first byte, as [`regex_dfa`]'s are.
pub(super) fn literal_dfa(lit: &[u8]) -> TermDfa {
    let (classes, stride) = byte_classes_of(lit.iter().copied());
    let mut trans = vec![NONE; (lit.len() + 1) * stride];
    for (i, &b) in lit.iter().enumerate() {
        trans[i * stride + classes[b as usize] as usize] = i as u32 + 1;
    }
    let complete = (0..=lit.len()).map(|i| i == lit.len()).collect();
    TermDfa::pruned(classes, stride, trans, complete)
}

/// Byte classes for DFAs over the bytes `used` alone: each such byte a class of its own,
/// every other byte one class, numbered in byte order of their first byte (as
/// [`regex_dfa`]'s are); with the number of classes.
fn byte_classes_of(used: impl Iterator<Item = u8>) -> ([u8; 256], usize) {
    let mut is_used = [false; 256];
    for b in used {
        is_used[b as usize] = true;
    }
    let mut classes = [0u8; 256];
    let mut next = 0usize;
    let mut other: Option<u8> = None;
    for b in 0..256 {
        classes[b] = if is_used[b] {
            next += 1;
            (next - 1) as u8
        } else {
            *other.get_or_insert_with(|| {
                next += 1;
                (next - 1) as u8
            })
        };
    }
    (classes, next)
}

/// The DFA of `prefix (unit){min,max} suffix` when the pattern has that shape (a
/// bounded-length JSON string: a quote, a character repeated, a quote), built by
/// layering the unit's DFA once per count: `None` when it does not, or when layering
/// would be inexact (see below).
///
/// Why: regex-automata determinizes such a pattern from its NFA, and `maxLength: 255`
/// beside a pattern (unrolled, since counting it is inexact or costs more) was a
/// 13,266-state build of 40 ms per schema, with the other terminals' builds waiting on
/// it. Layering costs a row per state.
///
/// Exact when the unit's language is prefix-free (no complete unit state continues, and
/// the empty word is no unit): a word then splits into units one way only, read left to
/// right, so the layer of a state is the count of units read. The suffix must not start
/// with a byte a unit starts with, so that a layer's boundary state takes it without a
/// choice. Then the pattern matches only once its suffix is read, and nothing can follow:
/// leftmost-first drops no thread that could still match, and the layered DFA is
/// regex-automata's.
pub(super) fn repeat_dfa(t: &Terminal, hir: &regex_syntax::hir::Hir) -> Option<TermDfa> {
    use regex_syntax::hir::HirKind;
    let HirKind::Concat(items) = hir.kind() else {
        return None;
    };
    let literal = |h: &regex_syntax::hir::Hir| match h.kind() {
        HirKind::Literal(l) => Some(l.0.to_vec()),
        _ => None,
    };
    let (prefix, rep, suffix) = match items.as_slice() {
        [p, r, s] => (literal(p)?, r, literal(s)?),
        [r, s] => (Vec::new(), r, literal(s)?),
        _ => return None,
    };
    let HirKind::Repetition(rep) = rep.kind() else {
        return None;
    };
    if !rep.greedy || rep.max.is_some_and(|max| max < rep.min) {
        return None;
    }
    // The unit's whole language: under leftmost-first, a unit such as `a|ab` stops at
    // `a` on its own, though the pattern around it goes on to read `ab` as one unit.
    let unit = automaton_dfa_as(t, &rep.sub.to_string(), MatchKind::All).ok()?;
    let u0 = unit.start;
    if u0 == NONE || unit.complete[u0 as usize] {
        return None;
    }
    let row = |q: u32| &unit.trans[q as usize * unit.stride..][..unit.stride];
    let nu = unit.complete.len();
    if (0..nu as u32).any(|q| unit.complete[q as usize] && row(q).iter().any(|&n| n != NONE)) {
        return None;
    }
    if row(u0)[unit.classes[suffix[0] as usize] as usize] != NONE {
        return None;
    }
    // Byte classes: the unit's, with each literal byte apart; numbered in byte order of
    // their first byte, as `automaton_dfa`'s are.
    let mut literal_byte = [false; 256];
    for &b in prefix.iter().chain(&suffix) {
        literal_byte[b as usize] = true;
    }
    let mut class_of: HashMap<(u8, u16), u8> = HashMap::new();
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let key = (
            unit.classes[b as usize],
            if literal_byte[b as usize] {
                u16::from(b)
            } else {
                256
            },
        );
        let next = class_of.len() as u8;
        classes[b as usize] = *class_of.entry(key).or_insert_with(|| {
            reps.push(b);
            next
        });
    }
    let stride = reps.len();
    // States: the prefix's (read i < |prefix| bytes), then per layer k (k units read,
    // k ≤ top) the unit's incomplete states (its start first: the layer's boundary),
    // then the suffix's (read j ≥ 1 bytes; the last complete).
    let mut slot = vec![u32::MAX; nu];
    let mut open: Vec<u32> = vec![u0];
    open.extend((0..nu as u32).filter(|&q| q != u0 && !unit.complete[q as usize]));
    for (i, &q) in open.iter().enumerate() {
        slot[q as usize] = i as u32;
    }
    let width = open.len();
    let top = rep.max.unwrap_or(rep.min) as usize;
    let layers_at = prefix.len();
    let suffix_at = layers_at + (top + 1) * width;
    let total = suffix_at + suffix.len();
    // Bounded as regex-automata's builds are; a larger one is left to regex-automata,
    // whose limits then report it.
    if total.saturating_mul(stride).saturating_mul(4) > TERMINAL_DFA_LIMIT {
        return None;
    }
    let mut trans = vec![NONE; total * stride];
    for (i, &b) in prefix.iter().enumerate() {
        trans[i * stride + classes[b as usize] as usize] = i as u32 + 1;
    }
    for k in 0..=top {
        // After a unit: the next layer's boundary, or this one's when unbounded.
        let after = if k < top {
            Some(k + 1)
        } else {
            rep.max.is_none().then_some(k)
        };
        for (i, &q) in open.iter().enumerate() {
            let s = layers_at + k * width + i;
            for (c, &b) in reps.iter().enumerate() {
                let n = row(q)[unit.classes[b as usize] as usize];
                trans[s * stride + c] = if n == NONE {
                    NONE
                } else if unit.complete[n as usize] {
                    after.map_or(NONE, |k2| (layers_at + k2 * width) as u32)
                } else {
                    (layers_at + k * width + slot[n as usize] as usize) as u32
                };
            }
            if i == 0 && k >= rep.min as usize {
                trans[s * stride + classes[suffix[0] as usize] as usize] = suffix_at as u32;
            }
        }
    }
    for (j, &b) in suffix.iter().enumerate().skip(1) {
        trans[(suffix_at + j - 1) * stride + classes[b as usize] as usize] = (suffix_at + j) as u32;
    }
    let complete = (0..total).map(|s| s == total - 1).collect();
    Some(TermDfa::pruned(classes, stride, trans, complete))
}

/// A terminal's DFA: its regex's, intersected with each of its `also` patterns' and
/// minus each of its `except` patterns'.
pub(super) fn term_dfa(t: &Terminal) -> Result<TermDfa, GrammarError> {
    term_dfa_with(t, &SharedDfas::new())
}

/// [`term_dfa`], with the DFAs of the patterns in `shared` built once for all
/// terminals (by the first to need one; each terminal still checks the pattern as its own,
/// so errors are those of a build from scratch).
pub(super) fn term_dfa_with(
    t: &Terminal,
    shared: &SharedDfas<'_>,
) -> Result<TermDfa, GrammarError> {
    if let Some(name) = &t.special {
        if name.starts_with("<[") {
            return Err(GrammarError::SpecialToken {
                span: t.span,
                token: name.clone(),
                reason: "a token named by id needs the tokenizer: compile for a vocabulary".into(),
            });
        }
        return Ok(literal_dfa(&crate::vocab::special_lexeme(name)));
    }
    let cache = PatternCache::global();
    let dfa_of = |re: &str, main: bool| -> Result<Arc<TermDfa>, GrammarError> {
        // A pattern that fails to build is built again below, for its error.
        if let Some(d) = shared
            .get(re)
            .and_then(|cell| cell.get_or_init(|| cache.dfa(t, re, false).ok()).as_ref())
        {
            check_regex(t, re, main)?;
            return Ok(d.clone());
        }
        cache.dfa(t, re, main)
    };
    let mut dfa = TermDfa::clone(&*dfa_of(&t.regex, true)?);
    for re in &t.also {
        dfa = product(&dfa, &*dfa_of(re, false)?, t, Product::Intersect)?;
    }
    for re in &t.except {
        dfa = product(&dfa, &*dfa_of(re, false)?, t, Product::Subtract)?;
    }
    for d in &t.divisibility {
        dfa = product(&dfa, &divisibility_dfa(t, *d)?, t, Product::Intersect)?;
    }
    if t.also.is_empty() && t.except.is_empty() && t.divisibility.is_empty() {
        return Ok(dfa);
    }
    Ok(dfa.minimized())
}

/// The remainder automaton of a [`Divisibility`]: JSON integers, read digit by digit
/// with their magnitude's remainder modulo the divisor as the state (the sign does not
/// change divisibility; `0` and `-0` are multiples of everything).
pub(super) fn divisibility_dfa(t: &Terminal, d: Divisibility) -> Result<TermDfa, GrammarError> {
    if d.divisor == 0 || d.divisor > MAX_DIVISOR {
        return Err(GrammarError::TooLarge {
            span: t.span,
            what: format!("divisor of terminal `{}` (at least 1)", t.name),
            limit: MAX_DIVISOR as usize,
        });
    }
    // Classes: 0 other bytes, 1 `-`, 2..=11 the digits.
    let mut classes = [0u8; 256];
    classes[b'-' as usize] = 1;
    for (i, c) in (b'0'..=b'9').enumerate() {
        classes[c as usize] = 2 + i as u8;
    }
    let stride = 12;
    // States: 0 start, 1 after `-`, 2 a lone zero, 3 + r remainder r.
    const REM: u32 = 3;
    let k = d.divisor;
    let n = REM + k;
    let mut trans = vec![NONE; n as usize * stride];
    for s in [0u32, 1] {
        let row = s as usize * stride;
        trans[row + 2] = 2;
        for digit in 1..10u32 {
            trans[row + 2 + digit as usize] = REM + digit % k;
        }
    }
    trans[1] = 1;
    for r in 0..k {
        let row = (REM + r) as usize * stride;
        for digit in 0..10u32 {
            // (10 r + digit) mod k without overflow: r < k ≤ MAX_DIVISOR.
            trans[row + 2 + digit as usize] = REM + (10 * r + digit) % k;
        }
    }
    let mut complete = vec![false; n as usize];
    complete[2] = d.multiple;
    for r in 0..k {
        complete[(REM + r) as usize] = (r == 0) == d.multiple;
    }
    Ok(TermDfa::pruned(classes, stride, trans, complete))
}

/// What a product of two terminal DFAs accepts.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Product {
    /// Lexemes in both.
    Intersect,
    /// Lexemes in the first and not in the second: the second side may die (`NONE`)
    /// without the pair dying.
    Subtract,
}

/// The product of two terminal DFAs (see [`Product`]); a state lives iff it can still
/// reach completion.
pub(super) fn product(
    a: &TermDfa,
    b: &TermDfa,
    t: &Terminal,
    kind: Product,
) -> Result<TermDfa, GrammarError> {
    // Byte classes: the pairs of the two sides' classes that occur.
    let mut pair_class: HashMap<(u8, u8), u8> = HashMap::new();
    let mut classes = [0u8; 256];
    let mut reps: Vec<(u8, u8)> = Vec::new();
    for (c, (&ca, &cb)) in classes.iter_mut().zip(a.classes.iter().zip(&b.classes)) {
        let p = (ca, cb);
        let next = pair_class.len() as u8;
        *c = *pair_class.entry(p).or_insert_with(|| {
            reps.push(p);
            next
        });
    }
    let stride = reps.len();
    let mut trans: Vec<u32> = Vec::new();
    let mut complete: Vec<bool> = Vec::new();
    let subtract = kind == Product::Subtract;
    if a.start == NONE || (b.start == NONE && !subtract) {
        return Ok(TermDfa {
            classes,
            stride,
            trans: vec![NONE; stride],
            complete: vec![false],
            start: NONE,
        });
    }
    let mut index: HashMap<(u32, u32), u32> = HashMap::new();
    let mut states: Vec<(u32, u32)> = vec![(a.start, b.start)];
    index.insert((a.start, b.start), 0);
    let mut i = 0;
    while i < states.len() {
        let (x, y) = states[i];
        // `y == NONE` only when subtracting: the second side can no longer match.
        let in_b = y != NONE && b.complete[y as usize];
        complete.push(a.complete[x as usize] && (in_b != subtract));
        for &(ca, cb) in &reps {
            let nx = a.trans[x as usize * a.stride + ca as usize];
            let ny = if y == NONE {
                NONE
            } else {
                b.trans[y as usize * b.stride + cb as usize]
            };
            if nx == NONE || (ny == NONE && !subtract) {
                trans.push(NONE);
                continue;
            }
            let next = match index.get(&(nx, ny)) {
                Some(&n) => n,
                None => {
                    if states.len() >= MAX_LEXER_STATES {
                        return Err(GrammarError::TooLarge {
                            span: t.span,
                            what: format!("automaton of terminal `{}` (an intersection)", t.name),
                            limit: MAX_LEXER_STATES,
                        });
                    }
                    let n = states.len() as u32;
                    index.insert((nx, ny), n);
                    states.push((nx, ny));
                    n
                }
            };
            trans.push(next);
        }
        i += 1;
    }
    Ok(TermDfa::pruned(classes, stride, trans, complete))
}

/// Redirects every transition into a state that cannot reach a complete one to `NONE`;
/// returns whether state 0 (the start) can.
pub(super) fn prune_dead(trans: &mut [u32], stride: usize, complete: &[bool]) -> bool {
    let n = complete.len();
    let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
    for s in 0..n {
        for c in 0..stride {
            let t = trans[s * stride + c];
            if t != NONE {
                rev[t as usize].push(s as u32);
            }
        }
    }
    let mut live = complete.to_vec();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&s| live[s as usize]).collect();
    while let Some(s) = stack.pop() {
        for &p in &rev[s as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        }
    }
    for t in trans.iter_mut() {
        if *t != NONE && !live[*t as usize] {
            *t = NONE;
        }
    }
    live[0]
}

/// The DFA of one of a terminal's regexes, re-indexed densely from its start.
pub(super) fn regex_dfa(t: &Terminal, regex: &str, main: bool) -> Result<TermDfa, GrammarError> {
    let hir = check_regex(t, regex, main)?;
    if let regex_syntax::hir::HirKind::Literal(lit) = hir.kind() {
        if !lit.0.is_empty() {
            return Ok(literal_dfa(&lit.0));
        }
    }
    if let Some(words) = finite_words(&hir) {
        return Ok(finite_dfa(&words));
    }
    if let Some(d) = repeat_dfa(t, &hir) {
        return Ok(d);
    }
    automaton_dfa(t, regex)
}

/// Most words [`finite_words`] enumerates.
const FINITE_WORDS: usize = 1024;
/// Most bytes, over all words, [`finite_words`] enumerates.
const FINITE_BYTES: usize = 32 << 10;
/// Most characters of one class [`finite_words`] enumerates.
const FINITE_CLASS_CHARS: u32 = 8;
/// Most iterations of a bounded repetition [`finite_words`] unrolls.
const FINITE_REPEAT: u32 = 8;

/// The words of a pattern without unbounded repetition (an enum value or a key, whose
/// `/` may be escaped), in leftmost-first priority order with repeats kept: an
/// alternation's words in branch order, a concatenation's in order of its first part,
/// then its second; a greedy repetition prefers one more iteration, a lazy one fewer.
/// `None` past [`FINITE_WORDS`] words or [`FINITE_BYTES`] bytes, or where a part is not
/// small enough to enumerate (a wide class, a long or unbounded repetition).
///
/// Why: a regex-automata build costs 100–250 µs for such a pattern, and a schema with a
/// few hundred enum values of this shape spent tens of milliseconds on them.
pub(super) fn finite_words(hir: &regex_syntax::hir::Hir) -> Option<Vec<Vec<u8>>> {
    use regex_syntax::hir::{Class, HirKind};
    let bounded = |words: Vec<Vec<u8>>| {
        (words.len() <= FINITE_WORDS && words.iter().map(Vec::len).sum::<usize>() <= FINITE_BYTES)
            .then_some(words)
    };
    let concat = |a: &[Vec<u8>], b: &[Vec<u8>]| {
        if a.len().saturating_mul(b.len()) > FINITE_WORDS {
            return None;
        }
        bounded(
            a.iter()
                .flat_map(|x| b.iter().map(move |y| [x.as_slice(), y].concat()))
                .collect(),
        )
    };
    match hir.kind() {
        HirKind::Empty => Some(vec![Vec::new()]),
        HirKind::Literal(l) => bounded(vec![l.0.to_vec()]),
        HirKind::Class(Class::Unicode(c)) => {
            let n: u32 = c
                .iter()
                .map(|r| r.end() as u32 - r.start() as u32 + 1)
                .sum();
            (n <= FINITE_CLASS_CHARS).then(|| {
                c.iter()
                    .flat_map(|r| r.start()..=r.end())
                    .map(|ch| ch.to_string().into_bytes())
                    .collect()
            })
        }
        HirKind::Class(Class::Bytes(c)) => {
            let n: u32 = c.iter().map(|r| (r.end() - r.start()) as u32 + 1).sum();
            (n <= FINITE_CLASS_CHARS).then(|| {
                c.iter()
                    .flat_map(|r| r.start()..=r.end())
                    .map(|b| vec![b])
                    .collect()
            })
        }
        HirKind::Look(_) => None,
        HirKind::Capture(c) => finite_words(&c.sub),
        HirKind::Concat(items) => items
            .iter()
            .try_fold(vec![Vec::new()], |acc, h| concat(&acc, &finite_words(h)?)),
        HirKind::Alternation(alts) => {
            let mut all = Vec::new();
            for h in alts {
                all.extend(finite_words(h)?);
                if all.len() > FINITE_WORDS {
                    return None;
                }
            }
            bounded(all)
        }
        HirKind::Repetition(r) => {
            let max = r.max?;
            if max > FINITE_REPEAT || max < r.min {
                return None;
            }
            let unit = finite_words(&r.sub)?;
            // `max - min` optional iterations, innermost first: each either takes the
            // unit and the rest, or stops (preferred first when lazy).
            let mut rest: Vec<Vec<u8>> = vec![Vec::new()];
            for _ in r.min..max {
                let more = concat(&unit, &rest)?;
                rest = if r.greedy {
                    bounded([more, vec![Vec::new()]].concat())?
                } else {
                    bounded([vec![Vec::new()], more].concat())?
                };
            }
            let mut words = vec![Vec::new()];
            for _ in 0..r.min {
                words = concat(&words, &unit)?;
            }
            concat(&words, &rest)
        }
    }
}

/// The DFA of the finite pattern whose words, in priority order, are `words` (see
/// [`finite_words`]), with leftmost-first semantics: a state is a prefix and the words
/// still going through it, by priority; where one of them ends, the prefix is complete
/// and the words after it are dropped (as regex-automata drops the threads below a match).
/// Classes as [`literal_dfa`]'s: each byte a word holds alone, the rest one class.
pub(super) fn finite_dfa(words: &[Vec<u8>]) -> TermDfa {
    let (classes, stride) = byte_classes_of(words.iter().flatten().copied());
    // Per state: (word, bytes read) still going, by priority.
    let settle = |mut going: Vec<(u32, u32)>| -> (Vec<(u32, u32)>, bool) {
        match going
            .iter()
            .position(|&(w, at)| at as usize == words[w as usize].len())
        {
            Some(k) => {
                going.truncate(k);
                (going, true)
            }
            None => (going, false),
        }
    };
    let (going, done) = settle((0..words.len() as u32).map(|w| (w, 0)).collect());
    let mut states = vec![going];
    let mut complete = vec![done];
    let mut trans: Vec<u32> = Vec::new();
    let mut s = 0;
    while s < states.len() {
        let row = trans.len();
        trans.resize(row + stride, NONE);
        let mut bytes: Vec<u8> = states[s]
            .iter()
            .map(|&(w, at)| words[w as usize][at as usize])
            .collect();
        bytes.sort_unstable();
        bytes.dedup();
        for b in bytes {
            let going = states[s]
                .iter()
                .filter(|&&(w, at)| words[w as usize][at as usize] == b)
                .map(|&(w, at)| (w, at + 1))
                .collect();
            let (going, done) = settle(going);
            trans[row + classes[b as usize] as usize] = states.len() as u32;
            states.push(going);
            complete.push(done);
        }
        s += 1;
    }
    TermDfa::pruned(classes, stride, trans, complete).minimized()
}

/// A pattern's DFA, determinized by regex-automata (see [`regex_dfa`]), with the
/// terminals' leftmost-first semantics (a lazy quantifier ends at the earliest match).
pub(super) fn automaton_dfa(t: &Terminal, regex: &str) -> Result<TermDfa, GrammarError> {
    automaton_dfa_as(t, regex, MatchKind::LeftmostFirst)
}

/// [`automaton_dfa`] with the match semantics `kind` (`All`: the pattern's whole
/// language, no thread dropped once one matches).
pub(super) fn automaton_dfa_as(
    t: &Terminal,
    regex: &str,
    kind: MatchKind,
) -> Result<TermDfa, GrammarError> {
    unminimized_dfa(t, regex, kind).map(TermDfa::minimized)
}

/// regex-automata's DFA of `regex`, re-indexed densely from its start and pruned.
pub(super) fn unminimized_dfa(
    t: &Terminal,
    regex: &str,
    kind: MatchKind,
) -> Result<TermDfa, GrammarError> {
    dense_dfa(t, regex, kind, true)
}

/// [`unminimized_dfa`]; `utf8: false` lets `regex` match bytes that are not UTF-8 (the
/// look-around proofs mark an assertion's place with one).
pub(super) fn dense_dfa(
    t: &Terminal,
    regex: &str,
    kind: MatchKind,
    utf8: bool,
) -> Result<TermDfa, GrammarError> {
    let dfa = dense::Builder::new()
        .configure(
            dense::DFA::config()
                .start_kind(StartKind::Anchored)
                .match_kind(kind)
                .minimize(false)
                .dfa_size_limit(Some(TERMINAL_DFA_LIMIT))
                .determinize_size_limit(Some(TERMINAL_DFA_LIMIT)),
        )
        .syntax(syntax::Config::new().unicode(true).utf8(utf8))
        .thompson(thompson::Config::new().nfa_size_limit(Some(TERMINAL_DFA_LIMIT)))
        .build(regex)
        .map_err(|e| GrammarError::TooLarge {
            span: t.span,
            what: format!("automaton of terminal `{}` ({e})", t.name),
            limit: TERMINAL_DFA_LIMIT,
        })?;
    let start_sid = dfa
        .start_state(&start::Config::new().anchored(Anchored::Yes))
        .map_err(|e| GrammarError::BadRegex {
            span: t.span,
            terminal: t.name.clone(),
            message: e.to_string(),
        })?;
    let bc = dfa.byte_classes();
    let mut classes = [0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let c = bc.get(b);
        classes[b as usize] = c;
        if c as usize >= reps.len() {
            reps.resize(c as usize + 1, b);
        }
    }
    // `reps[c]` must be the first byte of class c; classes are numbered in byte order.
    let mut first = vec![None; reps.len()];
    for b in 0..=255u8 {
        let c = classes[b as usize] as usize;
        if first[c].is_none() {
            first[c] = Some(b);
        }
    }
    let reps: Vec<u8> = first.into_iter().map(|f| f.unwrap_or(0)).collect();
    let stride = reps.len();

    let mut index: HashMap<StateID, u32> = HashMap::new();
    let mut states: Vec<StateID> = Vec::new();
    let mut trans: Vec<u32> = Vec::new();
    index.insert(start_sid, 0);
    states.push(start_sid);
    let mut i = 0;
    while i < states.len() {
        let sid = states[i];
        for &b in &reps {
            let nsid = dfa.next_state(sid, b);
            if dfa.is_dead_state(nsid) || dfa.is_quit_state(nsid) {
                trans.push(NONE);
                continue;
            }
            let next = match index.get(&nsid) {
                Some(&n) => n,
                None => {
                    let n = states.len() as u32;
                    index.insert(nsid, n);
                    states.push(nsid);
                    n
                }
            };
            trans.push(next);
        }
        i += 1;
    }
    let complete: Vec<bool> = states
        .iter()
        .map(|&sid| dfa.is_match_state(dfa.next_eoi_state(sid)))
        .collect();
    Ok(TermDfa::pruned(classes, stride, trans, complete))
}

/// Patterns several terminals use, each with its DFA once built (`None`: failed).
type SharedDfas<'g> = HashMap<&'g str, std::sync::OnceLock<Option<Arc<TermDfa>>>>;

/// The patterns several of `terminals` use (as regex, `also` or `except`), so that each is
/// built once: a length bound beside different patterns is the same `also` in each
/// (`maxLength: 255` is a DFA of thousands of states).
pub(super) fn shared_patterns(terminals: &[Terminal]) -> SharedDfas<'_> {
    let mut uses: HashMap<&str, u32> = HashMap::new();
    for t in terminals.iter().filter(|t| t.special.is_none()) {
        for re in std::iter::once(&t.regex).chain(&t.also).chain(&t.except) {
            *uses.entry(re.as_str()).or_default() += 1;
        }
    }
    uses.into_iter()
        .filter(|&(_, n)| n > 1)
        .map(|(re, _)| (re, std::sync::OnceLock::new()))
        .collect()
}

//! Pass: the grammar's terminals → one byte-level [`LexerDfa`].
//!
//! Each terminal's regex is compiled by `regex-automata` into an anchored dense DFA with
//! leftmost-first semantics, so a lazy quantifier stops at its earliest match exactly as
//! in Lark / Python `re` (DESIGN.md §1): a lexeme `w` is a complete match of the terminal
//! iff that DFA, run over `w` and end of input, reports a match ending at `|w|`. Unicode
//! classes are UTF-8 byte automata, so invalid UTF-8 never matches. The per-terminal DFAs
//! are then run in lock step (a product construction over the states that can still reach
//! a match), which gives one DFA whose state knows, for the lexeme so far, every terminal
//! it could still become and which of the top-priority ones it already completes.

use hashbrown::HashMap;
use regex_automata::{
    dfa::{dense, Automaton, StartKind},
    nfa::thompson,
    util::{primitives::StateID, start, syntax},
    Anchored, MatchKind,
};

use super::error::GrammarError;
use super::ir::{Grammar, Priority, Terminal};
use crate::ids::TerminalId;
use crate::lexer::{LexTerminal, LexerDfa};

/// Most states of the combined lexer DFA; bounds memory (states × classes × 4 bytes).
pub const MAX_LEXER_STATES: usize = 200_000;
/// Heap limit for one terminal's DFA (and its determinization) in bytes.
pub const TERMINAL_DFA_LIMIT: usize = 64 << 20;

const NONE: u32 = u32::MAX;

/// One terminal's DFA, re-indexed densely over the states reachable from its start.
struct TermDfa {
    classes: [u8; 256],
    stride: usize,
    /// `trans[s * stride + class]`, `NONE` for dead or for states that cannot reach a match.
    trans: Vec<u32>,
    complete: Vec<bool>,
    start: u32,
}

fn check_regex(t: &Terminal, regex: &str, main: bool) -> Result<(), GrammarError> {
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
    Ok(())
}

/// A terminal's DFA: its regex's, intersected with each of its `also` patterns' and
/// minus each of its `except` patterns'.
fn term_dfa(t: &Terminal) -> Result<TermDfa, GrammarError> {
    let mut dfa = regex_dfa(t, &t.regex, true)?;
    for re in &t.also {
        dfa = product(&dfa, &regex_dfa(t, re, false)?, t, Product::Intersect)?;
    }
    for re in &t.except {
        dfa = product(&dfa, &regex_dfa(t, re, false)?, t, Product::Subtract)?;
    }
    Ok(dfa)
}

/// What a product of two terminal DFAs accepts.
#[derive(Clone, Copy, PartialEq)]
enum Product {
    /// Lexemes in both.
    Intersect,
    /// Lexemes in the first and not in the second: the second side may die (`NONE`)
    /// without the pair dying.
    Subtract,
}

/// The product of two terminal DFAs (see [`Product`]); a state lives iff it can still
/// reach completion.
fn product(a: &TermDfa, b: &TermDfa, t: &Terminal, kind: Product) -> Result<TermDfa, GrammarError> {
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

impl TermDfa {
    /// A DFA from its parts (start state 0), with every transition into a state that
    /// cannot reach a complete one redirected to `NONE`.
    fn pruned(classes: [u8; 256], stride: usize, mut trans: Vec<u32>, complete: Vec<bool>) -> Self {
        let live = prune_dead(&mut trans, stride, &complete);
        Self {
            classes,
            stride,
            trans,
            complete,
            start: if live { 0 } else { NONE },
        }
    }
}

/// Redirects every transition into a state that cannot reach a complete one to `NONE`;
/// returns whether state 0 (the start) can.
fn prune_dead(trans: &mut [u32], stride: usize, complete: &[bool]) -> bool {
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
fn regex_dfa(t: &Terminal, regex: &str, main: bool) -> Result<TermDfa, GrammarError> {
    check_regex(t, regex, main)?;
    let dfa = dense::Builder::new()
        .configure(
            dense::DFA::config()
                .start_kind(StartKind::Anchored)
                .match_kind(MatchKind::LeftmostFirst)
                .minimize(false)
                .dfa_size_limit(Some(TERMINAL_DFA_LIMIT))
                .determinize_size_limit(Some(TERMINAL_DFA_LIMIT)),
        )
        .syntax(syntax::Config::new().unicode(true).utf8(true))
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

/// Builds the lexer DFA of a grammar.
pub fn build_lexer(g: &Grammar) -> Result<LexerDfa, GrammarError> {
    let dfas = g
        .terminals
        .iter()
        .map(term_dfa)
        .collect::<Result<Vec<_>, _>>()?;
    let prio: Vec<Priority> = g.terminals.iter().map(|t| t.priority).collect();

    // Global byte classes: bytes no terminal DFA distinguishes.
    let mut sig_class: HashMap<Vec<u8>, u8> = HashMap::new();
    let mut classes = vec![0u8; 256];
    let mut reps: Vec<u8> = Vec::new();
    for b in 0..=255u8 {
        let sig: Vec<u8> = dfas.iter().map(|d| d.classes[b as usize]).collect();
        let next = sig_class.len();
        let c = *sig_class.entry(sig).or_insert_with(|| {
            reps.push(b);
            next as u8
        });
        classes[b as usize] = c;
    }
    let stride = reps.len();

    type Key = Vec<(u32, u32)>;
    let mut index: HashMap<Key, u32> = HashMap::new();
    let mut keys: Vec<Key> = vec![Vec::new()]; // state 0: dead
    index.insert(Vec::new(), 0);
    let start_key: Key = dfas
        .iter()
        .enumerate()
        .filter(|(_, d)| d.start != NONE)
        .map(|(i, d)| (i as u32, d.start))
        .collect();
    // The start state is always 1, even if no terminal can start (then it has no exits).
    keys.push(start_key.clone());
    index.insert(start_key, 1);
    let mut trans: Vec<u32> = vec![0; stride]; // dead row
    let mut emits: Vec<Vec<TerminalId>> = vec![Vec::new()];
    let mut s = 1;
    while s < keys.len() {
        let key = keys[s].clone();
        for &b in &reps {
            let next: Key = key
                .iter()
                .filter_map(|&(t, st)| {
                    let d = &dfas[t as usize];
                    let ns = d.trans[st as usize * d.stride + d.classes[b as usize] as usize];
                    (ns != NONE).then_some((t, ns))
                })
                .collect();
            let id = match index.get(&next) {
                Some(&id) => id,
                None => {
                    let id = keys.len() as u32;
                    if keys.len() >= MAX_LEXER_STATES {
                        return Err(GrammarError::TooLarge {
                            span: Default::default(),
                            what: "lexer DFA states".into(),
                            limit: MAX_LEXER_STATES,
                        });
                    }
                    index.insert(next.clone(), id);
                    keys.push(next);
                    id
                }
            };
            trans.push(id);
        }
        let complete: Vec<u32> = key
            .iter()
            .filter(|&&(t, st)| dfas[t as usize].complete[st as usize])
            .map(|&(t, _)| t)
            .collect();
        let top = complete.iter().map(|&t| prio[t as usize]).max();
        emits.push(
            complete
                .into_iter()
                .filter(|&t| Some(prio[t as usize]) == top)
                .map(|t| TerminalId::new(t as usize))
                .collect(),
        );
        s += 1;
    }
    let terminals = g
        .terminals
        .iter()
        .map(|t| LexTerminal {
            name: t.name.clone(),
            ignored: t.ignored,
        })
        .collect();
    // The construction above meets every invariant `from_parts` checks.
    Ok(
        LexerDfa::from_parts(classes, stride as u32, trans, emits, terminals)
            .expect("lexer tables built consistently"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::error::Span;
    use crate::compile::ir::Terminal;

    fn terminal(regex: &str, also: &[&str]) -> Terminal {
        terminal_except(regex, also, &[])
    }

    fn terminal_except(regex: &str, also: &[&str], except: &[&str]) -> Terminal {
        Terminal {
            name: "T".into(),
            regex: regex.into(),
            priority: Priority::default(),
            ignored: false,
            also: also.iter().map(|s| s.to_string()).collect(),
            except: except.iter().map(|s| s.to_string()).collect(),
            span: Span::default(),
        }
    }

    /// Runs a terminal DFA: `None` once dead, else whether the lexeme is complete.
    fn run(d: &TermDfa, w: &[u8]) -> Option<bool> {
        let mut s = d.start;
        for &b in w {
            if s == NONE {
                return None;
            }
            s = d.trans[s as usize * d.stride + d.classes[b as usize] as usize];
        }
        (s != NONE).then(|| d.complete[s as usize])
    }

    /// An intersection accepts exactly the words both patterns accept in full, and dies
    /// as soon as either side can no longer complete.
    #[test]
    fn intersection_is_exact() {
        let d = term_dfa(&terminal("[a-z]+:[a-z]+", &["[a-z:]{3,5}", ".*b.*"])).unwrap();
        let full = |re: &str| regex_automata::meta::Regex::new(&format!("^(?:{re})$")).unwrap();
        let (r1, r2) = (full("[a-z]+:[a-z]+"), full("[a-z:]{3,5}"));
        let both = |w: &str| r1.is_match(w) && r2.is_match(w) && w.contains('b');
        let alphabet = ["a", "b", ":", "é"];
        let mut words = vec![String::new()];
        for _ in 0..6 {
            let longer: Vec<String> = words
                .iter()
                .filter(|w| w.chars().count() == words.last().unwrap().chars().count())
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .collect();
            words.extend(longer);
        }
        for w in &words {
            assert_eq!(run(&d, w.as_bytes()) == Some(true), both(w), "{w:?}");
        }
        // Too long for the length side: dead, not merely incomplete.
        assert_eq!(run(&d, b"ab:abb"), None);
        // Empty intersection: no start.
        let e = term_dfa(&terminal("a+", &["b+"])).unwrap();
        assert_eq!(e.start, NONE);
    }

    /// A difference accepts exactly the words the main pattern accepts and no `except`
    /// pattern does, and lives on where an excepted prefix can still grow out of it.
    #[test]
    fn difference_is_exact() {
        let d = term_dfa(&terminal_except("[a-c]{1,4}", &[], &["a.*", "bc", "c+"])).unwrap();
        let full = |re: &str| regex_automata::meta::Regex::new(&format!("^(?:{re})$")).unwrap();
        let (main, e1, e2, e3) = (full("[a-c]{1,4}"), full("a.*"), full("bc"), full("c+"));
        let keep =
            |w: &str| main.is_match(w) && !e1.is_match(w) && !e2.is_match(w) && !e3.is_match(w);
        let mut words = vec![String::new()];
        for len in 0..5 {
            let longer: Vec<String> = words
                .iter()
                .filter(|w| w.len() == len)
                .flat_map(|w| ["a", "b", "c", "d"].iter().map(move |c| format!("{w}{c}")))
                .collect();
            words.extend(longer);
        }
        for w in &words {
            assert_eq!(run(&d, w.as_bytes()) == Some(true), keep(w), "{w:?}");
        }
        // "a…" can never complete: dead at once. "bc" is excepted but "bcb" is not.
        assert_eq!(run(&d, b"a"), None);
        assert_eq!(run(&d, b"bc"), Some(false));
        assert_eq!(run(&d, b"bcb"), Some(true));
        // Everything excepted: no start.
        let e = term_dfa(&terminal_except("ab?", &[], &["a", "ab"])).unwrap();
        assert_eq!(e.start, NONE);
    }
}

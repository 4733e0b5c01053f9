//! The lexer build against regex-automata and against unrolled counts: terminal DFAs,
//! products, minimization, counted runs and the subset construction's bounds.

use super::*;
use crate::compile::error::Span;
use crate::compile::grammar::ir::{Counted, LexMode, Terminal};

fn terminal(regex: &str, also: &[&str]) -> Terminal {
    terminal_except(regex, also, &[])
}

fn terminal_except(regex: &str, also: &[&str], except: &[&str]) -> Terminal {
    Terminal {
        name: "T".into(),
        regex: regex.into(),
        priority: Priority::default(),
        ignored: false,
        droppable: false,
        also: also.iter().map(|s| s.to_string()).collect(),
        except: except.iter().map(|s| s.to_string()).collect(),
        counted: None,
        divisibility: Vec::new(),
        special: None,
        mode: LexMode::default(),
        span: Span::default(),
    }
}

/// Runs a terminal DFA over `input`: per prefix, whether it is alive and complete.
fn prefixes(dfa: &TermDfa, input: &[u8]) -> Vec<(bool, bool)> {
    let mut s = dfa.start;
    let mut out = vec![(s != NONE, s != NONE && dfa.complete[s as usize])];
    for &b in input {
        if s != NONE {
            s = dfa.trans[s as usize * dfa.stride + dfa.classes[b as usize] as usize];
        }
        out.push((s != NONE, s != NONE && dfa.complete[s as usize]));
    }
    out
}

/// Literals built directly accept exactly what regex-automata's DFA of the same
/// pattern accepts, prefix by prefix (on every word up to four bytes over the
/// literal's bytes and two others, and on the literal with one byte changed).
#[test]
fn literal_dfas_agree_with_regex_automata() {
    for lit in [
        "a",
        "ab",
        "aab",
        "\"include_lowercase\"",
        "{",
        "true",
        "é\u{0}x",
        "aaaa",
    ] {
        let t = terminal(&regex_syntax::escape(lit), &[]);
        let hir = check_regex(&t, &t.regex, true).unwrap();
        assert!(
            matches!(hir.kind(), regex_syntax::hir::HirKind::Literal(_)),
            "{lit:?} parses to a literal"
        );
        let direct = literal_dfa(lit.as_bytes());
        let general = automaton_dfa(&t, &t.regex).unwrap();
        let mut alphabet: Vec<u8> = lit.bytes().collect();
        alphabet.extend([b'z', 0xff]);
        alphabet.sort();
        alphabet.dedup();
        let mut words: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..4 {
            let longer: Vec<Vec<u8>> = words
                .iter()
                .filter(|w| w.len() == words.last().unwrap().len())
                .flat_map(|w| {
                    alphabet.iter().map(move |&b| {
                        let mut v = w.clone();
                        v.push(b);
                        v
                    })
                })
                .collect();
            words.extend(longer);
        }
        for i in 0..lit.len() {
            let mut w = lit.as_bytes().to_vec();
            w[i] ^= 1;
            words.push(w);
        }
        words.push(lit.as_bytes().to_vec());
        words.push([lit.as_bytes(), b"a"].concat());
        for w in &words {
            assert_eq!(
                prefixes(&direct, w),
                prefixes(&general, w),
                "{lit:?} on {w:?}"
            );
        }
    }
}

fn grammar_of(terminals: Vec<Terminal>) -> Grammar {
    use crate::compile::grammar::ir::{Nonterminal, Production, Symbol};
    use crate::ids::NonterminalId;
    let n = terminals.len();
    Grammar {
        terminals,
        nonterminals: vec![Nonterminal {
            name: "start".into(),
            span: Span::default(),
        }],
        productions: (0..n)
            .map(|t| Production {
                lhs: NonterminalId::new(0),
                rhs: vec![Symbol::T(TerminalId::new(t))],
                priority: 0,
            })
            .collect(),
        start: NonterminalId::new(0),
        indenter: None,
        declared: Vec::new(),
        longest_match: false,
    }
}

/// Strings of a few kinds at once: a generic one, three counted ones (one of them
/// unbounded above), a literal that beats them, and one whose pattern lives only on
/// `a`s; units of one, two (`é`, escapes) bytes. `counted` selects counted terminals or
/// their unrolled regexes.
fn string_kinds(counted: bool) -> Vec<Terminal> {
    let unit = r"[ab]|\\[nc]|é";
    let plain = |name: &str, regex: &str, literal: bool| {
        let mut t = terminal(regex, &[]);
        t.name = name.into();
        t.priority.literal = literal;
        t
    };
    let count = |name: &str, pattern: &str, lo: u32, hi: Option<u32>| {
        let mut t = plain(name, pattern, false);
        if counted {
            t.counted = Some(Counted {
                open: b'"',
                unit: unit.into(),
                close: b'"',
                lo,
                hi,
            });
        } else {
            let hi = hi.map_or(String::new(), |h| h.to_string());
            t.also = vec![format!("\"(?:{unit}){{{lo},{hi}}}\"")];
        }
        t
    };
    let any = format!("\"(?:{unit})*\"");
    // Upward closed (after a closing `bbb`, one more `b` closes too), and a lexeme
    // not ending in `b` still needs three units: near the bound it dies early.
    let ab = format!("\"a(?:{unit})*bbb\"");
    vec![
        plain("ANY", r#""[abé\\nc]*""#, false),
        count("T1", &any, 2, Some(60)),
        count("T2", &any, 0, Some(12)),
        count("T3", &any, 40, None),
        count("AB", &ab, 3, Some(50)),
        plain("AB", r#""ab""#, true),
        plain("AS", r#""a+""#, false),
        plain("X", "x+", false),
    ]
}

/// A lexer with counted terminals lexes exactly like the one with their counts
/// unrolled into regexes: walking both in lock step from the start over every byte
/// (both are finite, so this visits every reachable pair), exact states agree on
/// deadness, emission and extendability, and their stand-ins on the follow tables
/// and on the reference's lexical searches. Several margins cut runs differently.
#[test]
fn counted_runs_lex_like_unrolled_counts() {
    assert_lexes_like_unrolled(string_kinds);
    // A patterned counted terminal alone: nothing else keeps a lexeme alive that can
    // no longer complete under the bound.
    assert_lexes_like_unrolled(|counted| {
        string_kinds(counted)
            .into_iter()
            .filter(|t| t.name == "AB" || t.name == "X")
            .collect()
    });
}

fn assert_lexes_like_unrolled(kinds: impl Fn(bool) -> Vec<Terminal>) {
    use crate::compile::lexer::follow::build_follow;
    use crate::ids::LexStateId;
    use crate::reference::follow as rf;
    let unrolled = build_lexer(&grammar_of(kinds(false))).unwrap();
    let uf = build_follow(&unrolled);
    // One lexer mode: every lexeme is followed by one from the start state.
    let starts = vec![LexerDfa::START; kinds(false).len()];
    for margin in [1, 2, 3, 5] {
        let g = grammar_of(kinds(true));
        let lx = build_lexer_with(
            &g,
            &LexerOptions {
                count_margin: margin,
                ..LexerOptions::default()
            },
        )
        .unwrap();
        assert!(!lx.runs().is_empty(), "margin {margin}: no run was cut");
        assert!(lx.num_states() < unrolled.num_states(), "margin {margin}");
        let lf = build_follow(&lx);
        let mut seen = hashbrown::HashSet::new();
        let mut work = vec![(LexerDfa::START, LexerDfa::START)];
        let mut virtual_seen = 0;
        while let Some((a, b)) = work.pop() {
            if !seen.insert((a, b)) {
                continue;
            }
            let at = format!("margin {margin}: states {a:?} / {b:?}");
            assert_eq!(lx.is_dead(a), unrolled.is_dead(b), "{at}");
            if lx.is_dead(a) {
                continue;
            }
            virtual_seen += usize::from(a.index() >= lx.num_states());
            assert_eq!(lx.emits(a), unrolled.emits(b), "{at}");
            assert_eq!(lx.can_extend(a), unrolled.can_extend(b), "{at}");
            let ra = lx.rep(a);
            assert_eq!(lf.after_pending(ra), uf.after_pending(b), "{at}");
            assert_eq!(lf.at_boundary(ra), uf.at_boundary(b), "{at}");
            let (x, y) = (
                rf::after_growing(&lx, &starts, a, &[], None),
                rf::after_growing(&unrolled, &starts, b, &[], None),
            );
            assert_eq!((x.terminals, x.eof), (y.terminals, y.eof), "{at}");
            let (x, y) = (
                rf::at_boundary(&lx, &starts, LexerDfa::START, vec![a], None),
                rf::at_boundary(&unrolled, &starts, LexerDfa::START, vec![b], None),
            );
            assert_eq!((x.terminals, x.eof), (y.terminals, y.eof), "{at}");
            for byte in 0..=255u8 {
                work.push((lx.next(a, byte), unrolled.next(b, byte)));
            }
        }
        assert!(
            virtual_seen > 0,
            "margin {margin}: no virtual state reached"
        );
        let _ = LexStateId::new(0);
    }
}

/// `max_states` stops the subset construction with a size error, not a wrong lexer.
#[test]
fn max_states_bounds_the_subset_construction() {
    let g = grammar_of(string_kinds(false));
    let full = build_lexer_with(&g, &LexerOptions::default()).unwrap();
    let small = LexerOptions {
        max_states: 3,
        ..LexerOptions::default()
    };
    assert!(full.num_states() > 3);
    match build_lexer_with(&g, &small) {
        Err(GrammarError::TooLarge { limit, .. }) => assert_eq!(limit, 3),
        other => panic!("expected a size error, got {other:?}"),
    }
}

/// Shifting rows between layers builds the very lexer stepping every row does, and
/// shifts a good share of a counted grammar's rows (else it would only be slower).
#[test]
fn shifted_rows_are_stepped_rows() {
    let g = grammar_of(string_kinds(true));
    for margin in [1, 3, 8, 40] {
        let opts = LexerOptions {
            count_margin: margin,
            ..LexerOptions::default()
        };
        let (shifted, n) =
            subset_construction(&g, &opts, true, false, &Default::default()).unwrap();
        let (stepped, none) =
            subset_construction(&g, &opts, false, false, &Default::default()).unwrap();
        let (shifted, stepped) = (shifted.dfa, stepped.dfa);
        assert_eq!(shifted, stepped, "margin {margin}");
        assert_eq!(none, 0);
        // A wide margin leaves most layers explicit: most of their rows shift.
        let share = if margin == 40 { 2 } else { 8 };
        assert!(
            share * n > shifted.num_states(),
            "margin {margin}: {n} shifted"
        );
    }
}

/// Counted terminals that disagree on their shape, or whose unit is not prefix-free,
/// are refused by name instead of miscounted.
#[test]
fn counted_terminals_must_share_a_prefix_free_unit() {
    let mut ts = string_kinds(true);
    if let Some(c) = ts[2].counted.as_mut() {
        c.unit = "[ab]".into();
    }
    let e = build_lexer(&grammar_of(ts)).unwrap_err().to_string();
    assert!(e.contains("share their opening, unit and closing"), "{e}");
    let mut ts = string_kinds(true);
    for t in &mut ts {
        if let Some(c) = t.counted.as_mut() {
            c.unit = "ab?".into();
        }
    }
    let e = build_lexer(&grammar_of(ts)).unwrap_err().to_string();
    assert!(e.contains("not prefix-free"), "{e}");
    // Pairs of letters: a count one short of the bound cannot tell whether the
    // lexeme still completes, so the pattern is refused (and says so beforehand).
    let mut ts = string_kinds(true);
    ts[1].regex = r#""(?:aa)*""#.into();
    assert!(!counted_is_exact(&ts[1]).unwrap());
    assert!(counted_is_exact(&ts[2]).unwrap());
    let e = build_lexer(&grammar_of(ts)).unwrap_err().to_string();
    assert!(e.contains("gaps"), "{e}");
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

/// Whether two DFAs over the same byte classes accept the same language: every pair
/// of states reached together agrees on completing and on which classes lead on.
fn same_language(a: &TermDfa, b: &TermDfa) -> bool {
    assert_eq!((a.classes, a.stride), (b.classes, b.stride));
    if (a.start == NONE) != (b.start == NONE) {
        return false;
    }
    let mut seen = std::collections::HashSet::new();
    let mut work = vec![(a.start, b.start)];
    while let Some((x, y)) = work.pop() {
        if x == NONE || !seen.insert((x, y)) {
            continue;
        }
        if a.complete[x as usize] != b.complete[y as usize] {
            return false;
        }
        for c in 0..a.stride {
            let (x2, y2) = (
                a.trans[x as usize * a.stride + c],
                b.trans[y as usize * b.stride + c],
            );
            if (x2 == NONE) != (y2 == NONE) {
                return false;
            }
            work.push((x2, y2));
        }
    }
    true
}

/// Minimized terminal DFAs accept what regex-automata's DFAs accept, and no two of
/// their states accept the same suffixes (checked by the table-filling algorithm);
/// a URL pattern of the kind that multiplies counted layers loses most of its states.
#[test]
fn minimized_dfas_are_equivalent_and_minimal() {
    let url =
        r#""((https?)(/|\\/)(/|\\/))?[\-\.0-9a-z]+\.[\.a-z]{2,6}(([ \--9A-Z_a-z]|\\/)*)*(/|\\/)?""#;
    let patterns = [
        url,
        r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
        r#""([^"\\\x00-\x1f]|\\["\\/bfnrt])*""#,
        "[a-z]{2,6}x*",
        "a{0,40}",
        "(ab|cb)*(ab|cb)",
        "[ab]*a[ab]{3}",
        "x|y|z",
    ];
    for re in patterns {
        let t = terminal(re, &[]);
        let raw = unminimized_dfa(&t, re, MatchKind::LeftmostFirst).unwrap();
        let min = raw.clone().minimized();
        assert!(same_language(&raw, &min), "{re}: language changed");
        assert!(min.complete.len() <= raw.complete.len(), "{re}");
        // Table filling: pairs told apart by completing, by one leading on where the
        // other cannot, or by a class leading to a pair already told apart.
        let n = min.complete.len();
        let next = |s: usize, c: usize| min.trans[s * min.stride + c];
        // `apart[x * n + y]`: states x and y accept different suffixes.
        let pairs = || (0..n).flat_map(|x| (0..n).map(move |y| (x, y)));
        let mut apart: Vec<bool> = pairs()
            .map(|(x, y)| {
                min.complete[x] != min.complete[y]
                    || (0..min.stride).any(|c| (next(x, c) == NONE) != (next(y, c) == NONE))
            })
            .collect();
        let mut changed = true;
        while changed {
            changed = false;
            for (x, y) in pairs() {
                if !apart[x * n + y]
                    && (0..min.stride).any(|c| {
                        let (a, b) = (next(x, c), next(y, c));
                        a != NONE && apart[a as usize * n + b as usize]
                    })
                {
                    apart[x * n + y] = true;
                    changed = true;
                }
            }
        }
        for (x, y) in pairs().filter(|&(x, y)| x < y) {
            assert!(apart[x * n + y], "{re}: states {x} and {y} are equivalent");
        }
        if re == url {
            assert!(4 * n < raw.complete.len(), "{} -> {n}", raw.complete.len());
        }
    }
    // Terminal DFAs (after products too) come out minimized.
    let d = term_dfa(&terminal(url, &["[^x]*"])).unwrap();
    let raw = unminimized_dfa(&terminal(url, &[]), url, MatchKind::LeftmostFirst).unwrap();
    assert!(4 * d.complete.len() < raw.complete.len());
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

/// Bounded repetitions built by layering accept exactly what regex-automata's DFA of
/// the same pattern accepts, prefix by prefix, on every word up to five bytes over the
/// patterns' bytes and three others (and on longer words in and just past each
/// language); shapes layering cannot build exactly are left to regex-automata.
#[test]
fn layered_repetitions_agree_with_regex_automata() {
    // A JSON string of at most three characters, as the JSON Schema front end spells
    // it, and smaller cases: no prefix, unbounded, multi-byte units, a long suffix.
    let json_char = r#"(?:[ !\#-\[\]-\x{10FFFF}]|\\["\\/bfnrt]|\\u[0-9A-Fa-f]{4})"#;
    let layered = [
        format!(r#""{json_char}{{0,3}}""#),
        format!(r#""{json_char}{{2,}}""#),
        "a(?:bc|d){2,4}e".to_string(),
        "(?:[a-c]|xy){1,}z".to_string(),
        "(?:ab){0,2}c".to_string(),
        "x(?:é|a){0,2}yz".to_string(),
        "(?:a){3}b".to_string(),
    ];
    let inexact = [
        "x(?:a|ab){0,3}y", // not prefix-free
        "(?:a){0,3}a",     // the suffix starts a unit
        "x(?:a){0,3}?y",   // lazy
        "x(?:a*){0,3}y",   // the empty word is a unit
    ];
    for re in layered.iter().map(String::as_str).chain(inexact) {
        let t = terminal(re, &[]);
        let hir = check_regex(&t, re, true).unwrap();
        let direct = repeat_dfa(&t, &hir);
        assert_eq!(direct.is_some(), !inexact.contains(&re), "{re}: layered?");
        let Some(direct) = direct else { continue };
        let general = automaton_dfa(&t, re).unwrap();
        let mut alphabet: Vec<u8> = re
            .bytes()
            .filter(|b| !b"(?:){},|*+[]".contains(b))
            .collect();
        alphabet.extend([0x01, b'0', b'u']);
        alphabet.sort();
        alphabet.dedup();
        let mut words: Vec<Vec<u8>> = vec![Vec::new()];
        let mut last: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..5 {
            last = last
                .iter()
                .flat_map(|w| {
                    alphabet.iter().map(move |&b| {
                        let mut v = w.clone();
                        v.push(b);
                        v
                    })
                })
                .collect();
            words.extend(last.iter().cloned());
        }
        // Longer words in the language and one past it.
        for w in [
            &br#""\u00aF\"x""#[..],
            br#""\u00aF\"xy""#,
            "\"\\u00aF\u{e9}\\n\"".as_bytes(),
            b"abcdbcde",
            b"abcdbcdbcde",
            b"xyxyabcz",
            b"ababc",
            b"abababc",
            "xéaéyz".as_bytes(),
            b"aaab",
            b"aaaab",
        ] {
            words.push(w.to_vec());
        }
        let mut accepted = 0;
        for w in &words {
            let got = prefixes(&direct, w);
            assert_eq!(got, prefixes(&general, w), "{re} on {w:?}");
            accepted += usize::from(got.last().is_some_and(|p| p.1));
        }
        assert!(accepted > 0, "{re}: some word is accepted");
    }
}

/// Patterns shared between terminals are built once and give each terminal the DFA
/// its own build would, errors included: a shared pattern that is another terminal's
/// `also` is still no empty terminal's main pattern.
#[test]
fn shared_patterns_build_as_each_terminal_would() {
    let ts = [
        terminal("[a-z]+", &["[a-c]{0,5}"]),
        terminal_except("[a-c]{0,5}", &["[a-z]+"], &["ab"]),
        terminal("[b-d]+", &["[a-c]{0,5}"]),
        terminal("[a-c]{0,5}", &[]),
        terminal("[a-c]{0,5}x", &[]),
    ];
    let shared = shared_patterns(&ts);
    let mut keys: Vec<&str> = shared.keys().copied().collect();
    keys.sort_unstable();
    assert_eq!(keys, ["[a-c]{0,5}", "[a-z]+"]);
    for t in &ts {
        match (term_dfa_with(t, &shared), term_dfa(t)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(
                    (a.classes, a.stride, &a.trans, &a.complete, a.start),
                    (b.classes, b.stride, &b.trans, &b.complete, b.start),
                    "{}",
                    t.regex
                );
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("{}: shared {:?}, alone {:?}", t.regex, a.is_ok(), b.is_ok()),
        }
    }
    // The empty-lexeme terminal is refused although its pattern built for the others.
    assert!(term_dfa_with(&ts[3], &shared).is_err());
    assert!(shared["[a-c]{0,5}"].get().is_some_and(|d| d.is_some()));
}

/// A difference accepts exactly the words the main pattern accepts and no `except`
/// pattern does, and lives on where an excepted prefix can still grow out of it.
#[test]
fn difference_is_exact() {
    let d = term_dfa(&terminal_except("[a-c]{1,4}", &[], &["a.*", "bc", "c+"])).unwrap();
    let full = |re: &str| regex_automata::meta::Regex::new(&format!("^(?:{re})$")).unwrap();
    let (main, e1, e2, e3) = (full("[a-c]{1,4}"), full("a.*"), full("bc"), full("c+"));
    let keep = |w: &str| main.is_match(w) && !e1.is_match(w) && !e2.is_match(w) && !e3.is_match(w);
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

/// A divisibility condition keeps exactly the integers (canonical JSON spellings,
/// either sign) whose value is, or is not, a multiple; other spellings die.
#[test]
fn divisibility_is_exact() {
    use crate::compile::grammar::ir::Divisibility;
    let full = regex_automata::meta::Regex::new("^-?(?:0|[1-9][0-9]*)$").unwrap();
    let mut words = vec![String::new()];
    for len in 0..5 {
        let longer: Vec<String> = words
            .iter()
            .filter(|w| w.len() == len)
            .flat_map(|w| {
                ["0", "1", "3", "7", "-", "."]
                    .iter()
                    .map(move |c| format!("{w}{c}"))
            })
            .collect();
        words.extend(longer);
    }
    for divisor in [1u32, 3, 7, 11] {
        for multiple in [true, false] {
            let mut t = terminal("-?(0|[1-9][0-9]*)(\\.[0-9]+)?", &[]);
            t.divisibility = vec![Divisibility { divisor, multiple }];
            let d = term_dfa(&t).unwrap();
            for w in &words {
                let want = full.is_match(w)
                    && (w.trim_start_matches('-').parse::<u64>().unwrap() % divisor as u64 == 0)
                        == multiple;
                assert_eq!(
                    run(&d, w.as_bytes()) == Some(true),
                    want,
                    "{divisor} {multiple} {w:?}"
                );
            }
            // A fraction never completes.
            assert_eq!(run(&d, b"3."), None);
        }
    }
    // Two conditions: multiples of 3 that are not multiples of 7.
    let mut t = terminal("-?(0|[1-9][0-9]*)", &[]);
    t.divisibility = vec![
        Divisibility {
            divisor: 3,
            multiple: true,
        },
        Divisibility {
            divisor: 7,
            multiple: false,
        },
    ];
    let d = term_dfa(&t).unwrap();
    for n in 0..200u32 {
        let want = n % 3 == 0 && n % 7 != 0;
        assert_eq!(run(&d, n.to_string().as_bytes()) == Some(true), want, "{n}");
    }
    // A divisor of zero or past the limit is an error, not a panic.
    t.divisibility = vec![Divisibility {
        divisor: 0,
        multiple: true,
    }];
    assert!(term_dfa(&t).is_err());
}

fn named(name: &str, regex: &str) -> Terminal {
    Terminal {
        name: name.into(),
        ..terminal(regex, &[])
    }
}

/// A pattern built once is served to later terminals as the same DFA a fresh build
/// gives; a failing pattern is never kept, so each terminal's error names it.
#[test]
fn pattern_cache_serves_what_a_fresh_build_gives() {
    let cache = pattern_cache::PatternCache::new(1 << 20);
    let string = r#""([^"\\\x00-\x1f]|\\["\\/bfnrt])*""#;
    let a = cache.dfa(&named("A", string), string, true).unwrap();
    let b = cache.dfa(&named("B", string), string, true).unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&a, &b),
        "the second build was not served"
    );
    let fresh = regex_dfa(&named("C", string), string, true).unwrap();
    assert_eq!(
        (a.classes, a.stride, &a.trans, &a.complete, a.start),
        (
            fresh.classes,
            fresh.stride,
            &fresh.trans,
            &fresh.complete,
            fresh.start
        )
    );
    for name in ["X", "Y"] {
        match cache.dfa(&named(name, "a("), "a(", true) {
            Err(GrammarError::BadRegex { terminal, .. }) => assert_eq!(terminal, name),
            other => panic!("{name}: {:?}", other.map(|_| ())),
        }
    }
}

/// A pattern kept as an `also` (where the empty word is allowed) is still refused as a
/// terminal's main pattern when it matches the empty word.
#[test]
fn pattern_cache_keeps_the_main_pattern_check() {
    let cache = pattern_cache::PatternCache::new(1 << 20);
    assert!(cache.dfa(&named("A", "a*"), "a*", false).is_ok());
    match cache.dfa(&named("B", "a*"), "a*", true) {
        Err(GrammarError::EmptyTerminal { terminal, .. }) => assert_eq!(terminal, "B"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// The cache never holds more than its bound: past it, it is emptied and fills again.
#[test]
fn pattern_cache_stays_within_its_bound() {
    let limit = 64 << 10;
    let cache = pattern_cache::PatternCache::new(limit);
    let mut most = 0;
    for n in 1..200 {
        let re = format!("[a-z]{{{n}}}x");
        let d = cache.dfa(&named("A", &re), &re, true).unwrap();
        assert_eq!(d.complete.iter().filter(|&&c| c).count(), 1, "{re}");
        most = most.max(cache.bytes());
        assert!(cache.bytes() <= limit, "{} bytes held", cache.bytes());
    }
    assert!(
        most > limit / 2,
        "the bound was never approached ({most} bytes)"
    );
}

/// [`same_language`] for DFAs whose byte classes differ: alive and complete alike after
/// each prefix of every byte string.
fn same_language_by_bytes(a: &TermDfa, b: &TermDfa) -> bool {
    let mut seen = HashSet::new();
    let mut work = vec![(a.start, b.start)];
    while let Some((x, y)) = work.pop() {
        if !seen.insert((x, y)) {
            continue;
        }
        if (x == NONE) != (y == NONE) {
            return false;
        }
        if x == NONE {
            continue;
        }
        if a.complete[x as usize] != b.complete[y as usize] {
            return false;
        }
        for byte in 0..=255usize {
            work.push((
                a.trans[x as usize * a.stride + a.classes[byte] as usize],
                b.trans[y as usize * b.stride + b.classes[byte] as usize],
            ));
        }
    }
    true
}

/// A random finite pattern over a few overlapping pieces (so that words are prefixes of
/// one another and leftmost-first drops some), nested to `depth`.
fn random_finite(rng: &mut crate::rng::SplitMix64, depth: u32) -> String {
    const PIECES: [&str; 9] = ["a", "ab", "b", "", "\\/", "/", "é", "[ab]", "(?i)a"];
    if depth == 0 || rng.chance(0.3) {
        return PIECES[rng.below(PIECES.len())].to_string();
    }
    let n = 1 + rng.below(3);
    let parts: Vec<String> = (0..n).map(|_| random_finite(rng, depth - 1)).collect();
    match rng.below(4) {
        0 => format!("(?:{})", parts.join("|")),
        1 => format!("(?:{})", parts.concat()),
        2 => format!(
            "(?:{}){{{},{}}}",
            parts.join("|"),
            rng.below(2),
            1 + rng.below(3)
        ),
        _ => format!(
            "(?:{}){{{},{}}}?",
            parts.concat(),
            rng.below(2),
            1 + rng.below(3)
        ),
    }
}

/// Finite patterns built from their words accept what regex-automata's leftmost-first
/// DFA of the same pattern accepts, prefix by prefix: prefixes of one another in either
/// priority order, greedy and lazy bounded repetitions, escaped `/` as JSON Schema
/// enum values spell it, classes, and random nestings of those.
#[test]
fn finite_patterns_agree_with_regex_automata() {
    let mut patterns: Vec<String> = [
        "a|ab",
        "ab|a",
        "(?:a|ab)(?:c|bc)",
        "(?:ab|a)(?:bc|c)",
        "(?:|x)y",
        "x?",
        "x??y?",
        "(?:a|b){0,3}",
        "(?:a|ab){1,3}?",
        "(?:a|ab){2}",
        "(?i)ab|AB",
        "[ab]c|a",
        "(?:\"America)(?:/|(?:\\\\/))(?:North_Dakota)(?:/|(?:\\\\/))(?:Center\")",
        "\"(?:é|e)(?:/|\\\\/)?\"",
        "a(?:b|)(?:|c)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rng = crate::rng::SplitMix64::new(89);
    patterns.extend((0..400).map(|_| random_finite(&mut rng, 3)));
    let mut built = 0;
    for re in &patterns {
        let t = terminal(re, &[]);
        let Ok(hir) = check_regex(&t, re, false) else {
            panic!("{re}: does not parse");
        };
        let Some(words) = finite_words(&hir) else {
            continue;
        };
        built += 1;
        let ours = finite_dfa(&words);
        let theirs = automaton_dfa(&t, re).unwrap();
        assert!(
            same_language_by_bytes(&ours, &theirs),
            "{re}: words {words:?}"
        );
    }
    assert!(built > 300, "only {built} patterns were finite");
}

//! Pass (before the lexer build): look-around in terminal regexes, proved vacuous under
//! the lexer's semantics and removed.
//!
//! The lexer's automata have no look-around, yet grammars written for Python `re`
//! (SynCode's `python.lark`) use it where maximal munch already decides the same thing.
//! Two forms are removed when a proof on DFAs shows that the assertion never changes how
//! a text lexes:
//! - `(?<!C)`, C matching single characters of ASCII: every byte that can come right
//!   before the assertion inside the lexeme is outside C, and the assertion never opens a
//!   lexeme (there it would read text before it).
//! - `(?!X)`: *in the lexeme*, no lexeme goes on from the assertion with a match of X;
//!   *past the lexeme*, wherever a lexeme can end while the text after the assertion is
//!   a proper prefix of a match of X, every next byte `c` that keeps X alive makes
//!   lexeme·`c` a prefix of some terminal's match, so 1-lookahead maximal munch
//!   (DESIGN.md §1) never ends the lexeme there, with the assertion or without.
//!
//! Everything else (positive look-around, an assertion a proof fails on) is refused by
//! name. A proof runs on the terminal's DFA with the assertion's place marked by the byte
//! [`MARK`], which no UTF-8 pattern matches, and the terminal's other assertions dropped:
//! that DFA's lexemes include the terminal's, so a proof on it holds for the terminal.

use std::collections::VecDeque;

use hashbrown::HashSet;

use super::*;

/// The byte that marks an assertion's place in a proof: never part of UTF-8 text.
const MARK: u8 = 0xFF;
/// [`MARK`] as a pattern.
const MARK_PATTERN: &str = r"(?-u:\xFF)";
/// An assertion dropped from a pattern (an empty group, so a quantifier after it is kept
/// from binding to the atom before).
const DROPPED: &str = "(?:)";
/// Most product states one look-ahead proof visits; past it the assertion is refused.
const MAX_PROOF_STATES: usize = 100_000;

/// One negative look-around group of a regex.
#[derive(Debug)]
struct Look {
    /// Byte range of the whole group, `(?!…)` or `(?<!…)`, in the regex.
    range: std::ops::Range<usize>,
    /// `(?<!…)` rather than `(?!…)`.
    behind: bool,
    /// The asserted pattern, wrapped in the flag groups in force where it stands.
    body: String,
}

/// Removes every look-around of `g`'s terminals that a proof shows vacuous; refuses the
/// grammar, naming the terminal and the assertion, at the first one it cannot.
pub fn remove_vacuous_look_around(g: &mut Grammar) -> Result<(), GrammarError> {
    let mut found: Vec<(usize, Vec<Look>)> = Vec::new();
    for (i, t) in g.terminals.iter().enumerate() {
        if t.counted.is_some() || !t.regex.contains("(?") {
            continue;
        }
        let looks = find_looks(&t.regex).map_err(|(construct, why)| refuse(t, &construct, why))?;
        if !looks.is_empty() {
            found.push((i, looks));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let mut dropped = g.terminals.clone();
    for (i, looks) in &found {
        dropped[*i].regex = without(&g.terminals[*i].regex, looks, None);
        check_regex(&dropped[*i], &dropped[*i].regex, true)?;
    }
    // The lexer the look-ahead proofs reason about: every terminal, assertions dropped.
    let mut lexer: Option<Vec<TermDfa>> = None;
    for (i, looks) in &found {
        let t = &g.terminals[*i];
        for (k, look) in looks.iter().enumerate() {
            let text = &t.regex[look.range.clone()];
            let marked = dense_dfa(
                t,
                &without(&t.regex, looks, Some(k)),
                MatchKind::LeftmostFirst,
                false,
            )?;
            let proof = if look.behind {
                behind_is_vacuous(t, look, &marked)
            } else {
                if lexer.is_none() {
                    lexer = Some(
                        dropped
                            .iter()
                            .filter(|d| d.counted.is_none())
                            .map(term_dfa)
                            .collect::<Result<_, _>>()?,
                    );
                }
                // Set just above.
                ahead_is_vacuous(t, look, &marked, lexer.as_deref().unwrap_or_default())
            };
            proof.map_err(|why| refuse(t, text, why))?;
        }
    }
    for (i, _) in found {
        g.terminals[i].regex = std::mem::take(&mut dropped[i].regex);
    }
    Ok(())
}

fn refuse(t: &Terminal, construct: &str, why: String) -> GrammarError {
    GrammarError::Unsupported {
        span: t.span,
        construct: format!("look-around `{construct}`"),
        reason: format!(
            "terminal `{}`: {why}; the lexer has no look-around and drops one only where \
             maximal munch provably decides the same, so rewrite it without",
            t.name
        ),
    }
}

/// `regex` with its assertions `looks` dropped, but for the `marked`-th, which becomes
/// [`MARK`].
fn without(regex: &str, looks: &[Look], marked: Option<usize>) -> String {
    let mut out = String::with_capacity(regex.len());
    let mut at = 0;
    for (k, look) in looks.iter().enumerate() {
        out.push_str(&regex[at..look.range.start]);
        out.push_str(if marked == Some(k) {
            MARK_PATTERN
        } else {
            DROPPED
        });
        at = look.range.end;
    }
    out.push_str(&regex[at..]);
    out
}

/// A group being scanned: how it opens, as far as flags go, and the inline flag settings
/// met in it so far.
struct Frame {
    opener: &'static str,
    flags_opener: Option<String>,
    settings: Vec<String>,
}

/// The negative look-around groups of `regex`, in order; `Err((construct, why))` for
/// look-around this pass cannot reason about.
fn find_looks(regex: &str) -> Result<Vec<Look>, (String, String)> {
    let b = regex.as_bytes();
    let mut looks = Vec::new();
    let mut frames = vec![Frame {
        opener: "",
        flags_opener: None,
        settings: Vec::new(),
    }];
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i = skip_escape(regex, i),
            b'[' => i = skip_class(regex, i),
            b')' => {
                if frames.len() > 1 {
                    frames.pop();
                }
                i += 1;
            }
            b'(' => {
                let rest = &regex[i..];
                let lookahead = rest.starts_with("(?!");
                let lookbehind = rest.starts_with("(?<!");
                if rest.starts_with("(?=") || rest.starts_with("(?<=") {
                    let end = group_end(regex, i);
                    return Err((
                        regex[i..end].to_string(),
                        "positive look-around is not supported".into(),
                    ));
                }
                if lookahead || lookbehind {
                    let end = group_end(regex, i);
                    let open = if lookbehind { 4 } else { 3 };
                    let inner = &regex[(i + open).min(end)..end.saturating_sub(1).max(i + open)];
                    if matches!(b.get(end), Some(b'*' | b'+' | b'?' | b'{')) {
                        return Err((regex[i..end].to_string(), "it is quantified".into()));
                    }
                    looks.push(Look {
                        range: i..end,
                        behind: lookbehind,
                        body: in_flags(&frames, inner),
                    });
                    i = end;
                    continue;
                }
                if let Some(flags) = rest.strip_prefix("(?") {
                    if !(flags.starts_with("P<") || flags.starts_with('<')) {
                        // `(?flags)` sets flags for the rest of the group; `(?flags:` opens one.
                        let len = flags.find([':', ')']).unwrap_or(flags.len());
                        let letters = &flags[..len];
                        if letters.contains('x') {
                            return Err((
                                format!("(?{letters}"),
                                "verbose mode is not read by this pass".into(),
                            ));
                        }
                        if flags[len..].starts_with(')') {
                            if let Some(f) = frames.last_mut() {
                                f.settings.push(format!("(?{letters})"));
                            }
                            i += 2 + len + 1;
                            continue;
                        }
                        frames.push(Frame {
                            opener: "",
                            flags_opener: Some(format!("(?{letters}:")),
                            settings: Vec::new(),
                        });
                        i += 2 + len + 1;
                        continue;
                    }
                }
                frames.push(Frame {
                    opener: "(?:",
                    flags_opener: None,
                    settings: Vec::new(),
                });
                i += 1;
            }
            _ => i += 1,
        }
    }
    Ok(looks)
}

/// `body` inside the flag groups and settings of `frames`.
fn in_flags(frames: &[Frame], body: &str) -> String {
    let mut s = String::new();
    let mut closes = 0;
    for f in frames {
        match &f.flags_opener {
            Some(o) => {
                s.push_str(o);
                closes += 1;
            }
            None if !f.opener.is_empty() => {
                s.push_str(f.opener);
                closes += 1;
            }
            None => {}
        }
        for setting in &f.settings {
            s.push_str(setting);
        }
    }
    s.push_str("(?:");
    s.push_str(body);
    s.push(')');
    s.extend(std::iter::repeat_n(')', closes));
    s
}

/// The index past the escape at `i` (`\` and one character).
fn skip_escape(regex: &str, i: usize) -> usize {
    match regex[i + 1..].chars().next() {
        Some(c) => i + 1 + c.len_utf8(),
        None => regex.len(),
    }
}

/// The index past the character class opening at `i` (classes nest in this syntax; a
/// `]` first, or after `^`, is a literal).
fn skip_class(regex: &str, i: usize) -> usize {
    let b = regex.as_bytes();
    let mut j = i + 1;
    if b.get(j) == Some(&b'^') {
        j += 1;
    }
    if b.get(j) == Some(&b']') {
        j += 1;
    }
    while j < b.len() {
        match b[j] {
            b'\\' => j = skip_escape(regex, j),
            b'[' => j = skip_class(regex, j),
            b']' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// The index past the group opening at `i`.
fn group_end(regex: &str, i: usize) -> usize {
    let b = regex.as_bytes();
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'\\' => j = skip_escape(regex, j),
            b'[' => j = skip_class(regex, j),
            b'(' => {
                depth += 1;
                j += 1;
            }
            b')' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// `dfa`'s state after `s` reads `byte` (`NONE` from `NONE`).
fn step(dfa: &TermDfa, s: u32, byte: u8) -> u32 {
    if s == NONE {
        return NONE;
    }
    dfa.trans[s as usize * dfa.stride + dfa.classes[byte as usize] as usize]
}

/// `(?<!C)`: see the module doc.
fn behind_is_vacuous(t: &Terminal, look: &Look, marked: &TermDfa) -> Result<(), String> {
    let hir = check_regex(t, &look.body, false).map_err(|e| e.to_string())?;
    let props = hir.properties();
    if props.minimum_len() != Some(1) || props.maximum_len() != Some(1) {
        return Err("it asserts more than one ASCII character".into());
    }
    let class = automaton_dfa_as(t, &look.body, MatchKind::All).map_err(|e| e.to_string())?;
    let in_class = |b: u8| {
        let s = step(&class, class.start, b);
        s != NONE && class.complete[s as usize]
    };
    let n = marked.complete.len() as u32;
    for s in 0..n {
        if step(marked, s, MARK) == NONE {
            continue;
        }
        if s == marked.start {
            return Err("it can open the lexeme, where it reads the text before".into());
        }
        for p in 0..n {
            for b in 0..=255u8 {
                if b != MARK && step(marked, p, b) == s && in_class(b) {
                    return Err(format!(
                        "{:?} can come right before it in a lexeme",
                        char::from(b)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Before the mark, in the look-ahead proof's product.
const BEFORE: u32 = NONE - 1;

/// `(?!X)`: see the module doc. A breadth-first search over the lexemes of `marked`,
/// keeping beside each the state of the asserted pattern after the mark (or [`BEFORE`])
/// and every terminal of `lexer` the lexeme can still become, with its state.
fn ahead_is_vacuous(
    t: &Terminal,
    look: &Look,
    marked: &TermDfa,
    lexer: &[TermDfa],
) -> Result<(), String> {
    let x = automaton_dfa_as(t, &look.body, MatchKind::All).map_err(|e| e.to_string())?;
    if x.start == NONE || marked.start == NONE {
        return Ok(());
    }
    if x.complete[x.start as usize] {
        return Err("its pattern matches the empty string".into());
    }
    let step_all = |lex: &[(u32, u32)], b: u8| -> Vec<(u32, u32)> {
        lex.iter()
            .filter_map(|&(i, s)| {
                let n = step(&lexer[i as usize], s, b);
                (n != NONE).then_some((i, n))
            })
            .collect()
    };
    type Node = (u32, u32, Vec<(u32, u32)>);
    let start_lex: Vec<(u32, u32)> = lexer
        .iter()
        .enumerate()
        .filter(|(_, d)| d.start != NONE)
        .map(|(i, d)| (i as u32, d.start))
        .collect();
    let mut seen: HashSet<Node> = HashSet::new();
    let mut queue: VecDeque<Node> = VecDeque::new();
    let mut push = |node: Node, queue: &mut VecDeque<Node>| -> Result<(), String> {
        if seen.len() >= MAX_PROOF_STATES {
            return Err(format!(
                "its proof would visit more than {MAX_PROOF_STATES} states"
            ));
        }
        if seen.insert(node.clone()) {
            queue.push_back(node);
        }
        Ok(())
    };
    push((marked.start, BEFORE, start_lex), &mut queue)?;
    while let Some((m, xs, lex)) = queue.pop_front() {
        if xs == BEFORE {
            for b in 0..=255u8 {
                let m2 = step(marked, m, b);
                if m2 == NONE {
                    continue;
                }
                if b == MARK {
                    // The assertion stands here: watch the text after it; and go on past
                    // it, to later places it stands at.
                    push((m2, x.start, lex.clone()), &mut queue)?;
                    push((m2, BEFORE, lex.clone()), &mut queue)?;
                } else {
                    push((m2, BEFORE, step_all(&lex, b)), &mut queue)?;
                }
            }
            continue;
        }
        // The text after the assertion is a proper prefix of a match of X so far.
        if marked.complete[m as usize] {
            for c in 0..=255u8 {
                if c != MARK && step(&x, xs, c) != NONE && step_all(&lex, c).is_empty() {
                    return Err(format!(
                        "a lexeme can end where {c:?} would go on with the asserted text, \
                         and no terminal grows with it"
                    ));
                }
            }
        }
        for b in 0..=255u8 {
            let m2 = step(marked, m, b);
            if m2 == NONE {
                continue;
            }
            if b == MARK {
                // Another place of the assertion: it reads no text.
                push((m2, xs, lex.clone()), &mut queue)?;
                continue;
            }
            let x2 = step(&x, xs, b);
            if x2 == NONE {
                continue;
            }
            if x.complete[x2 as usize] {
                return Err(
                    "a lexeme can go on from it with a match of the asserted pattern".into(),
                );
            }
            push((m2, x2, step_all(&lex, b)), &mut queue)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::compile::error::GrammarError;
    use crate::compile::frontend::lark;

    /// SynCode's Python string terminals, as its `python.lark` writes them.
    const STRINGS: &str = r#"
STRING : /[ubf]?r?("(?!"").*?"|'(?!'').*?')/is
LONG_STRING: /[ubf]?r?("""(?<!\\).*?"""|'''(?<!\\).*?''')/is
%ignore " "
"#;

    fn refusal(src: &str) -> String {
        match lark::compile(src) {
            Err(e @ GrammarError::Unsupported { .. }) => e.to_string(),
            other => panic!("expected a look-around refusal, got {other:?}"),
        }
    }

    #[test]
    fn python_string_assertions_are_proved_vacuous_and_dropped() {
        let g = lark::compile(&format!("start: (STRING | LONG_STRING)+\n{STRINGS}")).unwrap();
        for t in &g.terminals {
            assert!(
                !t.regex.contains("(?!") && !t.regex.contains("(?<!"),
                "{}",
                t.regex
            );
        }
        assert_eq!(
            g.terminals
                .iter()
                .filter(|t| t.name.contains("STRING"))
                .count(),
            2
        );
    }

    /// Without LONG_STRING, `""` followed by `"` would end a STRING lexeme that the
    /// assertion forbids: nothing else grows with the third quote.
    #[test]
    fn a_look_ahead_that_decides_past_the_lexeme_is_refused() {
        let msg = refusal("start: STRING+\nSTRING : /\"(?!\"\").*?\"/s\n");
        assert!(
            msg.contains("terminal `STRING`") && msg.contains(r#"(?!"")"#),
            "{msg}"
        );
        assert!(msg.contains("no terminal grows"), "{msg}");
    }

    /// Lark's own grammar excludes the empty regex `//` this way: the assertion decides
    /// inside the lexeme.
    #[test]
    fn a_look_ahead_that_decides_in_the_lexeme_is_refused() {
        let msg = refusal("start: R\nR: /\\/(?!\\/)(\\\\\\/|[^\\/])*?\\/[a-z]*/\n");
        assert!(msg.contains("go on from it"), "{msg}");
        let msg = refusal("start: A\nA: /a(?!bc)\\w+/\n");
        assert!(msg.contains("terminal `A`"), "{msg}");
    }

    #[test]
    fn look_behind_needs_a_known_byte_before_it() {
        assert!(lark::compile("start: A\nA: /\"(?<!\\\\)x/\n").is_ok());
        let msg = refusal("start: A\nA: /.(?<!\\\\)x/\n");
        assert!(msg.contains("'\\\\' can come right before it"), "{msg}");
        let msg = refusal("start: A B\nA: /a/\nB: /(?<!a)b/\n");
        assert!(msg.contains("open the lexeme"), "{msg}");
        let msg = refusal("start: A\nA: /ab(?<!ab)/\n");
        assert!(msg.contains("more than one"), "{msg}");
    }

    #[test]
    fn positive_and_quantified_look_around_are_refused() {
        assert!(refusal("start: A\nA: /a(?=b)b/\n").contains("positive"));
        assert!(refusal("start: A\nA: /a(?!b)?c/\n").contains("quantified"));
    }

    /// The flags in force at the assertion apply to its pattern: inside `(?i:…)`,
    /// `(?!B)` also forbids the `b` that `[a-z]` reads after the group.
    #[test]
    fn the_assertion_reads_its_flags() {
        assert!(lark::compile("start: A\nA: /a(?!B)[a-z]/\n").is_ok());
        let msg = refusal("start: A\nA: /(?i:a(?!B))[a-z]/\n");
        assert!(msg.contains("go on from it"), "{msg}");
    }
}

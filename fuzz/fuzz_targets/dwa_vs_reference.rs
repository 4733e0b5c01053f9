//! Differential: a random small grammar and a random small vocabulary, both drawn from
//! the input; along a random walk of allowed tokens, the mask automaton's mask equals the
//! reference oracle's at every step (fully determinized, and with no determinization
//! budget so every suspended effect is its own state; with string states split wherever
//! the lexer allows, or only where that pays). Quoted-string terminals of equal priority
//! make the split apply. The automaton also goes through its artifact bytes and back: the
//! loaded grammar loads and masks alike at every step. A third of the grammars have a
//! droppable terminal `D` (`;`), taken where some parse can take it and skipped elsewhere,
//! so tokens carry several droppable lexemes. A third of the others are lexed by longest
//! match, with a terminal `P` (`a-…-b`) whose lexemes die incomplete and back up, so token
//! walks fork. Half of the grammars name the special token `<|s|>` in rules; the
//! vocabulary always has it, and a normal token holding the special mark `0xFE`. A third
//! of the grammars use JSON Schemas as rule items (`%json`: strings of a few languages,
//! quoted like `Q` and `R`). One grammar in four instead runs behind Lark's indenter (blocks, brackets, a random tab
//! width, sometimes longest match) over a vocabulary of newlines, spaces and tabs beside
//! words; of the rest, one in four is a structural tag (free text with calls after
//! triggers, lexed in lexer modes) whose bodies are regexes, JSON Schemas and small Lark
//! grammars over the same alphabet. Half of the plain grammars (no droppable terminal, no
//! longest match) are lexed contextually, by lexer modes from their follow sets, and so
//! are the other plain ones that use `%json` (`Lexing::Auto`).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use stackmask::compile::{Compiler, DwaLimits, Lexing};
use stackmask::compile::SplitMode;
use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat};
use stackmask::ids::TokenId;
use stackmask::reference::Reference;
use stackmask::runtime::{CompiledGrammar, Matcher};
use stackmask::vocab::{TokenEntry, TokenKind, Vocab};

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn below(&mut self, n: u8) -> u8 {
        self.next() % n
    }
}

const ALPHA: &[u8] = b"ab-( )\";";

fn word(b: &mut Bytes, max: u8) -> Vec<u8> {
    let len = 1 + b.below(max);
    (0..len).map(|_| ALPHA[b.below(ALPHA.len() as u8) as usize]).collect()
}

/// JSON Schemas over the vocabulary's alphabet, as `%json` rule items.
const JSON_ITEMS: &[&str] = &[
    r#"%json {"type": "string", "maxLength": 2}"#,
    r#"%json {"enum": ["a", "b-", "(a)"]}"#,
    r#"%json {"type": "string", "pattern": "^a[b ]*$"}"#,
];

/// A grammar, whether its `D` is droppable, and whether it is lexed by longest match.
fn grammar(b: &mut Bytes) -> (String, bool, bool) {
    let drop = b.below(3) == 0;
    let longest = !drop && b.below(3) == 0;
    let special = b.below(2) == 0;
    let json = b.below(3) == 0;
    let nts = 1 + b.below(3);
    let mut out = String::from("start: n0\n");
    for n in 0..nts {
        let alts = 1 + b.below(3);
        let mut alt_texts = Vec::new();
        for _ in 0..alts {
            let syms = b.below(4);
            let mut s = Vec::new();
            for _ in 0..syms {
                match b.below(if drop { 6 } else { 5 }) {
                    0 => s.push(format!("n{}", b.below(nts))),
                    5 => s.push("D".to_string()),
                    1 if longest && b.below(2) == 0 => s.push("P".to_string()),
                    1 if special && b.below(2) == 0 => s.push("<|s|>".to_string()),
                    1 if json && b.below(2) == 0 => {
                        s.push(JSON_ITEMS[b.below(JSON_ITEMS.len() as u8) as usize].to_string())
                    }
                    1 => s.push("W".to_string()),
                    2 => s.push(["Q", "R"][b.below(2) as usize].to_string()),
                    _ => {
                        let w: Vec<u8> = word(b, 2).into_iter().filter(|&c| c != b' ').collect();
                        if !w.is_empty() {
                            s.push(format!("{:?}", String::from_utf8(w).unwrap()));
                        }
                    }
                }
            }
            alt_texts.push(if s.is_empty() { "\"a\"".to_string() } else { s.join(" ") });
        }
        out.push_str(&format!("n{n}: {}\n", alt_texts.join(" | ")));
    }
    out.push_str("W: /[ab]+/\n");
    // Two overlapping quoted strings: inside a string both are alive (a split state).
    out.push_str("Q: /\"[ab -]*\"/\n");
    out.push_str("R: /\"a[ab]*\"/\n");
    if drop {
        out.push_str("D: /;/\n");
    }
    if longest {
        out.push_str("P: /a-+b/\n");
    }
    if b.below(2) == 0 {
        out.push_str("%ignore \" \"\n");
    }
    (out, drop, longest)
}

/// A structural tag over the alphabet: one or two triggers, one or two structures each
/// (a begin that goes on after its trigger, or is the trigger), bodies of every kind, and
/// ends that may or may not collide with a body's terminals (then the compile refuses).
fn tag_spec(b: &mut Bytes) -> String {
    let triggers: &[&str] = if b.below(2) == 0 { &["(a"] } else { &["(a", "-"] };
    let bodies = [
        r#""regex": "[ab]+""#,
        r#""regex": "a( b)*""#,
        r#""schema": {"type": "string", "maxLength": 2}"#,
        r#""schema": {"enum": ["a", "b-"]}"#,
        r#""grammar": "start: W (\";\" W)*\nW: /[ab]+/\n""#,
    ];
    let ends = [")", ";", "b)", "\"", "--"];
    let mut structures = Vec::new();
    for t in triggers {
        let n = 1 + b.below(2);
        for i in 0..n {
            let rest = if n == 1 && b.below(2) == 0 { "" } else { ["b", " ", "ab"][i as usize] };
            structures.push(format!(
                r#"{{"begin": "{t}{rest}", {}, "end": {:?}}}"#,
                bodies[b.below(bodies.len() as u8) as usize],
                ends[b.below(ends.len() as u8) as usize]
            ));
        }
    }
    format!(
        r#"{{"type": "structural_tag", "structures": [{}], "triggers": {:?}, "at_least_one": {}}}"#,
        structures.join(", "),
        triggers,
        b.below(2) == 0
    )
}

/// Characters of the indenter grammars' tokens.
const INDENT_ALPHA: &[u8] = b"ab:=( )\n\t#";

/// A grammar behind Lark's indenter: statements in blocks, brackets across lines,
/// comments in newlines, a few random simple statements.
fn indent_grammar(b: &mut Bytes) -> String {
    let mut simple = vec!["W \"=\" e".to_string()];
    for _ in 0..b.below(3) {
        let w: Vec<u8> = word(b, 3)
            .into_iter()
            .filter(|c| b"ab:=".contains(c))
            .collect();
        if !w.is_empty() {
            simple.push(format!("{:?}", String::from_utf8(w).unwrap()));
        }
    }
    let comment = if b.below(2) == 0 { "|/#[^\\n]*/" } else { "" };
    format!(
        "start: (_NL | stmt)*\n\
         stmt: simple _NL | W \":\" suite\n\
         suite: simple _NL | _NL _INDENT stmt+ _DEDENT\n\
         simple: {}\n\
         e: W | \"(\" e \")\" | \"(\" e W \")\"\n\
         W: /[ab]+/\n\
         _NL: (/\\n[ \\t]*/{comment})+\n\
         %ignore \" \"\n\
         %declare _INDENT _DEDENT\n",
        simple.join(" | ")
    )
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let indent = b.below(4) == 0;
    let tag = !indent && b.below(4) == 0;
    let (text, drop, longest) = if indent {
        (indent_grammar(&mut b), false, b.below(3) == 0)
    } else if tag {
        (tag_spec(&mut b), false, false)
    } else {
        grammar(&mut b)
    };
    let format = if tag {
        GrammarFormat::StructuralTag
    } else {
        GrammarFormat::Lark
    };
    let Ok(mut g) = compile_grammar(&text, format) else {
        return;
    };
    g.longest_match = longest;
    if drop && g.set_droppable(&["D".to_string()]).is_err() {
        return;
    }
    if indent {
        let tab = 1 + u32::from(b.below(8));
        g.set_tab_len(tab).expect("an indenter grammar");
    }
    // Half the plain grammars lexed contextually (lexer modes from their follow sets);
    // the rest as `auto` lexes them (contextually when they use `%json`).
    let lexing = if !indent && !tag && !drop && !longest && b.below(2) == 0 {
        Lexing::Contextual
    } else {
        Lexing::Auto
    };
    let Ok(g) = lexing.lay_on(g, format) else {
        return;
    };
    let Ok(tables) = build_glr_tables(&g) else {
        return;
    };
    let tables = Arc::new(tables);
    let ntok = 4 + b.below(20) as usize;
    let toks: Vec<Option<Vec<u8>>> = (0..ntok)
        .map(|_| {
            Some(if indent {
                let len = 1 + b.below(4);
                let alpha = INDENT_ALPHA;
                (0..len)
                    .map(|_| alpha[b.below(alpha.len() as u8) as usize])
                    .collect()
            } else {
                word(&mut b, 4)
            })
        })
        .collect();
    // Then the special token `<|s|>`, a normal token holding the special mark (never
    // allowed: only `<|s|>` reads as a lexeme of that byte), and EOS.
    let mut entries: Vec<TokenEntry> = toks
        .into_iter()
        .map(|t| TokenEntry {
            bytes: t.unwrap_or_default(),
            kind: TokenKind::Normal,
            name: None,
        })
        .collect();
    for (bytes, kind, name) in [
        (&b"<|s|>"[..], TokenKind::Special, Some("<|s|>")),
        (&b"\xfe"[..], TokenKind::Normal, None),
        (&b"<eos>"[..], TokenKind::Special, Some("<eos>")),
    ] {
        entries.push(TokenEntry {
            bytes: bytes.to_vec(),
            kind,
            name: name.map(str::to_string),
        });
    }
    // Every token but EOS, which the walk never takes.
    let ntok = entries.len() - 1;
    let Ok(vocab) = Vocab::from_token_entries("fuzz", entries, &[TokenId::new(ntok)]) else {
        return;
    };
    let budget = if b.below(2) == 0 { 0 } else { usize::MAX };
    let split = if b.below(2) == 0 {
        SplitMode::Always
    } else {
        SplitMode::Auto
    };
    let limits = DwaLimits {
        max_states: 20_000,
        determinize_budget: budget,
        split,
        ..DwaLimits::default()
    };
    let Ok(dwa) = Compiler::new(&vocab).with_limits(limits).automaton(&tables) else {
        return;
    };
    let reference = Reference::new(&g, &tables.lexer);
    let compiled = CompiledGrammar::new(tables, Arc::new(dwa), &vocab);
    let loaded = CompiledGrammar::from_bytes(&compiled.to_bytes())
        .unwrap_or_else(|e| panic!("grammar:\n{text}\nartifact refused: {e}"));
    let mut m = Matcher::from_compiled(&compiled);
    let mut back = Matcher::from_compiled(&loaded);
    let mut p = reference.empty();
    for _ in 0..12 {
        let want = reference.mask(&p, &vocab);
        let got = m.mask_set();
        assert_eq!(back.mask_set(), got, "grammar:\n{text}\nloaded artifact's mask");
        for (k, &w) in want.iter().enumerate() {
            assert_eq!(got.contains(k as u32), w, "grammar:\n{text}\nstep token {k}");
        }
        let allowed: Vec<usize> = (0..ntok).filter(|&k| want[k]).collect();
        if allowed.is_empty() {
            break;
        }
        let t = allowed[b.below(allowed.len().min(255) as u8) as usize];
        // The bytes the grammar reads: `<|s|>` as its lexeme.
        let bytes = vocab.mask_bytes(TokenId::new(t)).unwrap().to_vec();
        m.commit_bytes(&bytes).unwrap();
        back.commit_bytes(&bytes).unwrap();
        p = reference.commit(&p, &bytes);
    }
});

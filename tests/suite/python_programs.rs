//! SynCode's Python grammar on real programs, as SynCode runs it (longest-match lexing, a
//! tab counting 4): HumanEval's 164 prompts with their canonical solutions through the
//! commit path, and a few of them token by token against the reference.

use std::sync::Arc;

use stackmask::compile::{build_glr_tables, compile_grammar, GrammarFormat};
use stackmask::glr::GlrState;
use stackmask::reference::Reference;
use stackmask::vocab::segment::random_segmentation;
use stackmask::vocab::Vocab;

use super::common::resolve;

fn humaneval() -> Vec<String> {
    let path = resolve("shared:grammars/benchmarks/syncode_mxeval/HumanEval.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{}{}",
                v["prompt"].as_str().unwrap(),
                v["canonical_solution"].as_str().unwrap()
            )
        })
        .collect()
}

fn python(longest: bool) -> stackmask::compile::Grammar {
    let text = std::fs::read_to_string(resolve("shared:grammars/syncode/python.lark")).unwrap();
    let mut g = compile_grammar(&text, GrammarFormat::Lark).unwrap();
    g.longest_match = longest;
    g.set_tab_len(4).unwrap();
    g
}

/// Whether the commit path takes `doc` whole, as a complete document.
fn commits(tables: &Arc<stackmask::glr::Tables>, doc: &str) -> bool {
    let mut s = GlrState::new(tables.clone());
    s.commit_bytes(doc.as_bytes()).is_ok() && s.is_accepting()
}

/// Lark 1.3.1 with SynCode's Python setup (`lexer="basic"`, its `PythonIndenter` with
/// tab width 4) parses every program but #64, whose `FIX = """…"""` ends a line with a
/// string (`"""…"""\n` is one longer `_NL`, a docstring and its newline). The commit path
/// takes exactly those under longest match, and under 1-lookahead maximal munch none (a
/// line starting with `r`, `f`, `b`, `u` or a quote stops it).
#[test]
fn humaneval_programs_commit_as_lark_parses_them() {
    let docs = humaneval();
    assert_eq!(docs.len(), 164);
    let tables = Arc::new(build_glr_tables(&python(true)).unwrap());
    let refused: Vec<usize> = (0..docs.len())
        .filter(|&i| !commits(&tables, &docs[i]))
        .collect();
    assert_eq!(refused, vec![64]);
    let munch = Arc::new(build_glr_tables(&python(false)).unwrap());
    // Every solution has a line starting with `return`, whose `r` an `_NL` takes.
    let taken = docs.iter().filter(|d| commits(&munch, d)).count();
    assert_eq!(taken, 0, "programs that commit under maximal munch");
}

/// Token by token (Llama-3's canonical tokens and a random segmentation into Qwen2.5's),
/// the commit path and the reference agree at every step on whether the token is taken,
/// whether the prefix is a complete document, and where a mutated program (a `:` dropped)
/// is first refused.
#[test]
fn humaneval_commits_agree_with_the_reference_token_by_token() {
    let docs = humaneval();
    let g = python(true);
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let reference = Reference::new(&g, &tables.lexer);
    let vocabs = [
        Vocab::load(&resolve("shared:tokenizers/llama3.json")).unwrap(),
        Vocab::load(&resolve("shared:tokenizers/qwen2_5.json")).unwrap(),
    ];
    let mut refusals = 0;
    for (n, i) in [0usize, 12, 31, 64, 101, 150].into_iter().enumerate() {
        let doc = &docs[i];
        // The mutation: the first `:` ending a line dropped.
        let cut = doc.find(":\n").unwrap();
        let mutated = format!("{}{}", &doc[..cut], &doc[cut + 1..]);
        for text in [doc.as_str(), mutated.as_str()] {
            let v = &vocabs[n % 2];
            let ids = if n % 2 == 0 {
                v.encode(text).unwrap()
            } else {
                random_segmentation(v, text.as_bytes(), i as u64).unwrap()
            };
            let mut s = GlrState::new(tables.clone());
            let mut p = reference.empty();
            for (k, &t) in ids.iter().enumerate() {
                let bytes = v.token_bytes(t).unwrap();
                let next = reference.extend(&p, bytes);
                let allowed = reference.prefix_viable(&next);
                let taken = s.commit_bytes(bytes).is_ok();
                assert_eq!(taken, allowed, "#{i} token {k}: commit vs reference");
                if !taken {
                    refusals += 1;
                    break;
                }
                p = reference.commit_owned(next, &[]);
                assert_eq!(
                    s.is_accepting(),
                    reference.prefix_complete(&p),
                    "#{i} token {k}: complete?"
                );
            }
        }
    }
    // Every mutated program, and #64 itself, is refused somewhere.
    assert_eq!(refusals, 7);
}

/// SynCode's Python grammar under the mask automaton (indentation, longest match), with
/// GPT-2's and Llama-3's vocabularies: masks equal the reference's at sampled steps of
/// two programs (a HumanEval program canonically tokenized, the corpus's sample of
/// constructs split at random: docstrings, comments, brackets across lines, several
/// dedents at once), and a mutated program (the first `:` ending a line dropped) is
/// masked out at exactly the token the reference first refuses. Llama-3's automaton is
/// past the determinization budget, where edges waking dozens of effects still share a
/// state. Qwen2.5 and Llama-2 are checked on the programs matrix by `check
/// --verify-every` (benches/README.md).
#[test]
fn python_masks_through_the_automaton_equal_the_reference() {
    use stackmask::compile::Compiler;
    use stackmask::runtime::Matcher;
    let g = python(true);
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let reference = Reference::new(&g, &tables.lexer);
    let sample = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/docs/sample.py"),
    )
    .unwrap();
    let program = humaneval()[12].clone();
    let cut = program.find(":\n").unwrap();
    let mutated = format!("{}{}", &program[..cut], &program[cut + 1..]);
    // Steps between whole-mask comparisons: a 128K reference mask costs about a second.
    for (tokenizer, every) in [("gpt2", [60, 75]), ("llama3", [90, 220])] {
        let v = Vocab::load(&resolve(&format!("shared:tokenizers/{tokenizer}.json"))).unwrap();
        let dwa = Arc::new(Compiler::new(&v).automaton(&tables).unwrap());
        let mut compared = 0;
        let mut refused = 0;
        for (text, random, every) in [
            (&program, false, every[0]),
            (&sample, true, every[1]),
            (&mutated, false, usize::MAX),
        ] {
            let ids = if random {
                random_segmentation(&v, text.as_bytes(), 7).unwrap()
            } else {
                v.encode(text).unwrap()
            };
            let mut m = Matcher::new(tables.clone(), dwa.clone());
            let mut p = reference.empty();
            for (k, &t) in ids.iter().enumerate() {
                let bytes = v.token_bytes(t).unwrap();
                let next = reference.extend(&p, bytes);
                let viable = reference.prefix_viable(&next);
                let got = m.mask_set();
                // Each sampled step's whole mask, and every step's own token.
                if k % every == 0 || !viable {
                    let want = reference.mask(&p, &v);
                    for (id, &w) in want.iter().enumerate() {
                        assert_eq!(
                            got.contains(id as u32),
                            w,
                            "{tokenizer} step {k}: token {id}"
                        );
                    }
                    compared += 1;
                }
                assert_eq!(
                    got.contains(t.as_u32()),
                    viable,
                    "{tokenizer} step {k}: its own token"
                );
                if !viable {
                    refused += 1;
                    break;
                }
                m.commit_bytes(bytes).unwrap();
                p = reference.commit_owned(next, &[]);
            }
        }
        assert_eq!(
            refused, 1,
            "{tokenizer}: only the mutated program is refused"
        );
        assert!(compared >= 4, "{tokenizer}: only {compared} masks compared");
    }
}

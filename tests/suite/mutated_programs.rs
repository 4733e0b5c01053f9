//! Real programs with one mutation at a punctuation token (deleted, repeated, swapped
//! with the next, or another token of the program copied in before it): at every step up to the first token the reference refuses,
//! the automaton's mask agrees with the reference on the document's token; at that token
//! the whole mask equals the reference's, the commit is refused and changes nothing.
//! Programs: the seeds' benchmark files (benches/data/programs), SynCode's grammars.

use std::path::PathBuf;
use std::sync::Arc;

use stackmask::compile::{build_glr_tables, compile_grammar, Compiler, GrammarFormat};
use stackmask::ids::TokenId;
use stackmask::reference::Reference;
use stackmask::rng::SplitMix64;
use stackmask::runtime::Matcher;
use stackmask::vocab::Vocab;

use super::common::resolve;

/// Mutations per program.
const MUTATIONS: u64 = 4;

/// Whether a token is brackets, `=`, `;`, `:` or `,` (and spacing around them).
fn punctuation(bytes: &[u8]) -> bool {
    let s = bytes.trim_ascii();
    !s.is_empty() && s.iter().all(|b| b"{}()[]=;:,".contains(b))
}

/// Which bytes of a Go or Java file are in a comment (`//` to the end of the line, or
/// `/* … */`; string and character literals skipped): a scan for choosing mutation
/// points, not part of what is checked.
fn comment_bytes(src: &[u8]) -> Vec<bool> {
    let mut out = vec![false; src.len()];
    let mut i = 0;
    while i < src.len() {
        let end = match (src[i], src.get(i + 1)) {
            (b'/', Some(b'/')) => src[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(src.len(), |n| i + n),
            (b'/', Some(b'*')) => src[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(src.len(), |n| i + 2 + n + 2),
            (q @ (b'"' | b'\'' | b'`'), _) => {
                let mut j = i + 1;
                while j < src.len() && src[j] != q {
                    j += if src[j] == b'\\' { 2 } else { 1 };
                }
                i = j + 1;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out[i..end].iter_mut().for_each(|c| *c = true);
        i = end;
    }
    out
}

fn bit(words: &[u32], t: TokenId) -> bool {
    words[t.index() / 32] >> (t.index() % 32) & 1 == 1
}

/// `ids` with mutation `kind` at token `k` (`from`: another position, for a copy).
fn mutate(ids: &[TokenId], kind: u64, k: usize, from: usize) -> Vec<TokenId> {
    let mut out = ids.to_vec();
    match kind {
        0 => {
            out.remove(k);
        }
        1 => out.insert(k, ids[k]),
        2 => out.swap(k, k + 1),
        _ => out.insert(k, ids[from]),
    }
    out
}

fn run(grammar: &str, droppable: &[&str], tokenizer: &str, lang: &str, seed: u64) {
    let text = std::fs::read_to_string(resolve(grammar)).unwrap();
    let mut g = compile_grammar(&text, GrammarFormat::Lark).unwrap();
    let droppable: Vec<String> = droppable.iter().map(|s| s.to_string()).collect();
    g.set_droppable(&droppable).unwrap();
    let tables = Arc::new(build_glr_tables(&g).unwrap());
    let vocab = Vocab::load(&resolve(tokenizer)).unwrap();
    let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
    let reference = Reference::new(&g, &tables.lexer);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("benches/data/programs")
        .join(lang);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 5, "{}", dir.display());
    let mut rng = SplitMix64::new(seed);
    let mut words = vec![0u32; vocab.len().div_ceil(32)];
    let mut after = words.clone();
    let (mut rejected, mut tried) = (0, 0);
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let src = std::fs::read_to_string(f).unwrap();
        let ids = vocab.encode(&src).unwrap();
        let comments = comment_bytes(src.as_bytes());
        let mut at = 0;
        let in_comment: Vec<bool> = ids
            .iter()
            .map(|&t| {
                let len = vocab.token_bytes(t).unwrap().len();
                let inside = comments[at..at + len].iter().any(|&c| c);
                at += len;
                inside
            })
            .collect();
        for _ in 0..MUTATIONS {
            let kind = rng.below(4) as u64;
            // At punctuation in code: a mutation inside a comment changes nothing.
            let k = loop {
                let k = rng.below(ids.len() - 1);
                if punctuation(vocab.token_bytes(ids[k]).unwrap()) && !in_comment[k] {
                    break k;
                }
            };
            let from = rng.below(ids.len());
            let doc = mutate(&ids, kind, k, from);
            tried += 1;
            let what = format!("{name} ({lang}, {tokenizer}), mutation {kind} at token {k}");
            let mut m = Matcher::new(tables.clone(), dwa.clone());
            let mut p = reference.empty();
            let mut refused_at = None;
            for (i, &t) in doc.iter().enumerate() {
                let allowed = reference.allows(&p, &vocab, t);
                m.fill_mask(&mut words).unwrap();
                assert_eq!(bit(&words, t), allowed, "{what}: step {i}");
                if !allowed {
                    let want = reference.mask(&p, &vocab);
                    for (j, &w) in want.iter().enumerate() {
                        assert_eq!(
                            bit(&words, TokenId::new(j)),
                            w,
                            "{what}: step {i}, token {j}"
                        );
                    }
                    assert!(m.commit(&vocab, t).is_err(), "{what}: step {i} committed");
                    m.fill_mask(&mut after).unwrap();
                    assert_eq!(after, words, "{what}: a refused commit changed the mask");
                    refused_at = Some(i);
                    break;
                }
                m.commit(&vocab, t).unwrap();
                p = reference.commit_owned(p, vocab.token_bytes(t).unwrap());
            }
            match refused_at {
                // Up to the mutation the document is the program's own prefix.
                Some(i) => {
                    assert!(i >= k, "{what}: refused at {i}, before the mutation");
                    rejected += 1;
                }
                None => assert_eq!(
                    m.is_accepting(),
                    reference.prefix_complete(&p),
                    "{what}: end"
                ),
            }
        }
    }
    // Most single mutations break a program; the test must see refusals to mean anything.
    assert!(
        rejected * 2 >= tried,
        "{lang}: only {rejected} of {tried} mutations refused"
    );
}

#[test]
fn mutated_go_programs_are_refused_at_the_reference_token() {
    run(
        "shared:grammars/syncode/go.lark",
        &["EOS"],
        "shared:tokenizers/llama3.json",
        "go",
        88,
    );
}

#[test]
fn mutated_java_programs_are_refused_at_the_reference_token() {
    run(
        "shared:grammars/syncode/java.lark",
        &[],
        "shared:tokenizers/qwen2_5.json",
        "java",
        89,
    );
}

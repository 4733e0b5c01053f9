//! Commit conformance: every case of tests/corpus under the reference oracle and the GLR
//! recognizer, at byte level (every prefix) and token level (canonical and random
//! segmentations with a synthetic vocabulary, GPT-2 and Llama-2), on the documents, on
//! hand-written rejects and on seeded mutations. The reference decides; GLR must agree.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use stackmask::compile::{self, GrammarFormat};
use stackmask::glr::walk::{self, SortedTokens, VocabWalk};
use stackmask::glr::{GlrState, Tables};
use stackmask::ids::TokenId;
use stackmask::reference::Reference;
use stackmask::rng::SplitMix64;
use stackmask::vocab::segment::random_segmentation;
use stackmask::vocab::{TokenKind, Vocab};

use super::common::{resolve, shared_dir};

#[derive(Deserialize)]
struct CaseFile {
    grammar: String,
    #[serde(default)]
    accept: Vec<String>,
    #[serde(default)]
    accept_files: Vec<String>,
    #[serde(default)]
    reject: Vec<Reject>,
    #[serde(default = "yes")]
    dwa: bool,
    #[serde(default)]
    droppable: Vec<String>,
    #[serde(default)]
    longest_match: bool,
    /// `auto` (the default), `global` or `contextual`: `compile::Lexing`.
    #[serde(default)]
    lexing: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct Reject {
    doc: String,
    bad_at: usize,
}

struct Case {
    name: String,
    reference: Reference,
    tables: Arc<Tables>,
    accept: Vec<Vec<u8>>,
    reject: Vec<(Vec<u8>, usize)>,
    dwa: bool,
    /// Whether some terminal is droppable.
    droppable: bool,
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn load_case(dir: &Path) -> Case {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let f: CaseFile = toml::from_str(&std::fs::read_to_string(dir.join("case.toml")).unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (text, format) = if f.grammar == "builtin:json" {
        (compile::BUILTIN_JSON.to_string(), GrammarFormat::Lark)
    } else {
        let path = if f.grammar.starts_with("shared:") {
            PathBuf::from(resolve(&f.grammar))
        } else {
            dir.join(&f.grammar)
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let format = match GrammarFormat::from_path(&f.grammar) {
            GrammarFormat::JsonSchema if compile::frontend::structural_tag::is_spec(&text) => {
                GrammarFormat::StructuralTag
            }
            format => format,
        };
        (text, format)
    };
    let mut g = compile::compile_grammar(&text, format).unwrap_or_else(|e| panic!("{name}: {e}"));
    g.set_droppable(&f.droppable)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    g.longest_match = f.longest_match;
    let lexing = match f.lexing.as_deref() {
        None | Some("auto") => compile::Lexing::Auto,
        Some("global") => compile::Lexing::Global,
        Some("contextual") => compile::Lexing::Contextual,
        Some(other) => panic!("{name}: lexing {other:?}"),
    };
    let g = lexing
        .lay_on(g, format)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let tables = compile::build_glr_tables(&g).unwrap_or_else(|e| panic!("{name}: {e}"));
    let reference = Reference::new(&g, &tables.lexer);
    let mut accept: Vec<Vec<u8>> = f.accept.iter().map(|s| s.as_bytes().to_vec()).collect();
    for file in &f.accept_files {
        accept.push(std::fs::read(dir.join(file)).unwrap());
    }
    let reject = f
        .reject
        .iter()
        .map(|r| (r.doc.as_bytes().to_vec(), r.bad_at))
        .collect();
    Case {
        name,
        reference,
        tables: Arc::new(tables),
        accept,
        reject,
        dwa: f.dwa,
        droppable: !f.droppable.is_empty(),
    }
}

/// Documents longer than this many bytes (the counted cases' strings written out to their
/// bounds, thousands of characters) get fewer mutants and, where each step costs a
/// reference mask, sampled steps in their middle: what they test is the bound, near
/// their end, and the reference is slowest along long counted strings.
const LONG_DOC: usize = 2000;

/// Whether a check at step `i` of `n` runs when every step of a long document's middle
/// need not: every step within 32 of either end, and every `every`-th between.
fn near_ends_or_every(i: usize, n: usize, every: usize) -> bool {
    i < 32 || i + 32 >= n || i % every == 0
}

/// Whether the whole corpus runs (no `STACKMASK_CORPUS` filter): only then do checks that
/// count cases apply.
fn whole_corpus() -> bool {
    std::env::var_os("STACKMASK_CORPUS").is_none()
}

/// The corpus, loaded once per test process: the tests share each case's reference, so
/// what it remembers (its lexer follow sets, seconds to fill on the long counted strings)
/// is filled once, not once per test.
fn cases() -> &'static [Case] {
    static CASES: std::sync::OnceLock<Vec<Case>> = std::sync::OnceLock::new();
    CASES.get_or_init(load_cases)
}

fn load_cases() -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 8, "corpus is missing cases");
    // `STACKMASK_CORPUS=a,b` runs only those cases (while working on them; the checks
    // that count cases are then skipped, see [`whole_corpus`]).
    if let Ok(only) = std::env::var("STACKMASK_CORPUS") {
        let only: Vec<&str> = only.split(',').collect();
        dirs.retain(|d| only.iter().any(|o| d.ends_with(o)));
    }
    dirs.iter().map(|d| load_case(d)).collect()
}

/// The first byte offset after which the reference says no document continues the
/// prefix, or the length if every prefix is viable.
fn reference_bad_at(case: &Case, doc: &[u8]) -> usize {
    let mut p = case.reference.empty();
    for (i, &b) in doc.iter().enumerate() {
        p = case.reference.commit(&p, &[b]);
        if !case.reference.prefix_viable(&p) {
            return i;
        }
    }
    doc.len()
}

/// The same, by committing byte by byte to the GLR recognizer; also checks at every step
/// that GLR and reference agree on whether the prefix is a complete document.
fn glr_bad_at(case: &Case, doc: &[u8]) -> usize {
    let mut s = GlrState::new(case.tables.clone());
    let mut p = case.reference.empty();
    assert_eq!(
        s.is_accepting(),
        case.reference.prefix_complete(&p),
        "{}: empty doc",
        case.name
    );
    for (i, &b) in doc.iter().enumerate() {
        let before = s.clone();
        if s.commit_bytes(&[b]).is_err() {
            // A rejected commit changes nothing.
            assert_eq!(
                format!("{:?}", before.configs()),
                format!("{:?}", s.configs())
            );
            return i;
        }
        p = case.reference.commit(&p, &[b]);
        assert_eq!(
            s.is_accepting(),
            case.reference.prefix_complete(&p),
            "{}: {:?}: complete-document disagreement after byte {i}",
            case.name,
            String::from_utf8_lossy(doc)
        );
    }
    doc.len()
}

fn mutate(doc: &[u8], rng: &mut SplitMix64) -> Vec<u8> {
    let mut d = doc.to_vec();
    let alphabet: Vec<u8> = {
        let mut a: Vec<u8> = doc.to_vec();
        a.extend_from_slice(b" -+*,;:\"{}[]()x1");
        a
    };
    for _ in 0..1 + rng.below(2) {
        let op = rng.below(3);
        let pos = if d.is_empty() { 0 } else { rng.below(d.len()) };
        match op {
            0 if !d.is_empty() => {
                d.remove(pos);
            }
            1 => d.insert(pos, alphabet[rng.below(alphabet.len())]),
            _ if !d.is_empty() => d[pos] = alphabet[rng.below(alphabet.len())],
            _ => {}
        }
    }
    d
}

#[test]
fn byte_level_reference_matches_expectations_and_glr_agrees() {
    for case in cases() {
        for doc in &case.accept {
            assert_eq!(
                reference_bad_at(case, doc),
                doc.len(),
                "{}: {:?}",
                case.name,
                String::from_utf8_lossy(doc)
            );
            assert!(
                case.reference.is_complete(doc),
                "{}: {:?} incomplete",
                case.name,
                String::from_utf8_lossy(doc)
            );
            assert_eq!(
                glr_bad_at(case, doc),
                doc.len(),
                "{}: GLR rejected {:?}",
                case.name,
                String::from_utf8_lossy(doc)
            );
        }
        for (doc, bad_at) in &case.reject {
            let r = reference_bad_at(case, doc);
            assert_eq!(
                r,
                *bad_at,
                "{}: reference on {:?}",
                case.name,
                String::from_utf8_lossy(doc)
            );
            assert_eq!(
                glr_bad_at(case, doc),
                *bad_at,
                "{}: GLR on {:?}",
                case.name,
                String::from_utf8_lossy(doc)
            );
            if *bad_at == doc.len() {
                assert!(!case.reference.is_complete(doc));
            }
        }
        let mut rng = SplitMix64::new(7);
        for doc in &case.accept {
            for _ in 0..if doc.len() > LONG_DOC { 3 } else { 12 } {
                let m = mutate(doc, &mut rng);
                let r = reference_bad_at(case, &m);
                let g = glr_bad_at(case, &m);
                assert_eq!(
                    r,
                    g,
                    "{}: mutant {:?}",
                    case.name,
                    String::from_utf8_lossy(&m)
                );
            }
        }
    }
}

/// A synthetic vocabulary for a case: every byte of its documents, their substrings of 2 to
/// 4 bytes (which split multi-byte characters and straddle lexemes), and an EOS token.
fn tiny_vocab(case: &Case) -> Vocab {
    let mut toks: Vec<Vec<u8>> = Vec::new();
    let docs = case.accept.iter().chain(case.reject.iter().map(|(d, _)| d));
    for d in docs {
        for len in 1..=4 {
            for w in d.windows(len) {
                if !toks.iter().any(|t| t == w) && toks.len() < 400 {
                    toks.push(w.to_vec());
                }
            }
        }
    }
    let mut all: Vec<Option<Vec<u8>>> = toks.into_iter().map(Some).collect();
    all.push(Some(b"<eos>".to_vec()));
    let eos = TokenId::new(all.len() - 1);
    Vocab::from_byte_tokens("tiny", all, &[eos]).unwrap()
}

fn big_vocabs() -> Vec<Vocab> {
    let dir = shared_dir().join("tokenizers");
    ["gpt2.json", "llama2.json"]
        .iter()
        .map(|f| Vocab::load(dir.join(f).to_str().unwrap()).unwrap())
        .collect()
}

fn segmentations(v: &Vocab, doc: &[u8]) -> Vec<(String, Vec<TokenId>)> {
    let mut out = Vec::new();
    if let Ok(text) = std::str::from_utf8(doc) {
        if let Ok(ids) = v.encode(text) {
            out.push(("canonical".to_string(), ids));
        }
    }
    for seed in 1..=3 {
        if let Ok(ids) = random_segmentation(v, doc, seed) {
            out.push((format!("random:{seed}"), ids));
        }
    }
    out
}

/// Commits tokens; returns the index of the first token GLR rejects, and checks that the
/// reference disallows exactly that token (and allows every earlier one).
fn token_run(case: &Case, v: &Vocab, ids: &[TokenId], what: &str) -> Option<usize> {
    let mut s = GlrState::new(case.tables.clone());
    let mut p = case.reference.empty();
    for (i, &t) in ids.iter().enumerate() {
        let allowed = case.reference.allows(&p, v, t);
        let bytes = v.token_bytes(t).unwrap();
        let ok = s.commit_bytes(bytes).is_ok();
        assert_eq!(
            ok,
            allowed,
            "{}: {what}: token {i} {:?}",
            case.name,
            String::from_utf8_lossy(bytes)
        );
        if !ok {
            return Some(i);
        }
        p = case.reference.commit(&p, bytes);
    }
    assert_eq!(
        s.is_accepting(),
        case.reference.prefix_complete(&p),
        "{}: {what}: end",
        case.name
    );
    None
}

#[test]
fn token_level_commits_agree_with_reference() {
    let big = big_vocabs();
    for case in cases() {
        let tiny = tiny_vocab(case);
        let vocabs: Vec<&Vocab> = std::iter::once(&tiny).chain(big.iter()).collect();
        for v in &vocabs {
            for doc in &case.accept {
                let segs = if doc.len() > LONG_DOC { 2 } else { usize::MAX };
                for (how, ids) in segmentations(v, doc).into_iter().take(segs) {
                    let r = token_run(case, v, &ids, &format!("{} {how}", v.name()));
                    assert_eq!(
                        r,
                        None,
                        "{}: {} {how}: accepted document rejected",
                        case.name,
                        v.name()
                    );
                }
            }
            for (doc, _) in &case.reject {
                for (how, ids) in segmentations(v, doc) {
                    token_run(case, v, &ids, &format!("{} reject {how}", v.name()));
                }
            }
            let mut rng = SplitMix64::new(11);
            for doc in &case.accept {
                let (mutants, segs) = if doc.len() > LONG_DOC { (1, 1) } else { (4, 2) };
                for _ in 0..mutants {
                    let m = mutate(doc, &mut rng);
                    for (how, ids) in segmentations(v, &m).into_iter().take(segs) {
                        token_run(case, v, &ids, &format!("{} mutant {how}", v.name()));
                    }
                }
            }
        }
    }
}

/// At sampled steps, for every token of the vocabulary: GLR `commit(t)` succeeds iff the
/// reference mask has `t`; both walk masks (sorted tokens, and the tries' `VocabWalk`)
/// equal the reference mask, EOS included.
#[test]
fn masks_agree_with_reference_at_sampled_steps() {
    let big = big_vocabs();
    for case in cases() {
        let tiny = tiny_vocab(case);
        let tries = VocabWalk::new(case.tables.clone());
        for (vi, v) in std::iter::once(&tiny).chain(big.iter()).enumerate() {
            let sorted = SortedTokens::new(v);
            // The first accepted document, canonically (or randomly) segmented.
            let doc = &case.accept[0];
            let Some((_, ids)) = segmentations(v, doc).into_iter().next() else {
                continue;
            };
            let steps: Vec<usize> = if vi == 0 {
                (0..=ids.len()).collect()
            } else {
                let mut s = vec![0, ids.len() / 2, ids.len()];
                s.dedup();
                s
            };
            let mut s = GlrState::new(case.tables.clone());
            let mut p = case.reference.empty();
            for i in 0..=ids.len() {
                if steps.contains(&i) {
                    let rmask = case.reference.mask(&p, v);
                    let wmask = walk::mask(&s, &sorted);
                    assert_eq!(
                        tries.mask(&s, v),
                        wmask,
                        "{}: {} step {i}: the tries' walk vs the sorted walk",
                        case.name,
                        v.name()
                    );
                    for k in 0..v.len() {
                        let t = TokenId::new(k);
                        let w = wmask[k / 32] >> (k % 32) & 1 == 1;
                        assert_eq!(
                            w,
                            rmask[k],
                            "{}: {} step {i} token {k}: walk vs reference",
                            case.name,
                            v.name()
                        );
                        if v.kind(t).unwrap() == TokenKind::Normal {
                            let ok = s.clone().commit_bytes(v.token_bytes(t).unwrap()).is_ok();
                            assert_eq!(
                                ok,
                                rmask[k],
                                "{}: {} step {i} token {k} {:?}: commit vs reference",
                                case.name,
                                v.name(),
                                String::from_utf8_lossy(v.token_bytes(t).unwrap())
                            );
                        }
                    }
                }
                if i < ids.len() {
                    let b = v.token_bytes(ids[i]).unwrap();
                    s.commit_bytes(b).unwrap();
                    p = case.reference.commit(&p, b);
                }
            }
        }
    }
}

/// The reference's mask (tokens tried in byte order, each extending the prefix it shares
/// with the one before) against each token tried alone (`Reference::allows`): every token
/// of the case's synthetic vocabulary at every step of its first document, and every 13th
/// GPT-2 token (all byte lengths and first bytes occur) at its start, middle and end.
#[test]
fn reference_mask_is_each_token_tried_alone() {
    let gpt2 = Vocab::load(shared_dir().join("tokenizers/gpt2.json").to_str().unwrap()).unwrap();
    let mut allowed = 0usize;
    for case in cases() {
        let tiny = tiny_vocab(case);
        for (vi, v) in [&tiny, &gpt2].into_iter().enumerate() {
            let doc = &case.accept[0];
            let Some((_, ids)) = segmentations(v, doc).into_iter().next() else {
                continue;
            };
            let mut p = case.reference.empty();
            for i in 0..=ids.len() {
                if vi == 0 || [0, ids.len() / 2, ids.len()].contains(&i) {
                    let mask = case.reference.mask(&p, v);
                    let step = if vi == 0 { 1 } else { 13 };
                    for k in (0..v.len()).step_by(step) {
                        let alone = case.reference.allows(&p, v, TokenId::new(k));
                        assert_eq!(
                            mask[k],
                            alone,
                            "{}: {} step {i} token {k} {:?}",
                            case.name,
                            v.name(),
                            v.token_bytes(TokenId::new(k))
                                .map(|b| String::from_utf8_lossy(b).into_owned())
                        );
                        allowed += usize::from(alone);
                    }
                }
                if i < ids.len() {
                    p = case.reference.commit(&p, v.token_bytes(ids[i]).unwrap());
                }
            }
        }
    }
    // Not vacuous: tokens were allowed (and, the corpus being grammars, most were not).
    assert!(allowed > 1000, "{allowed}");
}

/// The mask automaton: at every step (synthetic vocabulary) or sampled steps (GPT-2,
/// Llama-2, Llama-3, Qwen2.5), along canonical and random segmentations of the accepted
/// documents, the matcher's mask is bit-identical to the reference mask, EOS included.
#[test]
fn dwa_masks_equal_reference_masks() {
    use stackmask::compile::SplitMode;
    use stackmask::compile::{Compiler, DwaLimits};
    use stackmask::dwa::walk_cache::WalkCache;
    use stackmask::runtime::{fill_mask_words_cached, CompiledGrammar, Matcher};
    let words_to_set = |w: &[u32]| -> roaring::RoaringBitmap {
        (0..w.len() * 32)
            .filter(|&t| w[t / 32] >> (t % 32) & 1 == 1)
            .map(|t| t as u32)
            .collect()
    };
    let mut big = big_vocabs();
    let dir = shared_dir().join("tokenizers");
    for f in ["llama3.json", "qwen2_5.json"] {
        big.push(Vocab::load(dir.join(f).to_str().unwrap()).unwrap());
    }
    let cases = cases();
    assert!(!whole_corpus() || cases.iter().filter(|c| c.dwa).count() >= 10);
    // Cases whose forced-split automaton did split string states (checked at the end, so
    // that the split path is not compared vacuously).
    let mut split_cases = std::collections::BTreeSet::new();
    for case in cases.iter().filter(|c| c.dwa) {
        let tiny = tiny_vocab(case);
        // The tiny vocabulary is also checked with no deterministic merging at all (every
        // suspended effect its own state), the fallback large grammars use past the
        // determinization budget, and with a budget of a few states, passed partway
        // through a breadth-first level (states planned before it are built as after it).
        let builds = std::iter::once((&tiny, 0usize))
            .chain(std::iter::once((&tiny, 5)))
            .chain(std::iter::once((&tiny, usize::MAX)))
            .chain(big.iter().map(|v| (v, usize::MAX)));
        for (vi, (v, budget)) in builds.enumerate() {
            let limits = DwaLimits {
                determinize_budget: budget,
                ..DwaLimits::default()
            };
            let dwa = Arc::new(
                Compiler::new(v)
                    .with_limits(limits)
                    .automaton(&case.tables)
                    .unwrap_or_else(|e| panic!("{}: {e}", case.name)),
            );
            // Every string state the lexer can split, split (`compile::dwa::string_split`;
            // the default splits only where that pays), and none: checked beside the
            // default against the same reference masks. A longest-match lexer is never
            // split, so its one automaton is checked.
            let modes: &[(&str, SplitMode)] = if case.tables.lexer.longest_match() {
                &[]
            } else {
                &[("split", SplitMode::Always), ("unsplit", SplitMode::Never)]
            };
            let mut others: Vec<(&str, Arc<Tables>, Arc<stackmask::dwa::Dwa>)> = modes
                .iter()
                .copied()
                .map(|(name, split)| {
                    let limits = DwaLimits { split, ..limits };
                    let d = Compiler::new(v)
                        .with_limits(limits)
                        .automaton(&case.tables)
                        .unwrap_or_else(|e| panic!("{} {name}: {e}", case.name));
                    if d.split().is_some() {
                        split_cases.insert(case.name.clone());
                    }
                    (name, case.tables.clone(), Arc::new(d))
                })
                .collect();
            // Each automaton also through its artifact bytes and back: the loaded
            // grammar's masks are checked at the same steps.
            let loaded: Vec<_> = std::iter::once(("default", &dwa))
                .chain(others.first().map(|o| ("split", &o.2)))
                .map(|(name, d)| {
                    let g = CompiledGrammar::new(case.tables.clone(), d.clone(), v);
                    let back = CompiledGrammar::from_bytes(&g.to_bytes()).unwrap_or_else(|e| {
                        panic!(
                            "{} {name} on {}: artifact refused: {e}",
                            case.name,
                            v.name()
                        )
                    });
                    assert_eq!(*back.dwa, **d, "{}: {name} automaton changed", case.name);
                    (name, back.tables.clone(), back.dwa.clone())
                })
                .collect();
            others.extend(loaded.into_iter().map(|(name, t, d)| {
                let name = if name == "default" {
                    "loaded"
                } else {
                    "loaded split"
                };
                (name, t, d)
            }));
            for (di, doc) in case.accept.iter().enumerate() {
                for (how, ids) in segmentations(v, doc)
                    .into_iter()
                    .take(if vi < 3 { 4 } else { 2 })
                {
                    let every = if vi < 3 { 1 } else { (ids.len() / 4).max(1) };
                    // The reference's mask deep in a long counted string costs
                    // milliseconds, so a long document's middle is sampled (the same steps
                    // for every build, which the reference remembers).
                    let check = |i: usize| {
                        if vi < 3 && doc.len() > LONG_DOC {
                            near_ends_or_every(i, ids.len(), 16)
                        } else {
                            i % every == 0 || i == ids.len()
                        }
                    };
                    let mut m = Matcher::new(case.tables.clone(), dwa.clone());
                    let mut ms: Vec<(&str, Matcher)> = others
                        .iter()
                        .map(|(name, t, d)| (*name, Matcher::new(t.clone(), d.clone())))
                        .collect();
                    let mut p = case.reference.empty();
                    // A walk cache that answers from the first entry below the heads,
                    // kept along the document: every cached path is checked too.
                    let mut cache = WalkCache::with_depth(1);
                    let mut words = vec![0u32; v.len().div_ceil(32)];
                    for i in 0..=ids.len() {
                        if check(i) {
                            let want = case.reference.mask(&p, v);
                            let got = m.mask_set();
                            for (name, mo) in &ms {
                                assert_eq!(
                                    mo.mask_set(),
                                    got,
                                    "{}: {} doc {di} {how} step {i}: {name} automaton differs",
                                    case.name,
                                    v.name()
                                );
                            }
                            fill_mask_words_cached(m.glr(), &dwa, &mut words, Some(&mut cache));
                            let cached = words_to_set(&words);
                            assert_eq!(
                                got,
                                cached,
                                "{}: {} doc {di} {how} step {i}: depth-1 cache differs",
                                case.name,
                                v.name()
                            );
                            for (k, &w) in want.iter().enumerate() {
                                assert_eq!(
                                    got.contains(k as u32),
                                    w,
                                    "{}: {} doc {di} {how} step {i}: token {k} {:?}",
                                    case.name,
                                    v.name(),
                                    v.token_bytes(TokenId::new(k))
                                        .map(|b| String::from_utf8_lossy(b).into_owned())
                                );
                            }
                        }
                        if i < ids.len() {
                            let b = v.token_bytes(ids[i]).unwrap();
                            m.commit_bytes(b).unwrap();
                            for (_, mo) in &mut ms {
                                mo.commit_bytes(b).unwrap();
                            }
                            p = case.reference.commit(&p, b);
                        }
                    }
                }
            }
        }
    }
    eprintln!("split: {split_cases:?}");
    for name in ["counted_long", "counted_pattern", "json", "split_strings"] {
        assert!(
            !whole_corpus() || split_cases.contains(name),
            "{name} was never split: {split_cases:?}"
        );
    }
}

/// Split string states (`compile::dwa::string_split`) against the unsplit automaton, at every
/// step: along canonical and random segmentations of the accepted documents, and along
/// random walks that draw each token from the mask (which reach positions near the length
/// bounds that documents pass quickly), with GPT-2 and Llama-3. The unsplit automaton is
/// checked against the reference by `dwa_masks_equal_reference_masks`.
#[test]
fn split_string_states_mask_as_unsplit_ones_at_every_step() {
    use stackmask::compile::SplitMode;
    use stackmask::compile::{Compiler, DwaLimits};
    use stackmask::runtime::Matcher;
    let dir = shared_dir().join("tokenizers");
    let vocabs: Vec<Vocab> = ["gpt2.json", "llama3.json"]
        .iter()
        .map(|f| Vocab::load(dir.join(f).to_str().unwrap()).unwrap())
        .collect();
    let mut compared = 0;
    // A longest-match lexer is never split (`string_split::plan`).
    for case in cases()
        .iter()
        .filter(|c| c.dwa && !c.tables.lexer.longest_match())
    {
        for v in &vocabs {
            let build = |split| {
                let limits = DwaLimits {
                    split,
                    ..DwaLimits::default()
                };
                Arc::new(
                    Compiler::new(v)
                        .with_limits(limits)
                        .automaton(&case.tables)
                        .unwrap(),
                )
            };
            let split = build(SplitMode::Always);
            if split.split().is_none() {
                continue;
            }
            let plain = build(SplitMode::Never);
            assert!(plain.split().is_none());
            compared += 1;
            let check = |a: &Matcher, b: &Matcher, what: &str| {
                assert_eq!(
                    a.mask_set(),
                    b.mask_set(),
                    "{}: {} {what}",
                    case.name,
                    v.name()
                );
            };
            for (di, doc) in case.accept.iter().enumerate() {
                // Long documents (thousands of tokens): canonical and one random.
                let take = if doc.len() > 1000 { 2 } else { 4 };
                for (how, ids) in segmentations(v, doc).into_iter().take(take) {
                    let mut a = Matcher::new(case.tables.clone(), split.clone());
                    let mut b = Matcher::new(case.tables.clone(), plain.clone());
                    for (i, &t) in ids.iter().enumerate() {
                        check(&a, &b, &format!("doc {di} {how} step {i}"));
                        let bytes = v.token_bytes(t).unwrap();
                        let what =
                            || format!("{}: {} doc {di} {how} step {i}", case.name, v.name());
                        a.commit_bytes(bytes)
                            .unwrap_or_else(|e| panic!("{}: {e}", what()));
                        b.commit_bytes(bytes)
                            .unwrap_or_else(|e| panic!("{}: {e}", what()));
                    }
                    check(&a, &b, &format!("doc {di} {how} end"));
                }
            }
            // Normal tokens, and those of at most two bytes: half the walks draw from
            // these, which keep strings open longer.
            let normal: roaring::RoaringBitmap = v.mask_tokens().map(|(t, _)| t.as_u32()).collect();
            let short: roaring::RoaringBitmap = v
                .mask_tokens()
                .filter(|(_, b)| b.len() <= 2)
                .map(|(t, _)| t.as_u32())
                .collect();
            let mut rng = SplitMix64::new(5);
            for walk in 0..16 {
                let mut a = Matcher::new(case.tables.clone(), split.clone());
                let mut b = Matcher::new(case.tables.clone(), plain.clone());
                for i in 0..160 {
                    let mask = b.mask_set();
                    assert_eq!(
                        a.mask_set(),
                        mask,
                        "{}: {} walk {walk} step {i}",
                        case.name,
                        v.name()
                    );
                    let mut from = &mask & &normal;
                    if walk % 2 == 0 && !(&from & &short).is_empty() {
                        from &= &short;
                    }
                    if from.is_empty() {
                        break;
                    }
                    let k = (rng.next_u64() % from.len()) as u32;
                    let t = TokenId::new(from.select(k).expect("k < len") as usize);
                    let bytes = v.token_bytes(t).unwrap();
                    a.commit_bytes(bytes).unwrap();
                    b.commit_bytes(bytes).unwrap();
                }
            }
        }
    }
    assert!(
        !whole_corpus() || compared >= 8,
        "only {compared} case × vocabulary pairs split"
    );
}

/// Reduction closures keep their buffers on the thread between steps: none of them may
/// keep a stack node alive. After committing every accepted document of every case (the
/// ambiguous and long-chain ones build the largest scratch graphs) and dropping the state,
/// no node of its stacks survives, and a state committed afterwards still agrees.
#[test]
fn commits_leave_no_stack_node_behind() {
    for case in cases() {
        for doc in &case.accept {
            let mut g = GlrState::new(case.tables.clone());
            g.commit_bytes(doc)
                .unwrap_or_else(|e| panic!("{}: accepted document rejected: {e}", case.name));
            // Every node of the state's stacks, heads and below.
            let mut work: Vec<_> = g.configs().iter().flat_map(|c| c.heads.iter()).collect();
            let mut seen = std::collections::HashSet::new();
            let mut nodes = Vec::new();
            while let Some(n) = work.pop() {
                if seen.insert(Arc::as_ptr(n)) {
                    nodes.push(Arc::downgrade(n));
                    work.extend(n.preds());
                }
            }
            assert!(!nodes.is_empty(), "{}: no heads", case.name);
            drop(g);
            assert!(
                nodes.iter().all(|n| n.upgrade().is_none()),
                "{}: a stack node outlived its state",
                case.name
            );
            assert_eq!(
                glr_bad_at(case, doc),
                doc.len(),
                "{}: after reuse",
                case.name
            );
        }
    }
}

/// Every stack under `heads`, bottom state first, as LR state numbers (`None` past
/// `cap` stacks: merged stacks can multiply).
fn stacks_of(heads: &[Arc<stackmask::glr::gss::Node>], cap: usize) -> Option<Vec<Vec<u32>>> {
    let mut out = Vec::new();
    let mut work: Vec<(&stackmask::glr::gss::Node, Vec<u32>)> =
        heads.iter().map(|h| (&**h, Vec::new())).collect();
    while let Some((n, mut above)) = work.pop() {
        above.push(n.state().as_u32());
        if n.preds().is_empty() {
            above.reverse();
            out.push(above);
            if out.len() > cap {
                return None;
            }
            continue;
        }
        for p in n.preds() {
            work.push((p, above.clone()));
        }
    }
    out.sort();
    Some(out)
}

/// The GLR step's fast path (a plain LR run on a single stack) builds the very stacks
/// the full reduction closure builds, and answers viability questions as it does: at
/// every byte of every accepted document of the corpus (ambiguous, merged-stack and
/// long-chain grammars included), for every configuration and every terminal. The fast
/// path must also apply to most single-stack steps, or the commit would not use it.
#[test]
fn lr_runs_build_the_stacks_the_full_closure_builds() {
    use stackmask::glr::step;
    use stackmask::ids::TerminalId;
    let (mut fast_shifts, mut single_stack_shifts, mut fast_verdicts) = (0usize, 0usize, 0usize);
    let mut closure_only = std::collections::BTreeSet::new();
    for case in cases() {
        let lr = &case.tables.lr;
        let terminals: Vec<TerminalId> = (0..=lr.num_terminals() as u32)
            .map(TerminalId::from_u32)
            .collect();
        for doc in &case.accept {
            let mut s = GlrState::new(case.tables.clone());
            // The first bytes of long documents cover their grammar's steps.
            for &b in doc.iter().take(400) {
                s.commit_bytes(&[b]).unwrap();
                for c in s.configs() {
                    for &t in &terminals {
                        let closure = step::shift_closure(lr, &c.heads, &[t]);
                        if c.heads.len() == 1 {
                            single_stack_shifts += 1;
                        }
                        match step::shift_by_lr_run(lr, &c.heads, &[t]) {
                            Some(fast) => {
                                fast_shifts += 1;
                                assert_eq!(
                                    stacks_of(&fast, 256),
                                    stacks_of(&closure, 256),
                                    "{}: stacks after shifting {t:?}",
                                    case.name
                                );
                            }
                            None => {
                                closure_only.insert(case.name.clone());
                            }
                        }
                        assert_eq!(
                            stacks_of(&step::shift(lr, &c.heads, &[t]), 256),
                            stacks_of(&closure, 256),
                            "{}: shift of {t:?}",
                            case.name
                        );
                        let full = step::can_consume_closure(lr, &c.heads, t, None);
                        if let Some(fast) = step::can_consume_by_lr_run(lr, &c.heads, t) {
                            fast_verdicts += 1;
                            assert_eq!(Some(fast), full, "{}: can consume {t:?}", case.name);
                        }
                        assert_eq!(step::can_consume_within(lr, &c.heads, t, None), full);
                        // Within a budget the answer may be unknown, never different.
                        let quick = step::can_consume_within(lr, &c.heads, t, Some(2));
                        assert!(quick.is_none() || quick == full, "{}: {t:?}", case.name);
                    }
                }
            }
        }
    }
    assert!(
        fast_shifts * 10 >= single_stack_shifts * 9,
        "the fast path took {fast_shifts} of {single_stack_shifts} single-stack shifts"
    );
    assert!(!whole_corpus() || fast_verdicts > 0);
    // The ambiguous grammars do reach the full closure.
    assert!(
        !whole_corpus()
            || closure_only.contains("expr_ambiguous") && closure_only.contains("merged_stacks"),
        "cases that needed the full closure: {closure_only:?}"
    );
}

/// Droppable lexemes reach the automaton's decision trees, so that the mask comparisons
/// above do not pass vacuously: with Llama-3 every droppable case's automaton decides
/// classes through trees, and `droppable_runs` leaves its runs of `;` (more droppable
/// lexemes than a tree holds) to the recognizer.
#[test]
fn droppable_cases_decide_through_trees_and_the_recognizer() {
    use stackmask::compile::Compiler;
    let vocab = Vocab::load(
        shared_dir()
            .join("tokenizers/llama3.json")
            .to_str()
            .unwrap(),
    )
    .unwrap();
    let cases: Vec<&Case> = cases().iter().filter(|c| c.droppable).collect();
    assert!(
        !whole_corpus() || cases.len() >= 3,
        "droppable cases are missing"
    );
    for case in cases {
        let dwa = Compiler::new(&vocab)
            .automaton(&case.tables)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let drops = dwa.drops();
        assert!(!drops.rules.is_empty(), "{}: no drop trees", case.name);
        if case.name == "droppable_runs" {
            let semis: Vec<&[u8]> = drops.overflow.iter().map(|(_, b)| b.as_slice()).collect();
            assert!(
                semis.contains(&b";;;;;;;;;;;;;;;;".as_slice()),
                "{}: overflowing tokens {:?}",
                case.name,
                semis
            );
        }
    }
}

//! Vocabularies: sizes, specials and EOS as documented, known token bytes, identical bytes
//! across two files of the same vocabulary, byte-exact round trips of sample texts through
//! each tokenizer's own encoder, and errors for invalid ids.

use serde::Deserialize;
use stackmask::ids::TokenId;
use stackmask::vocab::{TokenKind, Vocab, VocabError};

use super::common::{data_dir, load_toml, resolve};

#[derive(Deserialize)]
struct Spec {
    tokenizer: Vec<Tok>,
    same: Vec<Same>,
}

#[derive(Deserialize)]
struct Tok {
    spec: String,
    ids: usize,
    entries: usize,
    eos: Vec<String>,
    specials: usize,
    bytes: Vec<(u32, String)>,
}

#[derive(Deserialize)]
struct Same {
    a: String,
    b: String,
}

fn load(spec: &str) -> Vocab {
    Vocab::load(&resolve(spec)).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn sample_texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(data_dir().join("texts")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        out.push((p.file_name().unwrap().to_string_lossy().into_owned(), text));
    }
    out.sort();
    assert!(out.len() >= 5, "sample texts missing");
    out
}

fn check_tokenizer(t: &Tok, texts: &[(String, String)]) {
    let v = load(&t.spec);
    assert_eq!(v.len(), t.ids, "{}: number of ids", t.spec);
    assert_eq!(v.num_entries(), t.entries, "{}: number of tokens", t.spec);
    assert_eq!(v.special_tokens().len(), t.specials, "{}: specials", t.spec);
    let eos: Vec<&str> = v
        .eos()
        .iter()
        .map(|id| {
            v.special_tokens()
                .iter()
                .find(|(s, _)| s == id)
                .map(|(_, n)| n.as_str())
                .unwrap()
        })
        .collect();
    assert_eq!(eos, t.eos, "{}: eos", t.spec);
    for (id, want) in &t.bytes {
        let got = v.token_bytes(TokenId::from_u32(*id)).unwrap();
        assert_eq!(got, want.as_bytes(), "{}: bytes of token {id}", t.spec);
        assert_eq!(v.kind(TokenId::from_u32(*id)).unwrap(), TokenKind::Normal);
    }
    // Ids past the end are errors, not panics.
    let past = TokenId::new(v.len());
    assert!(matches!(
        v.token_bytes(past),
        Err(VocabError::InvalidTokenId { .. })
    ));
    assert!(v.kind(TokenId::from_u32(u32::MAX)).is_err());
    // Holes are errors too.
    if let Some(hole) = (0..v.len())
        .map(TokenId::new)
        .find(|&i| v.kind(i).unwrap() == TokenKind::Unused)
    {
        assert!(matches!(
            v.token_bytes(hole),
            Err(VocabError::UnusedTokenId(_))
        ));
    }
    // Canonical encodings reproduce the text byte for byte and use no special token.
    for (name, text) in texts {
        let ids = v
            .encode(text)
            .unwrap_or_else(|e| panic!("{}: encode {name}: {e}", t.spec));
        assert!(!ids.is_empty());
        for &id in &ids {
            assert_eq!(
                v.kind(id).unwrap(),
                TokenKind::Normal,
                "{}: {name} encodes to non-normal token {id}",
                t.spec
            );
        }
        let bytes = v.decode_bytes(&ids).unwrap();
        assert!(
            bytes == text.as_bytes(),
            "{}: {name}: bytes differ\n got: {:?}\nwant: {:?}",
            t.spec,
            String::from_utf8_lossy(&bytes),
            text
        );
    }
}

#[test]
fn every_tokenizer_loads_exactly() {
    let spec: Spec = load_toml("tokenizers.toml");
    let texts = sample_texts();
    // Every tokenizer file in the shared corpus must be covered.
    let dir = super::common::shared_dir().join("tokenizers");
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") || name.ends_with(".tiktoken") || name.ends_with(".json.gz") {
            let s = format!("shared:tokenizers/{name}");
            assert!(
                spec.tokenizer.iter().any(|t| t.spec == s),
                "{name} is not listed in tests/data/tokenizers.toml"
            );
        }
    }
    for t in &spec.tokenizer {
        check_tokenizer(t, &texts);
    }
}

#[test]
fn same_vocabulary_same_bytes() {
    let spec: Spec = load_toml("tokenizers.toml");
    for s in &spec.same {
        let a = load(&s.a);
        let b = load(&s.b);
        let n = a.len().min(b.len());
        let mut compared = 0;
        for i in 0..n {
            let id = TokenId::new(i);
            let (ka, kb) = (a.kind(id).unwrap(), b.kind(id).unwrap());
            if ka == TokenKind::Normal && kb == TokenKind::Normal {
                assert_eq!(
                    a.token_bytes(id).unwrap(),
                    b.token_bytes(id).unwrap(),
                    "{} vs {}: token {i}",
                    s.a,
                    s.b
                );
                compared += 1;
            }
        }
        assert!(
            compared > 50_000,
            "{} vs {}: only {compared} compared",
            s.a,
            s.b
        );
    }
}

#[test]
fn byte_fallback_and_partial_utf8_tokens() {
    let v = load("shared:tokenizers/llama2.json");
    // <0x00>.. <0xFF> are ids 3..=258 in Llama-2.
    for b in 0..=255u32 {
        assert_eq!(v.token_bytes(TokenId::from_u32(3 + b)).unwrap(), &[b as u8]);
    }
    let o = load("builtin:o200k");
    let invalid = o
        .mask_tokens()
        .filter(|(_, b)| std::str::from_utf8(b).is_err())
        .count();
    assert!(invalid > 100, "o200k has {invalid} non-UTF-8 tokens");
}

#[test]
fn eos_override() {
    let mut v = load("shared:tokenizers/llama3.json");
    let id = v.resolve_token("<|eot_id|>").unwrap();
    v.set_eos(&[id]).unwrap();
    assert_eq!(v.eos(), &[id]);
    assert!(v.resolve_token("<|no such token|>").is_err());
    assert!(v.set_eos(&[TokenId::new(v.len())]).is_err());
}

#[test]
fn bad_files_are_errors() {
    let dir = std::env::temp_dir().join(format!("stackmask-vocab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: &[(&str, &[u8])] = &[
        ("bad.json", b"{\"model\": 3"),
        ("bad.tiktoken", b"YQ== 0\nnot base64! 1\n"),
        ("bad.json.gz", b"not gzip"),
    ];
    for (name, data) in cases {
        let p = dir.join(name);
        std::fs::write(&p, data).unwrap();
        let r = Vocab::load(p.to_str().unwrap());
        assert!(r.is_err(), "{name} loaded");
    }
    assert!(Vocab::load("/nonexistent/tokenizer.json").is_err());
    assert!(Vocab::load("builtin:nope").is_err());
    std::fs::remove_dir_all(&dir).ok();
}

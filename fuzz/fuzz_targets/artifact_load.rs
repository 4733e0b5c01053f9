//! Loading compiled-grammar artifacts from hostile bytes: never a panic, and whatever
//! loads can be run (masks and commits) without panicking. Mode 0 feeds the bytes as a
//! whole file; mode 1 applies (offset, byte) edits to a valid artifact's payload and
//! fixes the header's checksum, so mutations reach the decoder and the validators (of
//! the built-in JSON grammar's artifact, or with bit 1 of the mode of a schema's whose
//! lexer counts a long string in runs).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use stackmask::compile::{Compiler, GrammarFormat, BUILTIN_JSON};
use stackmask::runtime::{CompiledGrammar, Matcher};
use stackmask::vocab::Vocab;

/// Base artifacts for mode 1: the built-in JSON grammar, and a schema with a counted
/// string (its lexer has runs, so edits reach their validation).
fn valid() -> &'static (Vec<Vec<u8>>, Vocab) {
    static V: OnceLock<(Vec<Vec<u8>>, Vocab)> = OnceLock::new();
    V.get_or_init(|| {
        let mut toks: Vec<Option<Vec<u8>>> = (b' '..=b'~').map(|b| Some(vec![b])).collect();
        for w in ["true", "null", "\": ", ", \"", "{\"", "\"}", "[1", "0.5", "aaaa"] {
            toks.push(Some(w.as_bytes().to_vec()));
        }
        let vocab = Vocab::from_byte_tokens("fuzz", toks, &[]).unwrap();
        let schema = r#"{"type": "object", "properties": {"a": {"type": "string", "maxLength": 600}}}"#;
        let bases = [
            (BUILTIN_JSON, GrammarFormat::Lark),
            (schema, GrammarFormat::JsonSchema),
        ];
        let artifacts = bases
            .iter()
            .map(|&(text, format)| {
                Compiler::new(&vocab).compile(text, format).unwrap().to_bytes()
            })
            .collect();
        (artifacts, vocab)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (good, vocab) = valid();
    let bytes = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let mut v = good[usize::from(mode >> 1 & 1)].clone();
        let body = v.len() - 24;
        for e in rest.chunks_exact(3) {
            let off = u16::from_le_bytes([e[0], e[1]]) as usize % body;
            v[24 + off] = e[2];
        }
        let crc = crc32fast::hash(&v[24..]);
        v[12..16].copy_from_slice(&crc.to_le_bytes());
        v
    };
    let Ok(g) = CompiledGrammar::from_bytes(&bytes) else {
        return;
    };
    let mut m = Matcher::from_compiled(&g);
    let mut words = vec![0u32; g.dwa.vocab_len().div_ceil(32)];
    for chunk in [&b"{\"a\": \"aaaa"[..], b"aaaaaaaa", b"\", \"b\": [1, ", b"true, null]}", b"x"] {
        let _ = m.fill_mask(&mut words);
        let _ = m.commit_bytes(chunk);
    }
    let _ = m.fill_mask(&mut words);
    let _ = vocab;
});

//! tiktoken vocabularies: rank files (`base64(bytes) rank` per line) and the bundled
//! o200k_base that the `tiktoken-rs` crate carries.
//!
//! A rank file holds only the byte strings; it names no special tokens and no regex, so a
//! vocabulary loaded from one has no EOS until the caller sets it, and encodes with the
//! cl100k pre-tokenization regex unless told otherwise.

use std::path::Path;

use base64::Engine as _;

use super::{TokenEntry, TokenKind, Vocab, VocabError};
#[cfg(feature = "hf")]
use crate::ids::TokenId;

/// Upper bound on ranks in a rank file: larger ranks are taken as corruption rather than
/// allocated.
const MAX_RANK: u32 = 16_000_000;

/// The pre-tokenization regex of cl100k_base (also right for Llama-3's rank file).
pub const CL100K_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Parses the text of a rank file into `(bytes, rank)` pairs.
pub fn parse_rank_file(name: &str, text: &str) -> Result<Vec<(Vec<u8>, u32)>, VocabError> {
    let mut out = Vec::new();
    for (lineno, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |m: &str| VocabError::Malformed {
            what: name.to_string(),
            message: format!("line {}: {m}", lineno + 1),
        };
        let mut parts = line.split(' ');
        let (Some(b64), Some(rank), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("expected `base64 rank`"));
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| bad(&format!("bad base64: {e}")))?;
        let rank: u32 = rank.parse().map_err(|_| bad("rank is not a number"))?;
        if rank > MAX_RANK {
            return Err(bad("rank is implausibly large"));
        }
        if bytes.is_empty() {
            return Err(bad("empty token"));
        }
        out.push((bytes, rank));
    }
    Ok(out)
}

fn entries_from_ranks(ranks: &[(Vec<u8>, u32)]) -> Result<Vec<TokenEntry>, VocabError> {
    let n = ranks
        .iter()
        .map(|(_, r)| *r as usize + 1)
        .max()
        .unwrap_or(0);
    let mut entries = vec![
        TokenEntry {
            bytes: Vec::new(),
            kind: TokenKind::Unused,
            name: None,
        };
        n
    ];
    for (bytes, rank) in ranks {
        let e = &mut entries[*rank as usize];
        if e.kind != TokenKind::Unused {
            return Err(VocabError::Malformed {
                what: "rank file".into(),
                message: format!("rank {rank} appears twice"),
            });
        }
        *e = TokenEntry {
            bytes: bytes.clone(),
            kind: TokenKind::Normal,
            name: None,
        };
    }
    Ok(entries)
}

/// Loads a tiktoken rank file. `pattern` is the pre-tokenization regex for `encode`
/// (default: [`CL100K_PATTERN`]).
pub fn from_rank_file(path: &Path, pattern: Option<&str>) -> Result<Vocab, VocabError> {
    let text = std::fs::read_to_string(path).map_err(|source| VocabError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    from_rank_text(&name, &text, pattern)
}

/// Loads a vocabulary from the text of a rank file.
pub fn from_rank_text(name: &str, text: &str, pattern: Option<&str>) -> Result<Vocab, VocabError> {
    let ranks = parse_rank_file(name, text)?;
    let entries = entries_from_ranks(&ranks)?;
    #[cfg(feature = "hf")]
    {
        let encoder: rustc_hash::FxHashMap<Vec<u8>, u32> = ranks.into_iter().collect();
        let bpe = tiktoken_rs::CoreBPE::new(
            encoder,
            rustc_hash::FxHashMap::default(),
            pattern.unwrap_or(CL100K_PATTERN),
        )
        .map_err(|e| VocabError::Malformed {
            what: name.to_string(),
            message: format!("cannot build encoder: {e}"),
        })?;
        Vocab::from_entries(name, entries, Some(super::Encoder::Tiktoken(Box::new(bpe))))
    }
    #[cfg(not(feature = "hf"))]
    {
        let _ = pattern;
        Vocab::from_entries(name, entries, None)
    }
}

/// The bundled o200k_base vocabulary (GPT-4o), from the rank file inside `tiktoken-rs`.
/// `<|endoftext|>` is its EOS.
#[cfg(feature = "hf")]
pub fn builtin_o200k() -> Result<Vocab, VocabError> {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let mut specials: Vec<(u32, String)> = bpe
        .special_tokens()
        .into_iter()
        .map(|s| {
            let ids = bpe.encode_with_special_tokens(s);
            (ids[0], s.to_string())
        })
        .collect();
    specials.sort();
    let max_special = specials.iter().map(|(i, _)| *i).max().unwrap_or(0);
    // Ordinary ranks are dense from 0; find the end by probing.
    let mut entries = Vec::new();
    let mut id = 0u32;
    loop {
        if let Some((_, name)) = specials.iter().find(|(i, _)| *i == id) {
            entries.push(TokenEntry {
                bytes: name.as_bytes().to_vec(),
                kind: TokenKind::Special,
                name: Some(name.clone()),
            });
        } else {
            match bpe.decode_bytes(&[id]) {
                Ok(bytes) => entries.push(TokenEntry {
                    bytes,
                    kind: TokenKind::Normal,
                    name: None,
                }),
                Err(_) if id <= max_special => entries.push(TokenEntry {
                    bytes: Vec::new(),
                    kind: TokenKind::Unused,
                    name: None,
                }),
                Err(_) => break,
            }
        }
        id += 1;
    }
    Vocab::from_entries(
        "builtin:o200k",
        entries,
        Some(super::Encoder::TiktokenStatic(bpe)),
    )
}

#[cfg(feature = "hf")]
pub(super) fn encode(bpe: &tiktoken_rs::CoreBPE, text: &str) -> Vec<TokenId> {
    bpe.encode_ordinary(text)
        .into_iter()
        .map(TokenId::from_u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_file_errors_name_the_line() {
        let e = parse_rank_file("t", "YQ== 0\nnot-a-line\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = parse_rank_file("t", "YQ== 0\n!!! 1\n").unwrap_err();
        assert!(e.to_string().contains("base64"), "{e}");
        let e = parse_rank_file("t", "YQ== 99999999999\n").unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        assert!(entries_from_ranks(&[(b"a".to_vec(), 0), (b"b".to_vec(), 0)]).is_err());
    }

    #[test]
    fn rank_text_with_hole() {
        let v = from_rank_text("t", "YQ== 0\nYg== 2\n", None).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v.num_entries(), 2);
        assert_eq!(v.token_bytes(crate::ids::TokenId::new(2)).unwrap(), b"b");
        assert!(v.token_bytes(crate::ids::TokenId::new(1)).is_err());
    }
}

//! Loading HF `tokenizer.json` files with the `tokenizers` crate.
//!
//! Token bytes come from the vocabulary strings, never from `decode` (which is lossy for
//! partial UTF-8): byte-level BPE strings go back through the GPT-2 byte table
//! ([`super::byte_level`]); sentencepiece strings turn `▁` into a space and `<0xNN>` into
//! one byte. Added tokens marked `special` become [`TokenKind::Special`]; other added
//! tokens are ordinary text.
//!
//! Before the file is handed to `tokenizers`, the normalizer's `Prepend("▁")` and
//! Metaspace's prefix are switched off, so that `encode` tokenizes a document as a
//! continuation: its tokens' bytes concatenate to exactly the document.

use std::path::Path;

use serde_json::Value;

use super::byte_level::ByteLevelDecoder;
use super::{Encoder, TokenEntry, TokenKind, Vocab, VocabError};
use crate::ids::TokenId;

/// How a tokenizer's vocabulary strings encode bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PieceEncoding {
    /// GPT-2 byte↔unicode alphabet.
    ByteLevel,
    /// Sentencepiece: `▁` is a space, `<0xNN>` byte fallback when `byte_fallback` is set.
    SentencePiece { byte_fallback: bool },
}

/// Loads a `tokenizer.json`, gunzipping it first if the name ends in `.gz`.
pub fn from_tokenizer_json_path(path: &Path) -> Result<Vocab, VocabError> {
    let raw = std::fs::read(path).map_err(|source| VocabError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let data = if path.extension().is_some_and(|e| e == "gz") {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| VocabError::Malformed {
                what: path.display().to_string(),
                message: format!("bad gzip data: {e}"),
            })?;
        out
    } else {
        raw
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    from_tokenizer_json_bytes(&name, &data)
}

fn malformed(name: &str, message: impl Into<String>) -> VocabError {
    VocabError::Malformed {
        what: name.to_string(),
        message: message.into(),
    }
}

/// Whether a decoder / pre-tokenizer JSON node (possibly a `Sequence`) contains a component
/// for which `pred` holds.
fn any_component(node: &Value, pred: &dyn Fn(&Value) -> bool) -> bool {
    if node.is_null() {
        return false;
    }
    if pred(node) {
        return true;
    }
    for key in ["decoders", "pretokenizers", "normalizers"] {
        if let Some(Value::Array(items)) = node.get(key) {
            if items.iter().any(|n| any_component(n, pred)) {
                return true;
            }
        }
    }
    false
}

fn has_type(node: &Value, ty: &str) -> bool {
    node.get("type").and_then(Value::as_str) == Some(ty)
}

fn piece_encoding(name: &str, json: &Value) -> Result<PieceEncoding, VocabError> {
    let model = json
        .get("model")
        .ok_or_else(|| malformed(name, "no \"model\""))?;
    let model_type = model.get("type").and_then(Value::as_str).unwrap_or("BPE");
    if model_type != "BPE" && model_type != "Unigram" {
        return Err(VocabError::Unsupported(format!(
            "{name}: model type {model_type} (only BPE and Unigram vocabularies have exact byte strings here)"
        )));
    }
    let byte_fallback = model
        .get("byte_fallback")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let decoder = json.get("decoder").unwrap_or(&Value::Null);
    let pre = json.get("pre_tokenizer").unwrap_or(&Value::Null);
    if any_component(decoder, &|n| has_type(n, "ByteLevel"))
        || any_component(pre, &|n| has_type(n, "ByteLevel"))
    {
        return Ok(PieceEncoding::ByteLevel);
    }
    let is_spm_decoder = |n: &Value| {
        has_type(n, "Metaspace")
            || has_type(n, "ByteFallback")
            || (has_type(n, "Replace")
                && n.get("pattern")
                    .and_then(|p| p.get("String"))
                    .and_then(Value::as_str)
                    == Some("\u{2581}"))
    };
    if byte_fallback || any_component(decoder, &is_spm_decoder) {
        return Ok(PieceEncoding::SentencePiece { byte_fallback });
    }
    Err(VocabError::Unsupported(format!(
        "{name}: cannot tell how token strings map to bytes (decoder is neither ByteLevel nor sentencepiece-style)"
    )))
}

/// Switches off prefix-space insertion so `encode` treats text as a continuation.
fn disable_prefix_space(json: &mut Value) {
    if let Some(norm) = json.get_mut("normalizer") {
        if has_type(norm, "Prepend") {
            *norm = Value::Null;
        } else if let Some(Value::Array(items)) = norm.get_mut("normalizers") {
            items.retain(|n| !has_type(n, "Prepend"));
        }
    }
    fn fix_pre(node: &mut Value) {
        if has_type(node, "Metaspace") {
            if let Some(obj) = node.as_object_mut() {
                if obj.contains_key("prepend_scheme") {
                    obj.insert("prepend_scheme".into(), Value::String("never".into()));
                }
                if obj.contains_key("add_prefix_space") {
                    obj.insert("add_prefix_space".into(), Value::Bool(false));
                }
            }
        }
        if has_type(node, "ByteLevel") {
            if let Some(obj) = node.as_object_mut() {
                obj.insert("add_prefix_space".into(), Value::Bool(false));
            }
        }
        if let Some(Value::Array(items)) = node.get_mut("pretokenizers") {
            items.iter_mut().for_each(fix_pre);
        }
    }
    if let Some(pre) = json.get_mut("pre_tokenizer") {
        fix_pre(pre);
    }
}

/// The exact bytes of one vocabulary string.
fn piece_bytes(enc: PieceEncoding, bl: &ByteLevelDecoder, piece: &str) -> Vec<u8> {
    match enc {
        PieceEncoding::ByteLevel => bl
            .decode(piece)
            .unwrap_or_else(|| piece.as_bytes().to_vec()),
        PieceEncoding::SentencePiece { byte_fallback } => {
            if byte_fallback {
                if let Some(b) = byte_fallback_piece(piece) {
                    return vec![b];
                }
            }
            piece.replace('\u{2581}', " ").into_bytes()
        }
    }
}

/// `<0xNN>` → the byte NN.
fn byte_fallback_piece(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// Loads a vocabulary from the bytes of a `tokenizer.json`.
pub fn from_tokenizer_json_bytes(name: &str, data: &[u8]) -> Result<Vocab, VocabError> {
    let mut json: Value =
        serde_json::from_slice(data).map_err(|e| malformed(name, format!("not JSON: {e}")))?;
    let enc = piece_encoding(name, &json)?;
    disable_prefix_space(&mut json);
    let patched = serde_json::to_vec(&json).map_err(|e| malformed(name, e.to_string()))?;
    let mut tok = tokenizers::Tokenizer::from_bytes(&patched)
        .map_err(|e| malformed(name, format!("tokenizers rejected it: {e}")))?;
    tok.set_encode_special_tokens(true);

    let vocab = tok.get_vocab(true);
    let added = tok.get_added_tokens_decoder();
    let max_id = vocab.values().copied().chain(added.keys().copied()).max();
    let n = max_id.map_or(0, |m| m as usize + 1);
    if n > 16_000_000 {
        return Err(malformed(
            name,
            format!("token id {n} is implausibly large"),
        ));
    }
    let mut entries = vec![
        TokenEntry {
            bytes: Vec::new(),
            kind: TokenKind::Unused,
            name: None,
        };
        n
    ];
    let bl = ByteLevelDecoder::new();
    for (piece, &id) in &vocab {
        entries[id as usize] = TokenEntry {
            bytes: piece_bytes(enc, &bl, piece),
            kind: TokenKind::Normal,
            name: None,
        };
    }
    for (&id, tok) in &added {
        entries[id as usize] = if tok.special {
            TokenEntry {
                bytes: tok.content.as_bytes().to_vec(),
                kind: TokenKind::Special,
                name: Some(tok.content.clone()),
            }
        } else {
            TokenEntry {
                bytes: piece_bytes(enc, &bl, &tok.content),
                kind: TokenKind::Normal,
                name: None,
            }
        };
    }
    // A normal token with no bytes cannot be emitted as text: treat it as unused.
    for e in &mut entries {
        if e.kind == TokenKind::Normal && e.bytes.is_empty() {
            e.kind = TokenKind::Unused;
        }
    }
    Vocab::from_entries(name, entries, Some(Encoder::Hf(Box::new(tok))))
}

pub(super) fn encode(tok: &tokenizers::Tokenizer, text: &str) -> Result<Vec<TokenId>, VocabError> {
    let enc = tok
        .encode(text, false)
        .map_err(|e| VocabError::Encode(e.to_string()))?;
    Ok(enc
        .get_ids()
        .iter()
        .map(|&i| TokenId::from_u32(i))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_fallback_pieces() {
        assert_eq!(byte_fallback_piece("<0x0A>"), Some(10));
        assert_eq!(byte_fallback_piece("<0xFF>"), Some(255));
        assert_eq!(byte_fallback_piece("<0x0>"), None);
        assert_eq!(byte_fallback_piece("0x0A"), None);
        let bl = ByteLevelDecoder::new();
        let spm = PieceEncoding::SentencePiece {
            byte_fallback: true,
        };
        assert_eq!(piece_bytes(spm, &bl, "\u{2581}Hello"), b" Hello");
        assert_eq!(
            piece_bytes(PieceEncoding::ByteLevel, &bl, "\u{120}Hello"),
            b" Hello"
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(from_tokenizer_json_bytes("x", b"{not json").is_err());
        assert!(from_tokenizer_json_bytes("x", b"{}").is_err());
        assert!(
            from_tokenizer_json_bytes("x", br#"{"model":{"type":"WordPiece","vocab":{}}}"#)
                .is_err()
        );
    }
}

//! Vocabularies: the exact byte string of every token id.
//!
//! A [`Vocab`] maps each [`TokenId`] to the bytes the model emits with it, flags special
//! (control) tokens, which a mask allows only where a grammar names them (each reads as
//! its [`special_lexeme`]), and names the end-of-sequence token(s), which are allowed
//! exactly when the output is a complete document. Loaders turn
//! HF `tokenizer.json` files ([`hf`]) and tiktoken rank files ([`tiktoken`]) into this form;
//! the bundled o200k_base needs no file.
//!
//! This is a shared leaf at the crate root: `compile/` reads it to build the token trie and
//! `runtime/` to write masks and encode documents. It depends on nothing else in the crate.

pub mod byte_level;
#[cfg(feature = "hf")]
pub mod hf;
pub mod parts;
pub mod segment;
pub mod tiktoken;

use crate::ids::TokenId;
pub use parts::TokenParts;

/// The byte that opens and closes a special token's lexeme. It never occurs in UTF-8
/// text, so no terminal but a special token's own matches it, and normal tokens holding
/// it (byte-level vocabularies have one) are never allowed.
pub const SPECIAL_MARK: u8 = 0xFE;

/// The bytes a grammar reads for the special token named `name` (its content string, as
/// `<|tool_call|>`): [`SPECIAL_MARK`], the name, [`SPECIAL_MARK`]. A grammar that names
/// the token has a terminal matching exactly these bytes; only the token produces them.
pub fn special_lexeme(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 2);
    out.push(SPECIAL_MARK);
    out.extend_from_slice(name.as_bytes());
    out.push(SPECIAL_MARK);
    out
}

/// What a vocabulary id is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An ordinary token: its bytes can appear in generated text.
    Normal,
    /// A special/control token (BOS, `<|im_start|>`, …): allowed only where a grammar
    /// names it (then it reads as its [`special_lexeme`]); the end-of-sequence tokens are
    /// allowed where the document may end instead.
    Special,
    /// An id with no token (vocabularies with holes): never allowed.
    Unused,
}

/// Errors from loading or querying a vocabulary.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VocabError {
    /// A file could not be read.
    #[error("cannot read tokenizer file {path}: {source}")]
    Io {
        /// The path that failed.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The tokenizer file is not what its format requires.
    #[error("malformed tokenizer {what}: {message}")]
    Malformed {
        /// Which file or format.
        what: String,
        /// What is wrong, with a line number where there is one.
        message: String,
    },
    /// The tokenizer uses a model or decoder whose token bytes we cannot derive exactly.
    #[error("unsupported tokenizer: {0}")]
    Unsupported(String),
    /// A token id outside `0..len`.
    #[error("token id {id} is out of range (vocabulary has {len} ids)")]
    InvalidTokenId {
        /// The id that was asked for.
        id: u32,
        /// The number of ids.
        len: usize,
    },
    /// A token id that exists but holds no token.
    #[error("token id {0} is unused in this vocabulary")]
    UnusedTokenId(u32),
    /// A named token (for example an EOS override) is not in the vocabulary.
    #[error("no token named {0:?} in this vocabulary")]
    UnknownToken(String),
    /// Encoding text needs the tokenizer's encoder, which this vocabulary does not have.
    #[error("this vocabulary has no encoder (it was built from raw byte strings)")]
    NoEncoder,
    /// The underlying tokenizer failed to encode.
    #[error("tokenizer failed to encode: {0}")]
    Encode(String),
}

/// The encoder that produced a vocabulary, kept so that documents can be tokenized the way
/// the model would (canonical segmentation).
pub(crate) enum Encoder {
    #[cfg(feature = "hf")]
    Hf(Box<tokenizers::Tokenizer>),
    #[cfg(feature = "hf")]
    Tiktoken(Box<tiktoken_rs::CoreBPE>),
    #[cfg(feature = "hf")]
    TiktokenStatic(&'static tiktoken_rs::CoreBPE),
}

/// A vocabulary: exact bytes, kind and EOS status of every token id.
///
/// Invariants: `offsets.len() == kinds.len() + 1`, offsets are non-decreasing, `Unused` ids
/// have empty bytes, and every EOS id is a `Special` or `Normal` id in range.
pub struct Vocab {
    name: String,
    bytes: Vec<u8>,
    offsets: Vec<u32>,
    kinds: Vec<TokenKind>,
    /// Content string of each special token, for display and lookup by name.
    special_names: Vec<(TokenId, String)>,
    /// The [`special_lexeme`] of each named special token, in id order.
    special_lexemes: Vec<(TokenId, Box<[u8]>)>,
    /// Normal tokens holding [`SPECIAL_MARK`], in id order (one or two in byte-level
    /// vocabularies): found once here, not at each pass over the tokens.
    marked: Vec<TokenId>,
    eos: Vec<TokenId>,
    encoder: Option<Encoder>,
    /// [`Vocab::mask_tokens`] as byte tries by first byte and length, computed on first use: the
    /// tokenizer-only part of every mask automaton build (sorting 128K+ byte strings),
    /// shared by all grammars.
    parts: std::sync::OnceLock<TokenParts>,
    /// [`Vocab::max_token_len`], computed on first use: every grammar's lexer asks for it,
    /// and it is a pass over the whole vocabulary.
    max_len: std::sync::OnceLock<usize>,
    /// Tables other layers derive from the tokens alone, by key ([`Vocab::derived`]).
    derived: Derived,
}

/// [`Vocab::derived`]'s tables: few (one per kind of table a build asks for), so a list.
#[derive(Default)]
struct Derived(std::sync::Mutex<Vec<(u64, std::sync::Arc<dyn std::any::Any + Send + Sync>)>>);

impl std::fmt::Debug for Vocab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocab")
            .field("name", &self.name)
            .field("len", &self.len())
            .field("eos", &self.eos)
            .finish()
    }
}

/// Names that tokenizers use for their end-of-sequence tokens. A tokenizer.json does not
/// say which token ends a sequence (that lives in generation configs), so special tokens
/// with these names are taken as EOS unless the caller overrides it.
const EOS_NAMES: &[&str] = &[
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|im_end|>",
    "<eos>",
    "<end_of_turn>",
    "<|end|>",
    "<|eom_id|>",
];

/// One token as a loader hands it over.
#[derive(Debug, Clone)]
pub struct TokenEntry {
    /// The exact bytes (empty for `Unused`).
    pub bytes: Vec<u8>,
    /// The token's kind.
    pub kind: TokenKind,
    /// The display name of a special token (its content string).
    pub name: Option<String>,
}

impl Vocab {
    /// Builds a vocabulary from raw byte strings: `None` marks an unused id. Every token is
    /// `Normal`; `eos` lists the end-of-sequence ids (they become `Special`).
    pub fn from_byte_tokens(
        name: &str,
        tokens: Vec<Option<Vec<u8>>>,
        eos: &[TokenId],
    ) -> Result<Self, VocabError> {
        let entries = tokens
            .into_iter()
            .map(|t| match t {
                Some(bytes) => TokenEntry {
                    bytes,
                    kind: TokenKind::Normal,
                    name: None,
                },
                None => TokenEntry {
                    bytes: Vec::new(),
                    kind: TokenKind::Unused,
                    name: None,
                },
            })
            .collect::<Vec<_>>();
        let mut entries = entries;
        for &id in eos {
            let len = entries.len();
            let e = entries
                .get_mut(id.index())
                .ok_or(VocabError::InvalidTokenId {
                    id: id.as_u32(),
                    len,
                })?;
            e.kind = TokenKind::Special;
            e.name = Some(format!("<eos:{}>", id));
        }
        let mut v = Self::from_entries(name, entries, None)?;
        v.eos = eos.to_vec();
        Ok(v)
    }

    /// Builds a vocabulary from tokens as a loader hands them over (kinds and special
    /// tokens' names included), with `eos` as the end-of-sequence tokens.
    pub fn from_token_entries(
        name: &str,
        entries: Vec<TokenEntry>,
        eos: &[TokenId],
    ) -> Result<Self, VocabError> {
        let mut v = Self::from_entries(name, entries, None)?;
        v.set_eos(eos)?;
        Ok(v)
    }

    /// Builds a vocabulary from loader output; EOS is guessed from special-token names.
    pub(crate) fn from_entries(
        name: &str,
        entries: Vec<TokenEntry>,
        encoder: Option<Encoder>,
    ) -> Result<Self, VocabError> {
        if entries.len() >= u32::MAX as usize {
            return Err(VocabError::Malformed {
                what: name.to_string(),
                message: "more than 2^32 token ids".into(),
            });
        }
        let mut bytes = Vec::new();
        let mut offsets = Vec::with_capacity(entries.len() + 1);
        let mut kinds = Vec::with_capacity(entries.len());
        let mut special_names = Vec::new();
        offsets.push(0u32);
        for (i, e) in entries.into_iter().enumerate() {
            if e.kind == TokenKind::Normal && e.bytes.is_empty() {
                return Err(VocabError::Malformed {
                    what: name.to_string(),
                    message: format!("token {i} has no bytes"),
                });
            }
            bytes.extend_from_slice(&e.bytes);
            let end = u32::try_from(bytes.len()).map_err(|_| VocabError::Malformed {
                what: name.to_string(),
                message: "token bytes exceed 4 GiB".into(),
            })?;
            offsets.push(end);
            if e.kind == TokenKind::Special {
                special_names.push((TokenId::new(i), e.name.unwrap_or_default()));
            }
            kinds.push(e.kind);
        }
        let eos = special_names
            .iter()
            .filter(|(_, n)| EOS_NAMES.contains(&n.as_str()))
            .map(|(id, _)| *id)
            .collect();
        let marked = (0..kinds.len())
            .filter(|&i| {
                kinds[i] == TokenKind::Normal
                    && bytes[offsets[i] as usize..offsets[i + 1] as usize].contains(&SPECIAL_MARK)
            })
            .map(TokenId::new)
            .collect();
        let special_lexemes = special_names
            .iter()
            .filter(|(_, n)| !n.is_empty())
            .map(|(id, n)| (*id, special_lexeme(n).into_boxed_slice()))
            .collect();
        Ok(Self {
            name: name.to_string(),
            bytes,
            offsets,
            kinds,
            special_names,
            special_lexemes,
            marked,
            eos,
            encoder,
            parts: std::sync::OnceLock::new(),
            max_len: std::sync::OnceLock::new(),
            derived: Derived::default(),
        })
    }

    /// Loads a vocabulary from a spec: `builtin:o200k`, a `tokenizer.json` path (optionally
    /// gzipped, `*.json.gz`), or a tiktoken rank file (`*.tiktoken`). Without the `hf`
    /// feature only rank files load (and have no encoder).
    pub fn load(spec: &str) -> Result<Self, VocabError> {
        if let Some(name) = spec.strip_prefix("builtin:") {
            return match name {
                #[cfg(feature = "hf")]
                "o200k" | "o200k_base" => tiktoken::builtin_o200k(),
                other => Err(VocabError::Unsupported(format!(
                    "no builtin tokenizer {other:?} (available: builtin:o200k)"
                ))),
            };
        }
        if spec.ends_with(".tiktoken") {
            return tiktoken::from_rank_file(std::path::Path::new(spec), None);
        }
        #[cfg(feature = "hf")]
        return hf::from_tokenizer_json_path(std::path::Path::new(spec));
        #[cfg(not(feature = "hf"))]
        Err(VocabError::Unsupported(format!(
            "{spec}: tokenizer.json needs the `hf` feature"
        )))
    }

    /// A short name for reports (file name or `builtin:…`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of token ids (one more than the largest id), holes included. Masks have
    /// this many bits.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether the vocabulary has no ids.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The number of ids that hold a token (normal or special).
    pub fn num_entries(&self) -> usize {
        self.kinds
            .iter()
            .filter(|k| **k != TokenKind::Unused)
            .count()
    }

    /// `Ok` when `id` is in range (an unused id is in range).
    pub fn check_id(&self, id: TokenId) -> Result<(), VocabError> {
        self.check(id).map(|_| ())
    }

    fn check(&self, id: TokenId) -> Result<usize, VocabError> {
        let i = id.index();
        if i >= self.kinds.len() {
            return Err(VocabError::InvalidTokenId {
                id: id.as_u32(),
                len: self.kinds.len(),
            });
        }
        Ok(i)
    }

    /// The exact bytes of a token. Special tokens return their content bytes (they never
    /// appear in a mask, but callers may want to print them); unused ids are an error.
    pub fn token_bytes(&self, id: TokenId) -> Result<&[u8], VocabError> {
        let i = self.check(id)?;
        if self.kinds[i] == TokenKind::Unused {
            return Err(VocabError::UnusedTokenId(id.as_u32()));
        }
        Ok(self.bytes_unchecked(i))
    }

    fn bytes_unchecked(&self, i: usize) -> &[u8] {
        &self.bytes[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The kind of a token id.
    pub fn kind(&self, id: TokenId) -> Result<TokenKind, VocabError> {
        Ok(self.kinds[self.check(id)?])
    }

    /// The tokens a mask decides about by their bytes, in id order, with the bytes a
    /// grammar reads for each: normal tokens as they are (but those holding
    /// [`SPECIAL_MARK`], never allowed), and named special tokens other than
    /// end-of-sequence as their [`special_lexeme`].
    pub fn mask_tokens(&self) -> impl Iterator<Item = (TokenId, &[u8])> + '_ {
        (0..self.kinds.len())
            .filter_map(|i| self.mask_bytes_unchecked(i).map(|b| (TokenId::new(i), b)))
    }

    /// The bytes a grammar reads for token `id` ([`Vocab::mask_tokens`]); `None` for
    /// tokens no mask allows by bytes (end of sequence, unused and unnamed special ids,
    /// normal tokens holding [`SPECIAL_MARK`]) and for ids out of range.
    pub fn mask_bytes(&self, id: TokenId) -> Option<&[u8]> {
        (id.index() < self.kinds.len())
            .then(|| self.mask_bytes_unchecked(id.index()))
            .flatten()
    }

    fn mask_bytes_unchecked(&self, i: usize) -> Option<&[u8]> {
        match self.kinds[i] {
            TokenKind::Normal => self
                .marked
                .binary_search(&TokenId::new(i))
                .is_err()
                .then(|| self.bytes_unchecked(i)),
            TokenKind::Special => {
                let id = TokenId::new(i);
                if self.eos.contains(&id) {
                    return None;
                }
                let k = self
                    .special_lexemes
                    .binary_search_by_key(&id, |(t, _)| *t)
                    .ok()?;
                Some(&self.special_lexemes[k].1)
            }
            TokenKind::Unused => None,
        }
    }

    /// The special tokens with their names, in id order.
    pub fn special_tokens(&self) -> &[(TokenId, String)] {
        &self.special_names
    }

    /// A table derived from this vocabulary's tokens alone, made by `make` the first time
    /// `key` is asked for (per type): build passes that measure every token the same way
    /// for every grammar (the unit counts of a length filter) pay once per vocabulary.
    /// `key` must name everything besides the tokens that the table depends on.
    pub fn derived<T: std::any::Any + Send + Sync>(
        &self,
        key: u64,
        make: impl FnOnce() -> T,
    ) -> std::sync::Arc<T> {
        // A poisoned lock only means a panic elsewhere mid-push; the list is still sound.
        let mut d = self.derived.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = d
            .iter()
            .filter(|(k, _)| *k == key)
            .find_map(|(_, v)| v.clone().downcast::<T>().ok())
        {
            return v;
        }
        let v = std::sync::Arc::new(make());
        d.push((key, v.clone()));
        v
    }

    /// [`Vocab::mask_tokens`] as byte tries by first byte and length bucket (cached: built once
    /// per vocabulary, on first use).
    pub fn parts(&self) -> &TokenParts {
        self.parts
            .get_or_init(|| TokenParts::new(self.mask_tokens()))
    }

    /// The end-of-sequence tokens.
    pub fn eos(&self) -> &[TokenId] {
        &self.eos
    }

    /// Replaces the end-of-sequence tokens. Each must be a token that exists; it is allowed
    /// only where the document may end from then on.
    pub fn set_eos(&mut self, eos: &[TokenId]) -> Result<(), VocabError> {
        // Which tokens are normal may change.
        self.parts = std::sync::OnceLock::new();
        self.max_len = std::sync::OnceLock::new();
        for &id in eos {
            if self.kind(id)? == TokenKind::Unused {
                return Err(VocabError::UnusedTokenId(id.as_u32()));
            }
        }
        self.eos = eos.to_vec();
        Ok(())
    }

    /// Resolves a token given as a decimal id or as the name of a special token.
    pub fn resolve_token(&self, spec: &str) -> Result<TokenId, VocabError> {
        if let Ok(n) = spec.parse::<u32>() {
            let id = TokenId::from_u32(n);
            self.check(id)?;
            return Ok(id);
        }
        self.special_names
            .iter()
            .find(|(_, n)| n == spec)
            .map(|(id, _)| *id)
            .ok_or_else(|| VocabError::UnknownToken(spec.to_string()))
    }

    /// Encodes `text` the way the model's own tokenizer would as a continuation (no BOS, no
    /// added prefix space), treating special-token strings as plain text. The concatenated
    /// bytes of the result are exactly `text`'s bytes for every tokenizer we support.
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, VocabError> {
        match &self.encoder {
            None => Err(VocabError::NoEncoder),
            #[cfg(feature = "hf")]
            Some(Encoder::Hf(t)) => hf::encode(t, text),
            #[cfg(feature = "hf")]
            Some(Encoder::Tiktoken(bpe)) => Ok(tiktoken::encode(bpe, text)),
            #[cfg(feature = "hf")]
            Some(Encoder::TiktokenStatic(bpe)) => Ok(tiktoken::encode(bpe, text)),
            #[cfg(not(feature = "hf"))]
            Some(_) => {
                let _ = text;
                Err(VocabError::NoEncoder)
            }
        }
    }

    /// The concatenated bytes of a token sequence (errors on invalid or unused ids).
    pub fn decode_bytes(&self, ids: &[TokenId]) -> Result<Vec<u8>, VocabError> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id)?);
        }
        Ok(out)
    }

    /// The length in bytes of the longest of [`Vocab::mask_tokens`].
    /// Builds now what the first compile and its first masks would otherwise build on the
    /// way: the token tries ([`Vocab::parts`]) with their character counts, and the
    /// longest token's length. Tens of milliseconds for a 128K vocabulary, once; a server
    /// calls it when it loads the tokenizer, so that no request waits on it.
    /// [`Vocab::set_eos`] drops them (which tokens are normal may change).
    pub fn prepare(&self) {
        self.parts().prepare();
        self.max_token_len();
    }

    pub fn max_token_len(&self) -> usize {
        *self
            .max_len
            .get_or_init(|| self.mask_tokens().map(|(_, b)| b.len()).max().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A derived table is made once per key and type, and a key made for one type does
    /// not answer for another.
    #[test]
    fn derived_tables_are_made_once_per_key_and_type() {
        let v = Vocab::from_byte_tokens("tiny", vec![Some(b"a".to_vec())], &[]).unwrap();
        let made = std::sync::atomic::AtomicUsize::new(0);
        let make = |x: u32| {
            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            x
        };
        assert_eq!(*v.derived(1, || make(10)), 10);
        assert_eq!(*v.derived(1, || make(11)), 10);
        assert_eq!(*v.derived(2, || make(20)), 20);
        assert_eq!(*v.derived(1, || "other type".to_string()), "other type");
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 2);
    }

    /// `prepare` builds the tries and their character counts before any walk asks, and
    /// a new EOS set drops them (which tokens are normal changed).
    #[test]
    fn prepare_builds_the_tries_and_set_eos_drops_them() {
        let tokens = vec![
            Some(b"a".to_vec()),
            Some("\u{e9}".as_bytes().to_vec()),
            Some(b"</s>".to_vec()),
        ];
        let mut v = Vocab::from_byte_tokens("tiny", tokens, &[]).unwrap();
        assert!(v.parts.get().is_none() && v.max_len.get().is_none());
        v.prepare();
        assert!(v.parts.get().is_some_and(TokenParts::is_prepared));
        assert_eq!(v.max_len.get(), Some(&4));
        v.set_eos(&[TokenId::from_u32(2)]).unwrap();
        assert!(v.parts.get().is_none() && v.max_len.get().is_none());
        v.prepare();
        assert!(v.parts.get().is_some_and(TokenParts::is_prepared));
        assert!(v.max_len.get().is_some());
    }

    #[test]
    fn byte_tokens_roundtrip_and_errors() {
        let v = Vocab::from_byte_tokens(
            "tiny",
            vec![
                Some(b"a".to_vec()),
                None,
                Some(vec![0xE4, 0xBD]),
                Some(b"<e>".to_vec()),
            ],
            &[TokenId::new(3)],
        )
        .unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v.num_entries(), 3);
        assert_eq!(v.token_bytes(TokenId::new(2)).unwrap(), &[0xE4, 0xBD]);
        assert!(matches!(
            v.token_bytes(TokenId::new(1)),
            Err(VocabError::UnusedTokenId(1))
        ));
        assert!(matches!(
            v.token_bytes(TokenId::new(4)),
            Err(VocabError::InvalidTokenId { id: 4, len: 4 })
        ));
        assert_eq!(v.eos(), &[TokenId::new(3)]);
        assert_eq!(v.kind(TokenId::new(3)).unwrap(), TokenKind::Special);
        assert_eq!(v.mask_tokens().count(), 2);
        assert!(matches!(v.encode("a"), Err(VocabError::NoEncoder)));
    }

    #[test]
    fn empty_normal_token_is_rejected() {
        let r = Vocab::from_byte_tokens("bad", vec![Some(Vec::new())], &[]);
        assert!(matches!(r, Err(VocabError::Malformed { .. })));
    }
}

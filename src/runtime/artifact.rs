//! A compiled grammar for one vocabulary, and its on-disk form.
//!
//! Layout: 8-byte magic `STKMASK\0`, format version (u32 LE), CRC-32 of the payload
//! (u32 LE), payload length (u64 LE), then the payload: the recognizer tables, the mask
//! automaton and a fingerprint of the vocabulary, encoded with `bincode` (standard
//! configuration, bounded by the payload length), except the automaton's weight words,
//! most of its bulk, which are stored as runs of zeros and nonzero words
//! (`dwa::zero_runs`). Loading checks magic, version, length and checksum before
//! decoding, then every table's invariants and their agreement with each other, so a
//! corrupt or foreign file is an error, never a panic later.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::dwa::Dwa;
use crate::glr::{GlrState, Tables};
use crate::lexer::{Indenter, LexFollow, LexPos, LexerDfa};
use crate::lr::LrTable;
use crate::vocab::Vocab;

use super::start_mask::StartMask;

const MAGIC: &[u8; 8] = b"STKMASK\0";
/// Bumped whenever the payload's encoding changes.
pub const FORMAT_VERSION: u32 = 16;
const HEADER: usize = 8 + 4 + 4 + 8;
/// Largest payload accepted (bounds what a hostile length field can make us allocate).
pub const MAX_ARTIFACT_BYTES: u64 = 4 << 30;

/// Why an artifact cannot be loaded or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    /// Not a stackmask artifact.
    #[error("not a stackmask artifact (bad magic)")]
    Magic,
    /// Written by another format version.
    #[error("artifact format version {found}, this build reads {expected}")]
    Version {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        expected: u32,
    },
    /// Shorter or longer than its header says.
    #[error("artifact truncated or padded: header says {expected} payload bytes, found {found}")]
    Length {
        /// Bytes the header announces.
        expected: u64,
        /// Bytes present.
        found: u64,
    },
    /// The payload does not match its checksum.
    #[error("artifact checksum mismatch (corrupt file)")]
    Checksum,
    /// The payload does not decode or its tables are inconsistent.
    #[error("artifact payload invalid: {0}")]
    Invalid(String),
    /// Compiled for a different vocabulary.
    #[error("artifact was compiled for another vocabulary ({0})")]
    Vocabulary(String),
}

/// Identifies a vocabulary: size and a checksum of every token's bytes and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VocabFingerprint {
    /// Number of token ids.
    pub len: u32,
    /// CRC-32 over (id, kind, bytes) of every token.
    pub crc: u32,
}

/// [`Vocab::derived`]'s key for the fingerprint (which depends on the tokens alone).
const FINGERPRINT_KEY: u64 = u64::from_le_bytes(*b"vocabfp\0");

impl VocabFingerprint {
    /// The fingerprint of `v`, computed once per vocabulary: every grammar compiled for
    /// `v` carries it, and a pass over a 128K-token vocabulary costs more than compiling a
    /// median MaskBench schema.
    pub fn of(v: &Vocab) -> Self {
        *v.derived(FINGERPRINT_KEY, || Self::compute(v))
    }

    /// The fingerprint of `v`, from its tokens.
    fn compute(v: &Vocab) -> Self {
        let mut h = crc32fast::Hasher::new();
        for i in 0..v.len() {
            let id = crate::ids::TokenId::new(i);
            h.update(&(i as u32).to_le_bytes());
            // Every id below len() has a kind and bytes (unused ids have empty bytes).
            let kind = v.kind(id).map(|k| format!("{k:?}")).unwrap_or_default();
            h.update(kind.as_bytes());
            h.update(v.token_bytes(id).unwrap_or(&[]));
        }
        Self {
            len: v.len() as u32,
            crc: h.finalize(),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Payload {
    lexer: LexerDfa,
    follow: LexFollow,
    lr: LrTable,
    /// The indenter and the follow sets inside brackets, behind one.
    indenter: Option<(Indenter, LexFollow)>,
    dwa: Dwa,
    vocab: VocabFingerprint,
}

/// Everything a matcher needs for one grammar and one vocabulary, the first mask of a
/// document included (computed when it is made or loaded); cheap to clone and to share
/// across threads.
#[derive(Debug, Clone)]
pub struct CompiledGrammar {
    /// Recognizer tables (commit).
    pub tables: Arc<Tables>,
    /// Mask automaton (get_mask).
    pub dwa: Arc<Dwa>,
    /// The vocabulary it was compiled for.
    pub vocab: VocabFingerprint,
    /// The mask at the start of a document, shared by every matcher made from this.
    pub(crate) start: StartMask,
}

impl CompiledGrammar {
    /// Bundles tables and an automaton built for `vocab`, and walks for the first mask.
    pub fn new(tables: Arc<Tables>, dwa: Arc<Dwa>, vocab: &Vocab) -> Self {
        Self::with_fingerprint(tables, dwa, VocabFingerprint::of(vocab))
    }

    /// [`CompiledGrammar::new`] for a vocabulary known by its fingerprint. The first mask
    /// is computed here, not at a sequence's first `fill_mask`: it is part of the time to
    /// first mask, and a server asks for it as soon as a request's grammar is ready.
    fn with_fingerprint(tables: Arc<Tables>, dwa: Arc<Dwa>, vocab: VocabFingerprint) -> Self {
        let start = StartMask::default();
        start.get_or_fill(&GlrState::new(tables.clone()), &dwa);
        Self {
            tables,
            dwa,
            vocab,
            start,
        }
    }

    /// The on-disk form.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(&Payload {
            lexer: self.tables.lexer.clone(),
            follow: self.tables.follow.clone(),
            lr: self.tables.lr.clone(),
            indenter: self.tables.indenter.clone(),
            dwa: (*self.dwa).clone(),
            vocab: self.vocab,
        })
    }

    /// Loads and checks an artifact.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ArtifactError> {
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(ArtifactError::Magic);
        }
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let version = word(8);
        if version != FORMAT_VERSION {
            return Err(ArtifactError::Version {
                found: version,
                expected: FORMAT_VERSION,
            });
        }
        let crc = word(12);
        let mut len = [0u8; 8];
        len.copy_from_slice(&bytes[16..24]);
        let len = u64::from_le_bytes(len);
        let body = &bytes[HEADER..];
        if len != body.len() as u64 || len > MAX_ARTIFACT_BYTES {
            return Err(ArtifactError::Length {
                expected: len,
                found: body.len() as u64,
            });
        }
        if crc32fast::hash(body) != crc {
            return Err(ArtifactError::Checksum);
        }
        let invalid = |e: String| ArtifactError::Invalid(e);
        // The limit keeps a length prefix inside the payload from allocating beyond it.
        let config = bincode::config::standard().with_limit::<{ 4 << 30 }>();
        let (p, used): (Payload, usize) =
            bincode::serde::decode_from_slice(body, config).map_err(|e| invalid(e.to_string()))?;
        if used != body.len() {
            return Err(invalid(format!("{} trailing bytes", body.len() - used)));
        }
        p.lexer.validate().map_err(|e| invalid(e.to_string()))?;
        p.lr.validate().map_err(|e| invalid(e.to_string()))?;
        p.follow
            .validate(p.lexer.num_states(), p.lr.num_terminals())
            .map_err(|e| invalid(e.to_string()))?;
        if let Some((ind, inside)) = &p.indenter {
            let nt = p.lr.num_terminals();
            let terms = [ind.nl, ind.indent, ind.dedent];
            let all = terms.iter().chain(&ind.open).chain(&ind.close);
            if all.clone().any(|t| t.index() >= nt) || ind.tab_len == 0 {
                return Err(invalid("indenter names a terminal the tables lack".into()));
            }
            inside
                .validate(p.lexer.num_states(), nt)
                .map_err(|e| invalid(e.to_string()))?;
        }
        let mut tables =
            Tables::from_parts(p.lexer, p.follow, p.lr).map_err(|e| invalid(e.to_string()))?;
        tables.indenter = p.indenter;
        p.dwa.validate().map_err(|e| invalid(e.to_string()))?;
        if p.dwa.num_lr() != tables.lr.num_states() {
            return Err(invalid(
                "mask automaton and LR tables disagree on states".into(),
            ));
        }
        // Positions are in the automaton's lexer: the recognizer's, with a split's
        // single-terminal states inserted before the run templates.
        let mut nq = tables.lexer.num_states();
        if let Some(split) = p.dwa.split() {
            split
                .validate_lexer(nq, tables.lexer.run_from())
                .map_err(invalid)?;
            nq = split.automaton_lexer_states(nq);
        }
        if p.dwa.positions().iter().any(|sp| match sp.pos {
            LexPos::Pending(q) | LexPos::Boundary(q) => q.index() >= nq,
        }) {
            return Err(invalid(
                "mask automaton names a lexer state the lexer lacks".into(),
            ));
        }
        if p.dwa.vocab_len() != p.vocab.len as usize {
            return Err(invalid(
                "mask automaton and vocabulary fingerprint disagree".into(),
            ));
        }
        p.dwa.prepare_indents();
        Ok(Self::with_fingerprint(
            Arc::new(tables),
            Arc::new(p.dwa),
            p.vocab,
        ))
    }

    /// Checks that `v` is the vocabulary this grammar was compiled for.
    pub fn check_vocab(&self, v: &Vocab) -> Result<(), ArtifactError> {
        let f = VocabFingerprint::of(v);
        if f != self.vocab {
            return Err(ArtifactError::Vocabulary(format!(
                "compiled for {} ids (crc {:08x}), given {} ids (crc {:08x})",
                self.vocab.len, self.vocab.crc, f.len, f.crc
            )));
        }
        Ok(())
    }
}

/// The header and the payload's bytes.
fn encode(payload: &Payload) -> Vec<u8> {
    // Encoding plain in-memory data into a Vec cannot fail.
    let body = bincode::serde::encode_to_vec(payload, bincode::config::standard())
        .expect("encoding into memory");
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{encode, ArtifactError, CompiledGrammar, Payload, VocabFingerprint};
    use crate::compile::dwa::string_split::SplitMode;
    use crate::compile::{build_glr_tables, compile_grammar, GrammarFormat};
    use crate::compile::{Compiler, DwaLimits};
    use crate::ids::LexStateId;
    use crate::lexer::LexPos;

    /// A grammar whose automaton splits string states: two quoted strings alive at once.
    /// Its split single-terminal states lie past the recognizer's lexer states, and
    /// positions there load; a position or a split part past the automaton's lexer does
    /// not.
    #[test]
    fn split_positions_load_and_ids_past_the_automatons_lexer_are_refused() {
        let g = compile_grammar(
            "start: (Q | R | W)+\nW: /[ab]+/\nQ: /\"[ab -]*\"/\nR: /\"a[ab]*\"/\n",
            GrammarFormat::Lark,
        )
        .unwrap();
        let tables = Arc::new(build_glr_tables(&g).unwrap());
        let toks = [
            &b"\"a"[..],
            b"b\"",
            b"a",
            b"-",
            b" ",
            b"\"",
            b"ab",
            b"<eos>",
        ]
        .iter()
        .map(|t| Some(t.to_vec()))
        .collect();
        let vocab = Vocab::from_byte_tokens("t", toks, &[crate::ids::TokenId::new(7)]).unwrap();
        let limits = DwaLimits {
            split: SplitMode::Always,
            ..DwaLimits::default()
        };
        let dwa = Compiler::new(&vocab)
            .with_limits(limits)
            .automaton(&tables)
            .unwrap();
        let split = dwa.split().expect("the string states split").clone();
        let nq = tables.lexer.num_states();
        let beyond = split.automaton_lexer_states(nq);
        assert!(beyond > nq);
        let top = |p: &LexPos| match *p {
            LexPos::Pending(q) | LexPos::Boundary(q) => q.index(),
        };
        assert!(
            dwa.positions().iter().any(|p| top(&p.pos) >= nq),
            "no position in a split state: the case tests nothing"
        );
        let g = CompiledGrammar::new(tables.clone(), Arc::new(dwa.clone()), &vocab);
        let back = CompiledGrammar::from_bytes(&g.to_bytes()).expect("loads back");
        assert_eq!(*back.dwa, dwa);
        let payload = |dwa| Payload {
            lexer: tables.lexer.clone(),
            follow: tables.follow.clone(),
            lr: tables.lr.clone(),
            indenter: None,
            dwa,
            vocab: g.vocab,
        };
        // The last position moved to the first id past the automaton's lexer.
        let mut bad = dwa.clone();
        let last = bad.positions.last_mut().unwrap();
        let q = LexStateId::new(beyond);
        last.pos = match last.pos {
            LexPos::Pending(_) => LexPos::Pending(q),
            LexPos::Boundary(_) => LexPos::Boundary(q),
        };
        let err = CompiledGrammar::from_bytes(&encode(&payload(bad))).unwrap_err();
        assert!(
            matches!(&err, ArtifactError::Invalid(m) if m.contains("lexer state")),
            "{err}"
        );
        // The same position read against a split that inserts no state.
        let mut unsplit = dwa.clone();
        unsplit.split = None;
        assert!(CompiledGrammar::from_bytes(&encode(&payload(unsplit))).is_err());
        // Two positions of one shape whose tables place its classes apart.
        let mut apart = dwa.clone();
        let other = (1..apart.positions.len())
            .find(|&i| {
                let (a, b) = (apart.positions[0].table, apart.positions[i].table);
                let (ta, tb) = (&apart.tables[a as usize], &apart.tables[b as usize]);
                (ta.base, ta.num_classes()) != (tb.base, tb.num_classes())
            })
            .expect("two positions with tables placed apart");
        apart.positions[other].shape = apart.positions[0].shape;
        let err = CompiledGrammar::from_bytes(&encode(&payload(apart))).unwrap_err();
        assert!(
            matches!(&err, ArtifactError::Invalid(m) if m.contains("placed apart")),
            "{err}"
        );
    }

    use crate::ids::TokenId;
    use crate::vocab::Vocab;

    /// The kept fingerprint is each vocabulary's own, asked for once or again, and stays
    /// right after the EOS tokens change (they are not part of it): two vocabularies
    /// that differ in one byte of one token.
    #[test]
    fn kept_fingerprints_are_each_vocabularys_own() {
        let tokens = |last: &[u8]| {
            let mut t: Vec<Option<Vec<u8>>> = (0u8..200).map(|b| Some(vec![b, b'x'])).collect();
            t.push(None);
            t.push(Some(last.to_vec()));
            t
        };
        let mut a = Vocab::from_byte_tokens("a", tokens(b"end"), &[TokenId::new(3)]).unwrap();
        let b = Vocab::from_byte_tokens("b", tokens(b"enD"), &[TokenId::new(3)]).unwrap();
        let fa = VocabFingerprint::of(&a);
        assert_eq!(fa, VocabFingerprint::compute(&a));
        assert_eq!(VocabFingerprint::of(&a), fa);
        let fb = VocabFingerprint::of(&b);
        assert_eq!(fb, VocabFingerprint::compute(&b));
        assert_ne!(fa, fb);
        a.set_eos(&[TokenId::new(201)]).unwrap();
        assert_eq!(VocabFingerprint::of(&a), VocabFingerprint::compute(&a));
        assert_eq!(VocabFingerprint::of(&a), fa);
    }
}

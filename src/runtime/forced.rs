//! Fast-forward: the bytes the grammar forces next, and a token sequence for them that the
//! tokenizer itself would produce. Servers append forced tokens without sampling (jump
//! forward); forcing a token the model would never emit hurts output quality, so the
//! token sequence is the tokenizer's own encoding of the forced text, minus the tokens at
//! its end that the text after it could still merge with.

use crate::ids::TokenId;
use crate::vocab::{Vocab, SPECIAL_MARK};

use super::Matcher;

/// Default bound on forced bytes computed in one call (each byte probes one byte per
/// lexer byte class).
pub const MAX_FORCED_BYTES: usize = 256;

impl Matcher {
    /// The longest byte string every continuation of the document starts with: empty when
    /// the document may end here, when two different next bytes are possible, or after
    /// EOS. At most `max_len` bytes. Read-only; each byte costs one trial commit per lexer
    /// byte class.
    pub fn forced_bytes(&self, max_len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        if self.is_terminated() {
            return out;
        }
        let mut state = self.glr().clone();
        // Bytes of one lexer byte class lead to the same lexer states, so the recognizer
        // treats them alike: probing one byte per class decides them all, and a viable
        // class of several bytes is already a choice.
        let lexer = &state.tables().lexer;
        let mut class_size = vec![0usize; lexer.num_classes()];
        let mut reps: Vec<Option<u8>> = vec![None; lexer.num_classes()];
        for b in 0..=255u8 {
            let c = lexer.class(b) as usize;
            class_size[c] += 1;
            reps[c].get_or_insert(b);
        }
        while out.len() < max_len && !state.is_accepting() {
            let mut only = None;
            for (c, rep) in reps.iter().enumerate() {
                let Some(b) = *rep else { continue };
                let mut probe = state.clone();
                if probe.commit_bytes(&[b]).is_ok() {
                    if only.is_some() || class_size[c] > 1 {
                        return out;
                    }
                    only = Some((b, probe));
                }
            }
            match only {
                Some((b, next)) => {
                    out.push(b);
                    state = next;
                }
                // No byte continues: the document is stuck (a dead end one terminal
                // later); nothing can be forced.
                None => return out,
            }
        }
        out
    }

    /// Tokens for [`Matcher::forced_bytes`] that the tokenizer would produce itself: the
    /// canonical encoding of the forced text, without its last token (the text after the
    /// forced part may merge with it), truncated to what this matcher accepts. A forced
    /// special token (its whole lexeme, `vocab::special_lexeme`) is that token, and the
    /// text before it is encoded whole (tokenizers split text at special tokens). Stops
    /// early when the vocabulary has no encoder, or when an encoding does not spell its
    /// text exactly (e.g. an encoder that prepends a space).
    pub fn forced_tokens(&self, vocab: &Vocab, max_len: usize) -> Vec<TokenId> {
        let bytes = self.forced_bytes(max_len);
        let mut ids = Vec::new();
        let mut rest = &bytes[..];
        loop {
            let cut = rest
                .iter()
                .position(|&b| b == SPECIAL_MARK)
                .unwrap_or(rest.len());
            let (text, after) = rest.split_at(cut);
            // A whole lexeme after the text: the special token's name and what follows.
            let special = after.strip_prefix(&[SPECIAL_MARK]).and_then(|a| {
                a.iter()
                    .position(|&b| b == SPECIAL_MARK)
                    .map(|e| (&a[..e], &a[e + 1..]))
            });
            // Only whole characters can be encoded; a forced partial UTF-8 sequence at
            // the end stays unforced.
            let text = match std::str::from_utf8(text) {
                Ok(s) => s,
                Err(e) if special.is_none() => {
                    std::str::from_utf8(&text[..e.valid_up_to()]).unwrap_or_default()
                }
                Err(_) => break,
            };
            if !text.is_empty() {
                let Ok(mut part) = vocab.encode(text) else {
                    break;
                };
                if vocab.decode_bytes(&part).ok().as_deref() != Some(text.as_bytes()) {
                    break;
                }
                if special.is_none() {
                    part.pop();
                }
                ids.extend(part);
            }
            let Some((name, tail)) = special else {
                break;
            };
            let Some(&(id, _)) = vocab
                .special_tokens()
                .iter()
                .find(|(_, n)| n.as_bytes() == name)
            else {
                break;
            };
            ids.push(id);
            rest = tail;
        }
        let ok = self.validate_tokens(vocab, &ids);
        ids.truncate(ok);
        ids
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::compile::Compiler;
    use crate::compile::{build_glr_tables, compile_grammar, GrammarFormat};
    use crate::ids::TokenId;
    use crate::runtime::Matcher;
    use crate::vocab::Vocab;

    fn matcher(grammar: &str, tokens: &[&str]) -> (Matcher, Vocab) {
        let g = compile_grammar(grammar, GrammarFormat::Lark).unwrap();
        let tables = Arc::new(build_glr_tables(&g).unwrap());
        let mut toks: Vec<Option<Vec<u8>>> =
            tokens.iter().map(|t| Some(t.as_bytes().to_vec())).collect();
        toks.push(Some(b"<eos>".to_vec()));
        let eos = TokenId::new(tokens.len());
        let vocab = Vocab::from_byte_tokens("test", toks, &[eos]).unwrap();
        let dwa = Arc::new(Compiler::new(&vocab).automaton(&tables).unwrap());
        (Matcher::new(tables, dwa), vocab)
    }

    #[test]
    fn forced_bytes_stop_at_choices_and_at_possible_ends() {
        let g = "start: \"{\\\"name\\\": \" NAME \"}\"\nNAME: /[a-z]+/\n";
        let (mut m, _) = matcher(g, &["{", "\"", "name", ": ", "a", "}"]);
        assert_eq!(m.forced_bytes(256), b"{\"name\": ");
        assert_eq!(m.forced_bytes(3), b"{\"n");
        m.commit_bytes(b"{\"name\": a").unwrap();
        // `a` may grow or be followed by `}`: two next bytes, nothing forced.
        assert_eq!(m.forced_bytes(256), b"");
        m.commit_bytes(b"}").unwrap();
        // The document may end here.
        assert!(m.is_accepting());
        assert_eq!(m.forced_bytes(256), b"");
    }

    #[test]
    fn forced_bytes_are_a_prefix_of_every_completion() {
        // Ambiguous and with a multi-byte character forced: `é` is two bytes.
        let g = "start: \"é\" x\nx: \"ab\" \"c\" | \"ab\" \"d\" | \"ab\" \"c\" \"d\"\n";
        let (m, _) = matcher(g, &["é", "ab", "c", "d"]);
        assert_eq!(m.forced_bytes(256), "éab".as_bytes());
    }
}

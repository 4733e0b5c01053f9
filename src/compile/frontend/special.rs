//! Special tokens named in rules, as llguidance's Lark dialect and GBNF write them:
//! `<|tool_call|>` (any text between `<` and `>`: the token's name in the tokenizer) or
//! `<[128010]>` (one token id). Each becomes a terminal whose one lexeme only that token
//! produces (`vocab::special_lexeme`); the compiler checks it against the tokenizer
//! (`Grammar::resolve_special_tokens`).

use crate::compile::error::{GrammarError, Span};
use crate::compile::grammar::ir::{Priority, Terminal};

/// Reads a special token from grammar text, `next` giving its characters from the `<`
/// on, up to the `>` on the same line, and checks it as [`written`] does.
pub(crate) fn read(
    mut next: impl FnMut() -> Option<char>,
    span: Span,
) -> Result<String, GrammarError> {
    let mut text = String::new();
    loop {
        match next() {
            Some('>') => {
                text.push('>');
                return written(&text, span);
            }
            Some('\n') | None => {
                return Err(GrammarError::Syntax {
                    span,
                    message: "unclosed `<` (a special token is `<|name|>` or `<[id]>` on one line)"
                        .into(),
                })
            }
            Some(c) => text.push(c),
        }
    }
}

/// Checks a special token as written, `<` and `>` included, and returns it as the
/// terminal will name it. Id lists, ranges, negations and wildcards (`<[1,2]>`,
/// `<[0-9]>`, `<[^5]>`, `<[*]>`: sets of tokens, not one token's bytes) are refused.
pub(crate) fn written(text: &str, span: Span) -> Result<String, GrammarError> {
    let inner = text
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .filter(|t| !t.is_empty() && !t.contains(['<', '>']) && !t.chars().any(char::is_whitespace))
        .ok_or_else(|| GrammarError::Syntax {
            span,
            message: format!(
                "`{text}` is not a special token: write `<|name|>` (the tokenizer's name) or `<[id]>`"
            ),
        })?;
    if let Some(ids) = inner.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        if ids.is_empty() || !ids.bytes().all(|b| b.is_ascii_digit()) {
            return Err(GrammarError::Unsupported {
                span,
                construct: text.to_string(),
                reason: "a token set (id list, range, negation or wildcard) is not one token's \
                         text; name one special token, `<[id]>`"
                    .into(),
            });
        }
        let id: u32 = ids.parse().map_err(|_| GrammarError::Syntax {
            span,
            message: format!("`{text}`: a token id is below 2^32"),
        })?;
        return Ok(format!("<[{id}]>"));
    }
    Ok(text.to_string())
}

/// The terminal of special token `name` (from [`written`]), first named at `span`.
pub(crate) fn terminal(name: &str, span: Span) -> Terminal {
    let literal = Priority {
        user: 0,
        literal: true,
    };
    Terminal {
        special: Some(name.to_string()),
        ..Terminal::new(name.to_string(), regex_syntax::escape(name), literal, span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_single_ids_are_taken_and_token_sets_refused() {
        let at = Span { line: 1, col: 1 };
        assert_eq!(written("<|tool_call|>", at).unwrap(), "<|tool_call|>");
        assert_eq!(written("<[0128010]>", at).unwrap(), "<[128010]>");
        for set in ["<[1,2]>", "<[0-9]>", "<[^5]>", "<[*]>", "<[]>"] {
            assert!(
                matches!(written(set, at), Err(GrammarError::Unsupported { .. })),
                "{set}"
            );
        }
        for bad in ["<>", "<a b>", "<[99999999999]>"] {
            assert!(
                matches!(written(bad, at), Err(GrammarError::Syntax { .. })),
                "{bad}"
            );
        }
    }
}

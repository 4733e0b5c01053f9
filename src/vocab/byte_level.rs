//! The GPT-2 byte↔unicode table used by byte-level BPE vocabularies (GPT-2, Llama-3,
//! Qwen2, cl100k, o200k).
//!
//! Byte-level BPE stores every byte as a printable character so that vocabulary files are
//! valid UTF-8: the 188 printable Latin-1 bytes stand for themselves, and the other 68 bytes
//! are shifted to U+0100.. in byte order. The `tokenizers` crate keeps this table private, so
//! we rebuild it here; `tests` check it against the bytes of real token strings.

/// Whether byte `b` is one of the bytes the table maps to itself.
fn is_direct(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The character that byte-level BPE uses for byte `b`.
pub fn byte_to_char(b: u8) -> char {
    if is_direct(b) {
        return char::from(b);
    }
    // Non-printable bytes take U+0100 + (their rank among non-printable bytes).
    let rank = (0..b).filter(|&x| !is_direct(x)).count() as u32;
    // 256 + rank < 256 + 68 is always a valid scalar value.
    char::from_u32(256 + rank).expect("U+0100..U+0143 are scalar values")
}

/// The inverse table: character → byte, for the 256 characters of the alphabet.
#[derive(Debug, Clone)]
pub struct ByteLevelDecoder {
    /// Indexed by the character's code point; only code points < 324 occur.
    table: Vec<Option<u8>>,
}

impl Default for ByteLevelDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ByteLevelDecoder {
    /// Builds the inverse of [`byte_to_char`].
    pub fn new() -> Self {
        let mut table = vec![None; 324];
        for b in 0..=255u8 {
            table[byte_to_char(b) as usize] = Some(b);
        }
        Self { table }
    }

    /// The bytes a byte-level token string stands for, or `None` if some character is not
    /// in the alphabet (such strings, e.g. added tokens, stand for their own UTF-8 bytes).
    pub fn decode(&self, s: &str) -> Option<Vec<u8>> {
        s.chars()
            .map(|c| self.table.get(c as usize).copied().flatten())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_a_bijection_with_known_points() {
        let d = ByteLevelDecoder::new();
        let mut seen = std::collections::HashSet::new();
        for b in 0..=255u8 {
            let c = byte_to_char(b);
            assert!(seen.insert(c), "char {c:?} used twice");
            assert_eq!(d.decode(&c.to_string()), Some(vec![b]));
        }
        // Well-known points of the GPT-2 alphabet.
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
        assert_eq!(byte_to_char(0), '\u{100}');
        assert_eq!(byte_to_char(0xAD), '\u{143}');
        assert_eq!(d.decode("é"), Some(vec![0xE9]));
        assert_eq!(d.decode("中"), None);
    }
}

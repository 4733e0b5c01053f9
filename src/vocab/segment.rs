//! Random segmentations of a byte string into vocabulary tokens: the non-canonical token
//! sequences a model may produce, used to test that masks do not depend on tokenization.

use hashbrown::HashMap;

use super::{Vocab, VocabError};
use crate::ids::TokenId;
use crate::rng::SplitMix64;

/// Splits `bytes` into normal tokens, choosing uniformly at each position among the tokens
/// that match there and still leave a segmentable rest. Errors if no segmentation exists.
pub fn random_segmentation(
    vocab: &Vocab,
    bytes: &[u8],
    seed: u64,
) -> Result<Vec<TokenId>, VocabError> {
    let by_bytes: HashMap<&[u8], TokenId> = vocab.mask_tokens().map(|(id, b)| (b, id)).collect();
    let max_len = vocab.max_token_len();
    let n = bytes.len();
    // can[i]: bytes[i..] can be segmented.
    let mut can = vec![false; n + 1];
    can[n] = true;
    for i in (0..n).rev() {
        can[i] =
            (1..=max_len.min(n - i)).any(|l| can[i + l] && by_bytes.contains_key(&bytes[i..i + l]));
    }
    if !can[0] {
        return Err(VocabError::Encode(
            "no segmentation of the text into this vocabulary's tokens".into(),
        ));
    }
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let choices: Vec<(usize, TokenId)> = (1..=max_len.min(n - i))
            .filter(|&l| can[i + l])
            .filter_map(|l| by_bytes.get(&bytes[i..i + l]).map(|&id| (l, id)))
            .collect();
        // can[i] guarantees at least one choice.
        let (l, id) = choices[rng.below(choices.len())];
        out.push(id);
        i += l;
    }
    Ok(out)
}

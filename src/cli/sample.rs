//! `stackmask sample`: random documents, token by token, each token drawn uniformly from
//! the current mask.

use std::io::Write;

use stackmask::compile::dwa_build::{build_dwa_limited, DwaLimits};
use stackmask::glr::walk::{self, SortedTokens};
use stackmask::glr::GlrState;
use stackmask::ids::TokenId;
use stackmask::rng::SplitMix64;
use stackmask::runtime::mask_set;

use super::load::{self, GrammarArgs, TokenizerArgs};
use super::stdout::Stop;

/// Options of `sample`.
pub struct SampleArgs<'a> {
    pub grammar: &'a GrammarArgs,
    pub tokenizer: &'a TokenizerArgs,
    pub n: usize,
    pub seed: u64,
    pub max_tokens: usize,
    pub eos_chance: f64,
}

/// Prints `n` documents; returns whether all of them are complete.
pub fn run(a: SampleArgs) -> Result<bool, String> {
    let vocab = load::vocab(a.tokenizer)?;
    let loaded = load::grammar(a.grammar, &vocab)?;
    if vocab.eos().is_empty() {
        return Err("the tokenizer has no EOS token; name one with --eos".into());
    }
    let sorted = SortedTokens::new(&vocab);
    // Masks from the mask automaton when it builds; the slow path otherwise.
    let dwa = build_dwa_limited(
        &loaded.tables,
        &vocab,
        DwaLimits {
            max_states: 200_000,
            ..DwaLimits::default()
        },
    )
    .ok();
    let mut rng = SplitMix64::new(a.seed);
    let mut all_complete = true;
    let mut stdout = std::io::stdout().lock();
    for k in 0..a.n {
        let mut state = GlrState::new(loaded.tables.clone());
        let mut out: Vec<u8> = Vec::new();
        let mut complete = false;
        for _ in 0..a.max_tokens {
            let allowed: Vec<TokenId> = match &dwa {
                Some(d) => mask_set(&state, d)
                    .into_iter()
                    .map(TokenId::from_u32)
                    .collect(),
                None => {
                    let mask = walk::mask(&state, &sorted);
                    (0..vocab.len())
                        .map(TokenId::new)
                        .filter(|t| mask[t.index() / 32] >> (t.index() % 32) & 1 == 1)
                        .collect()
                }
            };
            let eos_ok = state.is_accepting();
            let normal: Vec<TokenId> = allowed
                .into_iter()
                .filter(|t| !vocab.eos().contains(t))
                .collect();
            if eos_ok && (normal.is_empty() || rng.chance(a.eos_chance)) {
                complete = true;
                break;
            }
            if normal.is_empty() {
                return Err("internal error: a viable state allowed no token".into());
            }
            let t = normal[rng.below(normal.len())];
            let bytes = vocab.token_bytes(t).map_err(|e| e.to_string())?;
            state
                .commit_bytes(bytes)
                .map_err(|e| format!("internal error: a token from the mask was rejected: {e}"))?;
            out.extend_from_slice(bytes);
        }
        if !complete && state.is_accepting() {
            complete = true;
        }
        all_complete &= complete;
        let written = writeln!(
            stdout,
            "--- sample {} ({}){}\n{}",
            k + 1,
            if complete {
                "complete"
            } else {
                "incomplete: hit --max-tokens"
            },
            if out.is_empty() {
                " (empty document)"
            } else {
                ""
            },
            String::from_utf8_lossy(&out)
        )
        .and_then(|()| stdout.flush());
        match written.map_err(Stop::from) {
            Ok(()) => {}
            // A reader that has seen enough (`sample --n 1000 | head`): stop quietly.
            Err(Stop::Closed) => break,
            Err(Stop::Failed(m)) => return Err(m),
        }
    }
    Ok(all_complete)
}

//! `stackmask sample`: documents generated token by token from the masks, each printed
//! with its token count and the latencies of its masks and commits.
//!
//! A uniform draw over a 200K-token mask picks rare tokens (non-ASCII pieces, long runs of
//! spaces), so the draw here stands in for a model with a crude prior: it first picks a
//! kind of token (punctuation, word, number, space, other) among the kinds the mask
//! allows, weighted, then a token of that kind uniformly. Past a third of `--max-tokens`
//! it prefers tokens that close brackets and strings, so documents end. The mask decides
//! what is allowed; the prior only decides among allowed tokens.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use stackmask::compile::DwaLimits;
use stackmask::glr::walk::VocabWalk;
use stackmask::glr::GlrState;
use stackmask::ids::TokenId;
use stackmask::rng::SplitMix64;
use stackmask::runtime::{CompiledGrammar, Matcher};
use stackmask::vocab::Vocab;

use super::load::{self, GrammarArgs, TokenizerArgs};
use super::stats::Dist;
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

/// The kinds of token the draw picks among.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Only bracket, quote, colon and comma characters (and one space before them).
    Punct,
    /// A lowercase word of 2 to 8 letters, with at most one space before it.
    Word,
    /// One to three digits.
    Number,
    /// A single space.
    Space,
    /// Anything else that is printable ASCII.
    Other,
    /// Never drawn: EOS (decided apart), non-ASCII, control bytes, runs of spaces.
    Never,
}

const KINDS: [Kind; 5] = [
    Kind::Punct,
    Kind::Word,
    Kind::Number,
    Kind::Space,
    Kind::Other,
];

impl Kind {
    fn of(bytes: &[u8]) -> Kind {
        let core = bytes.strip_prefix(b" ").unwrap_or(bytes);
        let all = |f: fn(&u8) -> bool| !core.is_empty() && core.iter().all(f);
        if bytes.is_empty() || !bytes.iter().all(|b| (0x20..0x7f).contains(b)) {
            Kind::Never
        } else if core.is_empty() {
            Kind::Space
        } else if all(|b| b"{}[]:,\"".contains(b)) {
            Kind::Punct
        } else if all(u8::is_ascii_lowercase) && (2..=8).contains(&core.len()) {
            Kind::Word
        } else if all(u8::is_ascii_digit) && core.len() <= 3 && core.len() == bytes.len() {
            Kind::Number
        } else if core.starts_with(b" ") {
            Kind::Never
        } else {
            Kind::Other
        }
    }

    /// The kind's weight inside a string (`true`) or between values.
    fn weight(self, in_string: bool) -> f64 {
        match (self, in_string) {
            (Kind::Punct, false) => 3.0,
            // Inside a string only tokens that start by closing it count as punctuation.
            (Kind::Punct, true) => 1.5,
            (Kind::Word, true) => 3.0,
            (Kind::Word, false) => 0.5,
            (Kind::Number, true) => 0.1,
            (Kind::Number, false) => 0.5,
            (Kind::Space, true) => 0.05,
            (Kind::Space, false) => 0.3,
            (Kind::Other, _) => 0.05,
            (Kind::Never, _) => 0.0,
        }
    }
}

/// Where JSON text stands: inside a string or not, and how many brackets are open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Scan {
    inside: bool,
    escaped: bool,
    depth: i32,
}

impl Scan {
    /// The scan after `bytes` more.
    fn then(mut self, bytes: &[u8]) -> Scan {
        for &b in bytes {
            if self.escaped {
                self.escaped = false;
            } else if self.inside && b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.inside = !self.inside;
            } else if !self.inside && (b == b'{' || b == b'[') {
                self.depth += 1;
            } else if !self.inside && (b == b'}' || b == b']') {
                self.depth -= 1;
            }
        }
        self
    }
}

/// Whether punctuation token `bytes`, read from inside a string (`inside`) or not, puts
/// no bracket, colon or comma inside a string and makes no empty string: JSON-looking
/// structure, not `"],[` or `""` as a key.
fn clean(bytes: &[u8], mut inside: bool) -> bool {
    if bytes.windows(2).any(|w| w == b"\"\"") {
        // An empty string: a key or value that says nothing.
        return false;
    }
    for &b in bytes {
        if b == b'"' {
            inside = !inside;
        } else if inside && b != b' ' {
            return false;
        }
    }
    true
}

/// Whether a token only closes (`}`, `]` and `"`, after optional spaces); inside a
/// string, whether it starts with the closing quote.
fn closes(bytes: &[u8], in_string: bool) -> bool {
    if in_string {
        return bytes.first() == Some(&b'"');
    }
    let core: &[u8] = &bytes[bytes.iter().take_while(|&&b| b == b' ').count()..];
    !core.is_empty() && core.iter().all(|b| b"}]\"".contains(b))
}

/// Draws among the allowed tokens (`mask`, one bit per token) after the text `out`: a
/// kind, then a token of it; at `pressure` > 0, tokens that close are preferred that
/// many times over, and a document starts with `{` when it can.
fn draw(
    mask: &[u32],
    kinds: &[Kind],
    vocab: &Vocab,
    out: &[u8],
    pressure: f64,
    rng: &mut SplitMix64,
) -> Option<TokenId> {
    let scan = Scan::default().then(out);
    let inside = scan.inside;
    // Nothing written in the string yet: closing it now would make an empty one.
    let fresh_string = inside && out.last() == Some(&b'"');
    let mut by_kind: [Vec<TokenId>; 5] = Default::default();
    let (mut closing, mut opening, mut fallback) = (Vec::new(), Vec::new(), Vec::new());
    for (w, &bits) in mask.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            let t = TokenId::new(w * 32 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
            let (Some(&k), Ok(bytes)) = (kinds.get(t.index()), vocab.token_bytes(t)) else {
                continue;
            };
            let Some(i) = KINDS.iter().position(|&x| x == k) else {
                continue;
            };
            fallback.push(t);
            if k == Kind::Punct
                && (!clean(bytes, inside)
                    || (inside && (fresh_string || !closes(bytes, true)))
                    // Before the pressure starts, the document is not closed.
                    || (pressure == 0.0 && scan.depth > 0 && scan.then(bytes).depth <= 0))
            {
                continue;
            }
            by_kind[i].push(t);
            if k == Kind::Punct && closes(bytes, inside) {
                closing.push(t);
            }
            if out.is_empty() && bytes == b"{" {
                opening.push(t);
            }
        }
    }
    if !opening.is_empty() {
        return Some(opening[0]);
    }
    if !closing.is_empty() && rng.chance(1.0 - 1.0 / (1.0 + pressure)) {
        return Some(closing[rng.below(closing.len())]);
    }
    let total: f64 = KINDS
        .iter()
        .zip(&by_kind)
        .filter(|(_, ts)| !ts.is_empty())
        .map(|(k, _)| k.weight(inside))
        .sum();
    let mut x = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
    for (k, ts) in KINDS.iter().zip(&by_kind) {
        if ts.is_empty() {
            continue;
        }
        x -= k.weight(inside);
        if x <= 0.0 {
            return Some(ts[rng.below(ts.len())]);
        }
    }
    by_kind
        .iter()
        .rev()
        .find(|ts| !ts.is_empty())
        .map(|ts| ts[0])
        .or_else(|| (!fallback.is_empty()).then(|| fallback[rng.below(fallback.len())]))
}

/// How masks are made: the mask automaton, or (when it does not build within its limits)
/// the slow path that walks the vocabulary.
enum Masks {
    Automaton(CompiledGrammar),
    Walk(VocabWalk),
}

/// One document's decoding state under [`Masks`].
enum Sequence<'a> {
    Automaton(Box<Matcher>),
    Walk(GlrState, &'a VocabWalk, &'a Vocab),
}

impl Sequence<'_> {
    fn fill_mask(&mut self, mask: &mut Vec<u32>) -> Result<(), String> {
        match self {
            Sequence::Automaton(m) => m.fill_mask(mask).map_err(|e| e.to_string()),
            Sequence::Walk(g, walk, vocab) => {
                *mask = walk.mask(g, vocab);
                Ok(())
            }
        }
    }

    fn is_accepting(&self) -> bool {
        match self {
            Sequence::Automaton(m) => m.is_accepting(),
            Sequence::Walk(g, ..) => g.is_accepting(),
        }
    }

    fn commit(&mut self, vocab: &Vocab, t: TokenId) -> Result<(), String> {
        match self {
            Sequence::Automaton(m) => m.commit(vocab, t).map_err(|e| e.to_string()),
            Sequence::Walk(g, ..) => g.commit_token(vocab, t).map_err(|e| e.to_string()),
        }
    }
}

/// Prints `n` documents; returns whether all of them are complete.
pub fn run(a: SampleArgs) -> Result<bool, String> {
    let vocab = load::vocab(a.tokenizer)?;
    let loaded = load::grammar(a.grammar, &vocab)?;
    if vocab.eos().is_empty() {
        return Err("the tokenizer has no EOS token; name one with --eos".into());
    }
    let t0 = Instant::now();
    let limits = DwaLimits {
        max_states: 200_000,
        ..DwaLimits::default()
    };
    let masks = match a
        .grammar
        .compiler(&vocab)
        .with_limits(limits)
        .automaton(&loaded.tables)
    {
        Ok(d) => Masks::Automaton(CompiledGrammar::new(
            loaded.tables.clone(),
            Arc::new(d),
            &vocab,
        )),
        Err(_) => Masks::Walk(VocabWalk::new(loaded.tables.clone())),
    };
    let automaton_ms = t0.elapsed().as_secs_f64() * 1e3;
    let kinds: Vec<Kind> = (0..vocab.len())
        .map(|i| {
            let t = TokenId::new(i);
            match vocab.token_bytes(t) {
                Ok(b) if !vocab.eos().contains(&t) => Kind::of(b),
                _ => Kind::Never,
            }
        })
        .collect();
    let mut stdout = std::io::stdout().lock();
    let header = match &masks {
        Masks::Automaton(_) => format!(
            "# {} × {} ({} tokens): tables {:.1} ms, mask automaton {:.1} ms",
            a.grammar.grammar,
            vocab.name(),
            vocab.len(),
            loaded.compile_ms,
            automaton_ms
        ),
        Masks::Walk(_) => format!(
            "# {} × {} ({} tokens): tables {:.1} ms; the mask automaton exceeds its limits, \
             masks walk the vocabulary (slow path)",
            a.grammar.grammar,
            vocab.name(),
            vocab.len(),
            loaded.compile_ms
        ),
    };
    if let Err(e) = writeln!(stdout, "{header}").map_err(Stop::from) {
        return match e {
            Stop::Closed => Ok(true),
            Stop::Failed(m) => Err(m),
        };
    }
    let mut rng = SplitMix64::new(a.seed);
    let mut all_complete = true;
    let mut mask = vec![0u32; vocab.len().div_ceil(32)];
    let soft = (a.max_tokens / 3).max(1);
    for k in 0..a.n {
        let mut m = match &masks {
            Masks::Automaton(g) => Sequence::Automaton(Box::new(Matcher::from_compiled(g))),
            Masks::Walk(walk) => Sequence::Walk(GlrState::new(loaded.tables.clone()), walk, &vocab),
        };
        let mut out: Vec<u8> = Vec::new();
        let (mut mask_us, mut commit_us) = (Vec::new(), Vec::new());
        let mut complete = false;
        for step in 0..a.max_tokens {
            let t0 = Instant::now();
            m.fill_mask(&mut mask)?;
            mask_us.push(t0.elapsed().as_secs_f64() * 1e6);
            let pressure = step.saturating_sub(soft) as f64 / soft as f64 * 4.0;
            if m.is_accepting() && rng.chance(a.eos_chance.max(pressure.min(1.0))) {
                complete = true;
                break;
            }
            let Some(t) = draw(&mask, &kinds, &vocab, &out, pressure, &mut rng) else {
                complete = m.is_accepting();
                break;
            };
            let t0 = Instant::now();
            m.commit(&vocab, t)
                .map_err(|e| format!("internal error: a token from the mask was rejected: {e}"))?;
            commit_us.push(t0.elapsed().as_secs_f64() * 1e6);
            out.extend_from_slice(vocab.token_bytes(t).map_err(|e| e.to_string())?);
        }
        complete |= m.is_accepting();
        all_complete &= complete;
        let dist = |v: &mut Vec<f64>| {
            Dist::of(v).map_or("-".to_string(), |d| {
                format!("p50 {:.1} max {:.1}", d.p50, d.max)
            })
        };
        let written = writeln!(
            stdout,
            "--- sample {}: {}, {} tokens; mask µs {}; commit µs {}\n{}",
            k + 1,
            if complete {
                "complete"
            } else {
                "incomplete (hit --max-tokens)"
            },
            commit_us.len(),
            dist(&mut mask_us),
            dist(&mut commit_us),
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

#[cfg(test)]
mod tests {
    use super::{clean, closes, Kind, Scan};

    fn in_string(out: &[u8]) -> bool {
        Scan::default().then(out).inside
    }

    #[test]
    fn kinds_and_closers() {
        assert_eq!(Kind::of(b"\":"), Kind::Punct);
        assert_eq!(Kind::of(b" {"), Kind::Punct);
        assert_eq!(Kind::of(b" name"), Kind::Word);
        assert_eq!(Kind::of(b"a"), Kind::Other);
        assert_eq!(Kind::of(b"123"), Kind::Number);
        assert_eq!(Kind::of(b" 12"), Kind::Other);
        assert_eq!(Kind::of(b" "), Kind::Space);
        assert_eq!(Kind::of(b"   "), Kind::Never);
        assert_eq!(Kind::of("é".as_bytes()), Kind::Never);
        assert_eq!(Kind::of(b"\n"), Kind::Never);
        assert!(closes(b" }]", false));
        assert!(closes(b"\"", false));
        assert!(!closes(b"\",", false));
        assert!(closes(b"\",", true));
        assert!(!closes(b" ", false));
        assert!(clean(b"\":", true) && clean(b" {\"", false) && clean(b"\":\"", true));
        assert!(!clean(b"\"],", false) && !clean(b"\",[", false) && !clean(b"\"\"", false));
        assert!(in_string(br#"{"a\"b"#));
        assert!(!in_string(br#"{"a\\": "#));
        assert_eq!(Scan::default().then(br#"{"a": [1, {"]":"#).depth, 3);
    }
}

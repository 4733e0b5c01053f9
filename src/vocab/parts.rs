//! The mask tokens of a vocabulary (`Vocab::mask_tokens`) as byte tries, one per *part* (first byte × length
//! bucket): the form in which build-time passes walk the whole vocabulary through a lexer.
//!
//! Every mask automaton build lexes every token from a few lexer states. Walking a trie
//! in preorder lexes each shared prefix once and skips a dead prefix's whole subtree in
//! one step; keeping the trie here, computed once per vocabulary, means a build neither
//! sorts, copies nor compares token bytes (chasing 128K token slices in byte order was
//! most of the walking cost). Length buckets are powers of two up to the longest token:
//! lexer states alike to a bucket's depth lex its tokens alike, so walks can be shared
//! per bucket (`compile::dwa::terminal_trie::WalkShare`).
//!
//! Depends only on the vocabulary's bytes and kinds.

use crate::ids::TokenId;

/// The mask tokens as one preorder byte trie per part (tokens sharing a first byte and
/// a length bucket).
///
/// Invariants: part `j` (`first byte * buckets() + bucket`) owns nodes
/// `part_nodes[j]..part_nodes[j + 1]`, its root (depth 1, the first byte) first when the
/// part is not empty; a node's subtree is `n..end[n]`; `first[n]` is the ordinal of the
/// first token in `n`'s subtree in preorder (= byte order within the part), so the tokens
/// ending exactly at `n` are ordinals `first[n]..first[n + 1]` (`first` has a sentinel);
/// ordinals run over the parts in order, and `ids[o]` is ordinal `o`'s token.
#[derive(Debug, Clone, Default)]
pub struct TokenParts {
    bounds: Vec<usize>,
    longest: usize,
    part_nodes: Vec<u32>,
    byte: Vec<u8>,
    depth: Vec<u32>,
    end: Vec<u32>,
    first: Vec<u32>,
    /// Per node, the [`byte_category`] set of the bytes strictly below it.
    below: Vec<u64>,
    /// Per node, the most bytes a token of its subtree has below it.
    height: Vec<u8>,
    /// Bit `n`: every token of node `n`'s subtree continues past `n` with whole, well-formed
    /// UTF-8 characters only (see [`TokenParts::whole_chars_below`]).
    whole_chars: Vec<u64>,
    ids: Vec<TokenId>,
    /// Per token id, its ordinal (`u32::MAX` for a token not in the parts); as long as
    /// the largest id in the parts plus one.
    ordinal_of: Vec<u32>,
    /// Characters per node and tokens by character count (see
    /// [`TokenParts::no_more_chars_than`]); made on first use.
    chars: std::sync::OnceLock<CharCounts>,
}

/// [`TokenParts`]' character counts: a character is a byte other than a UTF-8
/// continuation byte.
#[derive(Debug, Clone, Default)]
struct CharCounts {
    /// Per node, the characters from its part's root to it, itself included.
    at: Vec<u8>,
    /// Per count `c` up to the most a token has, the ordinals of the tokens of at most
    /// `c` characters, as a bitset.
    no_more: Box<[Box<[u64]>]>,
    /// Per [`byte_category`], the ordinals of the tokens holding a byte of it.
    holding: Box<[Box<[u64]>]>,
}

/// Number of byte categories ([`byte_category`]).
pub const NUM_CATEGORIES: u32 = 43;

/// A coarse partition of bytes into at most 64 categories, so that a subtree's bytes fit
/// one word ([`TokenParts::below`]): each ASCII punctuation character, space, tab, line
/// feed and carriage return alone, then digits, lowercase and uppercase letters, other
/// controls, DEL, UTF-8 continuation bytes and the other non-ASCII bytes. Lexer states
/// that loop on a class of characters (inside a string, an identifier, a number) usually
/// loop on whole categories.
pub const fn byte_category(b: u8) -> u32 {
    match b {
        b'\t' => 0,
        b'\n' => 1,
        b'\r' => 2,
        0x00..=0x1f => 3,
        b' ' => 4,
        b'0'..=b'9' => 5,
        b'a'..=b'z' => 6,
        b'A'..=b'Z' => 7,
        0x7f => 8,
        0x80..=0xbf => 9,
        0xc0..=0xff => 10,
        // The 32 punctuation characters, in order: ! to / (15), : to @ (7), [ to ` (6),
        // { to ~ (4).
        b'!'..=b'/' => 11 + (b - b'!') as u32,
        b':'..=b'@' => 26 + (b - b':') as u32,
        b'['..=b'`' => 33 + (b - b'[') as u32,
        b'{'..=b'~' => 39 + (b - b'{') as u32,
    }
}

/// A strict UTF-8 decoder (no overlong forms, surrogates or code points past U+10FFFF) as
/// a DFA over bytes, its states as bits of a `u8` so that sets of them fold cheaply.
pub struct Utf8;

impl Utf8 {
    /// Between characters.
    pub const BETWEEN: u8 = 1 << 0;
    /// One continuation byte (80–BF) to go.
    const NEED1: u8 = 1 << 1;
    /// Two continuation bytes to go, the first 80–BF.
    const NEED2: u8 = 1 << 2;
    /// After E0: the first continuation byte must be A0–BF (no overlong forms).
    const NEED2_E0: u8 = 1 << 3;
    /// After ED: the first continuation byte must be 80–9F (no surrogates).
    const NEED2_ED: u8 = 1 << 4;
    /// Three continuation bytes to go, the first 80–BF.
    const NEED3: u8 = 1 << 5;
    /// After F0: the first continuation byte must be 90–BF (no overlong forms).
    const NEED3_F0: u8 = 1 << 6;
    /// After F4: the first continuation byte must be 80–8F (nothing past U+10FFFF).
    const NEED3_F4: u8 = 1 << 7;
    /// Every state.
    pub const ALL: u8 = u8::MAX;

    /// The state after byte `b` in state `s` (one bit), or 0 when `b` is not allowed there.
    pub fn step(s: u8, b: u8) -> u8 {
        match (s, b) {
            (Self::BETWEEN, 0x00..=0x7f) => Self::BETWEEN,
            (Self::BETWEEN, 0xc2..=0xdf) => Self::NEED1,
            (Self::BETWEEN, 0xe0) => Self::NEED2_E0,
            (Self::BETWEEN, 0xed) => Self::NEED2_ED,
            (Self::BETWEEN, 0xe1..=0xef) => Self::NEED2,
            (Self::BETWEEN, 0xf0) => Self::NEED3_F0,
            (Self::BETWEEN, 0xf4) => Self::NEED3_F4,
            (Self::BETWEEN, 0xf1..=0xf3) => Self::NEED3,
            (Self::NEED1, 0x80..=0xbf) => Self::BETWEEN,
            (Self::NEED2, 0x80..=0xbf) => Self::NEED1,
            (Self::NEED2_E0, 0xa0..=0xbf) => Self::NEED1,
            (Self::NEED2_ED, 0x80..=0x9f) => Self::NEED1,
            (Self::NEED3, 0x80..=0xbf) => Self::NEED2,
            (Self::NEED3_F0, 0x90..=0xbf) => Self::NEED2,
            (Self::NEED3_F4, 0x80..=0x8f) => Self::NEED2,
            _ => 0,
        }
    }

    /// The states from which byte `b` is allowed and leads into one of `then`.
    fn allowing(b: u8, then: u8) -> u8 {
        (0..8)
            .map(|i| 1u8 << i)
            .filter(|&s| Self::step(s, b) & then != 0)
            .fold(0, |a, s| a | s)
    }
}

impl TokenParts {
    /// Builds the tries of `tokens` (mask tokens with their bytes; empty ones are left
    /// out, since no lexer position can take them).
    pub fn new<'a>(tokens: impl Iterator<Item = (TokenId, &'a [u8])>) -> Self {
        let mut tokens: Vec<(TokenId, &[u8])> = tokens.filter(|(_, b)| !b.is_empty()).collect();
        let longest = tokens
            .iter()
            .map(|(_, b)| b.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut bounds: Vec<usize> = std::iter::successors(Some(2usize), |b| Some(b * 2))
            .take_while(|&b| b < longest)
            .collect();
        bounds.push(longest);
        let nb = bounds.len();
        let part = |b: &[u8]| b[0] as usize * nb + bounds.partition_point(|&x| x < b.len());
        let mut keyed: Vec<(usize, &[u8], TokenId)> =
            tokens.drain(..).map(|(id, b)| (part(b), b, id)).collect();
        keyed.sort_unstable();
        let num_ids = keyed
            .iter()
            .map(|&(_, _, id)| id.index() + 1)
            .max()
            .unwrap_or(0);
        let mut ordinal_of = vec![u32::MAX; num_ids];
        for (o, &(_, _, id)) in keyed.iter().enumerate() {
            ordinal_of[id.index()] = o as u32;
        }
        let mut t = TokenParts {
            ordinal_of,
            bounds: bounds.clone(),
            longest,
            part_nodes: Vec::with_capacity(256 * nb + 1),
            ids: keyed.iter().map(|&(_, _, id)| id).collect(),
            ..Default::default()
        };
        // The open path: node index per depth (index 0 unused).
        let mut path: Vec<u32> = vec![0];
        // Per node, its parent (`u32::MAX` at a root).
        let mut parent: Vec<u32> = Vec::new();
        let mut k = 0usize;
        for j in 0..256 * nb {
            t.close_path(&mut path, 1);
            let mut prev: &[u8] = &[];
            t.part_nodes.push(t.byte.len() as u32);
            while k < keyed.len() && keyed[k].0 == j {
                let bytes = keyed[k].1;
                let lcp = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
                // Equal bytes (duplicates) end at the node the previous token ended at.
                if lcp < bytes.len() {
                    t.close_path(&mut path, lcp + 1);
                    for (d, &byte) in bytes.iter().enumerate().skip(lcp) {
                        path.push(t.byte.len() as u32);
                        t.byte.push(byte);
                        t.depth.push(d as u32 + 1);
                        t.end.push(0);
                        t.first.push(k as u32);
                        parent.push(if d == 0 { u32::MAX } else { path[d] });
                    }
                }
                prev = bytes;
                k += 1;
            }
        }
        t.close_path(&mut path, 1);
        t.part_nodes.push(t.byte.len() as u32);
        t.first.push(keyed.len() as u32);
        // Children follow their parent in preorder: fold bottom-up.
        t.below = vec![0u64; t.byte.len()];
        t.height = vec![0u8; t.byte.len()];
        for n in (0..t.byte.len()).rev() {
            if let Some(&p) = parent.get(n).filter(|&&p| p != u32::MAX) {
                t.below[p as usize] |= t.below[n] | 1 << byte_category(t.byte[n]);
                let h = t.height[n].saturating_add(1);
                t.height[p as usize] = t.height[p as usize].max(h);
            }
        }
        // Per node, the UTF-8 decoder states from which every continuation of the
        // node's tokens decodes to whole characters: tokens ending at the node need the
        // decoder between characters; each child needs its byte to lead to a state the
        // child allows. Children fold into their parent before it folds into its own.
        let mut ok: Vec<u8> = (0..t.byte.len())
            .map(|n| {
                if t.ending_at(n).is_empty() {
                    Utf8::ALL
                } else {
                    Utf8::BETWEEN
                }
            })
            .collect();
        for n in (0..t.byte.len()).rev() {
            if let Some(&p) = parent.get(n).filter(|&&p| p != u32::MAX) {
                ok[p as usize] &= Utf8::allowing(t.byte[n], ok[n]);
            }
        }
        t.whole_chars = vec![0u64; t.byte.len().div_ceil(64)];
        for (n, &m) in ok.iter().enumerate() {
            if m & Utf8::BETWEEN != 0 {
                t.whole_chars[n / 64] |= 1 << (n % 64);
            }
        }
        t
    }

    /// Closes the nodes of `path` at depth `depth` and below: their subtrees end here.
    fn close_path(&mut self, path: &mut Vec<u32>, depth: usize) {
        while path.len() > depth {
            // The loop condition keeps one element (index 0) in the path.
            let n = path.pop().expect("nonempty path");
            self.end[n as usize] = self.byte.len() as u32;
        }
    }

    /// Upper bounds of the length buckets, in bytes: powers of two below the longest
    /// token, then the longest token's length.
    pub fn bounds(&self) -> &[usize] {
        &self.bounds
    }

    /// Length buckets per first byte.
    pub fn buckets(&self) -> usize {
        self.bounds.len()
    }

    /// The longest token's length in bytes (at least 1).
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// Number of parts (`256 * buckets()`).
    pub fn num_parts(&self) -> usize {
        self.part_nodes.len() - 1
    }

    /// The nodes of part `j`, its root first.
    pub fn part_nodes(&self, j: usize) -> std::ops::Range<usize> {
        self.part_nodes[j] as usize..self.part_nodes[j + 1] as usize
    }

    /// The token ordinals of part `j`.
    pub fn part_tokens(&self, j: usize) -> std::ops::Range<usize> {
        let r = self.part_nodes(j);
        self.first[r.start] as usize..self.first[r.end] as usize
    }

    /// True when no token is in part `j`.
    pub fn part_is_empty(&self, j: usize) -> bool {
        self.part_nodes[j] == self.part_nodes[j + 1]
    }

    /// The byte node `n` adds to its parent's prefix.
    #[inline]
    pub fn byte(&self, n: usize) -> u8 {
        self.byte[n]
    }

    /// The length of node `n`'s prefix (1 at a part's root).
    #[inline]
    pub fn depth(&self, n: usize) -> usize {
        self.depth[n] as usize
    }

    /// One past the last node of `n`'s subtree.
    #[inline]
    pub fn subtree_end(&self, n: usize) -> usize {
        self.end[n] as usize
    }

    /// The [`byte_category`] set (bit `c` for category `c`) of every byte in node `n`'s
    /// subtree below `n` itself: a lexer state that loops on all of them leaves every
    /// token of the subtree where it leaves the tokens ending at `n`.
    #[inline]
    pub fn below(&self, n: usize) -> u64 {
        self.below[n]
    }

    /// The most bytes a token of node `n`'s subtree has past `n` (0 when every one ends
    /// there; at most 255).
    #[inline]
    pub fn height(&self, n: usize) -> usize {
        usize::from(self.height[n])
    }

    /// True when every token of node `n`'s subtree continues past `n` with whole,
    /// well-formed UTF-8 characters only (ending at `n` counts): a lexer state that every
    /// non-ASCII character leads back to, and that loops on the ASCII categories of
    /// [`TokenParts::below`], leaves every such token where it leaves those ending at `n`.
    #[inline]
    pub fn whole_chars_below(&self, n: usize) -> bool {
        self.whole_chars[n / 64] >> (n % 64) & 1 != 0
    }

    /// The ordinals of the tokens whose bytes end exactly at node `n`.
    #[inline]
    pub fn ending_at(&self, n: usize) -> std::ops::Range<usize> {
        self.first[n] as usize..self.first[n + 1] as usize
    }

    /// The ordinals of the tokens in node `n`'s subtree (`n` included).
    #[inline]
    pub fn subtree_tokens(&self, n: usize) -> std::ops::Range<usize> {
        self.first[n] as usize..self.first[self.end[n] as usize] as usize
    }

    /// The characters on the path to node `n`, `n` included (a character being a byte
    /// other than a UTF-8 continuation byte).
    pub fn chars_to(&self, n: usize) -> usize {
        usize::from(self.char_counts().at[n])
    }

    /// The ordinals of the tokens of at most `chars` characters, bit `o % 64` of word
    /// `o / 64` (`ceil(len() / 64)` words). The tables (a bitset per count and per
    /// category, 2.7 MB for a 128K vocabulary whose longest token has 128 bytes) are
    /// made by the first call to this, [`Self::chars_to`] or [`Self::holding`].
    pub fn no_more_chars_than(&self, chars: usize) -> &[u64] {
        let no_more = &self.char_counts().no_more;
        &no_more[chars.min(no_more.len() - 1)]
    }

    /// The ordinals of the tokens holding a byte of [`byte_category`] `c` (`c` below
    /// [`NUM_CATEGORIES`]), as [`Self::no_more_chars_than`] lays them out; made with it.
    pub fn holding(&self, c: u32) -> &[u64] {
        &self.char_counts().holding[c as usize]
    }

    /// Makes the character-count tables now (see [`Self::no_more_chars_than`]).
    pub fn prepare(&self) {
        self.char_counts();
    }

    /// Whether [`Self::prepare`]'s tables are made.
    #[cfg(test)]
    pub(crate) fn is_prepared(&self) -> bool {
        self.chars.get().is_some()
    }

    fn char_counts(&self) -> &CharCounts {
        self.chars.get_or_init(|| {
            let mut at = vec![0u8; self.byte.len()];
            // Characters per depth on the current path (preorder: a node's parent is
            // the last node met one level up).
            let mut path = vec![0u8; self.longest + 1];
            // Categories per depth on the current path.
            let mut cats = vec![0u64; self.longest + 1];
            let words = self.len().div_ceil(64);
            let mut holding = vec![vec![0u64; words]; NUM_CATEGORIES as usize];
            for (n, count) in at.iter_mut().enumerate() {
                let d = self.depth[n] as usize;
                let lead = u8::from(!(0x80..0xc0).contains(&self.byte[n]));
                path[d] = path[d - 1] + lead;
                *count = path[d];
                cats[d] = cats[d - 1] | 1 << byte_category(self.byte[n]);
                for o in self.ending_at(n) {
                    let mut c = cats[d];
                    while c != 0 {
                        holding[c.trailing_zeros() as usize][o / 64] |= 1 << (o % 64);
                        c &= c - 1;
                    }
                }
            }
            let most = at.iter().copied().max().unwrap_or(0) as usize;
            let mut no_more = vec![vec![0u64; words]; most + 1];
            for (n, &c) in at.iter().enumerate() {
                for o in self.ending_at(n) {
                    no_more[c as usize][o / 64] |= 1 << (o % 64);
                }
            }
            for c in 1..no_more.len() {
                let (fewer, this) = no_more.split_at_mut(c);
                for (w, &v) in this[0].iter_mut().zip(fewer[c - 1].iter()) {
                    *w |= v;
                }
            }
            CharCounts {
                at,
                no_more: no_more.into_iter().map(Vec::into_boxed_slice).collect(),
                holding: holding.into_iter().map(Vec::into_boxed_slice).collect(),
            }
        })
    }

    /// The token of ordinal `o`.
    #[inline]
    pub fn id(&self, o: usize) -> TokenId {
        self.ids[o]
    }

    /// Every token, by ordinal.
    pub fn ids(&self) -> &[TokenId] {
        &self.ids
    }

    /// The ordinal of token `id`, if it is in the parts.
    #[inline]
    pub fn ordinal(&self, id: TokenId) -> Option<usize> {
        self.ordinal_of
            .get(id.index())
            .filter(|&&o| o != u32::MAX)
            .map(|&o| o as usize)
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when the vocabulary has no normal token with bytes.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every token's bytes back off the tries (root to its node) and checks them
    /// against the input, the parts' order and the subtree ranges.
    #[test]
    fn categories_partition_bytes_into_one_word() {
        let mut seen = vec![false; NUM_CATEGORIES as usize];
        for b in 0..=255u8 {
            let c = byte_category(b);
            assert!(c < NUM_CATEGORIES && NUM_CATEGORIES <= 64, "byte {b}: {c}");
            seen[c as usize] = true;
            if b.is_ascii_punctuation() || b"\t\n\r ".contains(&b) {
                assert!(
                    (0..=255u8).all(|x| x == b || byte_category(x) != c),
                    "{} shares its category",
                    b as char
                );
            }
        }
        assert!(seen.iter().all(|&s| s), "every category is used");
    }

    /// `whole_chars_below` holds exactly when every token of the subtree, past the node,
    /// decodes as UTF-8 by the standard library's strict decoder: on random tokens made of
    /// ASCII, characters of every length and edge (E0 A0, ED 9F, F0 90, F4 8F), and
    /// invalid pieces (overlong, surrogate, past U+10FFFF, lone and missing continuations).
    #[test]
    fn whole_chars_below_is_strict_utf8_of_every_continuation() {
        let pieces: [&[u8]; 18] = [
            b"a",
            b" ",
            b"\"",
            b"\xc3\xa9",
            b"\xe0\xa0\x80",
            b"\xed\x9f\xbf",
            b"\xe4\xb8\x80",
            b"\xf0\x90\x80\x80",
            b"\xf4\x8f\xbf\xbf",
            b"\xf3\xa0\x80\x80",
            b"\xc0\x80",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xe0\x80\x80",
            b"\x80",
            b"\xc3",
            b"\xe4\xb8",
            b"\xff",
        ];
        let mut rng = crate::rng::SplitMix64::new(7);
        let words: Vec<Vec<u8>> = (0..3000)
            .map(|_| {
                let n = 1 + rng.below(4);
                // Mostly valid pieces, so that large valid subtrees occur.
                (0..n)
                    .flat_map(|_| {
                        let i = if rng.chance(0.8) {
                            rng.below(10)
                        } else {
                            rng.below(18)
                        };
                        pieces[i].iter().copied()
                    })
                    .collect()
            })
            .collect();
        let parts = TokenParts::new(
            words
                .iter()
                .enumerate()
                .map(|(i, w)| (TokenId::new(i), w.as_slice())),
        );
        let (mut yes, mut no) = (0, 0);
        for n in 0..parts.part_nodes(parts.num_parts() - 1).end {
            let d = parts.depth(n);
            let want = parts
                .subtree_tokens(n)
                .all(|o| std::str::from_utf8(&words[parts.id(o).index()][d..]).is_ok());
            assert_eq!(parts.whole_chars_below(n), want, "node {n}");
            if want {
                yes += 1;
            } else {
                no += 1;
            }
        }
        assert!(
            yes > 100 && no > 100,
            "both outcomes are exercised: {yes} / {no}"
        );
    }

    #[test]
    fn tries_spell_every_token_in_part_order() {
        let words: Vec<&[u8]> = vec![
            b"ab",
            b"a",
            b"abc",
            b"abd",
            b"b",
            b"ab",
            b"abcdefgh",
            b"abcdefgx",
            b"bcd",
            b"",
            b"zz",
            b"abcd",
            b"\xff\x00",
            b"a\"b",
            b"a\"\xc3\xa9",
        ];
        let parts = TokenParts::new(words.iter().enumerate().map(|(i, w)| (TokenId::new(i), *w)));
        assert_eq!(parts.longest(), 8);
        assert_eq!(parts.bounds(), &[2, 4, 8]);
        assert_eq!(parts.len(), words.len() - 1, "the empty token is left out");
        let mut spelled: Vec<Option<Vec<u8>>> = vec![None; words.len()];
        let mut last_part_key = None;
        for j in 0..parts.num_parts() {
            let nodes = parts.part_nodes(j);
            assert_eq!(parts.part_is_empty(j), nodes.is_empty());
            let mut prefix: Vec<u8> = Vec::new();
            for n in nodes.clone() {
                let d = parts.depth(n);
                assert!(d >= 1 && d <= prefix.len() + 1, "preorder depths");
                assert_eq!(d == 1, n == nodes.start, "one root, first");
                assert!(parts.subtree_end(n) > n && parts.subtree_end(n) <= nodes.end);
                let mut below = 0u64;
                let mut height = 0;
                for m in n + 1..parts.subtree_end(n) {
                    assert!(parts.depth(m) > d, "a subtree holds deeper nodes only");
                    below |= 1 << byte_category(parts.byte(m));
                    height = height.max(parts.depth(m) - d);
                }
                assert_eq!(parts.below(n), below, "node {n}");
                assert_eq!(parts.height(n), height, "node {n}");
                prefix.truncate(d - 1);
                prefix.push(parts.byte(n));
                for o in parts.ending_at(n) {
                    let id = parts.id(o).index();
                    assert!(spelled[id].is_none());
                    spelled[id] = Some(prefix.clone());
                    assert!(parts.subtree_tokens(n).contains(&o));
                    let bucket = parts.bounds().partition_point(|&b| b < prefix.len());
                    assert_eq!(j, prefix[0] as usize * parts.buckets() + bucket);
                    let key = (j, prefix.clone(), id);
                    assert!(last_part_key.as_ref().is_none_or(|k| *k < key));
                    last_part_key = Some(key);
                }
            }
            assert_eq!(
                parts.part_tokens(j).len(),
                nodes.map(|n| parts.ending_at(n).len()).sum::<usize>()
            );
        }
        for (i, w) in words.iter().enumerate() {
            let want = (!w.is_empty()).then(|| w.to_vec());
            assert_eq!(spelled[i], want, "token {i}");
            // The ordinal is the inverse of `id`, and absent for a token left out.
            let o = parts.ordinal(TokenId::new(i));
            assert_eq!(o.is_some(), !w.is_empty(), "token {i}");
            assert!(o.is_none_or(|o| parts.id(o).index() == i), "token {i}");
        }
        assert_eq!(
            parts.ordinal(TokenId::new(words.len())),
            None,
            "past the last id"
        );
    }
}

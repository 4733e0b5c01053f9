//! Pass: a longest-match lexer × follow tables → which lexer states its forked token
//! walks cannot tell apart (the counterpart of `position_equiv` for `forked_half`).
//!
//! A forked walk (`terminal_trie`) is a set of branches; each byte takes a branch into
//! a lexer state `s` (by the plain transition from a pending branch, by the boundary
//! table from a closed one), and what follows depends only on `s`: it grows if `s` can
//! grow, it closes `s`'s emission at `Boundary(inhibitor(s))` if `s` is complete, and the
//! next byte moves the two by `next(s, ·)` and `boundary_next(inhibitor(s), ·)`. Where a
//! token ends matters to the automaton only through the follow set there, so ends with
//! equal follow sets are one ([`ForkedEquiv::canonical`]). Moore refinement over that
//! structure gives classes of states whose walks give every byte string the same
//! outcomes, ends canonical: start positions entering states of one class have equal
//! tries, and a block of tokens is walked once per class.
//!
//! Depends on the lexer and its follow tables; build time only.

use hashbrown::HashMap;

use crate::ids::LexStateId;
use crate::lexer::{LexFollow, LexPos, LexerDfa};
use crate::termset::TermSet;

/// Classes of lexer states under forked walks, and the canonical ends.
pub struct ForkedEquiv {
    /// Per lexer state, its class (classes numbered by first state).
    pub class: Vec<u32>,
    /// Per lexer state, the least state with its follow set after a pending lexeme.
    pending_rep: Vec<LexStateId>,
    /// Per lexer state, the least state with its follow set at the boundary it inhibits.
    boundary_rep: Vec<LexStateId>,
    /// One byte per byte class.
    bytes: Vec<u8>,
}

impl ForkedEquiv {
    /// Refines the states of `lexer` until stable. Behind an indenter, ends are alike only
    /// when their follow sets inside brackets (`inside`) are alike too.
    pub fn new(lexer: &LexerDfa, follow: &LexFollow, inside: Option<&LexFollow>) -> Self {
        let n = lexer.num_states();
        let ids = || (0..n).map(LexStateId::new);
        // The least state per follow set, pending and at a boundary.
        type Sets<'a> = (&'a TermSet, Option<&'a TermSet>);
        fn rep_by<'a>(n: usize, f: impl Fn(LexStateId) -> Option<Sets<'a>>) -> Vec<LexStateId> {
            let mut first: HashMap<Sets<'a>, LexStateId> = HashMap::new();
            (0..n)
                .map(LexStateId::new)
                .map(|q| match f(q) {
                    Some(set) => *first.entry(set).or_insert(q),
                    None => q,
                })
                .collect()
        }
        let live = |q: LexStateId| q.index() >= 2;
        let pending_rep = rep_by(n, |q| {
            (live(q) && lexer.can_extend(q))
                .then(|| (follow.after_pending(q), inside.map(|f| f.after_pending(q))))
        });
        // The plain boundary (`DEAD`, nothing inhibited) is a candidate too, and the least:
        // a boundary whose shadows leave its follow sets as they are is the plain one.
        let boundary_rep = rep_by(n, |q| {
            (q == LexerDfa::DEAD
                || live(q) && !lexer.emits(q).is_empty() && lexer.inhibitor(q) == q)
                .then(|| (follow.at_boundary(q), inside.map(|f| f.at_boundary(q))))
        });
        // One byte per byte class.
        let mut bytes: Vec<u8> = Vec::new();
        let mut seen = vec![false; lexer.num_classes()];
        for b in 0..=255u8 {
            let c = usize::from(lexer.class(b));
            if !seen[c] {
                seen[c] = true;
                bytes.push(b);
            }
        }
        // What a branch entering `q` shows at once: dead, growing (where it ends), closed
        // (its emission, where it ends).
        let label = |q: LexStateId| -> (bool, Option<LexStateId>, Option<(&[_], LexPos)>) {
            if lexer.is_dead(q) {
                return (true, None, None);
            }
            let grows = lexer.can_extend(q).then(|| pending_rep[q.index()]);
            let emits = lexer.emits(q);
            let closes = (!emits.is_empty()).then(|| {
                let end = LexPos::Boundary(boundary_rep[lexer.inhibitor(q).index()]);
                (emits, end)
            });
            (false, grows, closes)
        };
        let mut labels: HashMap<_, u32> = HashMap::new();
        let mut class: Vec<u32> = ids()
            .map(|q| {
                let next = labels.len() as u32;
                *labels.entry(label(q)).or_insert(next)
            })
            .collect();
        let mut count = labels.len();
        // Per state, its successors: the growing branch's, then the closed branch's.
        let succ: Vec<Vec<LexStateId>> = ids()
            .map(|q| {
                if lexer.is_dead(q) {
                    return Vec::new();
                }
                let mut s: Vec<LexStateId> = if lexer.can_extend(q) {
                    bytes.iter().map(|&b| lexer.next_rep(q, b)).collect()
                } else {
                    Vec::new()
                };
                if !lexer.emits(q).is_empty() {
                    let inh = lexer.inhibitor(q);
                    s.extend(bytes.iter().map(|&b| lexer.boundary_next_rep(inh, b)));
                }
                s
            })
            .collect();
        loop {
            let mut sigs: HashMap<(u32, Vec<u32>), u32> = HashMap::new();
            let next: Vec<u32> = ids()
                .map(|q| {
                    let key = (
                        class[q.index()],
                        succ[q.index()].iter().map(|s| class[s.index()]).collect(),
                    );
                    let k = sigs.len() as u32;
                    *sigs.entry(key).or_insert(k)
                })
                .collect();
            let grew = sigs.len() > count;
            count = sigs.len();
            class = next;
            if !grew {
                break;
            }
        }
        Self {
            class,
            pending_rep,
            boundary_rep,
            bytes,
        }
    }

    /// What a start position's trie depends on: per byte class, the class of the state
    /// a token's first byte enters (`u32::MAX`: dead). Positions with equal keys have
    /// equal tries, ends canonical.
    pub fn trie_key(&self, lexer: &LexerDfa, p: LexPos) -> Vec<u32> {
        self.bytes
            .iter()
            .map(|&b| {
                let n = match p {
                    LexPos::Pending(q) => lexer.next_rep(q, b),
                    LexPos::Boundary(q) => lexer.boundary_next_rep(q, b),
                };
                if lexer.is_dead(n) {
                    u32::MAX
                } else {
                    self.class[n.index()]
                }
            })
            .collect()
    }

    /// Where a token ending at `p` stands for the automaton: a state with the same
    /// follow set.
    pub fn canonical(&self, p: LexPos) -> LexPos {
        match p {
            LexPos::Pending(q) => LexPos::Pending(self.pending_rep[q.index()]),
            LexPos::Boundary(q) => LexPos::Boundary(self.boundary_rep[q.index()]),
        }
    }
}

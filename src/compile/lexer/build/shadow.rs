//! Pass: a plain lexer DFA → the same lexer under longest-match lexing, its states
//! extended by the shadows they carry (see `lexer::shadow` for the semantics).
//!
//! The plain states keep their ids and rows (a lexeme started at a boundary with no
//! shadow never gains one); every (plain state, shadow set) that a boundary can start is
//! added after them, with its own row, closed under both tables. A shadow set holds
//! plain states that have no complete match (a shadow that completes kills its branch, a
//! dead one is dropped); its size is bounded by how many bytes a lexeme can grow past a
//! complete match without completing again, one shadow per emission in between.

use hashbrown::HashMap;
use smallvec::SmallVec;

use crate::compile::error::GrammarError;
use crate::ids::LexStateId;
use crate::lexer::{LexerDfa, Shadows};

type ShadowSet = SmallVec<[u32; 2]>;

/// `lexer` under longest-match lexing. Fails with [`GrammarError::TooLarge`] past
/// `max_states` states in all, and refuses a lexer with counted runs (whose virtual
/// states a shadow set cannot name).
pub fn add_shadows(lexer: LexerDfa, max_states: usize) -> Result<LexerDfa, GrammarError> {
    if !lexer.runs().is_empty() {
        return Err(GrammarError::Unsupported {
            span: Default::default(),
            construct: "longest-match lexing".into(),
            reason: "not with counted terminals (a shadow cannot name a counted state)".into(),
        });
    }
    let n = lexer.num_states();
    let stride = lexer.num_classes();
    let reps = reps_by_class(&lexer);
    let id = |q: u32| LexStateId::from_u32(q);
    let order = FiringOrder::new(&lexer, &reps);
    let alike = firing_classes(&lexer, &reps);
    // Moves a shadow set by a byte: `None` if a shadow completes a match.
    let advance = |set: &[u32], b: u8| -> Option<ShadowSet> {
        let mut out = ShadowSet::new();
        for &s in set {
            let s1 = lexer.next(id(s), b);
            if lexer.is_dead(s1) {
                continue;
            }
            if !lexer.emits(s1).is_empty() {
                return None;
            }
            out.push(alike[s1.index()]);
        }
        out.sort_unstable();
        out.dedup();
        Some(order.prune(out))
    };
    // States by key: the plain ones first, under their own ids.
    let mut keys: Vec<(u32, ShadowSet)> = (0..n as u32).map(|q| (q, ShadowSet::new())).collect();
    let mut index: HashMap<(u32, ShadowSet), u32> = HashMap::new();
    let mut trans: Vec<u32> = Vec::with_capacity(n * stride);
    let mut boundary: Vec<u32> = Vec::with_capacity(n * stride);
    let too_large = || GrammarError::TooLarge {
        span: Default::default(),
        what: "longest-match lexer states (lexer states × shadow sets)".into(),
        limit: max_states,
    };
    let mut intern = |q: LexStateId,
                      set: ShadowSet,
                      keys: &mut Vec<(u32, ShadowSet)>|
     -> Result<u32, GrammarError> {
        if lexer.is_dead(q) {
            return Ok(0);
        }
        if set.is_empty() {
            return Ok(q.as_u32());
        }
        if let Some(&i) = index.get(&(q.as_u32(), set.clone())) {
            return Ok(i);
        }
        if keys.len() >= max_states {
            return Err(too_large());
        }
        let i = keys.len() as u32;
        keys.push((q.as_u32(), set.clone()));
        index.insert((q.as_u32(), set), i);
        Ok(i)
    };
    // Rows are made in id order; each may add states, whose rows come later.
    let mut s = 0usize;
    while s < keys.len() {
        let (q, set) = keys[s].clone();
        // The first byte after an emission in this state: the state's own shadow and its
        // shadows move with it. The dead state stands for "nothing inhibited". A state
        // that completes nothing never closes a lexeme, so its boundary row stays dead:
        // filling it would add (state, shadow set) pairs no input reaches (a comment body
        // as the shadow of every state of a name's Unicode letters, say).
        let emits = q == 0 || !lexer.emits(id(q)).is_empty();
        let mut behind = set.clone();
        if q != 0 {
            behind.push(q);
        }
        for &b in &reps {
            let grow = if s < n {
                lexer.next(id(q), b).as_u32()
            } else {
                match advance(&set, b) {
                    Some(moved) => intern(lexer.next(id(q), b), moved, &mut keys)?,
                    None => 0,
                }
            };
            trans.push(grow);
            let start = match advance(&behind, b) {
                Some(moved) if emits => intern(lexer.next(LexerDfa::START, b), moved, &mut keys)?,
                _ => 0,
            };
            boundary.push(start);
        }
        s += 1;
    }
    let classes: Vec<u8> = (0..=255u8).map(|b| lexer.class(b)).collect();
    let emits = keys
        .iter()
        .map(|(q, _)| lexer.emits(id(*q)).to_vec())
        .collect();
    let shadowed = LexerDfa::from_parts(
        classes,
        stride as u32,
        trans,
        emits,
        lexer.terminals().to_vec(),
    )
    .and_then(|l| {
        l.with_shadows(Shadows {
            base: n as u32,
            boundary,
        })
    });
    // Rows are read from a valid lexer and stay within the states made.
    Ok(shadowed.expect("shadowed lexer tables are consistent"))
}

/// One byte per byte class, indexed by class id (the rows' order).
fn reps_by_class(lexer: &LexerDfa) -> Vec<u8> {
    let mut reps = vec![0u8; lexer.num_classes()];
    for b in (0..=255u8).rev() {
        reps[lexer.class(b) as usize] = b;
    }
    reps
}

/// Per plain state, the least state that completes a match on exactly the same byte
/// strings: as shadows the two are one (a shadow only tells when it completes), though
/// as lexemes they may complete different terminals. Moore's partition refinement with
/// "completes here" as the output.
fn firing_classes(lexer: &LexerDfa, reps: &[u8]) -> Vec<u32> {
    let n = lexer.num_states();
    let id = |q: usize| LexStateId::new(q);
    let mut block: Vec<u32> = (0..n)
        .map(|q| {
            if lexer.is_dead(id(q)) {
                0
            } else {
                1 + u32::from(!lexer.emits(id(q)).is_empty())
            }
        })
        .collect();
    let mut count = 0;
    loop {
        let mut blocks: HashMap<Vec<u32>, u32> = HashMap::new();
        let next: Vec<u32> = (0..n)
            .map(|q| {
                let mut sig = Vec::with_capacity(reps.len() + 1);
                sig.push(block[q]);
                sig.extend(reps.iter().map(|&b| block[lexer.next(id(q), b).index()]));
                let fresh = blocks.len() as u32;
                *blocks.entry(sig).or_insert(fresh)
            })
            .collect();
        let now = blocks.len();
        block = next;
        if now == count {
            break;
        }
        count = now;
    }
    let mut least: HashMap<u32, u32> = HashMap::new();
    (0..n as u32)
        .map(|q| *least.entry(block[q as usize]).or_insert(q))
        .collect()
}

/// Which shadows a set can do without: shadow `b` is redundant beside `a` if every byte
/// string on which `b` completes a match makes `a` complete one first or at the same
/// byte (`a` *fires no later*), since the set's branch dies at its first completion.
/// Dropping them keeps the sets small (a shadow waiting for the end of a docstring beside
/// one waiting for the end of a string), and the branches the same.
struct FiringOrder<'a> {
    lexer: &'a LexerDfa,
    reps: &'a [u8],
    /// Pairs known: `(a, b)` → whether `a` fires no later than `b`.
    known: std::cell::RefCell<HashMap<(u32, u32), bool>>,
}

impl<'a> FiringOrder<'a> {
    fn new(lexer: &'a LexerDfa, reps: &'a [u8]) -> Self {
        Self {
            lexer,
            reps,
            known: Default::default(),
        }
    }

    /// `set` (sorted) without its redundant shadows; of two that fire alike, the smaller
    /// id stays.
    fn prune(&self, set: ShadowSet) -> ShadowSet {
        if set.len() < 2 {
            return set;
        }
        let keep = |b: u32| {
            !set.iter()
                .any(|&a| a != b && self.no_later(a, b) && (a < b || !self.no_later(b, a)))
        };
        set.iter().copied().filter(|&b| keep(b)).collect()
    }

    /// Whether shadow `a` fires no later than `b` on every byte string: a search of the
    /// pairs both reach without firing for one where `b` fires first, or can (`a` died,
    /// `b` lives: a live state reaches a completion).
    fn no_later(&self, a: u32, b: u32) -> bool {
        if let Some(&v) = self.known.borrow().get(&(a, b)) {
            return v;
        }
        let lx = self.lexer;
        let id = LexStateId::from_u32;
        let fires = |q: LexStateId| !lx.is_dead(q) && !lx.emits(q).is_empty();
        let mut seen: hashbrown::HashSet<(u32, u32)> = hashbrown::HashSet::new();
        let mut work = vec![(a, b)];
        let mut ok = true;
        'search: while let Some((x, y)) = work.pop() {
            if !seen.insert((x, y)) {
                continue;
            }
            if let Some(&v) = self.known.borrow().get(&(x, y)) {
                if v {
                    continue;
                }
                ok = false;
                break;
            }
            for &c in self.reps {
                let (x1, y1) = (lx.next(id(x), c), lx.next(id(y), c));
                if fires(x1) || lx.is_dead(y1) {
                    continue;
                }
                if fires(y1) || lx.is_dead(x1) {
                    ok = false;
                    break 'search;
                }
                work.push((x1.as_u32(), y1.as_u32()));
            }
        }
        let mut known = self.known.borrow_mut();
        if ok {
            // Every pair searched reaches only pairs searched: none lets `b` fire first.
            for p in seen {
                known.insert(p, true);
            }
        } else {
            known.insert((a, b), false);
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::frontend::lark;
    use crate::compile::lexer::build::build_lexer;
    use crate::lexer::lex;
    use crate::rng::SplitMix64;

    fn lexer_of(text: &str, longest: bool) -> LexerDfa {
        let mut g = lark::compile(text).unwrap();
        g.longest_match = longest;
        build_lexer(&g).unwrap()
    }

    /// Flex's rule, written out: at each offset the longest prefix of the rest that the
    /// lexer completes (from the start state, byte by byte) is the next lexeme.
    fn flex(lexer: &LexerDfa, input: &[u8]) -> Option<Vec<(usize, usize)>> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < input.len() {
            let mut q = LexerDfa::START;
            let mut best = None;
            for (i, &b) in input[at..].iter().enumerate() {
                q = lexer.next(q, b);
                if lexer.is_dead(q) {
                    break;
                }
                if !lexer.emits(q).is_empty() {
                    best = Some(at + i + 1);
                }
            }
            let end = best?;
            out.push((at, end));
            at = end;
        }
        Some(out)
    }

    const TOY: &str = "start: (AB | ABD | C | X)*\nAB: \"ab\"\nABD: /abc+d/\nC: \"c\"\nX: /x[a-z]*!/ | /y[a-z]*!!/\n%ignore \" \"\n";

    /// Whole-document lexing under longest match cuts where flex does, on random texts
    /// over the toy grammar's bytes (lexemes that grow past `ab` and die, or complete).
    #[test]
    fn whole_document_lexing_backs_up_like_flex() {
        let lexer = lexer_of(TOY, true);
        let mut rng = SplitMix64::new(7);
        let pieces: [&[u8]; 9] = [b"ab", b"c", b"abc", b"d", b"x!", b"y!!", b" ", b"xa", b"!"];
        let mut backed_up = 0;
        for _ in 0..3000 {
            let len = (rng.next_u64() % 6) as usize;
            let text: Vec<u8> = (0..len)
                .flat_map(|_| pieces[(rng.next_u64() % pieces.len() as u64) as usize])
                .copied()
                .collect();
            let ours = lex(&lexer, &text)
                .ok()
                .map(|ls| ls.iter().map(|l| (l.start, l.end)).collect::<Vec<_>>());
            let want = flex(&lexer, &text);
            assert_eq!(ours, want, "{:?}", String::from_utf8_lossy(&text));
            let plain = lex(&lexer_of(TOY, false), &text).ok();
            backed_up += usize::from(want.is_some() && plain.is_none());
        }
        assert!(backed_up > 300, "only {backed_up} texts needed a back-up");
    }

    /// After `ab` is emitted, `c` starts a lexeme that carries `ab`'s shadow (a state past
    /// the plain ones); `d` after `abcc` then completes the longer `abc+d` behind it, so
    /// that branch is dead, and `x` forgets the shadow. Under maximal munch the `c` is
    /// already inhibited.
    #[test]
    fn boundary_rows_carry_shadows() {
        let munch = lexer_of(TOY, false);
        let longest = lexer_of(TOY, true);
        let after = |l: &LexerDfa, s: &[u8]| s.iter().fold(LexerDfa::START, |q, &b| l.next(q, b));
        let ab = after(&longest, b"ab");
        assert_eq!(longest.inhibitor(ab), ab);
        assert!(munch.is_dead(munch.boundary_next(after(&munch, b"ab"), b'c')));
        let c = longest.boundary_next(ab, b'c');
        assert!(c.index() >= munch.num_states(), "a shadowed state");
        assert_eq!(longest.emits(c), munch.emits(after(&munch, b"c")));
        // `c` cannot grow, so the next byte starts a lexeme at a boundary behind it.
        let c2 = longest.boundary_next(longest.inhibitor(c), b'c');
        assert!(c2.index() >= munch.num_states());
        assert!(longest.is_dead(longest.boundary_next(longest.inhibitor(c2), b'd')));
        let x = longest.boundary_next(longest.inhibitor(c2), b'x');
        assert!(
            !longest.is_dead(x) && x.index() < munch.num_states(),
            "shadow forgotten"
        );
    }

    /// Every shadowed state is reached from the plain ones by growing, or by a byte after
    /// an emission in a state that completes something: states whose lexeme never closes
    /// get no boundary row (inside a string `'a`, a name could otherwise start with the
    /// string as its shadow, a pair no input reaches).
    #[test]
    fn shadowed_states_are_reached_only_through_emissions() {
        let text = "start: (NAME | STR | AB | ABD)*\nNAME: /[a-z]+/\nSTR: /'[^']*'/\n\
                    AB: \"a.b\"\nABD: /a\\.bc+d/\n%ignore \" \"\n";
        let lexer = lexer_of(text, true);
        let n = lexer.num_states();
        let reps = reps_by_class(&lexer);
        let id = LexStateId::new;
        let base = lexer_of(text, false).num_states();
        assert!(n > base, "the toy has shadowed states");
        let mut seen = vec![false; n];
        let mut work: Vec<usize> = (0..base).collect();
        for &q in &work {
            seen[q] = true;
        }
        while let Some(q) = work.pop() {
            let mut next: Vec<LexStateId> = reps.iter().map(|&b| lexer.next(id(q), b)).collect();
            let emits = q == 0 || !lexer.emits(id(q)).is_empty();
            if emits {
                next.extend(reps.iter().map(|&b| lexer.boundary_next(id(q), b)));
            } else {
                for &b in &reps {
                    assert!(
                        lexer.is_dead(lexer.boundary_next(id(q), b)),
                        "state {q} closes nothing"
                    );
                }
            }
            for s in next {
                if !seen[s.index()] {
                    seen[s.index()] = true;
                    work.push(s.index());
                }
            }
        }
        let unreached: Vec<usize> = (0..n).filter(|&q| !seen[q]).collect();
        assert!(
            unreached.is_empty(),
            "states no input reaches: {unreached:?}"
        );
    }

    /// `x…!` completes at the first `!`, `y…!!` at the second at the earliest: a shadow
    /// in the first fires no later than one in the second, not the other way round, and
    /// a set holding both keeps only the first.
    #[test]
    fn later_firing_shadows_are_redundant() {
        let lexer = lexer_of(TOY, false);
        let reps = reps_by_class(&lexer);
        let order = FiringOrder::new(&lexer, &reps);
        let x = lexer.next(LexerDfa::START, b'x').as_u32();
        let y = lexer.next(LexerDfa::START, b'y').as_u32();
        assert!(order.no_later(x, y));
        assert!(!order.no_later(y, x));
        let set: ShadowSet = [x.min(y), x.max(y)].into_iter().collect();
        assert_eq!(order.prune(set).as_slice(), &[x]);
    }

    /// States that complete on the same byte strings are one shadow, whatever terminal
    /// they would complete: `x…!` and `w…!` bodies are alike; `y…!!`'s is not.
    #[test]
    fn shadows_that_complete_alike_are_one() {
        let text = "start: (X | W | Y)*\nX: /x[a-z]*!/\nW: /w[a-z]*!/\nY: /y[a-z]*!!/\n";
        let lexer = lexer_of(text, false);
        let reps = reps_by_class(&lexer);
        let alike = firing_classes(&lexer, &reps);
        let at = |c: u8| lexer.next(LexerDfa::START, c).index();
        assert_ne!(at(b'x'), at(b'w'));
        assert_eq!(alike[at(b'x')], alike[at(b'w')]);
        assert_ne!(alike[at(b'x')], alike[at(b'y')]);
        assert_ne!(
            lexer.emits(lexer.next(LexStateId::new(at(b'x')), b'!')),
            lexer.emits(lexer.next(LexStateId::new(at(b'w')), b'!'))
        );
    }
}

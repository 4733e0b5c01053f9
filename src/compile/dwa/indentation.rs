//! Pass: token classes behind an indenter → virtual classes and rules that decide the
//! classes whose tokens the indentation changes (per position, after `forked_classes`).
//!
//! What the indenter does to a token depends on the configuration's open levels, open
//! brackets and pending newline, which no stack read shows. The grammar's parses show the
//! rest (`compile::grammar::indent_check`: brackets and levels pair up within
//! productions, no newline between brackets), so only three things are left to decide
//! at mask time, from the configuration:
//! - **A newline lexeme after ignored lexemes only.** The stacks it meets are the
//!   configuration's. Its indentation is its bytes' (the tag `terminal_trie` gives it),
//!   after the configuration's pending ones when it is the token's first lexeme. The
//!   class is decided from two *variants*: the *plain* one, the lexeme's
//!   other terminals (a comment, a string that `_NL` also matches), read on the
//!   configuration's stacks; and the *stay* one, the lexeme skipped, read on the stacks
//!   the indenter leaves after it — the same stacks inside brackets (the newline is
//!   dropped), else the stacks after `_NL` and its `_INDENT` or `_DEDENT`s, which the
//!   runtime shifts (and walks the automaton again from) once per distinct resolution.
//! - **Ends inside brackets.** A token that ends inside brackets reads the follow sets
//!   with newlines dropped; where those hold a terminal the plain ones lack (after a
//!   pending newline, what comes after the newline), the end gets an *inside* variant,
//!   chosen when the configuration's open brackets plus the token's own are positive.
//! - **Any other newline lexeme** in a token (a second one, or one after a lexeme the
//!   parser takes): the class is left to the recognizer, which commits its tokens at
//!   each mask. For `python.lark`, GPT-2's, Llama-2's and Llama-3's vocabularies have none.
//!
//! A closed newline lexeme at a token's end (`Boundary(q)`, the lexeme also pending in
//! `p` one lexeme earlier) is dropped when it allows nothing its pending partner does
//! not — when `p` can still become each of its terminals and what may follow it,
//! outside brackets and in: the pending one asks only that `_NL` be consumable, which the
//! closed one needs too.
//! End of input needs no variant: the automaton builder reads it as "some `_DEDENT`s,
//! then end of input", which balanced levels make exact.
//!
//! Virtual classes hold no tokens; the walk decides them as any other, and
//! [`crate::dwa::indents`] ORs each rule's variants into its class, then clears them.

use hashbrown::HashMap;
use smallvec::SmallVec;

use crate::compile::dwa::terminal_trie::{EmitId, EmitTable, STAY};
use crate::compile::dwa::token_classes::{ClassList, ClassedTrie, IndentRules, Shape};
use crate::compile::error::GrammarError;
use crate::ids::TerminalId;
use crate::lexer::{Indenter, LexFollow, LexPos, LexerDfa, Tail};

/// How a virtual class ends: at a position, read with the plain follow sets or with the
/// inside-brackets ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum End {
    At(LexPos),
    Inside(LexPos),
}

/// One term of a rule: variant `out` (or `inside`, when the brackets open at the token's
/// end are positive: the configuration's plus `delta`) read on the configuration's stacks
/// (`stay` false) or on the stacks after its newline (`stay` true).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Term {
    pub stay: bool,
    pub delta: i32,
    pub out: u32,
    pub inside: u32,
}

/// A class decided by its terms (class ids shape-local), with the tag of its first
/// lexeme when that is a newline lexeme.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    pub class: u32,
    pub first: Option<Tail>,
    pub terms: (u32, u32),
}

/// The follow sets one indenter's classes are read with.
pub struct IndentTables<'a> {
    pub lexer: &'a LexerDfa,
    pub follow: &'a LexFollow,
    pub inside: &'a LexFollow,
    pub indenter: &'a Indenter,
}

impl IndentTables<'_> {
    fn after(&self, f: &LexFollow, p: LexPos) -> crate::termset::TermSet {
        match p {
            LexPos::Pending(q) => f.after_pending(q).clone(),
            LexPos::Boundary(q) => f.at_boundary(q).clone(),
        }
    }

    /// Whether an end at `p` decides differently inside brackets: the inside follow set
    /// holds a terminal the plain one lacks (the plain one's only extra, `_NL`, no parse
    /// can consume inside brackets).
    fn needs_inside(&self, p: LexPos) -> bool {
        let out = self.after(self.follow, p);
        let ins = self.after(self.inside, p);
        ins.words()
            .iter()
            .zip(out.words())
            .any(|(i, o)| i & !o != 0)
    }

    /// The bracket count an emission changes by.
    fn delta(&self, emits: &EmitTable, e: EmitId) -> i32 {
        emits
            .terminals(e)
            .iter()
            .map(|t| {
                if self.indenter.open.contains(t) {
                    1
                } else if self.indenter.close.contains(t) {
                    -1
                } else {
                    0
                }
            })
            .sum()
    }
}

/// A class's emissions (one path) and its ends `(depth, position)`.
#[derive(Debug, Default, Clone)]
struct Outcomes {
    emits: SmallVec<[EmitId; 8]>,
    ends: SmallVec<[(usize, LexPos); 2]>,
}

/// Adds the virtual classes and rules that decide `ct`'s classes behind the indenter
/// (see the module doc). Returns the trie and the classes left to the recognizer. A trie
/// no class of which the indentation changes is returned as it was.
pub fn with_indentation<S: Default>(
    mut ct: ClassedTrie<S>,
    t: &IndentTables<'_>,
    emits: &EmitTable,
) -> Result<(ClassedTrie<S>, Vec<u32>), GrammarError> {
    let n = ct.shape.num_classes;
    let mut outcomes = outcomes_of(&ct.shape);
    // A lexeme that is a bracket and something else would need the count split by
    // terminal; no grammar here has one.
    for o in &outcomes {
        for &e in &o.emits {
            let terms = emits.terminals(e);
            let brackets = terms
                .iter()
                .filter(|x| t.indenter.open.contains(x) || t.indenter.close.contains(x))
                .count();
            if brackets > 0 && terms.len() > 1 {
                return Err(bracket_and_more(t.lexer, terms));
            }
        }
    }
    let mut needs: HashMap<LexPos, bool> = HashMap::new();
    let mut needs_inside = |p: LexPos| *needs.entry(p).or_insert_with(|| t.needs_inside(p));
    // Closed newline lexemes their pending partners subsume.
    let mut changed = false;
    for o in &mut outcomes {
        let ends = o.ends.clone();
        o.ends.retain(|&mut (d, end)| {
            let LexPos::Boundary(q) = end else {
                return true;
            };
            // The pending partner (ends are canonical: its state may differ from the
            // inhibitor's, its follow sets do not).
            let partner = ends.iter().find_map(|&(pd, pe)| match pe {
                LexPos::Pending(p) if pd + 1 == d => Some(p),
                _ => None,
            });
            let Some(p) = partner else { return true };
            !(emits.is_newline(o.emits[d - 1]) && subsumed(t, emits, o.emits[d - 1], p, q))
        });
        // Lexemes only a dropped outcome emitted are no longer the class's.
        let deepest = o.ends.iter().map(|&(d, _)| d).max().unwrap_or(0);
        o.emits.truncate(deepest);
        changed |= o.ends.len() < ends.len();
    }
    let mut overflow = Vec::new();
    let mut virtuals: Vec<(SmallVec<[EmitId; 8]>, End)> = Vec::new();
    let mut index: HashMap<(SmallVec<[EmitId; 8]>, End), u32> = HashMap::new();
    let mut virt = |seq: SmallVec<[EmitId; 8]>, end: End| -> u32 {
        let key = (seq, end);
        if let Some(&i) = index.get(&key) {
            return n + i;
        }
        let i = virtuals.len() as u32;
        index.insert(key.clone(), i);
        virtuals.push(key);
        n + i
    };
    let mut rules: Vec<Rule> = Vec::new();
    let mut terms: Vec<Term> = Vec::new();
    let mut kept: Vec<Outcomes> = Vec::with_capacity(outcomes.len());
    for (c, o) in outcomes.into_iter().enumerate() {
        let c = c as u32;
        // The class's first newline lexeme: read on the configuration's stacks when only
        // ignored lexemes come before it (the walk then tagged it).
        let mut nls = (0..o.emits.len()).filter(|&i| emits.is_newline(o.emits[i]));
        let nl_at = nls.next();
        let later_nl = nls.next().is_some();
        let first_tag = nl_at
            .and_then(|i| emits.tag(o.emits[i]))
            .map(|(_, tag)| tag);
        // A second newline lexeme, or one after a lexeme the stacks take, or one too wide
        // to tag.
        if later_nl || (nl_at.is_some() && first_tag.is_none()) {
            overflow.push(c);
            kept.push(Outcomes::default());
            changed = true;
            continue;
        }
        let lo = terms.len() as u32;
        let mut keep = Outcomes {
            emits: o.emits.clone(),
            ends: SmallVec::new(),
        };
        for &(d, p) in &o.ends {
            let seq = &o.emits[..d];
            let inside = needs_inside(p);
            let delta: i32 = seq.iter().map(|&e| t.delta(emits, e)).sum();
            let Some(i) = nl_at.filter(|&i| i < d) else {
                if !inside {
                    keep.ends.push((d, p));
                    continue;
                }
                let seq: SmallVec<[EmitId; 8]> = SmallVec::from_slice(seq);
                terms.push(Term {
                    stay: false,
                    delta,
                    out: virt(seq.clone(), End::At(p)),
                    inside: virt(seq, End::Inside(p)),
                });
                continue;
            };
            // The newline lexeme's plain and stay variants.
            let mut variant = |first: EmitId, stay: bool| {
                let mut seq: SmallVec<[EmitId; 8]> = SmallVec::from_slice(seq);
                seq[i] = first;
                let out = virt(seq.clone(), End::At(p));
                let ins = if inside {
                    virt(seq, End::Inside(p))
                } else {
                    out
                };
                terms.push(Term {
                    stay,
                    delta,
                    out,
                    inside: ins,
                });
            };
            if let Some(plain) = emits.without_newline(seq[i]) {
                variant(plain, false);
            }
            let stay = emits
                .stay()
                .expect("newline emissions come with an indenter");
            variant(stay, true);
        }
        let hi = terms.len() as u32;
        if hi > lo {
            rules.push(Rule {
                class: c,
                first: first_tag,
                terms: (lo, hi),
            });
            changed = true;
        }
        if keep.ends.len() != o.ends.len() {
            changed = true;
        }
        kept.push(keep);
    }
    if !changed {
        return Ok((ct, Vec::new()));
    }
    ct.shape = reshape(n, &kept, &virtuals, rules, terms);
    ct.tokens.extend((0..virtuals.len()).map(|_| S::default()));
    Ok((ct, overflow))
}

/// Whether the closed outcome emitting `e` at the boundary `q` inhibits allows nothing
/// its partner pending in `p` does not (see the module doc).
fn subsumed(
    t: &IndentTables<'_>,
    emits: &EmitTable,
    e: EmitId,
    p: crate::ids::LexStateId,
    q: crate::ids::LexStateId,
) -> bool {
    // Per reading of the lexeme, outside brackets and in: a terminal the stacks take
    // must be one `p` can still become (the pending partner then takes it); a reading
    // that leaves the stacks as they were (ignored, or the newline dropped inside
    // brackets) must leave nothing next that `p` cannot still lead to.
    let stays_within = |f: &LexFollow| {
        let after = f.after_pending(p);
        f.at_boundary(q)
            .words()
            .iter()
            .zip(after.words())
            .all(|(b, a)| b & !a == 0)
    };
    emits.terminals(e).iter().all(|&x| {
        let stays = x == STAY || t.lexer.is_ignored(x);
        let outside = if stays {
            stays_within(t.follow)
        } else {
            t.follow.after_pending(p).contains(x)
        };
        let inside = if stays || x == t.indenter.nl {
            stays_within(t.inside)
        } else {
            t.inside.after_pending(p).contains(x)
        };
        outside && inside
    })
}

fn bracket_and_more(lexer: &LexerDfa, terms: &[TerminalId]) -> GrammarError {
    GrammarError::Unsupported {
        span: Default::default(),
        construct: format!(
            "a lexeme that is a bracket and another terminal ({})",
            terms
                .iter()
                .filter(|&&x| x != STAY)
                .map(|&x| format!("`{}`", lexer.terminal_name(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        reason: "the indenter would count the brackets of some of its readings only".into(),
    }
}

/// Each class's emissions and ends, in class order.
fn outcomes_of(shape: &Shape) -> Vec<Outcomes> {
    let mut out = vec![Outcomes::default(); shape.num_classes as usize];
    for (d, es) in shape.emits.iter().enumerate().skip(1) {
        for (e, cl) in es {
            for &(lo, hi) in &cl.0 {
                for c in lo..=hi {
                    let o = &mut out[c as usize];
                    // Emissions are listed depth by depth, so each class's arrive in order.
                    debug_assert_eq!(o.emits.len(), d - 1);
                    o.emits.push(*e);
                }
            }
        }
    }
    for (d, fs) in shape.finals.iter().enumerate() {
        for (p, cl) in fs {
            for &(lo, hi) in &cl.0 {
                for c in lo..=hi {
                    out[c as usize].ends.push((d, *p));
                }
            }
        }
    }
    out
}

/// The shape of classes `kept` (their remaining outcomes) and the virtual classes after
/// them, with the rules.
fn reshape(
    n: u32,
    kept: &[Outcomes],
    virtuals: &[(SmallVec<[EmitId; 8]>, End)],
    rules: Vec<Rule>,
    terms: Vec<Term>,
) -> Shape {
    let mut emits: Vec<HashMap<EmitId, Vec<u32>>> = Vec::new();
    let mut finals: Vec<HashMap<LexPos, Vec<u32>>> = Vec::new();
    let mut inside: Vec<HashMap<LexPos, Vec<u32>>> = Vec::new();
    let mut add = |c: u32, seq: &[EmitId], end: End| {
        let d = seq.len();
        if emits.len() <= d {
            emits.resize(d + 1, HashMap::new());
            finals.resize(d + 1, HashMap::new());
            inside.resize(d + 1, HashMap::new());
        }
        for (i, &e) in seq.iter().enumerate() {
            let v = emits[i + 1].entry(e).or_default();
            if v.last() != Some(&c) {
                v.push(c);
            }
        }
        match end {
            End::At(p) => finals[d].entry(p).or_default().push(c),
            End::Inside(p) => inside[d].entry(p).or_default().push(c),
        }
    };
    for (c, o) in kept.iter().enumerate() {
        for &(d, p) in &o.ends {
            add(c as u32, &o.emits[..d], End::At(p));
        }
    }
    for (i, (seq, end)) in virtuals.iter().enumerate() {
        add(n + i as u32, seq, *end);
    }
    fn lists<K: Ord + Copy>(m: Vec<HashMap<K, Vec<u32>>>) -> Vec<Vec<(K, ClassList)>> {
        m.into_iter()
            .map(|h| {
                let mut v: Vec<(K, ClassList)> = h
                    .into_iter()
                    .map(|(k, mut cs)| {
                        cs.sort_unstable();
                        cs.dedup();
                        let ranges = cs.into_iter().map(|c| (c, c)).collect();
                        (k, ClassList::from_disjoint_ranges(ranges))
                    })
                    .collect();
                v.sort_by_key(|a| a.0);
                v
            })
            .collect()
    }
    Shape {
        num_classes: n + virtuals.len() as u32,
        emits: lists(emits),
        finals: lists(finals),
        consumes: Vec::new(),
        drops: Default::default(),
        inside: lists(inside),
        indents: IndentRules {
            first_virtual: n,
            rules,
            terms,
        },
    }
}

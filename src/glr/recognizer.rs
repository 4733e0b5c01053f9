//! The commit state: GLR stacks behind a lexer with eager emission and inhibited terminals.
//!
//! A state is a set of *configurations*: where the lexer stands ([`LexPos`]) and the GSS
//! heads of the terminals emitted so far. Reading a byte moves every configuration; when
//! the lexeme it completes could still grow, the configuration forks (DESIGN.md §1): one
//! branch emits now and inhibits every byte that would have extended the lexeme, the other
//! keeps growing, and the next byte kills exactly one of them. Under longest-match lexing
//! the emitting branch only dies where later bytes complete a longer match (its lexer
//! states carry the emitted lexeme as a shadow: see `lexer::shadow`), and the growing
//! one where its lexeme dies incomplete. Lexically ambiguous lexemes
//! are shifted as each of their terminals; ignored terminals leave the stacks as they are,
//! and so do droppable ones that no stack of the configuration can shift (its stacks are
//! every live parse of the lexemes so far: maximal munch lexes a prefix one way).
//!
//! A configuration is *viable* when some terminal that can come next lexically (see
//! [`crate::lexer::LexFollow`]) can be shifted by some of its stacks, or end of input is
//! possible and accepted. A commit keeps only viable configurations and fails, changing
//! nothing, if none is left.

use std::sync::{Arc, Mutex};

use smallvec::SmallVec;

use super::gss::{merge_heads, Heads, Node};
use super::step;
use super::Tables;
use crate::ids::TerminalId;
use crate::lexer::{Indenter, LexFollow, LexPos, LexerDfa, Tail};
use crate::termset::TermSet;

/// One configuration: lexer position and the stacks of the terminals emitted so far.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the lexer stands.
    pub pos: LexPos,
    /// GSS heads; never empty, no two with the same LR state. Shared: a lexeme growing
    /// byte by byte keeps its configuration's heads, and copying them per byte was an
    /// allocation per byte read.
    pub heads: Arc<[Arc<Node>]>,
    /// What is known about `heads`, shared by every configuration with these very heads.
    pub(super) memo: Arc<HeadsMemo>,
    /// Behind an indenter: the open levels and brackets of these stacks.
    pub indent: Indent,
    /// Behind an indenter: the pending lexeme's indentation (default at a boundary).
    pub tail: Tail,
}

/// A configuration's indentation behind an indenter: the levels open above level 0, and
/// how many brackets are open (inside them newlines are dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Indentation {
    pub levels: Vec<u32>,
    pub brackets: u32,
}

/// No open level or bracket.
static FLAT: Indentation = Indentation {
    levels: Vec::new(),
    brackets: 0,
};

/// A configuration's [`Indentation`], shared, and absent when flat (always, without an
/// indenter): configurations are copied at every byte, so they carry one pointer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Indent(Option<Arc<Indentation>>);

impl Indent {
    /// The indentation.
    #[inline]
    pub fn get(&self) -> &Indentation {
        self.0.as_deref().unwrap_or(&FLAT)
    }

    fn of(i: Indentation) -> Self {
        Self((i != FLAT).then(|| Arc::new(i)))
    }
}

/// Results that depend on a set of GSS heads alone, kept while a lexeme grows on them.
///
/// Eager emission shifts the lexeme at every byte that completes it, and the commit then
/// checks the new stacks' viability: for a number under 40 optional properties that was a
/// reduction closure of ~60 µs per digit, each recomputing the previous byte's. The
/// stacks under a growing lexeme do not change, so both are computed once per lexeme.
///
/// What an emission remembers is the heads after it and their [`HeadsFacts`], never the
/// [`HeadsMemo`] of the configuration it made: that memo gathers the next lexeme's
/// emissions, so remembering it chained every later lexeme to this one. A long-lived
/// state (a template cloned per request, or a matcher `reset` and reused) then kept
/// every document ever committed from it: ~2.5 KB of stacks per JSON document, unbounded.
#[derive(Default)]
pub(super) struct HeadsMemo {
    /// Verdicts on these heads, shared with every memo of the same emission.
    facts: Arc<HeadsFacts>,
    /// Emissions from these heads: the terminals, the heads after them, and their facts.
    emitted: Mutex<SmallVec<[Emitted; 1]>>,
    /// Behind an indenter: the heads after a newline lexeme and what follows it, each
    /// shifted once for every mask and commit at a statement boundary (empty: none can
    /// take them). Dedent counts are filled up to the largest asked for, each from the
    /// one before.
    after_newline: Mutex<SmallVec<[(AfterNewline, Heads); 2]>>,
}

/// What the indenter shifts after a newline terminal: one indent, or `n` dedents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterNewline {
    Indent,
    Dedents(usize),
}

/// Verdicts on a set of GSS heads. They refer to no stacks, so keeping them keeps no
/// document alive.
#[derive(Default)]
struct HeadsFacts {
    /// [`step::can_consume`] verdicts, by terminal.
    verdicts: Mutex<SmallVec<[(TerminalId, bool); 4]>>,
    /// Viability by follow set (its address: the sets live in the tables, which outlive
    /// every state), so the bytes of a lexeme that keep one follow set ask once.
    viable: Mutex<SmallVec<[(usize, bool); 2]>>,
}

type Emitted = (SmallVec<[TerminalId; 2]>, Arc<[Arc<Node>]>, Arc<HeadsFacts>);

/// Opaque: a cache, not state; what it holds never changes what a state accepts.
impl std::fmt::Debug for HeadsMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeadsMemo")
    }
}

impl HeadsMemo {
    fn viable(&self, follow: usize, compute: impl FnOnce() -> bool) -> bool {
        memoized(&self.facts.viable, follow, compute)
    }

    fn verdict(&self, t: TerminalId, compute: impl FnOnce() -> bool) -> bool {
        memoized(&self.facts.verdicts, t, compute)
    }

    /// The verdict for `t` if known or if `compute` finds it (then recorded).
    fn verdict_if(&self, t: TerminalId, compute: impl FnOnce() -> Option<bool>) -> Option<bool> {
        memoized_if(&self.facts.verdicts, t, compute)
    }
}

/// Reduction paths a viability check takes on a terminal before it moves on to the next
/// one (coming back only if none answers).
const QUICK_REDUCTIONS: usize = 16;

/// The verdict for `key` in a short memo list, computed and recorded if missing.
fn memoized<K: Copy + PartialEq, A: smallvec::Array<Item = (K, bool)>>(
    memo: &Mutex<SmallVec<A>>,
    key: K,
    compute: impl FnOnce() -> bool,
) -> bool {
    // `compute` always answers, so the memo always does.
    memoized_if(memo, key, || Some(compute())).unwrap_or_default()
}

/// [`memoized`] for a `compute` that may not know (`None`, recorded as nothing).
fn memoized_if<K: Copy + PartialEq, A: smallvec::Array<Item = (K, bool)>>(
    memo: &Mutex<SmallVec<A>>,
    key: K,
    compute: impl FnOnce() -> Option<bool>,
) -> Option<bool> {
    // A poisoned lock only means a panic elsewhere mid-push; the entries are still sound.
    let mut v = memo.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, x)) = v.iter().find(|&&(k, _)| k == key) {
        return Some(x);
    }
    let x = compute()?;
    v.push((key, x));
    Some(x)
}

/// A state's configurations: nearly always one or two (a lexeme that may end here or
/// grow), kept inline so that copying a state (a commit keeps the one before for
/// rollback) and stepping a byte allocate nothing.
type Configs = SmallVec<[Config; 2]>;

/// The recognizer state after some prefix: cheap to clone (configurations share nodes).
#[derive(Debug, Clone)]
pub struct GlrState {
    tables: Arc<Tables>,
    configs: Configs,
}

/// A commit that would leave no viable continuation; the state is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rejected: no document continues these bytes (failed at byte {byte} of the input)")]
pub struct Rejected {
    /// How many bytes of the committed input could be read before every configuration died
    /// (the input length if they were read but the result is not viable).
    pub byte: usize,
}

/// Why a token could not be committed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// The id is not a token of the vocabulary.
    #[error(transparent)]
    Token(crate::vocab::VocabError),
    /// The token has no bytes a grammar reads: end of sequence, an unused id, a special
    /// token without a name, or a normal token holding `vocab::SPECIAL_MARK`.
    #[error("token {0} carries no text a grammar reads (end of sequence, unused, or not text)")]
    NotText(u32),
    /// The bytes leave no viable continuation.
    #[error(transparent)]
    Rejected(Rejected),
}

impl GlrState {
    /// The state before any input.
    pub fn new(tables: Arc<Tables>) -> Self {
        let bottom = Node::bottom(tables.lr.start());
        Self {
            tables,
            configs: smallvec::smallvec![Config {
                pos: LexPos::Boundary(LexerDfa::DEAD),
                heads: Arc::from([bottom]),
                memo: Arc::default(),
                indent: Indent::default(),
                tail: Tail::default(),
            }],
        }
    }

    /// The tables this state runs on.
    pub fn tables(&self) -> &Arc<Tables> {
        &self.tables
    }

    /// The configurations (for the mask automaton and for debugging).
    pub fn configs(&self) -> &[Config] {
        &self.configs
    }

    /// Reads `bytes` and keeps the result only if it is viable.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), Rejected> {
        let mut viable = self.advance(bytes)?.configs;
        viable.retain(|c| self.config_viable(c));
        if viable.is_empty() {
            return Err(Rejected { byte: bytes.len() });
        }
        self.configs = viable;
        Ok(())
    }

    /// The state after `bytes`, without the viability check (configurations that are not
    /// viable may remain). `Err` if every configuration died on the way.
    pub fn advance(&self, bytes: &[u8]) -> Result<GlrState, Rejected> {
        // The first byte steps from this state's own configurations, not from a copy of
        // them (a copy is an atomic increment per shared part, and its drop as many).
        let Some((&first, rest)) = bytes.split_first() else {
            return Ok(self.clone());
        };
        let mut configs = self.step_byte(&self.configs, first);
        if configs.is_empty() {
            return Err(Rejected { byte: 0 });
        }
        for (i, &b) in rest.iter().enumerate() {
            configs = self.step_byte(&configs, b);
            if configs.is_empty() {
                return Err(Rejected { byte: i + 1 });
            }
        }
        Ok(GlrState {
            tables: self.tables.clone(),
            configs,
        })
    }

    fn step_byte(&self, configs: &[Config], b: u8) -> Configs {
        let lx = &self.tables.lexer;
        let indenter = self.tables.indenter.as_ref().map(|(i, _)| i);
        let tab_len = indenter.map_or(0, |i| i.tab_len);
        let mut out = Configs::new();
        let mut add = |pos: LexPos,
                       heads: Arc<[Arc<Node>]>,
                       memo: Arc<HeadsMemo>,
                       indent: &Indent,
                       tail: Tail| {
            match out
                .iter_mut()
                .find(|c| c.pos == pos && c.tail == tail && c.indent == *indent)
            {
                Some(c) => {
                    let all = c.heads.iter().chain(heads.iter()).cloned();
                    c.heads = Arc::from(merge_heads(all).as_slice());
                    c.memo = Arc::default(); // new heads: nothing known about them
                }
                None => out.push(Config {
                    pos,
                    heads,
                    memo,
                    indent: indent.clone(),
                    tail,
                }),
            }
        };
        for c in configs {
            // Dead at a boundary: the byte would have extended the last lexeme (or, under
            // longest match, completed a longer one behind it).
            let (q1, tail) = match c.pos {
                LexPos::Pending(q) => (lx.next(q, b), c.tail),
                LexPos::Boundary(p) => (lx.boundary_next(p, b), Tail::default()),
            };
            if lx.is_dead(q1) {
                continue;
            }
            // The lexeme's indentation, read only behind an indenter.
            let tail = match indenter {
                Some(_) => tail.step(b, tab_len),
                None => tail,
            };
            if lx.can_extend(q1) {
                add(
                    LexPos::Pending(q1),
                    c.heads.clone(),
                    c.memo.clone(),
                    &c.indent,
                    tail,
                );
            }
            let emits = lx.emits(q1);
            if emits.is_empty() {
                continue;
            }
            let inhibitor = lx.inhibitor(q1);
            match indenter {
                None => {
                    let (heads, memo) = self.emit_memo(c, emits);
                    if !heads.is_empty() {
                        add(
                            LexPos::Boundary(inhibitor),
                            heads,
                            memo,
                            &c.indent,
                            Tail::default(),
                        );
                    }
                }
                Some(ind) => {
                    for (indent, heads) in self.emit_indented(ind, c, emits, tail) {
                        let heads: Arc<[Arc<Node>]> = Arc::from(heads.as_slice());
                        add(
                            LexPos::Boundary(inhibitor),
                            heads,
                            Arc::default(),
                            &Indent::of(indent),
                            Tail::default(),
                        );
                    }
                }
            }
        }
        out
    }

    /// The stacks after a lexeme emitted as `terms` behind indenter `ind`, one entry per
    /// indentation they can leave (see `compile::grammar::ir::IndenterSpec`): a newline
    /// outside brackets is shifted with its indent or dedents (`tail` is its
    /// indentation), inside brackets dropped; brackets are counted; the rest as
    /// [`Self::emit`] does.
    fn emit_indented(
        &self,
        ind: &Indenter,
        c: &Config,
        terms: &[TerminalId],
        tail: Tail,
    ) -> SmallVec<[(Indentation, Heads); 2]> {
        let lx = &self.tables.lexer;
        let lr = &self.tables.lr;
        let real: SmallVec<[TerminalId; 2]> = terms
            .iter()
            .copied()
            .filter(|&t| !lx.is_ignored(t))
            .collect();
        let dropped = real
            .iter()
            .any(|&t| lx.is_droppable(t) && !step::can_consume(lr, &c.heads, t));
        let mut stays = real.len() < terms.len() || dropped;
        let mut plain: SmallVec<[TerminalId; 2]> = SmallVec::new();
        let mut out: SmallVec<[(Indentation, Heads); 2]> = SmallVec::new();
        let mut push = |indent: Indentation, heads: Heads| {
            if heads.is_empty() {
                return;
            }
            match out.iter_mut().find(|(i, _)| *i == indent) {
                Some((_, h)) => *h = merge_heads(h.drain(..).chain(heads)),
                None => out.push((indent, heads)),
            }
        };
        for &t in &real {
            if t == ind.nl {
                if c.indent.get().brackets > 0 {
                    stays = true;
                } else if let Some((indent, heads)) = self.newline(ind, c, tail) {
                    push(indent, heads);
                }
            } else if ind.open.contains(&t) {
                let indent = Indentation {
                    brackets: c.indent.get().brackets + 1,
                    ..c.indent.get().clone()
                };
                push(indent, step::shift(lr, &c.heads, &[t]));
            } else if ind.close.contains(&t) {
                // A closing bracket nothing opened is an error to the indenter.
                if c.indent.get().brackets > 0 {
                    let indent = Indentation {
                        brackets: c.indent.get().brackets - 1,
                        ..c.indent.get().clone()
                    };
                    push(indent, step::shift(lr, &c.heads, &[t]));
                }
            } else {
                plain.push(t);
            }
        }
        if !plain.is_empty() || stays {
            let mut heads = if plain.is_empty() {
                Heads::new()
            } else {
                step::shift(lr, &c.heads, &plain)
            };
            if stays {
                heads.extend(c.heads.iter().cloned());
                heads = merge_heads(heads);
            }
            push(c.indent.get().clone(), heads);
        }
        out
    }

    /// A newline lexeme outside brackets on `c`'s stacks: the newline, then one indent
    /// if its line is deeper than the last open level, or one dedent per level it closes
    /// (landing on an open level). `None` if that fails or the lexeme has no newline.
    fn newline(&self, ind: &Indenter, c: &Config, tail: Tail) -> Option<(Indentation, Heads)> {
        if !tail.newline {
            return None;
        }
        let mut indent = c.indent.get().clone();
        let top = |i: &Indentation| i.levels.last().copied().unwrap_or(0);
        let then = if tail.width > top(&indent) {
            indent.levels.push(tail.width);
            AfterNewline::Indent
        } else {
            let mut n = 0;
            while tail.width < top(&indent) {
                indent.levels.pop();
                n += 1;
            }
            if tail.width != top(&indent) {
                return None;
            }
            AfterNewline::Dedents(n)
        };
        let heads = self.after_newline(ind, c, then);
        (!heads.is_empty()).then_some((indent, heads))
    }

    /// `c`'s heads after the newline terminal and `then` (empty: none can take them),
    /// remembered with `c`'s heads: the masks at a statement boundary read them for each
    /// indentation a token can reach, and the commit that ends the newline lexeme again.
    fn after_newline(&self, ind: &Indenter, c: &Config, then: AfterNewline) -> Heads {
        let lr = &self.tables.lr;
        let shift = |heads: &Heads, t| {
            if heads.is_empty() {
                Heads::new()
            } else {
                step::shift(lr, heads, &[t])
            }
        };
        let mut memo = c
            .memo
            .after_newline
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, heads)) = memo.iter().find(|(k, _)| *k == then) {
            return heads.clone();
        }
        // The most dedents known up to those asked for (none: the newline alone).
        let upto = match then {
            AfterNewline::Indent => 0,
            AfterNewline::Dedents(n) => n,
        };
        let known = memo
            .iter()
            .filter_map(|(k, h)| match *k {
                AfterNewline::Dedents(d) if d <= upto => Some((d, h)),
                _ => None,
            })
            .max_by_key(|&(d, _)| d)
            .map(|(d, h)| (d, h.clone()));
        let (mut d, mut heads) = known.unwrap_or_else(|| {
            let heads = step::shift(lr, &c.heads, &[ind.nl]);
            memo.push((AfterNewline::Dedents(0), heads.clone()));
            (0, heads)
        });
        if then == AfterNewline::Indent {
            heads = shift(&heads, ind.indent);
            memo.push((then, heads.clone()));
            return heads;
        }
        while d < upto {
            heads = shift(&heads, ind.dedent);
            d += 1;
            memo.push((AfterNewline::Dedents(d), heads.clone()));
        }
        heads
    }

    /// `c`'s stacks after a newline lexeme outside brackets that leaves `keep` levels
    /// open (one more than `c`'s: an indent; fewer: one dedent per level closed), `None`
    /// when none can take it. What the mask automaton's indentation rules read
    /// (`dwa::indents`); the width that resolved to `keep` is theirs to compare.
    pub fn heads_after_newline(&self, c: &Config, keep: usize) -> Option<Vec<Arc<Node>>> {
        let (ind, _) = self.tables.indenter.as_ref()?;
        let open = c.indent.get().levels.len();
        let then = if keep > open {
            AfterNewline::Indent
        } else {
            AfterNewline::Dedents(open - keep)
        };
        let heads = self.after_newline(ind, c, then);
        (!heads.is_empty()).then(|| heads.into_iter().collect())
    }

    /// `c`'s stacks with every open level closed (as at the end of input): one dedent
    /// per level.
    fn closed(&self, c: &Config) -> Heads {
        let mut heads: Heads = c.heads.iter().cloned().collect();
        if let Some((ind, _)) = &self.tables.indenter {
            for _ in &c.indent.get().levels {
                heads = step::shift(&self.tables.lr, &heads, &[ind.dedent]);
            }
        }
        heads
    }

    /// [`Self::emit`] on `c`'s heads, reusing an earlier byte's emission of the same
    /// terminals from the same heads.
    fn emit_memo(&self, c: &Config, terms: &[TerminalId]) -> (Arc<[Arc<Node>]>, Arc<HeadsMemo>) {
        self.emit_on(&c.heads, &c.memo, terms)
    }

    /// [`Self::emit_memo`] on heads `heads` whose memo is `memo`.
    pub(super) fn emit_on(
        &self,
        heads: &[Arc<Node>],
        memo: &HeadsMemo,
        terms: &[TerminalId],
    ) -> (Arc<[Arc<Node>]>, Arc<HeadsMemo>) {
        let mut done = memo.emitted.lock().unwrap_or_else(|e| e.into_inner());
        let (heads, facts) = match done.iter().find(|(t, _, _)| t.as_slice() == terms) {
            Some((_, heads, facts)) => (heads.clone(), facts.clone()),
            None => {
                let heads: Arc<[Arc<Node>]> = Arc::from(self.emit(heads, terms).as_slice());
                let facts = Arc::<HeadsFacts>::default();
                done.push((SmallVec::from_slice(terms), heads.clone(), facts.clone()));
                (heads, facts)
            }
        };
        // A memo of its own: what the next lexeme emits stays with this lineage.
        let memo = Arc::new(HeadsMemo {
            facts,
            emitted: Mutex::default(),
            after_newline: Mutex::default(),
        });
        (heads, memo)
    }

    /// The stacks after a lexeme emitted as `terms`: each terminal the stacks can take is
    /// shifted, and the stacks stay as they are besides when one of the terminals is
    /// ignored, or droppable and no stack can take it.
    fn emit(&self, heads: &[Arc<Node>], terms: &[TerminalId]) -> Heads {
        let lx = &self.tables.lexer;
        let real: smallvec::SmallVec<[TerminalId; 2]> = terms
            .iter()
            .copied()
            .filter(|&t| !lx.is_ignored(t))
            .collect();
        let lr = &self.tables.lr;
        let mut out = if real.is_empty() {
            Heads::new()
        } else {
            step::shift(lr, heads, &real)
        };
        let dropped = real
            .iter()
            .any(|&t| lx.is_droppable(t) && !step::can_consume(lr, heads, t));
        if real.len() < terms.len() || dropped {
            out.extend(heads.iter().cloned());
            out = merge_heads(out);
        }
        out
    }

    fn config_viable(&self, c: &Config) -> bool {
        if let Some((ind, inside)) = &self.tables.indenter {
            return self.config_viable_indented(ind, inside, c);
        }
        self.viable_on(c.pos, &c.heads, &c.memo)
    }

    /// [`Self::config_viable`] without an indenter, for a configuration at `pos` on heads
    /// `heads` whose memo is `memo`.
    pub(super) fn viable_on(&self, pos: LexPos, heads: &[Arc<Node>], memo: &HeadsMemo) -> bool {
        debug_assert!(self.tables.indenter.is_none(), "no indentation read here");
        // A counted run's iterations share their template's follow sets.
        let follow = match self.tables.lexer.rep_pos(pos) {
            LexPos::Pending(q) => self.tables.follow.after_pending(q),
            LexPos::Boundary(p) => self.tables.follow.at_boundary(p),
        };
        let lr = &self.tables.lr;
        memo.viable(follow as *const TermSet as usize, || {
            // A terminal no head has an action on is not consumable; answering that here
            // keeps it out of the verdict memo, a short list that enum-heavy follow sets
            // (thousands of terminals) made quadratic: 350 µs a commit.
            let actionable =
                |t: &TerminalId| heads.iter().any(|h| !lr.actions(h.state(), *t).is_empty());
            // Cheap questions first: a terminal whose reductions run down a long chain
            // (`}` after a value of a 200-member object: ~100 µs) is asked in full only
            // if no terminal answers within a few reductions (`,` does there).
            let mut deferred: SmallVec<[TerminalId; 4]> = SmallVec::new();
            for t in follow.iter().filter(actionable) {
                let quick = memo.verdict_if(t, || {
                    step::can_consume_within(lr, heads, t, Some(QUICK_REDUCTIONS))
                });
                match quick {
                    Some(true) => return true,
                    Some(false) => {}
                    None => deferred.push(t),
                }
            }
            deferred
                .into_iter()
                .any(|t| memo.verdict(t, || step::can_consume(lr, heads, t)))
        })
    }

    /// [`Self::config_viable`] behind an indenter: inside brackets newlines are stepped
    /// over (`inside`'s follow sets), a closing bracket needs an open one, and the end
    /// of input comes after every open level is closed. A newline counts as itself (the
    /// next line's width is free, so its indent or dedents can always be had).
    fn config_viable_indented(&self, ind: &Indenter, inside: &LexFollow, c: &Config) -> bool {
        let table = if c.indent.get().brackets > 0 {
            inside
        } else {
            &self.tables.follow
        };
        let follow = match self.tables.lexer.rep_pos(c.pos) {
            LexPos::Pending(q) => table.after_pending(q),
            LexPos::Boundary(p) => table.at_boundary(p),
        };
        let lr = &self.tables.lr;
        let eof = lr.eof();
        follow.iter().any(|t| {
            if t == eof {
                step::can_consume(lr, &self.closed(c), eof)
            } else if ind.close.contains(&t) && c.indent.get().brackets == 0 {
                false
            } else {
                c.memo.verdict(t, || step::can_consume(lr, &c.heads, t))
            }
        })
    }

    /// Commits one vocabulary token, as the bytes a grammar reads for it
    /// ([`crate::vocab::Vocab::mask_bytes`]: a named special token reads as its lexeme).
    /// End of sequence (asked with [`Self::is_accepting`]), tokens no grammar reads and
    /// invalid ids are errors; nothing changes on error.
    pub fn commit_token(
        &mut self,
        vocab: &crate::vocab::Vocab,
        t: crate::ids::TokenId,
    ) -> Result<(), CommitError> {
        vocab.check_id(t).map_err(CommitError::Token)?;
        let bytes = vocab
            .mask_bytes(t)
            .ok_or(CommitError::NotText(t.as_u32()))?;
        self.commit_bytes(bytes).map_err(CommitError::Rejected)
    }

    /// Whether some continuation completes a document (true after every successful commit).
    pub fn is_viable(&self) -> bool {
        self.configs.iter().any(|c| self.config_viable(c))
    }

    /// Whether the input so far is a complete document (end of input allowed now).
    pub fn is_accepting(&self) -> bool {
        let eof = self.tables.lr.eof();
        self.configs.iter().any(|c| {
            matches!(c.pos, LexPos::Boundary(_))
                && if c.indent.get().levels.is_empty() {
                    step::can_consume(&self.tables.lr, &c.heads, eof)
                } else {
                    step::can_consume(&self.tables.lr, &self.closed(c), eof)
                }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Config, GlrState, HeadsMemo, Node};
    use crate::compile::{build_glr_tables, compile_grammar, GrammarFormat};
    use crate::ids::LrStateId;

    /// Every path of states from `heads` to the bottom, sorted: two head sets with equal
    /// paths are the same stacks, whichever nodes hold them.
    fn paths(heads: &[Arc<Node>]) -> Vec<Vec<LrStateId>> {
        fn down(n: &Node, path: &mut Vec<LrStateId>, out: &mut Vec<Vec<LrStateId>>) {
            path.push(n.state());
            if n.preds().is_empty() {
                out.push(path.clone());
            }
            for p in n.preds() {
                down(p, path, out);
            }
            path.pop();
        }
        let mut out = Vec::new();
        for h in heads {
            down(h, &mut Vec::new(), &mut out);
        }
        out.sort();
        out
    }

    /// The heads after a pending newline, asked for in an order that makes the memo
    /// start from a shorter dedent chain, from the newline alone and from an indent,
    /// equal those shifted from scratch for each (a fresh memo per question).
    #[test]
    fn remembered_heads_after_a_newline_equal_those_shifted_afresh() {
        let text = include_str!("../../tests/corpus/indent/grammar.lark");
        let g = compile_grammar(text, GrammarFormat::Lark).unwrap();
        let tables = Arc::new(build_glr_tables(&g).unwrap());
        let doc = "if a:\n    if b:\n        while c:\n            x = d\n";
        let mut state = GlrState::new(tables);
        state.commit_bytes(doc.as_bytes()).unwrap();
        let pending: Vec<&Config> = state
            .configs()
            .iter()
            .filter(|c| c.tail.newline && c.indent.get().levels.len() == 3)
            .collect();
        assert!(
            !pending.is_empty(),
            "a configuration with a pending newline"
        );
        for c in pending {
            let mut taken = 0;
            for keep in [2, 0, 4, 3, 1, 0, 4] {
                let fresh = Config {
                    memo: Arc::new(HeadsMemo::default()),
                    ..c.clone()
                };
                let afresh = state.heads_after_newline(&fresh, keep);
                let remembered = state.heads_after_newline(c, keep);
                assert_eq!(
                    afresh.as_deref().map(paths),
                    remembered.as_deref().map(paths),
                    "keep {keep}"
                );
                taken += usize::from(remembered.is_some());
            }
            // Dedenting to level 0 or 1, staying at 3 and indenting to 4 all parse here.
            assert!(taken >= 3, "{taken} resolutions took the newline");
        }
    }
}

//! Pass: token classes with droppable lexemes → virtual classes and decision trees (per
//! position, after `token_classes`).
//!
//! A droppable lexeme (its emission holds a droppable terminal `d`) is taken as any
//! lexeme, and also skipped when no stack of the configuration can take `d`. That is a
//! question about all the stacks at once, which a walk of the automaton (one path at a
//! time, united at the end) cannot ask on a path. So a class whose outcome has `m`
//! droppable lexemes is decided from *virtual* classes, which the walk decides as any
//! other, united over the configuration's stacks:
//! - for each choice δ ∈ {take, skip}^m, the **variant** `V_δ`: the outcome's emissions,
//!   each skipped lexeme in its skipped form ([`DropRule::skipped`]: its terminals, or the
//!   stacks stay);
//! - for each prefix δ<j of a choice, the **test** `C_δ<j`: the emissions before the j-th
//!   droppable lexeme (in δ<j's forms), then "its `d` can be consumed".
//!
//! `C_δ<j` is then exactly "some stack can take `d` after the lexemes before it went
//! δ<j's way", which is when lexeme j is taken. So the class's bit is read off a tree:
//! from the root, `m` tests down to one variant ([`DropTrees`]); a class with two
//! outcomes is allowed when either tree allows it. Virtual classes hold no tokens and
//! equal ones (same emissions, same end) are one class.
//!
//! Trees double with each droppable lexeme: an outcome with more than [`MAX_DROPS`] of
//! them (a token of sixteen `;` against Go's `EOS`) leaves its class *overflowing*, to be
//! decided by committing its tokens on the recognizer at mask time (`runtime`).

use hashbrown::HashMap;
use roaring::RoaringBitmap;
use smallvec::SmallVec;

use crate::compile::dwa::terminal_trie::{EmitId, EmitTable};
use crate::compile::dwa::token_classes::{ClassList, ClassedTrie, DropTrees, Shape};
use crate::ids::LexStateId;
use crate::ids::TerminalId;
use crate::lexer::{LexFollow, LexPos, LexerDfa};

/// Most droppable lexemes in one outcome that the automaton decides (its tree has
/// `2^(MAX_DROPS+1) − 1` virtual classes at most).
pub const MAX_DROPS: usize = 6;

/// How a virtual class ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum End {
    /// At a lexer position, as a real class (a variant).
    At(LexPos),
    /// Asking whether the terminal can be consumed (a test).
    Consumes(TerminalId),
}

/// A class's emissions and its one or two outcomes (depth, position).
#[derive(Debug, Default)]
struct Outcomes {
    emits: SmallVec<[EmitId; 8]>,
    ends: SmallVec<[(usize, LexPos); 2]>,
}

/// Adds the virtual classes and trees that decide `ct`'s classes with droppable lexemes
/// (those classes are taken off the automaton's sets). Returns the trie and the classes
/// left overflowing (see the module doc). A trie without droppable lexemes is returned as
/// it was.
pub fn with_drops<S: Default>(
    mut ct: ClassedTrie<S>,
    lexer: &LexerDfa,
    follow: &LexFollow,
    emits: &EmitTable,
) -> (ClassedTrie<S>, Vec<u32>) {
    let shape = &ct.shape;
    let mut marked = RoaringBitmap::new();
    for es in &shape.emits {
        for (e, cl) in es {
            if emits.drop_rule(*e).is_some() {
                marked |= cl.to_bitmap();
            }
        }
    }
    if marked.is_empty() {
        return (ct, Vec::new());
    }
    let drops_in = |o: &Outcomes, depth: usize| {
        o.emits[..depth]
            .iter()
            .filter(|&&e| emits.drop_rule(e).is_some())
            .count()
    };
    // A closed outcome (its last lexeme emitted, at the boundary that lexeme inhibits)
    // allows nothing its pending partner does not when what the closed one can consume
    // next (that lexeme's terminals, or after it, dropped or not, the boundary's
    // terminals) the pending lexeme can still become: `C⁺(q)` holds them. Such outcomes
    // are left out of the trees; a class whose other outcomes hold no droppable lexeme
    // is left as it was (its closed outcome, read as a plain emission, then allows
    // nothing more either). Go's newline-ending tokens are such classes.
    let subsumed = |o: &Outcomes, d: usize, q: LexStateId| {
        let after = follow.after_pending(q);
        let boundary = follow.at_boundary(q);
        d >= 1
            && o.ends.contains(&(d - 1, LexPos::Pending(q)))
            && emits
                .terminals(o.emits[d - 1])
                .iter()
                .all(|&t| lexer.is_ignored(t) || after.contains(t))
            && boundary
                .words()
                .iter()
                .zip(after.words())
                .all(|(b, a)| b & !a == 0)
    };
    let mut deciding: Vec<(u32, Outcomes)> = Vec::new();
    for (c, mut o) in marked.iter().zip(outcomes_of(shape, &marked)) {
        let keep: SmallVec<[bool; 2]> = o
            .ends
            .iter()
            .map(|&(d, p)| !matches!(p, LexPos::Boundary(q) if subsumed(&o, d, q)))
            .collect();
        let mut k = keep.iter();
        o.ends.retain(|_| *k.next().unwrap_or(&true));
        if o.ends.iter().any(|&(d, _)| drops_in(&o, d) > 0) {
            deciding.push((c, o));
        }
    }
    let marked: RoaringBitmap = deciding.iter().map(|(c, _)| *c).collect();
    if marked.is_empty() {
        return (ct, Vec::new());
    }
    let n = shape.num_classes;
    let mut virtuals = Virtuals::default();
    let mut trees = DropTrees {
        first_virtual: n,
        ..DropTrees::default()
    };
    let mut overflow = Vec::new();
    for (c, o) in &deciding {
        if o.ends
            .iter()
            .any(|&(depth, _)| drops_in(o, depth) > MAX_DROPS)
        {
            overflow.push(*c);
            continue;
        }
        for &(depth, pos) in &o.ends {
            let start = trees.nodes.len() as u32;
            let levels = tree(
                &o.emits[..depth],
                pos,
                emits,
                &mut virtuals,
                &mut trees.nodes,
            );
            trees.rules.push((*c, levels, start));
        }
    }
    ct.shape = reshape(&ct.shape, &marked, &virtuals, trees);
    ct.tokens
        .extend((0..virtuals.keys.len()).map(|_| S::default()));
    (ct, overflow)
}

/// Each marked class's emissions and ends, in class order.
fn outcomes_of(shape: &Shape, marked: &RoaringBitmap) -> Vec<Outcomes> {
    let rank = |c: u32| marked.rank(c) as usize - 1;
    let mut out: Vec<Outcomes> = (0..marked.len()).map(|_| Outcomes::default()).collect();
    let in_list = |cl: &ClassList| {
        cl.0.iter()
            .flat_map(|&(lo, hi)| marked.range(lo..=hi))
            .collect::<SmallVec<[u32; 16]>>()
    };
    for (d, es) in shape.emits.iter().enumerate().skip(1) {
        for (e, cl) in es {
            for c in in_list(cl) {
                let o = &mut out[rank(c)];
                // Emissions are listed depth by depth, so each class's arrive in order.
                debug_assert_eq!(o.emits.len(), d - 1);
                o.emits.push(*e);
            }
        }
    }
    for (d, fs) in shape.finals.iter().enumerate() {
        for (p, cl) in fs {
            for c in in_list(cl) {
                out[rank(c)].ends.push((d, *p));
            }
        }
    }
    out
}

/// Virtual classes by emissions and end, in order of first use.
#[derive(Default)]
struct Virtuals {
    index: HashMap<(SmallVec<[EmitId; 8]>, End), u32>,
    keys: Vec<(SmallVec<[EmitId; 8]>, End)>,
}

impl Virtuals {
    /// The virtual class (its index among the virtual classes) of these emissions and end.
    fn id(&mut self, emits: &[EmitId], end: End) -> u32 {
        let key = (SmallVec::from_slice(emits), end);
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.keys.len() as u32;
        self.index.insert(key.clone(), i);
        self.keys.push(key);
        i
    }
}

/// Appends the tree of one outcome (emissions `seq`, ending at `pos`) to `nodes`, its
/// nodes as indices among the virtual classes; returns its number of levels.
fn tree(
    seq: &[EmitId],
    pos: LexPos,
    emits: &EmitTable,
    virtuals: &mut Virtuals,
    nodes: &mut Vec<u32>,
) -> u32 {
    let at: SmallVec<[usize; 8]> = (0..seq.len())
        .filter(|&i| emits.drop_rule(seq[i]).is_some())
        .collect();
    let m = at.len();
    // Node k's choices: the path from the root, as "skipped" flags, one per level.
    let choices = |k: usize| -> SmallVec<[bool; 8]> {
        let mut path = SmallVec::new();
        let mut k = k;
        while k > 0 {
            path.push(k % 2 == 0);
            k = (k - 1) / 2;
        }
        path.reverse();
        path
    };
    // The emissions up to `len` with the droppable lexemes before it as `skipped` says.
    let forms = |len: usize, skipped: &[bool]| -> SmallVec<[EmitId; 8]> {
        let mut out: SmallVec<[EmitId; 8]> = SmallVec::from_slice(&seq[..len]);
        for (&i, &s) in at.iter().zip(skipped) {
            if s && i < len {
                // Every index in `at` has a rule.
                out[i] = emits.drop_rule(seq[i]).map_or(seq[i], |r| r.skipped);
            }
        }
        out
    };
    for k in 0..(1usize << (m + 1)) - 1 {
        let path = choices(k);
        let level = path.len();
        let id = if level < m {
            let rule = emits.drop_rule(seq[at[level]]).expect("a droppable lexeme");
            virtuals.id(&forms(at[level], &path), End::Consumes(rule.terminal))
        } else {
            virtuals.id(&forms(seq.len(), &path), End::At(pos))
        };
        nodes.push(id);
    }
    m as u32
}

/// `shape` without the marked classes, with the virtual classes after its own (node
/// indices in `trees` renumbered into class ids).
fn reshape(shape: &Shape, marked: &RoaringBitmap, virtuals: &Virtuals, trees: DropTrees) -> Shape {
    let n = shape.num_classes;
    let depth = shape.emits.len().max(shape.finals.len());
    let mut emits: Vec<HashMap<EmitId, Vec<u32>>> = vec![HashMap::new(); depth];
    let mut finals: Vec<HashMap<LexPos, Vec<u32>>> = vec![HashMap::new(); depth];
    let mut consumes: Vec<HashMap<TerminalId, Vec<u32>>> = vec![HashMap::new(); depth];
    for (i, (seq, end)) in virtuals.keys.iter().enumerate() {
        let c = n + i as u32;
        for (d, e) in seq.iter().enumerate() {
            emits[d + 1].entry(*e).or_default().push(c);
        }
        match *end {
            End::At(p) => finals[seq.len()].entry(p).or_default().push(c),
            End::Consumes(t) => consumes[seq.len()].entry(t).or_default().push(c),
        }
    }
    let none: &[(LexPos, ClassList)] = &[];
    let emits = shape
        .emits
        .iter()
        .zip(emits)
        .map(|(own, extra)| merged(own, extra, marked))
        .collect();
    let finals = shape
        .finals
        .iter()
        .map(Vec::as_slice)
        .chain(std::iter::repeat(none))
        .zip(finals)
        .map(|(own, extra)| merged(own, extra, marked))
        .collect();
    let consumes = consumes
        .into_iter()
        .map(|extra| merged(&[], extra, marked))
        .collect();
    let nodes = trees.nodes.iter().map(|&i| n + i).collect();
    Shape {
        num_classes: n + virtuals.keys.len() as u32,
        emits,
        finals,
        consumes,
        drops: DropTrees { nodes, ..trees },
        inside: shape.inside.clone(),
        indents: shape.indents.clone(),
    }
}

/// One depth's groups of a shape (`own`, by key) without the marked classes, with the
/// virtual classes `extra` adds by key; empty groups left out, sorted by key.
fn merged<K: Copy + Eq + std::hash::Hash + Ord>(
    own: &[(K, ClassList)],
    mut extra: HashMap<K, Vec<u32>>,
    marked: &RoaringBitmap,
) -> Vec<(K, ClassList)> {
    let list = |own: Option<&ClassList>, virtual_classes: Option<Vec<u32>>| {
        let mut ranges = own.map(|cl| without(cl, marked)).unwrap_or_default();
        // Virtual classes come after every own class, in increasing order.
        ranges.extend(virtual_classes.into_iter().flatten().map(|c| (c, c)));
        ClassList::from_disjoint_ranges(ranges)
    };
    let mut out: Vec<(K, ClassList)> = own
        .iter()
        .map(|(k, cl)| (*k, list(Some(cl), extra.remove(k))))
        .collect();
    out.extend(extra.drain().map(|(k, cs)| (k, list(None, Some(cs)))));
    out.retain(|(_, cl)| !cl.0.is_empty());
    out.sort_by_key(|a| a.0);
    out
}

/// The ranges of `list` without the classes in `marked`.
fn without(list: &ClassList, marked: &RoaringBitmap) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(list.0.len());
    for &(lo, hi) in &list.0 {
        let mut from = lo;
        for c in marked.range(lo..=hi) {
            if c > from {
                out.push((from, c - 1));
            }
            from = c + 1;
        }
        if from <= hi {
            out.push((from, hi));
        }
    }
    out
}

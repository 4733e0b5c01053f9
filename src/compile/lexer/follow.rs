//! Pass: lexer DFA → [`LexFollow`] tables, by fixpoint iteration over lexer states.
//!
//! With `C(q)` the terminals reachable from state `q` by zero or more bytes (a complete
//! non-ignored terminal, or `B(q)` after an ignored one, and after a droppable one too,
//! which the parser may skip) and `B(p)` the terminals that can
//! start at a boundary inhibited by `p` (end of input, plus `C(next(START, b))` for every
//! byte `b` that does not extend `p`), the tables are `B` and `C⁺(q) = ⋃ C(next(q, b))`.
//!
//! A counted run's template stands for all its iterations: its successors are those of
//! the collapsed table plus the run's exits ([`LexerDfa::next_exit`]), so what any
//! iteration can reach is reached.

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::ids::{LexStateId, TerminalId};
use crate::lexer::{LexFollow, LexerDfa};
use crate::termset::TermSet;

/// Computes the follow tables of a lexer.
///
/// Sets live in one flat word array and each state's successors are listed once,
/// deduplicated: most bytes lead a state to the same few states, and a lexer with 100K+
/// states (string patterns of a large JSON Schema side by side) spent its time cloning a
/// set per state and uniting it with the same successor's set for byte after byte.
pub fn build_follow(lexer: &LexerDfa) -> LexFollow {
    build_follow_dropping(lexer, None)
}

/// [`build_follow`] with terminal `dropped` read as an ignored one (an indenter's newline
/// inside brackets, which the indenter drops).
pub fn build_follow_dropping(lexer: &LexerDfa, dropped: Option<TerminalId>) -> LexFollow {
    let n = lexer.num_states();
    let nt = lexer.terminals().len();
    let width = nt + 1;
    let w = width.div_ceil(64);
    let eof = TerminalId::new(nt);
    let reps = lexer.class_representatives();
    let id = LexStateId::new;
    let (succ_at, succ, dies_of) = successors(lexer, &reps);
    let succ_of = |q: usize| &succ[succ_at[q] as usize..succ_at[q + 1] as usize];
    // Per state: the non-ignored terminals it emits (fixed), and, when it emits an
    // ignored or a droppable one, the boundary whose set it adds (the one it inhibits, or
    // the plain one): what may follow a lexeme the parser never sees, or may skip.
    let mut base = vec![0u64; n * w];
    let mut ignores: Vec<Option<u32>> = vec![None; n];
    for q in 1..n {
        for &t in lexer.emits(id(q)) {
            let ignored = lexer.is_ignored(t) || Some(t) == dropped;
            if ignored || lexer.is_droppable(t) {
                ignores[q] = Some(lexer.inhibitor(id(q)).as_u32());
            }
            if !ignored {
                base[q * w + t.index() / 64] |= 1 << (t.index() % 64);
            }
        }
    }
    // With lexer modes a boundary's bytes also depend on the mode after it.
    let (group_of, group_starts) = if lexer.longest_match() || lexer.has_modes() {
        shadowed_boundary_groups(lexer, &reps)
    } else {
        boundary_groups(lexer, &reps, dies_of)
    };
    let mut c = vec![0u64; n * w];
    let mut b = vec![0u64; group_starts.len() * w];
    for g in 0..group_starts.len() {
        b[g * w + eof.index() / 64] |= 1 << (eof.index() % 64);
    }
    let mut acc = vec![0u64; w];
    loop {
        let mut changed = false;
        // Successors mostly have higher ids, so a descending pass carries most of the
        // reachability at once (a long counted string would otherwise take a pass per
        // character). Sets only grow, so updating in place reaches the same fixpoint.
        for q in (1..n).rev() {
            acc.copy_from_slice(&base[q * w..(q + 1) * w]);
            if let Some(p) = ignores[q] {
                let g = group_of[p as usize] as usize;
                or_into(&mut acc, &b[g * w..(g + 1) * w]);
            }
            for &q1 in succ_of(q) {
                let q1 = q1 as usize;
                or_into(&mut acc, &c[q1 * w..(q1 + 1) * w]);
            }
            changed |= or_into(&mut c[q * w..(q + 1) * w], &acc);
        }
        for (g, starts) in group_starts.iter().enumerate() {
            for &q1 in starts {
                let q1 = q1 as usize;
                acc.copy_from_slice(&c[q1 * w..(q1 + 1) * w]);
                changed |= or_into(&mut b[g * w..(g + 1) * w], &acc);
            }
        }
        if !changed {
            break;
        }
    }
    let set = |words: &[u64]| {
        // Only terminal bits and the end-of-input bit are ever set.
        TermSet::from_words(words, width).expect("follow words within the universe")
    };
    // A set per state, each its own allocation: made on every thread, as are the pending ones.
    let boundary = (0..n)
        .into_par_iter()
        .map(|p| {
            let g = group_of[p] as usize;
            set(&b[g * w..(g + 1) * w])
        })
        .collect();
    let pending = (0..n)
        .into_par_iter()
        .map_init(
            || vec![0u64; w],
            |acc, q| {
                acc.fill(0);
                for &q1 in succ_of(q) {
                    let q1 = q1 as usize;
                    or_into(acc, &c[q1 * w..(q1 + 1) * w]);
                }
                set(acc)
            },
        )
        .collect();
    // Shapes match the lexer by construction.
    LexFollow::from_parts(boundary, pending, n, nt).expect("follow tables built consistently")
}

/// Per state, its live successors (the way out of a run included), deduplicated and
/// sorted, as offsets into one list (`succ_at`, `n + 1` of them, and `succ`), and which
/// byte classes end its lexeme. Read state by state, in parallel a block of states at a
/// time, then laid end to end in order.
fn successors(lexer: &LexerDfa, reps: &[u8]) -> (Vec<u32>, Vec<u32>, Vec<Dies>) {
    let n = lexer.num_states();
    let id = LexStateId::new;
    let blocks: Vec<(Vec<u32>, Vec<u32>, Vec<Dies>)> = (0..n.div_ceil(FOLLOW_BLOCK))
        .into_par_iter()
        .map_init(
            // Per thread: which state last listed each successor. Rows send most bytes to
            // a few states, and sorting every byte's successor to deduplicate them was
            // most of this pass on 100K-state lexers.
            || vec![u32::MAX; n],
            |listed, k| {
                let states = k * FOLLOW_BLOCK..((k + 1) * FOLLOW_BLOCK).min(n);
                let mut lens = Vec::with_capacity(states.len());
                let mut succ = Vec::new();
                let mut dies = Vec::with_capacity(states.len());
                for q in states {
                    let q0 = id(q);
                    let mut d: Dies = [0; 4];
                    let at = succ.len();
                    // The dead state is in no run.
                    let exits = lexer.run_exits(q0);
                    for (i, &byte) in reps.iter().enumerate() {
                        let q1 = lexer.next_rep(q0, byte);
                        if lexer.is_dead(q1) {
                            d[i / 64] |= 1 << (i % 64);
                        } else if q != 0 && listed[q1.index()] != q as u32 {
                            listed[q1.index()] = q as u32;
                            succ.push(q1.as_u32());
                        }
                        if let Some(q1) = exits.and_then(|x| x.exit(q1)) {
                            if !lexer.is_dead(q1) && listed[q1.index()] != q as u32 {
                                listed[q1.index()] = q as u32;
                                succ.push(q1.as_u32());
                            }
                        }
                    }
                    succ[at..].sort_unstable();
                    dies.push(d);
                    lens.push((succ.len() - at) as u32);
                }
                (lens, succ, dies)
            },
        )
        .collect();
    let mut succ_at: Vec<u32> = Vec::with_capacity(n + 1);
    let mut succ: Vec<u32> = Vec::new();
    let mut dies_of: Vec<Dies> = Vec::with_capacity(n);
    for (lens, block, dies) in blocks {
        let mut at = succ.len() as u32;
        for l in lens {
            succ_at.push(at);
            at += l;
        }
        succ.extend_from_slice(&block);
        dies_of.extend(dies);
    }
    succ_at.push(succ.len() as u32);
    (succ_at, succ, dies_of)
}

/// A boundary's set depends only on which bytes end the lexeme there: states with the
/// same dying bytes share it. Returns each state's group and, per group, the live states
/// `START` enters on those bytes.
fn boundary_groups(lexer: &LexerDfa, reps: &[u8], dies_of: Vec<Dies>) -> (Vec<u32>, Vec<Vec<u32>>) {
    let n = dies_of.len();
    let mut group_of: Vec<u32> = Vec::with_capacity(n);
    let mut groups: HashMap<Dies, u32> = HashMap::new();
    let mut group_starts: Vec<Vec<u32>> = Vec::new();
    for dies in dies_of {
        let next = groups.len() as u32;
        let g = *groups.entry(dies).or_insert_with_key(|dies| {
            let mut starts: Vec<u32> = reps
                .iter()
                .enumerate()
                .filter(|&(i, _)| dies[i / 64] >> (i % 64) & 1 == 1)
                .map(|(_, &byte)| lexer.next_rep(LexerDfa::START, byte))
                .filter(|q1| !lexer.is_dead(*q1))
                .map(|q1| q1.as_u32())
                .collect();
            starts.sort_unstable();
            starts.dedup();
            group_starts.push(starts);
            next
        });
        group_of.push(g);
    }
    (group_of, group_starts)
}

/// [`boundary_groups`] under longest-match lexing or lexer modes, where the bytes a
/// boundary allows and the states they start also depend on its shadows or its mode:
/// states are grouped by the states their boundary row starts.
fn shadowed_boundary_groups(lexer: &LexerDfa, reps: &[u8]) -> (Vec<u32>, Vec<Vec<u32>>) {
    let n = lexer.num_states();
    let mut group_of: Vec<u32> = Vec::with_capacity(n);
    let mut groups: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut group_starts: Vec<Vec<u32>> = Vec::new();
    for p in 0..n {
        let mut starts: Vec<u32> = reps
            .iter()
            .map(|&byte| lexer.boundary_next_rep(LexStateId::new(p), byte))
            .filter(|q1| !lexer.is_dead(*q1))
            .map(|q1| q1.as_u32())
            .collect();
        starts.sort_unstable();
        starts.dedup();
        let next = groups.len() as u32;
        let g = *groups.entry(starts).or_insert_with_key(|starts| {
            group_starts.push(starts.clone());
            next
        });
        group_of.push(g);
    }
    (group_of, group_starts)
}

/// Which byte classes (by number, at most 256) lead a state to the dead state.
type Dies = [u64; 4];

/// States read per parallel task in [`build_follow`].
const FOLLOW_BLOCK: usize = 1024;

/// `a |= b` word by word; returns whether `a` grew.
#[inline]
fn or_into(a: &mut [u64], b: &[u64]) -> bool {
    let mut grew = false;
    for (x, &y) in a.iter_mut().zip(b) {
        let v = *x | y;
        grew |= v != *x;
        *x = v;
    }
    grew
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::frontend::lark;

    /// The fixpoint as the module docs define it, set by set and byte by byte.
    fn naive_follow(lexer: &LexerDfa) -> LexFollow {
        let n = lexer.num_states();
        let nt = lexer.terminals().len();
        let eof = TerminalId::new(nt);
        let reps = lexer.class_representatives();
        let id = LexStateId::new;
        let inhibitor = |q: usize| lexer.inhibitor(id(q)).index();
        let mut c = vec![TermSet::new(nt + 1); n];
        let mut b = vec![TermSet::new(nt + 1); n];
        for s in &mut b {
            s.insert(eof);
        }
        // Every live successor of `q` on `byte`, the way out of a run included.
        let successors = |q: usize, byte: u8| {
            let q = id(q);
            [Some(lexer.next_rep(q, byte)), lexer.next_exit(q, byte)]
                .into_iter()
                .flatten()
                .filter(|q1| !lexer.is_dead(*q1))
        };
        loop {
            let mut changed = false;
            // Successors mostly have higher ids, so a descending pass carries most of the
            // reachability at once (a long counted string would otherwise take a pass per
            // character).
            for q in (1..n).rev() {
                let mut acc = c[q].clone();
                for &t in lexer.emits(id(q)) {
                    if lexer.is_ignored(t) {
                        acc.union_with(&b[inhibitor(q)]);
                    } else {
                        acc.insert(t);
                    }
                }
                for &byte in &reps {
                    for q1 in successors(q, byte) {
                        acc.union_with(&c[q1.index()]);
                    }
                }
                if acc != c[q] {
                    c[q] = acc;
                    changed = true;
                }
            }
            for (p, bp) in b.iter_mut().enumerate() {
                let mut acc = bp.clone();
                for &byte in &reps {
                    let q1 = lexer.boundary_next_rep(id(p), byte);
                    if !lexer.is_dead(q1) {
                        acc.union_with(&c[q1.index()]);
                    }
                }
                if acc != *bp {
                    *bp = acc;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let pending = (0..n)
            .map(|q| {
                let mut acc = TermSet::new(nt + 1);
                if q != 0 {
                    for &byte in &reps {
                        for q1 in successors(q, byte) {
                            acc.union_with(&c[q1.index()]);
                        }
                    }
                }
                acc
            })
            .collect();
        // Shapes match the lexer by construction.
        LexFollow::from_parts(b, pending, n, nt).expect("follow tables built consistently")
    }

    /// The fast build and the plain fixpoint agree on lexers with ignored terminals,
    /// keywords inside identifiers, overlapping patterns, counted runs cut short (their
    /// ways out), the built-in JSON grammar and a JSON Schema's string patterns.
    #[test]
    fn equals_the_plain_fixpoint() {
        use crate::compile::frontend::json_schema::{compile as schema, SchemaOptions};
        use crate::compile::lexer::build::{build_lexer_with, LexerOptions};
        let lark_grammars = [
            "start: A B\nA: /[a-z]+/\nB: \"if\" | /[0-9]+/\n%ignore /[ \\t]+/\n",
            "start: (X | Y | Z)*\nX: /x{0,6}a/\nY: /x{0,6}b/\nZ: /\"[^\"]*\"/\n%ignore \" \"\n",
            "start: C (\",\" C)*\nC: /<a{0,300}>/\n%ignore /\\s+/\n",
            "start: (D | E)+\nD: /<a{300}>/\nE: /<a{300}b/\n%ignore \" \"\n",
            crate::compile::BUILTIN_JSON,
        ];
        let schema_text = r#"{"type": "object", "properties": {
            "a": {"type": "string", "pattern": "^[a-z0-9-]+:[a-z.]+$", "maxLength": 40},
            "b": {"type": "string", "format": "date-time"},
            "c": {"type": "string", "minLength": 2, "maxLength": 300}}}"#;
        let mut grammars: Vec<_> = lark_grammars
            .iter()
            .map(|g| lark::compile(g).unwrap())
            .collect();
        grammars.push(
            schema(schema_text, &SchemaOptions::default())
                .unwrap()
                .grammar,
        );
        // The largest lexer spans several of `build_follow`'s parallel blocks.
        let mut largest = 0;
        for (i, g) in grammars.iter().enumerate() {
            for margin in [2, 256] {
                let lexer = build_lexer_with(
                    g,
                    &LexerOptions {
                        count_margin: margin,
                        ..LexerOptions::default()
                    },
                )
                .unwrap();
                largest = largest.max(lexer.num_states());
                assert_eq!(
                    build_follow(&lexer),
                    naive_follow(&lexer),
                    "grammar {i}, margin {margin}"
                );
            }
        }
        assert!(
            largest > 2 * FOLLOW_BLOCK,
            "largest lexer: {largest} states"
        );
    }

    /// Under longest-match lexing too, where boundaries carry shadows: on grammars whose
    /// lexemes can grow past a complete match and then die (`ab` · `c` beside `abcd`; a
    /// Python-like newline that may start a docstring), with ignored terminals.
    #[test]
    fn equals_the_plain_fixpoint_under_longest_match() {
        use crate::compile::lexer::build::build_lexer;
        let lark_grammars = [
            "start: (A | B | C)*\nA: \"ab\" | \"abcd\"\nB: \"b\"\nC: \"c\" | \"cc\"\n%ignore \" \"\n",
            "start: (N | S | W)*\nN: /(\\n *)+/ | /\\n *r?\"\"\"[a-z ]*\"\"\"/\nS: /r?\"[a-z]*\"/\nW: /[a-z]+/\n%ignore \" \"\n",
            "start: A B\nA: /[a-z]+/\nB: \"if\" | /[0-9]+/\n%ignore /[ \\t]+/\n",
            crate::compile::BUILTIN_JSON,
        ];
        for (i, text) in lark_grammars.iter().enumerate() {
            let mut g = lark::compile(text).unwrap();
            g.longest_match = true;
            let lexer = build_lexer(&g).unwrap();
            assert!(lexer.longest_match());
            assert_eq!(build_follow(&lexer), naive_follow(&lexer), "grammar {i}");
        }
    }

    /// A template state's ways out, read through [`LexerDfa::run_exits`], are where the
    /// run's last iteration really goes (`next` on its virtual state), on every byte that
    /// leaves: the run's exits are what this pass adds for counted strings.
    #[test]
    fn run_exits_are_where_the_last_iteration_goes() {
        use crate::compile::frontend::json_schema::{compile as schema, SchemaOptions};
        use crate::compile::lexer::build::{build_lexer_with, LexerOptions};
        let text = r#"{"type": "object", "properties": {
            "c": {"type": "string", "minLength": 2, "maxLength": 300}}}"#;
        let g = schema(text, &SchemaOptions::default()).unwrap().grammar;
        let lexer = build_lexer_with(
            &g,
            &LexerOptions {
                count_margin: 2,
                ..LexerOptions::default()
            },
        )
        .unwrap();
        assert!(!lexer.runs().is_empty());
        let mut leaving = 0;
        for r in lexer.runs() {
            for i in 0..r.width {
                let s = LexStateId::new((r.first + i) as usize);
                let last = LexStateId::from_u32(r.encode(r.len - 1, i));
                let exits = lexer.run_exits(s).expect("a template state is in a run");
                for b in 0..=255u8 {
                    if let Some(e) = exits.exit(lexer.next_rep(s, b)) {
                        leaving += 1;
                        assert_eq!(lexer.next(last, b), e, "state {s:?}, byte {b}");
                        assert_eq!(lexer.next_exit(s, b), Some(e));
                    }
                }
            }
        }
        assert!(leaving > 0);
        assert!(lexer.run_exits(LexerDfa::START).is_none());
    }
}

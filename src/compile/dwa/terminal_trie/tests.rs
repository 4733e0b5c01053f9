//! Terminal tries agree with whole-document lexing: for every token, from every start
//! position tried, the trie's outcomes (lexemes emitted, lexer position left) are those
//! that `lexer::lex` gives for the bytes before the token followed by the token.

use std::collections::BTreeSet;

use super::{build_trie, start_positions, EmitId, EmitTable, TerminalTrie, TrieNode};
use crate::compile::{build_glr_tables, compile_grammar, GrammarFormat, BUILTIN_JSON};
use crate::ids::LexStateId;
use crate::lexer::{lex, LexErrorKind, LexPos, LexerDfa};
use crate::vocab::Vocab;

use crate::test_support::shared_dir;

fn all_outcomes(
    trie: &TerminalTrie,
) -> std::collections::HashMap<u32, BTreeSet<(Vec<EmitId>, LexPos)>> {
    let mut out: std::collections::HashMap<u32, BTreeSet<(Vec<EmitId>, LexPos)>> =
        Default::default();
    let mut stack: Vec<(usize, Vec<EmitId>)> = vec![(0, Vec::new())];
    while let Some((n, path)) = stack.pop() {
        for (pos, set) in &trie.nodes[n].finals {
            for t in set {
                out.entry(t).or_default().insert((path.clone(), *pos));
            }
        }
        for (e, c) in &trie.nodes[n].children {
            let mut p = path.clone();
            p.push(*e);
            stack.push((*c as usize, p));
        }
    }
    out
}

/// A trie over atoms (atom lists) with its atoms as bitmaps, for [`all_outcomes`].
fn with_bitmaps(trie: TerminalTrie<Vec<u32>>) -> TerminalTrie {
    TerminalTrie {
        start: trie.start,
        nodes: trie
            .nodes
            .into_iter()
            .map(|n| TrieNode {
                children: n.children,
                finals: n
                    .finals
                    .into_iter()
                    .map(|(p, list)| (p, list.into_iter().collect()))
                    .collect(),
            })
            .collect(),
    }
}

/// Token outcomes, per token id, as [`all_outcomes`] gives them.
type Outcomes = std::collections::HashMap<u32, BTreeSet<(Vec<EmitId>, LexPos)>>;

/// Fails naming `what`, how many tokens differ and one of them, unless `a` and `b` agree.
fn assert_same_outcomes(what: &str, a: &Outcomes, b: &Outcomes) {
    let differ: Vec<&u32> = a
        .keys()
        .chain(b.keys())
        .filter(|t| a.get(t) != b.get(t))
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: {} tokens differ, e.g. {} ({:?} vs {:?})",
        differ.len(),
        differ[0],
        a.get(differ[0]),
        b.get(differ[0])
    );
}

fn state_of(lexer: &LexerDfa, bytes: &[u8]) -> LexStateId {
    bytes.iter().fold(LexerDfa::START, |q, &b| lexer.next(q, b))
}

/// Outcomes of `token` after `prefix` (the bytes of a pending lexeme, or empty for the
/// undisturbed start), from whole-document lexing of `prefix · token`.
fn expected(
    lexer: &LexerDfa,
    emits: &EmitTable,
    prefix: &[u8],
    token: &[u8],
) -> BTreeSet<(Vec<EmitId>, LexPos)> {
    let mut doc = prefix.to_vec();
    doc.extend_from_slice(token);
    let mut out = BTreeSet::new();
    let (closed, last_start) = match lex(lexer, &doc) {
        Ok(ls) => {
            let last = ls.last().unwrap().start;
            (ls[..ls.len() - 1].to_vec(), last)
        }
        Err(e) if e.kind == LexErrorKind::UnexpectedEnd => {
            let ls = lex(lexer, &doc[..e.lexeme_start]).unwrap();
            (ls, e.lexeme_start)
        }
        Err(_) => return out,
    };
    // The token's first byte must extend the pending prefix lexeme.
    if !prefix.is_empty() && closed.first().is_some_and(|l| l.end <= prefix.len()) {
        return out;
    }
    let path: Vec<EmitId> = closed
        .iter()
        .map(|l| emits.id_of(&l.terminals).unwrap())
        .collect();
    let q = state_of(lexer, &doc[last_start..]);
    if lexer.can_extend(q) {
        out.insert((path.clone(), LexPos::Pending(q)));
    }
    if let Some(e) = emits.of_state(q) {
        let mut p = path;
        p.push(e);
        let inh = if lexer.can_extend(q) {
            q
        } else {
            LexerDfa::DEAD
        };
        out.insert((p, LexPos::Boundary(inh)));
    }
    out
}

/// A shortest byte string that takes the lexer from START to `q`.
fn path_to(lexer: &LexerDfa, q: LexStateId) -> Vec<u8> {
    let mut prev: std::collections::HashMap<LexStateId, (LexStateId, u8)> = Default::default();
    let mut queue = std::collections::VecDeque::from([LexerDfa::START]);
    while let Some(s) = queue.pop_front() {
        if s == q {
            break;
        }
        for b in 0..=255u8 {
            let n = lexer.next(s, b);
            if !lexer.is_dead(n) && n != LexerDfa::START && !prev.contains_key(&n) {
                prev.insert(n, (s, b));
                queue.push_back(n);
            }
        }
    }
    let mut out = Vec::new();
    let mut s = q;
    while s != LexerDfa::START {
        let (p, b) = prev[&s];
        out.push(b);
        s = p;
    }
    out.reverse();
    out
}

#[test]
fn tries_match_whole_document_lexing() {
    let gpt2 = Vocab::load(shared_dir().join("tokenizers/gpt2.json").to_str().unwrap()).unwrap();
    let java = std::fs::read_to_string(shared_dir().join("grammars/syncode/java.lark")).unwrap();
    let dash = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/dash/grammar.lark"
    ))
    .unwrap();
    let uni = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/unicode/grammar.lark"
    ))
    .unwrap();
    for (name, text) in [
        ("json", BUILTIN_JSON.to_string()),
        ("dash", dash),
        ("unicode", uni),
        ("java", java),
    ] {
        let g = compile_grammar(&text, GrammarFormat::Lark).unwrap();
        let lexer = build_glr_tables(&g).unwrap().lexer;
        let emits = EmitTable::new(&lexer);
        let tokens = gpt2.parts();
        let positions = start_positions(&lexer);
        // Every position of the small grammars; a spread of Java's.
        let step = (positions.len() / 40).max(1);
        let mut checked = 0;
        for &pos in positions.iter().step_by(step) {
            let trie = build_trie(&lexer, &emits, tokens, pos);
            let got = all_outcomes(&trie);
            let prefix = match pos {
                LexPos::Pending(q) => path_to(&lexer, q),
                LexPos::Boundary(_) => Vec::new(),
            };
            for &id in tokens.ids().iter().step_by(7) {
                let bytes = gpt2.token_bytes(id).unwrap();
                let want = match pos {
                    LexPos::Boundary(p) => {
                        if !lexer.is_dead(lexer.next(p, bytes[0])) {
                            BTreeSet::new()
                        } else {
                            expected(&lexer, &emits, &[], bytes)
                        }
                    }
                    LexPos::Pending(_) => expected(&lexer, &emits, &prefix, bytes),
                };
                let have = got.get(&id.as_u32()).cloned().unwrap_or_default();
                assert_eq!(
                    have,
                    want,
                    "{name}: {pos:?}: token {} {:?}",
                    id.as_u32(),
                    String::from_utf8_lossy(bytes)
                );
                checked += 1;
            }
        }
        assert!(checked > 10_000, "{name}: only {checked} checks");
    }
}

/// Grammars whose tries exercise walk sharing: counted terminals longer than GPT-2's
/// longest token, JSON, multi-byte characters, and a schema whose key literals share
/// prefixes with each other and with the generic string. Each with its tables, emissions,
/// token-end representatives and walk sharing for `vocab`.
fn walk_cases(vocab: &Vocab) -> Vec<WalkCase> {
    let counted = "start: entry+\nentry: SHORT \";\" | LONG \".\"\nSHORT: /<[a-z ]{1,5}>/\nLONG: /<[a-z é-]{3,140}>/\n%ignore \" \"\n";
    let uni = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/corpus/unicode/grammar.lark"
    ))
    .unwrap();
    let schema = r#"{"type": "object", "properties": {
        "description": {"type": "string"}, "descriptor": {"enum": ["desk", "des", "d\u00e9"]},
        "desk": {"type": "integer"}, "name": {"type": "string", "maxLength": 9},
        "names": {"type": "array", "items": {"type": "string"}}},
        "additionalProperties": {"type": "number"}}"#;
    // Strings whose counts run out at different places, tokens crossing both bounds:
    // walks from different counts meet once no token below can reach a bound
    // (`walk_part`'s leaders), and must not before.
    let bounded = r#"{"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 20}, "b": {"type": "string", "minLength": 3, "maxLength": 150},
        "c": {"type": "string", "format": "email", "maxLength": 40}}}"#;
    // Text states that take some non-ASCII characters and not others, or leave for
    // another state on one: no character loop may stand in for their walks.
    let narrow =
        "start: (WORD | TEXT)+\nWORD: /[a-z]+é?[a-z]*/\nTEXT: /\"[^\"é一]*\"/\n%ignore \" \"\n";
    [
        ("counted", counted.to_string(), GrammarFormat::Lark),
        ("narrow", narrow.to_string(), GrammarFormat::Lark),
        ("json", BUILTIN_JSON.to_string(), GrammarFormat::Lark),
        ("unicode", uni, GrammarFormat::Lark),
        ("schema", schema.to_string(), GrammarFormat::JsonSchema),
        ("bounded", bounded.to_string(), GrammarFormat::JsonSchema),
    ]
    .into_iter()
    .map(|(name, text, format)| {
        use super::WalkShare;
        use crate::compile::dwa::position_equiv::end_reps;
        let g = compile_grammar(&text, format).unwrap();
        let tables = build_glr_tables(&g).unwrap();
        let emits = EmitTable::new(&tables.lexer);
        let reps = end_reps(&tables.lexer, &tables.follow);
        let (share, _) = WalkShare::new(&tables.lexer, &reps, vocab.parts());
        WalkCase {
            name,
            tables,
            emits,
            reps,
            share,
        }
    })
    .collect()
}

/// One grammar of [`walk_cases`], ready to walk.
struct WalkCase {
    name: &'static str,
    tables: crate::glr::Tables,
    emits: EmitTable,
    reps: Vec<LexStateId>,
    share: super::WalkShare,
}

/// Walks shared between lexer states alike to each length bucket's depth give the same
/// tries, once token ends are canonical, as walking every state on its own (on
/// [`walk_cases`]).
#[test]
fn shared_walks_give_the_canonical_tries_of_unshared_ones() {
    use super::{build_tries, build_tries_shared};
    use crate::compile::dwa::position_equiv::canonical_end;
    let gpt2 = Vocab::load(shared_dir().join("tokenizers/gpt2.json").to_str().unwrap()).unwrap();
    let tokens = gpt2.parts();
    assert!(tokens.buckets() > 3, "buckets {:?}", tokens.bounds());
    for c in walk_cases(&gpt2) {
        let (name, lexer, emits, reps, share) =
            (c.name, &c.tables.lexer, &c.emits, &c.reps, &c.share);
        let canon = |p: LexPos| canonical_end(reps, p);
        let positions = start_positions(lexer);
        // Every position of the small grammars; a spread of the larger ones'.
        let step = (positions.len() / 300).max(1);
        let picked: Vec<LexPos> = positions.iter().copied().step_by(step).collect();
        let plain = build_tries(lexer, emits, tokens, &picked);
        let shared = build_tries_shared(lexer, emits, tokens, &picked, Some(share));
        for ((pos, mut a), mut b) in picked.iter().zip(plain).zip(shared) {
            a.canonicalize_finals(canon);
            b.canonicalize_finals(canon);
            assert_same_outcomes(
                &format!("{name}: {pos:?}"),
                &all_outcomes(&a),
                &all_outcomes(&b),
            );
        }
    }
}

/// Walk pairs are numbered byte by byte (`atomize` indexes a byte's pairs by rank): the
/// pair a position enters with byte `b` lies in `pairs_of_byte(b)`, every pair of that
/// range is entered by some position, and the bytes' ranges tile the ids in byte order
/// (on [`walk_cases`]).
#[test]
fn walk_pairs_are_numbered_byte_by_byte() {
    use super::Walks;
    let gpt2 = Vocab::load(shared_dir().join("tokenizers/gpt2.json").to_str().unwrap()).unwrap();
    let tokens = gpt2.parts();
    for c in walk_cases(&gpt2) {
        let (name, lexer, share) = (c.name, &c.tables.lexer, &c.share);
        let positions = start_positions(lexer);
        let walks = Walks::new(lexer, tokens, &positions, Some(share));
        let mut next = 0;
        let mut bytes_with_pairs = 0;
        for b in 0..=255u8 {
            let range = walks.pairs_of_byte(b);
            assert_eq!(range.start, next, "{name}: byte {b}");
            let mut entered = vec![false; range.len()];
            for &p in &positions {
                if let Some(pair) = walks.pair_at(lexer, p, b) {
                    assert!(
                        range.contains(&pair),
                        "{name}: byte {b}, pair {pair} of {range:?}"
                    );
                    entered[(pair - range.start) as usize] = true;
                }
            }
            assert!(
                entered.iter().all(|&e| e),
                "{name}: byte {b}: a pair no position enters"
            );
            bytes_with_pairs += usize::from(!range.is_empty());
            next = range.end;
        }
        assert_eq!(next as usize, walks.num_pairs(), "{name}");
        assert!(
            bytes_with_pairs > 1,
            "{name}: {bytes_with_pairs} bytes with pairs"
        );
    }
}

/// Tries built over token atoms (`token_atoms`) hold, atom by atom, exactly the canonical
/// outcomes of the token tries, from every start position including the inhibited
/// boundaries (on [`walk_cases`]; in the schema most walks from key-literal states are
/// copied from the string's walk instead of walked). Atomizing with the outcomes of the
/// walks `alike_positions` made (read, renumbered, instead of walked) gives the same
/// atoms, numbered alike; the counted grammar has such walks.
#[test]
fn atom_tries_expand_to_the_canonical_token_tries() {
    use super::{build_tries_shared, Walks};
    use crate::compile::dwa::position_equiv::canonical_end;
    use crate::compile::dwa::token_atoms::{alike_positions, atomize, NO_ATOM};
    let gpt2 = Vocab::load(shared_dir().join("tokenizers/gpt2.json").to_str().unwrap()).unwrap();
    let tokens = gpt2.parts();
    let mut read_counted = false;
    for c in walk_cases(&gpt2) {
        let (name, lexer, emits, reps, share) =
            (c.name, &c.tables.lexer, &c.emits, &c.reps, &c.share);
        let canon = |p: LexPos| canonical_end(reps, p);
        let positions = start_positions(lexer);
        let walks = Walks::new(lexer, tokens, &positions, Some(share));
        let atoms = atomize(lexer, emits, &walks, &positions, canon, gpt2.len(), None);
        if let Some((_, known)) = alike_positions(lexer, emits, tokens, share, &positions, canon) {
            read_counted |= name == "counted" && !known.is_empty();
            let with = atomize(
                lexer,
                emits,
                &walks,
                &positions,
                canon,
                gpt2.len(),
                Some(&known),
            );
            assert_eq!(
                with.of_token(tokens),
                atoms.of_token(tokens),
                "{name}: atoms"
            );
            for &pos in positions.iter().step_by((positions.len() / 300).max(1)) {
                assert_eq!(
                    all_outcomes(&with_bitmaps(with.trie(lexer, &walks, pos))),
                    all_outcomes(&with_bitmaps(atoms.trie(lexer, &walks, pos))),
                    "{name}: {pos:?}"
                );
            }
        }
        let mut atom_tokens: Vec<Vec<u32>> = vec![Vec::new(); atoms.len()];
        for (t, &a) in atoms.of_token(tokens).iter().enumerate() {
            if a != NO_ATOM {
                atom_tokens[a as usize].push(t as u32);
            }
        }
        assert!(
            atoms.len() < tokens.len() / 10,
            "{name}: {} atoms",
            atoms.len()
        );
        let step = (positions.len() / 300).max(1);
        let picked: Vec<LexPos> = positions.iter().copied().step_by(step).collect();
        let token_tries = build_tries_shared(lexer, emits, tokens, &picked, Some(share));
        for (&pos, mut want) in picked.iter().zip(token_tries) {
            want.canonicalize_finals(canon);
            let want = all_outcomes(&want);
            let mut got: std::collections::HashMap<u32, BTreeSet<(Vec<EmitId>, LexPos)>> =
                Default::default();
            for (a, outcomes) in all_outcomes(&with_bitmaps(atoms.trie(lexer, &walks, pos))) {
                for &t in &atom_tokens[a as usize] {
                    got.insert(t, outcomes.clone());
                }
            }
            assert_same_outcomes(&format!("{name}: {pos:?}"), &want, &got);
        }
    }
    assert!(
        read_counted,
        "the counted grammar has walks alike_positions made"
    );
}

/// Start positions that `token_atoms::alike_positions` puts in one class have the same
/// canonical token tries (on [`walk_cases`], every position compared with its class's
/// first); on the counted grammar, whose long terminal outlasts GPT-2's longest token,
/// it merges most of the positions near the count's end that walk sharing kept apart.
#[test]
fn alike_positions_have_equal_canonical_tries() {
    use super::build_tries_shared;
    use crate::compile::dwa::position_equiv::canonical_end;
    use crate::compile::dwa::token_atoms::alike_positions;
    let gpt2 = Vocab::load(shared_dir().join("tokenizers/gpt2.json").to_str().unwrap()).unwrap();
    let tokens = gpt2.parts();
    let mut merged_counted = None;
    for c in walk_cases(&gpt2) {
        let (name, lexer, emits, reps, share) =
            (c.name, &c.tables.lexer, &c.emits, &c.reps, &c.share);
        let canon = |p: LexPos| canonical_end(reps, p);
        let positions = start_positions(lexer);
        let Some((class, _)) = alike_positions(lexer, emits, tokens, share, &positions, canon)
        else {
            continue;
        };
        assert_eq!(class.len(), positions.len(), "{name}");
        let classes = class.iter().max().map_or(0, |&m| m as usize + 1);
        if name == "counted" {
            merged_counted = Some((positions.len(), classes));
        }
        let mut first = vec![usize::MAX; classes];
        for (i, &k) in class.iter().enumerate() {
            if first[k as usize] == usize::MAX {
                first[k as usize] = i;
            }
        }
        // Positions merged into an earlier one, beside it.
        let pairs: Vec<(usize, usize)> = class
            .iter()
            .enumerate()
            .filter(|&(i, &k)| first[k as usize] != i)
            .map(|(i, &k)| (first[k as usize], i))
            .collect();
        let step = (pairs.len() / 150).max(1);
        let picked: Vec<LexPos> = pairs
            .iter()
            .step_by(step)
            .flat_map(|&(a, b)| [positions[a], positions[b]])
            .collect();
        let tries = build_tries_shared(lexer, emits, tokens, &picked, Some(share));
        let outcomes: Vec<Outcomes> = tries
            .into_iter()
            .map(|mut t| {
                t.canonicalize_finals(canon);
                all_outcomes(&t)
            })
            .collect();
        for (pair, o) in picked.chunks(2).zip(outcomes.chunks(2)) {
            assert_same_outcomes(
                &format!("{name}: {:?} merged into {:?}", pair[1], pair[0]),
                &o[0],
                &o[1],
            );
        }
    }
    let (positions, classes) = merged_counted.expect("the counted grammar is worth merging");
    assert!(
        classes * 2 < positions,
        "counted: {positions} positions, {classes} classes"
    );
}

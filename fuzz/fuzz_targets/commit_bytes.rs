//! Arbitrary byte strings committed to the GLR recognizer on a few grammars (one with a
//! droppable terminal, one behind the indenter, two lexed by longest match): never a
//! panic, a rejected commit changes nothing, and every accepted chunk agrees with the
//! reference oracle's viability.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use stackmask::compile::{build_glr_tables, compile_grammar, Grammar, GrammarFormat, BUILTIN_JSON};
use stackmask::glr::{GlrState, Tables};

/// Same configurations with the very same stack nodes (nodes are immutable, so pointer
/// equality is the exact "nothing changed"; printing the stacks is exponential on
/// ambiguous input, which is how this target first found the shallow-Debug bug).
fn same_state(a: &GlrState, b: &GlrState) -> bool {
    a.configs().len() == b.configs().len()
        && a.configs().iter().zip(b.configs()).all(|(x, y)| {
            x.pos == y.pos
                && x.heads.len() == y.heads.len()
                && x.heads.iter().zip(y.heads.iter()).all(|(p, q)| Arc::ptr_eq(p, q))
        })
}
use stackmask::reference::Reference;

const DASH: &str = "start: e\ne: e \"-\" t | t\nt: \"-\" t | \"--\" ID | ID \"--\" | ID | NUM\nID: /[a-z]+/\nNUM: /[0-9]+/\n%ignore \" \"\n";
const AMBIG: &str = "start: e\ne: e \"+\" e | e \"*\" e | \"(\" e \")\" | NUM\nNUM: /[0-9]+/\n%ignore \" \"\n";
/// Statements ended by a droppable `EOS` (newlines or `;`), ambiguous expressions inside.
const DROP: &str = "start: (s EOS)* s?\ns: \"x\" \"=\" e | \"{\" (s EOS)* \"}\"\ne: e \"+\" e | NUM | \"(\" e \")\"\nEOS: /[\\n;]+/\nNUM: /[0-9]+/\n%ignore \" \"\n";

/// Blocks behind Lark's indenter (`_INDENT` / `_DEDENT` declared), brackets that drop
/// newlines, comments inside newlines.
const INDENT: &str = "start: (_NL | s)*\ns: \"x\" \"=\" e _NL | \"if\" e \":\" b\nb: s | _NL _INDENT s+ _DEDENT\ne: e \"+\" e | NUM | \"(\" e \")\" | \"[\" e? \"]\"\nNUM: /[0-9]+/\n_NL: (/\\n[\\t ]*/ | COMMENT)+\nCOMMENT: /#[^\\n]*/\n%ignore \" \"\n%ignore COMMENT\n%declare _INDENT _DEDENT\n";

/// Longest match: `abc…` grows past `ab` as a prefix of `abc+d` and may back up.
const LONGEST: &str = "start: (AB C+ | (AB | ABD) \";\" | X)*\nAB: \"ab\"\nABD: /abc+d/\nC: \"c\"\nX: /x[a-z]*!/\n%ignore \" \"\n";
/// Longest match behind the indenter, as SynCode's Python: a newline may grow into a
/// docstring (`r\"\"\"…\"\"\"`), so a line starting with `r` or a quote backs up.
const LONGEST_INDENT: &str = "start: (_NL | s)*\ns: \"x\" \"=\" e _NL | \"if\" e \":\" b | \"return\" e _NL\nb: s | _NL _INDENT s+ _DEDENT\ne: e \"+\" e | NUM | NAME | STR | \"(\" e \")\"\nNUM: /[0-9]+/\nNAME: /[a-z]+/\nSTR: /r?\"[^\"\\n]*\"/\n_NL: (/\\n[\\t ]*/ | COMMENT)+\nCOMMENT: /#[^\\n]*/ | /r?\"\"\"[^\"]*\"\"\"/\n%ignore \" \"\n%ignore COMMENT\n%declare _INDENT _DEDENT\n";

struct G {
    tables: Arc<Tables>,
    reference: Reference,
}

fn grammars() -> &'static Vec<G> {
    static G: OnceLock<Vec<G>> = OnceLock::new();
    G.get_or_init(|| {
        [BUILTIN_JSON, DASH, AMBIG, DROP, INDENT, LONGEST, LONGEST_INDENT]
            .iter()
            .map(|text| {
                let mut g: Grammar = compile_grammar(text, GrammarFormat::Lark).unwrap();
                if *text == DROP {
                    g.set_droppable(&["EOS".to_string()]).unwrap();
                }
                g.longest_match = *text == LONGEST || *text == LONGEST_INDENT;
                let tables = Arc::new(build_glr_tables(&g).unwrap());
                let reference = Reference::new(&g, &tables.lexer);
                G { tables, reference }
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let g = &grammars()[sel as usize % grammars().len()];
    let mut state = GlrState::new(g.tables.clone());
    let mut committed: Vec<u8> = Vec::new();
    // Chunks separated by 0xFF bytes are committed one at a time.
    for chunk in rest.split(|&b| b == 0xFF) {
        let before = state.clone();
        let mut candidate = committed.clone();
        candidate.extend_from_slice(chunk);
        let viable = g.reference.is_viable(&candidate);
        match state.commit_bytes(chunk) {
            Ok(()) => {
                assert!(viable, "GLR accepted a chunk the reference rejects");
                committed = candidate;
                assert_eq!(state.is_accepting(), g.reference.is_complete(&committed));
            }
            Err(_) => {
                assert!(!viable, "GLR rejected a chunk the reference accepts");
                assert!(same_state(&before, &state), "rejected commit changed the state");
            }
        }
    }
});

//! Stage 5, the mask automaton: recognizer tables × vocabulary → the frozen
//! [`crate::dwa::Dwa`] that `get_mask` walks over the parse stack.
//!
//! Passes, in order (driven by [`build`]; [`crate::compile::Compiler`] runs the lexer
//! half, steps 1–5, beside the LR build):
//! 1. [`string_split`]: the lexer the automaton is built over. String states whose alive
//!    terminals are all quoted strings of one priority are read as the union of each
//!    terminal's own states. After it: the automaton's lexer and its start positions.
//! 2. [`terminal_trie`]: every token walked from every start position through the lexer
//!    (maximal munch), as tries of lexeme emissions. [`position_equiv`] first merges
//!    positions no token can tell apart, so equal positions share one walk.
//! 3. [`token_atoms`]: tokens every position treats alike → atoms; tries over atoms.
//! 4. `token_classes`: per position, atoms with equal outcomes → classes, the alphabet
//!    of the weights; then `droppable`: classes with droppable lexemes → virtual classes
//!    and the trees that decide them. After it: each position has a shape (its class
//!    structure) and a class → atom table (`class_tables`).
//! 5. `emission_trie`: per shape, classes grouped by their emissions so far.
//! 6. `stack_top_equiv`: LR states and productions the automaton cannot tell apart.
//! 7. [`build`]: explores suspended effects from every stack top (the effect automaton,
//!    weights interned in `weight_table`), then `determinize`s it, drops from its
//!    filters the riders no edge can decide and the weights nothing reads
//!    (`live_riders`), merges the classes
//!    no weight tells apart (`class_blocks`), and freezes weights (`dense_words`) and
//!    class tables into the [`crate::dwa::Dwa`]. After it:
//!    a walk of the automaton over any parse stack yields the exact mask, in class space
//!    until the final write.
//!
//! Under longest match, steps 1–4 are replaced (`build::forked_half`): no string split;
//! walks fork, so a token may end at several nodes of one path; [`forked_equiv`] says
//! which lexer states the forked walks cannot tell apart; atoms are tokens with equal
//! outcomes in every trie; [`forked_classes`] makes the classes. Behind an indenter the
//! same steps run (the forked walks tag newline lexemes), then [`indentation`] turns the
//! classes the indentation changes into virtual classes and the rules that decide them.
//!
//! # Glossary
//!
//! - **position**: where a configuration's lexer is — a growing lexeme in state `q`
//!   (`Pending(q)`) or just after a lexeme that inhibits `q` (`Boundary(q)`).
//! - **emission**: the set of terminals a closed lexeme is emitted as.
//! - **atom**: a set of tokens every position treats alike (hundreds per grammar).
//! - **class**: the tokens with equal outcomes from one position; weights are sets of
//!   classes. Several positions' classes live side by side in one *class space*.
//! - **shape**: a position's class structure; positions with equal shapes share every
//!   automaton state.
//! - **effect** (suspended effect): an automaton state before determinization — a
//!   reduction waiting for the stack id below, with the lexeme to shift or the lookahead
//!   to check.
//! - **rider**: a class riding on an effect, i.e. tokens whose fate that effect decides.
//! - **decided**: classes an edge settles (allowed), subtracted from what still waits.
//! - **filter**: the classes an edge's target carries on: those that may still be
//!   decided below (`live_riders` cuts from every filter the classes no edge decides).
//! - **virtual class** (`droppable`): a class with no tokens that the walk decides so
//!   that a class with droppable lexemes can be decided from it after the walk: a
//!   *variant* (each droppable lexeme taken or skipped) or a *test* (can the droppable
//!   terminal be consumed here). A class whose lexemes are too many droppable ones for a
//!   tree *overflows*: its tokens are committed on the recognizer at mask time.
//! - **exploration**: following the riders from a known stack top, lexeme by lexeme,
//!   until they are decided or suspend again.
//! - **walk**: a token's bytes stepped through the lexer from a start position (maximal
//!   munch), giving its outcome there: the lexemes it closes and the position it leaves.
//!   `Walks` holds the walks of token blocks, `WalkShare` lets positions alike share
//!   them, `WalkOutcomes` are walks `alike_positions` made for `atomize` to read. (At
//!   run time, [`crate::dwa::walk`] is the other walk: the mask's read of the parse
//!   stack through the automaton.)
//! - **tag** (indenter): what a token's bytes say about a newline lexeme's indentation
//!   (its newline, the width after it), carried in the emission's id so that tokens whose
//!   lines indent differently fall into different classes.
//! - **stay / plain variant** (`indentation`): a class with a newline lexeme read with
//!   the lexeme skipped (on the stacks the indenter leaves after it) or as its other
//!   terminals; an **inside** variant reads its end with the follow sets inside brackets.
//! - **fork** (longest match): a token walk's branch point, at a complete lexeme that can
//!   grow — one branch emits it (carrying it as a shadow), one grows it.
//! - **split lexer** (`string_split`): the lexer the automaton is built over when string
//!   states are split into each terminal's own states.
//! - **drain**: exploring every effect reached from the starts, in parallel batches.
//! - **piece**: one of the sets an exploration's outcome is the union of.
//! - **block** (`class_blocks`): classes every weight holds together or not at all,
//!   frozen as one class.
//! - **band** (class tables): a slice of a set's minhash sketch, used to find a stored
//!   set close enough to patch.

pub(crate) mod build;
pub(crate) mod class_blocks;
pub(crate) mod class_tables;
mod dense_words;
mod determinize;
pub(crate) mod droppable;
pub(crate) mod emission_trie;
pub(crate) mod forked_classes;
pub(crate) mod forked_equiv;
pub(crate) mod indentation;
mod live_riders;
pub(crate) mod position_equiv;
pub(crate) mod stack_top_equiv;
pub(crate) mod string_split;
pub(crate) mod terminal_trie;
pub(crate) mod token_atoms;
pub(crate) mod token_classes;
pub(crate) mod weight_table;

/// The sizes of the terminal tries of every start position of a lexer over a vocabulary
/// (what `stackmask grammar` reports): each start position's trie of token bytes, grouped
/// by the lexemes the tokens emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrieSummary {
    /// Start positions, one trie each.
    pub start_positions: usize,
    /// Nodes of all tries.
    pub nodes: usize,
    /// Token groups at trie nodes (tokens that end there in one lexer position).
    pub token_groups: usize,
}

/// Builds the terminal tries of every start position of `lexer` over `vocab` (in
/// parallel) and counts them.
pub fn trie_summary(lexer: &crate::lexer::LexerDfa, vocab: &crate::vocab::Vocab) -> TrieSummary {
    let (_, tries) = terminal_trie::build_all(lexer, vocab);
    TrieSummary {
        start_positions: tries.len(),
        nodes: tries.iter().map(|t| t.nodes.len()).sum(),
        token_groups: tries
            .iter()
            .flat_map(|t| &t.nodes)
            .map(|n| n.finals.len())
            .sum(),
    }
}

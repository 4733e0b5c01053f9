//! The lexer half of the build: what the automaton needs of the lexer and the vocabulary
//! alone (start positions, their tries over atoms, each trie's shape and class table),
//! made while the LR table is built.

use super::*;

/// What the automaton build makes of the lexer and vocabulary alone (start positions,
/// atoms and each position's classes), to be finished by [`finish_dwa`] with the LR table.
pub struct LexerHalf {
    /// The lexer the automaton is built over when string states are split.
    pub(super) split_lexer: Option<SplitLexer>,
    pub(super) emits: EmitTable,
    pub(super) atoms: AtomMap,
    pub(super) shapes: Vec<Shape>,
    /// Atoms of classes left to the runtime (`droppable`'s overflowing classes).
    pub(super) overflow: RoaringBitmap,
    pub(super) starts: StartTries,
}

/// What the rest of the build needs of the atoms: each token's atom ([`NO_ATOM`] for a
/// token no position takes) and each atom's first byte.
pub(super) struct AtomMap {
    pub(super) of_token: Vec<u32>,
    /// Per atom, its tokens' first byte (tokens an inhibited boundary could tell apart
    /// are never one atom).
    pub(super) first_byte: Vec<u8>,
}

impl AtomMap {
    /// Number of atoms.
    pub(super) fn len(&self) -> usize {
        self.first_byte.len()
    }
}

/// Start positions and their tries, condensed: which trie each position reads, and each
/// trie's shape and class → atoms table.
pub(super) struct StartTries {
    /// The positions with a trie of their own (pending ones and the plain boundary).
    pub(super) own_trie: Vec<LexPos>,
    /// The trie each of `own_trie` reads (positions alike share one).
    pub(super) trie_of: Vec<usize>,
    /// Per lexer mode, its plain boundary's trie, which the mode's inhibited boundaries
    /// read with filtered tables.
    pub(super) dead: Vec<usize>,
    /// Inhibited boundaries, each with the lexer state whose lexeme inhibits.
    pub(super) inhibited_positions: Vec<(LexPos, LexStateId)>,
    /// Each trie's shape, interned in [`LexerHalf::shapes`].
    pub(super) trie_shape: Vec<u32>,
    /// Class → atoms tables, interned; `own_local` is each trie's.
    pub(super) own_tables: Interner<ClassAtoms>,
    pub(super) own_local: Vec<u32>,
}

/// The lexer half of [`build_dwa_until`] (see [`LexerHalf`]). `plan` must be
/// `string_split::plan(lexer, limits.split)`, which needs no follow sets and so can be
/// made beside them.
pub(crate) fn lexer_half(
    lexer: &LexerDfa,
    follow: &LexFollow,
    indent: Option<(&Indenter, &LexFollow)>,
    plan: Option<SplitPlan>,
    vocab: &Vocab,
    limits: &DwaLimits,
    stop: &Interrupt,
) -> Result<LexerHalf, GrammarError> {
    stop.check()?;
    // Behind an indenter, walks tag newline lexemes, which only the forked walks do.
    if lexer.longest_match() || indent.is_some() {
        return super::forked_half::lexer_half_forked(lexer, follow, indent, vocab, limits, stop);
    }
    // A token walked from a counted run's template must not reach the next critical
    // count, or the template would stand for iterations it differs from.
    let tokens = vocab.parts();
    if !lexer.runs().is_empty() && tokens.longest() > lexer.count_margin() as usize {
        return Err(GrammarError::Unsupported {
            span: Default::default(),
            construct: "counted string with a long token".into(),
            reason: format!(
                "the lexer counts long strings with a margin of {} bytes, and the vocabulary \
                 has a {}-byte token",
                lexer.count_margin(),
                tokens.longest()
            ),
        });
    }
    // Split string states, when that pays, and build over the lexer that has their
    // single-terminal states.
    let split_lexer = plan.map(|p| p.finish(follow));
    let (lexer, follow) = match &split_lexer {
        Some(w) => (&w.lexer, &w.follow),
        None => (lexer, follow),
    };
    let emits = EmitTable::new(lexer);
    if let Some(e) = emits.two_droppable() {
        return Err(GrammarError::Unsupported {
            span: Default::default(),
            construct: format!(
                "a lexeme of two droppable terminals ({})",
                emits
                    .terminals(e)
                    .iter()
                    .filter(|&&t| lexer.is_droppable(t))
                    .map(|&t| format!("`{}`", lexer.terminal_name(t)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            reason: "the mask automaton decides one droppable terminal per lexeme".into(),
        });
    }
    let positions = match &split_lexer {
        Some(w) => w.positions.clone(),
        None => start_positions(lexer),
    };
    // Inhibited boundaries reuse the plain boundary's trie; only their tables differ.
    let own_trie: Vec<LexPos> = positions
        .iter()
        .copied()
        .filter(|p| match p {
            LexPos::Pending(_) => true,
            LexPos::Boundary(q) => lexer.is_plain_boundary(*q),
        })
        .collect();
    // Token ends only matter through their follow sets, and pending positions whose
    // futures agree for as many bytes as the longest token have equal tries: one trie
    // per class of positions (`position_equiv`).
    let reps = end_reps(lexer, follow);
    // Walks of token blocks are shared between entered states alike to the tokens'
    // length; start positions alike to the longest token's length share whole tries.
    let (share, start_class) = WalkShare::new(lexer, &reps, tokens);
    stop.check()?;
    let canon = |p: LexPos| canonical_end(&reps, p);
    let (built, trie_of, known) = shared_tries(
        lexer,
        &emits,
        tokens,
        &share,
        &start_class,
        &own_trie,
        canon,
        limits,
    )?;
    stop.check()?;
    let dead: Vec<usize> = (0..lexer.num_modes() as u32)
        .map(|m| {
            let plain = LexPos::Boundary(lexer.plain_boundary(lexer.mode_start(m)));
            trie_of[own_trie
                .iter()
                .position(|p| *p == plain)
                .expect("each mode's plain boundary is a start position")]
        })
        .collect();
    // Tries are built over atoms (tokens no position tells apart, `token_atoms`), so
    // a position's trie, classes and table cost its classes, not the vocabulary. The
    // inhibited boundaries are among the positions atoms are split for, so their tables
    // can drop atoms by first byte. Each trie is condensed as it is built (its shape and
    // class → atom table, the base set below), so tens of thousands of positions never
    // hold their tries at once.
    let inhibited_positions: Vec<(LexPos, LexStateId)> = positions
        .iter()
        .filter_map(|&p| match p {
            LexPos::Boundary(q) if !lexer.is_plain_boundary(q) => Some((p, q)),
            _ => None,
        })
        .collect();
    let universe: Vec<LexPos> = built
        .iter()
        .copied()
        .chain(inhibited_positions.iter().map(|&(p, _)| p))
        .collect();
    let walks = Walks::new(lexer, tokens, &universe, Some(&share));
    stop.check()?;
    // The long parts' walks `alike_positions` made are read from it, not walked again.
    let mut atoms = atomize(
        lexer,
        &emits,
        &walks,
        &universe,
        canon,
        vocab.len(),
        known.as_ref(),
    );
    drop(known);
    stop.check()?;
    let (shapes, trie_shape, own_tables, own_local, overflow) =
        classify_positions((lexer, follow), &emits, &atoms, &walks, &built, stop)?;
    let shapes = shapes.into_list();
    let atoms = AtomMap {
        of_token: atoms.of_token(tokens),
        first_byte: std::mem::take(&mut atoms.first_byte),
    };
    Ok(LexerHalf {
        split_lexer,
        emits,
        atoms,
        shapes,
        overflow,
        starts: StartTries {
            own_trie,
            trie_of,
            dead,
            inhibited_positions,
            trie_shape,
            own_tables,
            own_local,
        },
    })
}

/// Each trie's position, the trie each start position reads, and the walks
/// `alike_positions` made (see [`shared_tries`]).
type SharedTries = (Vec<LexPos>, Vec<usize>, Option<WalkOutcomes>);

/// The tries the start positions `own_trie` need, one per class of positions that read
/// equal tries: positions alike to the longest token's length (`start_class`) share one,
/// and so do positions whose entered walks' outcomes agree (`alike_positions`, whose
/// known walks are returned for `atomize` to read). Returns each trie's position, the
/// trie each of `own_trie` reads, and those walks.
#[allow(clippy::too_many_arguments)]
fn shared_tries(
    lexer: &LexerDfa,
    emits: &EmitTable,
    tokens: &TokenParts,
    share: &WalkShare,
    start_class: &[u32],
    own_trie: &[LexPos],
    canon: impl Fn(LexPos) -> LexPos + Sync,
    limits: &DwaLimits,
) -> Result<SharedTries, GrammarError> {
    let mut class_trie: HashMap<u32, usize> = HashMap::new();
    let mut built: Vec<LexPos> = Vec::new();
    let trie_of: Vec<usize> = own_trie
        .iter()
        .map(|&p| match p {
            LexPos::Pending(q) => *class_trie.entry(start_class[q.index()]).or_insert_with(|| {
                built.push(p);
                built.len() - 1
            }),
            _ => {
                built.push(p);
                built.len() - 1
            }
        })
        .collect();
    if built.len() > limits.max_tries {
        return Err(too_large(
            "terminal tries (distinct lexer positions)",
            limits.max_tries,
        ));
    }
    // Positions alike to the longest token can still have equal tries (the few long
    // tokens tell few of them apart): one trie per class of entered walks' outcomes.
    Ok(
        match alike_positions(lexer, emits, tokens, share, &built, canon) {
            Some((alike, known)) => {
                let mut rep_of_class = vec![usize::MAX; alike.len()];
                let mut reps: Vec<LexPos> = Vec::new();
                let remap: Vec<usize> = alike
                    .iter()
                    .zip(&built)
                    .map(|(&c, &p)| {
                        let r = &mut rep_of_class[c as usize];
                        if *r == usize::MAX {
                            *r = reps.len();
                            reps.push(p);
                        }
                        *r
                    })
                    .collect();
                let trie_of = trie_of.into_iter().map(|i| remap[i]).collect();
                (reps, trie_of, Some(known))
            }
            None => (built, trie_of, None),
        },
    )
}

/// Classifies the trie of every position in `built` over `atoms`: each trie's shape and
/// class → atoms table, interned, with each position's ids (droppable lexemes' classes
/// decided through virtual ones, `droppable`). Positions are classified in
/// parallel a chunk at a time, and their shapes and tables interned in position order as
/// each chunk ends: a large schema's positions can each list thousands of atoms, and
/// holding every table until all were made would cost hundreds of MB. Shapes and tables
/// are hashed on the classifying threads.
fn classify_positions(
    (lexer, follow): (&LexerDfa, &LexFollow),
    emits: &EmitTable,
    atoms: &Atoms,
    walks: &Walks<'_>,
    built: &[LexPos],
    stop: &Interrupt,
) -> Result<ClassifiedPositions, GrammarError> {
    const CLASSIFY_CHUNK: usize = 512;
    let mut shapes: Interner<Shape> = Interner::default();
    let mut trie_shape: Vec<u32> = Vec::with_capacity(built.len());
    let mut own_tables: Interner<ClassAtoms> = Interner::default();
    let mut own_local: Vec<u32> = Vec::with_capacity(built.len());
    let mut overflow = RoaringBitmap::new();
    for chunk in built.chunks(CLASSIFY_CHUNK) {
        stop.check()?;
        let (table_interner, shape_interner) = (&own_tables, &shapes);
        let classified: Vec<(Shape, u64, ClassAtoms, u64, Vec<u32>)> = chunk
            .par_iter()
            .map(|&p| {
                let c = classify(atoms.trie(lexer, walks, p));
                let (c, over) = with_drops(c, lexer, follow, emits);
                let over_atoms = over
                    .iter()
                    .flat_map(|&k| c.tokens[k as usize].iter().copied())
                    .collect();
                let table = ClassAtoms::new(&c.tokens);
                let h = table_interner.hash(&table);
                let sh = shape_interner.hash(&c.shape);
                (c.shape, sh, table, h, over_atoms)
            })
            .collect();
        for (shape, sh, table, h, over_atoms) in classified {
            trie_shape.push(shapes.intern_hashed(shape, sh));
            own_local.push(own_tables.intern_hashed(table, h));
            overflow.extend(over_atoms);
        }
    }
    Ok((shapes, trie_shape, own_tables, own_local, overflow))
}

/// Shapes and class tables, interned, with each position's ids, and the atoms of
/// overflowing classes (see [`classify_positions`]).
type ClassifiedPositions = (
    Interner<Shape>,
    Vec<u32>,
    Interner<ClassAtoms>,
    Vec<u32>,
    RoaringBitmap,
);

//! Loading what the commands need: grammars (files or builtins) and tokenizers.

use std::sync::Arc;
use std::time::Instant;

use stackmask::compile::{self, GrammarFormat};
use stackmask::glr::Tables;
use stackmask::vocab::Vocab;

/// A compiled grammar with everything the commands use.
pub struct Loaded {
    pub grammar: compile::Grammar,
    pub tables: Arc<Tables>,
    pub compile_ms: f64,
}

/// `--grammar` and `--format`, shared by the commands that compile a grammar.
#[derive(clap::Args)]
pub struct GrammarArgs {
    /// A grammar file, or builtin:json.
    #[arg(long, default_value = "builtin:json")]
    pub grammar: String,
    /// Grammar syntax (default: from the file extension; .gbnf is GBNF, .json a JSON
    /// Schema or a structural tag, .regex a whole-output regular expression, else Lark).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// JSON Schema (and a Lark grammar's `%json` schemas): drop keywords that cannot be
    /// enforced exactly (listed on stderr for a JSON Schema file) instead of refusing them.
    #[arg(long)]
    pub lenient: bool,
    /// JSON Schema (and a Lark grammar's `%json` schemas): no whitespace between tokens.
    #[arg(long)]
    pub compact: bool,
    /// A droppable terminal (repeatable): shifted where some live parse can shift it,
    /// skipped where none can. SynCode's Go grammar needs `--droppable EOS`.
    #[arg(long)]
    pub droppable: Vec<String>,
    /// Run a Lark grammar behind Lark's indenter with these newline, indent and dedent
    /// terminals (brackets: `LPAR`/`(` …), for grammars that do not spell them `_NL`,
    /// `_INDENT`, `_DEDENT` (those turn it on by themselves).
    #[arg(long, value_name = "NL,INDENT,DEDENT")]
    pub indenter: Option<String>,
    /// Columns a tab counts for the indenter (default 8, as Lark's `Indenter`).
    #[arg(long)]
    pub tab_len: Option<u32>,
    /// Cut lexemes by longest match, backing up to the last complete match when a
    /// lexeme dies incomplete (as flex, and in effect Lark, do), instead of 1-lookahead
    /// maximal munch. SynCode's Python grammar needs it. Commit, the reference and the
    /// mask automaton follow it.
    #[arg(long)]
    pub longest_match: bool,
    /// How lexemes are cut: `global` (every terminal competes for every lexeme),
    /// `contextual` (only the terminals that can follow the lexeme before it), or `auto`:
    /// contextual for a Lark grammar with `%json`, global otherwise.
    #[arg(long, value_enum, default_value_t = LexingArg::Auto)]
    pub lexing: LexingArg,
    /// Stop a compile step (the tables; the automaton) that runs past this many
    /// milliseconds, with a `time_limit` error (default: no limit).
    #[arg(long)]
    pub time_limit_ms: Option<u64>,
}

impl GrammarArgs {
    /// A compiler for `vocab` with these arguments' time limit.
    pub fn compiler<'v>(&self, vocab: &'v Vocab) -> compile::Compiler<'v> {
        let c = compile::Compiler::new(vocab);
        match self.time_limit_ms {
            Some(ms) => c.with_time_limit(std::time::Duration::from_millis(ms)),
            None => c,
        }
    }
}

/// `--tokenizer` and `--eos`, shared by the commands that load a vocabulary.
#[derive(clap::Args)]
pub struct TokenizerArgs {
    /// A tokenizer.json (optionally .gz), a .tiktoken rank file, or builtin:o200k.
    #[arg(long, default_value = "builtin:o200k")]
    pub tokenizer: String,
    /// Override the end-of-sequence token(s): ids or special-token names.
    #[arg(long)]
    pub eos: Vec<String>,
}

/// `--lexing` values (see [`compile::Lexing`]).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum LexingArg {
    Auto,
    Global,
    Contextual,
}

impl From<LexingArg> for compile::Lexing {
    fn from(a: LexingArg) -> Self {
        match a {
            LexingArg::Auto => compile::Lexing::Auto,
            LexingArg::Global => compile::Lexing::Global,
            LexingArg::Contextual => compile::Lexing::Contextual,
        }
    }
}

/// `--format` values.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Format {
    Lark,
    Gbnf,
    JsonSchema,
    /// A regular expression the whole output must match (the grammar argument is the
    /// file holding it; a trailing newline is not part of it).
    Regex,
    /// A structural tag (JSON): free text with tool calls after triggers. A .json file
    /// whose `type` is `"structural_tag"` is read as one without this flag.
    StructuralTag,
}

/// Reads grammar text from a file or a builtin, with the format to use.
pub fn grammar_text(spec: &str, format: Option<Format>) -> Result<(String, GrammarFormat), String> {
    let (text, guessed) = if let Some(name) = spec.strip_prefix("builtin:") {
        match name {
            "json" => (compile::BUILTIN_JSON.to_string(), GrammarFormat::Lark),
            other => {
                return Err(format!(
                    "no builtin grammar {other:?} (available: builtin:json)"
                ))
            }
        }
    } else {
        let bytes = std::fs::read(spec).map_err(|e| format!("cannot read {spec}: {e}"))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            format!(
                "{spec}: grammar is not valid UTF-8 (byte {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        (text, GrammarFormat::from_path(spec))
    };
    let format = match format {
        Some(Format::Lark) => GrammarFormat::Lark,
        Some(Format::Gbnf) => GrammarFormat::Gbnf,
        Some(Format::JsonSchema) => GrammarFormat::JsonSchema,
        Some(Format::Regex) => GrammarFormat::Regex,
        Some(Format::StructuralTag) => GrammarFormat::StructuralTag,
        None if guessed == GrammarFormat::JsonSchema
            && compile::frontend::structural_tag::is_spec(&text) =>
        {
            GrammarFormat::StructuralTag
        }
        None => guessed,
    };
    let text = if format == GrammarFormat::Regex {
        text.strip_suffix('\n').unwrap_or(&text).to_string()
    } else {
        text
    };
    Ok((text, format))
}

/// Compiles a grammar's text into the IR, honouring the JSON Schema options
/// (`--lenient` drops are listed on stderr).
pub fn grammar_ir(args: &GrammarArgs) -> Result<compile::Grammar, String> {
    let spec = args.grammar.as_str();
    let (mut g, format) = grammar_ir_plain(args)?;
    g.set_droppable(&args.droppable)
        .map_err(|e| format!("{spec}: --droppable: {e}"))?;
    if let Some(names) = &args.indenter {
        let [nl, indent, dedent] = names.split(',').collect::<Vec<_>>()[..] else {
            return Err(format!(
                "{spec}: --indenter takes three terminal names, NL,INDENT,DEDENT"
            ));
        };
        g.set_indenter(compile::IndenterSpec::named(nl, indent, dedent))
            .map_err(|e| format!("{spec}: --indenter: {e}"))?;
    }
    if let Some(n) = args.tab_len {
        g.set_tab_len(n)
            .map_err(|e| format!("{spec}: --tab-len: {e}"))?;
    }
    g.longest_match |= args.longest_match;
    compile::Lexing::from(args.lexing)
        .lay_on(g, format)
        .map_err(|e| format!("{spec}: --lexing: {e}"))
}

/// [`grammar_ir`] before the token-stream options (`--droppable`, `--indenter`,
/// `--tab-len`, `--longest-match`).
fn grammar_ir_plain(args: &GrammarArgs) -> Result<(compile::Grammar, GrammarFormat), String> {
    let spec = args.grammar.as_str();
    let (text, format) = grammar_text(spec, args.format)?;
    let opts = compile::frontend::json_schema::SchemaOptions {
        compact: args.compact,
        lenient: args.lenient,
    };
    if format == GrammarFormat::Lark {
        // `%json` schemas take the JSON Schema options too.
        return compile::frontend::lark::compile_with(&text, &opts)
            .map(|g| (g, format))
            .map_err(|e| format!("{spec}:{e}"));
    }
    if format == GrammarFormat::StructuralTag {
        // Schema bodies take the JSON Schema options too.
        return compile::frontend::structural_tag::compile_with(&text, &opts)
            .map(|g| (g, format))
            .map_err(|e| format!("{spec}: {e}"));
    }
    if format != GrammarFormat::JsonSchema {
        return compile::compile_grammar(&text, format)
            .map(|g| (g, format))
            .map_err(|e| format!("{spec}:{e}"));
    }
    let lowered = compile::frontend::json_schema::compile(&text, &opts)
        .map_err(|e| format!("{spec}: {e}"))?;
    for d in &lowered.dropped {
        eprintln!(
            "{spec}: dropped `{}` at {}: {}",
            d.keyword, d.pointer, d.reason
        );
    }
    Ok((lowered.grammar, format))
}

/// Compiles a grammar into recognizer tables for masks over `vocab`, timing it.
pub fn grammar(args: &GrammarArgs, vocab: &Vocab) -> Result<Loaded, String> {
    let spec = args.grammar.as_str();
    let t0 = Instant::now();
    let mut grammar = grammar_ir(args)?;
    // The reference reads the grammar too: it gets the special tokens named as the
    // tables do.
    grammar
        .resolve_special_tokens(vocab)
        .map_err(|e| format!("{spec}:{e}"))?;
    let tables = args
        .compiler(vocab)
        .tables(&grammar)
        .map_err(|e| format!("{spec}:{e}"))?;
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(Loaded {
        grammar,
        tables: Arc::new(tables),
        compile_ms,
    })
}

/// Loads a tokenizer and applies `--eos` overrides.
pub fn vocab(args: &TokenizerArgs) -> Result<Vocab, String> {
    let mut v = Vocab::load(&args.tokenizer).map_err(|e| e.to_string())?;
    if !args.eos.is_empty() {
        let ids = args
            .eos
            .iter()
            .map(|s| v.resolve_token(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        v.set_eos(&ids).map_err(|e| e.to_string())?;
    }
    Ok(v)
}

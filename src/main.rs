//! The `stackmask` command line: inspect vocabularies and grammars.

use std::io::Write;
use std::process::ExitCode;

mod cli;

/// The binary's allocator. glibc malloc consolidates its fastbins on the first large
/// request after a compile has freed millions of small build-time blocks, which put a
/// one-off stall of several milliseconds into the first commits after a compile.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: stackmask::allocator::Allocator = stackmask::allocator::Allocator;

use clap::{Parser, Subcommand};
use cli::check::{CheckArgs, Engine};
use cli::load::{GrammarArgs, TokenizerArgs};
use cli::sample::SampleArgs;
use cli::stdout::Stop;
use stackmask::compile::{self, build_lexer, lr::build_lr};
use stackmask::ids::TokenId;
use stackmask::lexer::lex;
use stackmask::vocab::Vocab;

#[derive(Parser)]
#[command(
    name = "stackmask",
    version,
    about = "Grammar-constrained decoding engine"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Load a tokenizer and print its size, special tokens and end-of-sequence tokens.
    Vocab {
        #[command(flatten)]
        tokenizer: TokenizerArgs,
        /// Print the bytes of these token ids.
        #[arg(long)]
        show: Vec<u32>,
    },
    /// Compile a grammar and print its terminals, rules and lexer size (or the error).
    Grammar {
        #[command(flatten)]
        grammar: GrammarArgs,
        /// Also lex this document and print its lexemes.
        #[arg(long)]
        lex: Option<String>,
        /// Also build the terminal tries of this tokenizer and print their sizes.
        #[arg(long)]
        tokenizer: Option<String>,
    },
    /// Compile a grammar for a tokenizer into an artifact file (or, with --load, check
    /// and time loading one).
    Compile {
        #[command(flatten)]
        grammar: GrammarArgs,
        #[command(flatten)]
        tokenizer: TokenizerArgs,
        /// Where to write the artifact.
        #[arg(short, long, required_unless_present = "load")]
        out: Option<String>,
        /// Load this artifact instead (checked against --tokenizer if given explicitly).
        #[arg(long, conflicts_with = "out")]
        load: Option<String>,
    },
    /// Decode a document token by token, checking and timing every mask and commit.
    Check {
        #[command(flatten)]
        grammar: GrammarArgs,
        #[command(flatten)]
        tokenizer: TokenizerArgs,
        /// The document.
        #[arg(long)]
        text: String,
        /// Which engine masks and commits.
        #[arg(long, value_enum, default_value = "reference")]
        engine: Engine,
        /// canonical (the tokenizer's own encoding) or random:SEED.
        #[arg(long, default_value = "canonical")]
        segment: String,
        /// Write each step's allowed token ids (one JSON array per line) here.
        #[arg(long)]
        dump_masks: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Compute the mask only every N steps (commits are always checked).
        #[arg(long, default_value_t = 1)]
        mask_every: usize,
        /// With --engine glr or dwa: compare with the reference mask every N steps (0: never).
        #[arg(long, default_value_t = 0)]
        verify_every: usize,
        /// With --engine dwa or both: take tables and automaton from this artifact
        /// (written by `compile` for the same tokenizer) instead of building them.
        #[arg(long)]
        artifact: Option<String>,
    },
    /// Print documents generated token by token from the masks (a crude prior picks
    /// among the allowed tokens), each with its token count and mask/commit latencies.
    Sample {
        #[command(flatten)]
        grammar: GrammarArgs,
        #[command(flatten)]
        tokenizer: TokenizerArgs,
        /// Number of documents.
        #[arg(long, default_value_t = 5)]
        n: usize,
        /// Random seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Most tokens per document (past a third of it, closing tokens are preferred).
        #[arg(long, default_value_t = 120)]
        max_tokens: usize,
        /// Probability of ending when the document may end.
        #[arg(long, default_value_t = 0.5)]
        eos_chance: f64,
    },
    /// MaskBench: compile every JSONSchemaBench schema in a directory and replay its
    /// valid and invalid instances token by token, counting errors and timing both.
    Maskbench {
        /// Directory of MaskBench files (each with `schema` and `tests`).
        #[arg(long, default_value = "../shared/maskbench")]
        data: String,
        #[command(flatten)]
        tokenizer: TokenizerArgs,
        /// reference / glr time commits only; dwa times mask + commit per token.
        #[arg(long, value_enum, default_value = "dwa")]
        engine: BenchEngine,
        /// Only the first N files (sorted by name).
        #[arg(long)]
        limit: Option<usize>,
        /// Only files whose path contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Only every N-th file (in name order; a fixed sample).
        #[arg(long, default_value_t = 1)]
        every: usize,
        /// Print one JSON object as the last line.
        #[arg(long)]
        json: bool,
        /// Serialize instances with non-ASCII escaped (Python's default ensure_ascii).
        #[arg(long)]
        ensure_ascii: bool,
        /// Drop keywords that cannot be enforced instead of refusing the schema.
        #[arg(long)]
        lenient: bool,
        /// No whitespace between tokens.
        #[arg(long)]
        compact: bool,
        /// Write one JSON line per file (status, error, TTFM, tokens replayed and the slowest
        /// one's TBM, wrongly judged instances).
        #[arg(long)]
        details: Option<String>,
        /// Replay each instance this many times: TBM stays the first replay's times, and
        /// each token's minimum over the replays is reported beside it (with --json, on
        /// the line before the summary), the engine's cost without machine noise.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
        replays: u32,
        /// Compile each schema this many times: TTFM stays the first compile's time, and
        /// each schema's least compile time is reported beside it (with --json, on a line
        /// before the summary), the engine's cost without the machine's passing slowdowns.
        /// The further compiles run after the schema's replays.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
        compiles: u32,
        /// After the replay, time a fixed computation as long as the median token as many
        /// times as tokens were timed (at most 2M): the machine's own noise at that length
        /// (with --json, on a line before the summary).
        #[arg(long)]
        noise: bool,
        /// Take every compiled grammar through its artifact bytes and back and compare the
        /// loaded grammar's masks with the original's at every step of every instance
        /// (with --json, counts on a line before the summary; `dwa` engine only).
        #[arg(long)]
        round_trip: bool,
        /// Stop each schema's compile (tables and automaton; the schema is lowered
        /// first) past this many milliseconds: counted as a `time_limit` compile error.
        #[arg(long)]
        time_limit_ms: Option<u64>,
    },
    /// Run the benchmark matrix (benches/data/matrix.toml): compile time, peak RSS,
    /// artifact size, mask and commit latency per workload, then batched masks.
    Bench {
        /// The matrix file.
        #[arg(long, default_value = "benches/data/matrix.toml")]
        matrix: String,
        /// Only the workloads marked quick, one replay each (for CI; under 2 minutes).
        #[arg(long)]
        quick: bool,
        /// One JSON object per row instead of markdown tables.
        #[arg(long)]
        json: bool,
        /// Only workloads whose name contains this (no batch benchmark).
        #[arg(long)]
        filter: Option<String>,
        /// Replays of each document (default 3; 1 with --quick).
        #[arg(long)]
        repeats: Option<usize>,
        /// Skip the batch benchmark.
        #[arg(long)]
        no_batch: bool,
        /// After each workload's replays, time a fixed computation as long as its median
        /// mask as many times as masks were timed: the machine's own noise at that length,
        /// in the same process, beside the mask tail.
        #[arg(long)]
        noise: bool,
        /// Internal: measure one workload in this process and print its row.
        #[arg(long, hide = true)]
        worker: Option<String>,
    },
}

/// `maskbench --engine` values.
#[derive(Clone, Copy, clap::ValueEnum)]
enum BenchEngine {
    Reference,
    Glr,
    Dwa,
    /// The automaton built on another thread; masks walk the vocabulary until it is there.
    Background,
}

fn run_vocab(args: &TokenizerArgs, show: &[u32]) -> Result<(), String> {
    let v = cli::load::vocab(args)?;
    println!("tokenizer: {}", v.name());
    println!(
        "ids: {} ({} tokens, {} unused)",
        v.len(),
        v.num_entries(),
        v.len() - v.num_entries()
    );
    println!("longest token: {} bytes", v.max_token_len());
    let specials = v.special_tokens();
    let shown: Vec<String> = specials
        .iter()
        .take(12)
        .map(|(id, n)| format!("{id}={n}"))
        .collect();
    println!(
        "special tokens: {}{}{}",
        specials.len(),
        if shown.is_empty() { "" } else { ": " },
        shown.join(" ")
    );
    if specials.len() > shown.len() {
        println!("  … and {} more", specials.len() - shown.len());
    }
    let eos: Vec<String> = v
        .eos()
        .iter()
        .map(|&id| {
            let name = specials
                .iter()
                .find(|(s, _)| *s == id)
                .map(|(_, n)| n.as_str())
                .unwrap_or("?");
            format!("{id}={name}")
        })
        .collect();
    println!(
        "eos: {}",
        if eos.is_empty() {
            "none (set with --eos)".into()
        } else {
            eos.join(" ")
        }
    );
    for &id in show {
        match v.token_bytes(TokenId::from_u32(id)) {
            Ok(b) => println!("token {id}: {:?}", String::from_utf8_lossy(b)),
            Err(e) => println!("token {id}: error: {e}"),
        }
    }
    Ok(())
}

fn run_grammar(
    args: &GrammarArgs,
    doc: Option<&str>,
    tokenizer: Option<&str>,
) -> Result<(), String> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = grammar_report(&mut out, args, doc, tokenizer).and_then(|()| Ok(out.flush()?));
    match r {
        Ok(()) | Err(Stop::Closed) => Ok(()),
        Err(Stop::Failed(m)) => Err(m),
    }
}

fn grammar_report(
    out: &mut impl Write,
    args: &GrammarArgs,
    doc: Option<&str>,
    tokenizer: Option<&str>,
) -> Result<(), Stop> {
    let spec = args.grammar.as_str();
    let g = cli::load::grammar_ir(args)?;
    let lexer = build_lexer(&g).map_err(|e| format!("{spec}:{e}"))?;
    write!(out, "{}", g.display())?;
    writeln!(
        out,
        "lexer: {} states, {} byte classes",
        lexer.num_states(),
        lexer.num_classes()
    )?;
    let lr = build_lr(&g).map_err(|e| format!("{spec}:{e}"))?;
    writeln!(
        out,
        "LR (LALR(1)): {} states, {} conflicts",
        lr.table.num_states(),
        lr.conflicts().len()
    )?;
    if let Some(tok) = tokenizer {
        let vocab = Vocab::load(tok).map_err(|e| e.to_string())?;
        let t0 = std::time::Instant::now();
        let tries = compile::dwa::trie_summary(&lexer, &vocab);
        writeln!(
            out,
            "terminal tries: {} start positions, {} nodes, {} token groups, built in {:.1} ms",
            tries.start_positions,
            tries.nodes,
            tries.token_groups,
            t0.elapsed().as_secs_f64() * 1e3
        )?;
        let compiler = compile::Compiler::new(&vocab);
        let tables = compiler.tables(&g).map_err(|e| format!("{spec}:{e}"))?;
        let t0 = std::time::Instant::now();
        let dwa = compiler.automaton(&tables).map_err(|e| e.to_string())?;
        writeln!(
            out,
            "mask automaton: {} states, {} transitions, {} weights, built in {:.1} ms",
            dwa.num_states(),
            dwa.num_transitions(),
            dwa.num_weights(),
            t0.elapsed().as_secs_f64() * 1e3
        )?;
    }
    if let Some(path) = doc {
        let input = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let lexemes = lex(&lexer, &input).map_err(|e| format!("{path}: {e}"))?;
        for l in &lexemes {
            let names: Vec<&str> = l
                .terminals
                .iter()
                .map(|&t| lexer.terminal_name(t))
                .collect();
            writeln!(
                out,
                "{:>6}..{:<6} {:<20} {:?}",
                l.start,
                l.end,
                names.join("|"),
                String::from_utf8_lossy(&input[l.start..l.end])
            )?;
        }
        writeln!(out, "{} lexemes", lexemes.len())?;
    }
    Ok(())
}

fn main() -> ExitCode {
    // SAFETY: no other thread exists yet.
    #[cfg(feature = "mimalloc")]
    unsafe {
        stackmask::allocator::tune_for_compiles()
    };
    let cli = Cli::parse();
    let r = match &cli.cmd {
        Cmd::Vocab { tokenizer, show } => run_vocab(tokenizer, show),
        Cmd::Grammar {
            grammar,
            lex,
            tokenizer,
        } => run_grammar(grammar, lex.as_deref(), tokenizer.as_deref()),
        Cmd::Check {
            grammar,
            tokenizer,
            text,
            engine,
            segment,
            dump_masks,
            json,
            mask_every,
            verify_every,
            artifact,
        } => cli::check::run(CheckArgs {
            grammar,
            tokenizer,
            text,
            engine: *engine,
            segment,
            dump_masks: dump_masks.as_deref(),
            json: *json,
            mask_every: *mask_every,
            verify_every: *verify_every,
            artifact: artifact.as_deref(),
        })
        .and_then(|ok| {
            if ok {
                Ok(())
            } else {
                Err("check failed".into())
            }
        }),
        Cmd::Bench {
            matrix,
            quick,
            json,
            filter,
            repeats,
            no_batch,
            noise,
            worker,
        } => cli::bench::run(cli::bench::BenchArgs {
            matrix,
            quick: *quick,
            json: *json,
            filter: filter.as_deref(),
            repeats: *repeats,
            no_batch: *no_batch,
            noise: *noise,
            worker: worker.as_deref(),
        }),
        Cmd::Maskbench {
            data,
            tokenizer,
            engine,
            limit,
            filter,
            every,
            json,
            ensure_ascii,
            lenient,
            compact,
            details,
            replays,
            compiles,
            noise,
            round_trip,
            time_limit_ms,
        } => cli::load::vocab(tokenizer).and_then(|vocab| {
            // As a server would when it loads the tokenizer: not in the first TTFM.
            vocab.prepare();
            let vocab = std::sync::Arc::new(vocab);
            let engine = match engine {
                BenchEngine::Reference => cli::maskbench::replay::Engine::Reference,
                BenchEngine::Glr => cli::maskbench::replay::Engine::Glr,
                BenchEngine::Dwa => cli::maskbench::replay::Engine::Dwa,
                BenchEngine::Background => cli::maskbench::replay::Engine::Background,
            };
            cli::maskbench::run(
                cli::maskbench::MaskbenchArgs {
                    data,
                    engine,
                    limit: *limit,
                    filter: filter.as_deref(),
                    every: *every,
                    json: *json,
                    ensure_ascii: *ensure_ascii,
                    schema: stackmask::compile::frontend::json_schema::SchemaOptions {
                        compact: *compact,
                        lenient: *lenient,
                    },
                    details: details.as_deref(),
                    replays: *replays as usize,
                    compiles: *compiles as usize,
                    noise: *noise,
                    round_trip: *round_trip,
                    time_limit: time_limit_ms.map(std::time::Duration::from_millis),
                },
                &vocab,
            )
            .map(|_| ())
        }),
        Cmd::Compile {
            grammar,
            tokenizer,
            out,
            load,
        } => match (out, load) {
            (Some(out), _) => cli::compile::run(grammar, tokenizer, out),
            (None, Some(path)) => cli::compile::load(
                path,
                (tokenizer.tokenizer != "builtin:o200k" || !tokenizer.eos.is_empty())
                    .then_some(tokenizer),
            ),
            // clap requires one of them.
            (None, None) => Err("give -o FILE or --load FILE".into()),
        },
        Cmd::Sample {
            grammar,
            tokenizer,
            n,
            seed,
            max_tokens,
            eos_chance,
        } => cli::sample::run(SampleArgs {
            grammar,
            tokenizer,
            n: *n,
            seed: *seed,
            max_tokens: *max_tokens,
            eos_chance: *eos_chance,
        })
        .map(|_| ()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! The one entry point of the offline pipeline: grammar text (or IR) × vocabulary →
//! [`CompiledGrammar`] (recognizer tables, mask automaton and the first mask).
//!
//! Every caller (the CLI, the Python package, the MaskBench harness, tests and fuzz
//! targets) compiles through [`Compiler`], so the lexer's counting margin always matches
//! the vocabulary and the automaton's limits are set in one place.

use std::borrow::Cow;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::interrupt::Interrupt;

use super::dwa::{self, string_split};
use super::frontend::json_schema::{self, SchemaOptions};
use super::lexer::{self, follow};
use super::{lr, DwaLimits, Grammar, GrammarError, GrammarFormat, IndenterSpec, LexerOptions};
use crate::dwa::Dwa;
use crate::glr::Tables;
use crate::runtime::{CompiledGrammar, GrammarBuild};
use crate::vocab::Vocab;

/// How a grammar's text is cut into lexemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lexing {
    /// Contextual for a Lark grammar that embeds a JSON Schema (`%json`), when nothing it
    /// has stands in the way (an indenter, longest-match lexing, droppable terminals);
    /// global for every other grammar.
    #[default]
    Auto,
    /// DESIGN.md §1: every terminal competes for every lexeme.
    Global,
    /// Each lexeme among the terminals that can follow the one before it in the grammar
    /// (lexer modes from its follow sets: `lexer::contextual`).
    Contextual,
}

impl Lexing {
    /// `g`, lowered from `format` (with its token-stream options set), with this lexing
    /// laid on: its lexer modes when contextual, unchanged when global.
    pub fn lay_on(self, g: Grammar, format: GrammarFormat) -> Result<Grammar, GrammarError> {
        self.lay_on_until(g, format, &LexerOptions::default(), &Interrupt::default())
    }

    fn lay_on_until(
        self,
        g: Grammar,
        format: GrammarFormat,
        opts: &LexerOptions,
        stop: &Interrupt,
    ) -> Result<Grammar, GrammarError> {
        let contextual = match self {
            Lexing::Global => false,
            Lexing::Contextual => true,
            Lexing::Auto => {
                format == GrammarFormat::Lark
                    && super::frontend::lark::embeds_json(&g)
                    && g.indenter.is_none()
                    && !g.longest_match
                    && !g.terminals.iter().any(|t| t.droppable)
            }
        };
        if !contextual {
            return Ok(g);
        }
        lexer::contextual::lay_follow_modes(&g, opts, stop)
    }
}

/// Compiles grammars for one vocabulary.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use stackmask::compile::{Compiler, GrammarFormat};
/// use stackmask::runtime::Matcher;
/// use stackmask::vocab::Vocab;
///
/// let vocab = Vocab::load("builtin:o200k")?;
/// let compiled = Compiler::new(&vocab).compile(r#"{"type": "integer"}"#, GrammarFormat::JsonSchema)?;
/// let mut m = Matcher::from_compiled(&compiled);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Compiler<'v> {
    vocab: &'v Vocab,
    lexer: LexerOptions,
    limits: DwaLimits,
    schema: SchemaOptions,
    droppable: Vec<String>,
    indenter: Option<IndenterSpec>,
    longest_match: bool,
    tab_len: Option<u32>,
    lexing: Lexing,
    cancel: Option<Arc<AtomicBool>>,
    time_limit: Option<Duration>,
}

impl<'v> Compiler<'v> {
    /// A compiler for `vocab` with the default limits: the lexer counts long strings with
    /// a margin of the vocabulary's longest token, and the automaton's limits are
    /// [`DwaLimits::default`].
    pub fn new(vocab: &'v Vocab) -> Self {
        Self {
            vocab,
            lexer: LexerOptions::for_vocab(vocab),
            limits: DwaLimits::default(),
            schema: SchemaOptions::default(),
            droppable: Vec::new(),
            indenter: None,
            longest_match: false,
            tab_len: None,
            lexing: Lexing::Auto,
            cancel: None,
            time_limit: None,
        }
    }

    /// With other mask-automaton limits (bounds on work for untrusted grammars).
    pub fn with_limits(mut self, limits: DwaLimits) -> Self {
        self.limits = limits;
        self
    }

    /// With at most `max` lexer states (past it a compile fails with
    /// [`GrammarError::TooLarge`]).
    pub fn with_max_lexer_states(mut self, max: usize) -> Self {
        self.lexer.max_states = max;
        self
    }

    /// With other JSON Schema options (`compact`, `lenient`).
    pub fn with_schema_options(mut self, schema: SchemaOptions) -> Self {
        self.schema = schema;
        self
    }

    /// With these terminals droppable in grammars from text ([`Self::grammar`],
    /// [`Self::compile`]): shifted where some live parse can shift them, skipped where
    /// none can (SynCode's Go grammar: `EOS`). IR passed in directly is taken as it is
    /// ([`Grammar::set_droppable`]). Commit, the reference and the mask automaton all
    /// follow the rule; the automaton refuses a lexeme that two droppable terminals
    /// match ([`GrammarError::Unsupported`]).
    pub fn with_droppable(mut self, names: &[&str]) -> Self {
        self.droppable = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// With grammars from text run behind Lark's indenter with these terminals
    /// ([`Grammar::set_indenter`]; a Lark grammar declaring `_INDENT` and `_DEDENT` beside
    /// an `_NL` terminal runs behind it by itself).
    pub fn with_indenter(mut self, spec: IndenterSpec) -> Self {
        self.indenter = Some(spec);
        self
    }

    /// With grammars lexed as `lexing` says (default [`Lexing::Auto`]).
    pub fn with_lexing(mut self, lexing: Lexing) -> Self {
        self.lexing = lexing;
        self
    }

    /// With grammars from text lexed by longest match (see `lexer::shadow`): a lexeme
    /// that dies incomplete backs up to its last complete match. Commit and the reference
    /// follow it; the mask automaton refuses such grammars for now.
    pub fn with_longest_match(mut self, on: bool) -> Self {
        self.longest_match = on;
        self
    }

    /// With the indenter's tab width ([`Grammar::set_tab_len`]; default 8, Lark's).
    pub fn with_tab_len(mut self, columns: u32) -> Self {
        self.tab_len = Some(columns);
        self
    }

    /// With a cancellation flag: once another thread sets it, a compile in progress
    /// stops within a few milliseconds with [`GrammarError::Cancelled`] (and a compile
    /// started after it fails at once). Clear it to compile again.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// With a time limit on each compile (from the call's start): past it the compile
    /// stops within a few milliseconds with [`GrammarError::TimeLimit`]. By default there
    /// is none; the size limits ([`DwaLimits`], [`Self::with_max_lexer_states`]) bound
    /// the work either way.
    pub fn with_time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    fn interrupt(&self) -> Interrupt {
        Interrupt::new(self.cancel.clone(), self.time_limit)
    }

    /// The vocabulary this compiler compiles for.
    pub fn vocab(&self) -> &'v Vocab {
        self.vocab
    }

    /// The automaton's limits.
    pub fn limits(&self) -> &DwaLimits {
        &self.limits
    }

    /// The lexer options (the counting margin fits the vocabulary).
    pub fn lexer_options(&self) -> &LexerOptions {
        &self.lexer
    }

    /// Grammar text in `format` → the grammar IR (JSON Schemas, and those a Lark grammar
    /// embeds with `%json`, with this compiler's schema options).
    pub fn grammar(&self, text: &str, format: GrammarFormat) -> Result<Grammar, GrammarError> {
        self.grammar_until(text, format, &self.interrupt())
    }

    fn grammar_until(
        &self,
        text: &str,
        format: GrammarFormat,
        stop: &Interrupt,
    ) -> Result<Grammar, GrammarError> {
        stop.check()?;
        let mut g = match format {
            GrammarFormat::JsonSchema => json_schema::compile_until(text, &self.schema, stop)
                .map(|l| l.grammar)
                .map_err(|e| e.into_stopped().unwrap_or_else(GrammarError::from))?,
            GrammarFormat::Lark => super::frontend::lark::compile_until(text, &self.schema, stop)?,
            GrammarFormat::StructuralTag => {
                super::frontend::structural_tag::compile_until(text, &self.schema, stop)?
            }
            other => super::compile_grammar(text, other)?,
        };
        g.set_droppable(&self.droppable)?;
        g.longest_match |= self.longest_match;
        if let Some(spec) = &self.indenter {
            g.set_indenter(spec.clone())?;
        }
        if let Some(columns) = self.tab_len {
            g.set_tab_len(columns)?;
        }
        g.resolve_special_tokens(self.vocab)?;
        stop.check()?;
        self.lexing.lay_on_until(g, format, &self.lexer, stop)
    }

    /// `g` with its special tokens resolved against this compiler's vocabulary (borrowed
    /// when it names none).
    fn resolved<'g>(&self, g: &'g Grammar) -> Result<Cow<'g, Grammar>, GrammarError> {
        if !g.has_special_tokens() {
            return Ok(Cow::Borrowed(g));
        }
        let mut g = g.clone();
        g.resolve_special_tokens(self.vocab)?;
        Ok(Cow::Owned(g))
    }

    /// Grammar text in `format` → a compiled grammar for the vocabulary.
    pub fn compile(
        &self,
        text: &str,
        format: GrammarFormat,
    ) -> Result<CompiledGrammar, GrammarError> {
        let stop = self.interrupt();
        let g = self.grammar_until(text, format, &stop)?;
        self.compile_ir_until(&g, &stop)
    }

    /// Grammar text in `format` → its recognizer tables now, and its mask automaton on
    /// a thread of its own: a [`GrammarBuild`] whose matchers mask by walking the
    /// vocabulary until the automaton is there (see `runtime::background`). `vocab` is
    /// this compiler's vocabulary, shared with the thread. Errors in the text or the
    /// tables come here; the automaton's (a limit, this compiler's time limit or
    /// cancellation flag, or every handle dropped) come from [`GrammarBuild::wait`], and
    /// leave the matchers walking.
    pub fn compile_in_background(
        &self,
        vocab: &Arc<Vocab>,
        text: &str,
        format: GrammarFormat,
    ) -> Result<GrammarBuild, GrammarError> {
        let stop = self.interrupt();
        let g = self.grammar_until(text, format, &stop)?;
        self.compile_ir_in_background_until(vocab, &g, stop)
    }

    /// [`Self::compile_in_background`] from grammar IR.
    pub fn compile_ir_in_background(
        &self,
        vocab: &Arc<Vocab>,
        g: &Grammar,
    ) -> Result<GrammarBuild, GrammarError> {
        self.compile_ir_in_background_until(vocab, g, self.interrupt())
    }

    fn compile_ir_in_background_until(
        &self,
        vocab: &Arc<Vocab>,
        g: &Grammar,
        stop: Interrupt,
    ) -> Result<GrammarBuild, GrammarError> {
        if !std::ptr::eq(self.vocab, &**vocab) {
            return Err(GrammarError::Unsupported {
                span: Default::default(),
                construct: "a background compile for another vocabulary".into(),
                reason: "the compiler's lexer options are made for its own vocabulary".into(),
            });
        }
        let g = self.resolved(g)?;
        let tables = Arc::new(super::build_glr_tables_until(&g, &self.lexer, &stop)?);
        // A grammar the automaton refuses keeps walking the vocabulary.
        let refusal = g.post_lexer()?.and_then(|i| {
            i.automaton_refusal
                .as_deref()
                .map(super::automaton_refuses_indentation)
        });
        // The build stops when every handle is gone, or on the caller's own flag.
        let cancel = Arc::new(AtomicBool::new(false));
        let (build, done) = GrammarBuild::pending(tables.clone(), vocab.clone(), cancel.clone());
        let vocab = vocab.clone();
        let limits = self.limits;
        // The time limit counts from this call, as a compile's does.
        let stop = stop.or_when(cancel);
        std::thread::Builder::new()
            .name("stackmask-automaton".into())
            .spawn(move || {
                let result = match refusal {
                    Some(e) => Err(e),
                    None => dwa::build::build_dwa_until(&tables, &vocab, limits, &stop)
                        .map(|dwa| CompiledGrammar::new(tables, Arc::new(dwa), &vocab)),
                };
                done.complete(result);
            })
            .map_err(|e| GrammarError::Unsupported {
                span: Default::default(),
                construct: "a background compile".into(),
                reason: format!("no thread could be started: {e}"),
            })?;
        Ok(build)
    }

    /// Grammar IR → a compiled grammar for the vocabulary (its first mask included).
    pub fn compile_ir(&self, g: &Grammar) -> Result<CompiledGrammar, GrammarError> {
        self.compile_ir_until(g, &self.interrupt())
    }

    fn compile_ir_until(
        &self,
        g: &Grammar,
        stop: &Interrupt,
    ) -> Result<CompiledGrammar, GrammarError> {
        let (tables, dwa) = self.tables_and_automaton_until(g, stop)?;
        Ok(CompiledGrammar::new(
            Arc::new(tables),
            Arc::new(dwa),
            self.vocab,
        ))
    }

    /// Grammar IR → recognizer tables alone (commit without masks, the reference oracle's
    /// lexer), with the lexer options masks over this vocabulary need.
    pub fn tables(&self, g: &Grammar) -> Result<Tables, GrammarError> {
        super::build_glr_tables_until(&*self.resolved(g)?, &self.lexer, &self.interrupt())
    }

    /// The mask automaton of recognizer tables for the vocabulary.
    pub fn automaton(&self, tables: &Tables) -> Result<Dwa, GrammarError> {
        dwa::build::build_dwa_until(tables, self.vocab, self.limits, &self.interrupt())
    }

    /// Grammar IR → recognizer tables and their mask automaton: the same as
    /// [`Self::tables`] then [`Self::automaton`], with the automaton's lexer half built
    /// while the LR table is (tens of milliseconds on one thread for a large schema).
    /// Errors come in the same order.
    pub fn tables_and_automaton(&self, g: &Grammar) -> Result<(Tables, Dwa), GrammarError> {
        self.tables_and_automaton_until(g, &self.interrupt())
    }

    fn tables_and_automaton_until(
        &self,
        g: &Grammar,
        stop: &Interrupt,
    ) -> Result<(Tables, Dwa), GrammarError> {
        let g = &*self.resolved(g)?;
        let indenter = g.post_lexer()?;
        if let Some(why) = indenter.as_ref().and_then(|i| i.automaton_refusal.as_ref()) {
            return Err(super::automaton_refuses_indentation(why));
        }
        let (opts, limits, vocab) = (&self.lexer, &self.limits, self.vocab);
        // On one of rayon's threads, as `build_dwa_until` is: the automaton's parallel
        // steps then fork and join in place.
        rayon::scope(|_| {
            let (lexed, lr) = rayon::join(
                || {
                    let lexer = lexer::build::build_lexer_until(g, opts, stop)?;
                    // The automaton's split lexer needs only the lexer: it is made beside
                    // the follow sets, and both are serial for the most part.
                    let (follow, plan) = rayon::join(
                        || follow::build_follow(&lexer),
                        || string_split::plan(&lexer, limits.split),
                    );
                    // Inside brackets the indenter drops newlines: what can follow there
                    // steps over them.
                    let inside = indenter
                        .as_ref()
                        .map(|ind| follow::build_follow_dropping(&lexer, Some(ind.nl)));
                    let indent = indenter.as_ref().zip(inside.as_ref());
                    let half =
                        dwa::build::lexer_half(&lexer, &follow, indent, plan, vocab, limits, stop);
                    Ok::<_, GrammarError>((lexer, follow, inside, half))
                },
                || lr::build_lr_until(g, stop),
            );
            let (lexer, follow, inside, half) = lexed?;
            let lr = lr?.table;
            let refs = dwa::build::TableRefs {
                lexer: &lexer,
                follow: &follow,
                lr: &lr,
                indent: indenter.as_ref().zip(inside.as_ref()),
            };
            let dwa = dwa::build::finish_dwa(half?, refs, vocab, limits, stop)?;
            // The lexer and LR tables come from the same grammar, so they agree on
            // terminals.
            let mut tables =
                Tables::from_parts(lexer, follow, lr).expect("tables from one grammar");
            tables.indenter = indenter.zip(inside);
            Ok((tables, dwa))
        })
    }
}

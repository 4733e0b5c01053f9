//! Python bindings of stackmask (`stackmask._core`): tokenizer info, grammar compilation,
//! compiled-grammar (de)serialization, and matchers that fill a caller's int32 bitmask in
//! place with the GIL released. Depends only on the engine's public API; the Python
//! package (`stackmask/`) re-exports these classes and adds the server shims.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use numpy::{PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use stackmask::compile::frontend::json_schema::{SchemaError, SchemaOptions};
use stackmask::compile::DwaLimits;
use stackmask::compile::{
    compile_grammar, Compiler, Grammar, GrammarError, GrammarFormat, IndenterSpec, Lexing,
};
use stackmask::ids::TokenId;
use stackmask::runtime::{self, Matcher, VocabFingerprint};
use stackmask::vocab::Vocab;

/// The extension's allocator for its own (Rust) allocations. With glibc malloc, the first
/// large request after a compile has freed millions of small build-time blocks
/// consolidates the fastbins: a one-off stall of milliseconds inside a later commit.
#[global_allocator]
static GLOBAL: stackmask::allocator::Allocator = stackmask::allocator::Allocator;

create_exception!(
    stackmask,
    StackmaskError,
    PyValueError,
    "Raised for invalid grammars, schemas, artifacts, token ids and bitmasks; the message \
     is the engine's."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    StackmaskError::new_err(e.to_string())
}

/// A `StackmaskError` with the error's class as attributes: `kind` (`unsupported`,
/// `invalid`, `json`, `unsatisfiable`, `too_large`, `cancelled`, `time_limit`,
/// `grammar`), and for refusals the
/// `keyword` and its JSON `pointer` (None otherwise), so callers can count refusals.
fn schema_err(py: Python<'_>, e: &SchemaError) -> PyErr {
    let pe = StackmaskError::new_err(e.to_string());
    let (keyword, pointer) = match e {
        SchemaError::Unsupported {
            keyword, pointer, ..
        } => (Some(keyword.clone()), Some(pointer.clone())),
        _ => (None, None),
    };
    let v = pe.value(py);
    // Setting attributes on a fresh exception instance cannot fail short of memory
    // exhaustion; the message alone still describes the error then.
    let _ = v.setattr("kind", e.kind());
    let _ = v.setattr("keyword", keyword);
    let _ = v.setattr("pointer", pointer);
    pe
}

/// Vocabularies created in this process, by fingerprint: `CompiledGrammar.deserialize`
/// finds the tokenizer an artifact was compiled for here when none is given.
type Registry = Mutex<HashMap<(u32, u32), Weak<Vocab>>>;

fn registry() -> &'static Registry {
    static R: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    R.get_or_init(Default::default)
}

fn key(f: &VocabFingerprint) -> (u32, u32) {
    (f.len, f.crc)
}

/// A tokenizer's vocabulary (exact token bytes, special and end-of-sequence tokens) and
/// the model's vocabulary size (the bitmask width; at least the tokenizer's).
#[pyclass(frozen, module = "stackmask")]
#[derive(Clone)]
pub struct TokenizerInfo {
    vocab: Arc<Vocab>,
    vocab_size: usize,
}

impl TokenizerInfo {
    fn new(
        py: Python<'_>,
        mut vocab: Vocab,
        eos: Option<Vec<u32>>,
        vocab_size: Option<usize>,
    ) -> PyResult<Self> {
        if let Some(ids) = eos {
            let ids: Vec<TokenId> = ids.into_iter().map(TokenId::from_u32).collect();
            vocab.set_eos(&ids).map_err(err)?;
        }
        // The per-vocabulary tables now, at load, rather than in the first request's compile.
        py.detach(|| vocab.prepare());
        let vocab_size = vocab_size.unwrap_or(vocab.len());
        if vocab_size < vocab.len() {
            return Err(err(format!(
                "vocab_size {vocab_size} is smaller than the tokenizer's {} ids",
                vocab.len()
            )));
        }
        let vocab = Arc::new(vocab);
        let f = VocabFingerprint::of(&vocab);
        // The registry only caches; a poisoned lock still holds a valid map.
        let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
        r.retain(|_, w| w.strong_count() > 0);
        // Equal fingerprints mean equal tokens: a live entry serves as well as this one.
        r.entry(key(&f)).or_insert_with(|| Arc::downgrade(&vocab));
        Ok(Self { vocab, vocab_size })
    }
}

#[pymethods]
impl TokenizerInfo {
    /// Loads a Hugging Face `tokenizer.json` given as a path or as its JSON text. `eos`
    /// overrides the end-of-sequence token ids; `vocab_size` is the model's (padded)
    /// vocabulary size, which sets the bitmask width.
    #[staticmethod]
    #[pyo3(signature = (path_or_str, *, eos=None, vocab_size=None))]
    fn from_tokenizer_json(
        py: Python<'_>,
        path_or_str: &str,
        eos: Option<Vec<u32>>,
        vocab_size: Option<usize>,
    ) -> PyResult<Self> {
        let text = path_or_str.to_string();
        let vocab = py
            .detach(move || {
                if text.trim_start().starts_with('{') {
                    stackmask::vocab::hf::from_tokenizer_json_bytes(
                        "tokenizer.json",
                        text.as_bytes(),
                    )
                } else {
                    Vocab::load(&text)
                }
            })
            .map_err(err)?;
        Self::new(py, vocab, eos, vocab_size)
    }

    /// A tokenizer bundled with stackmask (`"o200k"`: OpenAI's o200k_base).
    #[staticmethod]
    #[pyo3(signature = (name="o200k", *, eos=None, vocab_size=None))]
    fn builtin(
        py: Python<'_>,
        name: &str,
        eos: Option<Vec<u32>>,
        vocab_size: Option<usize>,
    ) -> PyResult<Self> {
        let vocab = Vocab::load(&format!("builtin:{name}")).map_err(err)?;
        Self::new(py, vocab, eos, vocab_size)
    }

    /// The model's vocabulary size (bitmask width in bits).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// End-of-sequence token ids.
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.vocab.eos().iter().map(|t| t.as_u32()).collect()
    }

    /// The tokenizer's canonical encoding of `text`.
    fn encode(&self, text: &str) -> PyResult<Vec<u32>> {
        let ids = self.vocab.encode(text).map_err(err)?;
        Ok(ids.into_iter().map(|t| t.as_u32()).collect())
    }

    /// The exact bytes of one token.
    fn token_bytes<'py>(&self, py: Python<'py>, token_id: u32) -> PyResult<Bound<'py, PyBytes>> {
        let b = self
            .vocab
            .token_bytes(TokenId::from_u32(token_id))
            .map_err(err)?;
        Ok(PyBytes::new(py, b))
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenizerInfo(name={:?}, vocab_size={}, eos={:?})",
            self.vocab.name(),
            self.vocab_size,
            self.eos_token_ids()
        )
    }
}

/// A grammar compiled for one tokenizer: recognizer tables and mask automaton. Immutable
/// and cheap to share between matchers and threads.
#[pyclass(frozen, module = "stackmask")]
pub struct CompiledGrammar {
    inner: Compiled,
    tokenizer: TokenizerInfo,
}

/// A compiled grammar, or one whose automaton is being built in the background.
enum Compiled {
    Ready(runtime::CompiledGrammar),
    Build(runtime::GrammarBuild),
}

impl Compiled {
    fn matcher(&self) -> Matcher {
        match self {
            Compiled::Ready(g) => Matcher::from_compiled(g),
            Compiled::Build(b) => Matcher::from_build(b),
        }
    }
}

#[pymethods]
impl CompiledGrammar {
    /// The artifact bytes (versioned and checksummed).
    /// A grammar compiled with `background=True` waits for its automaton first (and
    /// raises if the build failed).
    fn serialize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = match &self.inner {
            Compiled::Ready(g) => g.to_bytes(),
            Compiled::Build(b) => py
                .detach(|| b.wait().map(|g| g.to_bytes()))
                .map_err(|e| err(format!("the background build failed: {e}")))?,
        };
        Ok(PyBytes::new(py, &bytes))
    }

    /// Whether the mask automaton is there (always, but while a `background=True`
    /// compile builds it).
    #[getter]
    fn is_built(&self) -> bool {
        match &self.inner {
            Compiled::Ready(_) => true,
            Compiled::Build(b) => b.compiled().is_some(),
        }
    }

    /// Waits (without the GIL) until the automaton of a `background=True` compile is
    /// built; raises if its build failed (matchers then keep walking the vocabulary).
    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        match &self.inner {
            Compiled::Ready(_) => Ok(()),
            Compiled::Build(b) => py
                .detach(|| b.wait().map(|_| ()))
                .map_err(|e| err(format!("the background build failed: {e}"))),
        }
    }

    /// Loads an artifact written by `serialize`. Without `tokenizer_info`, the tokenizer
    /// it was compiled for must exist in this process (it is found by fingerprint).
    #[staticmethod]
    #[pyo3(signature = (data, tokenizer_info=None))]
    fn deserialize(
        py: Python<'_>,
        data: &[u8],
        tokenizer_info: Option<PyRef<'_, TokenizerInfo>>,
    ) -> PyResult<Self> {
        let inner = py
            .detach(|| runtime::CompiledGrammar::from_bytes(data))
            .map_err(err)?;
        let tokenizer = match tokenizer_info {
            Some(t) => {
                inner.check_vocab(&t.vocab).map_err(err)?;
                t.clone()
            }
            None => {
                let r = registry().lock().unwrap_or_else(|e| e.into_inner());
                let vocab = r
                    .get(&key(&inner.vocab))
                    .and_then(Weak::upgrade)
                    .ok_or_else(|| {
                        err(format!(
                            "no tokenizer with {} ids matching this artifact was loaded in this \
                         process: pass tokenizer_info",
                            inner.vocab.len
                        ))
                    })?;
                let vocab_size = vocab.len();
                TokenizerInfo { vocab, vocab_size }
            }
        };
        Ok(Self {
            inner: Compiled::Ready(inner),
            tokenizer,
        })
    }

    /// The tokenizer this grammar was compiled for.
    #[getter]
    fn tokenizer_info(&self) -> TokenizerInfo {
        self.tokenizer.clone()
    }
}

/// Compiles grammars for one tokenizer.
#[pyclass(frozen, module = "stackmask")]
pub struct GrammarCompiler {
    tokenizer: TokenizerInfo,
}

/// Bounds on compile work for untrusted grammars (`None`: the engine's defaults), and
/// what stops a compile early.
#[derive(Clone, Default)]
struct Limits {
    max_lexer_states: Option<usize>,
    max_automaton_states: Option<usize>,
    max_tries: Option<usize>,
    time_limit_ms: Option<u64>,
    cancel: Option<Arc<AtomicBool>>,
}

/// How a grammar's lexemes reach its parser: droppable terminals, and the indenter's
/// terminals and tab width, and the lexing (`compile_lark`).
#[derive(Default)]
struct Stream {
    droppable: Vec<String>,
    indenter: Option<(String, String, String)>,
    tab_len: Option<u32>,
    longest_match: bool,
    lexing: Lexing,
    /// A Lark grammar's `%json` schemas' options.
    schema: SchemaOptions,
}

/// `lexing=`: `"auto"`, `"global"` or `"contextual"` (see `stackmask::compile::Lexing`).
fn lexing_arg(s: &str) -> PyResult<Lexing> {
    match s {
        "auto" => Ok(Lexing::Auto),
        "global" => Ok(Lexing::Global),
        "contextual" => Ok(Lexing::Contextual),
        other => Err(PyValueError::new_err(format!(
            "lexing must be \"auto\", \"global\" or \"contextual\", not {other:?}"
        ))),
    }
}

/// Cancels compiles from another thread: pass it as `cancel=` to a `GrammarCompiler`
/// method (which releases the GIL while it compiles), then call `cancel()`; the compile
/// raises `StackmaskError` with `kind == "cancelled"` within a few milliseconds. A
/// compile started while it is set fails at once; `reset()` clears it.
#[pyclass(frozen, module = "stackmask")]
pub struct CompileCancel {
    flag: Arc<AtomicBool>,
}

#[pymethods]
impl CompileCancel {
    #[new]
    fn py_new() -> Self {
        Self {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Stops the compiles this token was given to.
    fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Clears the flag, so that the token can be given to new compiles.
    fn reset(&self) {
        self.flag.store(false, Ordering::Relaxed);
    }

    /// Whether `cancel()` was called (and not reset since).
    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

impl GrammarCompiler {
    /// Grammar IR → tables → automaton, with the GIL released.
    fn build(
        &self,
        py: Python<'_>,
        grammar: Grammar,
        limits: Limits,
    ) -> Result<CompiledGrammar, GrammarError> {
        self.build_with(py, limits, move |c, _| {
            c.compile_ir(&grammar).map(Compiled::Ready)
        })
    }

    /// Runs `compile` on a compiler set up with `limits`, with the GIL released.
    fn build_with(
        &self,
        py: Python<'_>,
        limits: Limits,
        compile: impl FnOnce(&Compiler<'_>, &Arc<Vocab>) -> Result<Compiled, GrammarError> + Send,
    ) -> Result<CompiledGrammar, GrammarError> {
        let vocab = self.tokenizer.vocab.clone();
        let inner = py.detach(move || -> Result<Compiled, GrammarError> {
            let mut dwa_limits = DwaLimits::default();
            if let Some(max) = limits.max_automaton_states {
                dwa_limits.max_states = max;
            }
            if let Some(max) = limits.max_tries {
                dwa_limits.max_tries = max;
            }
            let mut compiler = Compiler::new(&vocab).with_limits(dwa_limits);
            if let Some(max) = limits.max_lexer_states {
                compiler = compiler.with_max_lexer_states(max);
            }
            if let Some(ms) = limits.time_limit_ms {
                compiler = compiler.with_time_limit(Duration::from_millis(ms));
            }
            if let Some(flag) = limits.cancel {
                compiler = compiler.with_cancel(flag);
            }
            compile(&compiler, &vocab)
        })?;
        Ok(CompiledGrammar {
            inner,
            tokenizer: self.tokenizer.clone(),
        })
    }

    fn text(
        &self,
        py: Python<'_>,
        text: &str,
        format: GrammarFormat,
        stream: &Stream,
        limits: Limits,
    ) -> PyResult<CompiledGrammar> {
        let g = match format {
            GrammarFormat::Lark => {
                stackmask::compile::frontend::lark::compile_with(text, &stream.schema)
            }
            _ => compile_grammar(text, format),
        };
        let mut g = g.map_err(|e| err(format!("grammar:{e}")))?;
        g.set_droppable(&stream.droppable)
            .map_err(|e| err(format!("grammar:droppable: {e}")))?;
        if let Some((nl, indent, dedent)) = &stream.indenter {
            g.set_indenter(IndenterSpec::named(nl, indent, dedent))
                .map_err(|e| err(format!("grammar:indenter: {e}")))?;
        }
        if let Some(n) = stream.tab_len {
            g.set_tab_len(n)
                .map_err(|e| err(format!("grammar:tab_len: {e}")))?;
        }
        g.longest_match |= stream.longest_match;
        let g = stream
            .lexing
            .lay_on(g, format)
            .map_err(|e| err(format!("grammar:lexing: {e}")))?;
        self.build(py, g, limits).map_err(|e| {
            let kind = match e {
                GrammarError::Cancelled => "cancelled",
                GrammarError::TimeLimit { .. } => "time_limit",
                GrammarError::TooLarge { .. } => "too_large",
                _ => "grammar",
            };
            let pe = err(format!("grammar:{e}"));
            // As in `schema_err`: the message alone describes the error if this fails.
            let _ = pe.value(py).setattr("kind", kind);
            pe
        })
    }
}

#[pymethods]
impl GrammarCompiler {
    #[new]
    fn py_new(tokenizer_info: PyRef<'_, TokenizerInfo>) -> Self {
        Self {
            tokenizer: tokenizer_info.clone(),
        }
    }

    /// Compiles a JSON Schema (a JSON string). Keywords that cannot be enforced exactly
    /// raise, naming the keyword and its JSON pointer (also as the exception's `keyword`
    /// and `pointer`; `kind` classifies every error), unless `lenient` (then they are
    /// dropped). `compact` allows no whitespace between tokens. `max_lexer_states`,
    /// `max_automaton_states` and `max_tries` (distinct lexer positions tokens are walked
    /// from) bound the compile work for untrusted schemas (`too_large`). `time_limit_ms`
    /// stops a compile that runs longer (`time_limit`; default: no limit), and `cancel`
    /// (a `CompileCancel`) lets another thread stop it (`cancelled`). With `background`,
    /// it returns once the tables are built and the first mask walked, and the mask
    /// automaton is built on another thread: matchers mask by walking the vocabulary
    /// (exact, slower) until it is there (`is_built`, `wait()`).
    #[pyo3(signature = (schema, *, lenient=false, compact=false, max_lexer_states=None, max_automaton_states=None, max_tries=None, time_limit_ms=None, cancel=None, background=false))]
    // Each argument is a Python keyword argument: the signature is the Python API.
    #[allow(clippy::too_many_arguments)]
    fn compile_json_schema(
        &self,
        py: Python<'_>,
        schema: &str,
        lenient: bool,
        compact: bool,
        max_lexer_states: Option<usize>,
        max_automaton_states: Option<usize>,
        max_tries: Option<usize>,
        time_limit_ms: Option<u64>,
        cancel: Option<PyRef<'_, CompileCancel>>,
        background: bool,
    ) -> PyResult<CompiledGrammar> {
        let opts = SchemaOptions { compact, lenient };
        let limits = Limits {
            max_lexer_states,
            max_automaton_states,
            max_tries,
            time_limit_ms,
            cancel: cancel.map(|c| c.flag.clone()),
        };
        // Lowering included: it runs without the GIL and under the same limits.
        let schema = schema.to_string();
        self.build_with(py, limits, move |c, vocab| {
            let c = c.clone().with_schema_options(opts);
            if background {
                c.compile_in_background(vocab, &schema, GrammarFormat::JsonSchema)
                    .map(Compiled::Build)
            } else {
                c.compile(&schema, GrammarFormat::JsonSchema)
                    .map(Compiled::Ready)
            }
        })
        .map_err(|e| match e {
            GrammarError::Schema(se) => schema_err(py, &se),
            e => schema_err(py, &SchemaError::Grammar(Box::new(e))),
        })
    }

    /// Compiles any JSON value (the built-in JSON grammar).
    fn compile_builtin_json_grammar(&self, py: Python<'_>) -> PyResult<CompiledGrammar> {
        self.text(
            py,
            stackmask::compile::BUILTIN_JSON,
            GrammarFormat::Lark,
            &Stream::default(),
            Limits::default(),
        )
    }

    /// Compiles a Lark grammar (start rule `start`). `droppable` names terminals that
    /// are shifted where some live parse can shift them and skipped where none can
    /// (SynCode's Go grammar: `["EOS"]`). A grammar declaring `_INDENT` and `_DEDENT`
    /// beside an `_NL` terminal runs behind Lark's indenter; `indenter=(NL, INDENT,
    /// DEDENT)` names other terminals for it, `tab_len` its tab width (default 8).
    /// `longest_match` lexes by longest match (a lexeme that dies incomplete backs up to
    /// its last complete match; SynCode's Python setup). An indenter grammar whose
    /// parses do not show its brackets and levels (they must pair up within productions,
    /// with no newline between brackets) is refused (`StackmaskError` naming why).
    /// `lexing`: `"global"` (every terminal competes for every lexeme), `"contextual"`
    /// (only those that can follow the lexeme before it), or `"auto"`: contextual for a
    /// grammar with `%json`, global otherwise. `compact` and `lenient` apply to the
    /// grammar's `%json` schemas as to `compile_json_schema`. `time_limit_ms` and `cancel`
    /// as for `compile_json_schema`.
    #[pyo3(signature = (grammar, *, droppable=Vec::new(), indenter=None, tab_len=None, longest_match=false, lexing="auto", compact=false, lenient=false, time_limit_ms=None, cancel=None))]
    #[allow(clippy::too_many_arguments)]
    fn compile_lark(
        &self,
        py: Python<'_>,
        grammar: &str,
        droppable: Vec<String>,
        indenter: Option<(String, String, String)>,
        tab_len: Option<u32>,
        longest_match: bool,
        lexing: &str,
        compact: bool,
        lenient: bool,
        time_limit_ms: Option<u64>,
        cancel: Option<PyRef<'_, CompileCancel>>,
    ) -> PyResult<CompiledGrammar> {
        let stream = Stream {
            droppable,
            indenter,
            tab_len,
            longest_match,
            lexing: lexing_arg(lexing)?,
            schema: SchemaOptions { compact, lenient },
        };
        self.text(
            py,
            grammar,
            GrammarFormat::Lark,
            &stream,
            stops(time_limit_ms, cancel),
        )
    }

    /// Compiles a GBNF grammar (start rule `root`); `droppable`, `time_limit_ms` and
    /// `cancel` as for `compile_lark`.
    #[pyo3(signature = (grammar, *, droppable=Vec::new(), time_limit_ms=None, cancel=None))]
    fn compile_gbnf(
        &self,
        py: Python<'_>,
        grammar: &str,
        droppable: Vec<String>,
        time_limit_ms: Option<u64>,
        cancel: Option<PyRef<'_, CompileCancel>>,
    ) -> PyResult<CompiledGrammar> {
        self.text(
            py,
            grammar,
            GrammarFormat::Gbnf,
            &Stream {
                droppable,
                ..Stream::default()
            },
            stops(time_limit_ms, cancel),
        )
    }

    /// Compiles a regular expression the whole output must match (Rust `regex` syntax;
    /// a leading `^` and trailing `$` are optional); `time_limit_ms` and `cancel` as for
    /// `compile_json_schema`.
    #[pyo3(signature = (pattern, *, time_limit_ms=None, cancel=None))]
    fn compile_regex(
        &self,
        py: Python<'_>,
        pattern: &str,
        time_limit_ms: Option<u64>,
        cancel: Option<PyRef<'_, CompileCancel>>,
    ) -> PyResult<CompiledGrammar> {
        self.text(
            py,
            pattern,
            GrammarFormat::Regex,
            &Stream::default(),
            stops(time_limit_ms, cancel),
        )
    }

    /// Compiles a structural tag: free text in which each trigger starts a tool call
    /// (`begin`, a body, `end`). `spec` is the JSON spec (`{"type": "structural_tag",
    /// "structures": [{"begin", "schema" | "grammar" | "regex", "end"}], "triggers",
    /// "at_least_one"}`) as vLLM and SGLang pass it (`stackmask.structural_tag_spec`
    /// writes it from xgrammar's `(tags, triggers)`). `time_limit_ms` and `cancel` as for
    /// `compile_json_schema`.
    #[pyo3(signature = (spec, *, time_limit_ms=None, cancel=None))]
    fn compile_structural_tag(
        &self,
        py: Python<'_>,
        spec: &str,
        time_limit_ms: Option<u64>,
        cancel: Option<PyRef<'_, CompileCancel>>,
    ) -> PyResult<CompiledGrammar> {
        self.text(
            py,
            spec,
            GrammarFormat::StructuralTag,
            &Stream::default(),
            stops(time_limit_ms, cancel),
        )
    }

    /// The tokenizer grammars are compiled for.
    #[getter]
    fn tokenizer_info(&self) -> TokenizerInfo {
        self.tokenizer.clone()
    }
}

/// The constraint state of one sequence: accept sampled tokens, fill the next token
/// bitmask, roll back any number of steps.
#[pyclass(module = "stackmask")]
pub struct GrammarMatcher {
    matcher: Matcher,
    tokenizer: TokenizerInfo,
}

/// The bitmask a caller passes: int32 rows of `ceil(V/32)` words or more.
type Bitmask<'py> = Bound<'py, PyArray2<i32>>;

/// The words of a caller's `[batch, words]` int32 bitmask, as u32, with its row count and
/// row length; `words` must be at least `need_words`.
///
/// Not through numpy's borrow tracking (`PyReadwriteArray2`): registering and releasing
/// the borrow cost about 150 ns a call, a sixth of a JSON mask. What it guards against is
/// another Rust extension holding a borrow of this same array while it calls into this
/// one; Python code that writes the array from another thread while a fill runs without
/// the GIL races either way (numpy has no locks).
///
/// # Safety
/// While the returned slice lives, the caller makes no other slice of this array's data.
// The data is the array's, not the handle's: a shared handle is all numpy gives.
#[allow(clippy::mut_from_ref)]
unsafe fn rows_of<'a>(
    bitmask: &'a Bitmask<'_>,
    need_words: usize,
) -> PyResult<(&'a mut [u32], usize, usize)> {
    let shape = bitmask.shape();
    let (rows, words) = (shape[0], shape[1]);
    if words < need_words {
        return Err(err(format!(
            "bitmask rows have {words} int32 words; the vocabulary needs {need_words}"
        )));
    }
    // SAFETY: the array is alive while `bitmask` is borrowed (it holds a reference, and
    // numpy refuses to resize a referenced array); the caller makes no other slice of it
    // (see above for other extensions').
    let slice = unsafe { bitmask.as_slice_mut() }
        .map_err(|_| err("bitmask must be a C-contiguous int32 array"))?;
    // SAFETY: i32 and u32 have the same size and alignment and every bit pattern is valid
    // for both; the slice is borrowed mutably for the returned lifetime.
    let words_u32 =
        unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast::<u32>(), slice.len()) };
    Ok((words_u32, rows, words))
}

#[pymethods]
impl GrammarMatcher {
    #[new]
    fn py_new(compiled: &CompiledGrammar) -> Self {
        Self {
            matcher: compiled.inner.matcher(),
            tokenizer: compiled.tokenizer.clone(),
        }
    }

    /// Commits one token; returns False (changing nothing) if the grammar does not allow
    /// it. An unknown token id raises.
    fn accept_token(&mut self, token_id: u32) -> PyResult<bool> {
        self.check_id(token_id)?;
        Ok(self
            .matcher
            .commit(&self.tokenizer.vocab, TokenId::from_u32(token_id))
            .is_ok())
    }

    /// Commits tokens in order if all are allowed (returns True); otherwise commits none
    /// and returns False.
    fn accept_tokens(&mut self, token_ids: Vec<u32>) -> PyResult<bool> {
        let ids = self.ids(&token_ids)?;
        if self.matcher.validate_tokens(&self.tokenizer.vocab, &ids) < ids.len() {
            return Ok(false);
        }
        for t in ids {
            // validate_tokens just accepted every one of them from this state.
            self.matcher.commit(&self.tokenizer.vocab, t).map_err(err)?;
        }
        Ok(true)
    }

    /// How many of `token_ids` would be accepted in order (the longest accepted
    /// prefix), without changing the matcher.
    fn validate_tokens(&self, token_ids: Vec<u32>) -> PyResult<usize> {
        let ids = self.ids(&token_ids)?;
        Ok(self.matcher.validate_tokens(&self.tokenizer.vocab, &ids))
    }

    /// Undoes the last `num_tokens` accepted tokens (any number up to all of them).
    #[pyo3(signature = (num_tokens=1))]
    fn rollback(&mut self, num_tokens: usize) -> PyResult<()> {
        self.matcher.rollback(num_tokens).map_err(err)
    }

    /// Back to the start of the document.
    fn reset(&mut self) {
        self.matcher.reset();
    }

    /// Whether an end-of-sequence token was accepted.
    fn is_terminated(&self) -> bool {
        self.matcher.is_terminated()
    }

    /// Whether the document may end here (an EOS token would be accepted).
    fn is_accepting(&self) -> bool {
        self.matcher.is_accepting()
    }

    /// Whether no token at all (EOS included) is allowed: the sequence cannot go on or
    /// end (a viable prefix without completion); end it rather than sample. Costs a mask.
    fn is_rejected(&self) -> bool {
        self.matcher.is_rejected()
    }

    /// Tokens accepted and not rolled back.
    #[getter]
    fn num_accepted_tokens(&self) -> usize {
        self.matcher.num_steps()
    }

    /// Writes the allowed next tokens into row `index` of `bitmask` (int32, shape
    /// `[batch, ceil(vocab_size/32)]`, C-contiguous), in place, with the GIL released.
    /// Bit `t % 32` of word `t / 32` is token `t`; padding bits are cleared.
    #[pyo3(signature = (bitmask, index=0))]
    fn fill_next_token_bitmask(
        &self,
        py: Python<'_>,
        bitmask: &Bitmask<'_>,
        index: usize,
    ) -> PyResult<()> {
        let need = self.tokenizer.vocab.len().div_ceil(32);
        // SAFETY: the row below is the only slice made of the bitmask's data.
        let (all, rows, words) = unsafe { rows_of(bitmask, need)? };
        if index >= rows {
            return Err(err(format!(
                "index {index} out of range for a bitmask of {rows} rows"
            )));
        }
        let row = &mut all[index * words..(index + 1) * words];
        let m = &self.matcher;
        py.detach(move || m.fill_mask(row)).map_err(err)
    }

    /// Tokens the grammar forces next, as the tokenizer itself would produce them (the
    /// canonical encoding of the forced text without its last token); empty when the next
    /// token is a real choice. Does not change the matcher.
    #[pyo3(signature = (max_bytes=runtime::MAX_FORCED_BYTES))]
    fn find_forced_tokens(&self, py: Python<'_>, max_bytes: usize) -> Vec<u32> {
        let (m, vocab) = (&self.matcher, &self.tokenizer.vocab);
        py.detach(|| m.forced_tokens(vocab, max_bytes))
            .into_iter()
            .map(|t| t.as_u32())
            .collect()
    }

    /// The text the grammar forces next (whole characters only); empty when none.
    #[pyo3(signature = (max_bytes=runtime::MAX_FORCED_BYTES))]
    fn find_jump_forward_string(&self, py: Python<'_>, max_bytes: usize) -> String {
        let m = &self.matcher;
        let bytes = py.detach(|| m.forced_bytes(max_bytes));
        match std::str::from_utf8(&bytes) {
            Ok(s) => s.to_string(),
            Err(e) => String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "GrammarMatcher(accepted={}, terminated={})",
            self.matcher.num_steps(),
            self.matcher.is_terminated()
        )
    }
}

impl GrammarMatcher {
    fn check_id(&self, t: u32) -> PyResult<()> {
        if (t as usize) < self.tokenizer.vocab.len() {
            Ok(())
        } else {
            Err(err(format!(
                "token id {t} is out of range (vocabulary has {} ids)",
                self.tokenizer.vocab.len()
            )))
        }
    }

    fn ids(&self, ts: &[u32]) -> PyResult<Vec<TokenId>> {
        ts.iter()
            .map(|&t| self.check_id(t).map(|()| TokenId::from_u32(t)))
            .collect()
    }
}

/// Fills row `i` of `bitmask` for `matchers[i]`, all rows in parallel (rayon) with the
/// GIL released. `bitmask` needs at least `len(matchers)` rows.
#[pyfunction]
fn fill_next_token_bitmask_batch(
    py: Python<'_>,
    matchers: Vec<PyRef<'_, GrammarMatcher>>,
    bitmask: &Bitmask<'_>,
) -> PyResult<()> {
    let need = matchers
        .iter()
        .map(|m| m.tokenizer.vocab.len().div_ceil(32))
        .max()
        .unwrap_or(0);
    // SAFETY: `fill_masks` splits this one slice into the rows it writes.
    let (all, rows, words) = unsafe { rows_of(bitmask, need)? };
    if rows < matchers.len() {
        return Err(err(format!(
            "bitmask has {rows} rows for {} matchers",
            matchers.len()
        )));
    }
    let refs: Vec<&Matcher> = matchers.iter().map(|m| &m.matcher).collect();
    py.detach(|| runtime::fill_masks(&refs, all, words))
        .map_err(err)
}

/// Commits `token_ids[i]` to `matchers[i]` for every `i`, with the GIL released once for
/// the batch; returns whether each was accepted (a refused token changes nothing, as
/// `accept_token`). Ids are checked before any commit: an unknown id or a length
/// mismatch raises and commits nothing. A matcher may appear once.
#[pyfunction]
fn accept_token_batch(
    py: Python<'_>,
    mut matchers: Vec<PyRefMut<'_, GrammarMatcher>>,
    token_ids: Vec<u32>,
) -> PyResult<Vec<bool>> {
    if matchers.len() != token_ids.len() {
        return Err(err(format!(
            "{} matchers for {} token ids",
            matchers.len(),
            token_ids.len()
        )));
    }
    for (m, &t) in matchers.iter().zip(&token_ids) {
        m.check_id(t)?;
    }
    let mut ms: Vec<&mut GrammarMatcher> = matchers.iter_mut().map(|m| &mut **m).collect();
    // On the caller's thread: spread over the pool, commits measured slower.
    Ok(py.detach(move || {
        ms.iter_mut()
            .zip(&token_ids)
            .map(|(m, &t)| {
                m.matcher
                    .commit(&m.tokenizer.vocab, TokenId::from_u32(t))
                    .is_ok()
            })
            .collect()
    }))
}

/// Replays `token_ids` through a fresh matcher of `compiled` in Rust alone, timing each
/// mask and commit, in ns: the engine's own cost on the states a Python replay of the
/// same tokens goes through, so a benchmark can tell the binding's cost apart. Stops at
/// the first token the grammar refuses (raises).
#[pyfunction]
fn _replay_timings(
    py: Python<'_>,
    compiled: &CompiledGrammar,
    token_ids: Vec<u32>,
) -> PyResult<Vec<(u64, u64)>> {
    let vocab = &compiled.tokenizer.vocab;
    let mut m = compiled.inner.matcher();
    let mut row = vec![0u32; vocab.len().div_ceil(32)];
    py.detach(|| {
        let mut out = Vec::with_capacity(token_ids.len());
        for &t in &token_ids {
            if t as usize >= vocab.len() {
                return Err(err(format!("token id {t} is out of range")));
            }
            let a = std::time::Instant::now();
            m.fill_mask(&mut row).map_err(err)?;
            let b = std::time::Instant::now();
            m.commit(vocab, TokenId::from_u32(t)).map_err(err)?;
            let c = std::time::Instant::now();
            out.push(((b - a).as_nanos() as u64, (c - b).as_nanos() as u64));
        }
        Ok(out)
    })
}

/// A type check with a clear message for callers passing the wrong object.
#[pyfunction]
fn _check_bitmask(bitmask: &Bound<'_, PyAny>) -> PyResult<()> {
    if bitmask.cast::<PyArray2<i32>>().is_err() {
        return Err(PyTypeError::new_err(
            "bitmask must be a 2-D numpy int32 array (see allocate_token_bitmask)",
        ));
    }
    Ok(())
}

/// The limits that only stop a compile: a time limit and a cancellation token.
fn stops(time_limit_ms: Option<u64>, cancel: Option<PyRef<'_, CompileCancel>>) -> Limits {
    Limits {
        time_limit_ms,
        cancel: cancel.map(|c| c.flag.clone()),
        ..Limits::default()
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // SAFETY: at import, before this extension has started any thread of its own.
    unsafe { stackmask::allocator::tune_for_compiles() };
    m.add_class::<TokenizerInfo>()?;
    m.add_class::<GrammarCompiler>()?;
    m.add_class::<CompileCancel>()?;
    m.add_class::<CompiledGrammar>()?;
    m.add_class::<GrammarMatcher>()?;
    m.add_function(wrap_pyfunction!(fill_next_token_bitmask_batch, m)?)?;
    m.add_function(wrap_pyfunction!(accept_token_batch, m)?)?;
    m.add_function(wrap_pyfunction!(_check_bitmask, m)?)?;
    m.add_function(wrap_pyfunction!(_replay_timings, m)?)?;
    m.add("StackmaskError", m.py().get_type::<StackmaskError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

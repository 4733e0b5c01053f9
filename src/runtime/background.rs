//! A grammar whose mask automaton is still being built: the recognizer tables are ready,
//! and until the automaton is, masks come from the recognizer's vocabulary walk
//! ([`crate::glr::walk::VocabWalk`]), exact and slower (hundreds of µs a mask with a
//! 128K vocabulary, against a few µs).
//!
//! A server that compiles a new grammar for a request (a tool call's schema) can then
//! serve its first masks right after the tables are built, while the automaton is built
//! on another thread (`compile::Compiler::compile_in_background`); each matcher reads the
//! automaton from the first mask after it is there. The automaton crosses over whole and
//! frozen: a [`GrammarBuild`] holds either nothing or the finished [`CompiledGrammar`],
//! never a part of one. If the build fails (a limit, a time limit, cancellation), the
//! matchers keep walking the vocabulary: masks stay exact, at the walk's cost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::start_mask::StartMask;
use super::CompiledGrammar;
use crate::glr::walk::VocabWalk;
use crate::glr::{GlrState, Tables};
use crate::vocab::Vocab;

/// Why a background build left no automaton (its matchers keep walking the vocabulary).
pub type BuildError = crate::compile::GrammarError;

/// A grammar's recognizer tables with its mask automaton on the way (see the module
/// docs). Cheap to clone; clones share the build. When the last clone and the last
/// matcher made from it are dropped, the build is cancelled.
#[derive(Clone)]
pub struct GrammarBuild(pub(super) Arc<Handle>);

/// Keeps a build wanted: dropping the last one cancels it.
pub(super) struct Handle {
    pub(super) shared: Arc<Shared>,
}

/// What a build's handles and its builder share.
pub(super) struct Shared {
    pub(super) tables: Arc<Tables>,
    pub(super) vocab: Arc<Vocab>,
    pub(super) walk: VocabWalk,
    /// The first mask of a document, walked when the build starts.
    pub(super) start: StartMask,
    /// The finished grammar, or why there is none; set once.
    done: OnceLock<Result<CompiledGrammar, BuildError>>,
    /// Set once `done` is, for waiters.
    finished: (Mutex<bool>, Condvar),
    /// Set when no one wants the result any more; the builder stops on it.
    cancel: Arc<AtomicBool>,
}

/// The builder's end of a [`GrammarBuild`]: hands over the result once.
pub struct BuildCompleter {
    shared: Arc<Shared>,
}

impl GrammarBuild {
    /// A build over `tables` for `vocab` whose result `BuildCompleter::complete` hands
    /// over (on another thread, or later on this one). `cancel` is set when every handle
    /// and matcher is gone: the builder should stop on it. Walks for the first mask.
    pub fn pending(
        tables: Arc<Tables>,
        vocab: Arc<Vocab>,
        cancel: Arc<AtomicBool>,
    ) -> (Self, BuildCompleter) {
        let walk = VocabWalk::new(tables.clone());
        let start = StartMask::default();
        start.get_or_fill_with(|| {
            walk.mask(&GlrState::new(tables.clone()), &vocab)
                .into_boxed_slice()
        });
        let shared = Arc::new(Shared {
            tables,
            vocab,
            walk,
            start,
            done: OnceLock::new(),
            finished: (Mutex::new(false), Condvar::new()),
            cancel,
        });
        (
            Self(Arc::new(Handle {
                shared: shared.clone(),
            })),
            BuildCompleter { shared },
        )
    }

    /// The recognizer tables.
    pub fn tables(&self) -> &Arc<Tables> {
        &self.0.shared.tables
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Arc<Vocab> {
        &self.0.shared.vocab
    }

    /// The compiled grammar, once the automaton is built.
    pub fn compiled(&self) -> Option<&CompiledGrammar> {
        self.0.shared.compiled()
    }

    /// Whether the build has ended, with an automaton or without.
    pub fn is_finished(&self) -> bool {
        self.0.shared.done.get().is_some()
    }

    /// Waits for the build to end: the compiled grammar, or why there is none.
    pub fn wait(&self) -> Result<&CompiledGrammar, &BuildError> {
        let (lock, cv) = &self.0.shared.finished;
        // A poisoned lock only means a waiter panicked; the flag is still sound.
        let mut done = lock.lock().unwrap_or_else(|e| e.into_inner());
        while !*done {
            done = cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
        drop(done);
        // `finished` is set only after `done`.
        self.0
            .shared
            .done
            .get()
            .expect("set before finished")
            .as_ref()
    }

    /// Asks the builder to stop (its matchers keep walking the vocabulary).
    pub fn cancel(&self) {
        self.0.shared.cancel.store(true, Ordering::Relaxed);
    }
}

impl Shared {
    pub(super) fn compiled(&self) -> Option<&CompiledGrammar> {
        self.done.get().and_then(|r| r.as_ref().ok())
    }
}

impl BuildCompleter {
    /// Hands over the build's result (only the first call counts) and wakes waiters.
    pub fn complete(self, result: Result<CompiledGrammar, BuildError>) {
        let _ = self.shared.done.set(result);
        let (lock, cv) = &self.shared.finished;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.cancel.store(true, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for GrammarBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.0.shared.done.get() {
            None => "building",
            Some(Ok(_)) => "built",
            Some(Err(_)) => "failed",
        };
        write!(f, "GrammarBuild({state})")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::GrammarBuild;
    use crate::compile::{Compiler, GrammarError, GrammarFormat};
    use crate::runtime::{CompiledGrammar, Matcher};
    use crate::test_support::shared_dir;
    use crate::vocab::Vocab;

    const SCHEMA: &str = r#"{"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"enum": ["a", "bb"]}},
        "n": {"type": "number"}}, "required": ["name"]}"#;
    const DOC: &str = r#"{"name": "héllo wörld", "tags": ["bb", "a"], "n": -1.5e3}"#;

    fn gpt2() -> Arc<Vocab> {
        let path = shared_dir().join("tokenizers/gpt2.json");
        Arc::new(Vocab::load(path.to_str().unwrap()).unwrap())
    }

    /// A matcher on a build masks as a matcher on the eagerly compiled grammar at every
    /// step: by the vocabulary walk while the build is pending, by the automaton from the
    /// step it is handed over (half way here); rolled back to the start, and in a matcher
    /// made after the hand-over, likewise. A build that fails leaves masks as exact.
    #[test]
    fn masks_equal_the_eager_grammars_before_and_after_the_automaton_arrives() {
        let vocab = gpt2();
        let compiler = Compiler::new(&vocab);
        let g = compiler.grammar(SCHEMA, GrammarFormat::JsonSchema).unwrap();
        let eager = compiler.compile_ir(&g).unwrap();
        let tokens = vocab.encode(DOC).unwrap();
        let words = vocab.len().div_ceil(32);
        for fail in [false, true] {
            let (build, done) = GrammarBuild::pending(
                eager.tables.clone(),
                vocab.clone(),
                Arc::new(AtomicBool::new(false)),
            );
            let mut done = Some(done);
            let mut a = Matcher::from_compiled(&eager);
            let mut b = Matcher::from_build(&build);
            let (mut wa, mut wb) = (vec![0u32; words], vec![0u32; words + 3]);
            for (i, &t) in tokens.iter().enumerate() {
                if i == tokens.len() / 2 {
                    let result = if fail {
                        Err(GrammarError::Cancelled)
                    } else {
                        let dwa = Arc::new(compiler.automaton(&eager.tables).unwrap());
                        Ok(CompiledGrammar::new(eager.tables.clone(), dwa, &vocab))
                    };
                    done.take().unwrap().complete(result);
                }
                assert_eq!(
                    b.dwa().is_some(),
                    !fail && i >= tokens.len() / 2,
                    "step {i}"
                );
                a.fill_mask(&mut wa).unwrap();
                b.fill_mask(&mut wb).unwrap();
                assert_eq!(wa[..], wb[..words], "step {i}");
                assert!(wb[words..].iter().all(|&w| w == 0), "padding, step {i}");
                a.commit(&vocab, t).unwrap();
                b.commit(&vocab, t).unwrap();
            }
            assert!(build.is_finished());
            assert_eq!(build.wait().is_ok(), !fail);
            assert!(b.is_accepting());
            let later = Matcher::from_build(&build);
            b.reset();
            for m in [&b, &later] {
                m.fill_mask(&mut wb).unwrap();
                Matcher::from_compiled(&eager).fill_mask(&mut wa).unwrap();
                assert_eq!(wa[..], wb[..words]);
            }
        }
    }

    /// The build is cancelled once no handle and no matcher wants it, and not before.
    #[test]
    fn the_last_handle_dropped_cancels_the_build() {
        let vocab = gpt2();
        let compiler = Compiler::new(&vocab);
        let g = compiler.grammar(SCHEMA, GrammarFormat::JsonSchema).unwrap();
        let tables = Arc::new(compiler.tables(&g).unwrap());
        let flag = Arc::new(AtomicBool::new(false));
        let (build, _done) = GrammarBuild::pending(tables, vocab.clone(), flag.clone());
        let copy = build.clone();
        let m = Matcher::from_build(&build);
        drop(build);
        drop(copy);
        assert!(!flag.load(Ordering::Relaxed), "a matcher still wants it");
        drop(m);
        assert!(flag.load(Ordering::Relaxed));
    }

    /// `compile_in_background` builds the automaton on another thread (a matcher reads it
    /// once `wait` returns), and refuses a vocabulary other than its compiler's.
    #[test]
    fn a_background_compile_hands_over_its_automaton() {
        let vocab = gpt2();
        let compiler = Compiler::new(&vocab);
        let build = compiler
            .compile_in_background(&vocab, SCHEMA, GrammarFormat::JsonSchema)
            .unwrap();
        let m = Matcher::from_build(&build);
        let eager = compiler.compile(SCHEMA, GrammarFormat::JsonSchema).unwrap();
        let built = build.wait().unwrap();
        assert_eq!(built.dwa, eager.dwa);
        assert!(m.dwa().is_some());
        let other = gpt2();
        let err = compiler
            .compile_in_background(&other, SCHEMA, GrammarFormat::JsonSchema)
            .unwrap_err();
        assert!(err.to_string().contains("another vocabulary"), "{err}");
    }
}

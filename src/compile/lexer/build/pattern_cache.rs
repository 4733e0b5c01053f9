//! Pattern DFAs kept across compiles in one process.
//!
//! A JSON string body, a number, whitespace and the `format` patterns recur in nearly
//! every JSON Schema a server compiles, and each compile determinized them again (a third
//! of a millisecond for a string body alone, on every schema). A pattern's DFA depends on
//! its text alone, so one built for any terminal of any grammar serves every later one.
//! Only successes are kept: a pattern that fails is built again, so that its error names
//! the terminal at hand.
//!
//! Bounded: past [`PATTERN_CACHE_BYTES`] of DFAs (and their patterns' text) the cache is
//! emptied and fills again from the next compile's patterns; a DFA larger than a quarter
//! of the bound is never kept.

use std::sync::{Arc, Mutex, OnceLock};

use hashbrown::HashMap;

use super::terminal::regex_dfa;
use super::TermDfa;
use crate::compile::error::GrammarError;
use crate::compile::grammar::ir::Terminal;

/// Most bytes the process-wide pattern cache holds before it is emptied.
pub(super) const PATTERN_CACHE_BYTES: usize = 32 << 20;

/// Pattern text → its DFA, one map per kind of check passed (`[pattern of an `also` or
/// `except`, a terminal's main pattern]`: a main pattern must not match the empty word).
pub(super) struct PatternCache {
    limit: usize,
    state: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    maps: [HashMap<Box<str>, Arc<TermDfa>>; 2],
    bytes: usize,
}

impl PatternCache {
    /// An empty cache holding at most `limit` bytes.
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit,
            state: Mutex::default(),
        }
    }

    /// The process's cache.
    pub(super) fn global() -> &'static Self {
        static CACHE: OnceLock<PatternCache> = OnceLock::new();
        CACHE.get_or_init(|| Self::new(PATTERN_CACHE_BYTES))
    }

    /// [`regex_dfa`]`(t, regex, main)`, from the cache when a compile built it before.
    /// Two threads missing on one pattern at once both build it (the same DFA).
    pub(super) fn dfa(
        &self,
        t: &Terminal,
        regex: &str,
        main: bool,
    ) -> Result<Arc<TermDfa>, GrammarError> {
        if let Some(d) = self.held().maps[main as usize].get(regex) {
            return Ok(d.clone());
        }
        let d = Arc::new(regex_dfa(t, regex, main)?);
        let bytes = size_of(regex, &d);
        if bytes <= self.limit / 4 {
            let mut held = self.held();
            if held.bytes + bytes > self.limit {
                *held = Held::default();
            }
            if held.maps[main as usize]
                .insert(regex.into(), d.clone())
                .is_none()
            {
                held.bytes += bytes;
            }
        }
        Ok(d)
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.held().bytes
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        // A poisoned lock only means a thread panicked elsewhere holding it; every entry is
        // whole (an entry is inserted in one step).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What one entry costs the cache: its DFA's tables and its pattern's text.
fn size_of(regex: &str, d: &TermDfa) -> usize {
    regex.len() + 256 + d.trans.len() * 4 + d.complete.len() + std::mem::size_of::<TermDfa>()
}

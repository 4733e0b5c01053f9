//! Memo of class → token expansions: the token words a start position's decided classes
//! expand to, by (class table, decided classes), shared by every sequence of one
//! automaton.
//!
//! A large vocabulary's mask row is thousands of words, and a position's decided classes
//! expand by OR-ing one word list per class (thousands of short lists at a statement
//! boundary of a language grammar); the same class sets recur from token to token, so a
//! set's row is kept the first time it is met and copied after (a set met once costs
//! one row copy). Only wide sets go through it. Exact: a row is a function of its key. Bounded: past [`MAX_BYTES`] the memo is
//! emptied and fills again.

use std::sync::RwLock;

use hashbrown::HashMap;

use super::automaton::ClassTokens;
use super::word_pool::WordPool;

/// Memory the rows and keys may hold, in bytes (about 900 rows of a 128K vocabulary).
pub const MAX_BYTES: usize = 16 << 20;
/// Rows shorter than this many words are expanded each time: copying would not pay.
const MIN_ROW_WORDS: usize = 1024;
/// Decided sets of fewer classes are expanded each time (JSON Schema positions mostly
/// decide a handful, cheaper to expand than a row is to copy). Merged classes
/// (`class_blocks`) hold many tokens each: a Go statement boundary's 60-odd classes
/// cost a 128K vocabulary more to expand than to copy.
const MIN_CLASSES: u32 = 32;

type Key = (u32, u32, Box<[u64]>);

/// The memo (see the module docs); starts empty, and is never part of an artifact.
#[derive(Debug, Default)]
pub struct Expansions {
    rows: RwLock<Rows>,
}

#[derive(Debug, Default)]
struct Rows {
    /// Rows by key.
    rows: HashMap<Key, Box<[u32]>>,
    /// Bytes of rows and keys held.
    bytes: usize,
}

impl Clone for Expansions {
    /// An empty memo: rows are remade on demand.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for Expansions {
    /// Memos never tell two automata apart.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Expansions {
    /// Rows held (for tests and benchmarks).
    pub fn rows(&self) -> usize {
        self.rows
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .rows
            .len()
    }

    /// [`ClassTokens::expand`] of `classes` (class-space words from `first_word`) for
    /// table `table_id`, through the memo.
    #[allow(clippy::too_many_arguments)]
    pub fn expand(
        &self,
        table_id: u32,
        table: &ClassTokens,
        pool: &WordPool,
        classes: &[u64],
        first_word: usize,
        out: &mut [u32],
        fresh: &mut bool,
    ) {
        if out.len() < MIN_ROW_WORDS
            || classes.iter().map(|w| w.count_ones()).sum::<u32>() < MIN_CLASSES
        {
            table.expand(pool, classes, first_word, out, fresh);
            return;
        }
        let key: Key = (table_id, first_word as u32, classes.into());
        {
            // A poisoned lock only means a thread panicked mid-insert; the map is still whole.
            let rows = self.rows.read().unwrap_or_else(|e| e.into_inner());
            if let Some(row) = rows.rows.get(&key) {
                apply(row, out, fresh);
                return;
            }
        }
        let row: Box<[u32]> = if *fresh {
            // Expanded in place, then kept: the copy is the only cost of remembering it.
            table.expand(pool, classes, first_word, out, fresh);
            if *fresh {
                Box::default()
            } else {
                out.into()
            }
        } else {
            let mut row = vec![0u32; out.len()].into_boxed_slice();
            let mut row_fresh = false;
            table.expand(pool, classes, first_word, &mut row, &mut row_fresh);
            apply(&row, out, fresh);
            row
        };
        // No class of this table: kept as the empty row, which leaves `out` alone.
        let row = if row.iter().all(|&w| w == 0) {
            Box::default()
        } else {
            row
        };
        let bytes = row.len() * 4 + key.2.len() * 8;
        let mut rows = self.rows.write().unwrap_or_else(|e| e.into_inner());
        if rows.bytes + bytes > MAX_BYTES {
            *rows = Rows::default();
        }
        if rows.rows.insert(key, row).is_none() {
            rows.bytes += bytes;
        }
    }
}

/// Writes (`fresh`: `out` holds nothing yet) or ORs a row into `out`; the empty row
/// (no token) leaves `out` and `fresh` as they were, as [`ClassTokens::expand`] does.
/// A row is as long as the buffer it was made in, and buffers differ (a batch's rows are
/// padded to the model's vocabulary): words past the vocabulary are zero in every row,
/// so only the shorter length is copied, and a longer `out` is zeroed past it.
fn apply(row: &[u32], out: &mut [u32], fresh: &mut bool) {
    if row.is_empty() {
        return;
    }
    if *fresh {
        let n = row.len().min(out.len());
        out[..n].copy_from_slice(&row[..n]);
        out[n..].fill(0);
        *fresh = false;
    } else {
        for (o, &r) in out.iter_mut().zip(row) {
            *o |= r;
        }
    }
}

//! Stopping a compile early: a cancellation flag another thread may set, and a time
//! limit counted from the compile's start. Every pass checks it between steps: the JSON
//! Schema lowering at each schema node, every 1,024 rule bodies and every 4,096
//! productions pruned; the lexer's subset construction and the LR build every 1,024
//! states (FIRST sets every 4,096 propagations); the automaton between its phases,
//! chunks of start positions and of starts, and each wave of states. A stopped compile
//! returns [`GrammarError::Cancelled`] or [`GrammarError::TimeLimit`] within the longest
//! step: tens of milliseconds on large schemas, a few hundred on the very largest.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::compile::error::GrammarError;

/// When a compile must stop; the default never stops it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Interrupt {
    cancel: Option<Arc<AtomicBool>>,
    /// A second flag (a background build's: every handle dropped).
    also: Option<Arc<AtomicBool>>,
    /// The deadline, and the limit it was made from (for the error).
    deadline: Option<(Instant, Duration)>,
}

impl Interrupt {
    /// Stops when `cancel` is set, or once `limit` has passed from now.
    pub(crate) fn new(cancel: Option<Arc<AtomicBool>>, limit: Option<Duration>) -> Self {
        Self {
            cancel,
            also: None,
            deadline: limit.map(|l| (Instant::now() + l, l)),
        }
    }

    /// This interrupt, stopping also when `flag` is set.
    pub(crate) fn or_when(mut self, flag: Arc<AtomicBool>) -> Self {
        self.also = Some(flag);
        self
    }

    /// `Err` once the compile must stop. Costs an atomic load and a clock read.
    pub(crate) fn check(&self) -> Result<(), GrammarError> {
        if self
            .cancel
            .iter()
            .chain(&self.also)
            .any(|c| c.load(Ordering::Relaxed))
        {
            return Err(GrammarError::Cancelled);
        }
        match self.deadline {
            Some((at, limit)) if Instant::now() >= at => Err(GrammarError::TimeLimit {
                limit_ms: limit.as_millis() as u64,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_on_the_flag_and_at_the_deadline_only() {
        let flag = Arc::new(AtomicBool::new(false));
        let i = Interrupt::new(Some(flag.clone()), None);
        assert!(i.check().is_ok());
        flag.store(true, Ordering::Relaxed);
        assert!(matches!(i.check(), Err(GrammarError::Cancelled)));
        let other = Arc::new(AtomicBool::new(false));
        let both = Interrupt::new(None, None).or_when(other.clone());
        assert!(both.check().is_ok());
        other.store(true, Ordering::Relaxed);
        assert!(matches!(both.check(), Err(GrammarError::Cancelled)));
        let past = Interrupt::new(None, Some(Duration::ZERO));
        assert!(matches!(
            past.check(),
            Err(GrammarError::TimeLimit { limit_ms: 0 })
        ));
        assert!(Interrupt::default().check().is_ok());
        assert!(Interrupt::new(None, Some(Duration::from_secs(3600)))
            .check()
            .is_ok());
    }
}

//! Writing reports to standard output, where a reader that has seen enough (`… | head`)
//! ends the report quietly instead of failing it. Depends on nothing in the engine.

/// Why a report stopped: an error to show, or a reader that closed standard output.
pub enum Stop {
    Failed(String),
    Closed,
}

impl From<String> for Stop {
    fn from(m: String) -> Self {
        Stop::Failed(m)
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Stop::Closed
        } else {
            Stop::Failed(format!("cannot write to standard output: {e}"))
        }
    }
}

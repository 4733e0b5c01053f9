//! Helpers for the crate's unit tests.

use std::path::PathBuf;

/// The shared corpus (`../shared` beside the checkout, or `$STACKMASK_SHARED`). Tests that
/// need it fail loudly when it is missing: CI always has it.
pub fn shared_dir() -> PathBuf {
    let p = std::env::var_os("STACKMASK_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    assert!(
        p.join("tokenizers").is_dir(),
        "shared corpus not found at {} (set STACKMASK_SHARED)",
        p.display()
    );
    p
}

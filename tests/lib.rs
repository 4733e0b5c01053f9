//! The integration test binary: one suite, driven by the data in `tests/data/`.

mod suite;

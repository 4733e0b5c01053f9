//! Tuning of mimalloc, the allocator the `stackmask` binary and the Python extension
//! install (the library itself never sets a global allocator). Depends on nothing else.

/// mimalloc's `mi_option_purge_decommits`: its position in `mi_option_e` of the bundled
/// mimalloc 3, which the Rust bindings do not export (checked against the library's
/// defaults by `tests::option_ids_match_the_linked_mimalloc`).
const MI_OPTION_PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;

/// mimalloc's `mi_option_purge_delay` (ms), ten places after `purge_decommits`.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = MI_OPTION_PURGE_DECOMMITS + 10;

/// How long freed memory stays mapped before mimalloc gives it back to the OS, ms: the
/// same as jemalloc's default `dirty_decay_ms`.
///
/// mimalloc's own default (1 s) is shorter than a run of compiles: memory one compile
/// freed was purged during the next few, which faulted it back in, a 2 MiB huge page
/// zeroed at a time. On 45 Kubernetes-sized MaskBench schemas compiled back to back
/// (Llama-3), minor faults fell from 5.5–6.4K to 1.1–1.4K, system time from 0.9–1.8 s to
/// 0.7 s, and the summed compile time by 5–17%.
const PURGE_DELAY_MS: std::os::raw::c_long = 10_000;

/// Tunes mimalloc for a process that compiles grammars: purged memory is reset
/// (`MADV_FREE`) instead of decommitted, and only after [`PURGE_DELAY_MS`] unused. An
/// option set in the environment (`MIMALLOC_PURGE_DECOMMITS`, `MIMALLOC_PURGE_DELAY`)
/// is left as given.
///
/// A schema compile frees hundreds of MB of build-time blocks; with decommit, the next
/// compile faulted every page back in (transparent huge pages are zeroed 2 MiB at a
/// time), a fifth or more of a compile's CPU time spent in the kernel. Reset pages stay
/// mapped until the OS needs the memory, so the process still gives it back under
/// pressure, and an idle process gives it back after the delay.
///
/// # Safety
/// mimalloc's option setters are not thread safe: call this before any other thread
/// allocates (first thing in `main`, or when an extension module is imported).
pub unsafe fn tune_for_compiles() {
    // `set_default` changes only options the environment did not give (mimalloc reads
    // them at process load), where `set` would override those too.
    // SAFETY (both calls): the caller guarantees no concurrent allocation.
    unsafe {
        libmimalloc_sys::mi_option_set_default(MI_OPTION_PURGE_DECOMMITS, 0);
        libmimalloc_sys::mi_option_set_default(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
    }
}

#[cfg(test)]
mod tests {
    use super::{MI_OPTION_PURGE_DECOMMITS, MI_OPTION_PURGE_DELAY};

    /// The ids are positions in a C enum: a different mimalloc would silently set other
    /// options. Their documented defaults pin them: `purge_decommits` = 1, and
    /// `purge_delay` = 1000 ms.
    #[test]
    fn option_ids_match_the_linked_mimalloc() {
        if std::env::vars().any(|(k, _)| k.starts_with("MIMALLOC_")) {
            return; // Defaults overridden from the environment: nothing to compare.
        }
        // SAFETY: reads only.
        let got = unsafe {
            (
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DECOMMITS),
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY),
            )
        };
        assert_eq!(got, (1, 1000));
    }
}

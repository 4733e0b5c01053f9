//! Tuning of mimalloc, the allocator the `stackmask` binary and the Python extension
//! install (the library itself never sets a global allocator). Depends on nothing else.

/// mimalloc's `mi_option_purge_decommits`: its position in `mi_option_e` of the bundled
/// mimalloc 3, which the Rust bindings do not export (checked against the library's
/// defaults by `tests::option_ids_match_the_linked_mimalloc`).
const MI_OPTION_PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;

/// Makes mimalloc reset purged memory (`MADV_FREE`) instead of decommitting it.
///
/// A schema compile frees hundreds of MB of build-time blocks; with decommit, the next
/// compile faulted every page back in (transparent huge pages are zeroed 2 MiB at a
/// time), a fifth or more of a compile's CPU time spent in the kernel. Reset pages stay
/// mapped until the OS needs the memory, so the process still gives it back under pressure.
///
/// # Safety
/// mimalloc's option setters are not thread safe: call this before any other thread
/// allocates (first thing in `main`, or when an extension module is imported).
pub unsafe fn keep_purged_pages_mapped() {
    // SAFETY: the caller guarantees no concurrent allocation.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DECOMMITS, 0) };
}

#[cfg(test)]
mod tests {
    use super::MI_OPTION_PURGE_DECOMMITS;

    /// The id is a position in a C enum: a different mimalloc would silently set another
    /// option. Its documented defaults pin it: `purge_decommits` = 1, and `purge_delay`,
    /// ten places later, = 1000 ms.
    #[test]
    fn option_ids_match_the_linked_mimalloc() {
        if std::env::vars().any(|(k, _)| k.starts_with("MIMALLOC_")) {
            return; // Defaults overridden from the environment: nothing to compare.
        }
        // SAFETY: reads only.
        let got = unsafe {
            (
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DECOMMITS),
                libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DECOMMITS + 10),
            )
        };
        assert_eq!(got, (1, 1000));
    }
}

//! mimalloc as the `stackmask` binary and the Python extension install it ([`Allocator`]),
//! and its tuning (the library itself never sets a global allocator). Depends on nothing else.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// Largest alignment every mimalloc block has, whatever its size (`MI_INTPTR_SIZE`).
const BLOCK_ALIGN: usize = 8;

/// Alignment of every mimalloc block of at least this many bytes (`MI_MAX_ALIGN_SIZE`).
const LARGE_BLOCK_ALIGN: usize = 16;

/// mimalloc as a global allocator, asking for an alignment only when a block's own
/// alignment would not do.
///
/// The `mimalloc` crate's allocator sends every request through `mi_malloc_aligned`, whose
/// checks cost ~20 instructions more than `mi_malloc`'s fast path; a large schema's
/// compile allocates millions of times, so plain calls save ~2% of its instructions.
/// Blocks are 8-byte aligned always and 16-byte aligned from 16 bytes up (mimalloc's own
/// invariant, asserted in its `alloc.c`), so a layout within that takes the plain calls.
pub struct Allocator;

impl Allocator {
    /// Whether a plain mimalloc block is aligned enough for `layout`.
    #[inline]
    fn plain(layout: &Layout) -> bool {
        layout.align() <= BLOCK_ALIGN
            || (layout.align() <= LARGE_BLOCK_ALIGN && layout.size() >= LARGE_BLOCK_ALIGN)
    }
}

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes blocks of
// either kind); alignment is as `Allocator::plain` states, else mimalloc's aligned calls.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY (each call below): plain calls only where a block's own alignment suffices.
        unsafe {
            if Self::plain(&layout) {
                libmimalloc_sys::mi_malloc(layout.size()) as *mut u8
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if Self::plain(&layout) {
                libmimalloc_sys::mi_zalloc(layout.size()) as *mut u8
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { libmimalloc_sys::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align(new_size, layout.align());
        unsafe {
            if new.is_ok_and(|l| Self::plain(&l)) {
                libmimalloc_sys::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align())
                    as *mut u8
            }
        }
    }
}

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
/// freed would be purged during the next few, which fault it back in, a 2 MiB huge page
/// zeroed at a time (on large schemas compiled back to back, this delay cuts minor faults
/// about fivefold).
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
    use super::{Allocator, MI_OPTION_PURGE_DECOMMITS, MI_OPTION_PURGE_DELAY};
    use std::alloc::{GlobalAlloc, Layout};

    /// Every layout gets a block aligned as asked, plain or not, and a reallocation keeps
    /// the contents and the alignment, growing and shrinking: sizes around the 8- and
    /// 16-byte thresholds and past mimalloc's small and medium blocks, alignments 1 to 4096.
    #[test]
    fn blocks_are_aligned_as_asked() {
        let sizes = [
            1,
            7,
            8,
            9,
            15,
            16,
            17,
            24,
            48,
            100,
            1 << 10,
            70_000,
            1 << 20,
        ];
        let fill = |p: *mut u8, from: usize, to: usize| {
            // SAFETY: callers pass a live block of at least `to` bytes.
            (from..to).for_each(|i| unsafe { *p.add(i) = (i % 251) as u8 });
        };
        // SAFETY: callers pass a live block of at least `n` bytes.
        let holds =
            |p: *const u8, n: usize| (0..n).all(|i| unsafe { *p.add(i) } == (i % 251) as u8);
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for &size in &sizes {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; every block is used within its size and freed
                // once, with the layout it has then.
                unsafe {
                    let zeroed = Allocator.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0, "zeroed {size}, align {align}");
                    assert!((0..size).all(|i| *zeroed.add(i) == 0));
                    Allocator.dealloc(zeroed, layout);
                    for &to in &sizes {
                        let p = Allocator.alloc(layout);
                        assert_eq!(p as usize % align, 0, "{size}, align {align}");
                        fill(p, 0, size);
                        let q = Allocator.realloc(p, layout, to);
                        assert_eq!(q as usize % align, 0, "{size} → {to}, align {align}");
                        assert!(holds(q, size.min(to)));
                        fill(q, size.min(to), to);
                        let grown = Layout::from_size_align(to, align).unwrap();
                        let back = Allocator.realloc(q, grown, size);
                        assert_eq!(back as usize % align, 0, "{to} → {size}, align {align}");
                        assert!(holds(back, size.min(to)));
                        Allocator.dealloc(back, layout);
                    }
                }
            }
        }
    }

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

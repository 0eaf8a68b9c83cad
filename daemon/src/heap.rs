//! How the daemon uses glibc's heap: large buffers are reused while work
//! comes ([`keep_large_buffers`]), and freed memory goes back to the system
//! once it stops ([`trim`]).
//!
//! glibc's allocator keeps what a burst freed in its arenas (one per thread
//! that allocated, up to 8 per core) and returns it only when the top of an
//! arena is free. After a load burst, or deleting sessions, most of that
//! memory is free but scattered, so the daemon's resident size stays at
//! its peak. [`trim`] asks glibc to release every free page of every arena
//! (`malloc_trim(0)`, which `madvise`s free pages inside arenas too).
//!
//! It walks all arenas under their locks, so it runs off the async
//! workers, and only when the store has been quiet for a tick (see
//! `server::spawn_checkpoints`).

/// Heap arenas the daemon's threads share (glibc's default is 8 per core).
const ARENAS: i32 = 2;

/// Large buffers below this come from the heap, not a fresh `mmap`.
const MMAP_THRESHOLD: i32 = 32 * 1024 * 1024;
/// Free memory at the top of an arena is kept up to this much.
const TRIM_THRESHOLD: i32 = 64 * 1024 * 1024;

/// Makes the daemon's threads share [`ARENAS`] heap arenas.
///
/// By default glibc gives each thread that allocates an arena of its own,
/// up to 8 per core: on 2 cores, 14 for the daemon's threads. What a load
/// leaves live (a grown map, a runtime slab) is then scattered over all of
/// them, and each keeps the pages it sits on. With two, a 64-client load
/// left 25.9 MiB resident after its sessions were deleted against 29.0
/// MiB, with no measurable change in round trip, fan-out or throughput
/// (BENCHMARKS.md, session 13). A `glibc.malloc.arena_max` the user set in
/// `GLIBC_TUNABLES` wins. Call it before any thread starts.
pub fn share_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let tuned = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("malloc.arena_max"));
        if !tuned {
            #[allow(unsafe_code)]
            // SAFETY: mallopt only changes the allocator's tuning parameters.
            let _set = unsafe { libc::mallopt(libc::M_ARENA_MAX, ARENAS) };
        }
    }
}

/// Lets large transient buffers reuse freed heap memory.
///
/// A multi-megabyte tool result is built, serialized, stored and answered
/// through several buffers of its size. By default glibc maps each such
/// buffer fresh and unmaps it on free (or trims it off the arena's top), so
/// every call pays a page fault and a zeroed page per 4 KiB: a third of
/// the daemon's time for an 8 MB `read_many_files` (125 against 80 ms).
/// With these thresholds freed memory stays in the arenas for the next
/// call, and [`trim`] gives it back once the daemon is quiet.
///
/// Call it after startup: allocations made before it (sled's 512 KiB
/// statistics tables, mostly never written) stay separately mapped, where
/// untouched pages cost nothing.
pub fn keep_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        #[allow(unsafe_code)]
        // SAFETY: mallopt only changes the allocator's tuning parameters.
        let set = unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                & libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        };
        if set != 1 {
            tracing::warn!("could not tune the allocator; large results will be slower");
        }
    }
}

/// Returns free heap pages to the system; a no-op off glibc.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        #[allow(unsafe_code)]
        // SAFETY: malloc_trim only reads and releases the allocator's own
        // free lists under its locks; it takes no pointers from us.
        let _released = unsafe { libc::malloc_trim(0) };
    }
}

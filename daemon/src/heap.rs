//! Giving freed heap memory back to the system.
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

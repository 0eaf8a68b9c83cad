//! The sled database under the store: where it lives, how it opens (and
//! reopens after a crash during its creation), and the probe that tells
//! whether the data dir takes writes again.

use std::path::Path;

use super::types::StoreError;

/// One open sled database and our tree in it.
#[derive(Clone)]
pub(super) struct Sled {
    pub db: sled::Db,
    pub tree: sled::Tree,
}

/// Whether the data dir takes writes again: a small file written, synced
/// and removed.
pub(super) fn probe_writable(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join(".write-probe");
    let result = std::fs::File::create(&path).and_then(|mut f| {
        f.write_all(&[0u8; 64 * 1024])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&path);
    result
}

pub(super) fn open_sled(dir: &Path) -> Result<Sled, StoreError> {
    let path = dir.join("sessions.sled");
    drop_unfinished_creation(&path)
        .map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
    let db = open_with_retry(&path).map_err(|source| match source {
        source if lock_is_held(&source) => StoreError::InUse {
            path: dir.display().to_string(),
        },
        source => StoreError::Open {
            path: dir.display().to_string(),
            source,
        },
    })?;
    let tree = db.open_tree("geminid")?;
    Ok(Sled { db, tree })
}

/// When sled creates a database it writes its `conf` file with two writes,
/// before it creates the data file `db`, and it never opens a database
/// whose `conf` was cut between them. The daemon listens before it opens
/// the store, so a kill -9 right after start can leave exactly that. A
/// `conf` without a `db` holds no data: it goes, and sled writes it again.
fn drop_unfinished_creation(path: &Path) -> std::io::Result<()> {
    let conf = path.join("conf");
    if conf.exists() && !path.join("db").exists() {
        tracing::warn!(path = %path.display(), "removing the config of a database whose creation was interrupted");
        std::fs::remove_file(conf)?;
    }
    Ok(())
}

/// Opens sled at `path`, waiting (up to 5 s) while a just-dropped instance
/// still holds the database's file lock: sled releases it from background
/// threads a moment after the last handle goes.
fn open_with_retry(path: &Path) -> Result<sled::Db, sled::Error> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match sled_config(path).open() {
            Err(e) if lock_is_held(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Whether sled could not open because another instance holds the file
/// lock. sled reports it as a plain `WouldBlock`, or wrapped in an error
/// of kind `Other` whose text says so.
fn lock_is_held(e: &sled::Error) -> bool {
    match e {
        sled::Error::Io(io) => {
            io.kind() == std::io::ErrorKind::WouldBlock
                || io.to_string().contains("could not acquire lock")
        }
        _ => false,
    }
}

pub(super) fn sled_config(path: &Path) -> sled::Config {
    sled::Config::new()
        .path(path)
        // sled's default cache is 1 GiB; sessions are append-mostly and
        // replays read sequentially, so a small cache is enough.
        .cache_capacity(8 * 1024 * 1024)
        // Checkpoints flush; sled's own timer would only add wakeups.
        .flush_every_ms(None)
}

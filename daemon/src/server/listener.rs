//! Getting a listening socket: from systemd (socket activation) or by
//! binding the configured path, replacing a stale socket only when no
//! daemon answers on it.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::{UnixListener, UnixStream};

/// Why the daemon could not listen.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("another geminid is already running on {0}")]
    AlreadyRunning(PathBuf),
    #[error("cannot listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("socket activation: {0}")]
    Activation(std::io::Error),
}

/// A listener and whether we created the socket file (and must remove it).
pub struct Listening {
    pub listener: UnixListener,
    pub owned_path: Option<PathBuf>,
    /// Held for the daemon's life so two daemons starting at once cannot
    /// both decide the socket is stale.
    _lock: Option<std::fs::File>,
}

/// The socket systemd passed us, if we were socket-activated.
pub fn from_systemd() -> Result<Option<Listening>, ListenError> {
    let mut fds = sd_notify::listen_fds().map_err(ListenError::Activation)?;
    let Some(fd) = fds.next() else {
        return Ok(None);
    };
    let std_listener = adopt_fd(fd);
    std_listener
        .set_nonblocking(true)
        .map_err(ListenError::Activation)?;
    let listener = UnixListener::from_std(std_listener).map_err(ListenError::Activation)?;
    Ok(Some(Listening {
        listener,
        owned_path: None,
        _lock: None,
    }))
}

#[allow(unsafe_code)]
fn adopt_fd(fd: std::os::fd::RawFd) -> std::os::unix::net::UnixListener {
    use std::os::fd::FromRawFd;
    // SAFETY: systemd hands us this descriptor (LISTEN_FDS, checked against
    // LISTEN_PID by sd_notify::listen_fds); nothing else in the process owns
    // it, so taking ownership here is sound.
    unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) }
}

/// Binds `path` with mode 0600, in a directory created with mode 0700.
pub async fn bind(path: &Path) -> Result<Listening, ListenError> {
    let bind_err = |source| ListenError::Bind {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent()
        && !dir.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(bind_err)?;
    }
    let lock = lock_beside(path).map_err(bind_err)?;
    let Some(lock) = lock else {
        return Err(ListenError::AlreadyRunning(path.to_path_buf()));
    };
    if path.symlink_metadata().is_ok() {
        match UnixStream::connect(path).await {
            Ok(_) => return Err(ListenError::AlreadyRunning(path.to_path_buf())),
            Err(e) => {
                tracing::info!(socket = %path.display(), error = %e, "replacing a stale socket");
                std::fs::remove_file(path).map_err(bind_err)?;
            }
        }
    }
    let listener = UnixListener::bind(path).map_err(bind_err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bind_err)?;
    Ok(Listening {
        listener,
        owned_path: Some(path.to_path_buf()),
        _lock: Some(lock),
    })
}

/// Takes an exclusive lock on `<socket>.lock`; `None` when another process
/// holds it.
fn lock_beside(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(PathBuf::from(lock_path))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(file)),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

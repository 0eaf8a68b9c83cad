//! Reading 0.61's secret store, where it keeps sensitive values (an
//! extension's `sensitive: true` settings): the system keychain (keytar,
//! i.e. the Secret Service over D-Bus on Linux) when one answers, else
//! its encrypted file `~/.gemini/gemini-credentials.json` (FileKeychain:
//! `ivhex:taghex:cipherhex`, AES-256-GCM, key = scrypt("gemini-cli-oauth",
//! "<hostname>-<username>-gemini-cli", 32), plaintext JSON
//! `{service: {account: secret}}`). `GEMINI_FORCE_FILE_STORAGE=true` means
//! the file, as in 0.61.
//!
//! geminid only reads. The system keychain is asked through libsecret's
//! `secret-tool` (no D-Bus library in the daemon); without it a value
//! kept there is reported as not reachable. A file that cannot be read or
//! decrypted is a problem, never a crash: every value stays unset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::problems::ConfigProblem;

/// The file FileKeychain keeps, in the user's Gemini directory.
pub const CREDENTIALS_FILE: &str = "gemini-credentials.json";
/// 0.61's switch to the file even when a system keychain answers.
pub const FORCE_FILE_STORAGE: &str = "GEMINI_FORCE_FILE_STORAGE";
/// How long a `secret-tool` lookup may take (0.61 gives its keychain
/// probe 2 s before falling back to the file).
const NATIVE_TIMEOUT: Duration = Duration::from_secs(2);

/// `{service: {account: secret}}`, as the file holds it.
pub type Secrets = BTreeMap<String, BTreeMap<String, String>>;

/// Where 0.61 keeps secrets on this machine, as far as the daemon can
/// tell from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The encrypted file (forced, or no session bus: keytar cannot work).
    File,
    /// A session bus and `secret-tool`: ask the Secret Service, then the
    /// file (where 0.61 wrote when the service did not answer).
    Native { secret_tool: PathBuf },
    /// A session bus but no `secret-tool`: values 0.61 kept in the system
    /// keychain cannot be read; the file is still read.
    Unreachable,
}

/// Which store to read (pure): `force_file` is
/// `GEMINI_FORCE_FILE_STORAGE=true`, `bus` whether a D-Bus session bus
/// is there, `secret_tool` where the `secret-tool` binary is.
pub fn choose(force_file: bool, bus: bool, secret_tool: Option<PathBuf>) -> Backend {
    if force_file || !bus {
        return Backend::File;
    }
    match secret_tool {
        Some(secret_tool) => Backend::Native { secret_tool },
        None => Backend::Unreachable,
    }
}

/// The store of this process's environment.
pub fn backend_from_env() -> Backend {
    let force = std::env::var(FORCE_FILE_STORAGE).is_ok_and(|v| v == "true");
    let bus = std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|v| !v.is_empty())
        || std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| Path::new(&d).join("bus").exists());
    choose(force, bus, find_in_path("secret-tool"))
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// One secret looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Found(String),
    /// Not in any store the daemon can read.
    Missing,
    /// Possibly in the system keychain, which the daemon cannot read.
    Unreachable,
    /// The file does not decrypt or parse (a problem, [`Keychain::problems`]).
    Unreadable,
}

/// The secret store as read for one reload: the file is read and
/// decrypted at most once, the system keychain asked per secret.
pub struct Keychain {
    backend: Backend,
    file: PathBuf,
    read: Option<Result<Secrets, String>>,
    /// A system keychain that failed once is not asked again.
    native_down: bool,
}

impl Keychain {
    /// The store of `gemini_dir` (the user's `~/.gemini`).
    pub fn new(gemini_dir: &Path, backend: Backend) -> Keychain {
        Keychain {
            backend,
            file: gemini_dir.join(CREDENTIALS_FILE),
            read: None,
            native_down: false,
        }
    }

    /// The credentials file (watched: an edit reloads the settings).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The secret of `account` under `service`.
    pub fn lookup(&mut self, service: &str, account: &str) -> Lookup {
        if let Backend::Native { secret_tool } = &self.backend
            && !self.native_down
        {
            match native_lookup(secret_tool, service, account) {
                Ok(Some(secret)) => return Lookup::Found(secret),
                // Found nowhere in a keychain that answers: 0.61 reads
                // only it then.
                Ok(None) => return Lookup::Missing,
                Err(e) => {
                    tracing::debug!("system keychain: {e}; the credentials file is read");
                    self.native_down = true;
                }
            }
        }
        let file = self.file.clone();
        let read = self.read.get_or_insert_with(|| read_file(&file));
        match read {
            Ok(secrets) => match secrets.get(service).and_then(|s| s.get(account)) {
                Some(secret) => Lookup::Found(secret.clone()),
                None if self.backend == Backend::Unreachable => Lookup::Unreachable,
                None => Lookup::Missing,
            },
            Err(_) => Lookup::Unreadable,
        }
    }

    /// What could not be read, once per reload (area `extension settings`).
    pub fn problems(&self) -> Vec<ConfigProblem> {
        match &self.read {
            Some(Err(e)) => vec![
                ConfigProblem::new(self.file.display().to_string(), e.clone())
                    .kept("no sensitive extension setting from it is set"),
            ],
            _ => Vec::new(),
        }
    }
}

/// `secret-tool lookup service S account A`: `Ok(None)` when the
/// keychain answered without the item, `Err` when it did not answer.
fn native_lookup(tool: &Path, service: &str, account: &str) -> Result<Option<String>, String> {
    let mut child = Command::new(tool)
        .args(["lookup", "service", service, "account", account])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < NATIVE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("secret-tool did not answer within 2 s".to_owned());
            }
            Err(e) => return Err(format!("secret-tool: {e}")),
        }
    };
    let output = child
        .wait_with_output()
        .map_err(|e| format!("secret-tool: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    if status.success() {
        return String::from_utf8(output.stdout)
            .map(Some)
            .map_err(|_| "secret-tool printed a secret that is not UTF-8".to_owned());
    }
    if stderr.is_empty() {
        Ok(None)
    } else {
        Err(stderr)
    }
}

/// Reads and decrypts the credentials file (missing: empty).
pub fn read_file(path: &Path) -> Result<Secrets, String> {
    let data = match std::fs::read_to_string(path) {
        Ok(data) => data,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Secrets::new()),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    let salt = salt().map_err(|e| format!("cannot derive its key: {e}"))?;
    let key = key_for(&salt);
    let plain = decrypt(&key, &data).map_err(|e| {
        format!("does not decrypt ({e}); it is tied to this host and user name ({salt})")
    })?;
    parse_secrets(&plain)
}

/// The decrypted JSON as `{service: {account: secret}}`.
pub fn parse_secrets(plain: &str) -> Result<Secrets, String> {
    let value: serde_json::Value =
        serde_json::from_str(plain).map_err(|e| format!("decrypted, but not JSON: {e}"))?;
    let Some(services) = value.as_object() else {
        return Err("decrypted, but not a JSON object".to_owned());
    };
    let mut out = Secrets::new();
    for (service, accounts) in services {
        let Some(accounts) = accounts.as_object() else {
            return Err(format!("decrypted, but {service:?} is not an object"));
        };
        let entry = out.entry(service.clone()).or_default();
        for (account, secret) in accounts {
            // Other users of the file may keep other shapes; only strings
            // are secrets.
            if let Some(secret) = secret.as_str() {
                entry.insert(account.clone(), secret.to_owned());
            }
        }
    }
    Ok(out)
}

/// FileKeychain's salt: `<hostname>-<username>-gemini-cli` (node's
/// `os.hostname()` and `os.userInfo().username`).
pub fn salt() -> Result<String, String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim_end_matches('\n').to_owned())
        .map_err(|e| format!("host name: {e}"))?;
    let user = user_name().ok_or("no user name for this uid")?;
    Ok(format!("{host}-{user}-gemini-cli"))
}

/// The name of the effective user in `/etc/passwd` (else `$USER`).
fn user_name() -> Option<String> {
    let uid = rustix::process::geteuid().as_raw();
    if let Ok(passwd) = std::fs::read_to_string("/etc/passwd") {
        for line in passwd.lines() {
            let mut fields = line.split(':');
            let (Some(name), _, Some(id)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            if id.parse::<u32>().ok() == Some(uid) {
                return Some(name.to_owned());
            }
        }
    }
    std::env::var("USER").ok().filter(|u| !u.is_empty())
}

/// scrypt("gemini-cli-oauth", salt, 32) with node's defaults (N=2^14,
/// r=8, p=1), kept for the last salt: deriving costs tens of ms.
pub fn key_for(salt: &str) -> [u8; 32] {
    static LAST: Mutex<Option<(String, [u8; 32])>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((s, key)) = last.as_ref()
        && s == salt
    {
        return *key;
    }
    let mut key = [0u8; 32];
    if let Ok(params) = scrypt::Params::new(14, 8, 1, 32) {
        // Cannot fail: the output length is one the params accept.
        let _ = scrypt::scrypt(b"gemini-cli-oauth", salt.as_bytes(), &params, &mut key);
    }
    *last = Some((salt.to_owned(), key));
    key
}

/// FileKeychain's `decrypt`: `ivhex:taghex:cipherhex`, a 12- or 16-byte
/// IV, a 16-byte tag.
pub fn decrypt(key: &[u8; 32], data: &str) -> Result<String, String> {
    use aes_gcm::aead::consts::{U12, U16};
    use aes_gcm::aead::{Aead, KeyInit};
    use aes_gcm::{AesGcm, aes::Aes256};

    let parts: Vec<&str> = data.split(':').collect();
    let [iv, tag, cipher] = parts[..] else {
        return Err("not iv:tag:ciphertext".to_owned());
    };
    let iv = hex::decode(iv).map_err(|_| "the IV is not hex".to_owned())?;
    let tag = hex::decode(tag).map_err(|_| "the tag is not hex".to_owned())?;
    let mut payload = hex::decode(cipher).map_err(|_| "the ciphertext is not hex".to_owned())?;
    if tag.len() != 16 {
        return Err("the tag is not 16 bytes".to_owned());
    }
    payload.extend_from_slice(&tag);
    let plain =
        match iv.len() {
            12 => AesGcm::<Aes256, U12>::new(key.into())
                .decrypt(iv.as_slice().into(), payload.as_slice()),
            16 => AesGcm::<Aes256, U16>::new(key.into())
                .decrypt(iv.as_slice().into(), payload.as_slice()),
            _ => return Err("the IV is not 12 or 16 bytes".to_owned()),
        }
        .map_err(|_| "authentication failed".to_owned())?;
    String::from_utf8(plain).map_err(|_| "the plaintext is not UTF-8".to_owned())
}

#[cfg(test)]
#[path = "keychain_tests.rs"]
mod tests;

//! The token store: every server's token (with the client it was issued
//! to and the endpoint that refreshes it), shared by every session, in one
//! file of the daemon's data directory, mode 0600, written atomically so
//! that it survives restarts whole or not at all.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::OAuthError;

/// How a client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// `client_secret_basic`: HTTP Basic.
    Basic,
    /// `client_secret_post`: in the form.
    Post,
    /// `none`: a public client.
    None,
    /// `private_key_jwt`: a signed JWT assertion (`assertion.rs`).
    PrivateKeyJwt,
}

/// A client the authorization server knows (registered or configured).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    pub client_id: String,
    pub client_secret: Option<String>,
    pub auth: ClientAuth,
    /// The signing key of a `private_key_jwt` client: from the settings,
    /// never stored.
    #[serde(skip)]
    pub assertion_key: Option<super::assertion::AssertionKey>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredToken {
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Unix seconds.
    pub expires_at: Option<u64>,
    pub scope: Option<String>,
    pub token_url: String,
    pub client: Client,
    /// The resource the token is for (RFC 8707).
    pub resource: Option<String>,
    /// The grant that got it (`authorization_code`, `client_credentials`).
    pub grant: String,
}

/// A token this close to its expiry is refreshed before use.
pub const REFRESH_MARGIN_SECS: u64 = 60;

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl StoredToken {
    pub fn expiring(&self, now: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now + REFRESH_MARGIN_SECS)
    }
}

/// Tokens by key (server name and URL). A store without a path (a probe's)
/// keeps them in memory only.
pub struct TokenStore {
    path: Option<PathBuf>,
    tokens: Mutex<BTreeMap<String, StoredToken>>,
}

/// The key of a server's token: its name and URL, so that a changed URL
/// does not send the old server's token to the new one.
pub fn key(server: &str, url: &str) -> String {
    format!("{server} {url}")
}

impl TokenStore {
    pub fn memory() -> TokenStore {
        TokenStore {
            path: None,
            tokens: Mutex::new(BTreeMap::new()),
        }
    }

    /// Opens `path`; an unreadable or damaged file is reported and treated
    /// as empty (servers then need a login again, nothing is sent looser).
    pub fn open(path: PathBuf) -> TokenStore {
        let tokens = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(tokens) => tokens,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "MCP token store unreadable: every OAuth server needs a login again");
                    BTreeMap::new()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "MCP token store unreadable: every OAuth server needs a login again");
                BTreeMap::new()
            }
        };
        TokenStore {
            path: Some(path),
            tokens: Mutex::new(tokens),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, StoredToken>> {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, key: &str) -> Option<StoredToken> {
        self.lock().get(key).cloned()
    }

    pub fn put(&self, key: &str, token: StoredToken) -> Result<(), OAuthError> {
        let mut tokens = self.lock();
        tokens.insert(key.to_owned(), token);
        self.save(&tokens)
    }

    pub fn remove(&self, key: &str) -> Result<(), OAuthError> {
        let mut tokens = self.lock();
        if tokens.remove(key).is_some() {
            self.save(&tokens)?;
        }
        Ok(())
    }

    /// Writes a private temporary file next to the store and renames it.
    fn save(&self, tokens: &BTreeMap<String, StoredToken>) -> Result<(), OAuthError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let fail = |e: &dyn std::fmt::Display| OAuthError::Store {
            path: path.display().to_string(),
            problem: e.to_string(),
        };
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(&e))?;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| fail(&e))?;
        let text = serde_json::to_vec_pretty(tokens).map_err(|e| fail(&e))?;
        file.write_all(&text).map_err(|e| fail(&e))?;
        file.as_file().sync_all().map_err(|e| fail(&e))?;
        file.persist(path).map_err(|e| fail(&e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> StoredToken {
        StoredToken {
            access_token: "a".into(),
            refresh_token: Some("r".into()),
            expires_at: Some(100),
            scope: None,
            token_url: "http://h/token".into(),
            client: Client {
                client_id: "c".into(),
                client_secret: None,
                auth: ClientAuth::None,
                assertion_key: None,
            },
            resource: None,
            grant: "authorization_code".into(),
        }
    }

    #[test]
    fn tokens_survive_a_reopen_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-oauth.json");
        let store = TokenStore::open(path.clone());
        store.put("s http://h/mcp", token()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = TokenStore::open(path.clone());
        assert_eq!(again.get("s http://h/mcp"), Some(token()));
        assert!(token().expiring(50));
        assert!(!token().expiring(10));
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(TokenStore::open(path).get("s http://h/mcp"), None);
    }
}

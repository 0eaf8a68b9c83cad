//! Google access tokens for Vertex AI from Application Default
//! Credentials: the file `GOOGLE_APPLICATION_CREDENTIALS` names, else
//! gcloud's `~/.config/gcloud/application_default_credentials.json`.
//!
//! Two kinds of file, as Google's auth libraries read them:
//! * `authorized_user` (what `gcloud auth application-default login`
//!   writes): a refresh token exchanged at the token endpoint
//!   (`grant_type=refresh_token`);
//! * `service_account` (a JSON key): a JWT signed with the key (RS256)
//!   exchanged at its `token_uri` (`grant_type=jwt-bearer`).
//!
//! A token is cached in memory and fetched again shortly before it
//! expires, so every session shares it and no request waits on a refresh
//! it could have avoided. Errors name the file, never its contents.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::{ModelError, ModelErrorKind};

/// The scope Vertex AI needs.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Where refresh tokens are exchanged unless the file names another.
pub const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// A credentials file, read.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    AuthorizedUser {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: String,
    },
    ServiceAccount {
        client_email: String,
        private_key_id: Option<String>,
        /// PKCS#8 DER.
        private_key: Vec<u8>,
        token_uri: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::AuthorizedUser { client_id, .. } => {
                write!(f, "AuthorizedUser({client_id})")
            }
            Credentials::ServiceAccount { client_email, .. } => {
                write!(f, "ServiceAccount({client_email})")
            }
        }
    }
}

#[derive(Deserialize)]
struct CredentialsFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
    client_email: Option<String>,
    private_key_id: Option<String>,
    private_key: Option<String>,
    token_uri: Option<String>,
}

/// Where Application Default Credentials are read from, if anywhere.
pub fn adc_path(env: &dyn Fn(&str) -> Option<String>, home: &Path) -> Option<PathBuf> {
    match env("GOOGLE_APPLICATION_CREDENTIALS") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            let gcloud = env("CLOUDSDK_CONFIG")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".config").join("gcloud"));
            let file = gcloud.join("application_default_credentials.json");
            file.is_file().then_some(file)
        }
    }
}

/// Reads a credentials file; the error names the file and what is wrong,
/// never the contents.
pub fn read_credentials(path: &Path) -> Result<Credentials, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the credentials file {}: {e}", path.display()))?;
    let file: CredentialsFile = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the credentials file {} is not valid JSON (line {}, column {})",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    let missing = |field: &str| format!("the credentials file {} has no `{field}`", path.display());
    match file.kind.as_deref() {
        Some("authorized_user") => Ok(Credentials::AuthorizedUser {
            client_id: file.client_id.ok_or_else(|| missing("client_id"))?,
            client_secret: file.client_secret.ok_or_else(|| missing("client_secret"))?,
            refresh_token: file.refresh_token.ok_or_else(|| missing("refresh_token"))?,
            token_uri: file
                .token_uri
                .unwrap_or_else(|| GOOGLE_TOKEN_URI.to_owned()),
        }),
        Some("service_account") => {
            let pem = file.private_key.ok_or_else(|| missing("private_key"))?;
            let private_key = pem_to_der(&pem).ok_or_else(|| {
                format!(
                    "the `private_key` in {} is not a PEM-encoded PKCS#8 key",
                    path.display()
                )
            })?;
            Ok(Credentials::ServiceAccount {
                client_email: file.client_email.ok_or_else(|| missing("client_email"))?,
                private_key_id: file.private_key_id,
                private_key,
                token_uri: file
                    .token_uri
                    .unwrap_or_else(|| GOOGLE_TOKEN_URI.to_owned()),
            })
        }
        Some(other) => Err(format!(
            "the credentials file {} is of type `{other}`; geminid reads `authorized_user` \
             (gcloud auth application-default login) and `service_account` keys",
            path.display()
        )),
        None => Err(missing("type")),
    }
}

fn pem_to_der(pem: &str) -> Option<Vec<u8>> {
    let body = pem
        .split("-----BEGIN PRIVATE KEY-----")
        .nth(1)?
        .split("-----END PRIVATE KEY-----")
        .next()?;
    let compact: String = body
        .replace("\\n", "\n")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .ok()
}

/// The signed JWT a service account exchanges for a token.
pub fn service_account_assertion(
    client_email: &str,
    private_key_id: Option<&str>,
    private_key: &[u8],
    token_uri: &str,
    now: u64,
) -> Result<String, String> {
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = private_key_id {
        header["kid"] = kid.into();
    }
    let claims = serde_json::json!({
        "iss": client_email,
        "scope": CLOUD_PLATFORM_SCOPE,
        "aud": token_uri,
        "iat": now,
        "exp": now + 3600,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let key = ring::signature::RsaKeyPair::from_pkcs8(private_key)
        .map_err(|e| format!("the service account's private key cannot sign: {e}"))?;
    let mut signature = vec![0u8; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "signing the service account's token request failed".to_owned())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// A token and when to fetch the next one.
#[derive(Clone)]
struct Token {
    value: String,
    refresh_at: Instant,
}

/// Access tokens for one credentials file, shared by every session.
pub struct TokenSource {
    path: PathBuf,
    credentials: Credentials,
    http: reqwest::Client,
    current: Mutex<Option<Token>>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: Option<String>,
    expires_in: Option<u64>,
    error: Option<String>,
    error_description: Option<String>,
}

impl TokenSource {
    pub fn new(path: PathBuf, credentials: Credentials, http: reqwest::Client) -> Self {
        TokenSource {
            path,
            credentials,
            http,
            current: Mutex::new(None),
        }
    }

    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// A token valid for a while yet: the cached one, or a new one.
    pub async fn token(&self) -> Result<String, ModelError> {
        let mut current = self.current.lock().await;
        if let Some(token) = current.as_ref().filter(|t| Instant::now() < t.refresh_at) {
            return Ok(token.value.clone());
        }
        let token = self.fetch().await?;
        let value = token.value.clone();
        *current = Some(token);
        Ok(value)
    }

    /// Forgets the cached token (the server refused it).
    pub async fn invalidate(&self) {
        *self.current.lock().await = None;
    }

    async fn fetch(&self) -> Result<Token, ModelError> {
        let (token_uri, form): (&str, Vec<(&str, String)>) = match &self.credentials {
            Credentials::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
                token_uri,
            } => (
                token_uri,
                vec![
                    ("grant_type", "refresh_token".to_owned()),
                    ("client_id", client_id.clone()),
                    ("client_secret", client_secret.clone()),
                    ("refresh_token", refresh_token.clone()),
                ],
            ),
            Credentials::ServiceAccount {
                client_email,
                private_key_id,
                private_key,
                token_uri,
            } => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or_default();
                let assertion = service_account_assertion(
                    client_email,
                    private_key_id.as_deref(),
                    private_key,
                    token_uri,
                    now,
                )
                .map_err(|e| {
                    ModelError::new(
                        ModelErrorKind::Auth,
                        format!("{e} ({})", self.path.display()),
                    )
                })?;
                (
                    token_uri,
                    vec![
                        (
                            "grant_type",
                            "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned(),
                        ),
                        ("assertion", assertion),
                    ],
                )
            }
        };
        let asked = Instant::now();
        let response = self
            .http
            .post(token_uri)
            .form(&form)
            .send()
            .await
            .map_err(|e| {
                ModelError::new(
                    ModelErrorKind::Transport,
                    format!("cannot reach the token endpoint {token_uri}: {e}"),
                )
            })?;
        let status = response.status().as_u16();
        let body: TokenResponse = response.json().await.map_err(|e| {
            ModelError::new(
                ModelErrorKind::Auth,
                format!("the token endpoint {token_uri} answered {status} with something that is not a token: {e}"),
            )
        })?;
        match body {
            TokenResponse {
                access_token: Some(value),
                expires_in,
                ..
            } if status == 200 => {
                let lifetime = Duration::from_secs(expires_in.unwrap_or(3600));
                // Fetch again a minute before expiry (half-way for short
                // lifetimes), so no request carries a token about to lapse.
                let margin = Duration::from_secs(60).min(lifetime / 2);
                Ok(Token {
                    value,
                    refresh_at: asked + lifetime - margin,
                })
            }
            TokenResponse {
                error,
                error_description,
                ..
            } => Err(self.refusal(status, error.as_deref(), error_description.as_deref())),
        }
    }

    fn refusal(&self, status: u16, error: Option<&str>, description: Option<&str>) -> ModelError {
        let detail = description.or(error).unwrap_or("no reason given");
        let fix = match (&self.credentials, error) {
            (Credentials::AuthorizedUser { .. }, Some("invalid_grant")) => format!(
                "the refresh token in {} has expired or been revoked: run \
                 `gcloud auth application-default login` again",
                self.path.display()
            ),
            (Credentials::ServiceAccount { client_email, .. }, Some("invalid_grant")) => format!(
                "the service account key {} ({client_email}) was refused: it may have been \
                 deleted or disabled; create a new key",
                self.path.display()
            ),
            (_, Some("invalid_client")) => format!(
                "the client in {} was refused by the token endpoint",
                self.path.display()
            ),
            _ => format!(
                "the token endpoint refused the credentials in {}",
                self.path.display()
            ),
        };
        ModelError::new(
            ModelErrorKind::Auth,
            format!("{fix} (HTTP {status}: {detail})"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("creds.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_both_kinds_and_names_the_file_in_every_error() {
        let dir = tempfile::tempdir().unwrap();
        let user = write(
            dir.path(),
            r#"{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}"#,
        );
        match read_credentials(&user).unwrap() {
            Credentials::AuthorizedUser { token_uri, .. } => {
                assert_eq!(token_uri, GOOGLE_TOKEN_URI)
            }
            other => panic!("{other:?}"),
        }
        let secret = "SECRET-REFRESH-TOKEN";
        for (text, expect) in [
            (
                format!(r#"{{"type":"authorized_user","refresh_token":"{secret}"}}"#),
                "no `client_id`",
            ),
            (
                format!("{{\"refresh_token\": \"{secret}\""),
                "not valid JSON",
            ),
            (
                r#"{"type":"external_account"}"#.to_owned(),
                "external_account",
            ),
            (
                r#"{"type":"service_account","client_email":"a","private_key":"junk"}"#.to_owned(),
                "PKCS#8",
            ),
        ] {
            let path = write(dir.path(), &text);
            let error = read_credentials(&path).unwrap_err();
            assert!(error.contains(expect), "{error}");
            assert!(error.contains(&path.display().to_string()), "{error}");
            assert!(!error.contains(secret), "{error}");
        }
        let missing = dir.path().join("nope.json");
        let error = read_credentials(&missing).unwrap_err();
        assert!(error.contains("nope.json"), "{error}");
    }

    #[test]
    fn adc_path_prefers_the_variable_then_gcloud() {
        let home = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        assert_eq!(adc_path(&none, home.path()), None);
        let gcloud = home.path().join(".config/gcloud");
        std::fs::create_dir_all(&gcloud).unwrap();
        std::fs::write(gcloud.join("application_default_credentials.json"), "{}").unwrap();
        assert_eq!(
            adc_path(&none, home.path()),
            Some(gcloud.join("application_default_credentials.json"))
        );
        let set =
            |name: &str| (name == "GOOGLE_APPLICATION_CREDENTIALS").then(|| "/k.json".to_owned());
        assert_eq!(adc_path(&set, home.path()), Some(PathBuf::from("/k.json")));
    }
}

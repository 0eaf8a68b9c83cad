//! One server's side of OAuth: the bearer token its connections carry
//! (refreshed before expiry), what a refused connection means for it (a
//! refresh, a client-credentials grant, or a login to wait for), the
//! scope step-up a 403 `insufficient_scope` asks for, and the login
//! `mcp.auth` drives.

use std::sync::Arc;
use std::time::Duration;

use super::super::bearer::LiveToken;
use super::challenge::Challenge;
use super::flow::{self, Login, scope_covers, scope_union};
use super::refusal::Refusal;
use super::store::{self, TokenStore, now_secs};
use super::{OAuthError, OAuthSettings, cross_app, fetch, grant};
use crate::discovery::settings::{ServerConfig, Transport};

/// How long a login waits for its redirect.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

pub struct ServerAuth {
    pub tokens: Arc<TokenStore>,
    /// Complete a login by following the authorization URL itself instead
    /// of waiting for a user (a probe: the conformance suite's
    /// authorization server approves at once).
    pub follow_redirect: bool,
    /// The login `mcp.auth` started, waiting for its redirect.
    login: tokio::sync::Mutex<Option<Login>>,
    /// The token the server's connection sends (read at each request).
    pub live: LiveToken,
    /// The wider scope a 403 asked for, when only a person can grant it:
    /// the next login asks for it.
    wider_scope: std::sync::Mutex<Option<String>>,
}

/// Why a connection was refused, when it was about authorization.
#[derive(Debug)]
pub enum Refused {
    /// Only a user can fix it: `gemctl mcp auth NAME`.
    NeedsLogin(String),
    /// Authorization was attempted and failed.
    Failed(OAuthError),
}

/// The URL of an HTTP or SSE server, and whether it is SSE.
fn remote(config: &ServerConfig) -> Option<(&str, bool)> {
    match &config.transport {
        Transport::Http { url } => Some((url, false)),
        Transport::Sse { url } => Some((url, true)),
        Transport::Stdio { .. } => None,
    }
}

fn key(config: &ServerConfig) -> Option<String> {
    remote(config).map(|(url, _)| store::key(&config.name, url))
}

impl ServerAuth {
    pub fn new(tokens: Arc<TokenStore>, follow_redirect: bool) -> ServerAuth {
        ServerAuth {
            tokens,
            follow_redirect,
            login: tokio::sync::Mutex::new(None),
            live: LiveToken::default(),
            wider_scope: std::sync::Mutex::new(None),
        }
    }

    /// The wider scope waiting for a login, if a step-up needed one.
    pub fn wider_scope(&self) -> Option<String> {
        self.wider_scope
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_wider_scope(&self, scope: Option<String>) {
        *self.wider_scope.lock().unwrap_or_else(|e| e.into_inner()) = scope;
    }

    /// The access token to send, refreshed first when it is about to
    /// expire (a refresh that fails drops the token: the server then asks
    /// for a login again).
    pub async fn bearer(&self, config: &ServerConfig) -> Option<String> {
        let token = self.current(config).await;
        self.live.set(token.clone());
        token
    }

    async fn current(&self, config: &ServerConfig) -> Option<String> {
        let key = key(config)?;
        let token = self.tokens.get(&key)?;
        if !token.expiring(now_secs()) {
            return Some(token.access_token);
        }
        if token.refresh_token.is_none() {
            return Some(token.access_token);
        }
        let http = fetch::client().ok()?;
        match grant::refresh(&http, &token).await {
            Ok(fresh) => {
                let access = fresh.access_token.clone();
                self.save(&key, fresh);
                Some(access)
            }
            Err(e) => {
                tracing::warn!(server = %config.name, error = %e, "MCP token refresh failed");
                Some(token.access_token)
            }
        }
    }

    /// Seconds until the stored token should be refreshed, if it expires.
    pub fn refresh_in(&self, config: &ServerConfig) -> Option<Duration> {
        let token = self.tokens.get(&key(config)?)?;
        let at = token.expires_at?.saturating_sub(store::REFRESH_MARGIN_SECS);
        Some(Duration::from_secs(at.saturating_sub(now_secs())))
    }

    /// Stores `token` and makes it the one the connection sends.
    fn save(&self, key: &str, token: store::StoredToken) {
        self.live.set(Some(token.access_token.clone()));
        if let Err(e) = self.tokens.put(key, token) {
            tracing::warn!(error = %e, "MCP token not saved");
        }
    }

    /// After a failed connection (`refusal`: what the server said, when
    /// rmcp saw it; else the server is asked without a token): whether it
    /// wants authorization. `Ok(false)`: it does not (the failure is
    /// another one); `Ok(true)`: a new token was stored, connect again.
    pub async fn after_refusal(
        &self,
        config: &ServerConfig,
        refusal: Option<Refusal>,
    ) -> Result<bool, Refused> {
        let Some((url, sse)) = remote(config) else {
            return Ok(false);
        };
        let Some(key) = key(config) else {
            return Ok(false);
        };
        if let Some(refusal) = refusal.as_ref().filter(|r| r.status == 403) {
            return self
                .step_up(config, &refusal.challenge)
                .await
                .map(|()| true);
        }
        let http = fetch::client().map_err(Refused::Failed)?;
        let challenge = match refusal {
            Some(refusal) => refusal.challenge,
            None => match fetch::challenge(&http, url, sse, &config.headers).await {
                Ok(Some((_, challenge))) => challenge,
                Ok(None) | Err(_) => return Ok(false),
            },
        };
        // A token that was refused: a refresh may be all it needs.
        if let Some(old) = self.tokens.get(&key) {
            if old.refresh_token.is_some()
                && let Ok(fresh) = grant::refresh(&http, &old).await
            {
                self.save(&key, fresh);
                return Ok(true);
            }
            let _ = self.tokens.remove(&key);
        }
        let settings = config.oauth.clone().unwrap_or_default();
        let plan = flow::discover(&http, url, &challenge, &settings)
            .await
            .map_err(Refused::Failed)?;
        if let Some(token) = without_user(&http, &plan, &settings).await {
            self.save(&key, token.map_err(Refused::Failed)?);
            return Ok(true);
        }
        if !self.follow_redirect {
            return Err(Refused::NeedsLogin(format!(
                "the server needs a login: run `gemctl mcp auth {}`",
                config.name
            )));
        }
        let login = flow::begin(&http, plan, &settings)
            .await
            .map_err(Refused::Failed)?;
        let token = follow(&http, login).await.map_err(Refused::Failed)?;
        self.save(&key, token);
        Ok(true)
    }

    /// After a 403 `insufficient_scope` (spec 2025-11-25, scope challenge
    /// handling): authorizes again for the granted scope widened by the
    /// one asked for, and stores the new token, which the open connection
    /// then sends. A scope the token already has is not asked for again
    /// (no loop). Where a person must approve (a configured server), the
    /// wider scope is kept for `gemctl mcp auth` and the answer says so.
    pub async fn step_up(
        &self,
        config: &ServerConfig,
        challenge: &Challenge,
    ) -> Result<(), Refused> {
        let (Some((url, _)), Some(key)) = (remote(config), key(config)) else {
            return Err(Refused::Failed(OAuthError::Url(format!(
                "{} is a stdio server: it takes no OAuth",
                config.name
            ))));
        };
        let granted = self.tokens.get(&key).and_then(|t| t.scope);
        let asked = challenge.scope.clone().unwrap_or_default();
        if scope_covers(granted.as_deref(), &asked) {
            return Err(Refused::Failed(OAuthError::ScopeRefused {
                asked,
                granted: granted.unwrap_or_default(),
            }));
        }
        let settings = config.oauth.clone().unwrap_or_default();
        let http = fetch::client().map_err(Refused::Failed)?;
        let mut plan = flow::discover(&http, url, challenge, &settings)
            .await
            .map_err(Refused::Failed)?;
        let wider = scope_union(granted.as_deref(), Some(&asked));
        plan.scope = scope_union(wider.as_deref(), plan.scope.as_deref());
        if let Some(token) = without_user(&http, &plan, &settings).await {
            self.save(&key, token.map_err(Refused::Failed)?);
            return Ok(());
        }
        if !self.follow_redirect {
            let scope = plan.scope.clone().unwrap_or_default();
            self.set_wider_scope(plan.scope);
            return Err(Refused::NeedsLogin(format!(
                "the server wants the wider scope `{scope}`: run `gemctl mcp auth {}`",
                config.name
            )));
        }
        let login = flow::begin(&http, plan, &settings)
            .await
            .map_err(Refused::Failed)?;
        let token = follow(&http, login).await.map_err(Refused::Failed)?;
        self.save(&key, token);
        Ok(())
    }

    /// Starts a login for `config`: discovery, a client, the loopback
    /// listener. Returns the URL to open; [`ServerAuth::finish_login`]
    /// waits for its redirect.
    pub async fn begin_login(&self, config: &ServerConfig) -> Result<String, OAuthError> {
        let Some((url, sse)) = remote(config) else {
            return Err(OAuthError::Url(format!(
                "{} is a stdio server: it takes no OAuth",
                config.name
            )));
        };
        let http = fetch::client()?;
        let challenge = fetch::challenge(&http, url, sse, &config.headers)
            .await?
            .map(|(_, c)| c)
            .unwrap_or_else(Challenge::default);
        let settings = config.oauth.clone().unwrap_or_default();
        let mut plan = flow::discover(&http, url, &challenge, &settings).await?;
        if let Some(wider) = self.wider_scope() {
            plan.scope = scope_union(Some(&wider), plan.scope.as_deref());
        }
        let login = flow::begin(&http, plan, &settings).await?;
        let url = login.url.clone();
        *self.login.lock().await = Some(login);
        Ok(url)
    }

    /// Waits for the redirect of the login begun last and stores the token.
    pub async fn finish_login(&self, config: &ServerConfig) -> Result<(), OAuthError> {
        let login = self
            .login
            .lock()
            .await
            .take()
            .ok_or_else(|| OAuthError::NoLogin(config.name.clone()))?;
        let http = fetch::client()?;
        let token = login.complete(&http, LOGIN_TIMEOUT).await?;
        self.set_wider_scope(None);
        if let Some(key) = key(config) {
            self.live.set(Some(token.access_token.clone()));
            self.tokens.put(&key, token)?;
        }
        Ok(())
    }

    /// Forgets the server's token.
    pub fn logout(&self, config: &ServerConfig) -> Result<(), OAuthError> {
        match key(config) {
            Some(key) => self.tokens.remove(&key),
            None => Ok(()),
        }
    }
}

/// A token no user has to approve, when the settings allow one: cross-app
/// access, else the client-credentials grant. `None`: a login is needed.
pub async fn without_user(
    http: &reqwest::Client,
    plan: &flow::Plan,
    settings: &OAuthSettings,
) -> Option<Result<store::StoredToken, OAuthError>> {
    if let Some(provider) = cross_app::provider(settings) {
        let client = match flow::client(http, plan, settings, "").await {
            Ok(client) => client,
            Err(e) => return Some(Err(e)),
        };
        return Some(cross_app::token(http, &provider, plan, &client).await);
    }
    if flow::uses_client_credentials(plan, settings) {
        return Some(flow::client_credentials(http, plan, settings).await);
    }
    None
}

/// Completes `login` by opening its URL over HTTP and following the
/// redirects to the loopback listener, as a browser would.
pub async fn follow(
    http: &reqwest::Client,
    login: Login,
) -> Result<store::StoredToken, OAuthError> {
    let url = login.url.clone();
    let browse = async {
        match http.get(&url).send().await {
            Ok(r) => tracing::debug!(status = r.status().as_u16(), "authorization URL followed"),
            Err(e) => tracing::warn!(error = %e, "authorization URL not followed"),
        }
    };
    let (token, ()) = tokio::join!(login.complete(http, Duration::from_secs(30)), browse);
    token
}

//! The authorization flow from a server's challenge to a token: discovery
//! (protected resource, then authorization server, with the 2025-03-26
//! fallbacks), the client, then either the client-credentials grant (no
//! user needed) or a login whose redirect the loopback listener receives.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Url;

use super::assertion::AssertionKey;
use super::challenge::Challenge;
use super::fetch::{self, ResourceMetadata, ServerMetadata};
use super::grant::{self, TokenRequest};
use super::loopback::Loopback;
use super::pkce::{Pkce, random_token};
use super::store::{Client, ClientAuth, StoredToken};
use super::{OAuthError, OAuthSettings, wellknown};

/// What discovery found: where to authorize, for what resource and scope.
#[derive(Debug, Clone)]
pub struct Plan {
    pub resource: Option<String>,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scope: Option<String>,
    pub metadata: ServerMetadata,
}

fn url(text: &str) -> Result<Url, OAuthError> {
    Url::parse(text).map_err(|_| OAuthError::Url(text.to_owned()))
}

/// Discovers how to authorize for the MCP server at `server_url`, given
/// what its 401 said.
pub async fn discover(
    http: &reqwest::Client,
    server_url: &str,
    challenge: &Challenge,
    settings: &OAuthSettings,
) -> Result<Plan, OAuthError> {
    let server = url(server_url)?;
    let prm_urls = match &challenge.resource_metadata {
        Some(at) => vec![url(at)?],
        None => wellknown::resource_metadata(&server),
    };
    let prm: Option<ResourceMetadata> = fetch::first_json(http, &prm_urls).await.map(|(_, m)| m);
    if let Some(advertised) = prm.as_ref().and_then(|p| p.resource.as_deref()) {
        let covered = Url::parse(advertised).is_ok_and(|r| wellknown::covers(&r, &server));
        if !covered {
            return Err(OAuthError::ResourceMismatch {
                advertised: advertised.to_owned(),
                server: server_url.to_owned(),
            });
        }
    }
    let issuer = match prm.as_ref().and_then(|p| p.authorization_servers.first()) {
        Some(issuer) => url(issuer)?,
        None => wellknown::origin(&server),
    };
    let metadata =
        match fetch::first_json::<ServerMetadata>(http, &wellknown::server_metadata(&issuer)).await
        {
            Some((_, m)) => m,
            None => ServerMetadata::default(),
        };
    if let Some(methods) = &metadata.code_challenge_methods_supported
        && !methods.iter().any(|m| m == "S256")
    {
        return Err(OAuthError::NoPkce);
    }
    // 2025-03-26 servers without metadata: the default endpoints at the
    // authorization base URL (the issuer's origin).
    let base = wellknown::origin(&issuer);
    let default_at = |path: &str| base.join(path).map(|u| u.to_string()).ok();
    let authorization_endpoint = settings
        .authorization_url
        .clone()
        .or_else(|| metadata.authorization_endpoint.clone())
        .or_else(|| default_at("authorize"))
        .ok_or_else(|| OAuthError::NoServer(server_url.to_owned()))?;
    let token_endpoint = settings
        .token_url
        .clone()
        .or_else(|| metadata.token_endpoint.clone())
        .or_else(|| default_at("token"))
        .ok_or_else(|| OAuthError::NoServer(server_url.to_owned()))?;
    let registration_endpoint = settings
        .registration_url
        .clone()
        .or_else(|| metadata.registration_endpoint.clone())
        .or_else(|| {
            (metadata.authorization_endpoint.is_none())
                .then(|| default_at("register"))
                .flatten()
        });
    let scope = choose_scope(settings, challenge, prm.as_ref(), &metadata);
    let resource = Some(match prm.as_ref().and_then(|p| p.resource.clone()) {
        Some(r) => r,
        None => wellknown::canonical_resource(&server),
    });
    Ok(Plan {
        resource,
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
        scope,
        metadata,
    })
}

/// The spec's scope selection: configured scopes, else the challenge's,
/// else the resource's `scopes_supported`, else none; `offline_access`
/// added when the authorization server offers it (for a refresh token).
pub fn choose_scope(
    settings: &OAuthSettings,
    challenge: &Challenge,
    prm: Option<&ResourceMetadata>,
    metadata: &ServerMetadata,
) -> Option<String> {
    let mut scope = if !settings.scopes.is_empty() {
        Some(settings.scopes.join(" "))
    } else if let Some(s) = &challenge.scope {
        Some(s.clone())
    } else {
        prm.and_then(|p| p.scopes_supported.as_ref())
            .filter(|s| !s.is_empty())
            .map(|s| s.join(" "))
    };
    let offers_offline = metadata
        .scopes_supported
        .as_ref()
        .is_some_and(|s| s.iter().any(|x| x == "offline_access"));
    if offers_offline
        && let Some(s) = &mut scope
        && !s.split(' ').any(|x| x == "offline_access")
    {
        s.push_str(" offline_access");
    }
    scope
}

/// The scopes of `a` and then those of `b` not in `a` (space-separated,
/// each once): what a step-up asks for, the granted scope widened by the
/// one a 403 asked for.
pub fn scope_union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(|s| s.split(' ')) {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

/// Whether every scope of `wanted` is in `granted`.
pub fn scope_covers(granted: Option<&str>, wanted: &str) -> bool {
    let granted: Vec<&str> = granted.unwrap_or("").split(' ').collect();
    wanted
        .split(' ')
        .filter(|s| !s.is_empty())
        .all(|s| granted.contains(&s))
}

/// The configured client, else the client ID metadata document's URL
/// where the authorization server takes one (SEP-991), else one
/// registered now.
pub async fn client(
    http: &reqwest::Client,
    plan: &Plan,
    settings: &OAuthSettings,
    redirect_uri: &str,
) -> Result<Client, OAuthError> {
    let supported = plan
        .metadata
        .token_endpoint_auth_methods_supported
        .as_deref();
    if let (Some(id), Some(pem)) = (&settings.client_id, &settings.private_key_pem) {
        // RFC 7523 §3: the audience identifies the authorization server.
        let audience = plan
            .metadata
            .issuer
            .clone()
            .unwrap_or_else(|| plan.token_endpoint.clone());
        return Ok(Client {
            client_id: id.clone(),
            client_secret: None,
            auth: ClientAuth::PrivateKeyJwt,
            assertion_key: Some(AssertionKey {
                pem: pem.clone(),
                algorithm: settings
                    .signing_algorithm
                    .clone()
                    .unwrap_or_else(|| "ES256".to_owned()),
                audience,
            }),
        });
    }
    if let Some(id) = &settings.client_id {
        return Ok(Client {
            client_id: id.clone(),
            client_secret: settings.client_secret.clone(),
            auth: grant::choose_auth(settings.client_secret.is_some(), supported),
            assertion_key: None,
        });
    }
    if let Some(url) = &settings.client_metadata_url
        && plan.metadata.client_id_metadata_document_supported == Some(true)
    {
        return Ok(Client {
            client_id: url.clone(),
            client_secret: None,
            auth: ClientAuth::None,
            assertion_key: None,
        });
    }
    match &plan.registration_endpoint {
        Some(endpoint) => {
            grant::register(
                http,
                endpoint,
                redirect_uri,
                plan.scope.as_deref(),
                supported,
            )
            .await
        }
        None => Err(OAuthError::NoClient),
    }
}

/// Whether the token comes without a user: a configured confidential
/// client at a server that grants `client_credentials` and not codes.
pub fn uses_client_credentials(plan: &Plan, settings: &OAuthSettings) -> bool {
    let grants = plan
        .metadata
        .grant_types_supported
        .as_deref()
        .unwrap_or(&[]);
    settings.client_id.is_some()
        && (settings.client_secret.is_some() || settings.private_key_pem.is_some())
        && grants.iter().any(|g| g == "client_credentials")
        && !grants.iter().any(|g| g == "authorization_code")
}

pub async fn client_credentials(
    http: &reqwest::Client,
    plan: &Plan,
    settings: &OAuthSettings,
) -> Result<StoredToken, OAuthError> {
    let client = client(http, plan, settings, "").await?;
    let mut fields = Vec::new();
    if let Some(scope) = &plan.scope {
        fields.push(("scope", scope.clone()));
    }
    let request = TokenRequest {
        token_url: &plan.token_endpoint,
        client: &client,
        resource: plan.resource.as_deref(),
        grant: "client_credentials",
        fields,
    };
    let mut token = grant::token(http, request, None).await?;
    // RFC 6749 §5.1: no `scope` in the answer means the one asked for.
    if token.scope.is_none() {
        token.scope = plan.scope.clone();
    }
    Ok(token)
}

/// A login waiting for its redirect.
pub struct Login {
    /// Where the user (or a probe) goes to authorize.
    pub url: String,
    loopback: Loopback,
    pkce: Pkce,
    state: String,
    plan: Plan,
    client: Client,
}

/// The authorization URL: the code flow with PKCE S256, `state`, the
/// scope when there is one, and the resource.
pub fn authorization_url(
    plan: &Plan,
    client: &Client,
    redirect_uri: &str,
    pkce: &Pkce,
    state: &str,
) -> Result<String, OAuthError> {
    let mut u = url(&plan.authorization_endpoint)?;
    {
        let mut q = u.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &client.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state);
        if let Some(scope) = &plan.scope {
            q.append_pair("scope", scope);
        }
        if let Some(resource) = &plan.resource {
            q.append_pair("resource", resource);
        }
    }
    Ok(u.to_string())
}

/// Binds the loopback listener, gets a client and builds the URL.
pub async fn begin(
    http: &reqwest::Client,
    plan: Plan,
    settings: &OAuthSettings,
) -> Result<Login, OAuthError> {
    let loopback = Loopback::bind(settings.redirect_uri.as_deref()).await?;
    let client = client(http, &plan, settings, &loopback.redirect_uri).await?;
    let pkce = Pkce::new();
    let state = random_token();
    let url = authorization_url(&plan, &client, &loopback.redirect_uri, &pkce, &state)?;
    Ok(Login {
        url,
        loopback,
        pkce,
        state,
        plan,
        client,
    })
}

impl Login {
    /// Waits for the redirect (at most `timeout`), checks its `state`,
    /// and exchanges the code.
    pub async fn complete(
        self,
        http: &reqwest::Client,
        timeout: Duration,
    ) -> Result<StoredToken, OAuthError> {
        let redirect_uri = self.loopback.redirect_uri.clone();
        let params = self.loopback.wait(timeout).await?;
        exchange(
            http,
            &self.plan,
            &self.client,
            &self.pkce,
            &self.state,
            &redirect_uri,
            &params,
        )
        .await
    }
}

async fn exchange(
    http: &reqwest::Client,
    plan: &Plan,
    client: &Client,
    pkce: &Pkce,
    state: &str,
    redirect_uri: &str,
    params: &BTreeMap<String, String>,
) -> Result<StoredToken, OAuthError> {
    if let Some(error) = params.get("error") {
        let description = params.get("error_description").cloned().unwrap_or_default();
        return Err(OAuthError::Redirect(format!("error {error} {description}")));
    }
    if params.get("state").map(String::as_str) != Some(state) {
        return Err(OAuthError::Redirect(
            "a state that is not this login's".into(),
        ));
    }
    let Some(code) = params.get("code") else {
        return Err(OAuthError::Redirect("no code".into()));
    };
    let request = TokenRequest {
        token_url: &plan.token_endpoint,
        client,
        resource: plan.resource.as_deref(),
        grant: "authorization_code",
        fields: vec![
            ("code", code.clone()),
            ("redirect_uri", redirect_uri.to_owned()),
            ("code_verifier", pkce.verifier.clone()),
        ],
    };
    let mut token = grant::token(http, request, None).await?;
    // RFC 6749 §5.1: no `scope` in the answer means the one asked for.
    if token.scope.is_none() {
        token.scope = plan.scope.clone();
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_comes_from_settings_then_challenge_then_resource() {
        let prm = ResourceMetadata {
            scopes_supported: Some(vec!["r1".into(), "r2".into()]),
            ..Default::default()
        };
        let challenge = Challenge {
            scope: Some("c1".into()),
            ..Default::default()
        };
        let none = ServerMetadata::default();
        let settings = OAuthSettings::default();
        assert_eq!(
            choose_scope(&settings, &challenge, Some(&prm), &none).as_deref(),
            Some("c1")
        );
        assert_eq!(
            choose_scope(&settings, &Challenge::default(), Some(&prm), &none).as_deref(),
            Some("r1 r2")
        );
        assert_eq!(
            choose_scope(&settings, &Challenge::default(), None, &none),
            None
        );
        let configured = OAuthSettings {
            scopes: vec!["s".into()],
            ..Default::default()
        };
        let offline = ServerMetadata {
            scopes_supported: Some(vec!["offline_access".into()]),
            ..Default::default()
        };
        assert_eq!(
            choose_scope(&configured, &challenge, Some(&prm), &offline).as_deref(),
            Some("s offline_access")
        );
    }

    #[test]
    fn a_step_up_asks_for_the_granted_scope_widened() {
        assert_eq!(
            scope_union(Some("a b"), Some("b c")).as_deref(),
            Some("a b c")
        );
        assert_eq!(scope_union(None, Some("c")).as_deref(), Some("c"));
        assert_eq!(scope_union(Some(" "), None), None);
        assert!(scope_covers(Some("a b c"), "c a"));
        assert!(!scope_covers(Some("a"), "a b"));
        assert!(!scope_covers(None, "a"));
        assert!(scope_covers(None, ""));
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_scope_and_resource() {
        let plan = Plan {
            resource: Some("http://h/mcp".into()),
            authorization_endpoint: "http://a/authorize?x=1".into(),
            token_endpoint: "http://a/token".into(),
            registration_endpoint: None,
            scope: Some("a b".into()),
            metadata: ServerMetadata::default(),
        };
        let client = Client {
            client_id: "c".into(),
            client_secret: None,
            auth: super::super::store::ClientAuth::None,
            assertion_key: None,
        };
        let pkce = Pkce::new();
        let u = authorization_url(&plan, &client, "http://127.0.0.1:9/cb", &pkce, "st").unwrap();
        let u = Url::parse(&u).unwrap();
        let q: BTreeMap<String, String> = u.query_pairs().into_owned().collect();
        assert_eq!(q["x"], "1");
        assert_eq!(q["code_challenge"], pkce.challenge);
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["state"], "st");
        assert_eq!(q["scope"], "a b");
        assert_eq!(q["resource"], "http://h/mcp");
        assert_eq!(q["redirect_uri"], "http://127.0.0.1:9/cb");
    }
}

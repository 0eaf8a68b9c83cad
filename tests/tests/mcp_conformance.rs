//! The MCP conformance suite's client scenarios, with `gemctl mcp probe`
//! as the client under test: the daemon's MCP client, reached through
//! `mcp.probe`. In the `auth/*` ones the probe authorizes as a configured
//! server does (the same discovery, registration, PKCE and token code);
//! the login's authorization URL is followed by the daemon itself, since
//! the suite's authorization server approves at once.
//!
//! All 26 client scenarios run, `auth/*` included: scope step-up on a 403
//! (`scope-step-up`), a client ID metadata document URL as the client id
//! (`basic-cimd`, given by `--client-metadata-url`), `private_key_jwt`
//! (`client-credentials-jwt`) and cross-app access
//! (`cross-app-access-complete-flow`), the last two from what the suite
//! passes in `MCP_CONFORMANCE_CONTEXT`.

mod peers;

use std::process::Command;

use geminid_tests::TestDaemon;

fn scenario(name: &str) {
    scenario_with(name, "");
}

/// Runs scenario `name` with `options` for `gemctl mcp probe`.
fn scenario_with(name: &str, options: &str) {
    let p = peers::peers();
    let daemon = TestDaemon::start();
    let out_dir = tempfile::tempdir().expect("tempdir");
    let command = format!(
        "{} mcp probe {options}",
        geminid_tests::gemctl_bin().display()
    );
    // `npx` inside the peers folder runs the suite on its Node 22.
    let out = Command::new("npx")
        .args([
            "conformance",
            "client",
            "--command",
            &command,
            "--scenario",
            name,
            "-o",
        ])
        .arg(out_dir.path())
        .current_dir(&p)
        .env("GEMINID_SOCKET", &daemon.socket)
        .output()
        .expect("npx conformance");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("OVERALL: PASSED"),
        "{name} ({}): {text}",
        out.status
    );
}

#[test]
fn initialize() {
    scenario("initialize");
}

#[test]
fn tools_call() {
    scenario("tools_call");
}

#[test]
fn elicitation_defaults() {
    scenario("elicitation-sep1034-client-defaults");
}

#[test]
fn sse_retry() {
    scenario("sse-retry");
}

/// The suite's authorization server expects this client ID metadata
/// document URL (it fetches nothing: the URL is the client id).
#[test]
fn auth_basic_cimd() {
    scenario_with(
        "auth/basic-cimd",
        "--client-metadata-url https://conformance-test.local/client-metadata.json",
    );
}

/// One test per `auth/*` scenario geminid passes.
macro_rules! auth_scenarios {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                scenario(concat!("auth/", $name));
            }
        )*
    };
}

auth_scenarios! {
    auth_metadata_default => "metadata-default",
    auth_metadata_var1 => "metadata-var1",
    auth_metadata_var2 => "metadata-var2",
    auth_metadata_var3 => "metadata-var3",
    auth_scope_from_www_authenticate => "scope-from-www-authenticate",
    auth_scope_from_scopes_supported => "scope-from-scopes-supported",
    auth_scope_omitted_when_undefined => "scope-omitted-when-undefined",
    auth_scope_retry_limit => "scope-retry-limit",
    auth_token_endpoint_auth_basic => "token-endpoint-auth-basic",
    auth_token_endpoint_auth_post => "token-endpoint-auth-post",
    auth_token_endpoint_auth_none => "token-endpoint-auth-none",
    auth_pre_registration => "pre-registration",
    auth_2025_03_26_oauth_metadata_backcompat => "2025-03-26-oauth-metadata-backcompat",
    auth_2025_03_26_oauth_endpoint_fallback => "2025-03-26-oauth-endpoint-fallback",
    auth_resource_mismatch => "resource-mismatch",
    auth_offline_access_scope => "offline-access-scope",
    auth_offline_access_not_supported => "offline-access-not-supported",
    auth_client_credentials_basic => "client-credentials-basic",
    auth_scope_step_up => "scope-step-up",
    auth_client_credentials_jwt => "client-credentials-jwt",
    auth_cross_app_access_complete_flow => "cross-app-access-complete-flow",
}

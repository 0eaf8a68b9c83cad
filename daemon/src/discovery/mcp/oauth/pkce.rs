//! PKCE (RFC 7636, S256 only) and the `state` value: random, base64url.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};

/// A verifier and its S256 challenge.
#[derive(Debug, Clone)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

/// 32 random bytes, base64url (43 characters).
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    // The system source does not fail on Linux; if it ever did, a
    // zero-filled value would be guessable, so mix in the time and pid.
    if SystemRandom::new().fill(&mut bytes).is_err() {
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        let digest = ring::digest::digest(&ring::digest::SHA256, seed.as_bytes());
        bytes.copy_from_slice(digest.as_ref());
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

impl Default for Pkce {
    fn default() -> Pkce {
        Pkce::new()
    }
}

impl Pkce {
    pub fn new() -> Pkce {
        let verifier = random_token();
        Pkce {
            challenge: challenge_of(&verifier),
            verifier,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_rfc_7636_appendix_b() {
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let p = Pkce::new();
        assert_eq!(p.verifier.len(), 43);
        assert_ne!(p.verifier, Pkce::new().verifier);
    }
}

//! Vectors made by node's crypto exactly as 0.61's FileKeychain encrypts
//! (salt "box-alice-gemini-cli", IV of 7s, 12 and 16 bytes).

use super::*;

const KEY_HEX: &str = "a45aaadff4c723604ea551478fc2aa785046129848b802cd4adfdcbb71f1fb8f";
const IV12: &str = "070707070707070707070707:c9e340f5fcffe13e7c46edc7a0206225:82e6f355f3acce4d2063b4d6f2457a3afdc0fe076dbebc8e37ece07104b0c3801634cd109b2a3fb6b82e71622b56931d30c0055897210081e7c5af4003e64ab8739d14fda794893fa875c9a89adfc7706c16539d";
const IV16: &str = "07070707070707070707070707070707:7e677fdad954a58bd6daf90098278c1a:74415b47f330fa1e535e1c8d48896c5cf6e6416d0b4eca3a909b4f97b549595ae5e720359a1c7408e38ffba7991cb036673a950ddacf481edc051a09a9c9c55fc4f49f0c9c409fb1983cbf0afebc5da0057ab397";

#[test]
fn the_key_is_node_scrypt_with_its_defaults() {
    assert_eq!(hex::encode(key_for("box-alice-gemini-cli")), KEY_HEX);
}

#[test]
fn a_file_keychain_secret_decrypts_with_either_iv_length() {
    let key = key_for("box-alice-gemini-cli");
    for data in [IV12, IV16] {
        let secrets = parse_secrets(&decrypt(&key, data).unwrap()).unwrap();
        assert_eq!(
            secrets["Gemini CLI Extensions ext abc"]["__secret__API_KEY"],
            "s3cr3t value"
        );
    }
}

#[test]
fn what_does_not_decrypt_says_why() {
    let key = key_for("box-alice-gemini-cli");
    let other = key_for("other-host-gemini-cli");
    assert_eq!(decrypt(&other, IV12).unwrap_err(), "authentication failed");
    assert_eq!(decrypt(&key, "abc").unwrap_err(), "not iv:tag:ciphertext");
    assert_eq!(decrypt(&key, "zz:00:00").unwrap_err(), "the IV is not hex");
    let short_iv = IV12.replacen("070707070707070707070707", "0707", 1);
    assert_eq!(
        decrypt(&key, &short_iv).unwrap_err(),
        "the IV is not 12 or 16 bytes"
    );
    let mut tampered = IV12.to_owned();
    tampered.pop();
    tampered.push('e');
    assert_eq!(
        decrypt(&key, &tampered).unwrap_err(),
        "authentication failed"
    );
}

#[test]
fn the_store_follows_the_environment() {
    let tool = Some(PathBuf::from("/usr/bin/secret-tool"));
    assert_eq!(choose(true, true, tool.clone()), Backend::File);
    assert_eq!(choose(false, false, tool.clone()), Backend::File);
    assert_eq!(
        choose(false, true, tool.clone()),
        Backend::Native {
            secret_tool: PathBuf::from("/usr/bin/secret-tool")
        }
    );
    assert_eq!(choose(false, true, None), Backend::Unreachable);
}

#[test]
fn a_file_that_does_not_decrypt_is_a_problem_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(CREDENTIALS_FILE), IV12).unwrap();
    let mut keychain = Keychain::new(dir.path(), Backend::File);
    assert_eq!(
        keychain.lookup("Gemini CLI Extensions ext abc", "__secret__API_KEY"),
        Lookup::Unreadable
    );
    let problems = keychain.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].message.contains("does not decrypt"),
        "{problems:?}"
    );
}

#[test]
fn a_missing_file_holds_nothing_and_is_no_problem() {
    let dir = tempfile::tempdir().unwrap();
    let mut keychain = Keychain::new(dir.path(), Backend::Unreachable);
    assert_eq!(keychain.lookup("s", "a"), Lookup::Unreachable);
    assert!(keychain.problems().is_empty());
}

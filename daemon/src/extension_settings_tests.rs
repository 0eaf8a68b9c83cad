use super::*;
use crate::extension_id::extension_id;
use crate::keychain::{Backend, Keychain};

#[test]
fn the_id_is_the_hash_of_the_install_source_as_0_61() {
    // sha256("my-ext"), sha256("/src/my-ext"), sha256 of the repo's URL.
    let by_name = extension_id("my-ext", None, None);
    assert_eq!(
        by_name,
        hex::encode(ring::digest::digest(&ring::digest::SHA256, b"my-ext"))
    );
    let local = extension_id("my-ext", Some("/src/my-ext"), Some("local"));
    assert_eq!(
        local,
        hex::encode(ring::digest::digest(&ring::digest::SHA256, b"/src/my-ext"))
    );
    let url = hex::encode(ring::digest::digest(
        &ring::digest::SHA256,
        b"https://github.com/acme/tool",
    ));
    for source in [
        "https://github.com/acme/tool",
        "https://github.com/acme/tool.git",
        "git@github.com:acme/tool.git",
        "acme/tool",
        "https://github.com/acme/tool/tree/main",
    ] {
        assert_eq!(
            extension_id("x", Some(source), Some("git")),
            url,
            "{source}"
        );
    }
    // Not GitHub: the source itself.
    let gitlab = "https://gitlab.com/acme/tool";
    assert_eq!(
        extension_id("x", Some(gitlab), Some("github-release")),
        hex::encode(ring::digest::digest(
            &ring::digest::SHA256,
            gitlab.as_bytes()
        ))
    );
}

#[test]
fn services_name_the_scope() {
    assert_eq!(
        keychain_service("e", "id", &Scope::User),
        "Gemini CLI Extensions e id"
    );
    assert_eq!(
        keychain_service("e", "id", &Scope::Workspace(Path::new("/w"))),
        "Gemini CLI Extensions e id /w"
    );
}

#[test]
fn a_workspace_value_overrides_the_users() {
    let user = vec![
        ("A".to_owned(), "u".to_owned()),
        ("B".to_owned(), "u".to_owned()),
    ];
    let here = vec![("B".to_owned(), "w".to_owned())];
    assert_eq!(
        merged(user.clone(), here.clone()),
        vec![
            ("A".to_owned(), "u".to_owned()),
            ("B".to_owned(), "w".to_owned())
        ]
    );
    assert!(needs_workspace_instance(&user, &merged(user.clone(), here)));
    assert!(!needs_workspace_instance(
        &user,
        &merged(user.clone(), Vec::new())
    ));
}

#[test]
fn extension_config_off_reads_no_values() {
    let home = tempfile::tempdir().unwrap();
    let install = home.path().join("extensions/e");
    std::fs::create_dir_all(&install).unwrap();
    std::fs::write(install.join(".env"), "PLAIN=p\n").unwrap();
    let system = home.path().join("system/settings.json");
    assert!(settings_on(&system, home.path()), "0.61's default");
    std::fs::write(
        home.path().join("settings.json"),
        "{\n  // off\n  \"experimental\": {\"extensionConfig\": false}\n}",
    )
    .unwrap();
    let off = !settings_on(&system, home.path());
    assert!(off);
    let mut ext = Extension {
        name: "e".to_owned(),
        install_dir: install.clone(),
        path: install,
        setting_vars: vec!["PLAIN".to_owned()],
        loaded: true,
        ..Default::default()
    };
    let mut keychain = Keychain::new(home.path(), Backend::File);
    let (on, _) = values_for(&ext, None, &mut keychain);
    assert_eq!(on, vec![("PLAIN".to_owned(), "p".to_owned())]);
    ext.settings_off = off;
    let (values, problems) = values_for(&ext, None, &mut keychain);
    assert!(values.is_empty() && problems.is_empty(), "{values:?}");
    // The system file wins over the user's, as 0.61 merges them.
    std::fs::create_dir_all(system.parent().unwrap()).unwrap();
    std::fs::write(&system, r#"{"experimental": {"extensionConfig": true}}"#).unwrap();
    assert!(settings_on(&system, home.path()));
}

#[test]
fn only_declared_settings_are_read_and_sensitive_ones_prefer_the_keychain() {
    let home = tempfile::tempdir().unwrap();
    let install = home.path().join("extensions/e");
    std::fs::create_dir_all(&install).unwrap();
    std::fs::write(install.join(".env"), "PLAIN=p\nSECRET=from-env\nOTHER=x\n").unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "PLAIN=ws\n").unwrap();
    let ext = Extension {
        name: "e".to_owned(),
        id: "abc".to_owned(),
        install_dir: install.clone(),
        path: install,
        setting_vars: vec!["PLAIN".to_owned(), "SECRET".to_owned()],
        sensitive_vars: vec!["SECRET".to_owned()],
        loaded: true,
        ..Default::default()
    };
    // No credentials file: the sensitive value falls back to the .env's.
    let mut keychain = Keychain::new(home.path(), Backend::File);
    let (user, problems) = scope_values(&ext, &Scope::User, &mut keychain);
    assert!(problems.is_empty());
    assert_eq!(
        user,
        vec![
            ("PLAIN".to_owned(), "p".to_owned()),
            ("SECRET".to_owned(), "from-env".to_owned())
        ]
    );
    let (here, _) = scope_values(&ext, &Scope::Workspace(ws.path()), &mut keychain);
    assert_eq!(here, vec![("PLAIN".to_owned(), "ws".to_owned())]);
    // Unreachable system keychain, nothing in the file: reported, unset.
    std::fs::write(ext.install_dir.join(".env"), "PLAIN=p\n").unwrap();
    let mut keychain = Keychain::new(home.path(), Backend::Unreachable);
    let (user, problems) = scope_values(&ext, &Scope::User, &mut keychain);
    assert_eq!(user, vec![("PLAIN".to_owned(), "p".to_owned())]);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].message.contains("not reachable"),
        "{problems:?}"
    );
}

#[test]
fn an_untrusted_workspace_s_values_are_not_read() {
    let home = tempfile::tempdir().unwrap();
    let install = home.path().join("extensions/e");
    std::fs::create_dir_all(&install).unwrap();
    std::fs::write(install.join(".env"), "MODE=user\n").unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "MODE=ws\n").unwrap();
    let ext = Extension {
        name: "e".to_owned(),
        id: "abc".to_owned(),
        install_dir: install.clone(),
        path: install,
        setting_vars: vec!["MODE".to_owned()],
        loaded: true,
        ..Default::default()
    };
    let mut keychain = Keychain::new(home.path(), Backend::File);
    let mode = |v: Vec<(String, String)>| v[0].1.clone();
    assert_eq!(mode(values_for(&ext, None, &mut keychain).0), "user");
    assert_eq!(
        mode(values_for(&ext, Some(ws.path()), &mut keychain).0),
        "ws"
    );
}

#[test]
fn settings_fill_the_manifest_s_variables_and_leave_the_others() {
    let values = vec![("TOKEN".to_owned(), "t1".to_owned())];
    let doc = serde_json::json!({"s": {"args": ["--key=$TOKEN", "${TOKEN}x"],
        "env": {"A": "$HOME", "B": "${OTHER}"}, "timeout": 5}});
    assert_eq!(
        substitute(doc, &values),
        serde_json::json!({"s": {"args": ["--key=t1", "t1x"],
            "env": {"A": "$HOME", "B": "${OTHER}"}, "timeout": 5}})
    );
}

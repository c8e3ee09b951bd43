//! Loading, validating and resolving encryption configurations.

use super::*;

const KEY1: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; // 32 bytes
const KEY16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng=="; // 16 bytes

fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("enc.yaml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    (dir, path)
}

fn load_text(text: &str) -> Result<Configured, String> {
    let (_dir, path) = write(text);
    load(&path).map_err(|e| e.to_string())
}

fn config(resources: &str, providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: {resources}\n  providers:\n{providers}"
    )
}

#[test]
fn valid_config_encrypts_with_the_first_provider() {
    let text = config(
        "[secrets, configmaps]",
        &format!("  - aescbc:\n      keys:\n      - name: key1\n        secret: {KEY1}\n  - identity: {{}}\n"),
    );
    let configured = load_text(&text).unwrap_or_else(|e| panic!("{e}"));
    let secrets = configured.get(&(String::new(), "secrets".to_owned()));
    let stored = secrets.map(|t| t.transform_to_storage(&Bytes::from_static(b"{}"), b"/k"));
    assert!(matches!(stored, Some(Ok(b)) if b.starts_with(b"k8s:enc:aescbc:v1:key1:")));
    assert!(configured.contains_key(&(String::new(), "configmaps".to_owned())));
}

#[test]
fn invalid_configs_are_refused_with_upstream_messages() {
    let cases = [
        (
            config("[secrets]", &format!("  - aescbc:\n      keys:\n      - name: k\n        secret: {KEY16}\n    identity: {{}}\n")),
            "more than one provider specified in a single element",
        ),
        (
            config("[secrets]", "  - secretbox:\n      keys:\n      - name: k\n        secret: MTIzNDU2Nzg5MDEyMzQ1Ng==\n"),
            "resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]",
        ),
        (
            config("[secrets]", "  - aesgcm:\n      keys:\n      - name: k\n        secret: '!!'\n"),
            "secrets must be base64 encoded",
        ),
        (
            config("[Secrets, '*']", "  - identity: {}\n"),
            "resource name should not contain capital letters",
        ),
        (
            config("[secrets, '*.']", "  - identity: {}\n"),
            "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed",
        ),
        (
            config("[events.events.k8s.io]", "  - identity: {}\n"),
            "Use 'events' instead in the config file",
        ),
        (
            config("[secrets]", "  - kms:\n      apiVersion: v2\n      name: vault\n      endpoint: unix:///kms.sock\n"),
            "KMS provider \"vault\": KMS encryption is not built into this server",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\n".to_owned(),
            "got unexpected config type: v1, Kind=ConfigMap",
        ),
        ("\n".to_owned(), "is empty"),
    ];
    for (text, want) in cases {
        let err = load_text(&text).err().unwrap_or_default();
        assert!(
            err.contains(want),
            "{want:?} not in {err:?}\nconfig:\n{text}"
        );
    }
    let masked = format!(
        "{}- resources: [secrets]\n  providers:\n  - identity: {{}}\n",
        config("['*.']", "  - identity: {}\n")
    );
    assert_eq!(
        load_text(&masked).err().as_deref(),
        Some("error while building transformers: resource \"secrets.\" is masked by earlier rule \"*.\"")
    );
}

#[test]
fn rules_follow_key_roots_and_wildcards() {
    let text = format!(
        "{}- resources: ['*.apps', widgets.example.com]\n  providers:\n  - identity: {{}}\n- resources: ['*.*']\n  providers:\n  - secretbox:\n      keys: [{{name: s, secret: {KEY1}}}]\n",
        config("[services, nodes]", &format!("  - aesgcm:\n      keys: [{{name: g, secret: {KEY16}}}]\n"))
    );
    let configured = load_text(&text).unwrap_or_else(|e| panic!("{e}"));
    let catalogue = vec![
        (
            "".to_owned(),
            "services".to_owned(),
            "services/specs".to_owned(),
        ),
        ("".to_owned(), "nodes".to_owned(), "minions".to_owned()),
        ("".to_owned(), "secrets".to_owned(), "secrets".to_owned()),
        (
            "apps".to_owned(),
            "deployments".to_owned(),
            "deployments".to_owned(),
        ),
    ];
    let rules = rules(&configured, &catalogue, "/registry/");
    let prefixes: Vec<&str> = rules.prefixes().collect();
    for want in [
        "/registry/services/specs/",
        "/registry/minions/",
        "/registry/secrets/",
        "/registry/deployments/",
        "/registry/apps/",
        "/registry/example.com/widgets/",
        "/registry/",
    ] {
        assert!(prefixes.contains(&want), "{want} missing from {prefixes:?}");
    }
    let plain = Bytes::from_static(b"{}");
    let stored = |key: &str| {
        rules
            .for_key(key)
            .map(|t| t.transform_to_storage(&plain, key.as_bytes()))
    };
    assert!(
        matches!(stored("/registry/minions/n1"), Some(Ok(b)) if b.starts_with(b"k8s:enc:aesgcm:v1:g:"))
    );
    assert!(matches!(stored("/registry/deployments/ns/d"), Some(Ok(b)) if b == plain));
    assert!(
        matches!(stored("/registry/secrets/ns/s"), Some(Ok(b)) if b.starts_with(b"k8s:enc:secretbox:v1:s:"))
    );
    assert!(matches!(stored("/registry/example.com/widgets/ns/w"), Some(Ok(b)) if b == plain));
}

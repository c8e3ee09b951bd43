//! Loading, validating and resolving encryption configurations.

use std::time::Duration;

use bytes::Bytes;
use storage::value::Transformer;

use super::health::check_all;
use super::rules::rules;
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
    load_with(text, LoadSettings::default()).map(|l| l.configured)
}

fn load_with(text: &str, settings: LoadSettings) -> Result<Loaded, String> {
    let (_dir, path) = write(text);
    load(&path, settings).map_err(|e| e.to_string())
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
            config("[secrets]", "  - kms:\n      name: vault\n      endpoint: unix:///kms.sock\n"),
            "error while building transformers: KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.  Set --feature-gates=KMSv1=true to use the deprecated KMSv1 feature.",
        ),
        (
            config("[secrets]", &kms_v2("a:b", "unix:///kms.sock", "")),
            "resources[0].providers[0].kms.name: Invalid value: \"a:b\": invalid KMS provider name a:b, must not contain ':'",
        ),
        (
            config("[secrets]", &kms_v2("k", "https://kms.example.com", "")),
            "resources[0].providers[0].kms.endpoint: Invalid value: \"https://kms.example.com\": unsupported scheme \"https\" for KMS provider, only unix is supported",
        ),
        (
            config("[secrets]", &kms_v2("k", "unix:///kms.sock", "      timeout: 0s\n      cachesize: 10\n")),
            "resources[0].providers[0].kms.timeout: Invalid value: \"0s\": timeout should be a positive value, resources[0].providers[0].kms.cachesize: Invalid value: 10: cachesize is not supported in v2",
        ),
        (
            config("[secrets]", &(kms_v2("k", "unix:///a.sock", "") + &kms_v2("k", "unix:///b.sock", ""))),
            "resources[0].providers[1].kms.name: Invalid value: \"k\": duplicate KMS provider name k, names must be unique",
        ),
        (
            config("[secrets]", &kms_v2("k", "unix:///kms.sock", "      timeout: soon\n")),
            "time: invalid duration \"soon\"",
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

fn kms_v2(name: &str, endpoint: &str, extra: &str) -> String {
    format!(
        "  - kms:\n      apiVersion: v2\n      name: {name}\n      endpoint: {endpoint}\n{extra}"
    )
}

#[test]
fn kms_v1_needs_its_gate_and_is_not_built() {
    let text = config(
        "[secrets]",
        "  - kms:\n      apiVersion: v1\n      name: old\n      endpoint: unix:///kms.sock\n",
    );
    let settings = LoadSettings {
        kms_v1: true,
        ..LoadSettings::default()
    };
    assert!(
        load_with(&text, settings).err().is_some_and(
            |e| e.contains("could not configure KMS plugin \"old\": KMS v1 is not built")
        )
    );
}

#[test]
fn kms_v2_providers_write_under_their_prefix_once_their_plugin_answered() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let _runtime = rt.enter();
    let text = config(
        "[secrets, configmaps]",
        &(kms_v2(
            "vault",
            "unix:///nonexistent/kms.sock",
            "      timeout: 1s\n",
        ) + "  - identity: {}\n"),
    );
    let loaded = load_with(&text, LoadSettings::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.kms.len(), 1, "one provider shared by both resources");
    assert_eq!(loaded.kms[0].prefix(), "k8s:enc:kms:v2:vault:");
    assert_eq!(loaded.kms[0].timeout(), Duration::from_secs(1));
    let secrets = loaded
        .configured
        .get(&(String::new(), "secrets".to_owned()));
    // No plugin has answered: writes fail rather than store plain data.
    let stored = secrets.map(|t| t.transform_to_storage(&Bytes::from_static(b"{}"), b"/k"));
    assert!(
        matches!(&stored, Some(Err(e)) if e.to_string() == "got unexpected nil transformer"),
        "{stored:?}"
    );
    let err = rt
        .block_on(check_all(&loaded.kms))
        .err()
        .unwrap_or_default();
    assert!(
        err.starts_with("kms-provider-0: failed to perform status section of the healthz check for KMS Provider vault"),
        "{err}"
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

//! KMS v2 encryption at rest through the binary: `kms-test-plugin` (built
//! beside `kube-apiserver` by `cargo build --workspace --bins`) serves the
//! KMS v2 gRPC API on a unix socket; secrets reach storage (the embedded
//! store or etcd) as `k8s:enc:kms:v2:<provider>:` and upstream's
//! EncryptedObject, read back across a restart, the plugin's health is
//! `/healthz` and `/readyz`'s `kms-providers` check, and with the plugin
//! down reads and writes fail with 500 InternalError while nothing is
//! stored in the clear; automatic reload moves a running server onto the
//! plugin (on etcd only: reading the embedded store restarts the server,
//! which reloads the file anyway).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::harness::Backend;

const PREFIX: &[u8] = b"k8s:enc:kms:v2:test-kms:";

/// The test plugin, stopped (SIGKILL) when dropped.
struct Plugin(Child);

impl Plugin {
    fn start(socket: &Path, key_id: &str) -> Plugin {
        let binary =
            Path::new(env!("CARGO_BIN_EXE_kube-apiserver")).with_file_name("kms-test-plugin");
        assert!(
            binary.exists(),
            "{} is missing: build it with `cargo build --workspace --bins`",
            binary.display()
        );
        let child = Command::new(binary)
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--key-id={key_id}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kms-test-plugin starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "the plugin did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Plugin(child)
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const IDENTITY: &str = "      - identity: {}\n";

fn kms_provider(socket: &Path) -> String {
    format!(
        "      - kms:\n          apiVersion: v2\n          name: test-kms\n          endpoint: unix://{}\n          timeout: 3s\n",
        socket.display()
    )
}

/// Writes the configuration (secrets with `providers`); its path.
fn write_config(dir: &Path, providers: &str) -> PathBuf {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n{providers}"
    );
    let path = dir.join("enc.yaml");
    std::fs::write(&path, text).expect("write config");
    path
}

fn config(dir: &Path, socket: &Path) -> PathBuf {
    write_config(dir, &(kms_provider(socket) + IDENTITY))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn secrets_are_envelope_encrypted_by_a_kms_v2_plugin(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let socket = files.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1");
    let flag = format!(
        "--encryption-provider-config={}",
        config(files.path(), &socket).display()
    );
    // With the plugin down the Secrets' watch cache cannot load: readiness
    // (and liveness, which has the post-start hooks) waits for it 2 s.
    let mut s = backend.start_with(&[&flag, "--storage-initialization-timeout=2s"]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=password=hunter2",
    ]);
    let password = ["get", "secret", "s1", "-o", "jsonpath={.data.password}"];
    assert_eq!(s.ok(&password), "aHVudGVyMg==");

    // Upstream's check names: on /healthz and /readyz, not on /livez.
    assert_eq!(s.ok(&["get", "--raw", "/readyz/kms-providers"]), "ok");
    assert_eq!(s.ok(&["get", "--raw", "/healthz/kms-providers"]), "ok");
    assert!(s
        .ok(&["get", "--raw", "/readyz?verbose"])
        .contains("[+]kms-providers ok"));
    assert!(!s.ok(&["get", "--raw", "/livez?verbose"]).contains("kms"));
    s.fails(&["get", "--raw", "/livez/kms-providers"]);

    // A restarted server gets the DEK back through the plugin.
    s.restart();
    assert_eq!(s.ok(&password), "aHVudGVyMg==");
    s.ok(&["label", "secret", "s1", "restarted=yes"]);

    let raw = s.stored("/registry/secrets/default/s1").expect("s1 stored");
    assert!(
        raw.starts_with(PREFIX),
        "{:?}",
        String::from_utf8_lossy(&raw[..raw.len().min(40)])
    );
    for plain in [&b"hunter2"[..], b"aHVudGVyMg==", b"restarted", b"Secret"] {
        assert!(
            !contains(&raw, plain),
            "{:?} stored in the clear",
            String::from_utf8_lossy(plain)
        );
    }
    let object = kms::object::decode(Bytes::copy_from_slice(&raw[PREFIX.len()..]))
        .expect("an EncryptedObject");
    assert_eq!(object.key_id, "key-1");
    assert_eq!(
        object.encrypted_dek_source_type,
        kms::object::EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32
    );
    assert!(object.annotations.contains_key(kms::plugin::ANNOTATION));

    // With the plugin down the server starts unready and fails reads and
    // writes with 500 InternalError.
    drop(plugin);
    s.restart_until_live();
    s.fails(&["get", "--raw", "/readyz/kms-providers"]);
    let err = s.fails(&["get", "secret", "s1"]);
    assert!(
        err.contains("(InternalError)") && err.contains("Internal error occurred"),
        "{err}"
    );
    let err = s.fails(&["create", "secret", "generic", "s2", "--from-literal=k=open"]);
    assert!(
        err.contains("Internal error occurred") && err.contains("got unexpected nil transformer"),
        "{err}"
    );
    assert_eq!(s.stored("/registry/secrets/default/s2"), None);
}

#[test]
fn automatic_reload_moves_to_a_kms_v2_plugin() {
    let files = tempfile::tempdir().expect("temp dir");
    let socket = files.path().join("kms.sock");
    let _plugin = Plugin::start(&socket, "key-7");
    let config = write_config(files.path(), IDENTITY);
    let mut s = Backend::Etcd.start_with(&[
        &format!("--encryption-provider-config={}", config.display()),
        "--encryption-provider-config-automatic-reload",
    ]);
    // With reload the check exists before any KMS provider does.
    assert_eq!(s.ok(&["get", "--raw", "/readyz/kms-providers"]), "ok");
    s.ok(&[
        "create",
        "secret",
        "generic",
        "before",
        "--from-literal=a=b",
    ]);
    write_config(files.path(), &(kms_provider(&socket) + IDENTITY));
    // The file is checked every few seconds; each attempt writes a secret.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let name = format!("after-{attempt}");
        s.ok(&["create", "secret", "generic", &name, "--from-literal=a=b"]);
        let key = format!("/registry/secrets/default/{name}");
        if s.stored(&key).is_some_and(|v| v.starts_with(PREFIX)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the KMS configuration was not picked up"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let stored = s
        .stored(&format!("/registry/secrets/default/after-{attempt}"))
        .expect("stored");
    let object = kms::object::decode(Bytes::copy_from_slice(&stored[PREFIX.len()..]))
        .expect("an EncryptedObject");
    assert_eq!(object.key_id, "key-7");
    assert!(s
        .ok(&["get", "--raw", "/healthz?verbose"])
        .contains("[+]kms-providers ok"));
    for name in ["before".to_owned(), format!("after-{attempt}")] {
        assert_eq!(
            s.ok(&["get", "secret", &name, "-o", "jsonpath={.data.a}"]),
            "Yg=="
        );
    }
}

crate::harness::on_both_backends!(backend: secrets_are_envelope_encrypted_by_a_kms_v2_plugin);

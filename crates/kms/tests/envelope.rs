//! KMS v2 envelope encryption against a real gRPC plugin (the local-key
//! test plugin) served on a unix socket in a temporary directory: round
//! trips and the stored layout, DEK reuse, key ID rotation, and the errors
//! of a plugin that is down or unhealthy.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kms::metrics::Transformation;
use kms::object::{EncryptedDekSourceType, EncryptedObject};
use kms::plugin::{LocalKeyPlugin, PluginState, ANNOTATION};
use kms::{Metrics, Provider, ProviderConfig, Timing};
use prost::Message;
use storage::value::{TransformError, Transformer};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const MASTER: [u8; 32] = [42; 32];
const KEY: &[u8] = b"/registry/secrets/default/s1";

/// A plugin serving until [`Plugin::stop`].
struct Plugin {
    state: Arc<PluginState>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Plugin {
    async fn start(socket: &Path, key_id: &str) -> Plugin {
        let plugin = LocalKeyPlugin::new(MASTER, key_id);
        let state = plugin.state();
        let (tx, rx) = oneshot::channel::<()>();
        let path = socket.to_owned();
        let task = tokio::spawn(async move {
            let stopped = async {
                let _ = rx.await;
            };
            if let Err(e) = plugin.serve(&path, stopped).await {
                panic!("plugin: {e}");
            }
        });
        while !socket.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Plugin {
            state,
            stop: Some(tx),
            task,
        }
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

fn config(socket: &Path, timing: Timing) -> ProviderConfig {
    ProviderConfig {
        name: "test-kms".into(),
        endpoint: format!("unix://{}", socket.display()),
        timeout: Duration::from_secs(3),
        timing,
    }
}

/// Every check asks the plugin (no memoised answers).
fn eager() -> Timing {
    Timing {
        healthy_memo: Duration::ZERO,
        unhealthy_memo: Duration::ZERO,
        ..Timing::default()
    }
}

/// Every measurement a provider reports, as one line each.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Recorder {
    fn push(&self, line: String) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Metrics for Recorder {
    fn key_id_used(&self, t: Transformation, provider: &str, key_id: &str) {
        self.push(format!("{} {provider} {key_id}", t.as_str()));
    }
    fn status_key_id(&self, provider: &str, key_id: &str) {
        self.push(format!("status {provider} {key_id}"));
    }
    fn invalid_status_key_id(&self, provider: &str, error: &'static str) {
        self.push(format!("invalid {provider} {error}"));
    }
    fn dek_cache_miss(&self) {
        self.push("miss".into());
    }
    fn dek_source_cache_size(&self, provider: &str, size: usize) {
        self.push(format!("cache {provider} {size}"));
    }
    fn kms_call(&self, provider: &str, method: &'static str, _: Duration, code: &str) {
        self.push(format!("call {provider} {method} {code}"));
    }
}

async fn provider(socket: &Path, timing: Timing) -> Arc<Provider> {
    measured_provider(socket, timing, Arc::new(Recorder::default())).await
}

async fn measured_provider(socket: &Path, timing: Timing, metrics: Arc<Recorder>) -> Arc<Provider> {
    let p = Provider::new(config(socket, timing), metrics).unwrap_or_else(|e| panic!("{e}"));
    p.start().await.unwrap_or_else(|e| panic!("{e}"));
    p
}

fn write(p: &Provider, data: &[u8]) -> Bytes {
    p.transform_to_storage(&Bytes::copy_from_slice(data), KEY)
        .unwrap_or_else(|e| panic!("write: {e}"))
}

fn read(p: &Provider, stored: &Bytes) -> Result<Bytes, TransformError> {
    p.transform_from_storage(stored, KEY)
}

fn decode(stored: &Bytes) -> EncryptedObject {
    EncryptedObject::decode(stored.clone()).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_round_trip_as_upstream_encrypted_objects() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1").await;
    let p = provider(&socket, eager()).await;
    assert_eq!(p.prefix(), "k8s:enc:kms:v2:test-kms:");
    assert_eq!(p.write_key_id().as_deref(), Some("key-1"));

    let plain = b"{\"kind\":\"Secret\",\"data\":{\"password\":\"aHVudGVyMg==\"}}";
    let stored = write(&p, plain);
    assert!(!stored.windows(12).any(|w| w == b"aHVudGVyMg=="));
    let object = decode(&stored);
    // The stored bytes are exactly the message's canonical encoding.
    assert_eq!(Bytes::from(object.encode_to_vec()), stored);
    assert_eq!(object.key_id, "key-1");
    assert_eq!(
        object.encrypted_dek_source_type,
        EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32
    );
    assert_eq!(
        object.annotations.get(ANNOTATION),
        Some(&Bytes::from_static(b"v1"))
    );
    // The plugin's ciphertext of a 32-byte seed: nonce, seed, tag.
    assert_eq!(object.encrypted_dek_source.len(), 12 + 32 + 16);
    // HKDF info, nonce, ciphertext, tag.
    assert_eq!(object.encrypted_data.len(), 32 + 12 + plain.len() + 16);
    assert_eq!(read(&p, &stored), Ok(Bytes::copy_from_slice(plain)));

    // The storage key is authenticated: a value moved elsewhere is refused.
    assert!(p
        .transform_from_storage(&stored, b"/registry/secrets/x/y")
        .is_err());
    // So is anything that is not an EncryptedObject.
    assert_eq!(
        read(&p, &Bytes::from_static(b"\xff\xff\xff")),
        Err(TransformError::Provider(
            "proto: cannot parse invalid wire-format data".into()
        ))
    );
    plugin.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_dek_serves_many_writes_and_is_decrypted_once_after_a_restart() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1").await;
    let p = provider(&socket, eager()).await;
    let stored: Vec<Bytes> = (0..20)
        .map(|i| write(&p, format!("v{i}").as_bytes()))
        .collect();
    assert_eq!(
        plugin.state.encrypt_calls(),
        1,
        "one DEK seed for every write"
    );
    let sources: Vec<Bytes> = stored
        .iter()
        .map(|s| decode(s).encrypted_dek_source)
        .collect();
    assert!(sources.windows(2).all(|w| w[0] == w[1]));
    for (i, s) in stored.iter().enumerate() {
        assert_eq!(read(&p, s), Ok(Bytes::from(format!("v{i}"))));
    }
    assert_eq!(
        plugin.state.decrypt_calls(),
        0,
        "the write DEK reads its own values"
    );

    // A new provider (a restarted server) has its own seed; the old one is
    // decrypted by the plugin once, then cached.
    let restarted = provider(&socket, eager()).await;
    assert_eq!(plugin.state.encrypt_calls(), 2);
    for (i, s) in stored.iter().enumerate() {
        assert_eq!(read(&restarted, s), Ok(Bytes::from(format!("v{i}"))));
    }
    assert_eq!(plugin.state.decrypt_calls(), 1);
    assert!(restarted.cached_deks() >= 2);
    plugin.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_key_id_gets_a_new_dek_and_old_values_still_read() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1").await;
    let p = provider(&socket, eager()).await;
    let old = write(&p, b"old");
    p.check().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plugin.state.encrypt_calls(), 1, "same key ID: DEK kept");

    plugin.state.set_key_id("key-2");
    p.check().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plugin.state.encrypt_calls(), 2);
    assert_eq!(p.write_key_id().as_deref(), Some("key-2"));
    let new = write(&p, b"new");
    assert_eq!(decode(&new).key_id, "key-2");
    assert_ne!(
        decode(&new).encrypted_dek_source,
        decode(&old).encrypted_dek_source
    );
    assert_eq!(read(&p, &old), Ok(Bytes::from_static(b"old")));
    assert_eq!(read(&p, &new), Ok(Bytes::from_static(b"new")));

    // Old values decrypt through the plugin under their own key ID.
    let fresh = provider(&socket, eager()).await;
    assert_eq!(read(&fresh, &old), Ok(Bytes::from_static(b"old")));
    plugin.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_never_answered_fails_reads_and_writes() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1").await;
    let stored = write(&*provider(&socket, eager()).await, b"secret");
    plugin.stop().await;

    let p = Provider::new(config(&socket, eager()), Arc::new(Recorder::default()))
        .unwrap_or_else(|e| panic!("{e}"));
    let err = p.start().await.err().unwrap_or_default();
    assert!(
        err.starts_with(
            "failed to perform status section of the healthz check for KMS Provider test-kms, error: rpc error: code = "
        ),
        "{err}"
    );
    let nil = Err(TransformError::Provider(
        "got unexpected nil transformer".into(),
    ));
    assert_eq!(p.transform_to_storage(&Bytes::from_static(b"x"), KEY), nil);
    assert_eq!(read(&p, &stored), nil);

    // Once the plugin is back, the next probe makes the provider usable.
    let plugin = Plugin::start(&socket, "key-1").await;
    p.check().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read(&p, &stored), Ok(Bytes::from_static(b"secret")));
    plugin.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_coast_on_the_dek_until_it_expires_while_the_plugin_is_down() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1").await;
    let other = write(&*provider(&socket, eager()).await, b"other");
    let timing = Timing {
        write_dek_ttl: Duration::from_millis(400),
        ..eager()
    };
    let p = provider(&socket, timing).await;
    plugin.stop().await;

    // Cached DEKs keep working; an uncached one needs the plugin.
    let mine = write(&p, b"mine");
    assert_eq!(read(&p, &mine), Ok(Bytes::from_static(b"mine")));
    let err = read(&p, &other)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with("failed to decrypt DEK, error: rpc error: code = "),
        "{err}"
    );
    assert!(p.check().await.is_err());

    tokio::time::sleep(Duration::from_millis(500)).await;
    let err = p
        .transform_to_storage(&Bytes::from_static(b"late"), KEY)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with("encryptedDEKSource with keyID hash \"sha256:")
            && err.contains(" expired at "),
        "{err}"
    );
    assert_eq!(
        read(&p, &mine),
        Ok(Bytes::from_static(b"mine")),
        "reads never expire"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unhealthy_status_fails_the_check() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1").await;
    let p = provider(&socket, eager()).await;
    plugin.state.set_healthz("disk on fire");
    assert_eq!(
        p.check().await,
        Err("kmsv2 Provider test-kms is not healthy, error: got unexpected healthz status: disk on fire".into())
    );
    plugin.state.set_healthz("ok");
    plugin.state.set_key_id("");
    let err = p.check().await.err().unwrap_or_default();
    assert!(
        err.ends_with("got invalid KMSv2 KeyID hash \"\": keyID is empty"),
        "{err}"
    );
    plugin.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_binary_serves_the_protocol() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("bin.sock");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kms-test-plugin"))
        .arg(format!("--socket={}", socket.display()))
        .args(["--key-id", "bin-key"])
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..500 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let p = provider(&socket, eager()).await;
    assert_eq!(p.write_key_id().as_deref(), Some("bin-key"));
    let stored = write(&p, b"through the binary");
    let fresh = provider(&socket, eager()).await;
    assert_eq!(
        read(&fresh, &stored),
        Ok(Bytes::from_static(b"through the binary"))
    );
    let _ = child.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measurements_are_reported_as_upstream_records_them() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("kms.sock");
    let plugin = Plugin::start(&socket, "key-1").await;
    let first = Arc::new(Recorder::default());
    let p = measured_provider(&socket, eager(), first.clone()).await;
    let stored = write(&p, b"v");
    assert_eq!(read(&p, &stored), Ok(Bytes::from_static(b"v")));
    // The first Status is the provider's own check; background polls may
    // land anywhere after it.
    let lines = first.lines();
    let polled = |l: &String| l.starts_with("status ") || l.ends_with("/Status OK");
    let after_check = lines.iter().skip(2).filter(|l| !polled(l)).cloned();
    let lines: Vec<String> = lines.iter().take(2).cloned().chain(after_check).collect();
    assert_eq!(
        lines,
        [
            "call test-kms /v2.KeyManagementService/Status OK",
            "status test-kms key-1",
            "call test-kms /v2.KeyManagementService/Encrypt OK",
            "cache test-kms 1",
            "to_storage test-kms key-1",
            "from_storage test-kms key-1",
        ]
    );
    // Another provider reads the value by asking the plugin: a cache miss.
    let second = Arc::new(Recorder::default());
    let q = measured_provider(&socket, eager(), second.clone()).await;
    assert_eq!(read(&q, &stored), Ok(Bytes::from_static(b"v")));
    // The provider's background Status polls may land anywhere in between.
    let lines: Vec<String> = second
        .lines()
        .into_iter()
        .filter(|l| !l.starts_with("status ") && !l.ends_with("/Status OK"))
        .collect();
    assert_eq!(
        lines[lines.len() - 4..],
        [
            "miss",
            "call test-kms /v2.KeyManagementService/Decrypt OK",
            "cache test-kms 2",
            "from_storage test-kms key-1",
        ]
    );
    // An empty key ID from Status is counted as invalid.
    plugin.state.set_key_id("");
    assert!(q.check().await.is_err());
    assert_eq!(
        second.lines().last().map(String::as_str),
        Some("invalid test-kms empty")
    );
    plugin.stop().await;
    assert!(q.check().await.is_err());
    let last = second.lines().last().cloned().unwrap_or_default();
    assert!(
        last.starts_with("call test-kms /v2.KeyManagementService/Status ")
            && !last.ends_with(" OK"),
        "{last}"
    );
}

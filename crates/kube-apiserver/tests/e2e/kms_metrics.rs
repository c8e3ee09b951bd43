//! Upstream's encryption metrics on `/metrics` with a KMS v2 provider
//! (`kms-test-plugin`, built beside `kube-apiserver` by `cargo build
//! --workspace --bins`): key ID hashes by direction and from the plugin's
//! Status, plugin call latencies by method and code, transformations by
//! resource and provider prefix, and a DEK cache miss when a restarted
//! server reads a value written before.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::Backend;

const PROVIDER_PREFIX: &str = "k8s:enc:kms:v2:test-kms:";

/// The test plugin, stopped (SIGKILL) when dropped.
struct Plugin(Child);

impl Plugin {
    fn start(socket: &Path) -> Plugin {
        let binary =
            Path::new(env!("CARGO_BIN_EXE_kube-apiserver")).with_file_name("kms-test-plugin");
        assert!(
            binary.exists(),
            "{} is missing: build it with `cargo build --workspace --bins`",
            binary.display()
        );
        let child = Command::new(binary)
            .arg(format!("--socket={}", socket.display()))
            .arg("--key-id=key-1")
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

/// `sha256:<hex>` of a value, as the series label key IDs.
fn hash(value: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, value.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The value of the first series whose line starts with `series`.
fn value(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn kms_writes_and_reads_show_in_the_encryption_metrics(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let socket = files.path().join("kms.sock");
    let _plugin = Plugin::start(&socket);
    let config = files.path().join("enc.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - kms:\n          apiVersion: v2\n          name: test-kms\n          endpoint: unix://{}\n          timeout: 3s\n      - identity: {{}}\n",
            socket.display()
        ),
    )
    .expect("write config");
    let flag = format!("--encryption-provider-config={}", config.display());
    let mut s = backend.start_with(&[&flag]);
    for name in ["a", "b", "c"] {
        s.ok(&["create", "secret", "generic", name, "--from-literal=k=v"]);
    }
    s.ok(&["get", "secret", "a", "-o", "name"]);
    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    let key = hash("key-1");
    let used = format!(
        "apiserver_envelope_encryption_key_id_hash_total{{transformation_type=\"to_storage\",provider_name=\"test-kms\",key_id_hash=\"{key}\",apiserver_id_hash=\"sha256:"
    );
    assert!(
        value(&metrics, &used).is_some_and(|v| v >= 3.0),
        "{metrics}"
    );
    let last = format!(
        "apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds{{transformation_type=\"to_storage\",provider_name=\"test-kms\",key_id_hash=\"{key}\""
    );
    assert!(
        value(&metrics, &last).is_some_and(|v| v > 1.7e9),
        "{metrics}"
    );
    let status = format!(
        "apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds{{provider_name=\"test-kms\",key_id_hash=\"{key}\""
    );
    assert!(value(&metrics, &status).is_some(), "{metrics}");
    let calls = |method: &str| {
        format!("apiserver_envelope_encryption_kms_operations_latency_seconds_count{{provider_name=\"test-kms\",method_name=\"/v2.KeyManagementService/{method}\",grpc_status_code=\"OK\"}}")
    };
    assert_eq!(value(&metrics, &calls("Encrypt")), Some(1.0), "{metrics}");
    assert!(value(&metrics, &calls("Status")).is_some_and(|v| v >= 1.0));
    let writes = format!("apiserver_storage_transformation_operations_total{{resource=\"secrets\",transformation_type=\"to_storage\",transformer_prefix=\"{PROVIDER_PREFIX}\",status=\"OK\"}}");
    assert!(
        value(&metrics, &writes).is_some_and(|v| v >= 3.0),
        "{metrics}"
    );
    let durations = format!("apiserver_storage_transformation_duration_seconds_count{{transformation_type=\"to_storage\",transformer_prefix=\"{PROVIDER_PREFIX}\"}}");
    assert!(
        value(&metrics, &durations).is_some_and(|v| v >= 3.0),
        "{metrics}"
    );
    assert_eq!(
        value(
            &metrics,
            "apiserver_envelope_encryption_dek_cache_fill_percent "
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            &metrics,
            "apiserver_storage_envelope_transformation_cache_misses_total "
        ),
        Some(0.0),
        "the write DEK reads its own values"
    );

    // A restarted server has a new DEK: reading old values asks the
    // plugin (once per concurrent first read: the controllers starting up
    // may read secrets at the same moment as this request).
    s.restart();
    s.ok(&["get", "secrets", "-o", "name"]);
    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    let misses = value(
        &metrics,
        "apiserver_storage_envelope_transformation_cache_misses_total ",
    );
    assert!(misses.is_some_and(|m| m >= 1.0), "{metrics}");
    // Each miss asked the plugin to decrypt the DEK.
    assert_eq!(value(&metrics, &calls("Decrypt")), misses, "{metrics}");
    let reads = format!("apiserver_storage_transformation_operations_total{{resource=\"secrets\",transformation_type=\"from_storage\",transformer_prefix=\"{PROVIDER_PREFIX}\",status=\"OK\"}}");
    assert!(
        value(&metrics, &reads).is_some_and(|v| v >= 3.0),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "apiserver_envelope_encryption_dek_source_cache_size{provider_name=\"test-kms\"} 2"
        ),
        "{metrics}"
    );
}

crate::harness::on_both_backends!(backend: kms_writes_and_reads_show_in_the_encryption_metrics);

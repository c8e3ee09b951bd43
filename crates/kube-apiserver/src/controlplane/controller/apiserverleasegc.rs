//! The API server identity leases (upstream's `APIServerIdentity`:
//! `k8s.io/apiserver/pkg/server/config.go` names the server,
//! `k8s.io/component-helpers/apimachinery/lease` renews its Lease, and
//! `pkg/controlplane/controller/apiserverleasegc` deletes the expired
//! Leases of servers that are gone, found in the Lease informer's cache).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Store, Target, WriteOptions};
use chrono::{DateTime, Utc};
use client_go::tools::cache::{Lister, SharedInformer};
use client_go::CancellationToken;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The namespace of the identity leases.
const NAMESPACE: &str = "kube-system";
/// The label naming the component a lease identifies.
pub const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
const COMPONENT: &str = "kube-apiserver";
/// Upstream's `IdentityLeaseDurationSeconds`.
const LEASE_DURATION_SECONDS: i64 = 3600;
/// Upstream's `IdentityLeaseRenewIntervalPeriod`.
pub const RENEW_INTERVAL: Duration = Duration::from_secs(10);
/// Upstream's `IdentityLeaseGCPeriod`.
pub const GC_PERIOD: Duration = Duration::from_secs(3600);

/// The host name as Go's `os.Hostname` reads it on Linux.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// `apiserver-<hash>`: the first 16 bytes of the SHA-256 of the host name
/// and the component, each prefixed by its 2-byte length, in lower-case
/// unpadded base32 (upstream's `APIServerID`).
pub fn server_id(hostname: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [hostname.as_bytes(), COMPONENT.as_bytes()] {
        let len = u16::try_from(part.len()).unwrap_or(u16::MAX);
        hasher.update(len.to_be_bytes());
        hasher.update(part);
    }
    let hash = hasher.finalize();
    let encoded = data_encoding::BASE32_NOPAD.encode(&hash[..16]);
    format!("apiserver-{}", encoded.to_lowercase())
}

/// Renews this server's lease every [`RENEW_INTERVAL`] until `stop`; the
/// holder is the server's id and a per-process UUID.
pub async fn renew(leases: Arc<Store>, stop: CancellationToken) {
    let host = hostname();
    let id = server_id(&host);
    let holder = format!("{id}_{}", uuid::Uuid::new_v4());
    loop {
        let now = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": id, "namespace": NAMESPACE,
                "labels": {IDENTITY_LABEL: COMPONENT, "kubernetes.io/hostname": host}},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                "renewTime": now},
        });
        if let Err(e) = write(&leases, &id, lease).await {
            tracing::warn!(error = %e.message, "renewing the apiserver identity lease failed");
        }
        tokio::select! {
            () = tokio::time::sleep(RENEW_INTERVAL) => {}
            () = stop.cancelled() => return,
        }
    }
}

async fn write(leases: &Store, name: &str, lease: Value) -> Result<(), ApiError> {
    match leases.create(lease.clone(), &WriteOptions::default()).await {
        Err(ApiError { code: 409, .. }) => {
            let body = Arc::new(lease);
            let mutate = Arc::new(move |_: Option<&Value>| Ok((*body).clone()));
            let opts = WriteOptions::default();
            let updated = leases.update(Some(NAMESPACE), name, Target::Main, mutate, &opts);
            updated.await.map(drop)
        }
        other => other.map(drop),
    }
}

/// Deletes expired identity leases every `period` until `stop`, once the
/// leases' informer has synced: the candidates come from its cache, and
/// each is read again from the store before it is deleted (upstream's
/// `Controller.gc`).
pub async fn collect_garbage(
    informer: Arc<SharedInformer>,
    leases: Arc<Store>,
    period: Duration,
    stop: CancellationToken,
) {
    tokio::select! {
        () = informer.wait_for_sync() => {}
        () = stop.cancelled() => return,
    }
    let lister = informer.lister();
    loop {
        gc(&lister, &leases, Utc::now()).await;
        tokio::select! {
            () = tokio::time::sleep(period) => {}
            () = stop.cancelled() => return,
        }
    }
}

async fn gc(lister: &Lister, leases: &Store, now: DateTime<Utc>) {
    let identities = lister.list_namespace(NAMESPACE);
    let expired = identities
        .iter()
        .filter(|l| {
            l.pointer("/metadata/labels")
                .and_then(|v| v.get(IDENTITY_LABEL))
                == Some(&json!(COMPONENT))
        })
        .filter(|l| is_expired(l, now));
    for lease in expired {
        let name = lease
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        // Another server may have renewed or deleted it since.
        match leases.get(Some(NAMESPACE), name, Default::default()).await {
            Ok(current) if is_expired(&current, now) => {}
            Ok(_) => continue,
            Err(e) if e.code == 404 => continue,
            Err(e) => {
                tracing::error!(error = %e.message, "Error getting lease");
                continue;
            }
        }
        match leases
            .delete(Some(NAMESPACE), name, &Default::default())
            .await
        {
            Ok(_) => tracing::info!(lease = name, "deleted expired apiserver identity lease"),
            Err(e) if e.code == 404 => {}
            Err(e) => tracing::error!(error = %e.message, "Error deleting lease"),
        }
    }
}

/// Upstream's `isLeaseExpired`: no renew time or duration, or renewed
/// longer ago than its duration.
fn is_expired(lease: &Value, now: DateTime<Utc>) -> bool {
    let renewed = lease
        .pointer("/spec/renewTime")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    let duration = lease
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64);
    match (renewed, duration) {
        (Some(renewed), Some(seconds)) => {
            renewed.with_timezone(&Utc) + chrono::Duration::seconds(seconds) < now
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_id_is_upstreams_hash_of_the_host_name() {
        // sha256(00 04 "host" 00 0e "kube-apiserver"), first 16 bytes, base32.
        // Computed apart with Python's hashlib and base64.
        assert_eq!(server_id("host"), "apiserver-dd6egxogzxmivwqge6rcnj6rwi");
        assert_ne!(server_id("host"), server_id("other"));
    }

    #[test]
    fn leases_expire_after_their_duration() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let lease =
            |renewed: &str| json!({"spec": {"renewTime": renewed, "leaseDurationSeconds": 3600}});
        assert!(!is_expired(&lease("2026-01-01T00:30:00.000000Z"), now));
        assert!(is_expired(&lease("2025-12-31T23:59:59.000000Z"), now));
        assert!(is_expired(
            &json!({"spec": {"leaseDurationSeconds": 3600}}),
            now
        ));
    }

    #[tokio::test]
    async fn expired_identity_leases_in_the_cache_are_deleted() {
        use apiserver::registry::store::Strategies;
        use apiserver::registry::ResourceInfo;
        let info = ResourceInfo::testing("coordination.k8s.io", "Lease");
        let leases = Arc::new(Store::in_memory(info, Strategies::default()));
        let lease = |name: &str, component: &str, renewed: &str| {
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": NAMESPACE,
                    "labels": {IDENTITY_LABEL: component}},
                "spec": {"renewTime": renewed, "leaseDurationSeconds": 3600}})
        };
        for (name, component, renewed) in [
            ("gone", COMPONENT, "2025-12-31T23:00:00.000000Z"),
            ("alive", COMPONENT, "2026-01-01T00:30:00.000000Z"),
            ("other", "kube-scheduler", "2025-12-31T23:00:00.000000Z"),
        ] {
            let opts = WriteOptions::default();
            let created = leases.create(lease(name, component, renewed), &opts);
            created.await.unwrap();
        }
        let informer = SharedInformer::new(leases.clone(), None);
        let stop = CancellationToken::new();
        informer.start(&stop);
        informer.wait_for_sync().await;
        let now = DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z").unwrap();
        gc(&informer.lister(), &leases, now.with_timezone(&Utc)).await;
        let left = leases
            .list(Some(NAMESPACE), Default::default())
            .await
            .unwrap();
        let mut names: Vec<_> = left
            .items
            .iter()
            .map(|l| l["metadata"]["name"].clone())
            .collect();
        names.sort_by_key(Value::to_string);
        assert_eq!(names, [json!("alive"), json!("other")]);
        stop.cancel();
    }
}

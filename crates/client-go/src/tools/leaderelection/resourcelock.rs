//! The lock a leader election holds (upstream's
//! `tools/leaderelection/resourcelock`): the [`LeaderElectionRecord`] and
//! the [`LeaseLock`] that keeps it in a `coordination.k8s.io/v1` Lease's
//! spec, written with the Lease's resourceVersion so that of two
//! candidates writing the same state only one succeeds.

use std::sync::{Arc, Mutex};

use apimachinery::status::ApiError;
use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

/// The Lease calls a [`LeaseLock`] makes (upstream's
/// `coordinationv1client.LeasesGetter`); errors are API errors, so a
/// missing Lease is a 404 and a stale resourceVersion a 409.
#[async_trait]
pub trait LeaseClient: Send + Sync + 'static {
    async fn get(&self, namespace: &str, name: &str) -> Result<Value, ApiError>;

    async fn create(&self, lease: Value) -> Result<Value, ApiError>;

    /// Replaces the Lease, refused when its `metadata.resourceVersion` is
    /// no longer the stored one.
    async fn update(&self, lease: Value) -> Result<Value, ApiError>;
}

/// Who holds the lock, since when and for how long (upstream's
/// `LeaderElectionRecord`); an empty holder is a released lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    pub holder_identity: String,
    pub lease_duration_seconds: i64,
    pub acquire_time: Option<DateTime<Utc>>,
    pub renew_time: Option<DateTime<Utc>>,
    pub leader_transitions: i64,
}

impl LeaderElectionRecord {
    /// The record a Lease's spec holds (`LeaseSpecToLeaderElectionRecord`).
    pub fn from_lease_spec(spec: &Value) -> Self {
        let time = |field: &str| {
            spec.get(field)
                .and_then(Value::as_str)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        let int = |field: &str| spec.get(field).and_then(Value::as_i64).unwrap_or(0);
        LeaderElectionRecord {
            holder_identity: spec
                .get("holderIdentity")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            lease_duration_seconds: int("leaseDurationSeconds"),
            acquire_time: time("acquireTime"),
            renew_time: time("renewTime"),
            leader_transitions: int("leaseTransitions"),
        }
    }

    /// The Lease spec holding this record (`LeaderElectionRecordToLeaseSpec`):
    /// every field set, times as `MicroTime`s.
    pub fn to_lease_spec(&self) -> Value {
        let time = |t: Option<DateTime<Utc>>| match t {
            Some(t) => json!(t.to_rfc3339_opts(SecondsFormat::Micros, true)),
            None => Value::Null,
        };
        json!({
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": time(self.acquire_time),
            "renewTime": time(self.renew_time),
            "leaseTransitions": self.leader_transitions,
        })
    }
}

/// A lock on the Lease `namespace/name`, held as `identity` (upstream's
/// `resourcelock.LeaseLock`). It remembers the Lease it last read or
/// wrote, so an update is refused if anyone wrote it since.
pub struct LeaseLock {
    namespace: String,
    name: String,
    identity: String,
    client: Arc<dyn LeaseClient>,
    lease: Mutex<Option<Value>>,
}

impl LeaseLock {
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
        client: Arc<dyn LeaseClient>,
    ) -> Self {
        LeaseLock {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            client,
            lease: Mutex::new(None),
        }
    }

    fn remember(&self, lease: Option<Value>) {
        *self.lease.lock().unwrap_or_else(|e| e.into_inner()) = lease;
    }

    /// Reads the record from the Lease.
    pub async fn get(&self) -> Result<LeaderElectionRecord, ApiError> {
        let lease = self.client.get(&self.namespace, &self.name).await?;
        let record = LeaderElectionRecord::from_lease_spec(&lease["spec"]);
        self.remember(Some(lease));
        Ok(record)
    }

    /// Creates the Lease holding `record`.
    pub async fn create(&self, record: &LeaderElectionRecord) -> Result<(), ApiError> {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_lease_spec(),
        });
        let created = self.client.create(lease).await?;
        self.remember(Some(created));
        Ok(())
    }

    /// Writes `record` over the Lease last read or written.
    pub async fn update(&self, record: &LeaderElectionRecord) -> Result<(), ApiError> {
        let last = self.lease.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(mut lease) = last else {
            return Err(ApiError::internal_error(
                "lease not initialized, call get or create first",
            ));
        };
        lease["spec"] = record.to_lease_spec();
        let updated = self.client.update(lease).await?;
        self.remember(Some(updated));
        Ok(())
    }

    /// `namespace/name`, for logs.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }
}

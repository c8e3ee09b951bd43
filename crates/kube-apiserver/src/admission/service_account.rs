//! The ServiceAccount plugin: every pod runs as a service account (`default`
//! unless named), which must exist; its API credentials are mounted as the
//! projected `kube-api-access-<suffix>` volume in every container, and the
//! account's image pull secrets are used when the pod names none.

use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use apiserver::registry::object_meta::generate_name;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::lookup::{text, Stores};

const DEFAULT_ACCOUNT: &str = "default";
/// Where containers find the token, CA and namespace.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The annotation marking a kubelet's mirror pod.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Lifetime of the projected token (an hour, plus seven seconds so that
/// kubelets can tell admission-injected tokens apart).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// Lookups of the default account, which a controller is expected to
/// create shortly after its namespace.
const DEFAULT_ACCOUNT_ATTEMPTS: u32 = 10;
const RETRY_INTERVAL: Duration = Duration::from_millis(150);

pub struct ServiceAccount {
    pub stores: Stores,
}

impl Handler for ServiceAccount {
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
}

fn is_pod_create(a: &Attributes) -> bool {
    a.is("", "pods") && a.subresource.is_empty()
}

fn is_mirror(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some()
}

impl ServiceAccount {
    /// The account, retried for a while when it is the default one.
    async fn account(&self, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        let attempts = if name == DEFAULT_ACCOUNT {
            DEFAULT_ACCOUNT_ATTEMPTS
        } else {
            1
        };
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(RETRY_INTERVAL).await;
            }
            if let Some(sa) = self
                .stores
                .get("", "serviceaccounts", Some(namespace), name)
                .await?
            {
                return Ok(Some((*sa).clone()));
            }
        }
        Ok(None)
    }
}

#[async_trait]
impl MutationInterface for ServiceAccount {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !is_pod_create(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if is_mirror(pod) {
            return mirror_pod_check(a, pod);
        }
        let name = text(pod, "/spec/serviceAccountName")
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_ACCOUNT)
            .to_owned();
        let Some(sa) = self.account(&a.namespace, &name).await? else {
            return Err(a.forbidden(format!(
                "error looking up service account {}/{name}: serviceaccount \"{name}\" not found",
                a.namespace
            )));
        };
        let mount = automount(&sa, pod);
        let Some(spec) = a.object.as_mut().and_then(|p| object_mut(p, "spec")) else {
            return Ok(());
        };
        spec.insert("serviceAccountName".into(), json!(name));
        if mount {
            mount_token(spec);
        }
        let has_pull_secrets = spec
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .is_some_and(|s| !s.is_empty());
        if let Some(secrets) = sa.get("imagePullSecrets").and_then(Value::as_array) {
            if !has_pull_secrets && !secrets.is_empty() {
                let refs: Vec<Value> = secrets
                    .iter()
                    .map(|s| json!({"name": s.get("name").cloned().unwrap_or(json!(""))}))
                    .collect();
                spec.insert("imagePullSecrets".into(), Value::Array(refs));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ValidationInterface for ServiceAccount {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !is_pod_create(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if is_mirror(pod) {
            return mirror_pod_check(a, pod);
        }
        Ok(())
    }
}

/// Mirror pods are run by a kubelet from a file: they may not use the API's
/// credentials.
fn mirror_pod_check(a: &Attributes, pod: &Value) -> Result<(), ApiError> {
    if text(pod, "/spec/serviceAccountName").is_some_and(|n| !n.is_empty()) {
        return Err(a.forbidden("a mirror pod may not reference service accounts"));
    }
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
    if volumes
        .into_iter()
        .flatten()
        .any(|v| v.get("secret").is_some() || v.get("projected").is_some())
    {
        return Err(a.forbidden("a mirror pod may not reference secrets"));
    }
    Ok(())
}

/// The pod's `automountServiceAccountToken` wins over the account's.
fn automount(sa: &Value, pod: &Value) -> bool {
    pod.pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// The projected volume: a bound token, the cluster CA and the namespace.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ],
            "defaultMode": 420
        }
    })
}

/// The object at `key` of `obj`, created when missing; None when `obj` or
/// the value there is not an object.
pub fn object_mut<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    obj.as_object_mut()?
        .entry(key)
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// Mounts the token volume in every container without a mount at the token
/// path, adding the volume when some container needs it.
fn mount_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with(VOLUME_PREFIX))
                .map(str::to_owned)
        });
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| generate_name(VOLUME_PREFIX));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            let mounts = c
                .as_object_mut()
                .map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])));
            let Some(Value::Array(mounts)) = mounts else {
                continue;
            };
            if mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH))
            {
                continue;
            }
            mounts.push(mount.clone());
            needed = true;
        }
    }
    if needed && existing.is_none() {
        match spec.get_mut("volumes").and_then(Value::as_array_mut) {
            Some(volumes) => volumes.push(token_volume(&volume_name)),
            None => {
                spec.insert("volumes".into(), json!([token_volume(&volume_name)]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_container_mounts_one_projected_volume() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b", "volumeMounts": [
                {"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}],
        }});
        if let Some(spec) = object_mut(&mut pod, "spec") {
            mount_token(spec);
        }
        let volumes = pod["spec"]["volumes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().unwrap_or_default();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(
            pod["spec"]["initContainers"][0]["volumeMounts"][0]["name"],
            name
        );
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0]["readOnly"],
            true
        );
        assert_eq!(
            pod["spec"]["containers"][1]["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        assert_eq!(
            volumes[0]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3607
        );
    }

    #[test]
    fn the_pod_setting_wins_over_the_account() {
        let sa = json!({"automountServiceAccountToken": false});
        assert!(!automount(&sa, &json!({"spec": {}})));
        assert!(automount(
            &sa,
            &json!({"spec": {"automountServiceAccountToken": true}})
        ));
        assert!(automount(&json!({}), &json!({"spec": {}})));
    }
}

//! The ServiceAccount plugin: every pod runs as a service account (`default`
//! unless named), which must exist; its API credentials are mounted as the
//! projected `kube-api-access-<suffix>` volume in every container, and the
//! account's image pull secrets are used when the pod names none. An account
//! annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the
//! secrets its pods (and their ephemeral containers) may reference to those
//! it lists.

use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use apiserver::registry::object_meta::generate_name;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

use apiserver::admission::initializer::{text, Stores};

const DEFAULT_ACCOUNT: &str = "default";
/// Where containers find the token, CA and namespace.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX: &str = "kube-api-access-";
/// The annotation marking a kubelet's mirror pod.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Lifetime of the projected token (an hour, plus seven seconds so that
/// kubelets can tell admission-injected tokens apart).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// How long a pod waits for its namespace's default account, which a
/// controller creates shortly after the namespace: upstream's ten lookups
/// 100–200 ms apart. The store is read in-process, so it is read every
/// [`DEFAULT_ACCOUNT_POLL`] and the pod goes on as soon as the account is
/// there, not at the next of upstream's lookups.
const DEFAULT_ACCOUNT_WAIT: Duration = Duration::from_millis(1350);
const DEFAULT_ACCOUNT_POLL: Duration = Duration::from_millis(10);
/// The (deprecated, still honoured) opt-in to mountable-secret limits.
const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";
const EPHEMERAL_CONTAINERS: &str = "ephemeralcontainers";

pub struct ServiceAccount {
    pub stores: Stores,
}

impl Handler for ServiceAccount {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

fn is_pod_create(a: &Attributes) -> bool {
    a.operation == Operation::Create && a.is("", "pods") && a.subresource.is_empty()
}

fn is_ephemeral_update(a: &Attributes) -> bool {
    a.operation == Operation::Update && a.is("", "pods") && a.subresource == EPHEMERAL_CONTAINERS
}

fn is_mirror(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some()
}

impl ServiceAccount {
    /// The account, waited for a while when it is the default one.
    async fn account(&self, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
        let wait = if name == DEFAULT_ACCOUNT {
            DEFAULT_ACCOUNT_WAIT
        } else {
            Duration::ZERO
        };
        let until = tokio::time::Instant::now() + wait;
        loop {
            if let Some(sa) = self
                .stores
                .get("", "serviceaccounts", Some(namespace), name)
                .await?
            {
                return Ok(Some(sa.to_value()));
            }
            if tokio::time::Instant::now() >= until {
                return Ok(None);
            }
            tokio::time::sleep(DEFAULT_ACCOUNT_POLL).await;
        }
    }

    /// The pod's account, refused as upstream when it does not exist.
    async fn pod_account(&self, a: &Attributes, pod: &Value) -> Result<Value, ApiError> {
        let name = text(pod, "/spec/serviceAccountName")
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_ACCOUNT);
        match self.account(&a.namespace, name).await? {
            Some(sa) => Ok(sa),
            None => Err(a.forbidden(format!(
                "error looking up service account {}/{name}: serviceaccount \"{name}\" not found",
                a.namespace
            ))),
        }
    }

    /// Upstream's `Validate`: a created pod (or the ephemeral containers
    /// added to one) may reference only the secrets its account lists, when
    /// the account asks for that.
    async fn limit_secrets(&self, a: &Attributes, pod: &Value) -> Result<(), ApiError> {
        if text(pod, "/spec/serviceAccountName").is_none_or(str::is_empty) {
            let name = text(pod, "/metadata/name").unwrap_or_default();
            return Err(a.forbidden(format!(
                "no service account specified for pod {}/{name}",
                a.namespace
            )));
        }
        let sa = self.pod_account(a, pod).await?;
        if !enforces_mountable_secrets(&sa) {
            return Ok(());
        }
        let refused = if is_ephemeral_update(a) {
            ephemeral_secret_refusal(&sa, pod)
        } else {
            secret_refusal(&sa, pod)
        };
        match refused {
            Some(msg) => Err(a.forbidden(msg)),
            None => Ok(()),
        }
    }
}

/// The annotation read as Go's `strconv.ParseBool`; anything else is false.
fn enforces_mountable_secrets(sa: &Value) -> bool {
    sa.pointer("/metadata/annotations")
        .and_then(|a| a.get(ENFORCE_MOUNTABLE_SECRETS))
        .and_then(Value::as_str)
        .is_some_and(|v| matches!(v, "1" | "t" | "T" | "TRUE" | "true" | "True"))
}

/// The `name`s of the objects in the array at `pointer`.
fn names_at<'a>(obj: &'a Value, pointer: &str) -> Vec<&'a str> {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .collect()
}

fn containers<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The first secret a container's env or envFrom references that the
/// account does not list, as upstream words it (`kind` is "container",
/// "init container" or "ephemeral container").
fn container_refusal(c: &Value, kind: &str, mountable: &[&str], account: &str) -> Option<String> {
    let container = text(c, "/name").unwrap_or_default();
    let env = c.get("env").and_then(Value::as_array).into_iter().flatten();
    for var in env {
        let Some(secret) = text(var, "/valueFrom/secretKeyRef/name") else {
            continue;
        };
        if !mountable.contains(&secret) {
            let var = text(var, "/name").unwrap_or_default();
            return Some(format!(
                "{kind} {container} with envVar {var} referencing secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
            ));
        }
    }
    let env_from = c
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for source in env_from {
        let Some(secret) = text(source, "/secretRef/name") else {
            continue;
        };
        if !mountable.contains(&secret) {
            return Some(format!(
                "{kind} {container} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
            ));
        }
    }
    None
}

/// Upstream's `limitSecretReferences`: secret volumes, then init
/// containers, containers, and image pull secrets, first refusal wins.
fn secret_refusal(sa: &Value, pod: &Value) -> Option<String> {
    let account = text(sa, "/metadata/name").unwrap_or_default();
    let mountable = names_at(sa, "/secrets");
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
    for volume in volumes.into_iter().flatten() {
        let Some(secret) = text(volume, "/secret/secretName") else {
            continue;
        };
        if !mountable.contains(&secret) {
            return Some(format!(
                "volume with secret.secretName=\"{secret}\" is not allowed because service account {account} does not reference that secret"
            ));
        }
    }
    for (list, kind) in [
        ("initContainers", "init container"),
        ("containers", "container"),
    ] {
        if let Some(msg) =
            containers(pod, list).find_map(|c| container_refusal(c, kind, &mountable, account))
        {
            return Some(msg);
        }
    }
    let pull = names_at(sa, "/imagePullSecrets");
    names_at(pod, "/spec/imagePullSecrets")
        .iter()
        .enumerate()
        .find(|(_, name)| !pull.contains(name))
        .map(|(i, name)| {
            format!(
                "imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {account} does not reference that imagePullSecret"
            )
        })
}

/// Upstream's `limitEphemeralContainerSecretReferences`.
fn ephemeral_secret_refusal(sa: &Value, pod: &Value) -> Option<String> {
    let account = text(sa, "/metadata/name").unwrap_or_default();
    let mountable = names_at(sa, "/secrets");
    containers(pod, "ephemeralContainers")
        .find_map(|c| container_refusal(c, "ephemeral container", &mountable, account))
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
        let sa = self.pod_account(a, pod).await?;
        let name = text(&sa, "/metadata/name")
            .unwrap_or(DEFAULT_ACCOUNT)
            .to_owned();
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
        if !is_pod_create(a) && !is_ephemeral_update(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if is_pod_create(a) && is_mirror(pod) {
            return mirror_pod_check(a, pod);
        }
        self.limit_secrets(a, pod).await
    }
}

/// Mirror pods are run by a kubelet from a file: they may not use the API's
/// credentials.
fn mirror_pod_check(a: &Attributes, pod: &Value) -> Result<(), ApiError> {
    if text(pod, "/spec/serviceAccountName").is_some_and(|n| !n.is_empty()) {
        return Err(a.forbidden("a mirror pod may not reference service accounts"));
    }
    if references_secrets(pod) {
        return Err(a.forbidden("a mirror pod may not reference secrets"));
    }
    if volumes(pod).any(|v| projected_sources(v).any(|s| s.get("serviceAccountToken").is_some())) {
        return Err(a.forbidden("a mirror pod may not use ServiceAccountToken volume projections"));
    }
    Ok(())
}

fn volumes(pod: &Value) -> impl Iterator<Item = &Value> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn projected_sources(volume: &Value) -> impl Iterator<Item = &Value> {
    volume
        .pointer("/projected/sources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn is_set(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer).is_some_and(|x| !x.is_null())
}

/// Volume sources whose secret reference upstream's `VisitPodSecretNames`
/// follows.
const VOLUME_SECRET_REFS: [&str; 9] = [
    "/cephfs/secretRef",
    "/cinder/secretRef",
    "/flexVolume/secretRef",
    "/rbd/secretRef",
    "/secret",
    "/scaleIO/secretRef",
    "/iscsi/secretRef",
    "/storageos/secretRef",
    "/csi/nodePublishSecretRef",
];

/// Whether the pod names any secret (upstream's `VisitPodSecretNames` over
/// all containers): image pull secrets, env and envFrom of any container,
/// and secret-backed volumes.
fn references_secrets(pod: &Value) -> bool {
    let pull = pod
        .pointer("/spec/imagePullSecrets")
        .and_then(Value::as_array);
    if pull.is_some_and(|p| !p.is_empty()) {
        return true;
    }
    let in_container = |c: &Value| {
        let mut env_from = c
            .get("envFrom")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        let mut env = c.get("env").and_then(Value::as_array).into_iter().flatten();
        env_from.any(|e| is_set(e, "/secretRef"))
            || env.any(|e| is_set(e, "/valueFrom/secretKeyRef"))
    };
    let any_container = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .any(|list| containers(pod, list).any(in_container));
    any_container
        || volumes(pod).any(|v| {
            text(v, "/azureFile/secretName").is_some_and(|n| !n.is_empty())
                || VOLUME_SECRET_REFS.iter().any(|p| is_set(v, p))
                || projected_sources(v).any(|s| is_set(s, "/secret"))
        })
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
    use crate::admission::testing;
    use apiserver::registry::store::WriteOptions;

    /// A pod goes on as soon as its namespace's default account is made,
    /// and is refused once the wait is over without it; another account is
    /// not waited for.
    #[tokio::test]
    async fn the_default_account_is_waited_for_until_it_exists() {
        let plugin = ServiceAccount {
            stores: testing::stores(Vec::new()).await,
        };
        let started = tokio::time::Instant::now();
        assert_eq!(plugin.account("late", "other").await, Ok(None));
        assert!(started.elapsed() < DEFAULT_ACCOUNT_POLL * 5);
        let started = tokio::time::Instant::now();
        assert_eq!(plugin.account("late", DEFAULT_ACCOUNT).await, Ok(None));
        assert!(started.elapsed() >= DEFAULT_ACCOUNT_WAIT);

        let accounts = plugin.stores.store("", "serviceaccounts");
        let make = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": DEFAULT_ACCOUNT, "namespace": "late"}});
            let store = accounts.expect("the fixture serves serviceaccounts");
            assert!(store.create(sa, &WriteOptions::default()).await.is_ok());
        };
        let started = tokio::time::Instant::now();
        let (found, ()) = tokio::join!(plugin.account("late", DEFAULT_ACCOUNT), make);
        let waited = started.elapsed();
        assert_eq!(
            found
                .ok()
                .flatten()
                .and_then(|sa| sa["metadata"]["namespace"].as_str().map(String::from)),
            Some("late".to_string())
        );
        assert!(
            waited >= Duration::from_millis(200) && waited < DEFAULT_ACCOUNT_WAIT,
            "waited {waited:?}"
        );
    }

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
    fn mountable_secrets_limit_what_pods_reference() {
        let sa = json!({"metadata": {"name": "strict",
            "annotations": {ENFORCE_MOUNTABLE_SECRETS: "true"}},
            "secrets": [{"name": "ok"}], "imagePullSecrets": [{"name": "pull"}]});
        assert!(enforces_mountable_secrets(&sa));
        assert!(!enforces_mountable_secrets(&json!({"metadata": {
            "annotations": {ENFORCE_MOUNTABLE_SECRETS: "yes"}}})));
        let allowed = json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "ok"}}],
            "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "ok"}}]}],
            "imagePullSecrets": [{"name": "pull"}]}});
        assert_eq!(secret_refusal(&sa, &allowed), None);
        let volume = json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "s1"}}]}});
        assert_eq!(
            secret_refusal(&sa, &volume).as_deref(),
            Some("volume with secret.secretName=\"s1\" is not allowed because service account strict does not reference that secret")
        );
        let env = json!({"spec": {"containers": [{"name": "c", "env": [{"name": "A",
            "valueFrom": {"secretKeyRef": {"name": "s9", "key": "k"}}}]}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "s8"}}]}]}});
        assert_eq!(
            secret_refusal(&sa, &env).as_deref(),
            Some("init container i with envFrom referencing secret.secretName=\"s8\" is not allowed because service account strict does not reference that secret")
        );
        let pull = json!({"spec": {"imagePullSecrets": [{"name": "pull"}, {"name": "other"}]}});
        assert_eq!(
            secret_refusal(&sa, &pull).as_deref(),
            Some("imagePullSecrets[1].name=\"other\" is not allowed because service account strict does not reference that imagePullSecret")
        );
        assert_eq!(
            ephemeral_secret_refusal(&sa, &json!({"spec": {"ephemeralContainers": [{"name": "dbg",
                "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s9"}}}]}]}}))
            .as_deref(),
            Some("ephemeral container dbg with envVar T referencing secret.secretName=\"s9\" is not allowed because service account strict does not reference that secret")
        );
    }

    #[test]
    fn mirror_pods_may_not_name_secrets() {
        let pod = |spec: Value| json!({"spec": spec});
        assert!(!references_secrets(&pod(json!({"volumes": [{"name": "cm",
            "projected": {"sources": [{"configMap": {"name": "c"}}]}}]}))));
        assert!(references_secrets(&pod(
            json!({"containers": [{"name": "c",
            "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}]})
        )));
        assert!(references_secrets(&pod(json!({"volumes": [{"name": "p",
            "projected": {"sources": [{"secret": {"name": "s"}}]}}]}))));
        assert!(references_secrets(&pod(json!({"volumes": [{"name": "c",
            "csi": {"driver": "d", "nodePublishSecretRef": {"name": "s"}}}]}))));
        assert!(references_secrets(&pod(
            json!({"imagePullSecrets": [{"name": "p"}]})
        )));
        let token = pod(json!({"volumes": [{"name": "t",
            "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}));
        assert!(!references_secrets(&token));
        assert!(volumes(&token)
            .any(|v| projected_sources(v).any(|s| s.get("serviceAccountToken").is_some())));
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

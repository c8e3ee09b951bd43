//! PodSecurity on namespaces (upstream's `ValidateNamespace`): invalid
//! `pod-security.kubernetes.io/*` labels are refused, and making the
//! enforce level stricter warns about the existing pods it would refuse.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Operation};
use pod_security::{
    evaluate_pod, LevelVersion, Policy, AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL,
    ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL, WARN_LEVEL_LABEL, WARN_VERSION_LABEL,
};
use serde_json::Value;
use storage::Object;

use super::{decode, label_field_errors, PodSecurity};

/// At most this many existing pods are checked against a new level.
const MAX_PODS_TO_CHECK: usize = 3000;
/// Checking existing pods stops after this long.
const POD_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

impl PodSecurity {
    pub(super) async fn validate_namespace(&self, a: &Attributes) -> Result<(), ApiError> {
        if !a.subresource.is_empty() {
            return Ok(());
        }
        let Some(namespace) = a.object.as_ref() else {
            return Ok(());
        };
        let (new_policy, new_errors) = self.policy_of(namespace);
        let invalid =
            || ApiError::invalid("", "Namespace", &a.name, &label_field_errors(&new_errors));
        match a.operation {
            Operation::Create => {
                if !new_errors.is_empty() {
                    return Err(invalid());
                }
                if self.exempt_namespace(&a.name) {
                    self.warn_exempt(a, namespace, &new_policy);
                }
                Ok(())
            }
            Operation::Update => {
                let Some(old) = a.old_object.as_deref() else {
                    return Ok(());
                };
                let (old_policy, old_errors) = self.policy_of(old);
                // Errors the namespace already had do not block other updates.
                if !new_errors.is_empty() && (old_errors.is_empty() || new_errors != old_errors) {
                    return Err(invalid());
                }
                let (new, old) = (new_policy.enforce, old_policy.enforce);
                if new == old
                    || new.level == pod_security::Level::Privileged
                    || (new.version == old.version && new.level <= old.level)
                {
                    return Ok(());
                }
                if self.exempt_namespace(&a.name) {
                    self.warn_exempt(a, namespace, &new_policy);
                    return Ok(());
                }
                for warning in self.evaluate_existing_pods(&a.name, new).await {
                    a.request.add_warning(warning);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Warns that an exempt namespace's labels will be ignored, unless they
    /// select nothing beyond the defaults.
    fn warn_exempt(&self, a: &Attributes, namespace: &Value, policy: &Policy) {
        if policy.fully_privileged() || policy.equivalent(&self.config.defaults) {
            return;
        }
        let labels = namespace.pointer("/metadata/labels");
        let has = |k: &str| labels.and_then(|l| l.get(k)).is_some();
        let modes = [
            (
                "enforce",
                policy.enforce,
                ENFORCE_LEVEL_LABEL,
                ENFORCE_VERSION_LABEL,
            ),
            (
                "audit",
                policy.audit,
                AUDIT_LEVEL_LABEL,
                AUDIT_VERSION_LABEL,
            ),
            ("warn", policy.warn, WARN_LEVEL_LABEL, WARN_VERSION_LABEL),
        ];
        let set: Vec<String> = modes
            .iter()
            .filter(|(_, lv, level, version)| {
                lv.level != pod_security::Level::Privileged && (has(level) || has(version))
            })
            .map(|(mode, lv, _, _)| format!("{mode}={lv}"))
            .collect();
        a.request.add_warning(format!(
            "namespace {:?} is exempt from Pod Security, and the policy ({}) will be ignored",
            a.name,
            set.join(", ")
        ));
    }

    /// The warnings for the namespace's pods that `enforce` would refuse
    /// (upstream's `EvaluatePodsInNamespace`): one per distinct set of
    /// reasons, naming the first pod and counting the others.
    async fn evaluate_existing_pods(&self, namespace: &str, enforce: LevelVersion) -> Vec<String> {
        let Ok(pods) = self.stores.list("", "pods", Some(namespace)).await else {
            return vec!["failed to list pods while checking new PodSecurity enforce level".into()];
        };
        let pods = self.prioritize(pods);
        let total = pods.len();
        let deadline = Instant::now() + POD_CHECK_TIMEOUT;
        let mut checked = total.min(MAX_PODS_TO_CHECK);
        // Reasons in first-seen order, with the least pod name and count.
        let mut order: Vec<String> = Vec::new();
        let mut counts: HashMap<String, (String, usize)> = HashMap::new();
        for (i, pod) in pods.iter().take(MAX_PODS_TO_CHECK).enumerate() {
            if let Ok((meta, spec)) = decode(pod.get("metadata"), pod.get("spec")) {
                let result = evaluate_pod(enforce, &meta, &spec);
                if !result.allowed() {
                    let reason = result.forbidden_reason();
                    let name = meta.name.unwrap_or_default();
                    let entry = counts.entry(reason.clone()).or_insert_with(|| {
                        order.push(reason);
                        (name.clone(), 0)
                    });
                    if name < entry.0 {
                        entry.0 = name;
                    }
                    entry.1 += 1;
                }
            }
            if Instant::now() > deadline {
                checked = i + 1;
                break;
            }
        }
        let mut warnings = Vec::new();
        if checked < total {
            warnings.push(format!(
                "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
            ));
        }
        if !order.is_empty() {
            warnings.push(format!(
                "existing pods in namespace {namespace:?} violate the new PodSecurity enforce level \"{enforce}\""
            ));
        }
        let mut pod_warnings: Vec<String> = order
            .into_iter()
            .map(|reason| {
                let (name, count) = counts.remove(&reason).unwrap_or_default();
                match count {
                    0 | 1 => format!("{name}: {reason}"),
                    2 => format!("{name} (and 1 other pod): {reason}"),
                    n => format!("{name} (and {} other pods): {reason}", n - 1),
                }
            })
            .collect();
        pod_warnings.sort();
        warnings.extend(pod_warnings);
        warnings
    }

    /// Pods not exempt by runtime class, one per controller first, then the
    /// other replicas (so a limited check covers as many templates as it can).
    fn prioritize(&self, pods: Vec<Object>) -> Vec<Object> {
        let mut first = Vec::with_capacity(pods.len());
        let mut replicas = Vec::new();
        let mut controllers = HashSet::new();
        for pod in pods {
            let runtime_class = pod
                .pointer("/spec/runtimeClassName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !runtime_class.is_empty()
                && self.config.exempt_runtime_classes.contains(runtime_class)
            {
                continue;
            }
            match controller_uid(&pod) {
                Some(uid) if !controllers.insert(uid.to_owned()) => replicas.push(pod),
                _ => first.push(pod),
            }
        }
        first.extend(replicas);
        first
    }
}

/// The UID of the owner reference marked as the pod's controller.
fn controller_uid(pod: &Value) -> Option<&str> {
    pod.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}

//! The PodSecurity admission plugin (upstream's
//! `plugin/pkg/admission/security/podsecurity` over
//! `k8s.io/pod-security-admission/admission`): pods are evaluated against
//! their namespace's `pod-security.kubernetes.io/{enforce,audit,warn}`
//! levels — enforce refuses, warn answers with Warning headers, audit
//! annotates the audit events; the pod templates of workload resources are
//! only warned about and audited; namespace labels are validated, and a
//! stricter enforce level warns about the existing pods it would refuse.

mod config;
mod namespace;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use apimachinery::field_errors::{aggregate_message, FieldError, Path};
use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Handler, Operation, ValidationInterface};
use async_trait::async_trait;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pod_security::{
    evaluate_pod, policy_to_evaluate, AggregateResult, LabelError, LevelVersion, Policy,
    AUDIT_ANNOTATION_PREFIX,
};
use serde::Deserialize;
use serde_json::Value;
use storage::Object;

pub use config::{Config, PodSecurityConfigError};

use apiserver::admission::initializer::Stores;

/// Pod subresources that never change what is evaluated.
const IGNORED_POD_SUBRESOURCES: &[&str] = &[
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

pub struct PodSecurity {
    stores: Stores,
    config: Arc<Config>,
}

impl PodSecurity {
    pub fn new(stores: Stores, config: Config) -> Self {
        PodSecurity {
            stores,
            config: Arc::new(config),
        }
    }

    /// The plugin configured by its PodSecurityConfiguration document; an
    /// invalid document stops startup, as upstream.
    pub fn from_config(
        stores: Stores,
        doc: Option<&Value>,
    ) -> Result<Self, PodSecurityConfigError> {
        Ok(Self::new(stores, Config::from_document(doc)?))
    }

    /// The policy a namespace's labels select over the configured defaults.
    fn policy_of(&self, namespace: &Value) -> (Policy, Vec<LabelError>) {
        let labels = namespace.pointer("/metadata/labels");
        policy_to_evaluate(
            |k| labels.and_then(|l| l.get(k)).and_then(Value::as_str),
            &self.config.defaults,
        )
    }

    fn exempt_namespace(&self, namespace: &str) -> bool {
        !namespace.is_empty() && self.config.exempt_namespaces.contains(namespace)
    }

    fn exempt_user(&self, a: &Attributes) -> bool {
        let name = &a.user().name;
        !name.is_empty() && self.config.exempt_usernames.contains(name)
    }

    fn exempt_runtime_class(&self, spec: &PodSpec) -> bool {
        spec.runtime_class_name
            .as_deref()
            .is_some_and(|rc| !rc.is_empty() && self.config.exempt_runtime_classes.contains(rc))
    }

    /// The namespace of the request's object.
    async fn namespace_of(&self, a: &Attributes) -> Result<Option<Object>, ApiError> {
        self.stores.get("", "namespaces", None, &a.namespace).await
    }

    async fn validate_pod(&self, a: &Attributes) -> Result<(), ApiError> {
        if IGNORED_POD_SUBRESOURCES.contains(&a.subresource.as_str()) {
            return Ok(());
        }
        if let Some(reason) = self.exemption(a) {
            annotate(a, "exempt", reason);
            return Ok(());
        }
        let lookup_failed =
            || ApiError::internal_error(format!("failed to lookup namespace {:?}", a.namespace));
        let namespace = self
            .namespace_of(a)
            .await
            .map_err(|_| lookup_failed())?
            .ok_or_else(lookup_failed)?;
        let (policy, errors) = self.policy_of(&namespace);
        if errors.is_empty() && policy.fully_privileged() {
            annotate(a, "enforce-policy", LevelVersion::PRIVILEGED.to_string());
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if a.operation == Operation::Update {
            let significant = a
                .old_object
                .as_deref()
                .is_none_or(|old| significant_pod_update(pod, old));
            if !significant {
                return Ok(());
            }
        }
        let (meta, spec) = decode(pod.get("metadata"), pod.get("spec"))
            .map_err(|_| ApiError::bad_request("failed to decode pod"))?;
        self.evaluate(a, &policy, &errors, &meta, &spec, true)
    }

    /// Workload resources: their pod template is warned about and audited,
    /// never enforced (their pods are, when created).
    async fn validate_controller(&self, a: &Attributes, template: &str) -> Result<(), ApiError> {
        if !a.subresource.is_empty() {
            return Ok(());
        }
        if let Some(reason) = self.exemption(a) {
            annotate(a, "exempt", reason);
            return Ok(());
        }
        let namespace = match self.namespace_of(a).await {
            Ok(Some(ns)) => ns,
            Ok(None) | Err(_) => {
                let message = format!("failed to lookup namespace {:?}", a.namespace);
                annotate(a, "error", message);
                return Ok(());
            }
        };
        let (policy, errors) = self.policy_of(&namespace);
        let quiet = |lv: LevelVersion| lv.level == pod_security::Level::Privileged;
        if errors.is_empty() && quiet(policy.warn) && quiet(policy.audit) {
            return Ok(());
        }
        let Some(template) = a.object.as_ref().and_then(|o| o.pointer(template)) else {
            return Ok(());
        };
        match decode(template.get("metadata"), template.get("spec")) {
            Ok((meta, spec)) => self.evaluate(a, &policy, &errors, &meta, &spec, false),
            Err(e) => {
                annotate(a, "error", format!("failed to extract pod template: {e}"));
                Ok(())
            }
        }
    }

    /// Why the request is exempt by namespace or user, if it is.
    fn exemption(&self, a: &Attributes) -> Option<&'static str> {
        if self.exempt_namespace(&a.namespace) {
            Some("namespace")
        } else if self.exempt_user(a) {
            Some("user")
        } else {
            None
        }
    }

    /// Evaluates a pod or template against the policy's modes (upstream's
    /// `EvaluatePod`): enforce refuses (pods only), audit annotates, warn
    /// warns when the request is allowed.
    fn evaluate(
        &self,
        a: &Attributes,
        policy: &Policy,
        label_errors: &[LabelError],
        meta: &ObjectMeta,
        spec: &PodSpec,
        enforce: bool,
    ) -> Result<(), ApiError> {
        if self.exempt_runtime_class(spec) {
            annotate(a, "exempt", "runtimeClass");
            return Ok(());
        }
        if let Some(message) = aggregate_message(&label_field_errors(label_errors)) {
            annotate(a, "error", format!("Failed to parse policy: {message}"));
        }
        let mut cache: Vec<(LevelVersion, AggregateResult)> = Vec::with_capacity(3);
        let mut result_for = |lv: LevelVersion| -> AggregateResult {
            if let Some((_, r)) = cache.iter().find(|(l, _)| *l == lv) {
                return r.clone();
            }
            let r = evaluate_pod(lv, meta, spec);
            cache.push((lv, r.clone()));
            r
        };
        let mut refusal = None;
        if enforce {
            annotate(a, "enforce-policy", policy.enforce.to_string());
            let result = result_for(policy.enforce);
            if !result.allowed() {
                refusal = Some(a.forbidden(format!(
                    "violates PodSecurity \"{}\": {}",
                    policy.enforce,
                    result.forbidden_detail()
                )));
            }
        }
        let audit = result_for(policy.audit);
        if !audit.allowed() {
            annotate(
                a,
                "audit-violations",
                format!(
                    "would violate PodSecurity \"{}\": {}",
                    policy.audit,
                    audit.forbidden_detail()
                ),
            );
        }
        if let Some(err) = refusal {
            return Err(err);
        }
        let warn = result_for(policy.warn);
        if !warn.allowed() {
            a.request.add_warning(format!(
                "would violate PodSecurity \"{}\": {}",
                policy.warn,
                warn.forbidden_detail()
            ));
        }
        Ok(())
    }
}

/// Where a workload resource keeps its pod template.
fn template_pointer(group: &str, resource: &str) -> Option<&'static str> {
    match (group, resource) {
        ("", "podtemplates") => Some("/template"),
        ("", "replicationcontrollers")
        | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => Some("/spec/template"),
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

/// An audit annotation under `pod-security.kubernetes.io/`.
fn annotate(a: &Attributes, key: &str, value: impl Into<String>) {
    a.request
        .add_audit_annotation(&format!("{AUDIT_ANNOTATION_PREFIX}{key}"), value);
}

/// The namespace-label errors as field errors on `metadata.labels[...]`.
fn label_field_errors(errors: &[LabelError]) -> Vec<FieldError> {
    let labels = Path::new("metadata").child("labels");
    errors
        .iter()
        .map(|e| FieldError::invalid(&labels.key(e.label), e.value.as_str(), e.error.to_string()))
        .collect()
}

/// Typed pod metadata and spec from their JSON.
fn decode(
    meta: Option<&Value>,
    spec: Option<&Value>,
) -> Result<(ObjectMeta, PodSpec), serde_json::Error> {
    let meta = match meta {
        Some(m) => ObjectMeta::deserialize(m)?,
        None => ObjectMeta::default(),
    };
    let spec = match spec {
        Some(s) => PodSpec::deserialize(s)?,
        None => PodSpec::default(),
    };
    Ok((meta, spec))
}

/// Whether a pod update can change the evaluation: upstream only looks at
/// container images (the rest of a pod's spec is immutable) and added
/// ephemeral containers.
fn significant_pod_update(pod: &Value, old: &Value) -> bool {
    fn list<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
        obj.get("spec")
            .and_then(|s| s.get(field))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
    fn image(c: &Value) -> Option<&str> {
        c.get("image").and_then(Value::as_str)
    }
    for field in ["containers", "initContainers"] {
        let (new, old) = (list(pod, field), list(old, field));
        if new.len() != old.len() || new.iter().zip(old).any(|(n, o)| image(n) != image(o)) {
            return true;
        }
    }
    let old_ephemeral = list(old, "ephemeralContainers");
    list(pod, "ephemeralContainers").iter().any(|c| {
        let old = old_ephemeral
            .iter()
            .find(|o| o.get("name") == c.get("name"));
        old.is_none_or(|o| image(o) != image(c))
    })
}

impl Handler for PodSecurity {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

#[async_trait]
impl ValidationInterface for PodSecurity {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let (group, resource) = (a.resource.group.as_str(), a.resource.resource.as_str());
        match (group, resource) {
            ("", "namespaces") => self.validate_namespace(a).await,
            ("", "pods") => self.validate_pod(a).await,
            _ => match template_pointer(group, resource) {
                Some(pointer) => self.validate_controller(a, pointer).await,
                None => Ok(()),
            },
        }
    }
}

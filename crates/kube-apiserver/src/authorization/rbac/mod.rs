//! The RBAC authorizer (upstream's `plugin/pkg/auth/authorizer/rbac`), with
//! the bootstrap policy in [`bootstrappolicy`] and rule matching in
//! [`rules`]: a request is allowed when a ClusterRoleBinding, or a
//! RoleBinding in the request's namespace, binds a subject matching the
//! user to a role with a rule allowing it. RBAC never denies; without a matching rule it has no
//! opinion, with a reason only when some role could not be read.

pub mod bootstrappolicy;
pub mod rules;

use std::ops::ControlFlow;
use std::sync::{Arc, OnceLock};

use apimachinery::status::ApiError;
use apiserver::admission::initializer::Stores;
use apiserver::authentication::user::UserInfo;
use apiserver::authorization::authorizer::{Attributes, Authorizer, Decision, Rules};
use async_trait::async_trait;
use serde_json::Value;
use storage::Object;

use rules::{review_rules, rule_allows};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Where RBAC reads bindings and roles from.
#[async_trait]
pub trait PolicyReader: Send + Sync {
    async fn cluster_role_bindings(&self) -> Result<Vec<Object>, ApiError>;
    async fn role_bindings(&self, namespace: &str) -> Result<Vec<Object>, ApiError>;
    /// A ClusterRole, or `Ok(None)` when it does not exist.
    async fn cluster_role(&self, name: &str) -> Result<Option<Object>, ApiError>;
    /// A Role, or `Ok(None)` when it does not exist.
    async fn role(&self, namespace: &str, name: &str) -> Result<Option<Object>, ApiError>;
}

/// The four RBAC resources, read as upstream's RBAC authorizer reads
/// them: from the shared informers' listers (its `RoleGetter`,
/// `RoleBindingLister`... of `pkg/registry/rbac/validation`), from the
/// watch caches until those sync.
pub struct RbacStores(pub Stores);

#[async_trait]
impl PolicyReader for RbacStores {
    async fn cluster_role_bindings(&self) -> Result<Vec<Object>, ApiError> {
        self.0.list(RBAC_GROUP, "clusterrolebindings", None).await
    }

    async fn role_bindings(&self, namespace: &str) -> Result<Vec<Object>, ApiError> {
        self.0
            .list(RBAC_GROUP, "rolebindings", Some(namespace))
            .await
    }

    async fn cluster_role(&self, name: &str) -> Result<Option<Object>, ApiError> {
        self.0.get(RBAC_GROUP, "clusterroles", None, name).await
    }

    async fn role(&self, namespace: &str, name: &str) -> Result<Option<Object>, ApiError> {
        self.0.get(RBAC_GROUP, "roles", Some(namespace), name).await
    }
}

/// The RBAC mode. Its stores exist only once the server chain is built,
/// after the authorizer chain: until [`RbacAuthorizer::bind`] it has no
/// opinion.
#[derive(Default)]
pub struct RbacAuthorizer {
    reader: OnceLock<Arc<dyn PolicyReader>>,
}

impl std::fmt::Debug for RbacAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RbacAuthorizer")
            .field("bound", &self.reader.get().is_some())
            .finish()
    }
}

/// Which binding granted a rule, described as upstream does in its
/// "allowed by" reasons.
struct Source<'a> {
    binding: &'a Value,
    subject: &'a Value,
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl Source<'_> {
    fn describe(&self) -> String {
        let b = self.binding;
        let (name, namespace) = (text(b, "/metadata/name"), text(b, "/metadata/namespace"));
        let (kind, binding) = if namespace.is_empty() {
            ("ClusterRoleBinding", name.to_owned())
        } else {
            ("RoleBinding", format!("{name}/{namespace}"))
        };
        let subject_kind = text(self.subject, "/kind");
        let mut subject = text(self.subject, "/name").to_owned();
        if subject_kind == "ServiceAccount" {
            let ns = match text(self.subject, "/namespace") {
                "" => namespace,
                ns => ns,
            };
            subject = format!("{subject}/{ns}");
        }
        format!(
            "{kind} {binding:?} of {} {:?} to {subject_kind} {subject:?}",
            text(b, "/roleRef/kind"),
            text(b, "/roleRef/name"),
        )
    }
}

/// Whether a binding's subject is the user (upstream's `appliesToUser`);
/// `namespace` is the binding's, the default for ServiceAccount subjects.
fn subject_matches(user: &UserInfo, subject: &Value, namespace: &str) -> bool {
    let name = text(subject, "/name");
    match text(subject, "/kind") {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let sa_namespace = match text(subject, "/namespace") {
                "" => namespace,
                ns => ns,
            };
            !sa_namespace.is_empty()
                && user
                    .name
                    .strip_prefix(SERVICE_ACCOUNT_PREFIX)
                    .and_then(|rest| rest.split_once(':'))
                    .is_some_and(|(ns, sa)| ns == sa_namespace && sa == name)
        }
        _ => false,
    }
}

/// The first subject of a binding that is the user.
fn applies_to<'a>(user: &UserInfo, binding: &'a Value) -> Option<&'a Value> {
    let namespace = text(binding, "/metadata/namespace");
    binding
        .get("subjects")
        .and_then(Value::as_array)?
        .iter()
        .find(|s| subject_matches(user, s, namespace))
}

/// Why the role of a binding could not be read.
#[derive(Debug, PartialEq)]
pub enum RoleReferenceError {
    /// The role does not exist: its kind in lower case (`role`,
    /// `clusterrole`) and its name.
    NotFound(&'static str, String),
    Other(String),
}

impl std::fmt::Display for RoleReferenceError {
    /// Upstream's text: its listers name the resource in the singular.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleReferenceError::NotFound(kind, name) => {
                let message = ApiError::not_found(RBAC_GROUP, kind, name).message;
                f.write_str(&message)
            }
            RoleReferenceError::Other(message) => f.write_str(message),
        }
    }
}

/// The role a binding refers to.
async fn referenced_role(
    reader: &dyn PolicyReader,
    binding: &Value,
) -> Result<Object, RoleReferenceError> {
    let namespace = text(binding, "/metadata/namespace");
    let name = text(binding, "/roleRef/name");
    let found = match (text(binding, "/roleRef/kind"), namespace) {
        ("ClusterRole", _) => reader.cluster_role(name).await.map(|r| (r, "clusterrole")),
        ("Role", ns) if !ns.is_empty() => reader.role(ns, name).await.map(|r| (r, "role")),
        (kind, _) => {
            let message = format!("unsupported role reference kind: {kind:?}");
            return Err(RoleReferenceError::Other(message));
        }
    };
    match found {
        Ok((Some(role), _)) => Ok(role),
        Ok((None, kind)) => Err(RoleReferenceError::NotFound(kind, name.to_owned())),
        Err(e) => Err(RoleReferenceError::Other(e.message)),
    }
}

/// Calls `visit` with every rule the user holds in `namespace` (cluster-wide
/// bindings first), until it breaks; returns the errors met on the way
/// (upstream's `VisitRulesFor`).
async fn visit_rules(
    reader: &dyn PolicyReader,
    user: &UserInfo,
    namespace: &str,
    visit: &mut (dyn FnMut(&Source<'_>, &Value) -> ControlFlow<()> + Send),
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut lists = Vec::with_capacity(2);
    lists.push(reader.cluster_role_bindings().await);
    if !namespace.is_empty() {
        lists.push(reader.role_bindings(namespace).await);
    }
    for list in lists {
        let bindings = match list {
            Ok(bindings) => bindings,
            Err(e) => {
                errors.push(e.message);
                continue;
            }
        };
        for binding in &bindings {
            let Some(subject) = applies_to(user, binding) else {
                continue;
            };
            let role = match referenced_role(reader, binding).await {
                Ok(role) => role,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            };
            let source = Source { binding, subject };
            let rules = role.get("rules").and_then(Value::as_array);
            for rule in rules.into_iter().flatten() {
                if visit(&source, rule).is_break() {
                    return errors;
                }
            }
        }
    }
    errors
}

/// Upstream's aggregate of errors: one as it is, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

impl RbacAuthorizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives the authorizer its policy; later calls are ignored.
    pub fn bind(&self, reader: Arc<dyn PolicyReader>) {
        if self.reader.set(reader).is_err() {
            tracing::warn!("the RBAC authorizer was bound twice; keeping the first policy");
        }
    }

    /// The rules of the role a (Cluster)RoleBinding refers to (upstream's
    /// `GetRoleReferenceRules` through the role registry): a missing role
    /// is the registry's 404, other failures carry upstream's error text.
    pub async fn role_reference_rules(
        &self,
        binding: &Value,
    ) -> Result<Vec<Value>, RoleReferenceError> {
        let reader = self.reader.get().ok_or_else(|| {
            RoleReferenceError::Other("the RBAC policy is not available yet".to_owned())
        })?;
        let role = referenced_role(reader.as_ref(), binding).await?;
        Ok(role
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    }
}

#[async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let Some(reader) = self.reader.get() else {
            return Decision::NoOpinion(String::new());
        };
        let mut allowed_by = None;
        let mut visit = |source: &Source<'_>, rule: &Value| {
            if rule_allows(attrs, rule) {
                allowed_by = Some(source.describe());
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let errors = visit_rules(reader.as_ref(), attrs.user, attrs.namespace, &mut visit).await;
        if let Some(source) = allowed_by {
            return Decision::Allow(format!("RBAC: allowed by {source}"));
        }
        if errors.is_empty() {
            Decision::NoOpinion(String::new())
        } else {
            Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors)))
        }
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut rules = Rules::default();
        let Some(reader) = self.reader.get() else {
            return rules;
        };
        let mut visit = |_: &Source<'_>, rule: &Value| {
            let (resource, non_resource) = review_rules(rule);
            rules.resource_rules.extend(resource);
            rules.non_resource_rules.extend(non_resource);
            ControlFlow::Continue(())
        };
        let errors = visit_rules(reader.as_ref(), user, namespace, &mut visit).await;
        // Upstream's RBAC reports errors but never an incomplete list.
        rules.errors = errors;
        rules
    }
}

#[cfg(test)]
mod tests;

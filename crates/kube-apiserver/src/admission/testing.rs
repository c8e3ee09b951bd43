//! Fixtures for the plugin tests: the resources plugins look at, the
//! attributes of a write by a given user, real stores over an in-memory
//! key-value store, and RBAC over a fixed policy.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, Operation, RequestContext};
use apiserver::authentication::user::UserInfo;
use apiserver::filters::authorization::{Authorization, AuthorizationMode, NamedAuthorizer};
use apiserver::registry::store::{Store, Strategies, WriteOptions};
use apiserver::registry::ResourceInfo;
use serde_json::{json, Value};

use crate::authorization::rbac::{PolicyReader, RbacAuthorizer};
use apiserver::admission::initializer::Stores;

/// `(group, version, resource, kind, namespaced)` of the resources used.
const RESOURCES: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "pods", "Pod", true),
    ("", "v1", "nodes", "Node", false),
    ("", "v1", "namespaces", "Namespace", false),
    ("", "v1", "services", "Service", true),
    ("", "v1", "serviceaccounts", "ServiceAccount", true),
    (
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
    ),
    ("", "v1", "persistentvolumes", "PersistentVolume", false),
    ("", "v1", "configmaps", "ConfigMap", true),
    ("", "v1", "events", "Event", true),
    ("apps", "v1", "deployments", "Deployment", true),
    ("coordination.k8s.io", "v1", "leases", "Lease", true),
    ("storage.k8s.io", "v1", "csinodes", "CSINode", false),
    ("storage.k8s.io", "v1", "csidrivers", "CSIDriver", false),
    (
        "resource.k8s.io",
        "v1",
        "resourceslices",
        "ResourceSlice",
        false,
    ),
    ("networking.k8s.io", "v1", "ingresses", "Ingress", true),
    (
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        false,
    ),
    (
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        false,
    ),
    (
        "certificates.k8s.io",
        "v1",
        "clustertrustbundles",
        "ClusterTrustBundle",
        false,
    ),
];

/// The resource info of one of [`RESOURCES`].
pub fn info(group: &str, resource: &str) -> ResourceInfo {
    let (group, version, resource, kind, namespaced) = RESOURCES
        .iter()
        .copied()
        .find(|(g, _, r, _, _)| *g == group && *r == resource)
        .unwrap_or(("", "v1", "configmaps", "ConfigMap", true));
    ResourceInfo {
        version: version.into(),
        resource: resource.into(),
        namespaced,
        has_status: true,
        storage_root: resource.into(),
        ..ResourceInfo::testing(group, kind)
    }
}

pub fn user(name: &str, groups: &[&str]) -> Arc<UserInfo> {
    Arc::new(UserInfo {
        name: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        extra: BTreeMap::new(),
    })
}

/// The client certificate identity of kubelet `node`.
pub fn node(name: &str) -> Arc<UserInfo> {
    user(&format!("system:node:{name}"), &["system:nodes"])
}

/// One write to `group`/`resource` (its subresource `sub`) by `who`.
pub struct Write<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub sub: &'a str,
    pub op: Operation,
    pub object: Option<Value>,
    pub old: Option<Value>,
    pub name: &'a str,
}

impl<'a> Write<'a> {
    pub fn new(group: &'a str, resource: &'a str, op: Operation) -> Self {
        Write {
            group,
            resource,
            sub: "",
            op,
            object: None,
            old: None,
            name: "",
        }
    }

    pub fn object(mut self, object: Value) -> Self {
        self.object = Some(object);
        self
    }

    pub fn old(mut self, old: Value) -> Self {
        self.old = Some(old);
        self
    }

    pub fn sub(mut self, sub: &'a str) -> Self {
        self.sub = sub;
        self
    }

    pub fn name(mut self, name: &'a str) -> Self {
        self.name = name;
        self
    }

    pub fn by(self, who: Arc<UserInfo>) -> Attributes {
        Attributes::new(
            &info(self.group, self.resource),
            self.op,
            self.object,
            self.old.map(|v| Arc::new(v.into())),
            self.sub,
            None,
            self.name,
            false,
            RequestContext::new(who),
        )
    }
}

/// Stores of every resource in [`RESOURCES`] holding `objects`
/// (`(group, resource, object)`), created as a user would.
pub async fn stores(objects: Vec<(&str, &str, Value)>) -> Stores {
    let kv = Arc::new(storage::testing::MemoryKv::default());
    let raw: Arc<dyn storage::Storage> =
        Arc::new(storage::store::Store::new(kv, Arc::new(storage::JsonCodec)));
    let all: Vec<Arc<Store>> = RESOURCES
        .iter()
        .map(|(g, _, r, _, _)| {
            Arc::new(Store::new(
                info(g, r),
                Strategies::default(),
                raw.clone(),
                "/registry",
            ))
        })
        .collect();
    let stores = Stores::new(all);
    for (group, resource, object) in objects {
        if let Some(store) = stores.store(group, resource) {
            let created = store.create(object, &WriteOptions::default()).await;
            assert!(created.is_ok(), "fixture {resource}: {created:?}");
        }
    }
    stores
}

/// The message of a refusal, or "" when the plugin let the write through.
pub fn refusal(result: Result<(), ApiError>) -> String {
    result.err().map(|e| e.message).unwrap_or_default()
}

/// A fixed RBAC policy: one ClusterRole bound to one user.
struct Grant {
    role: storage::Object,
    binding: storage::Object,
}

#[async_trait::async_trait]
impl PolicyReader for Grant {
    async fn cluster_role_bindings(&self) -> Result<Vec<storage::Object>, ApiError> {
        Ok(vec![self.binding.clone()])
    }

    async fn role_bindings(&self, _: &str) -> Result<Vec<storage::Object>, ApiError> {
        Ok(Vec::new())
    }

    async fn cluster_role(&self, name: &str) -> Result<Option<storage::Object>, ApiError> {
        Ok((name == "granted").then(|| self.role.clone()))
    }

    async fn role(&self, _: &str, _: &str) -> Result<Option<storage::Object>, ApiError> {
        Ok(None)
    }
}

/// RBAC granting `user` the ClusterRole `rules` and nothing to anyone else.
pub fn rbac(user: &str, rules: Value) -> Arc<Authorization> {
    let role = json!({"kind": "ClusterRole", "metadata": {"name": "granted"}, "rules": rules});
    let binding = json!({"kind": "ClusterRoleBinding", "metadata": {"name": "granted"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "granted"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}]});
    let authorizer = Arc::new(RbacAuthorizer::new());
    authorizer.bind(Arc::new(Grant {
        role: Arc::new(role.into()),
        binding: Arc::new(binding.into()),
    }));
    Arc::new(Authorization {
        modes: vec![AuthorizationMode::Named(NamedAuthorizer::new(
            "RBAC", authorizer,
        ))],
    })
}

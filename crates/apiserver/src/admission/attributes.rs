//! The attributes of one admission request (upstream's
//! `admission.Attributes`): what is being done, to which object, by whom.

use std::fmt;
use std::sync::Arc;

use apimachinery::status::ApiError;
use serde_json::{json, Value};

use super::context::RequestContext;
use super::reinvocation::ReinvocationContext;
use crate::authentication::user::UserInfo;
use crate::registry::resource::ResourceInfo;
use storage::Object;

/// The operation being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// Upstream's spelling (`CREATE`, `UPDATE`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The kind of the options object sent with this operation.
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
            Operation::Connect => "",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    /// The kind a resource's objects are served as.
    pub fn of(info: &ResourceInfo) -> Self {
        GroupVersionKind {
            group: info.group.clone(),
            version: info.version.clone(),
            kind: info.kind.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// Go's `schema.GroupVersionResource.String()`: `apps/v1, Resource=deployments`.
impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

impl GroupVersionResource {
    /// The resource at the version `info` serves.
    pub fn of(info: &ResourceInfo) -> Self {
        GroupVersionResource {
            group: info.group.clone(),
            version: info.version.clone(),
            resource: info.resource.clone(),
        }
    }
}

/// One write as the plugins see it.
#[derive(Debug, Clone)]
pub struct Attributes {
    pub operation: Operation,
    /// The new object (None for delete).
    pub object: Option<serde_json::Value>,
    /// The stored object (None for create).
    pub old_object: Option<Object>,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    /// Empty for the main resource, e.g. `status` for its subresource.
    pub subresource: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    pub dry_run: bool,
    /// The CreateOptions/UpdateOptions/DeleteOptions of the request.
    pub options: Value,
    /// The request this write belongs to (its user, its warnings).
    pub request: Arc<RequestContext>,
    /// What the second pass of mutating admission needs to know.
    pub reinvocation: ReinvocationContext,
    /// The other versions of the resource, when it has any.
    pub equivalents: Option<super::Equivalents>,
}

impl Attributes {
    /// The attributes of a write to `info`'s resource. The namespace and
    /// name are taken from the object when the caller has none.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        info: &ResourceInfo,
        operation: Operation,
        object: Option<Value>,
        old_object: Option<Object>,
        subresource: &str,
        namespace: Option<&str>,
        name: &str,
        dry_run: bool,
        request: Arc<RequestContext>,
    ) -> Self {
        let mut options = json!({"kind": operation.options_kind(), "apiVersion": "meta.k8s.io/v1"});
        if dry_run {
            options["dryRun"] = json!(["All"]);
        }
        let meta_of = |field: &str| {
            object
                .as_ref()
                .or(old_object.as_deref().map(|o| o.value()))
                .and_then(|o| o.pointer(&format!("/metadata/{field}")))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let namespace = match namespace {
            Some(ns) if info.namespaced => ns.to_owned(),
            _ if info.namespaced => meta_of("namespace"),
            _ => String::new(),
        };
        let name = if name.is_empty() {
            meta_of("name")
        } else {
            name.to_owned()
        };
        Attributes {
            operation,
            object,
            old_object,
            kind: GroupVersionKind::of(info),
            resource: GroupVersionResource::of(info),
            subresource: subresource.to_owned(),
            namespace,
            name,
            dry_run,
            options,
            request,
            reinvocation: ReinvocationContext::default(),
            equivalents: None,
        }
    }

    pub fn user(&self) -> &UserInfo {
        &self.request.user
    }

    /// Whether this is about `resource` in `group` (the main resource, not
    /// a subresource).
    pub fn is(&self, group: &str, resource: &str) -> bool {
        self.resource.group == group && self.resource.resource == resource
    }

    /// `<resource> "<name>" is forbidden: <err>` (upstream's
    /// `admission.NewForbidden`).
    pub fn forbidden(&self, err: impl fmt::Display) -> ApiError {
        ApiError::forbidden(
            &self.resource.group,
            &self.resource.resource,
            &self.name,
            err,
        )
    }
}

//! The version a webhook or policy sees a request at (upstream's
//! `webhook/generic` `WebhookInvocation` and `VersionedAttributes`): the request's own when its rules
//! match it, else, with `matchPolicy: Equivalent`, the first other served
//! version of the same resource its rules match, the objects converted to
//! that version (and a mutating webhook's changes converted back).

use crate::admission::{Attributes, GroupVersionKind, GroupVersionResource};
use apimachinery::status::ApiError;
use serde_json::Value;

/// The resource and kind one webhook or policy sees the request as.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub resource: GroupVersionResource,
    pub kind: GroupVersionKind,
}

impl Target {
    /// The request as it was made.
    pub fn of_request(a: &Attributes) -> Self {
        Target {
            resource: a.resource.clone(),
            kind: a.kind.clone(),
        }
    }

    pub fn is_request_version(&self, a: &Attributes) -> bool {
        self.kind == a.kind
    }
}

/// The version rules see the request as: its own when `covers` accepts
/// its resource, else (unless the match policy is `Exact`) the first
/// equivalent version whose resource `covers` accepts.
pub fn first_covered(
    a: &Attributes,
    exact: bool,
    covers: impl Fn(&GroupVersionResource) -> bool,
) -> Option<Target> {
    if covers(&a.resource) {
        return Some(Target::of_request(a));
    }
    if exact {
        return None;
    }
    let versions = a.equivalents.as_ref()?.0.versions();
    versions
        .into_iter()
        .filter(|(resource, _)| *resource != a.resource)
        .find(|(resource, _)| covers(resource))
        .map(|(resource, kind)| Target { resource, kind })
}

/// `group/version`, or the bare version of the core group.
fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// The request's objects at another version.
pub struct Converted {
    pub object: Option<Value>,
    pub old_object: Option<Value>,
}

async fn convert(
    a: &Attributes,
    object: Option<&Value>,
    to: &str,
) -> Result<Option<Value>, ApiError> {
    let (Some(object), Some(equivalents)) = (object, &a.equivalents) else {
        return Ok(None);
    };
    equivalents.0.convert(object.clone(), to).await.map(Some)
}

/// The objects at `target`'s version; None when that is the request's
/// own (nothing to convert).
pub async fn objects_for(target: &Target, a: &Attributes) -> Result<Option<Converted>, ApiError> {
    if target.is_request_version(a) {
        return Ok(None);
    }
    let to = api_version(&target.kind.group, &target.kind.version);
    Ok(Some(Converted {
        object: convert(a, a.object.as_ref(), &to).await?,
        old_object: convert(a, a.old_object.as_deref().map(|o| o.value()), &to).await?,
    }))
}

/// A mutated object back at the request's version.
pub async fn back_to_request(a: &Attributes, object: Value) -> Result<Value, ApiError> {
    let to = api_version(&a.kind.group, &a.kind.version);
    Ok(convert(a, Some(&object), &to).await?.unwrap_or(object))
}

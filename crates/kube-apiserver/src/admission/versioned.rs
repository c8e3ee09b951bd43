//! The version a webhook sees a request at (upstream's webhook invocation
//! and versioned attributes): the request's own when the webhook's rules
//! match it, else, with `matchPolicy: Equivalent`, the first other served
//! version of the same resource its rules match, the objects converted to
//! that version (and a mutating webhook's changes converted back).

use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, GroupVersionKind, GroupVersionResource};
use serde_json::Value;

/// The resource and kind one webhook is called for.
pub struct Invocation {
    pub resource: GroupVersionResource,
    pub kind: GroupVersionKind,
}

impl Invocation {
    /// The request as it was made.
    pub fn of_request(a: &Attributes) -> Self {
        Invocation {
            resource: a.resource.clone(),
            kind: a.kind.clone(),
        }
    }

    fn is_request_version(&self, a: &Attributes) -> bool {
        self.kind == a.kind
    }
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

/// The objects at `invocation`'s version; None when that is the request's
/// own (nothing to convert).
pub async fn objects_for(
    invocation: &Invocation,
    a: &Attributes,
) -> Result<Option<Converted>, ApiError> {
    if invocation.is_request_version(a) {
        return Ok(None);
    }
    let to = api_version(&invocation.kind.group, &invocation.kind.version);
    Ok(Some(Converted {
        object: convert(a, a.object.as_ref(), &to).await?,
        old_object: convert(a, a.old_object.as_deref(), &to).await?,
    }))
}

/// A mutated object back at the request's version.
pub async fn back_to_request(a: &Attributes, object: Value) -> Result<Value, ApiError> {
    let to = api_version(&a.kind.group, &a.kind.version);
    Ok(convert(a, Some(&object), &to).await?.unwrap_or(object))
}

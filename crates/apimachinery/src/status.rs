//! API errors and the `metav1.Status` object they are reported as, the
//! equivalent of upstream's `k8s.io/apimachinery/pkg/api/errors`.
//!
//! Every constructor produces the same code, reason, message and details
//! as its upstream counterpart, so clients (kubectl, client-go) see the
//! responses they expect.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::field_errors::{aggregate_message, FieldError};

/// The message upstream's registry uses for a resourceVersion precondition
/// failure.
pub const OPTIMISTIC_LOCK_MESSAGE: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// Cause type marking a read at a resourceVersion the server has not seen.
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

/// Machine-readable reason of a failed request (upstream's `StatusReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StatusReason {
    /// No reason given (serialized as the empty string).
    #[default]
    Unknown,
    Unauthorized,
    Forbidden,
    NotFound,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    ServerTimeout,
    StoreReadError,
    Timeout,
    TooManyRequests,
    BadRequest,
    MethodNotAllowed,
    NotAcceptable,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    InternalError,
    Expired,
    ServiceUnavailable,
}

impl StatusReason {
    const ALL: [StatusReason; 20] = [
        StatusReason::Unknown,
        StatusReason::Unauthorized,
        StatusReason::Forbidden,
        StatusReason::NotFound,
        StatusReason::AlreadyExists,
        StatusReason::Conflict,
        StatusReason::Gone,
        StatusReason::Invalid,
        StatusReason::ServerTimeout,
        StatusReason::StoreReadError,
        StatusReason::Timeout,
        StatusReason::TooManyRequests,
        StatusReason::BadRequest,
        StatusReason::MethodNotAllowed,
        StatusReason::NotAcceptable,
        StatusReason::RequestEntityTooLarge,
        StatusReason::UnsupportedMediaType,
        StatusReason::InternalError,
        StatusReason::Expired,
        StatusReason::ServiceUnavailable,
    ];

    /// The wire form of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusReason::Unknown => "",
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::NotFound => "NotFound",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Gone => "Gone",
            StatusReason::Invalid => "Invalid",
            StatusReason::ServerTimeout => "ServerTimeout",
            StatusReason::StoreReadError => "StorageReadError",
            StatusReason::Timeout => "Timeout",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::BadRequest => "BadRequest",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::InternalError => "InternalError",
            StatusReason::Expired => "Expired",
            StatusReason::ServiceUnavailable => "ServiceUnavailable",
        }
    }

    /// Parses the wire form; unrecognised reasons become `Unknown`.
    pub fn from_wire(s: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .unwrap_or(StatusReason::Unknown)
    }

    fn is_unknown(&self) -> bool {
        *self == StatusReason::Unknown
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StatusReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StatusReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(StatusReason::from_wire(&s))
    }
}

/// One cause of a failure (upstream's `StatusCause`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatusCause {
    /// Machine-readable cause type, e.g. `FieldValueRequired`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The offending field, e.g. `metadata.name`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// Extra data about a failure (upstream's `StatusDetails`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// For most errors the resource (`pods`), for `Invalid` the kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_seconds: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// Empty `metadata` of a Status (a `ListMeta` with nothing set).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatusMetadata {}

/// The `metav1.Status` object, with its fields in upstream's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub kind: String,
    pub api_version: String,
    #[serde(default)]
    pub metadata: StatusMetadata,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "StatusReason::is_unknown")]
    pub reason: StatusReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: i32,
}

impl Status {
    /// A `Success` status, as returned e.g. by deletes of some resources.
    pub fn success(details: Option<StatusDetails>) -> Self {
        Status {
            kind: "Status".to_owned(),
            api_version: "v1".to_owned(),
            metadata: StatusMetadata {},
            status: "Success".to_owned(),
            message: String::new(),
            reason: StatusReason::Unknown,
            details,
            code: 0,
        }
    }
}

/// A failed API request, rendered to clients as a `Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    pub reason: StatusReason,
    pub message: String,
    pub details: Option<Box<StatusDetails>>,
}

/// `resource` or `resource.group`, as upstream's `GroupResource.String()`.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// Go's `%q` of a string.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    crate::util::gofmt::push_go_quoted(&mut out, s);
    out
}

fn object_details(group: &str, kind: &str, name: &str) -> Option<StatusDetails> {
    Some(StatusDetails {
        name: name.to_owned(),
        group: group.to_owned(),
        kind: kind.to_owned(),
        ..StatusDetails::default()
    })
}

fn retry_details(retry_after_seconds: i32) -> Option<StatusDetails> {
    Some(StatusDetails {
        retry_after_seconds,
        ..StatusDetails::default()
    })
}

impl ApiError {
    /// An error with the given code, reason and message and no details.
    pub fn new(code: u16, reason: StatusReason, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Option<StatusDetails>) -> Self {
        self.details = details.map(Box::new);
        self
    }

    /// 404: `pods "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let msg = format!("{} {} not found", qualified(group, resource), quoted(name));
        Self::new(404, StatusReason::NotFound, msg)
            .with_details(object_details(group, resource, name))
    }

    /// 409 AlreadyExists: `pods "x" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let msg = format!(
            "{} {} already exists",
            qualified(group, resource),
            quoted(name)
        );
        Self::new(409, StatusReason::AlreadyExists, msg)
            .with_details(object_details(group, resource, name))
    }

    /// 409 AlreadyExists for a name generated from `generateName`.
    pub fn generate_name_conflict(
        group: &str,
        resource: &str,
        name: &str,
        retry_after_seconds: i32,
    ) -> Self {
        let msg = format!(
            "{} {} already exists, the server was not able to generate a unique name for the object",
            qualified(group, resource),
            quoted(name)
        );
        let mut details = object_details(group, resource, name);
        if let Some(d) = details.as_mut() {
            d.retry_after_seconds = retry_after_seconds;
        }
        Self::new(409, StatusReason::AlreadyExists, msg).with_details(details)
    }

    /// 409 Conflict: `Operation cannot be fulfilled on pods "x": <err>`.
    pub fn conflict(group: &str, resource: &str, name: &str, err: impl fmt::Display) -> Self {
        let msg = format!(
            "Operation cannot be fulfilled on {} {}: {err}",
            qualified(group, resource),
            quoted(name)
        );
        Self::new(409, StatusReason::Conflict, msg)
            .with_details(object_details(group, resource, name))
    }

    /// 409 Conflict for a stale resourceVersion precondition.
    pub fn optimistic_lock_conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(group, resource, name, OPTIMISTIC_LOCK_MESSAGE)
    }

    /// 409 Conflict listing server-side apply field-manager conflicts.
    pub fn apply_conflict(causes: Vec<StatusCause>, message: impl Into<String>) -> Self {
        Self::new(409, StatusReason::Conflict, message).with_details(Some(StatusDetails {
            causes,
            ..StatusDetails::default()
        }))
    }

    /// 422 Invalid: `Pod "x" is invalid: <aggregated field errors>`.
    pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Self {
        let qualified_kind = qualified(group, kind);
        let msg = match aggregate_message(errors) {
            Some(agg) => format!("{qualified_kind} {} is invalid: {agg}", quoted(name)),
            None => format!("{qualified_kind} {} is invalid", quoted(name)),
        };
        let details = StatusDetails {
            name: name.to_owned(),
            group: group.to_owned(),
            kind: kind.to_owned(),
            causes: errors.iter().map(FieldError::to_cause).collect(),
            ..StatusDetails::default()
        };
        Self::new(422, StatusReason::Invalid, msg).with_details(Some(details))
    }

    /// 400 BadRequest with `reason` as the message.
    pub fn bad_request(reason: impl Into<String>) -> Self {
        Self::new(400, StatusReason::BadRequest, reason)
    }

    /// 401 Unauthorized; an empty reason becomes `not authorized`.
    pub fn unauthorized(reason: &str) -> Self {
        let msg = if reason.is_empty() {
            "not authorized"
        } else {
            reason
        };
        Self::new(401, StatusReason::Unauthorized, msg)
    }

    /// 403 Forbidden: `pods "x" is forbidden: <err>` (with the name, the
    /// resource or both left out when empty, as upstream does).
    pub fn forbidden(group: &str, resource: &str, name: &str, err: impl fmt::Display) -> Self {
        let msg = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {err}")
        } else if name.is_empty() {
            format!("{} is forbidden: {err}", qualified(group, resource))
        } else {
            format!(
                "{} {} is forbidden: {err}",
                qualified(group, resource),
                quoted(name)
            )
        };
        Self::new(403, StatusReason::Forbidden, msg)
            .with_details(object_details(group, resource, name))
    }

    /// 405: `<action> is not supported on resources of kind "pods"`.
    pub fn method_not_supported(group: &str, resource: &str, action: &str) -> Self {
        let msg = format!(
            "{action} is not supported on resources of kind {}",
            quoted(&qualified(group, resource))
        );
        Self::new(405, StatusReason::MethodNotAllowed, msg)
            .with_details(object_details(group, resource, ""))
    }

    /// 410 Gone.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Gone, message)
    }

    /// 410 Expired, e.g. for a continue token or watch resourceVersion that
    /// was compacted away.
    pub fn resource_expired(message: impl Into<String>) -> Self {
        Self::new(410, StatusReason::Expired, message)
    }

    /// 429 TooManyRequests with `message` as is and a Retry-After hint.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        Self::new(429, StatusReason::TooManyRequests, message)
            .with_details(retry_details(retry_after_seconds))
    }

    /// 429 TooManyRequests: `Too many requests: <message>`, no details.
    pub fn too_many_requests_error(message: &str) -> Self {
        Self::new(
            429,
            StatusReason::TooManyRequests,
            format!("Too many requests: {message}"),
        )
    }

    /// 500 ServerTimeout: the operation could not complete in time.
    pub fn server_timeout(
        group: &str,
        resource: &str,
        operation: &str,
        retry_after_seconds: i32,
    ) -> Self {
        let msg = format!(
            "The {operation} operation against {} could not be completed at this time, please try again.",
            qualified(group, resource)
        );
        let mut details = object_details(group, resource, operation);
        if let Some(d) = details.as_mut() {
            d.retry_after_seconds = retry_after_seconds;
        }
        Self::new(500, StatusReason::ServerTimeout, msg).with_details(details)
    }

    /// 504 Timeout: `Timeout: <message>`.
    pub fn timeout(message: &str, retry_after_seconds: i32) -> Self {
        Self::new(504, StatusReason::Timeout, format!("Timeout: {message}"))
            .with_details(retry_details(retry_after_seconds))
    }

    /// 504 Timeout for a read at a resourceVersion newer than the server's
    /// current one, with the `ResourceVersionTooLarge` cause.
    pub fn too_large_resource_version(
        minimum: u64,
        current: u64,
        retry_after_seconds: i32,
    ) -> Self {
        let mut err = Self::timeout(
            &format!("Too large resource version: {minimum}, current: {current}"),
            retry_after_seconds,
        );
        if let Some(d) = err.details.as_mut() {
            d.causes = vec![StatusCause {
                reason: CAUSE_RESOURCE_VERSION_TOO_LARGE.to_owned(),
                message: "Too large resource version".to_owned(),
                field: String::new(),
            }];
        }
        err
    }

    /// 500 InternalError: `Internal error occurred: <err>`.
    pub fn internal_error(err: impl fmt::Display) -> Self {
        let text = err.to_string();
        let msg = format!("Internal error occurred: {text}");
        Self::new(500, StatusReason::InternalError, msg).with_details(Some(StatusDetails {
            causes: vec![StatusCause {
                message: text,
                ..StatusCause::default()
            }],
            ..StatusDetails::default()
        }))
    }

    /// 503 ServiceUnavailable with `reason` as the message.
    pub fn service_unavailable(reason: impl Into<String>) -> Self {
        Self::new(503, StatusReason::ServiceUnavailable, reason)
    }

    /// 415 for a request body in a media type the server cannot decode.
    pub fn unsupported_media_type<S: AsRef<str>>(accepted: &[S]) -> Self {
        let msg = format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            join(accepted)
        );
        Self::new(415, StatusReason::UnsupportedMediaType, msg)
    }

    /// 406 when no acceptable response media type can be produced.
    pub fn not_acceptable<S: AsRef<str>>(accepted: &[S]) -> Self {
        let msg = format!(
            "only the following media types are accepted: {}",
            join(accepted)
        );
        Self::new(406, StatusReason::NotAcceptable, msg)
    }

    /// 406 when a conversion (e.g. to a Table) cannot be served in the
    /// requested media type.
    pub fn not_acceptable_conversion<S: AsRef<str>>(target: &str, accepted: &[S]) -> Self {
        let msg = format!(
            "only the following media types are accepted when converting to {target}: {}",
            join(accepted)
        );
        Self::new(406, StatusReason::NotAcceptable, msg)
    }

    /// 413: `Request entity too large: <message>`.
    pub fn request_entity_too_large(message: &str) -> Self {
        Self::new(
            413,
            StatusReason::RequestEntityTooLarge,
            format!("Request entity too large: {message}"),
        )
    }

    /// The HTTP status code.
    pub fn status_code(&self) -> http::StatusCode {
        http::StatusCode::from_u16(self.code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The value for a `Retry-After` header, when the error carries one.
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
    }

    /// The error as a `metav1.Status` object.
    pub fn to_status(&self) -> Status {
        Status {
            kind: "Status".to_owned(),
            api_version: "v1".to_owned(),
            metadata: StatusMetadata {},
            status: "Failure".to_owned(),
            message: self.message.clone(),
            reason: self.reason,
            details: self.details.as_deref().cloned(),
            code: i32::from(self.code),
        }
    }

    /// The error as `metav1.Status` JSON, fields in upstream's order.
    pub fn to_status_json(&self) -> Value {
        serde_json::to_value(self.to_status()).unwrap_or(Value::Null)
    }

    /// Reads a failure `Status` back into an error; `None` when `value` is
    /// not a Status with a failure code.
    pub fn from_status_json(value: &Value) -> Option<Self> {
        let status: Status = serde_json::from_value(value.clone()).ok()?;
        if status.kind != "Status" || status.status == "Success" {
            return None;
        }
        Some(ApiError {
            code: u16::try_from(status.code).ok()?,
            reason: status.reason,
            message: status.message,
            details: status.details.map(Box::new),
        })
    }
}

fn join<S: AsRef<str>>(items: &[S]) -> String {
    items
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;

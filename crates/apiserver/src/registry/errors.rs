//! Storage errors as API errors (upstream's `storeerr` interpretation):
//! the one place where a storage failure becomes a `Status`.

use apimachinery::status::{ApiError, StatusReason};
use storage::StorageError;

use super::resource::ResourceInfo;

/// The message of upstream's 410 for a continue token whose revision has
/// been compacted.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

pub fn interpret(err: StorageError, info: &ResourceInfo, name: &str) -> ApiError {
    let (group, resource) = (info.group.as_str(), info.resource.as_str());
    match err {
        StorageError::NotFound { .. } => ApiError::not_found(group, resource, name),
        StorageError::AlreadyExists { .. } => ApiError::already_exists(group, resource, name),
        StorageError::Conflict { .. } => ApiError::optimistic_lock_conflict(group, resource, name),
        StorageError::InvalidPrecondition { message, .. } => {
            ApiError::conflict(group, resource, name, message)
        }
        StorageError::TooOldResourceVersion {
            requested,
            compacted,
        } => ApiError::resource_expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        StorageError::ContinueExpired { .. } => ApiError::resource_expired(CONTINUE_EXPIRED),
        StorageError::TooLargeResourceVersion { requested, current } => {
            ApiError::too_large_resource_version(
                u64::try_from(requested).unwrap_or_default(),
                u64::try_from(current).unwrap_or_default(),
                1,
            )
        }
        StorageError::InvalidContinue(message) => {
            ApiError::bad_request(format!("invalid continue token: {message}"))
        }
        StorageError::TooLarge { .. } => {
            ApiError::request_entity_too_large("etcdserver: request is too large")
        }
        // Upstream's storeerr: an unreachable backend is a ServerTimeout
        // (500 with `Retry-After: 2`, which clients retry), as a timeout.
        StorageError::Timeout(_) | StorageError::Unreachable(_) => {
            ApiError::server_timeout(group, resource, "", 2)
        }
        // Not a storage error upstream: `ErrorToAPIStatus` makes it a 500
        // with an empty reason and the backend's message.
        StorageError::Backend(message) => ApiError::new(500, StatusReason::Unknown, message),
        StorageError::Callback(inner) => match inner.downcast_ref::<ApiError>() {
            Some(api) => api.clone(),
            None => ApiError::internal_error(inner),
        },
        other @ (StorageError::Corrupt { .. } | StorageError::Internal(_)) => {
            ApiError::internal_error(other)
        }
    }
}

/// Wraps an API error raised inside a storage callback so that it comes out
/// of storage unchanged.
pub fn into_storage(err: ApiError) -> StorageError {
    StorageError::callback(err)
}

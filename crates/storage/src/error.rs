//! Storage errors. The API layer maps each to upstream's `Status` (see
//! upstream's `storage/errors.go` and `registry/generic/registry/storage_factory`
//! error interpretation): NotFound → 404, AlreadyExists → 409, Conflict → 409,
//! TooOldResourceVersion/ContinueExpired → 410 Gone (reason Expired),
//! TooLargeResourceVersion → 504 Timeout, InvalidContinue → 400, …

use std::sync::Arc;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist (at the requested revision).
    #[error("key not found: {key}")]
    NotFound { key: String },
    /// `create` of a key that already exists.
    #[error("key exists: {key}")]
    AlreadyExists { key: String },
    /// A compare-on-revision write lost against a concurrent writer, or a
    /// precondition on resourceVersion did not hold.
    #[error("conflict on {key}: {message}")]
    Conflict { key: String, message: String },
    /// A precondition on uid did not hold (upstream: "Precondition failed: UID in
    /// precondition: …, UID in object meta: …").
    #[error("precondition failed on {key}: {message}")]
    InvalidPrecondition { key: String, message: String },
    /// The requested revision has been compacted away (watch or list at an old
    /// revision): upstream's "too old resource version".
    #[error("too old resource version: {requested} ({compacted})")]
    TooOldResourceVersion { requested: i64, compacted: i64 },
    /// A continue token whose revision has been compacted.
    #[error("continue token expired: revision {requested} is compacted")]
    ContinueExpired { requested: i64 },
    /// The requested revision is newer than anything the store has seen.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion { requested: i64, current: i64 },
    /// A continue token that cannot be decoded or does not belong to the list.
    #[error("invalid continue token: {0}")]
    InvalidContinue(String),
    /// A value over the backend's request size limit.
    #[error("request is too large: {size} bytes, limit {limit}")]
    TooLarge { size: usize, limit: usize },
    /// A stored value that cannot be decoded.
    #[error("failed to decode object at {key}: {message}")]
    Corrupt { key: String, message: String },
    /// The backend cannot be reached.
    #[error("storage is unreachable: {0}")]
    Unreachable(String),
    /// The backend did not answer in time.
    #[error("storage request timed out: {0}")]
    Timeout(String),
    /// Anything else that went wrong inside the backend.
    #[error("storage internal error: {0}")]
    Internal(String),
    /// A failure the backend reports in words of its own that upstream's
    /// storage layer passes up unchanged, as etcd's `etcdserver: mvcc:
    /// database space exceeded` when its space quota is reached: upstream
    /// answers it with a 500 whose reason is empty and whose message is the
    /// backend's text.
    #[error("{0}")]
    Backend(String),
    /// An error returned by a caller's callback (update function or deletion
    /// validation), passed through unchanged so the caller can downcast it.
    #[error("{0}")]
    Callback(Arc<dyn std::error::Error + Send + Sync>),
}

impl StorageError {
    pub fn internal(e: impl std::fmt::Display) -> Self {
        StorageError::Internal(e.to_string())
    }

    /// Wraps a caller's error so it passes through storage unchanged.
    pub fn callback(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StorageError::Callback(Arc::new(e))
    }
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

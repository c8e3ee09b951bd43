//! Errors of the etcd backend: [`ConnectError`] for setting up a client, and
//! the translation of etcd's failures into [`StorageError`].
//!
//! etcd reports its domain errors as gRPC statuses whose message carries the
//! etcd error text (`etcdserver: mvcc: required revision has been compacted`,
//! …), the same strings upstream's client library matches on.

use std::path::PathBuf;
use std::time::Duration;

use storage::StorageError;
use tonic::Code;

/// Why a client for etcd could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// `--etcd-servers` is empty.
    #[error("no etcd servers configured (--etcd-servers)")]
    NoServers,
    /// A client certificate was given without its key, or the reverse.
    #[error("--etcd-certfile and --etcd-keyfile must be given together")]
    IncompleteClientCert,
    /// A TLS file could not be read.
    #[error("failed to read {path}: {source}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The client rejected the configuration (an endpoint that is not a URL,
    /// TLS options with an `http://` endpoint, …).
    #[error("invalid etcd client configuration: {0}")]
    Client(#[source] etcd_client::Error),
    /// etcd did not answer before the startup deadline.
    #[error("unable to reach etcd at {servers:?} within {waited:?}: {last_error}")]
    Unavailable {
        servers: Vec<String>,
        waited: Duration,
        last_error: StorageError,
    },
}

/// etcd's failures, sorted by what the storage layer needs to tell apart.
/// The variants that need request context (the requested revision, the
/// value size) are completed into a [`StorageError`] by the caller.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The requested revision has been compacted.
    Compacted,
    /// The requested revision is newer than the store's.
    FutureRevision,
    /// The request exceeded etcd's `--max-request-bytes` (or the gRPC
    /// message limit derived from it).
    TooLarge,
    /// Connecting to the member failed: the request was never sent, so it
    /// may go to another member, even a write.
    NotSent(String),
    /// The connection failed with the request in flight: only a read may be
    /// repeated elsewhere.
    Broken(String),
    /// The member has no leader (an election is under way): etcd refuses
    /// the request before processing it, so any request may be repeated
    /// once a leader is elected.
    NoLeader(String),
    /// The leader changed while a linearizable read waited for it: the read
    /// may be repeated.
    LeaderChanged(String),
    /// Anything else, already translated.
    Other(StorageError),
}

const MSG_COMPACTED: &str = "required revision has been compacted";
const MSG_FUTURE_REV: &str = "required revision is a future revision";
const MSG_TOO_LARGE: &str = "request is too large";
const MSG_GRPC_TOO_LARGE: &str = "larger than max";
const MSG_TIMED_OUT: &str = "request timed out";
const MSG_NO_SPACE: &str = "database space exceeded";
const MSG_NO_LEADER: &str = "etcdserver: no leader";
const MSG_LEADER_CHANGED: &str = "etcdserver: leader changed";

impl Failure {
    pub(crate) fn classify(err: etcd_client::Error) -> Self {
        match err {
            etcd_client::Error::GRpcStatus(status) => Self::from_status(&status),
            etcd_client::Error::TransportError(e) => Self::NotSent(e.to_string()),
            etcd_client::Error::IoError(e) => Self::Broken(e.to_string()),
            // The request channel of a watch closed under us.
            etcd_client::Error::WatchError(e) => Self::Broken(e),
            other => Self::Other(StorageError::internal(other)),
        }
    }

    fn from_status(status: &tonic::Status) -> Self {
        let message = status.message();
        if message.contains(MSG_COMPACTED) {
            return Self::Compacted;
        }
        if message.contains(MSG_FUTURE_REV) {
            return Self::FutureRevision;
        }
        if message.contains(MSG_TOO_LARGE)
            || (status.code() == Code::ResourceExhausted && message.contains(MSG_GRPC_TOO_LARGE))
        {
            return Self::TooLarge;
        }
        if status.code() == Code::ResourceExhausted && message.contains(MSG_NO_SPACE) {
            // The space quota's alarm: upstream passes etcd's text through.
            return Self::Other(StorageError::Backend(message.to_owned()));
        }
        let text = format!("etcd: {message}");
        // A status with a source was made by the client's transport, not
        // sent by etcd; the transport reports failures to connect (nothing
        // was sent) as Unavailable.
        if std::error::Error::source(status).is_some() {
            return match status.code() {
                Code::Unavailable => Self::NotSent(text),
                Code::DeadlineExceeded => Self::Other(StorageError::Timeout(text)),
                _ => Self::Broken(text),
            };
        }
        if status.code() == Code::Unavailable && message.contains(MSG_NO_LEADER) {
            return Self::NoLeader(text);
        }
        if status.code() == Code::Unavailable && message.contains(MSG_LEADER_CHANGED) {
            return Self::LeaderChanged(text);
        }
        Self::Other(match status.code() {
            Code::DeadlineExceeded => StorageError::Timeout(text),
            // etcd answers "request timed out" (with Unavailable) when raft
            // did not commit in time: a timeout, not a connection failure.
            Code::Unavailable if message.contains(MSG_TIMED_OUT) => StorageError::Timeout(text),
            Code::Unavailable | Code::Cancelled => StorageError::Unreachable(text),
            _ => StorageError::Internal(text),
        })
    }

    /// Completes a failure with no request-specific meaning.
    pub(crate) fn into_storage_error(self) -> StorageError {
        match self {
            Self::Compacted => StorageError::Internal(format!("etcd: {MSG_COMPACTED}")),
            Self::FutureRevision => StorageError::Internal(format!("etcd: {MSG_FUTURE_REV}")),
            Self::TooLarge => StorageError::Internal(format!("etcd: {MSG_TOO_LARGE}")),
            Self::NotSent(e) | Self::Broken(e) | Self::NoLeader(e) | Self::LeaderChanged(e) => {
                StorageError::Unreachable(e)
            }
            Self::Other(e) => e,
        }
    }
}

/// Which failures a request may be repeated on another member after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Reads: any connection failure.
    Idempotent,
    /// Writes: only when the request was certainly not sent.
    NotSentOnly,
}

impl Failure {
    pub(crate) fn may_retry(&self, retry: Retry) -> bool {
        match self {
            Self::NotSent(_) | Self::NoLeader(_) => true,
            Self::Broken(_) | Self::LeaderChanged(_) => retry == Retry::Idempotent,
            _ => false,
        }
    }

    /// A failure of the cluster's leadership, not of one member's
    /// connection: worth waiting out rather than giving up after one round
    /// of the members.
    pub(crate) fn is_election(&self) -> bool {
        matches!(self, Self::NoLeader(_) | Self::LeaderChanged(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Status;

    fn classify(status: Status) -> Failure {
        Failure::classify(etcd_client::Error::GRpcStatus(status))
    }

    #[test]
    fn etcd_domain_errors_are_recognised_by_message() {
        let compacted =
            Status::out_of_range("etcdserver: mvcc: required revision has been compacted");
        assert!(matches!(classify(compacted), Failure::Compacted));
        let future =
            Status::out_of_range("etcdserver: mvcc: required revision is a future revision");
        assert!(matches!(classify(future), Failure::FutureRevision));
        let large = Status::invalid_argument("etcdserver: request is too large");
        assert!(matches!(classify(large), Failure::TooLarge));
        let grpc_large = Status::resource_exhausted(
            "grpc: received message larger than max (3145781 vs. 2097152)",
        );
        assert!(matches!(classify(grpc_large), Failure::TooLarge));
        let no_space = Status::resource_exhausted("etcdserver: mvcc: database space exceeded");
        assert!(matches!(
            classify(no_space),
            Failure::Other(StorageError::Backend(m)) if m == "etcdserver: mvcc: database space exceeded"
        ));
    }

    #[test]
    fn server_statuses_map_by_code() {
        let timed_out = Status::unavailable("etcdserver: request timed out");
        assert!(matches!(
            classify(timed_out),
            Failure::Other(StorageError::Timeout(_))
        ));
        let deadline = Status::deadline_exceeded("context deadline exceeded");
        assert!(matches!(
            classify(deadline),
            Failure::Other(StorageError::Timeout(_))
        ));
        // Refused before processing: any request may be repeated.
        let no_leader = classify(Status::unavailable("etcdserver: no leader"));
        assert!(no_leader.may_retry(Retry::NotSentOnly) && no_leader.is_election());
        // Only a read waits for the leader: a write is not repeated.
        let changed = classify(Status::unavailable("etcdserver: leader changed"));
        assert!(changed.may_retry(Retry::Idempotent) && !changed.may_retry(Retry::NotSentOnly));
        let stopped = classify(Status::unavailable("etcdserver: server stopped"));
        assert!(!stopped.may_retry(Retry::NotSentOnly));
        assert!(matches!(
            stopped,
            Failure::Other(StorageError::Unreachable(_))
        ));
        let denied = Status::permission_denied("etcdserver: permission denied");
        assert!(matches!(
            classify(denied),
            Failure::Other(StorageError::Internal(_))
        ));
    }

    #[test]
    fn retry_policy() {
        let not_sent = Failure::NotSent("tcp connect error".into());
        assert!(not_sent.may_retry(Retry::NotSentOnly));
        assert!(not_sent.may_retry(Retry::Idempotent));
        let broken = Failure::Broken("transport error".into());
        assert!(!broken.may_retry(Retry::NotSentOnly));
        assert!(broken.may_retry(Retry::Idempotent));
        assert!(!Failure::Compacted.may_retry(Retry::Idempotent));
        assert!(matches!(
            broken.into_storage_error(),
            StorageError::Unreachable(_)
        ));
    }
}

//! The gRPC client of a KMS v2 plugin (upstream's `kmsv2/grpc_service.go`):
//! the plugin listens on a unix socket named by a `unix://` endpoint; every
//! call is bounded by the configured timeout. The connection is made
//! lazily and re-made after failures, so a plugin may start after the API
//! server or restart under it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::api::key_management_service_client::KeyManagementServiceClient;
use crate::api::{DecryptRequest, EncryptRequest, EncryptResponse, StatusRequest, StatusResponse};

/// Why a plugin could not be reached or answered with an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("remote KMS provider can't use empty string as endpoint")]
    EmptyEndpoint,
    #[error("unsupported scheme {0:?} for remote KMS provider")]
    Scheme(String),
    #[error("a KMS plugin connection needs a running tokio runtime")]
    NoRuntime,
    /// The call failed; worded like gRPC-Go so messages match upstream's.
    #[error("rpc error: code = {code} desc = {message}")]
    Rpc { code: String, message: String },
    #[error("rpc error: code = DeadlineExceeded desc = context deadline exceeded")]
    Timeout,
}

impl From<tonic::Status> for ClientError {
    fn from(s: tonic::Status) -> Self {
        ClientError::Rpc {
            code: format!("{:?}", s.code()),
            message: s.message().to_owned(),
        }
    }
}

/// The socket an endpoint names: a path, or a Linux abstract name
/// (`unix:///@name`), kept as the NUL-led path tokio connects to.
fn socket_path(endpoint: &str) -> Result<PathBuf, ClientError> {
    if endpoint.is_empty() {
        return Err(ClientError::EmptyEndpoint);
    }
    let (scheme, rest) = endpoint.split_once(':').unwrap_or(("", endpoint));
    if scheme != "unix" {
        return Err(ClientError::Scheme(scheme.to_owned()));
    }
    // As a URL: `//authority/path`; the authority is ignored.
    let path = match rest.strip_prefix("//") {
        Some(after) => after.find('/').map_or("", |i| &after[i..]),
        None => rest,
    };
    Ok(match path.strip_prefix("/@") {
        Some(name) => {
            let mut raw = OsString::from("\0");
            raw.push(name);
            PathBuf::from(raw)
        }
        None => PathBuf::from(path),
    })
}

/// A KMS v2 plugin reached over its unix socket.
#[derive(Clone)]
pub struct KmsClient {
    inner: KeyManagementServiceClient<Channel>,
    timeout: Duration,
}

impl fmt::Debug for KmsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KmsClient")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl KmsClient {
    /// A client of the plugin at `endpoint` (`unix:///path`). Nothing is
    /// dialled until the first call. Must run inside a tokio runtime.
    pub fn new(endpoint: &str, timeout: Duration) -> Result<Self, ClientError> {
        let path = Arc::new(socket_path(endpoint)?);
        let handle = tokio::runtime::Handle::try_current().map_err(|_| ClientError::NoRuntime)?;
        let _runtime = handle.enter();
        // The URI only names the HTTP/2 authority, as upstream's "localhost".
        let channel = Endpoint::from_static("http://localhost").connect_with_connector_lazy(
            tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path.as_path()).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }),
        );
        Ok(KmsClient {
            inner: KeyManagementServiceClient::new(channel),
            timeout,
        })
    }

    /// The bound of each call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, ClientError> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(resp)) => Ok(resp.into_inner()),
            Ok(Err(status)) => Err(status.into()),
            Err(_) => Err(ClientError::Timeout),
        }
    }

    pub async fn status(&self) -> Result<StatusResponse, ClientError> {
        let mut client = self.inner.clone();
        self.bounded(client.status(StatusRequest {})).await
    }

    pub async fn encrypt(
        &self,
        uid: String,
        plaintext: Bytes,
    ) -> Result<EncryptResponse, ClientError> {
        let mut client = self.inner.clone();
        self.bounded(client.encrypt(EncryptRequest { plaintext, uid }))
            .await
    }

    pub async fn decrypt(
        &self,
        uid: String,
        ciphertext: Bytes,
        key_id: String,
        annotations: BTreeMap<String, Bytes>,
    ) -> Result<Bytes, ClientError> {
        let mut client = self.inner.clone();
        let req = DecryptRequest {
            ciphertext,
            uid,
            key_id,
            annotations,
        };
        Ok(self.bounded(client.decrypt(req)).await?.plaintext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_as_upstream() {
        assert_eq!(
            socket_path("unix:///var/run/kms.sock"),
            Ok(PathBuf::from("/var/run/kms.sock"))
        );
        assert_eq!(
            socket_path("unix:///@kms"),
            Ok(PathBuf::from(OsString::from("\0kms")))
        );
        assert_eq!(socket_path(""), Err(ClientError::EmptyEndpoint));
        assert_eq!(
            socket_path("tcp://10.0.0.1:80"),
            Err(ClientError::Scheme("tcp".into()))
        );
        assert_eq!(
            ClientError::Scheme("tcp".into()).to_string(),
            "unsupported scheme \"tcp\" for remote KMS provider"
        );
    }

    #[test]
    fn a_client_needs_a_runtime() {
        assert_eq!(
            KmsClient::new("unix:///x.sock", Duration::from_secs(1)).err(),
            Some(ClientError::NoRuntime)
        );
    }
}

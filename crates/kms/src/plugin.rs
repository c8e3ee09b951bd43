//! A minimal KMS v2 plugin holding its keys locally: a stand-in for an
//! external KMS (Vault, a cloud KMS) in tests and local runs, served over a
//! unix socket like a real plugin. Each key ID names an AES-256-GCM key
//! derived from one master key, so changing the key ID rotates the key
//! while data under older key IDs stays decryptable. Its health and key ID
//! can be changed while it serves, and it counts the calls it answers.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Request, Response, Status};

use crate::api::key_management_service_server::{KeyManagementService, KeyManagementServiceServer};
use crate::api::{
    DecryptRequest, DecryptResponse, EncryptRequest, EncryptResponse, StatusRequest, StatusResponse,
};

/// The annotation the plugin attaches to what it encrypts.
pub const ANNOTATION: &str = "local-key.kms.k8s.example.com";

/// What the plugin's Status reports and how often it was called.
#[derive(Debug)]
pub struct PluginState {
    key_id: RwLock<String>,
    healthz: RwLock<String>,
    encrypt_calls: AtomicUsize,
    decrypt_calls: AtomicUsize,
}

impl PluginState {
    /// Encrypts with (and reports) `key_id` from now on.
    pub fn set_key_id(&self, key_id: &str) {
        *self.key_id.write().unwrap_or_else(|p| p.into_inner()) = key_id.to_owned();
    }

    /// Status answers `healthz` (anything but "ok" is a failure).
    pub fn set_healthz(&self, healthz: &str) {
        *self.healthz.write().unwrap_or_else(|p| p.into_inner()) = healthz.to_owned();
    }

    pub fn key_id(&self) -> String {
        self.key_id
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn healthz(&self) -> String {
        self.healthz
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn encrypt_calls(&self) -> usize {
        self.encrypt_calls.load(Ordering::Relaxed)
    }

    pub fn decrypt_calls(&self) -> usize {
        self.decrypt_calls.load(Ordering::Relaxed)
    }
}

/// The plugin; clones share their state.
#[derive(Debug, Clone)]
pub struct LocalKeyPlugin {
    master: [u8; 32],
    state: Arc<PluginState>,
}

impl LocalKeyPlugin {
    pub fn new(master: [u8; 32], key_id: &str) -> Self {
        LocalKeyPlugin {
            master,
            state: Arc::new(PluginState {
                key_id: RwLock::new(key_id.to_owned()),
                healthz: RwLock::new("ok".to_owned()),
                encrypt_calls: AtomicUsize::new(0),
                decrypt_calls: AtomicUsize::new(0),
            }),
        }
    }

    pub fn state(&self) -> Arc<PluginState> {
        self.state.clone()
    }

    /// The key of `key_id`: SHA-256 of the master key and the key ID.
    fn key(&self, key_id: &str) -> Result<LessSafeKey, Status> {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(&self.master);
        ctx.update(key_id.as_bytes());
        let digest = ctx.finish();
        let unbound = UnboundKey::new(&AES_256_GCM, digest.as_ref())
            .map_err(|_| Status::internal("bad key length"))?;
        Ok(LessSafeKey::new(unbound))
    }

    /// Serves on a unix socket at `path` (replacing a stale socket file)
    /// until `shutdown` resolves, then removes the socket file.
    pub async fn serve(
        self,
        path: &Path,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), PluginError> {
        match tokio::fs::remove_file(path).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(PluginError::Io(e)),
        }
        let listener = tokio::net::UnixListener::bind(path).map_err(PluginError::Io)?;
        let served = tonic::transport::Server::builder()
            .add_service(KeyManagementServiceServer::new(self))
            .serve_with_incoming_shutdown(UnixListenerStream::new(listener), shutdown)
            .await;
        // A socket file left behind would look like a plugin to clients.
        let _ = tokio::fs::remove_file(path).await;
        served.map_err(PluginError::Serve)
    }
}

/// Why the plugin stopped serving.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("socket: {0}")]
    Io(#[source] std::io::Error),
    #[error("serving: {0}")]
    Serve(#[source] tonic::transport::Error),
}

#[tonic::async_trait]
impl KeyManagementService for LocalKeyPlugin {
    async fn status(&self, _: Request<StatusRequest>) -> Result<Response<StatusResponse>, Status> {
        Ok(Response::new(StatusResponse {
            version: "v2".into(),
            healthz: self.state.healthz(),
            key_id: self.state.key_id(),
        }))
    }

    async fn encrypt(
        &self,
        req: Request<EncryptRequest>,
    ) -> Result<Response<EncryptResponse>, Status> {
        self.state.encrypt_calls.fetch_add(1, Ordering::Relaxed);
        let key_id = self.state.key_id();
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| Status::internal("no randomness"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&req.into_inner().plaintext);
        let tag = self
            .key(&key_id)?
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(key_id.as_bytes()),
                &mut out[NONCE_LEN..],
            )
            .map_err(|_| Status::internal("encryption failed"))?;
        out.extend_from_slice(tag.as_ref());
        Ok(Response::new(EncryptResponse {
            ciphertext: Bytes::from(out),
            key_id,
            annotations: [(ANNOTATION.to_owned(), Bytes::from_static(b"v1"))].into(),
        }))
    }

    async fn decrypt(
        &self,
        req: Request<DecryptRequest>,
    ) -> Result<Response<DecryptResponse>, Status> {
        self.state.decrypt_calls.fetch_add(1, Ordering::Relaxed);
        let req = req.into_inner();
        if !req.annotations.contains_key(ANNOTATION) {
            return Err(Status::invalid_argument("missing the plugin's annotation"));
        }
        let (nonce, sealed) = req
            .ciphertext
            .split_at_checked(NONCE_LEN)
            .ok_or_else(|| Status::invalid_argument("ciphertext too short"))?;
        let nonce = Nonce::try_assume_unique_for_key(nonce)
            .map_err(|_| Status::invalid_argument("bad nonce"))?;
        let mut buf = sealed.to_vec();
        let len = self
            .key(&req.key_id)?
            .open_in_place(nonce, Aad::from(req.key_id.as_bytes()), &mut buf)
            .map_err(|_| Status::invalid_argument("ciphertext does not decrypt under this key ID"))?
            .len();
        buf.truncate(len);
        Ok(Response::new(DecryptResponse {
            plaintext: Bytes::from(buf),
        }))
    }
}

//! The client-certificate CA of the x509 authenticator (upstream's
//! `request/x509` with dynamic CA content from `--client-ca-file`): the
//! TLS layer only asks for a certificate, and every request's chain is
//! verified here against the CA bundle at the time of the request, so an
//! expired, not-yet-valid or foreign certificate fails authentication (401)
//! instead of the handshake.
//!
//! A connection's chain is verified once per bundle
//! ([`PeerCertificates`] keeps what it verified against): later requests on
//! the connection reuse the result while the current time lies within every
//! certificate's validity, which is what makes the answer the same as
//! verifying again (the bundle has no revocation lists).
//!
//! The bundle is re-read when the file changes: its size and modification
//! time are checked every [`CHANGE_CHECK_INTERVAL`] (standing in for
//! upstream's file-change notification) and its content re-read every
//! [`RESYNC_INTERVAL`] (upstream's resync). A changed file that does not
//! parse keeps the previous bundle, as upstream does. The front-proxy CA
//! (`--requestheader-client-ca-file`) is kept current the same way.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{DistinguishedName, RootCertStore};

use super::client_cert::PeerCertificates;

/// How often the file's size and modification time are compared.
pub const CHANGE_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// How often the content is re-read regardless (upstream: every minute).
pub const RESYNC_INTERVAL: Duration = Duration::from_secs(60);

/// Errors loading a CA bundle.
#[derive(Debug, thiserror::Error)]
pub enum ClientCaError {
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// One parsed bundle: the verifier and the subjects clients are hinted.
struct Bundle {
    verifier: Arc<dyn ClientCertVerifier>,
    content: Vec<u8>,
}

struct Inner {
    path: PathBuf,
    current: RwLock<Arc<Bundle>>,
    /// Marked changed whenever a new bundle is in use.
    changes: watch::Sender<()>,
}

/// A client CA bundle read from a file and kept current. Cloning shares it.
#[derive(Clone)]
pub struct ClientCa(Arc<Inner>);

impl std::fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ClientCa").field(&self.0.path).finish()
    }
}

fn parse(path: &Path, content: Vec<u8>) -> Result<Bundle, ClientCaError> {
    let invalid = |message: String| ClientCaError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let verifier = pem_verifier(&content).map_err(invalid)?;
    Ok(Bundle { verifier, content })
}

/// A verifier of client chains against the CAs of a PEM bundle; the
/// message of an error says what is wrong with the bundle.
fn pem_verifier(pem: &[u8]) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        let cert = cert.map_err(|e| e.to_string())?;
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    if roots.is_empty() {
        return Err("no certificates found".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| e.to_string())
}

fn read(path: &Path) -> Result<Vec<u8>, ClientCaError> {
    std::fs::read(path).map_err(|source| ClientCaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

impl ClientCa {
    /// Reads a PEM CA bundle (blocking file I/O).
    pub fn load(path: &Path) -> Result<Self, ClientCaError> {
        let bundle = parse(path, read(path)?)?;
        Ok(Self(Arc::new(Inner {
            path: path.to_path_buf(),
            current: RwLock::new(Arc::new(bundle)),
            changes: watch::Sender::new(()),
        })))
    }

    fn bundle(&self) -> Arc<Bundle> {
        // A poisoned lock still holds a complete bundle: writers only swap an Arc.
        match self.0.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Whether `chain` (leaf first) was issued by the current bundle's CAs
    /// and is valid now.
    pub fn verify(&self, chain: &[CertificateDer<'static>]) -> Result<(), String> {
        let (leaf, intermediates) = chain.split_first().ok_or("no certificate")?;
        self.bundle()
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// [`Self::verify`] of a connection's chain, done once per bundle: while
    /// the bundle stays current and now lies within every certificate's
    /// validity, the connection's earlier success answers.
    pub fn verify_peer(&self, peer: &PeerCertificates) -> Result<(), String> {
        let bundle = self.bundle();
        let now = UnixTime::now();
        if peer.memo().holds(&bundle, now.as_secs()) {
            return Ok(());
        }
        let (leaf, intermediates) = peer.chain().split_first().ok_or("no certificate")?;
        bundle
            .verifier
            .verify_client_cert(leaf, intermediates, now)
            .map_err(|e| e.to_string())?;
        peer.memo().remember(&bundle, peer.chain());
        Ok(())
    }

    /// The current bundle as read (PEM), for publishing it.
    pub fn pem(&self) -> String {
        String::from_utf8_lossy(&self.bundle().content).into_owned()
    }

    /// The subjects of the current bundle's CAs (the TLS layer's hints).
    pub fn subjects(&self) -> Vec<DistinguishedName> {
        self.bundle().verifier.root_hint_subjects().to_vec()
    }

    /// Re-reads the file now; `Ok(true)` when its content changed and the
    /// new bundle is in use (blocking file I/O).
    pub fn reload(&self) -> Result<bool, ClientCaError> {
        let content = read(&self.0.path)?;
        if content == self.bundle().content {
            return Ok(false);
        }
        let bundle = Arc::new(parse(&self.0.path, content)?);
        match self.0.current.write() {
            Ok(mut guard) => *guard = bundle,
            Err(poisoned) => *poisoned.into_inner() = bundle,
        }
        self.0.changes.send_replace(());
        Ok(true)
    }

    /// A receiver marked changed each time a new bundle comes into use
    /// (the TLS layer re-reads [`Self::subjects`] then).
    pub fn subscribe(&self) -> watch::Receiver<()> {
        self.0.changes.subscribe()
    }

    /// Keeps the bundle current in a background task until every clone of
    /// this `ClientCa` is dropped. Needs a Tokio runtime.
    pub fn start_reloading(&self) {
        tokio::spawn(keep_current(Arc::downgrade(&self.0)));
    }
}

/// The bundles a connection's chain verified against (at most a few: the
/// client CA and the front-proxy CA), each with the span of time, in Unix
/// seconds, in which every certificate of the chain is valid.
#[derive(Debug, Default)]
pub struct VerifiedChain(Mutex<Vec<(Weak<Bundle>, u64, u64)>>);

/// More bundles than a connection meets unless the files keep changing.
const REMEMBERED_BUNDLES: usize = 4;

impl VerifiedChain {
    fn entries(&self) -> std::sync::MutexGuard<'_, Vec<(Weak<Bundle>, u64, u64)>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the chain verified against `bundle` and is still valid at
    /// `now`. A Weak keeps its allocation, so its address is never reused
    /// by a newer bundle while remembered.
    fn holds(&self, bundle: &Arc<Bundle>, now: u64) -> bool {
        self.entries().iter().any(|(seen, from, until)| {
            std::ptr::eq(seen.as_ptr(), Arc::as_ptr(bundle)) && (*from..=*until).contains(&now)
        })
    }

    /// Records a success against `bundle`, unless a certificate's validity
    /// cannot be read (then every request verifies again).
    fn remember(&self, bundle: &Arc<Bundle>, chain: &[CertificateDer<'static>]) {
        let Some((from, until)) = validity(chain) else {
            return;
        };
        let mut entries = self.entries();
        if entries.len() >= REMEMBERED_BUNDLES {
            entries.remove(0);
        }
        entries.push((Arc::downgrade(bundle), from, until));
    }
}

/// The latest notBefore and the earliest notAfter of the chain, in Unix
/// seconds: the span in which webpki finds every certificate valid.
fn validity(chain: &[CertificateDer<'static>]) -> Option<(u64, u64)> {
    let mut span = (0u64, u64::MAX);
    for der in chain {
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let validity = cert.validity();
        let from = u64::try_from(validity.not_before.timestamp()).unwrap_or(0);
        let until = u64::try_from(validity.not_after.timestamp()).ok()?;
        span = (span.0.max(from), span.1.min(until));
    }
    Some(span)
}

/// Size and modification time, the cheap change signal.
fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

async fn keep_current(inner: Weak<Inner>) {
    let mut last_stamp = None;
    let mut since_resync = Duration::ZERO;
    loop {
        tokio::time::sleep(CHANGE_CHECK_INTERVAL).await;
        since_resync += CHANGE_CHECK_INTERVAL;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let ca = ClientCa(strong);
        let path = ca.0.path.clone();
        let checked = tokio::task::spawn_blocking(move || stamp(&path)).await;
        let current = checked.ok().flatten();
        if current == last_stamp && since_resync < RESYNC_INTERVAL {
            continue;
        }
        since_resync = Duration::ZERO;
        let reloading = ca.clone();
        match tokio::task::spawn_blocking(move || reloading.reload()).await {
            Ok(Ok(changed)) => {
                last_stamp = current;
                if changed {
                    tracing::info!(path = %ca.0.path.display(), "reloaded client CA bundle");
                }
            }
            Ok(Err(err)) => {
                tracing::error!(error = %err, "client CA bundle does not load; keeping the previous one");
            }
            Err(err) => tracing::error!(error = %err, "client CA reload task failed"),
        }
    }
}

/// Resolves when any of the bundles `changes` were subscribed to was
/// reloaded; never when there are none or they are gone (at shutdown).
pub async fn any_reloaded(changes: &mut [watch::Receiver<()>]) {
    if changes.is_empty() {
        return std::future::pending().await;
    }
    let waits = changes.iter_mut().map(|rx| Box::pin(rx.changed()));
    if futures::future::select_all(waits).await.0.is_err() {
        std::future::pending().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, IsCa, Issuer, KeyPair};

    fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(params, key))
    }

    fn leaf(issuer: &Issuer<'static, KeyPair>) -> Vec<CertificateDer<'static>> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "alice");
        vec![params.signed_by(&key, issuer).unwrap().der().clone()]
    }

    #[test]
    fn verifies_against_the_reloaded_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.crt");
        let (old_pem, old) = ca("old");
        let (new_pem, new) = ca("new");
        std::fs::write(&path, &old_pem).unwrap();
        let client_ca = ClientCa::load(&path).unwrap();
        assert!(client_ca.verify(&leaf(&old)).is_ok());
        assert!(client_ca.verify(&leaf(&new)).is_err());
        assert!(client_ca.verify(&[]).is_err());
        assert!(!client_ca.reload().unwrap());

        std::fs::write(&path, format!("{old_pem}{new_pem}")).unwrap();
        let mut changes = client_ca.subscribe();
        assert!(!changes.has_changed().unwrap());
        assert!(client_ca.reload().unwrap());
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        assert!(client_ca.verify(&leaf(&new)).is_ok());
        assert_eq!(client_ca.subjects().len(), 2);

        // A connection verifies once per bundle; a new bundle verifies again.
        let peer = PeerCertificates::new(leaf(&old));
        assert!(client_ca.verify_peer(&peer).is_ok());
        assert!(client_ca.verify_peer(&peer).is_ok());
        std::fs::write(&path, &new_pem).unwrap();
        assert!(client_ca.reload().unwrap());
        changes.mark_unchanged();
        assert!(client_ca.verify_peer(&peer).is_err());
        let peer = PeerCertificates::new(leaf(&new));
        assert!(client_ca.verify_peer(&peer).is_ok());

        // A broken file keeps the previous bundle.
        std::fs::write(&path, "garbage").unwrap();
        assert!(client_ca.reload().is_err());
        assert!(client_ca.verify(&leaf(&new)).is_ok());
        assert!(!changes.has_changed().unwrap());
    }

    #[test]
    fn a_verified_chain_holds_only_within_its_validity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.crt");
        let (pem, issuer) = ca("ca");
        std::fs::write(&path, &pem).unwrap();
        let client_ca = ClientCa::load(&path).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "bob");
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2090, 1, 1);
        let cert = params.signed_by(&key, &issuer).unwrap();
        let peer = PeerCertificates::new(vec![cert.der().clone()]);
        assert!(client_ca.verify_peer(&peer).is_ok());

        let bundle = client_ca.bundle();
        let (from, until) = validity(peer.chain()).unwrap();
        assert_eq!(from, 1_577_836_800);
        assert!(peer.memo().holds(&bundle, from));
        assert!(peer.memo().holds(&bundle, until));
        assert!(!peer.memo().holds(&bundle, from - 1));
        assert!(!peer.memo().holds(&bundle, until + 1));
    }
}

//! Certificate rotation without a restart (upstream's dynamic serving
//! certificate and client-CA controllers): the TLS configuration is rebuilt
//! whenever the serving certificate or key file changes or a client CA
//! bundle is reloaded (then the hinted CA names follow), and new
//! connections use the latest good configuration.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::tls::{ServerConfigs, TlsConfigError, TlsOptions};
use crate::authentication::x509::any_reloaded;

/// How often the files are checked (upstream resyncs file content every minute).
pub const DEFAULT_RELOAD_INTERVAL: Duration = Duration::from_secs(60);

/// The TLS configuration [`serve`](super::serve) uses for new connections.
#[derive(Debug, Clone)]
pub enum ServerTls {
    /// One configuration for the server's lifetime.
    Fixed(Arc<ServerConfigs>),
    /// The latest configuration published by [`TlsOptions::reloading`].
    Reloading(watch::Receiver<Arc<ServerConfigs>>),
}

impl ServerTls {
    /// The configuration for a connection accepted now.
    pub fn current(&self) -> Arc<ServerConfigs> {
        match self {
            Self::Fixed(config) => config.clone(),
            Self::Reloading(latest) => latest.borrow().clone(),
        }
    }
}

impl From<Arc<ServerConfigs>> for ServerTls {
    fn from(config: Arc<ServerConfigs>) -> Self {
        Self::Fixed(config)
    }
}

impl From<watch::Receiver<Arc<ServerConfigs>>> for ServerTls {
    fn from(latest: watch::Receiver<Arc<ServerConfigs>>) -> Self {
        Self::Reloading(latest)
    }
}

/// A build task that died (panicked or was cancelled).
fn join_error(err: tokio::task::JoinError) -> TlsConfigError {
    TlsConfigError::Reload(err.to_string())
}

impl TlsOptions {
    /// Builds the configuration now, then rebuilds it whenever one of its
    /// files changes (checked every `interval`) or one of its client CA
    /// bundles is reloaded (at once). A change that does not
    /// build (a key written before its certificate, a bad file) keeps the
    /// previous configuration and is retried at the next check. Checking
    /// stops once every receiver is dropped.
    pub async fn reloading(
        self,
        interval: Duration,
    ) -> Result<watch::Receiver<Arc<ServerConfigs>>, TlsConfigError> {
        // Subscribed before the first build, so no reload goes unseen.
        let ca_changes = self.client_cas.iter().map(|ca| ca.subscribe()).collect();
        let options = Arc::new(self);
        let files = options.watched_files();
        let initial = snapshot(&files).await;
        let config = {
            let options = options.clone();
            tokio::task::spawn_blocking(move || options.server_config())
                .await
                .map_err(join_error)??
        };
        let (publish, latest) = watch::channel(config);
        let watched = Watched {
            files,
            last: initial,
            ca_changes,
        };
        tokio::spawn(watch_files(options, watched, publish, interval));
        Ok(latest)
    }

    fn watched_files(&self) -> Vec<PathBuf> {
        let sni = self
            .sni_cert_keys
            .iter()
            .flat_map(|sni| [&sni.cert_file, &sni.key_file]);
        [&self.cert_file, &self.key_file]
            .into_iter()
            .chain(sni)
            .cloned()
            .collect()
    }
}

/// Contents of the files (`None` where unreadable).
async fn snapshot(files: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    let mut contents = Vec::with_capacity(files.len());
    for file in files {
        contents.push(tokio::fs::read(file).await.ok());
    }
    contents
}

/// What the configuration was last built from.
struct Watched {
    files: Vec<PathBuf>,
    /// The files' contents at the last good build.
    last: Vec<Option<Vec<u8>>>,
    /// One per client CA bundle, marked on each reload.
    ca_changes: Vec<watch::Receiver<()>>,
}

async fn watch_files(
    options: Arc<TlsOptions>,
    mut watched: Watched,
    publish: watch::Sender<Arc<ServerConfigs>>,
    interval: Duration,
) {
    // A reloaded CA bundle not yet in a published configuration.
    let mut hints_stale = false;
    loop {
        tokio::select! {
            () = publish.closed() => return,
            () = tokio::time::sleep(interval) => {}
            () = any_reloaded(&mut watched.ca_changes) => hints_stale = true,
        }
        let files = &watched.files;
        let current = snapshot(files).await;
        if current == watched.last && !hints_stale {
            continue;
        }
        let rebuilt = {
            let options = options.clone();
            tokio::task::spawn_blocking(move || options.server_config())
                .await
                .map_err(join_error)
        };
        match rebuilt {
            Ok(Ok(config)) => {
                publish.send_replace(config);
                watched.last = current;
                hints_stale = false;
                tracing::info!(files = ?files, "reloaded serving certificates and client CA names");
            }
            Ok(Err(err)) | Err(err) => {
                tracing::error!(error = %err, "changed serving certificates do not load; keeping the previous ones");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use rcgen::{CertificateParams, DnType, IsCa, Issuer, KeyPair};
    use rustls::client::ResolvesClientCert;
    use rustls::pki_types::ServerName;
    use rustls::sign::CertifiedKey;
    use rustls::{ClientConfig, RootCertStore, SignatureScheme};

    use rustls::ServerConfig;

    use super::*;
    use crate::authentication::x509::ClientCa;
    use crate::serving::TlsVersion;

    fn ca(name: &str) -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        (cert, Issuer::new(params, key))
    }

    /// Records the CA names the server hints; presents no certificate.
    #[derive(Debug, Default)]
    struct HintRecorder(Mutex<Vec<Vec<u8>>>);

    impl ResolvesClientCert for HintRecorder {
        fn resolve(&self, hints: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
            *self.0.lock().unwrap() = hints.iter().map(|h| h.to_vec()).collect();
            None
        }

        fn has_certs(&self) -> bool {
            true
        }
    }

    /// The CA names hinted in a handshake with `server`, as common names
    /// found in them.
    async fn hinted(
        server: Arc<ServerConfig>,
        roots: &RootCertStore,
        names: &[&str],
    ) -> Vec<String> {
        let recorder = Arc::new(HintRecorder::default());
        let client =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots.clone())
                .with_client_cert_resolver(recorder.clone());
        let (a, b) = tokio::io::duplex(64 * 1024);
        let accept = tokio_rustls::TlsAcceptor::from(server).accept(a);
        let connect = tokio_rustls::TlsConnector::from(Arc::new(client))
            .connect(ServerName::try_from("localhost").unwrap(), b);
        let (accepted, connected) = tokio::join!(accept, connect);
        accepted.unwrap();
        connected.unwrap();
        let hints = recorder.0.lock().unwrap().clone();
        hints
            .iter()
            .filter_map(|hint| {
                let name = names
                    .iter()
                    .find(|n| hint.windows(n.len()).any(|w| w == n.as_bytes()))?;
                Some((*name).to_owned())
            })
            .collect()
    }

    #[tokio::test]
    async fn hinted_ca_names_follow_a_reloaded_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let (serving_ca, serving_issuer) = ca("serving-ca");
        let server_key = KeyPair::generate().unwrap();
        let server_cert = CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .signed_by(&server_key, &serving_issuer)
            .unwrap();
        std::fs::write(dir.path().join("tls.crt"), server_cert.pem()).unwrap();
        std::fs::write(dir.path().join("tls.key"), server_key.serialize_pem()).unwrap();
        let (first, _) = ca("first-ca");
        let (second, _) = ca("second-ca");
        let (proxy, _) = ca("proxy-ca");
        let bundle = dir.path().join("ca.crt");
        std::fs::write(&bundle, first.pem()).unwrap();
        std::fs::write(dir.path().join("proxy.crt"), proxy.pem()).unwrap();
        let client_ca = ClientCa::load(&bundle).unwrap();
        let proxy_ca = ClientCa::load(&dir.path().join("proxy.crt")).unwrap();
        let options = TlsOptions {
            cert_file: dir.path().join("tls.crt"),
            key_file: dir.path().join("tls.key"),
            // The same CA twice is hinted once.
            client_cas: vec![client_ca.clone(), proxy_ca.clone(), proxy_ca],
            min_version: TlsVersion::Tls12,
            cipher_suites: Vec::new(),
            http2: true,
            sni_cert_keys: Vec::new(),
        };
        let mut latest = options.reloading(Duration::from_secs(3600)).await.unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(serving_ca.der().clone()).unwrap();
        let names = ["first-ca", "second-ca", "proxy-ca"];
        let current = latest.borrow_and_update().for_client(&[]);
        assert_eq!(
            hinted(current, &roots, &names).await,
            ["first-ca", "proxy-ca"]
        );

        std::fs::write(&bundle, second.pem()).unwrap();
        assert!(client_ca.reload().unwrap());
        // Published at once, not at the next file check an hour away.
        tokio::time::timeout(Duration::from_secs(10), latest.changed())
            .await
            .unwrap()
            .unwrap();
        let current = latest.borrow_and_update().for_client(&[]);
        assert_eq!(
            hinted(current, &roots, &names).await,
            ["second-ca", "proxy-ca"]
        );
    }
}

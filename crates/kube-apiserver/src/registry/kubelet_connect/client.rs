//! Connections to kubelets (upstream's `pkg/kubelet/client`): the TLS
//! transport the `--kubelet-*` flags describe, and where a node's kubelet
//! listens, from the Node's reported addresses (taken in
//! `--kubelet-preferred-address-types` order) and its reported port.

use std::path::{Path, PathBuf};

use apimachinery::status::ApiError;
use apiserver::endpoints::proxy::Transport;
use apiserver::registry::store::Store;
use client_go::transport::{self, ClientAuth};
use serde_json::Value;

use crate::options::KubeletOptions;

/// A `--kubelet-*` setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KubeletClientError {
    #[error("--kubelet-{flag}: reading {path:?}: {source}")]
    Read {
        flag: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--kubelet-{flag}: {path:?} holds no PEM {what}")]
    Empty {
        flag: &'static str,
        path: PathBuf,
        what: &'static str,
    },
    #[error("--kubelet-client-certificate and --kubelet-client-key must be given together")]
    HalfPair,
    #[error("kubelet client TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

/// Where one node's kubelet is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    pub host: String,
    pub port: u16,
}

/// How this server talks to kubelets and proxies to pods and services.
pub struct KubeletClient {
    /// Verifies kubelets against `--kubelet-certificate-authority` (or
    /// trusts any certificate when none is given, as upstream does) and
    /// presents the client certificate.
    pub kubelet: Transport,
    /// The same, never verifying the kubelet (`insecureSkipTLSVerifyBackend`).
    pub kubelet_insecure: Transport,
    /// For pod, service and other node ports: no client certificate, no
    /// verification (upstream's proxy transport).
    pub proxy: Transport,
    preferred_address_types: Vec<String>,
    default_port: u16,
}

fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, KubeletClientError> {
    std::fs::read(path).map_err(|source| KubeletClientError::Read {
        flag,
        path: path.to_owned(),
        source,
    })
}

fn client_auth(opts: &KubeletOptions) -> Result<Option<ClientAuth>, KubeletClientError> {
    let (cert_path, key_path) = match (&opts.client_certificate, &opts.client_key) {
        (None, None) => return Ok(None),
        (Some(c), Some(k)) => (c, k),
        _ => return Err(KubeletClientError::HalfPair),
    };
    let empty = |flag, path: &Path, what| KubeletClientError::Empty {
        flag,
        path: path.to_owned(),
        what,
    };
    let pem = read("client-certificate", cert_path)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_slice())
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(empty("client-certificate", cert_path, "certificate"));
    }
    let pem = read("client-key", key_path)?;
    let key = rustls_pemfile::private_key(&mut pem.as_slice())
        .ok()
        .flatten()
        .ok_or_else(|| empty("client-key", key_path, "private key"))?;
    Ok(Some((certs, key)))
}

fn copy_auth(auth: &Option<ClientAuth>) -> Option<ClientAuth> {
    auth.as_ref()
        .map(|(certs, key)| (certs.clone(), key.clone_key()))
}

/// A client configuration accepting any server certificate, without a
/// client certificate (upstream's probes of local components).
pub fn insecure_tls_config() -> Result<rustls::ClientConfig, KubeletClientError> {
    tls_config(None, None)
}

/// A client configuration trusting `roots`, or any certificate when None.
fn tls_config(
    roots: Option<rustls::RootCertStore>,
    auth: Option<ClientAuth>,
) -> Result<rustls::ClientConfig, KubeletClientError> {
    Ok(transport::tls_config(roots, auth)?)
}

impl KubeletClient {
    pub fn new(opts: &KubeletOptions) -> Result<KubeletClient, KubeletClientError> {
        let auth = client_auth(opts)?;
        let roots = match &opts.certificate_authority {
            None => None,
            Some(path) => {
                let pem = read("certificate-authority", path)?;
                let mut roots = rustls::RootCertStore::empty();
                for cert in rustls_pemfile::certs(&mut pem.as_slice()).filter_map(Result::ok) {
                    roots.add(cert)?;
                }
                if roots.is_empty() {
                    return Err(KubeletClientError::Empty {
                        flag: "certificate-authority",
                        path: path.clone(),
                        what: "certificate",
                    });
                }
                Some(roots)
            }
        };
        let timeout = opts.timeout;
        Ok(KubeletClient {
            kubelet: Transport::new(tls_config(roots, copy_auth(&auth))?, timeout),
            kubelet_insecure: Transport::new(tls_config(None, auth)?, timeout),
            proxy: Transport::new(tls_config(None, None)?, timeout),
            preferred_address_types: opts.preferred_address_types.clone(),
            default_port: opts.port,
        })
    }

    /// Where the kubelet of a stored Node listens (upstream's
    /// `GetConnectionInfo`).
    pub fn connection_info(&self, node: &Value) -> Result<ConnectionInfo, ApiError> {
        let host = preferred_address(node, &self.preferred_address_types)?;
        let port = node
            .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
            .and_then(Value::as_i64)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
            .unwrap_or(self.default_port);
        Ok(ConnectionInfo { host, port })
    }

    /// [`Self::connection_info`] of the node named `name`.
    pub async fn node_connection(
        &self,
        nodes: &Store,
        name: &str,
    ) -> Result<ConnectionInfo, ApiError> {
        let node = nodes.get(None, name, Default::default()).await?;
        self.connection_info(&node)
    }
}

/// The first address of the first preferred type the node reports
/// (upstream's `GetPreferredNodeAddress`).
fn preferred_address(node: &Value, preferred: &[String]) -> Result<String, ApiError> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let field = |a: &Value, key: &str| a.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    for wanted in preferred {
        if let Some(found) = addresses.iter().find(|a| field(a, "type") == *wanted) {
            return Ok(field(found, "address"));
        }
    }
    // Go prints the addresses as `[{Type Address} …]`.
    let known: Vec<String> = addresses
        .iter()
        .map(|a| format!("{{{} {}}}", field(a, "type"), field(a, "address")))
        .collect();
    Err(ApiError::internal_error(format!(
        "no preferred addresses found; known addresses: [{}]",
        known.join(" ")
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn client(types: &[&str]) -> KubeletClient {
        let opts = KubeletOptions {
            client_certificate: None,
            client_key: None,
            certificate_authority: None,
            preferred_address_types: types.iter().map(|t| t.to_string()).collect(),
            port: 10250,
            timeout: std::time::Duration::from_secs(5),
        };
        KubeletClient::new(&opts).unwrap()
    }

    fn node(port: i64) -> Value {
        json!({"status": {
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.7"},
                {"type": "Hostname", "address": "node-a"},
                {"type": "ExternalIP", "address": "203.0.113.9"}
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}
        }})
    }

    #[test]
    fn the_first_preferred_type_reported_wins() {
        let default_order = [
            "Hostname",
            "InternalDNS",
            "InternalIP",
            "ExternalDNS",
            "ExternalIP",
        ];
        let info = client(&default_order)
            .connection_info(&node(10350))
            .unwrap();
        assert_eq!(
            info,
            ConnectionInfo {
                host: "node-a".into(),
                port: 10350
            }
        );
        let info = client(&["ExternalIP", "InternalIP"])
            .connection_info(&node(0))
            .unwrap();
        assert_eq!(info.host, "203.0.113.9");
        assert_eq!(info.port, 10250, "no reported port: --kubelet-port");
    }

    #[test]
    fn a_node_without_a_preferred_address_is_an_internal_error() {
        let err = client(&["InternalDNS"])
            .connection_info(&node(1))
            .unwrap_err();
        assert_eq!(err.code, 500);
        assert!(
            err.message.ends_with(
                "no preferred addresses found; known addresses: [{InternalIP 10.0.0.7} {Hostname node-a} {ExternalIP 203.0.113.9}]"
            ),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_certificate_needs_its_key() {
        let opts = KubeletOptions {
            client_certificate: Some("/nonexistent/c.crt".into()),
            client_key: None,
            certificate_authority: None,
            preferred_address_types: Vec::new(),
            port: 10250,
            timeout: std::time::Duration::from_secs(5),
        };
        assert!(matches!(
            KubeletClient::new(&opts),
            Err(KubeletClientError::HalfPair)
        ));
        let opts = KubeletOptions {
            client_key: Some("/nonexistent/c.key".into()),
            ..opts
        };
        let err = KubeletClient::new(&opts).err().unwrap();
        assert!(err
            .to_string()
            .starts_with("--kubelet-client-certificate: reading"));
    }
}

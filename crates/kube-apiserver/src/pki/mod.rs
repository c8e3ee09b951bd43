//! Certificates, keys and the admin kubeconfig generated into the data
//! directory for the embedded default (no `--tls-cert-file` given), in the
//! spirit of upstream's self-signed `--cert-dir` material and kubeadm's PKI:
//!
//! ```text
//! <data-dir>/pki/ca.crt, ca.key                 self-signed cluster CA
//! <data-dir>/pki/apiserver.crt, apiserver.key   serving certificate
//! <data-dir>/pki/admin.crt, admin.key           admin client certificate
//! <data-dir>/pki/sa.key, sa.pub                 service-account signing key
//! <data-dir>/pki/front-proxy-ca.crt, .key       the aggregator's front-proxy CA
//! <data-dir>/pki/front-proxy-client.crt, .key   the aggregator's proxy client
//! <data-dir>/admin.kubeconfig                   kubeconfig for the admin
//! ```
//!
//! The data directory and `pki/` are owner-only (0700), private keys and the
//! kubeconfig 0600, certificates and the public key 0644.
//!
//! Existing material is reused across restarts: the CA is kept while it is
//! valid, leaves are reissued only when missing, mismatched, near expiry, not
//! issued by the current CA, or (serving) missing a requested name.

mod certs;
mod files;
mod kubeconfig;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use certs::{CertAuthority, LeafSpec, PemPair, San, Usage};
use files::{PUBLIC_MODE, SECRET_MODE};

/// Common name of the admin client certificate (kubeadm's admin user).
pub const ADMIN_USER: &str = "kubernetes-admin";
/// Group of the admin client certificate: the group upstream's authorizer
/// always allows, so the admin works before any RBAC binding exists.
pub const ADMIN_GROUP: &str = "system:masters";
/// Common names of the front-proxy CA and of the aggregator's client
/// certificate (kubeadm's), the default `--requestheader-allowed-names`.
const FRONT_PROXY_CA_COMMON_NAME: &str = "front-proxy-ca";
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";
/// Common name of the serving certificate (as kubeadm names it).
const SERVING_COMMON_NAME: &str = "kube-apiserver";

/// Errors while creating or loading the PKI.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("generating certificate material: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{0}")]
    Invalid(String),
    #[error("rendering kubeconfig: {0}")]
    Kubeconfig(#[from] serde_yaml::Error),
}

/// What the generated material must cover.
#[derive(Debug, Clone)]
pub struct PkiOptions {
    /// Addresses the serving certificate must be valid for besides loopback:
    /// the bind address (unspecified addresses are skipped) and the
    /// advertise address.
    pub ip_addresses: Vec<IpAddr>,
    /// Extra DNS names for the serving certificate (e.g. the host name).
    pub dns_names: Vec<String>,
    /// The first IP of `--service-cluster-ip-range`, the ClusterIP of the
    /// `default/kubernetes` Service.
    pub service_ip: Option<IpAddr>,
    /// Cluster DNS domain for `kubernetes.default.svc.<domain>`.
    pub cluster_domain: String,
    /// Host the admin kubeconfig connects to (also put into the serving
    /// certificate).
    pub server_host: String,
    /// `--secure-port`.
    pub secure_port: u16,
}

impl Default for PkiOptions {
    fn default() -> Self {
        Self {
            ip_addresses: Vec::new(),
            dns_names: Vec::new(),
            service_ip: None,
            cluster_domain: "cluster.local".into(),
            server_host: "127.0.0.1".into(),
            secure_port: 6443,
        }
    }
}

/// Paths of the generated material.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pki {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    /// Service-account signing key (ECDSA P-256 PKCS#8 PEM, JWT `ES256`).
    pub sa_key: PathBuf,
    /// Service-account verification key (SubjectPublicKeyInfo PEM).
    pub sa_pub: PathBuf,
    /// The front-proxy CA (kubeadm's), the default
    /// `--requestheader-client-ca-file`.
    pub front_proxy_ca_cert: PathBuf,
    pub front_proxy_ca_key: PathBuf,
    /// The aggregator's client certificate, signed by the front-proxy CA:
    /// the default `--proxy-client-cert-file` and `--proxy-client-key-file`.
    pub front_proxy_client_cert: PathBuf,
    pub front_proxy_client_key: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Pki {
    fn at(data_dir: &Path) -> Self {
        let dir = data_dir.join("pki");
        Self {
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            serving_cert: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
            sa_key: dir.join("sa.key"),
            sa_pub: dir.join("sa.pub"),
            front_proxy_ca_cert: dir.join("front-proxy-ca.crt"),
            front_proxy_ca_key: dir.join("front-proxy-ca.key"),
            front_proxy_client_cert: dir.join("front-proxy-client.crt"),
            front_proxy_client_key: dir.join("front-proxy-client.key"),
            kubeconfig: data_dir.join("admin.kubeconfig"),
        }
    }
}

/// Creates (or reuses) the PKI under `data_dir` and returns its paths.
///
/// Blocking (file I/O and key generation): call it before starting the
/// runtime or through `spawn_blocking`.
pub fn ensure_pki(data_dir: &Path, opts: &PkiOptions) -> Result<Pki, PkiError> {
    let pki = Pki::at(data_dir);
    ensure_data_dir(data_dir)?;
    let pki_dir = pki.ca_cert.parent().unwrap_or(data_dir);
    files::ensure_private_dir(pki_dir)?;

    // The three independent chains at once: each file is written with an
    // fsync, which is most of the time an empty data dir's start takes.
    let (admin, ca_cert_pem) = std::thread::scope(|scope| {
        let signing = scope.spawn(|| ensure_signing_key(&pki));
        let front_proxy = scope.spawn(|| ensure_front_proxy(&pki));
        let main = ensure_main_chain(&pki, opts);
        signing
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        front_proxy
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        main
    })?;

    let yaml = kubeconfig::AdminKubeconfig {
        server: kubeconfig::server_url(&opts.server_host, opts.secure_port),
        ca_cert_pem: &ca_cert_pem,
        user_name: ADMIN_USER,
        client_cert_pem: &admin.cert,
        client_key_pem: &admin.key,
    }
    .to_yaml()?;
    if files::read_optional(&pki.kubeconfig)?.as_deref() == Some(yaml.as_str()) {
        files::restrict(&pki.kubeconfig, SECRET_MODE)?;
    } else {
        files::write_atomic(&pki.kubeconfig, yaml.as_bytes(), SECRET_MODE)?;
    }
    Ok(pki)
}

/// The cluster CA and what it signs: the serving certificate and the
/// admin's client certificate (returned with the CA's PEM).
fn ensure_main_chain(pki: &Pki, opts: &PkiOptions) -> Result<(PemPair, String), PkiError> {
    let (ca, ca_cert_pem, ca_replaced) =
        ensure_ca((&pki.ca_cert, &pki.ca_key), certs::CA_COMMON_NAME)?;
    let serving_sans = serving_sans(opts);
    ensure_leaf(
        &ca,
        (&pki.serving_cert, &pki.serving_key),
        &LeafSpec {
            common_name: SERVING_COMMON_NAME,
            organizations: &[],
            sans: &serving_sans,
            usage: Usage::Server,
        },
        ca_replaced,
    )?;
    let admin = ensure_leaf(
        &ca,
        (&pki.admin_cert, &pki.admin_key),
        &LeafSpec {
            common_name: ADMIN_USER,
            organizations: &[ADMIN_GROUP],
            sans: &[],
            usage: Usage::Client,
        },
        ca_replaced,
    )?;
    Ok((admin, ca_cert_pem))
}

/// The front proxy's CA and its client certificate.
fn ensure_front_proxy(pki: &Pki) -> Result<(), PkiError> {
    let front_proxy = (pki.front_proxy_ca_cert.as_path(), &*pki.front_proxy_ca_key);
    let (front_proxy_ca, _, replaced) = ensure_ca(front_proxy, FRONT_PROXY_CA_COMMON_NAME)?;
    ensure_leaf(
        &front_proxy_ca,
        (&pki.front_proxy_client_cert, &pki.front_proxy_client_key),
        &LeafSpec {
            common_name: FRONT_PROXY_CLIENT,
            organizations: &[],
            sans: &[],
            usage: Usage::Client,
        },
        replaced,
    )?;
    Ok(())
}

/// Creates the data directory owner-only (0700), or restricts an existing
/// one: it holds the embedded store and the admin credentials. kubeadm
/// keeps its PKI directory, and etcd its data directory, the same way.
pub fn ensure_data_dir(data_dir: &Path) -> Result<(), PkiError> {
    files::ensure_private_dir(data_dir)
}

/// Names the serving certificate must carry.
fn serving_sans(opts: &PkiOptions) -> Vec<San> {
    let mut sans: Vec<San> = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
    ]
    .into_iter()
    .map(|name| San::Dns(name.into()))
    .collect();
    if !opts.cluster_domain.is_empty() {
        sans.push(San::Dns(format!(
            "kubernetes.default.svc.{}",
            opts.cluster_domain.trim_end_matches('.')
        )));
    }
    sans.extend(opts.dns_names.iter().cloned().map(San::Dns));
    let ips = [
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ]
    .into_iter()
    .chain(opts.service_ip)
    .chain(opts.ip_addresses.iter().copied())
    .filter(|ip| !ip.is_unspecified());
    sans.extend(ips.map(San::Ip));
    // The admin kubeconfig connects to `server_host`: it must verify.
    let host = opts
        .server_host
        .trim_start_matches('[')
        .trim_end_matches(']');
    if !host.is_empty() {
        sans.push(match host.parse::<IpAddr>() {
            Ok(ip) => San::Ip(ip),
            Err(_) => San::Dns(host.to_owned()),
        });
    }
    let mut unique = Vec::with_capacity(sans.len());
    for san in sans {
        if !unique.contains(&san) {
            unique.push(san);
        }
    }
    unique
}

/// Loads the CA or creates it; the flag tells whether it was (re)created,
/// in which case every leaf must be reissued.
fn ensure_ca(
    (cert_path, key_path): (&Path, &Path),
    common_name: &str,
) -> Result<(CertAuthority, String, bool), PkiError> {
    let cert = files::read_optional(cert_path)?;
    let key = files::read_optional(key_path)?;
    match (cert, key) {
        (Some(cert), Some(key)) => {
            let ca = CertAuthority::load(&cert, &key)
                .map_err(|err| PkiError::Invalid(format!("{}: {err}", cert_path.display())))?;
            if ca.is_fresh() {
                files::restrict(key_path, SECRET_MODE)?;
                return Ok((ca, cert, false));
            }
            tracing::warn!(path = %cert_path.display(), "CA is expiring; replacing it and every certificate it issued");
        }
        (None, None) => {}
        (Some(_), None) | (None, Some(_)) => {
            return Err(PkiError::Invalid(format!(
                "only one of {} and {} exists; remove it or provide both",
                cert_path.display(),
                key_path.display()
            )));
        }
    }
    let pair = certs::generate_ca(common_name)?;
    files::write_atomic(key_path, pair.key.as_bytes(), SECRET_MODE)?;
    files::write_atomic(cert_path, pair.cert.as_bytes(), PUBLIC_MODE)?;
    tracing::info!(path = %cert_path.display(), subject = common_name, "generated CA");
    let ca = CertAuthority::load(&pair.cert, &pair.key)?;
    Ok((ca, pair.cert, true))
}

/// Reuses the leaf at `paths` when it is still good, otherwise issues it.
fn ensure_leaf(
    ca: &CertAuthority,
    (cert_path, key_path): (&Path, &Path),
    spec: &LeafSpec<'_>,
    force: bool,
) -> Result<PemPair, PkiError> {
    if !force {
        let cert = files::read_optional(cert_path)?;
        let key = files::read_optional(key_path)?;
        if let (Some(cert), Some(key)) = (cert, key) {
            let existing = PemPair { cert, key };
            if ca.leaf_is_current(&existing, spec.sans) {
                files::restrict(key_path, SECRET_MODE)?;
                return Ok(existing);
            }
        }
    }
    let pair = ca.issue(spec)?;
    files::write_atomic(key_path, pair.key.as_bytes(), SECRET_MODE)?;
    files::write_atomic(cert_path, pair.cert.as_bytes(), PUBLIC_MODE)?;
    tracing::info!(path = %cert_path.display(), subject = spec.common_name, "issued certificate");
    Ok(pair)
}

/// Keeps an existing service-account key (tokens signed with it must stay
/// valid) and (re)writes its public half; generates the pair when missing.
fn ensure_signing_key(pki: &Pki) -> Result<(), PkiError> {
    let public = match files::read_optional(&pki.sa_key)? {
        Some(private) => {
            files::restrict(&pki.sa_key, SECRET_MODE)?;
            certs::public_key_pem(&private)
                .map_err(|err| PkiError::Invalid(format!("{}: {err}", pki.sa_key.display())))?
        }
        None => {
            let (private, public) = certs::generate_signing_key()?;
            files::write_atomic(&pki.sa_key, private.as_bytes(), SECRET_MODE)?;
            tracing::info!(path = %pki.sa_key.display(), "generated service-account signing key");
            public
        }
    };
    if files::read_optional(&pki.sa_pub)?.as_deref() != Some(public.as_str()) {
        files::write_atomic(&pki.sa_pub, public.as_bytes(), PUBLIC_MODE)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

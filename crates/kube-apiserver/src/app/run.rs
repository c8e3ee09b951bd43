//! Running the server: tracing set up, storage opened (embedded or etcd),
//! certificates ensured, the chain built and served until SIGTERM/SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiserver::serving::{ServeOptions, TlsOptions, TlsVersion, DEFAULT_RELOAD_INTERVAL};
use storage::Kv;
use storage_embedded::EmbeddedKv;
use storage_etcd::{wait_for_etcd, EtcdConfig};

use super::authentication::{self, DefaultKeys};
use super::config::{external_address, generic_config};
use super::security_summary::{Authorizers, SecuritySummary};
use super::server::{create_server_chain, repair_service_addresses};
use crate::controlplane::storage_codec::{StorageCodec, StorageMediaType};
use crate::controlplane::StorageFactory;
use crate::options::Value;
use crate::options::{CompletedOptions, StorageBackend};
use crate::pki::{ensure_data_dir, ensure_pki, Pki, PkiOptions, FRONT_PROXY_CLIENT};

/// How long startup waits for etcd (upstream's storage preflight).
const ETCD_PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(60);

pub type RunError = Box<dyn std::error::Error + Send + Sync>;

/// Opens the storage; for the embedded store also returns the handle that
/// closes it when the server stops.
async fn open_storage(
    opts: &CompletedOptions,
) -> Result<(Arc<dyn Kv>, Option<EmbeddedKv>), RunError> {
    match &opts.storage {
        StorageBackend::Embedded { dir } => {
            ensure_data_dir(&opts.options.data_dir)?;
            let dir = dir.clone();
            let kv = tokio::task::spawn_blocking(move || EmbeddedKv::open(&dir)).await??;
            Ok((Arc::new(kv.clone()), Some(kv)))
        }
        StorageBackend::Etcd { servers } => {
            let etcd = &opts.options.etcd;
            let health_timeout = opts
                .options
                .flags
                .duration("etcd-healthcheck-timeout")
                .map(|d| d.to_std())
                .unwrap_or(Duration::from_secs(2));
            let config = EtcdConfig {
                ca_file: etcd.ca_file.clone(),
                cert_file: etcd.cert_file.clone(),
                key_file: etcd.key_file.clone(),
                prefix: etcd.prefix.clone(),
                health_timeout,
                ..EtcdConfig::new(servers.clone())
            };
            let kv = wait_for_etcd(config, ETCD_PREFLIGHT_TIMEOUT).await?;
            Ok((Arc::new(kv), None))
        }
    }
}

struct Serving {
    tls: TlsOptions,
    /// `--client-ca-file`, else the generated CA.
    client_ca_file: Option<PathBuf>,
    kubeconfig: Option<PathBuf>,
    /// Where service-account keys default from.
    keys: DefaultKeys,
    /// The generated PKI, whose front-proxy material the aggregator
    /// defaults to.
    pki: Option<Pki>,
}

/// The serving certificate and client CA: the user's files, or ones
/// generated into the data directory (the embedded default).
async fn serving_material(opts: &CompletedOptions) -> Result<Serving, RunError> {
    let o = &opts.options;
    let min_version = match o.secure_serving.tls_min_version.as_str() {
        "" => TlsVersion::default(),
        v => v.parse()?,
    };
    let mut tls = TlsOptions {
        cert_file: PathBuf::new(),
        key_file: PathBuf::new(),
        // The authenticators' bundles, once they are loaded.
        client_cas: Vec::new(),
        min_version,
        cipher_suites: o.secure_serving.tls_cipher_suites.clone(),
        http2: true,
        sni_cert_keys: Vec::new(),
    };
    if let (Some(cert), Some(key)) = (
        &o.secure_serving.tls_cert_file,
        &o.secure_serving.tls_private_key_file,
    ) {
        tls.cert_file = cert.clone();
        tls.key_file = key.clone();
        let keys = DefaultKeys {
            generated_signing_key: None,
            tls_private_key: Some(key.clone()),
        };
        return Ok(Serving {
            tls,
            client_ca_file: o.client_ca_file.clone(),
            kubeconfig: None,
            keys,
            pki: None,
        });
    }
    let port = u16::try_from(o.secure_serving.secure_port)?;
    let bind = o.secure_serving.bind_address;
    let server_host = if bind.is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        bind.to_string()
    };
    let pki_opts = PkiOptions {
        ip_addresses: vec![bind, opts.advertise_address],
        service_ip: Some(opts.service_ip_ranges.api_server_service_ip),
        server_host,
        secure_port: port,
        ..PkiOptions::default()
    };
    let data_dir = o.data_dir.clone();
    let pki = tokio::task::spawn_blocking(move || ensure_pki(&data_dir, &pki_opts)).await??;
    tls.cert_file = pki.serving_cert.clone();
    tls.key_file = pki.serving_key.clone();
    Ok(Serving {
        tls,
        client_ca_file: o.client_ca_file.clone().or(Some(pki.ca_cert.clone())),
        kubeconfig: Some(pki.kubeconfig.clone()),
        keys: DefaultKeys {
            generated_signing_key: Some(pki.sa_key.clone()),
            tls_private_key: None,
        },
        pki: Some(pki),
    })
}

/// With the generated PKI and neither `--requestheader-client-ca-file` nor
/// `--proxy-client-cert-file` given, the aggregator's front proxy is set up
/// as kubeadm sets it up: the generated front-proxy CA verifies front-proxy
/// clients (`front-proxy-client`, with the `X-Remote-*` headers) and the
/// generated client certificate identifies the aggregator to aggregated
/// API servers.
fn default_front_proxy(opts: &mut CompletedOptions, pki: &Pki) {
    let flags = &mut opts.options.flags;
    if flags.explicit("requestheader-client-ca-file") || flags.explicit("proxy-client-cert-file") {
        return;
    }
    let path = |p: &std::path::Path| Value::Str(p.display().to_string());
    let list = |v: &str| Value::List(vec![v.to_owned()]);
    flags.default_to(
        "requestheader-client-ca-file",
        path(&pki.front_proxy_ca_cert),
    );
    flags.default_to("requestheader-allowed-names", list(FRONT_PROXY_CLIENT));
    flags.default_to("requestheader-username-headers", list("X-Remote-User"));
    flags.default_to("requestheader-group-headers", list("X-Remote-Group"));
    flags.default_to(
        "requestheader-extra-headers-prefix",
        list("X-Remote-Extra-"),
    );
    flags.default_to("proxy-client-cert-file", path(&pki.front_proxy_client_cert));
    flags.default_to("proxy-client-key-file", path(&pki.front_proxy_client_key));
}

pub async fn run(opts: CompletedOptions) -> Result<(), RunError> {
    // Upstream applies the tracing options first; spans still batched when
    // the server stops are exported before the process exits.
    let server_id = format!("apiserver-{}", uuid::Uuid::new_v4());
    let traces = opts.tracing().apply(&server_id)?;
    let result = serve(opts).await;
    if let Some(provider) = traces {
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = flushed {
            tracing::warn!(error = %e, "exporting the last spans failed");
        }
    }
    result
}

async fn serve(mut opts: CompletedOptions) -> Result<(), RunError> {
    // Process-wide, like upstream's gate: it decides what every handler
    // and custom resource store offers.
    apiserver::endpoints::negotiation::set_cbor_enabled(
        opts.feature_gates.get("CBORServingAndStorage") == Some(&true),
    );
    let (kv, embedded) = open_storage(&opts).await?;
    let encryption = super::encryption::wrap(kv, &opts).await?;
    let kv = encryption.kv;
    let _compactor =
        storage::compactor::start(kv.clone(), opts.options.etcd.compaction_interval.to_std());
    let serving = serving_material(&opts).await?;
    if let Some(pki) = &serving.pki {
        default_front_proxy(&mut opts, pki);
    }
    let authn = {
        let (opts, keys) = (opts.clone(), serving.keys.clone());
        let client_ca = serving.client_ca_file.clone();
        let external = external_address(&opts);
        tokio::task::spawn_blocking(move || {
            authentication::build(&opts, &keys, &external, client_ca.as_deref())
        })
        .await??
    };
    // Handshakes hint the authenticators' current CA names, and new
    // connections get rotated serving certificates (upstream's dynamic
    // serving content).
    let o = &opts.options;
    let mut tls = serving.tls.clone();
    tls.client_cas = authn.client_cas();
    let tls_config = tls.reloading(DEFAULT_RELOAD_INTERVAL).await?;
    let config = generic_config(&opts, kv.clone(), authn.authentication.clone())?;
    let factory = StorageFactory {
        kv,
        prefix: o.etcd.prefix.clone(),
        watch_cache: o.etcd.watch_cache,
        codec: StorageCodec {
            media_type: StorageMediaType::from_flag(&o.etcd.storage_media_type),
        },
    };
    let mut chain = create_server_chain(&config, &factory, &opts, &authn)?;
    if let Some(check) = encryption.health_check {
        chain.front.add_health_check(check);
    }
    repair_service_addresses(&chain).await?;
    let prepared = chain.front.prepare_run();
    let port = u16::try_from(o.secure_serving.secure_port)?;
    let addr = SocketAddr::new(o.secure_serving.bind_address, port);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(address = %listener.local_addr()?, "serving securely");
    let config_file = o.flags.string("authorization-config").unwrap_or_default();
    let summary = SecuritySummary {
        address: listener.local_addr()?,
        authorizers: if config_file.is_empty() {
            Authorizers::Modes(&opts.authorization_modes)
        } else {
            Authorizers::ConfigFile(&config_file)
        },
        anonymous: authn.authentication.anonymous_allowed(),
        client_ca_file: serving.client_ca_file.as_deref(),
        admin_kubeconfig: serving.kubeconfig.as_deref(),
    };
    eprintln!("{summary}");
    if let Some(kubeconfig) = &serving.kubeconfig {
        eprintln!("export KUBECONFIG={}", kubeconfig.display());
    }
    let serve_options = ServeOptions {
        http2_max_streams_per_connection: opts.http2_max_concurrent_streams,
        ..ServeOptions::default()
    };
    prepared
        .run(listener, tls_config, serve_options, shutdown_signal())
        .await;
    // A clean close spares the next start redb's repair walk of the whole
    // file (upstream closes its storage backends at shutdown too).
    if let Some(embedded) = embedded {
        embedded.close().await;
    }
    tracing::info!("server stopped");
    Ok(())
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM");
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

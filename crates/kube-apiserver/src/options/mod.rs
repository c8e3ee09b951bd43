//! Command-line options of `kube-apiserver`: every upstream flag, grouped in
//! upstream's named flag sets, plus `--data-dir`.
//!
//! Use: [`Options::parse_from`] the arguments, [`Options::complete`] to fill
//! derived defaults, then [`CompletedOptions::validate`], which reports every
//! invalid value at once, and [`CompletedOptions::unsupported`], which reports
//! flags this server does not implement yet that are set to a non-default
//! value; startup needs both lists empty. The flag tables live in [`sets`], one module
//! per flag set; which flags are implemented is listed in [`support`].
//!
//! ```ignore
//! let options = match Options::parse_from(std::env::args_os()) {
//!     Ok(options) => options,
//!     Err(err) => err.exit(), // also prints --help and exits 0 for it
//! };
//! let completed = options.complete();
//! let mut errors = completed.validate();
//! errors.extend(completed.unsupported());
//! if !errors.is_empty() {
//!     for error in &errors {
//!         eprintln!("{error}"); // "--secure-port: 0 must be between 1 and 65535, ..."
//!     }
//!     std::process::exit(1);
//! }
//! ```

mod admission;
mod command;
mod complete;
mod feature_gates;
mod flags;
mod kubelet;
mod logs;
mod sets;
pub mod support;
mod syntax;
mod traces;
mod validate;
mod value;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;

use apimachinery::go_duration::GoDuration;
use clap::error::ErrorKind;

pub use admission::AdmissionOptions;
pub use complete::{CompletedOptions, StorageBackend};
pub use flags::FlagValues;
pub use kubelet::KubeletOptions;
pub use syntax::{Cidr, PortRange};
pub use value::{Value, VersionFlag};

use flags::FlagTableError;

/// One problem with the options, naming the flag it concerns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--{flag}: {message}")]
pub struct OptionError {
    /// The flag's long name, without `--`.
    pub flag: &'static str,
    pub message: String,
}

impl OptionError {
    fn new(flag: &'static str, message: impl Into<String>) -> Self {
        Self {
            flag,
            message: message.into(),
        }
    }
}

/// Generic flags the server uses.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericOptions {
    pub advertise_address: Option<IpAddr>,
    pub cors_allowed_origins: Vec<String>,
    pub strict_transport_security_directives: Vec<String>,
    pub external_hostname: String,
    pub max_requests_inflight: i64,
    pub max_mutating_requests_inflight: i64,
    pub request_timeout: GoDuration,
    /// Seconds.
    pub min_request_timeout: i64,
    pub livez_grace_period: GoDuration,
    pub shutdown_delay_duration: GoDuration,
    /// `--feature-gates` as given: component (`""` when omitted) to
    /// `Name=bool` items. [`CompletedOptions::feature_gates`] resolves it.
    pub feature_gates: BTreeMap<String, Vec<String>>,
}

/// Storage flags the server uses.
#[derive(Debug, Clone, PartialEq)]
pub struct EtcdOptions {
    /// Empty: use the embedded store.
    pub servers: Vec<String>,
    pub prefix: String,
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub compaction_interval: GoDuration,
    pub count_metric_poll_period: GoDuration,
    /// `""` means the default, `etcd3`.
    pub storage_backend: String,
    pub storage_media_type: String,
    pub watch_cache: bool,
    /// `resource[.group]#size` entries.
    pub watch_cache_sizes: Vec<String>,
}

/// HTTPS serving flags the server uses.
#[derive(Debug, Clone, PartialEq)]
pub struct SecureServingOptions {
    pub bind_address: IpAddr,
    pub secure_port: i64,
    pub cert_dir: PathBuf,
    pub tls_cert_file: Option<PathBuf>,
    pub tls_private_key_file: Option<PathBuf>,
    /// As given, e.g. `VersionTLS12`; [`CompletedOptions::tls_min_version`]
    /// has it parsed.
    pub tls_min_version: String,
    /// IANA cipher suite names.
    pub tls_cipher_suites: Vec<String>,
    /// 0 means the HTTP/2 library's default.
    pub http2_max_streams_per_connection: i64,
}

/// Options for all flags the server implements, plus every flag's raw value.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub generic: GenericOptions,
    pub etcd: EtcdOptions,
    pub secure_serving: SecureServingOptions,
    /// `--client-ca-file`.
    pub client_ca_file: Option<PathBuf>,
    /// `--authorization-mode` as given; empty means Node,RBAC (see
    /// [`CompletedOptions::authorization_modes`]).
    pub authorization_modes: Vec<String>,
    /// `--runtime-config` as given.
    pub runtime_config: BTreeMap<String, String>,
    /// `--service-cluster-ip-range` as given (empty: the default range).
    pub service_cluster_ip_range: String,
    pub service_node_port_range: PortRange,
    /// `-v`: log verbosity.
    pub verbosity: u32,
    pub version: VersionFlag,
    pub data_dir: PathBuf,
    /// One line per deprecated flag given, worded like upstream's
    /// ("Flag --x has been deprecated, ..."); print them as warnings.
    pub deprecation_warnings: Vec<String>,
    /// Every flag, implemented or not, with its value.
    pub flags: FlagValues,
}

impl Options {
    /// Parses the command line (`args` starts with the program name).
    ///
    /// `--help` comes back as an error of kind
    /// [`ErrorKind::DisplayHelp`]: print it and exit 0
    /// (`clap::Error::exit` does both).
    pub fn parse_from<I, T>(args: I) -> Result<Options, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let data_dir = flags::default_data_dir().to_string_lossy().into_owned();
        let matches = command::command(&data_dir)
            .try_get_matches_from(command::normalize_flag_names(args))?;
        let flags = command::collect(&matches, &data_dir).map_err(internal)?;
        Options::from_flags(flags).map_err(internal)
    }

    fn from_flags(flags: FlagValues) -> Result<Options, FlagTableError> {
        let f = &flags;
        Ok(Options {
            generic: GenericOptions {
                advertise_address: f.ip("advertise-address")?,
                cors_allowed_origins: f.list("cors-allowed-origins")?,
                strict_transport_security_directives: f
                    .list("strict-transport-security-directives")?,
                external_hostname: f.string("external-hostname")?,
                max_requests_inflight: f.int("max-requests-inflight")?,
                max_mutating_requests_inflight: f.int("max-mutating-requests-inflight")?,
                request_timeout: f.duration("request-timeout")?,
                min_request_timeout: f.int("min-request-timeout")?,
                livez_grace_period: f.duration("livez-grace-period")?,
                shutdown_delay_duration: f.duration("shutdown-delay-duration")?,
                feature_gates: f.multimap("feature-gates")?,
            },
            etcd: EtcdOptions {
                servers: f.list("etcd-servers")?,
                prefix: f.string("etcd-prefix")?,
                ca_file: f.path("etcd-cafile")?,
                cert_file: f.path("etcd-certfile")?,
                key_file: f.path("etcd-keyfile")?,
                compaction_interval: f.duration("etcd-compaction-interval")?,
                count_metric_poll_period: f.duration("etcd-count-metric-poll-period")?,
                storage_backend: f.string("storage-backend")?,
                storage_media_type: f.string("storage-media-type")?,
                watch_cache: f.bool("watch-cache")?,
                watch_cache_sizes: f.list("watch-cache-sizes")?,
            },
            secure_serving: SecureServingOptions {
                bind_address: f.ip("bind-address")?.unwrap_or(IpAddr::from([0, 0, 0, 0])),
                secure_port: f.int("secure-port")?,
                cert_dir: PathBuf::from(f.string("cert-dir")?),
                tls_cert_file: f.path("tls-cert-file")?,
                tls_private_key_file: f.path("tls-private-key-file")?,
                tls_min_version: f.string("tls-min-version")?,
                tls_cipher_suites: f.list("tls-cipher-suites")?,
                http2_max_streams_per_connection: f.int("http2-max-streams-per-connection")?,
            },
            client_ca_file: f.path("client-ca-file")?,
            authorization_modes: f.list("authorization-mode")?,
            runtime_config: f.map("runtime-config")?,
            service_cluster_ip_range: f.string("service-cluster-ip-range")?,
            service_node_port_range: f.port_range("service-node-port-range")?,
            verbosity: f.level(sets::logs::VERBOSITY)?,
            version: f.version(sets::global::VERSION)?,
            data_dir: PathBuf::from(f.string(sets::generic::DATA_DIR)?),
            deprecation_warnings: sets::all()
                .filter(|(_, spec)| f.explicit(spec.name))
                .filter_map(|(_, spec)| {
                    let note = spec.deprecated?;
                    Some(format!("Flag --{} has been deprecated, {note}", spec.name))
                })
                .collect(),
            flags,
        })
    }
}

fn internal(err: FlagTableError) -> clap::Error {
    clap::Error::raw(ErrorKind::InvalidValue, format!("{err}\n"))
}

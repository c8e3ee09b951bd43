//! The `--kubelet-*` flags: how this server reaches kubelets for logs,
//! exec, attach, port-forward and node proxying (upstream's
//! `KubeletClientConfig`).

use std::path::PathBuf;
use std::time::Duration;

use super::flags::FlagValues;
use super::Value;

/// Upstream's default `--kubelet-port`.
const DEFAULT_PORT: u16 = 10250;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletOptions {
    /// `--kubelet-client-certificate`.
    pub client_certificate: Option<PathBuf>,
    /// `--kubelet-client-key`.
    pub client_key: Option<PathBuf>,
    /// `--kubelet-certificate-authority`: without it kubelets' serving
    /// certificates are not verified, as upstream.
    pub certificate_authority: Option<PathBuf>,
    /// `--kubelet-preferred-address-types`, in order.
    pub preferred_address_types: Vec<String>,
    /// `--kubelet-port` (deprecated): the port of a node that reports none.
    pub port: u16,
    /// `--kubelet-timeout`: bounds connecting to a kubelet.
    pub timeout: Duration,
}

impl KubeletOptions {
    pub fn from_flags(flags: &FlagValues) -> Self {
        let port = match flags.get("kubelet-port").map(|f| &f.value) {
            Some(Value::Uint(port)) => u16::try_from(*port).unwrap_or(DEFAULT_PORT),
            _ => DEFAULT_PORT,
        };
        KubeletOptions {
            client_certificate: flags.path("kubelet-client-certificate").ok().flatten(),
            client_key: flags.path("kubelet-client-key").ok().flatten(),
            certificate_authority: flags.path("kubelet-certificate-authority").ok().flatten(),
            preferred_address_types: flags
                .list("kubelet-preferred-address-types")
                .unwrap_or_default(),
            port,
            timeout: flags
                .duration("kubelet-timeout")
                .map(|d| d.to_std())
                .unwrap_or(Duration::from_secs(5)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;

    fn parse(args: &[&str]) -> KubeletOptions {
        let argv = std::iter::once("kube-apiserver").chain(args.iter().copied());
        let options = Options::parse_from(argv).unwrap();
        KubeletOptions::from_flags(&options.flags)
    }

    #[test]
    fn defaults_are_upstreams() {
        let opts = parse(&[]);
        assert_eq!(
            opts.preferred_address_types,
            [
                "Hostname",
                "InternalDNS",
                "InternalIP",
                "ExternalDNS",
                "ExternalIP"
            ]
        );
        assert_eq!(opts.port, 10250);
        assert_eq!(opts.timeout, Duration::from_secs(5));
        assert_eq!(opts.certificate_authority, None);
    }

    #[test]
    fn flags_are_read() {
        let opts = parse(&[
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            "--kubelet-port=10350",
            "--kubelet-timeout=2s",
            "--kubelet-client-certificate=/k/c.crt",
            "--kubelet-client-key=/k/c.key",
            "--kubelet-certificate-authority=/k/ca.crt",
        ]);
        assert_eq!(opts.preferred_address_types, ["InternalIP", "Hostname"]);
        assert_eq!(opts.port, 10350);
        assert_eq!(opts.timeout, Duration::from_secs(2));
        assert_eq!(opts.client_key, Some(PathBuf::from("/k/c.key")));
        assert_eq!(opts.certificate_authority, Some(PathBuf::from("/k/ca.crt")));
    }
}

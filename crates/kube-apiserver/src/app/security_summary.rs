//! The one line printed at startup that states the effective security
//! configuration: where the server listens, who decides authorization,
//! whether anonymous requests are accepted, which CA authenticates client
//! certificates and where the admin credentials are. Upstream logs the
//! serving address (`SecureServingInfo.Serve`) and leaves the rest to its
//! flags; a server that starts without flags has to say what it chose.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use crate::pki::{ADMIN_GROUP, ADMIN_USER};

/// Who authorizes requests.
#[derive(Debug, Clone, Copy)]
pub enum Authorizers<'a> {
    /// `--authorization-mode` (or its default), in order.
    Modes(&'a [String]),
    /// `--authorization-config`.
    ConfigFile(&'a str),
}

/// The effective security configuration, rendered by its `Display`.
#[derive(Debug, Clone, Copy)]
pub struct SecuritySummary<'a> {
    /// The address the listener is bound to.
    pub address: SocketAddr,
    pub authorizers: Authorizers<'a>,
    /// Whether requests no authenticator claimed become `system:anonymous`.
    pub anonymous: bool,
    /// `--client-ca-file`, or the generated CA.
    pub client_ca_file: Option<&'a Path>,
    /// The generated admin kubeconfig.
    pub admin_kubeconfig: Option<&'a Path>,
}

impl fmt::Display for SecuritySummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Security: listening on {}", self.address)?;
        if self.address.ip().is_unspecified() {
            f.write_str(" (every interface)")?;
        }
        match self.authorizers {
            Authorizers::Modes(modes) => write!(f, "; authorization-mode={}", modes.join(","))?,
            Authorizers::ConfigFile(path) => write!(f, "; authorization-config={path}")?,
        }
        write!(f, "; anonymous-auth={}", self.anonymous)?;
        match self.client_ca_file {
            Some(path) => write!(f, "; client-ca-file={}", path.display())?,
            None => f.write_str("; client-ca-file=none (client certificates not accepted)")?,
        }
        if let Some(path) = self.admin_kubeconfig {
            write!(
                f,
                "; admin kubeconfig={} (user {ADMIN_USER}, group {ADMIN_GROUP})",
                path.display()
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_configuration_reads_as_one_line() {
        let modes = ["Node".to_owned(), "RBAC".to_owned()];
        let summary = SecuritySummary {
            address: "0.0.0.0:6443".parse().unwrap(),
            authorizers: Authorizers::Modes(&modes),
            anonymous: true,
            client_ca_file: Some(Path::new("/d/pki/ca.crt")),
            admin_kubeconfig: Some(Path::new("/d/admin.kubeconfig")),
        };
        assert_eq!(
            summary.to_string(),
            "Security: listening on 0.0.0.0:6443 (every interface); authorization-mode=Node,RBAC; \
             anonymous-auth=true; client-ca-file=/d/pki/ca.crt; admin kubeconfig=/d/admin.kubeconfig \
             (user kubernetes-admin, group system:masters)"
        );
    }

    #[test]
    fn configuration_file_and_missing_ca_are_named() {
        let summary = SecuritySummary {
            address: "127.0.0.1:443".parse().unwrap(),
            authorizers: Authorizers::ConfigFile("/etc/authz.yaml"),
            anonymous: false,
            client_ca_file: None,
            admin_kubeconfig: None,
        };
        assert_eq!(
            summary.to_string(),
            "Security: listening on 127.0.0.1:443; authorization-config=/etc/authz.yaml; \
             anonymous-auth=false; client-ca-file=none (client certificates not accepted)"
        );
    }
}

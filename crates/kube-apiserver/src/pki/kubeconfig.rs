//! The admin kubeconfig (client-go's `clientcmd` v1 `Config` format) with the
//! CA and the admin client credentials embedded, as kubeadm writes `admin.conf`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Serialize;

/// Name of the cluster entry (kubeadm's default cluster name).
const CLUSTER_NAME: &str = "kubernetes";

#[derive(Serialize)]
struct Config<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    clusters: [NamedCluster<'a>; 1],
    users: [NamedUser<'a>; 1],
    contexts: [NamedContext<'a>; 1],
    #[serde(rename = "current-context")]
    current_context: &'a str,
    preferences: Preferences,
}

#[derive(Serialize)]
struct Preferences {}

#[derive(Serialize)]
struct NamedCluster<'a> {
    name: &'a str,
    cluster: Cluster,
}

#[derive(Serialize)]
struct Cluster {
    server: String,
    #[serde(rename = "certificate-authority-data")]
    certificate_authority_data: String,
}

#[derive(Serialize)]
struct NamedUser<'a> {
    name: &'a str,
    user: User,
}

#[derive(Serialize)]
struct User {
    #[serde(rename = "client-certificate-data")]
    client_certificate_data: String,
    #[serde(rename = "client-key-data")]
    client_key_data: String,
}

#[derive(Serialize)]
struct NamedContext<'a> {
    name: &'a str,
    context: Context<'a>,
}

#[derive(Serialize)]
struct Context<'a> {
    cluster: &'a str,
    user: &'a str,
}

/// Inputs of the admin kubeconfig.
pub(super) struct AdminKubeconfig<'a> {
    /// `https://host:port` of the API server.
    pub server: String,
    pub ca_cert_pem: &'a str,
    pub user_name: &'a str,
    pub client_cert_pem: &'a str,
    pub client_key_pem: &'a str,
}

impl AdminKubeconfig<'_> {
    /// Renders the kubeconfig as YAML.
    pub fn to_yaml(&self) -> Result<String, serde_yaml::Error> {
        let context_name = format!("{}@{CLUSTER_NAME}", self.user_name);
        let config = Config {
            api_version: "v1",
            kind: "Config",
            clusters: [NamedCluster {
                name: CLUSTER_NAME,
                cluster: Cluster {
                    server: self.server.clone(),
                    certificate_authority_data: STANDARD.encode(self.ca_cert_pem),
                },
            }],
            users: [NamedUser {
                name: self.user_name,
                user: User {
                    client_certificate_data: STANDARD.encode(self.client_cert_pem),
                    client_key_data: STANDARD.encode(self.client_key_pem),
                },
            }],
            contexts: [NamedContext {
                name: &context_name,
                context: Context {
                    cluster: CLUSTER_NAME,
                    user: self.user_name,
                },
            }],
            current_context: &context_name,
            preferences: Preferences {},
        };
        serde_yaml::to_string(&config)
    }
}

/// `https://host:port`, bracketing IPv6 literals.
pub(super) fn server_url(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("https://[{host}]:{port}")
    } else {
        format!("https://{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_url_brackets_ipv6() {
        assert_eq!(server_url("127.0.0.1", 6443), "https://127.0.0.1:6443");
        assert_eq!(server_url("::1", 6443), "https://[::1]:6443");
        assert_eq!(server_url("[::1]", 443), "https://[::1]:443");
        assert_eq!(server_url("example.com", 443), "https://example.com:443");
    }
}

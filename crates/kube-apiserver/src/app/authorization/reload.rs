//! Automatic reload of `--authorization-config` (upstream's reloadable
//! authorizer resolver): the file is read again every few seconds, and a
//! changed file that is valid replaces the authorizer chain — webhooks are
//! built anew, while RBAC and Node keep their instances (and their
//! bindings to the stores), and the non-webhook types the server started
//! with must stay. An invalid file keeps the running chain. Each reload is
//! counted in the `apiserver_authorization_config_controller_*` metrics.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use apiserver::apis::apiserver::authorization::{self as config, AuthorizerEntry, ConfigFileError};
use apiserver::authentication::user::UserInfo;
use apiserver::authorization;
use apiserver::authorization::authorizer::{Attributes, Authorizer, Decision, Outcome, Rules};
use apiserver::filters::authorization::AuthorizationMode;
use apiserver::metrics::config_reload::hash_label;
use apiserver::metrics::Metrics;
use async_trait::async_trait;

use super::{entry_mode, AuthorizationError, Shared};
use crate::authorization::node::NodeAuthorizer;
use crate::authorization::rbac::RbacAuthorizer;

/// The name the chain is configured under.
pub const NAME: &str = "authorization-config";
/// How often the file is read again (upstream watches it and polls each
/// minute; a short poll stands in for the watch).
const RELOAD_INTERVAL: Duration = Duration::from_secs(3);

type Chain = Arc<Vec<AuthorizationMode>>;

/// The authorizer chain of `--authorization-config`, replaced on reload.
pub struct ReloadableAuthorizer {
    path: PathBuf,
    shared: Shared,
    /// Non-webhook types a reloaded file must keep.
    required: BTreeSet<String>,
    current: RwLock<Chain>,
    /// The file's content as last read, whether it was applied or not.
    last_read: Mutex<Vec<u8>>,
    /// `sha256:` of this server's identity, for the metrics.
    server_hash: String,
}

fn build(entries: Vec<AuthorizerEntry>, shared: &Shared) -> Result<Chain, AuthorizationError> {
    let modes = entries
        .into_iter()
        .map(|entry| entry_mode(entry, shared))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(modes))
}

impl ReloadableAuthorizer {
    /// Reads the file the server starts with (blocking file I/O);
    /// `service_account_reads` configures a Node authorizer it names.
    pub fn load(path: PathBuf, service_account_reads: bool) -> Result<Self, AuthorizationError> {
        let data = std::fs::read(&path).map_err(|source| ConfigFileError::Io {
            path: path.clone(),
            source,
        })?;
        let entries = config::parse(&String::from_utf8_lossy(&data))?;
        let shared = Shared::for_entries(&entries, service_account_reads);
        let required = entries
            .iter()
            .filter(|e| e.kind != "Webhook")
            .map(|e| e.kind.clone())
            .collect();
        let chain = build(entries, &shared)?;
        let identity = format!("apiserver-{}", uuid::Uuid::new_v4());
        Ok(ReloadableAuthorizer {
            path,
            shared,
            required,
            current: RwLock::new(chain),
            last_read: Mutex::new(data),
            server_hash: hash_label(identity.as_bytes()),
        })
    }

    /// The RBAC authorizer the file started with.
    pub fn rbac(&self) -> Option<Arc<RbacAuthorizer>> {
        self.shared.rbac.clone()
    }

    /// The Node authorizer the file started with.
    pub fn node(&self) -> Option<Arc<NodeAuthorizer>> {
        self.shared.node.clone()
    }

    fn snapshot(&self) -> Chain {
        match self.current.read() {
            Ok(chain) => chain.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the file and applies it when it changed (blocking file I/O).
    /// `Ok(Some(content))` when the chain was replaced.
    fn check(&self) -> Result<Option<Vec<u8>>, String> {
        let data = std::fs::read(&self.path).map_err(|e| e.to_string())?;
        {
            let mut last = self.last_read.lock().unwrap_or_else(|p| p.into_inner());
            if *last == data {
                return Ok(None);
            }
            last.clone_from(&data);
        }
        let entries = config::parse_requiring(&String::from_utf8_lossy(&data), &self.required)
            .map_err(|e| e.to_string())?;
        let chain = build(entries, &self.shared).map_err(|e| e.to_string())?;
        match self.current.write() {
            Ok(mut current) => *current = chain,
            Err(poisoned) => *poisoned.into_inner() = chain,
        }
        Ok(Some(data))
    }

    /// Checks the file every [`RELOAD_INTERVAL`], for ever.
    pub async fn run(self: Arc<Self>, metrics: Arc<Metrics>) {
        let reloads = &metrics.authorization_config;
        let initial = self
            .last_read
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Upstream counts the configuration the server started with.
        reloads.record_success(&self.server_hash, &initial);
        loop {
            tokio::time::sleep(RELOAD_INTERVAL).await;
            let this = self.clone();
            match tokio::task::spawn_blocking(move || this.check()).await {
                Ok(Ok(None)) => {}
                Ok(Ok(Some(data))) => {
                    tracing::info!(path = %self.path.display(), "reloaded the authorization configuration");
                    reloads.record_success(&self.server_hash, &data);
                }
                Ok(Err(e)) => {
                    tracing::error!(path = %self.path.display(), error = %e, "reloading the authorization configuration failed; the previous one stays");
                    reloads.record_failure(&self.server_hash);
                }
                Err(e) => {
                    tracing::error!(error = %e, "reloading the authorization configuration panicked")
                }
            }
        }
    }
}

#[async_trait]
impl Authorizer for ReloadableAuthorizer {
    async fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let chain = self.snapshot();
        authorization::decide(&chain, attrs).await
    }

    async fn evaluate(&self, attrs: &Attributes<'_>) -> Outcome {
        let chain = self.snapshot();
        authorization::evaluate(&chain, attrs).await
    }

    async fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let chain = self.snapshot();
        authorization::rules_for(&chain, user, namespace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str =
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n";

    fn write(path: &std::path::Path, types: &[&str]) {
        let body: String = types
            .iter()
            .map(|t| format!("- type: {t}\n  name: {}\n", t.to_lowercase()))
            .collect();
        assert!(std::fs::write(path, format!("{HEAD}{body}")).is_ok());
    }

    fn kinds(authorizer: &ReloadableAuthorizer) -> Vec<String> {
        authorizer
            .snapshot()
            .iter()
            .map(|m| match m {
                AuthorizationMode::AlwaysAllow => "AlwaysAllow".to_owned(),
                AuthorizationMode::AlwaysDeny => "AlwaysDeny".to_owned(),
                AuthorizationMode::Named(named) => named.name.clone(),
            })
            .collect()
    }

    #[test]
    fn valid_changes_replace_the_chain_and_invalid_ones_keep_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("authz.yaml");
        write(&path, &["Node", "RBAC"]);
        let authorizer = match ReloadableAuthorizer::load(path.clone(), true) {
            Ok(a) => a,
            Err(e) => panic!("refused: {e}"),
        };
        let rbac = authorizer.rbac();
        assert_eq!(kinds(&authorizer), ["node", "RBAC"]);
        assert_eq!(authorizer.check(), Ok(None));
        // Reordered, with AlwaysDeny added: RBAC keeps its instance.
        write(&path, &["RBAC", "AlwaysDeny", "Node"]);
        assert!(matches!(authorizer.check(), Ok(Some(_))));
        assert_eq!(kinds(&authorizer), ["RBAC", "AlwaysDeny", "node"]);
        let same = authorizer.snapshot().iter().any(|m| match (m, &rbac) {
            (AuthorizationMode::Named(named), Some(before)) => named
                .downcast::<RbacAuthorizer>()
                .is_some_and(|now| Arc::ptr_eq(&now, before)),
            _ => false,
        });
        assert!(same);
        // Dropping a type the server started with is refused.
        write(&path, &["RBAC"]);
        assert_eq!(
            authorizer.check(),
            Err("missing required types: [Node]".to_owned())
        );
        assert_eq!(kinds(&authorizer), ["RBAC", "AlwaysDeny", "node"]);
        // The same bad content is not retried.
        assert_eq!(authorizer.check(), Ok(None));
    }

    #[test]
    fn types_missing_at_startup_cannot_be_added() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("authz.yaml");
        write(&path, &["AlwaysAllow"]);
        let authorizer = match ReloadableAuthorizer::load(path.clone(), true) {
            Ok(a) => a,
            Err(e) => panic!("refused: {e}"),
        };
        write(&path, &["RBAC", "AlwaysAllow"]);
        assert_eq!(
            authorizer.check(),
            Err("authorizer type RBAC is not allowed if it was not enabled at initial server startup".to_owned())
        );
        assert_eq!(kinds(&authorizer), ["AlwaysAllow"]);
    }
}

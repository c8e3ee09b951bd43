//! The JWT authenticators of `--authentication-config`, reloaded when the
//! file changes (upstream checks it every minute): a changed file is
//! validated again and, when valid, its authenticators replace the old
//! ones; an invalid file, or one that changes `anonymous` (which upstream
//! does not reload), keeps the running configuration.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use apiserver::apis::apiserver::authentication::{self as authn_config, AnonymousConfig};
use apiserver::authentication::{AuthError, TokenAuthenticator, TokenResponse};
use apiserver::plugin::pkg::authenticator::token::oidc::{OidcAuthenticator, OidcConfig};
use async_trait::async_trait;

/// How often the file is read again.
pub const RELOAD_PERIOD: Duration = Duration::from_secs(60);

type Authenticators = Arc<Vec<OidcAuthenticator>>;

/// The current JWT authenticators, tried in order.
pub struct JwtAuthenticators {
    current: RwLock<Authenticators>,
}

fn build(configs: Vec<OidcConfig>) -> Result<Authenticators, String> {
    let list = configs
        .into_iter()
        .map(OidcAuthenticator::new)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Arc::new(list))
}

impl JwtAuthenticators {
    pub fn new(configs: Vec<OidcConfig>) -> Result<Self, String> {
        Ok(JwtAuthenticators {
            current: RwLock::new(build(configs)?),
        })
    }

    fn snapshot(&self) -> Authenticators {
        match self.current.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the authenticators (their keys are fetched anew).
    pub fn replace(&self, configs: Vec<OidcConfig>) -> Result<(), String> {
        let next = build(configs)?;
        match self.current.write() {
            Ok(mut guard) => *guard = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        Ok(())
    }
}

#[async_trait]
impl TokenAuthenticator for JwtAuthenticators {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        let current = self.snapshot();
        let mut errors = Vec::new();
        for authenticator in current.iter() {
            match authenticator.authenticate_token(token, audiences).await {
                Ok(Some(resp)) => return Ok(Some(resp)),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => Ok(None),
            1 => Err(errors.remove(0)),
            _ => Err(AuthError::Aggregate(errors)),
        }
    }

    fn audience_agnostic(&self) -> bool {
        true
    }
}

/// What reloading needs: the file, what it was, and whom to update.
#[derive(Clone)]
pub struct ConfigWatch {
    pub path: PathBuf,
    /// Service-account issuers, which JWT issuers may not be.
    pub issuers: Vec<String>,
    pub anonymous: Option<AnonymousConfig>,
    /// The contents the running configuration came from.
    pub contents: Vec<u8>,
    pub authenticators: Arc<JwtAuthenticators>,
}

impl ConfigWatch {
    /// Reads the file and applies it when it changed (blocking). `Ok(true)`
    /// when the authenticators were replaced.
    pub fn check(&mut self) -> Result<bool, String> {
        let contents = std::fs::read(&self.path).map_err(|e| e.to_string())?;
        if contents == self.contents {
            return Ok(false);
        }
        let config = authn_config::load(&self.path, &self.issuers).map_err(|e| e.to_string())?;
        if config.anonymous != self.anonymous {
            return Err("changes to the anonymous authenticator are not allowed when reloading the authentication configuration".into());
        }
        self.authenticators.replace(config.jwt)?;
        self.contents = contents;
        Ok(true)
    }

    /// Checks the file every [`RELOAD_PERIOD`], for ever.
    pub async fn run(mut self) {
        loop {
            tokio::time::sleep(RELOAD_PERIOD).await;
            let watch = self.clone();
            let checked = tokio::task::spawn_blocking(move || {
                let mut watch = watch;
                let result = watch.check();
                (watch, result)
            })
            .await;
            match checked {
                Ok((watch, Ok(true))) => {
                    tracing::info!(path = %watch.path.display(), "reloaded the authentication configuration");
                    self = watch;
                }
                Ok((_, Ok(false))) => {}
                Ok((_, Err(e))) => {
                    tracing::error!(path = %self.path.display(), error = %e, "reloading the authentication configuration failed; the previous one stays")
                }
                Err(e) => {
                    tracing::error!(error = %e, "reloading the authentication configuration panicked")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://ISSUER
    audiences: [kubernetes]
  claimMappings:
    username:
      claim: sub
      prefix: ''
";

    #[test]
    fn changed_valid_files_replace_the_authenticators() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("authn.yaml");
        std::fs::write(&path, CONFIG.replace("ISSUER", "a.example")).unwrap();
        let config = authn_config::load(&path, &[]).unwrap();
        let authenticators = Arc::new(JwtAuthenticators::new(config.jwt).unwrap());
        let mut watch = ConfigWatch {
            path: path.clone(),
            issuers: Vec::new(),
            anonymous: None,
            contents: std::fs::read(&path).unwrap(),
            authenticators: authenticators.clone(),
        };
        assert_eq!(watch.check(), Ok(false));
        let two = format!(
            "{}{}",
            CONFIG.replace("ISSUER", "a.example"),
            &CONFIG.replace("ISSUER", "b.example")[CONFIG.find("- issuer").unwrap()..]
        );
        std::fs::write(&path, two).unwrap();
        assert_eq!(watch.check(), Ok(true));
        assert_eq!(authenticators.snapshot().len(), 2);
        // An invalid file, or one adding anonymous settings, is refused.
        std::fs::write(&path, CONFIG.replace("https://ISSUER", "http://c")).unwrap();
        assert!(watch
            .check()
            .unwrap_err()
            .contains("URL scheme must be https"));
        std::fs::write(&path, format!("{CONFIG}anonymous:\n  enabled: true\n")).unwrap();
        assert!(watch.check().unwrap_err().contains("anonymous"));
        assert_eq!(authenticators.snapshot().len(), 2);
    }
}

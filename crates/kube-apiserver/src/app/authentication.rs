//! The authenticator chain from the authentication flags (upstream's
//! `BuiltInAuthenticationOptions` → authenticator config): anonymous,
//! client certificates (verified by the TLS layer), `--token-auth-file`,
//! service-account JWTs with their issuers, keys and audiences, bootstrap
//! tokens, and the token webhook; plus what serves tokens: TokenRequest
//! and the issuer discovery documents.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiserver::admission::initializer::Stores;
use apiserver::apis::apiserver::authentication::{
    self as authn_config, AuthenticationConfig, ConfigError,
};
use apiserver::authentication::cel::{ClaimMapper, ClaimRule, Mapping};
use apiserver::authentication::request_header::RequestHeader;
use apiserver::authentication::token_file::{TokenFile, TokenFileError};
use apiserver::authentication::x509::{ClientCa, ClientCaError};
use apiserver::authentication::Authentication;
use apiserver::plugin::pkg::authenticator::token::oidc::OidcConfig;
use apiserver::plugin::pkg::authenticator::token::webhook::{
    WebhookConfigError, WebhookTokenAuthenticator,
};
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;

use super::runtime_config::ApiEnablement;
use crate::authenticator::bootstrap::BootstrapTokens;
use crate::authenticator::jwt_reload::{ConfigWatch, JwtAuthenticators};
use crate::authenticator::serviceaccount::getter::Objects;
use crate::authenticator::serviceaccount::keys::{self, KeyError, PublicKey};
use crate::authenticator::serviceaccount::{legacy, openid};
use crate::authenticator::serviceaccount::{JwtAuthenticator, TokenGenerator, TokenKind};
use crate::authenticator::token_request::TokenRequests;
use crate::options::CompletedOptions;

/// The issuer kube-apiserver uses when `--service-account-issuer` is not
/// given (upstream requires the flag; kubeadm passes this value).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// How long a successful token check is reused (upstream's token success
/// cache TTL).
const TOKEN_SUCCESS_CACHE_TTL: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum AuthenticationError {
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Webhook(#[from] WebhookConfigError),
    #[error(transparent)]
    ClientCa(#[from] ClientCaError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("reading authentication flags: {0}")]
    Flags(String),
}

/// Where service-account keys come from when the flags name none.
#[derive(Debug, Clone, Default)]
pub struct DefaultKeys {
    /// The signing key generated into the data directory, if any.
    pub generated_signing_key: Option<PathBuf>,
    /// `--tls-private-key-file`, upstream's default verification key.
    pub tls_private_key: Option<PathBuf>,
}

/// The authenticator chain and the token endpoints built with it.
pub struct AuthenticationSetup {
    pub authentication: Arc<Authentication>,
    /// Lookups of service accounts, secrets, pods and nodes; bound to the
    /// stores by [`install`].
    pub objects: Arc<Objects>,
    /// TokenRequest, when a signing key is configured.
    pub token_requests: Option<Arc<TokenRequests>>,
    pub issuers: Vec<String>,
    /// `--service-account-jwks-uri`.
    pub jwks_uri: String,
    pub public_keys: Vec<PublicKey>,
    /// PEM of the cluster CA (the client CA), which the tokens controller
    /// writes into service-account token secrets as `ca.crt`.
    pub root_ca: Option<String>,
    /// Reloads `--authentication-config` when it changes.
    pub config_watch: Option<ConfigWatch>,
    /// The client CA bundle, kept current.
    pub client_ca: Option<ClientCa>,
    /// The front-proxy CA bundle, kept current.
    pub front_proxy_ca: Option<ClientCa>,
}

impl AuthenticationSetup {
    /// The client CA, then the front-proxy CA: the TLS layer hints their
    /// subjects (upstream's union CA content).
    pub fn client_cas(&self) -> Vec<ClientCa> {
        let cas = [&self.client_ca, &self.front_proxy_ca];
        cas.into_iter().flatten().cloned().collect()
    }
}

struct Flags {
    anonymous: bool,
    token_file: Option<PathBuf>,
    bootstrap: bool,
    issuers: Vec<String>,
    key_files: Vec<String>,
    /// `--service-account-lookup`.
    lookup: bool,
    signing_key_file: Option<PathBuf>,
    api_audiences: Vec<String>,
    max_expiration: Duration,
    extend_expiration: bool,
    jwks_uri: String,
    webhook_config: Option<PathBuf>,
    webhook_version: String,
    webhook_cache_ttl: Duration,
    front_proxy: FrontProxyFlags,
    oidc: Option<OidcConfig>,
    /// `--authentication-config`.
    config_file: Option<PathBuf>,
}

/// The `--requestheader-*` flags.
struct FrontProxyFlags {
    client_ca: Option<PathBuf>,
    allowed_names: Vec<String>,
    username_headers: Vec<String>,
    uid_headers: Vec<String>,
    group_headers: Vec<String>,
    extra_prefixes: Vec<String>,
}

fn front_proxy_flags(opts: &CompletedOptions) -> Result<FrontProxyFlags, AuthenticationError> {
    let f = &opts.options.flags;
    let e = flag_error;
    Ok(FrontProxyFlags {
        client_ca: f.path("requestheader-client-ca-file").map_err(e)?,
        allowed_names: f.list("requestheader-allowed-names").map_err(e)?,
        username_headers: f.list("requestheader-username-headers").map_err(e)?,
        uid_headers: f.list("requestheader-uid-headers").map_err(e)?,
        group_headers: f.list("requestheader-group-headers").map_err(e)?,
        extra_prefixes: f
            .list("requestheader-extra-headers-prefix")
            .map_err(e)?
            .iter()
            .map(|p| p.to_lowercase())
            .collect(),
    })
}

fn flag_error(err: impl std::fmt::Display) -> AuthenticationError {
    AuthenticationError::Flags(err.to_string())
}

fn read_flags(opts: &CompletedOptions) -> Result<Flags, AuthenticationError> {
    let f = &opts.options.flags;
    let e = flag_error;
    Ok(Flags {
        anonymous: f.bool("anonymous-auth").map_err(e)?,
        token_file: f.path("token-auth-file").map_err(e)?,
        bootstrap: f.bool("enable-bootstrap-token-auth").map_err(e)?,
        issuers: f.list("service-account-issuer").map_err(e)?,
        key_files: f.list("service-account-key-file").map_err(e)?,
        lookup: f.bool("service-account-lookup").map_err(e)?,
        signing_key_file: f.path("service-account-signing-key-file").map_err(e)?,
        api_audiences: f.list("api-audiences").map_err(e)?,
        max_expiration: f
            .duration("service-account-max-token-expiration")
            .map_err(e)?
            .to_std(),
        extend_expiration: f
            .bool("service-account-extend-token-expiration")
            .map_err(e)?,
        jwks_uri: f.string("service-account-jwks-uri").map_err(e)?,
        webhook_config: f
            .path("authentication-token-webhook-config-file")
            .map_err(e)?,
        webhook_version: f
            .string("authentication-token-webhook-version")
            .map_err(e)?,
        webhook_cache_ttl: f
            .duration("authentication-token-webhook-cache-ttl")
            .map_err(e)?
            .to_std(),
        front_proxy: front_proxy_flags(opts)?,
        oidc: oidc_flags(opts)?,
        config_file: f.path("authentication-config").map_err(e)?,
    })
}

/// The `--oidc-*` flags, when `--oidc-issuer-url` is set (reads the CA).
fn oidc_flags(opts: &CompletedOptions) -> Result<Option<OidcConfig>, AuthenticationError> {
    let f = &opts.options.flags;
    let e = flag_error;
    let issuer = f.string("oidc-issuer-url").map_err(e)?;
    if issuer.is_empty() {
        return Ok(None);
    }
    let client_id = f.string("oidc-client-id").map_err(e)?;
    if client_id.is_empty() {
        return Err(AuthenticationError::Invalid(
            "oidc-issuer-url and oidc-client-id must be specified together".into(),
        ));
    }
    if !issuer.starts_with("https://") {
        return Err(AuthenticationError::Invalid(format!(
            "oidc-issuer-url ({issuer}) must be a valid URL with the https scheme"
        )));
    }
    let ca_pem = match f.path("oidc-ca-file").map_err(e)? {
        Some(path) => {
            Some(std::fs::read(&path).map_err(|source| AuthenticationError::Io { path, source })?)
        }
        None => None,
    };
    let signing_algs = f
        .list("oidc-signing-algs")
        .map_err(e)?
        .iter()
        .map(|alg| {
            alg.parse().map_err(|_| {
                AuthenticationError::Invalid(format!(
                    "oidc-signing-algs: unsupported algorithm {alg:?}"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Upstream turns the flags into one JWT authenticator: usernames other
    // than emails are prefixed with the issuer unless a prefix is given
    // ("-" for none).
    let username_claim = f.string("oidc-username-claim").map_err(e)?;
    let username_prefix = match f.string("oidc-username-prefix").map_err(e)?.as_str() {
        "-" => String::new(),
        "" if username_claim != "email" => format!("{issuer}#"),
        given => given.to_owned(),
    };
    let groups_claim = f.string("oidc-groups-claim").map_err(e)?;
    let groups = if groups_claim.is_empty() {
        Mapping::None
    } else {
        Mapping::Claim {
            claim: groups_claim,
            prefix: f.string("oidc-groups-prefix").map_err(e)?,
        }
    };
    let claim_rules = f
        .map("oidc-required-claim")
        .map_err(e)?
        .into_iter()
        .map(|(claim, value)| ClaimRule::Required { claim, value })
        .collect();
    Ok(Some(OidcConfig {
        issuer,
        discovery_url: None,
        audiences: vec![client_id],
        ca_pem,
        signing_algs,
        mapper: ClaimMapper {
            username: Mapping::Claim {
                claim: username_claim,
                prefix: username_prefix,
            },
            groups,
            uid: Mapping::None,
            extra: Vec::new(),
            claim_rules,
            user_rules: Vec::new(),
        },
    }))
}

/// The `--oidc-*` flags, which `--authentication-config` excludes.
const OIDC_FLAGS: &[&str] = &[
    "oidc-issuer-url",
    "oidc-client-id",
    "oidc-ca-file",
    "oidc-username-claim",
    "oidc-username-prefix",
    "oidc-groups-claim",
    "oidc-groups-prefix",
    "oidc-signing-algs",
    "oidc-required-claim",
];

/// `--authentication-config`, compiled, with upstream's exclusions: no
/// `--oidc-*` flag beside it, and no `--anonymous-auth` when the file
/// configures anonymous requests.
fn authentication_config(
    opts: &CompletedOptions,
    flags: &Flags,
    issuers: &[String],
) -> Result<Option<AuthenticationConfig>, AuthenticationError> {
    let Some(path) = &flags.config_file else {
        return Ok(None);
    };
    let f = &opts.options.flags;
    if OIDC_FLAGS.iter().any(|name| f.explicit(name)) {
        return Err(AuthenticationError::Invalid(
            "authentication-config file and oidc-* flags are mutually exclusive".into(),
        ));
    }
    let config = authn_config::load(path, issuers)?;
    if config.anonymous.is_some() && f.explicit("anonymous-auth") {
        return Err(AuthenticationError::Invalid(
            "anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file".into(),
        ));
    }
    Ok(Some(config))
}

/// Upstream's checks of the service-account flags.
fn validate(flags: &Flags) -> Result<(), AuthenticationError> {
    let mut seen = Vec::new();
    for issuer in &flags.issuers {
        if issuer.is_empty() {
            return Err(AuthenticationError::Invalid(
                "service-account-issuer should not be an empty string".into(),
            ));
        }
        if seen.contains(&issuer) {
            return Err(AuthenticationError::Invalid(format!(
                "service-account-issuer {issuer:?} is already specified"
            )));
        }
        seen.push(issuer);
    }
    if !flags.max_expiration.is_zero() && flags.max_expiration < Duration::from_secs(3600) {
        return Err(AuthenticationError::Invalid(format!(
            "the service-account-max-token-expiration must be set longer than 3600 seconds (currently {}s)",
            flags.max_expiration.as_secs()
        )));
    }
    if !flags.jwks_uri.is_empty() && !flags.jwks_uri.starts_with("https://") {
        return Err(AuthenticationError::Invalid(format!(
            "service-account-jwks-uri requires https scheme, parsed as: {}",
            flags.jwks_uri
        )));
    }
    Ok(())
}

/// Builds the chain from the flags (blocking: reads key, token and CA
/// files). `client_ca` is `--client-ca-file` (or the generated CA).
pub fn build(
    opts: &CompletedOptions,
    defaults: &DefaultKeys,
    external_address: &str,
    client_ca: Option<&std::path::Path>,
) -> Result<AuthenticationSetup, AuthenticationError> {
    let mut flags = read_flags(opts)?;
    validate(&flags)?;
    let issuers = if flags.issuers.is_empty() {
        vec![DEFAULT_ISSUER.to_owned()]
    } else {
        flags.issuers.clone()
    };
    let api_audiences = if flags.api_audiences.is_empty() {
        issuers.clone()
    } else {
        flags.api_audiences.clone()
    };
    let config = authentication_config(opts, &flags, &issuers)?;
    let objects = Arc::new(Objects::default());
    let signing_path = flags
        .signing_key_file
        .clone()
        .or_else(|| defaults.generated_signing_key.clone());
    let signing = signing_path
        .as_deref()
        .map(keys::load_signing_key)
        .transpose()?;
    let public_keys = public_keys(&flags, signing.as_ref(), defaults)?;
    let anonymous = config.as_ref().and_then(|c| c.anonymous.clone());
    let chain = match anonymous {
        Some(a) => {
            Authentication::new(a.enabled, api_audiences.clone()).with_anonymous_paths(a.paths)
        }
        None => Authentication::new(flags.anonymous, api_audiences.clone()),
    };
    let (mut chain, (client_ca_bundle, front_proxy_ca)) =
        with_certificate_authenticators(chain, client_ca, &flags.front_proxy)?;
    let oidc = flags.oidc.take();
    let (jwt, config_watch) = jwt_authenticators(config, oidc, &flags, &issuers)?;
    let keys = ServiceAccountKeys {
        public: &public_keys,
        issuers: &issuers,
        api_audiences: &api_audiences,
        objects: &objects,
    };
    chain = with_token_authenticators(chain, &flags, keys, jwt)?;
    let token_requests = signing.map(|key| {
        Arc::new(TokenRequests {
            generator: TokenGenerator::new(key, issuers.first().cloned().unwrap_or_default()),
            api_audiences,
            max_expiration_seconds: i64::try_from(flags.max_expiration.as_secs()).unwrap_or(0),
            extend_expiration: flags.extend_expiration,
            uid_validation: opts
                .feature_gates
                .get("TokenRequestServiceAccountUIDValidation")
                != Some(&false),
            objects: objects.clone(),
        })
    });
    let jwks_uri = if flags.jwks_uri.is_empty() {
        format!("https://{external_address}{}", openid::JWKS_PATH)
    } else {
        flags.jwks_uri
    };
    let root_ca = client_ca.map(read_pem).transpose()?;
    Ok(AuthenticationSetup {
        authentication: Arc::new(chain.with_success_cache(TOKEN_SUCCESS_CACHE_TTL)),
        root_ca,
        config_watch,
        objects,
        token_requests,
        issuers,
        jwks_uri,
        public_keys,
        client_ca: client_ca_bundle,
        front_proxy_ca,
    })
}

/// The client CA and front-proxy CA bundles.
type CaBundles = (Option<ClientCa>, Option<ClientCa>);

/// Adds the x509 and front-proxy authenticators; returns the client CA
/// and front-proxy CA bundles (blocking: reads them), which are checked per
/// request and re-read when their files change, as upstream's.
fn with_certificate_authenticators(
    chain: Authentication,
    client_ca: Option<&std::path::Path>,
    fp: &FrontProxyFlags,
) -> Result<(Authentication, CaBundles), AuthenticationError> {
    let x509_ca = client_ca.map(ClientCa::load).transpose()?;
    let proxy_ca = fp.client_ca.as_deref().map(ClientCa::load).transpose()?;
    let bundles = (x509_ca.clone(), proxy_ca.clone());
    let chain = match proxy_ca {
        Some(front_proxy_ca) => {
            // One bundle serves both the handshake hints and the check.
            let rh = RequestHeader {
                ca: front_proxy_ca,
                allowed_names: fp.allowed_names.clone(),
                username_headers: fp.username_headers.clone(),
                uid_headers: fp.uid_headers.clone(),
                group_headers: fp.group_headers.clone(),
                extra_prefixes: fp.extra_prefixes.clone(),
            };
            chain.with_request_header(rh, x509_ca)
        }
        None => match x509_ca {
            Some(ca) => chain.with_client_ca(ca),
            None => chain,
        },
    };
    for ca in [&bundles.0, &bundles.1].into_iter().flatten() {
        ca.start_reloading();
    }
    Ok((chain, bundles))
}

/// `--service-account-key-file` keys, else the signing key's, else those
/// of `--tls-private-key-file` (upstream's default).
fn public_keys(
    flags: &Flags,
    signing: Option<&keys::SigningKey>,
    defaults: &DefaultKeys,
) -> Result<Vec<PublicKey>, AuthenticationError> {
    let mut public_keys = Vec::new();
    for file in &flags.key_files {
        public_keys.extend(keys::load_public_keys(std::path::Path::new(file))?);
    }
    if public_keys.is_empty() {
        match (signing, &defaults.tls_private_key) {
            (Some(key), _) => public_keys.push(key.public.clone()),
            (None, Some(tls_key)) => public_keys.extend(keys::load_public_keys(tls_key)?),
            (None, None) => {}
        }
    }
    Ok(public_keys)
}

/// The JWT authenticators: those of `--authentication-config` (with what
/// reloading the file needs), else the one of the `--oidc-*` flags.
fn jwt_authenticators(
    config: Option<AuthenticationConfig>,
    oidc: Option<OidcConfig>,
    flags: &Flags,
    issuers: &[String],
) -> Result<(Arc<JwtAuthenticators>, Option<ConfigWatch>), AuthenticationError> {
    let (Some(config), Some(path)) = (config, &flags.config_file) else {
        let jwt = JwtAuthenticators::new(oidc.into_iter().collect())
            .map_err(AuthenticationError::Invalid)?;
        return Ok((Arc::new(jwt), None));
    };
    let authenticators =
        Arc::new(JwtAuthenticators::new(config.jwt).map_err(AuthenticationError::Invalid)?);
    let watch = ConfigWatch {
        path: path.clone(),
        issuers: issuers.to_vec(),
        anonymous: config.anonymous,
        contents: config.contents,
        authenticators: authenticators.clone(),
    };
    Ok((authenticators, Some(watch)))
}

/// What the service-account token authenticators verify with.
struct ServiceAccountKeys<'a> {
    public: &'a [PublicKey],
    issuers: &'a [String],
    api_audiences: &'a [String],
    objects: &'a Arc<Objects>,
}

/// Appends the token authenticators in upstream's order: static tokens,
/// legacy and bound service-account tokens, bootstrap tokens, JWT
/// authenticators, the webhook.
fn with_token_authenticators(
    mut chain: Authentication,
    flags: &Flags,
    keys: ServiceAccountKeys<'_>,
    jwt: Arc<JwtAuthenticators>,
) -> Result<Authentication, AuthenticationError> {
    let ServiceAccountKeys {
        public: public_keys,
        issuers,
        api_audiences,
        objects,
    } = keys;
    if let Some(path) = &flags.token_file {
        chain = chain.with_token_authenticator(Arc::new(TokenFile::load(path)?));
    }
    if !public_keys.is_empty() {
        chain = chain.with_token_authenticator(Arc::new(JwtAuthenticator {
            kind: TokenKind::Legacy {
                lookup: flags.lookup,
            },
            issuers: vec![legacy::ISSUER.to_owned()],
            keys: public_keys.to_vec(),
            implicit_audiences: api_audiences.to_vec(),
            objects: objects.clone(),
        }));
        chain = chain.with_token_authenticator(Arc::new(JwtAuthenticator {
            kind: TokenKind::Bound,
            issuers: issuers.to_vec(),
            keys: public_keys.to_vec(),
            implicit_audiences: api_audiences.to_vec(),
            objects: objects.clone(),
        }));
    }
    if flags.bootstrap {
        chain = chain.with_token_authenticator(Arc::new(BootstrapTokens {
            objects: objects.clone(),
        }));
    }
    chain = chain.with_token_authenticator(jwt);
    if let Some(path) = &flags.webhook_config {
        chain = chain.with_token_authenticator(Arc::new(WebhookTokenAuthenticator::load(
            path,
            &flags.webhook_version,
            flags.webhook_cache_ttl,
            api_audiences.to_vec(),
        )?));
    }
    Ok(chain)
}

/// A PEM file's text (blocking).
fn read_pem(path: &std::path::Path) -> Result<String, AuthenticationError> {
    std::fs::read_to_string(path).map_err(|source| AuthenticationError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Binds the lookups to the kube-apiserver's stores, read through the
/// shared `informers`, and serves TokenRequest and issuer discovery on it.
pub fn install(
    kube: &mut GenericApiServer,
    setup: &AuthenticationSetup,
    enabled: &ApiEnablement,
    informers: &Arc<SharedInformerFactory>,
) {
    let stores = ["serviceaccounts", "secrets", "pods", "nodes"]
        .map(|resource| kube.store("", "v1", resource));
    if stores.iter().all(Option::is_some) {
        let stores = Stores::new(stores.into_iter().flatten());
        setup.objects.bind(stores.with_informers(informers.clone()));
    }
    if let Some(watch) = setup.config_watch.clone() {
        kube.add_post_start_hook(
            "start-authentication-config-reloader",
            Arc::new(move |_ctx| {
                let watch = watch.clone();
                Box::pin(async move {
                    tokio::spawn(watch.run());
                    Ok(())
                })
            }),
        );
    }
    if let Some(requests) = &setup.token_requests {
        if enabled.resource_enabled("", "v1", "serviceaccounts") {
            let resource = requests.clone().resource();
            kube.install_subresource_create("", "v1", "serviceaccounts/token", resource);
        }
    }
    // Discovery is served only for an https issuer URL, as upstream.
    let issuer = setup.issuers.first().map_or("", String::as_str);
    if issuer.starts_with("https://") && !setup.public_keys.is_empty() {
        openid::install(kube, issuer, &setup.jwks_uri, &setup.public_keys);
    } else {
        tracing::info!(issuer = %issuer, "service-account issuer discovery not served: the issuer is not an https URL");
    }
}

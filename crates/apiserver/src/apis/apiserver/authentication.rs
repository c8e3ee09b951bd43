//! `--authentication-config` (upstream's `AuthenticationConfiguration` of
//! `apiserver.config.k8s.io`, `k8s.io/apiserver/pkg/apis/apiserver` types
//! and validation): the file is decoded strictly, validated with
//! upstream's field paths and messages, and compiled into JWT
//! authenticators ([`OidcConfig`]: issuer, discovery, audiences, CA, CEL
//! claim mappings and rules) and the anonymous settings.

use std::collections::HashSet;
use std::path::Path as FsPath;

use apimachinery::field_errors::{aggregate_message, FieldError, Path};
use apimachinery::validation::is_dns1123_subdomain;
use kube_cel::{CompileError, Expression};
use serde::Deserialize;

use crate::authentication::cel::{ClaimMapper, ClaimRule, Condition, Mapping};
use crate::plugin::pkg::authenticator::token::oidc::OidcConfig;

const GROUP: &str = "apiserver.config.k8s.io";
const VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha1"];
const KIND: &str = "AuthenticationConfiguration";
const MAX_JWT_AUTHENTICATORS: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("failed to load authentication configuration from file {path:?}: {reason}")]
    Load { path: String, reason: String },
    #[error("invalid authentication configuration: {0}")]
    Invalid(String),
}

/// `anonymous` of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnonymousConfig {
    pub enabled: bool,
    /// Paths anonymous requests may reach; empty: every path.
    pub paths: Vec<String>,
}

/// The compiled configuration.
pub struct AuthenticationConfig {
    pub jwt: Vec<OidcConfig>,
    pub anonymous: Option<AnonymousConfig>,
    /// The file's contents, to tell when it changes.
    pub contents: Vec<u8>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    jwt: Vec<JwtSpec>,
    #[serde(default)]
    anonymous: Option<AnonymousSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnonymousSpec {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    conditions: Vec<AnonymousCondition>,
}

#[derive(Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct AnonymousCondition {
    #[serde(default)]
    path: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JwtSpec {
    #[serde(default)]
    issuer: IssuerSpec,
    #[serde(default)]
    claim_validation_rules: Vec<ClaimRuleSpec>,
    #[serde(default)]
    claim_mappings: MappingsSpec,
    #[serde(default)]
    user_validation_rules: Vec<UserRuleSpec>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IssuerSpec {
    #[serde(default)]
    url: String,
    #[serde(default, rename = "discoveryURL")]
    discovery_url: Option<String>,
    #[serde(default)]
    certificate_authority: String,
    #[serde(default)]
    audiences: Vec<String>,
    #[serde(default)]
    audience_match_policy: String,
    #[serde(default)]
    egress_selector_type: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimRuleSpec {
    #[serde(default)]
    claim: String,
    #[serde(default)]
    required_value: String,
    #[serde(default)]
    expression: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MappingsSpec {
    #[serde(default)]
    username: PrefixedSpec,
    #[serde(default)]
    groups: PrefixedSpec,
    #[serde(default)]
    uid: PrefixedSpec,
    #[serde(default)]
    extra: Vec<ExtraSpec>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PrefixedSpec {
    #[serde(default)]
    claim: String,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    expression: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExtraSpec {
    #[serde(default)]
    key: String,
    #[serde(default)]
    value_expression: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UserRuleSpec {
    #[serde(default)]
    expression: String,
    #[serde(default)]
    message: String,
}

/// Reads, validates and compiles the file (blocking). Service-account
/// issuers may not be JWT issuers.
pub fn load(
    path: &FsPath,
    disallowed_issuers: &[String],
) -> Result<AuthenticationConfig, ConfigError> {
    let load_err = |reason: String| ConfigError::Load {
        path: path.display().to_string(),
        reason,
    };
    let data = std::fs::read(path).map_err(|e| load_err(e.to_string()))?;
    let spec = decode(&data).map_err(load_err)?;
    let config = compile(spec, disallowed_issuers)?;
    Ok(AuthenticationConfig {
        contents: data,
        ..config
    })
}

fn decode(data: &[u8]) -> Result<FileSpec, String> {
    if data.is_empty() {
        return Err("empty config data".to_owned());
    }
    let spec: FileSpec = serde_yaml::from_slice(data).map_err(|e| e.to_string())?;
    if spec.kind.is_empty() {
        return Err("Object 'Kind' is missing in the configuration".to_owned());
    }
    let version = spec
        .api_version
        .strip_prefix(GROUP)
        .and_then(|v| v.strip_prefix('/'))
        .filter(|v| VERSIONS.contains(v));
    if version.is_none() || spec.kind != KIND {
        return Err(format!(
            "no kind {:?} is registered for version {:?}",
            spec.kind, spec.api_version
        ));
    }
    Ok(spec)
}

fn compile(
    spec: FileSpec,
    disallowed_issuers: &[String],
) -> Result<AuthenticationConfig, ConfigError> {
    let root = Path::new("jwt");
    let mut errors = Vec::new();
    if spec.jwt.len() > MAX_JWT_AUTHENTICATORS {
        errors.push(FieldError::too_many(
            &root,
            Some(spec.jwt.len()),
            Some(MAX_JWT_AUTHENTICATORS),
        ));
        return Err(invalid(&errors));
    }
    let mut jwt = Vec::new();
    let mut seen_issuers = HashSet::new();
    let mut seen_discovery = HashSet::new();
    for (i, authenticator) in spec.jwt.iter().enumerate() {
        let path = root.index(i);
        if let Some(config) = compile_jwt(authenticator, &path, disallowed_issuers, &mut errors) {
            jwt.push(config);
        }
        let issuer = &authenticator.issuer;
        if !seen_issuers.insert(issuer.url.as_str()) {
            errors.push(FieldError::duplicate(
                &path.child("issuer").child("url"),
                issuer.url.as_str(),
            ));
        }
        if let Some(discovery) = issuer.discovery_url.as_deref().filter(|d| !d.is_empty()) {
            if !seen_discovery.insert(discovery) {
                errors.push(FieldError::duplicate(
                    &path.child("issuer").child("discoveryURL"),
                    discovery,
                ));
            }
        }
    }
    let anonymous = spec.anonymous.map(|a| {
        if !a.enabled && !a.conditions.is_empty() {
            let value = serde_json::to_value(&a.conditions).unwrap_or_default();
            errors.push(FieldError::invalid(
                &Path::new("anonymous").child("conditions"),
                value,
                "enabled should be set to true when conditions are defined",
            ));
        }
        AnonymousConfig {
            enabled: a.enabled,
            paths: a.conditions.into_iter().map(|c| c.path).collect(),
        }
    });
    if !errors.is_empty() {
        return Err(invalid(&errors));
    }
    Ok(AuthenticationConfig {
        jwt,
        anonymous,
        contents: Vec::new(),
    })
}

fn invalid(errors: &[FieldError]) -> ConfigError {
    ConfigError::Invalid(aggregate_message(errors).unwrap_or_default())
}

/// Whether an expression selects `claims.<field>` (also `claims.?<field>`),
/// upstream's test for which claims a mapping uses.
fn selects_claim(source: &str, field: &str) -> bool {
    let mut rest = source;
    while let Some(at) = rest.find("claims") {
        let before_ok = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let after = rest[at + "claims".len()..].trim_start();
        rest = &rest[at + "claims".len()..];
        let Some(selected) = after.strip_prefix('.') else {
            continue;
        };
        let selected = selected.trim_start();
        let selected = selected.strip_prefix('?').unwrap_or(selected).trim_start();
        let name: String = selected
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if before_ok && name == field {
            return true;
        }
    }
    false
}

/// Compiles a CEL expression over `variable`, or records upstream's error.
fn cel(
    source: &str,
    variable: &str,
    path: &Path,
    errors: &mut Vec<FieldError>,
) -> Option<Expression> {
    match Expression::compile(source, &[variable]) {
        Ok(expression) => Some(expression),
        Err(e @ CompileError::Invalid(_)) => {
            errors.push(FieldError::invalid(path, source, e.to_string()));
            None
        }
        Err(e) => {
            errors.push(FieldError::internal(path, e));
            None
        }
    }
}

fn compile_jwt(
    spec: &JwtSpec,
    path: &Path,
    disallowed_issuers: &[String],
    errors: &mut Vec<FieldError>,
) -> Option<OidcConfig> {
    let before = errors.len();
    validate_issuer(
        &spec.issuer,
        &path.child("issuer"),
        disallowed_issuers,
        errors,
    );
    let mut uses_email_verified = false;
    let claim_rules = claim_rules(
        &spec.claim_validation_rules,
        &path.child("claimValidationRules"),
        &mut uses_email_verified,
        errors,
    );
    let mapper = mappings(
        &spec.claim_mappings,
        &path.child("claimMappings"),
        uses_email_verified,
        errors,
    );
    let user_rules = user_rules(
        &spec.user_validation_rules,
        &path.child("userValidationRules"),
        errors,
    );
    if errors.len() != before {
        return None;
    }
    let (username, groups, uid, extra) = mapper?;
    let ca = &spec.issuer.certificate_authority;
    Some(OidcConfig {
        issuer: spec.issuer.url.clone(),
        discovery_url: spec.issuer.discovery_url.clone().filter(|d| !d.is_empty()),
        audiences: spec.issuer.audiences.clone(),
        ca_pem: (!ca.is_empty()).then(|| ca.as_bytes().to_vec()),
        signing_algs: Vec::new(),
        mapper: ClaimMapper {
            username,
            groups,
            uid,
            extra,
            claim_rules,
            user_rules,
        },
    })
}

fn validate_issuer(
    issuer: &IssuerSpec,
    path: &Path,
    disallowed: &[String],
    errors: &mut Vec<FieldError>,
) {
    let url_path = path.child("url");
    if issuer.url.is_empty() {
        errors.push(FieldError::required(&url_path, ""));
    } else {
        validate_url(&issuer.url, disallowed, &url_path, errors);
    }
    if let Some(discovery) = issuer.discovery_url.as_deref().filter(|d| !d.is_empty()) {
        let discovery_path = path.child("discoveryURL");
        if !issuer.url.is_empty()
            && issuer.url.trim_end_matches('/') == discovery.trim_end_matches('/')
        {
            errors.push(FieldError::invalid(
                &discovery_path,
                discovery,
                "discoveryURL must be different from URL",
            ));
        }
        validate_url(discovery, &[], &discovery_path, errors);
    }
    validate_audiences(issuer, path, errors);
    if !issuer.certificate_authority.is_empty() {
        let mut pem = issuer.certificate_authority.as_bytes();
        let certs: Vec<_> = rustls_pemfile::certs(&mut pem).collect();
        if certs.is_empty() || certs.iter().any(Result::is_err) {
            errors.push(FieldError::invalid(
                &path.child("certificateAuthority"),
                "<omitted>",
                "data does not contain any valid RSA or ECDSA certificates",
            ));
        }
    }
    if !issuer.egress_selector_type.is_empty() {
        errors.push(FieldError::invalid(
            &path.child("egressSelectorType"),
            issuer.egress_selector_type.as_str(),
            "egress selector is not supported when StructuredAuthenticationConfigurationEgressSelector feature gate is disabled",
        ));
    }
}

fn validate_audiences(issuer: &IssuerSpec, path: &Path, errors: &mut Vec<FieldError>) {
    let audiences_path = path.child("audiences");
    let policy_path = path.child("audienceMatchPolicy");
    if issuer.audiences.is_empty() {
        let detail = format!("at least one {audiences_path} is required");
        errors.push(FieldError::required(&audiences_path, detail));
        return;
    }
    let mut seen = HashSet::new();
    for (i, audience) in issuer.audiences.iter().enumerate() {
        if audience.is_empty() {
            errors.push(FieldError::required(&audiences_path.index(i), ""));
        }
        if !seen.insert(audience.as_str()) {
            errors.push(FieldError::duplicate(
                &audiences_path.index(i),
                audience.as_str(),
            ));
        }
    }
    let policy = issuer.audience_match_policy.as_str();
    if issuer.audiences.len() > 1 && policy != "MatchAny" {
        errors.push(FieldError::invalid(
            &policy_path,
            policy,
            "audienceMatchPolicy must be MatchAny for multiple audiences",
        ));
    }
    if issuer.audiences.len() == 1 && !policy.is_empty() && policy != "MatchAny" {
        errors.push(FieldError::invalid(
            &policy_path,
            policy,
            "audienceMatchPolicy must be empty or MatchAny for single audience",
        ));
    }
}

fn validate_url(url: &str, disallowed: &[String], path: &Path, errors: &mut Vec<FieldError>) {
    if disallowed.iter().any(|d| d == url) {
        let mut list = disallowed.to_vec();
        list.sort();
        list.dedup();
        errors.push(FieldError::invalid(
            path,
            url,
            format!(
                "URL must not overlap with disallowed issuers: [{}]",
                list.join(" ")
            ),
        ));
    }
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (before_fragment, fragment) = url.split_once('#').unwrap_or((url, ""));
    if scheme != "https" {
        errors.push(FieldError::invalid(path, url, "URL scheme must be https"));
    }
    if rest[..authority_end].contains('@') {
        errors.push(FieldError::invalid(
            path,
            url,
            "URL must not contain a username or password",
        ));
    }
    if before_fragment
        .split_once('?')
        .is_some_and(|(_, q)| !q.is_empty())
    {
        errors.push(FieldError::invalid(
            path,
            url,
            "URL must not contain a query",
        ));
    }
    if !fragment.is_empty() {
        errors.push(FieldError::invalid(
            path,
            url,
            "URL must not contain a fragment",
        ));
    }
}

fn claim_rules(
    rules: &[ClaimRuleSpec],
    path: &Path,
    uses_email_verified: &mut bool,
    errors: &mut Vec<FieldError>,
) -> Vec<ClaimRule> {
    let mut compiled = Vec::new();
    let (mut seen_claims, mut seen_expressions) = (HashSet::new(), HashSet::new());
    for (i, rule) in rules.iter().enumerate() {
        let path = path.index(i);
        match (rule.claim.is_empty(), rule.expression.is_empty()) {
            (false, false) => errors.push(FieldError::invalid(
                &path,
                rule.claim.as_str(),
                "claim and expression can't both be set",
            )),
            (true, true) => errors.push(FieldError::required(
                &path,
                "claim or expression is required",
            )),
            (false, true) => {
                if !rule.message.is_empty() {
                    errors.push(FieldError::invalid(
                        &path.child("message"),
                        rule.message.as_str(),
                        "may not be specified when claim is set",
                    ));
                }
                if !seen_claims.insert(rule.claim.as_str()) {
                    errors.push(FieldError::duplicate(
                        &path.child("claim"),
                        rule.claim.as_str(),
                    ));
                }
                compiled.push(ClaimRule::Required {
                    claim: rule.claim.clone(),
                    value: rule.required_value.clone(),
                });
            }
            (true, false) => {
                if !rule.required_value.is_empty() {
                    errors.push(FieldError::invalid(
                        &path.child("requiredValue"),
                        rule.required_value.as_str(),
                        "may not be specified when expression is set",
                    ));
                }
                let expression_path = path.child("expression");
                if !seen_expressions.insert(rule.expression.as_str()) {
                    errors.push(FieldError::duplicate(
                        &expression_path,
                        rule.expression.as_str(),
                    ));
                    continue;
                }
                *uses_email_verified |= selects_claim(&rule.expression, "email_verified");
                if let Some(expression) = cel(&rule.expression, "claims", &expression_path, errors)
                {
                    compiled.push(ClaimRule::Expression(Box::new(Condition {
                        expression,
                        source: rule.expression.clone(),
                        message: rule.message.clone(),
                    })));
                }
            }
        }
    }
    compiled
}

type Mappings = (Mapping, Mapping, Mapping, Vec<(String, Expression)>);

fn mappings(
    m: &MappingsSpec,
    path: &Path,
    mut uses_email_verified: bool,
    errors: &mut Vec<FieldError>,
) -> Option<Mappings> {
    let before = errors.len();
    let username = prefixed(&m.username, &path.child("username"), true, errors);
    let uses_email = selects_claim(&m.username.expression, "email");
    uses_email_verified |= selects_claim(&m.username.expression, "email_verified");
    let groups = prefixed(&m.groups, &path.child("groups"), false, errors);
    let uid_path = path.child("uid");
    let uid = match (m.uid.claim.is_empty(), m.uid.expression.is_empty()) {
        (false, false) => {
            errors.push(FieldError::invalid(
                &uid_path,
                "",
                "claim and expression can't both be set",
            ));
            Mapping::None
        }
        (true, false) => cel(
            &m.uid.expression,
            "claims",
            &uid_path.child("expression"),
            errors,
        )
        .map_or(Mapping::None, Mapping::Expression),
        (false, true) => Mapping::Claim {
            claim: m.uid.claim.clone(),
            prefix: String::new(),
        },
        (true, true) => Mapping::None,
    };
    let extra = extra_mappings(&m.extra, path, &mut uses_email_verified, errors);
    if uses_email && !uses_email_verified {
        errors.push(FieldError::invalid(
            &path.child("username").child("expression"),
            m.username.expression.as_str(),
            "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression",
        ));
    }
    (errors.len() == before).then_some((username, groups, uid, extra))
}

fn prefixed(
    spec: &PrefixedSpec,
    path: &Path,
    required: bool,
    errors: &mut Vec<FieldError>,
) -> Mapping {
    match (spec.claim.is_empty(), spec.expression.is_empty()) {
        (false, false) => {
            errors.push(FieldError::invalid(
                path,
                "",
                "claim and expression can't both be set",
            ));
            Mapping::None
        }
        (true, true) => {
            if required {
                errors.push(FieldError::required(
                    path,
                    "claim or expression is required",
                ));
            }
            Mapping::None
        }
        (true, false) => {
            if let Some(prefix) = &spec.prefix {
                errors.push(FieldError::invalid(
                    &path.child("prefix"),
                    prefix.as_str(),
                    "may not be specified when expression is set",
                ));
            }
            cel(
                &spec.expression,
                "claims",
                &path.child("expression"),
                errors,
            )
            .map_or(Mapping::None, Mapping::Expression)
        }
        (false, true) => match &spec.prefix {
            Some(prefix) => Mapping::Claim {
                claim: spec.claim.clone(),
                prefix: prefix.clone(),
            },
            None => {
                errors.push(FieldError::required(
                    &path.child("prefix"),
                    "prefix is required when claim is set. It can be set to an empty string to disable prefixing",
                ));
                Mapping::None
            }
        },
    }
}

/// Whether a key's domain is `kubernetes.io`, `k8s.io` or a subdomain.
fn reserved_domain(key: &str) -> bool {
    let Some((domain, _)) = key.split_once('/') else {
        return false;
    };
    ["kubernetes.io", "k8s.io"]
        .iter()
        .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
}

/// Upstream's `IsDomainPrefixedPath`.
fn domain_prefixed_path(path: &Path, key: &str, errors: &mut Vec<FieldError>) {
    if key.is_empty() {
        errors.push(FieldError::required(path, ""));
        return;
    }
    let Some((host, rest)) = key
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        errors.push(FieldError::invalid(
            path,
            key,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        ));
        return;
    };
    for detail in is_dns1123_subdomain(host) {
        errors.push(FieldError::invalid(path, host, detail));
    }
    let path_ok = rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c));
    if !path_ok {
        errors.push(FieldError::invalid(
            path,
            rest,
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
}

fn extra_mappings(
    extra: &[ExtraSpec],
    path: &Path,
    uses_email_verified: &mut bool,
    errors: &mut Vec<FieldError>,
) -> Vec<(String, Expression)> {
    let mut compiled = Vec::new();
    let mut seen = HashSet::new();
    for (i, mapping) in extra.iter().enumerate() {
        let path = path.child("extra").index(i);
        let key_path = path.child("key");
        domain_prefixed_path(&key_path, &mapping.key, errors);
        if mapping.key != mapping.key.to_lowercase() {
            errors.push(FieldError::invalid(
                &key_path,
                mapping.key.as_str(),
                "must be lowercase",
            ));
        }
        if reserved_domain(&mapping.key) {
            errors.push(FieldError::invalid(
                &key_path,
                mapping.key.as_str(),
                "k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use",
            ));
        }
        if !seen.insert(mapping.key.as_str()) {
            errors.push(FieldError::duplicate(&key_path, mapping.key.as_str()));
            continue;
        }
        let value_path = path.child("valueExpression");
        if mapping.value_expression.is_empty() {
            errors.push(FieldError::required(&value_path, ""));
            continue;
        }
        *uses_email_verified |= selects_claim(&mapping.value_expression, "email_verified");
        if let Some(expression) = cel(&mapping.value_expression, "claims", &value_path, errors) {
            compiled.push((mapping.key.clone(), expression));
        }
    }
    compiled
}

fn user_rules(rules: &[UserRuleSpec], path: &Path, errors: &mut Vec<FieldError>) -> Vec<Condition> {
    let mut compiled = Vec::new();
    let mut seen = HashSet::new();
    for (i, rule) in rules.iter().enumerate() {
        let expression_path = path.index(i).child("expression");
        if rule.expression.is_empty() {
            errors.push(FieldError::required(&expression_path, ""));
            continue;
        }
        if !seen.insert(rule.expression.as_str()) {
            errors.push(FieldError::duplicate(
                &expression_path,
                rule.expression.as_str(),
            ));
            continue;
        }
        if let Some(expression) = cel(&rule.expression, "user", &expression_path, errors) {
            compiled.push(Condition {
                expression,
                source: rule.expression.clone(),
                message: rule.message.clone(),
            });
        }
    }
    compiled
}

#[cfg(test)]
#[path = "authentication_tests.rs"]
mod tests;

//! The apiserver.config.k8s.io/v1 `EncryptionConfiguration` file format
//! and upstream's validation of it (`validation_encryption.go`): resource
//! names, overlaps, one provider per list element, key names and lengths.

use std::collections::BTreeSet;

use apimachinery::field_errors::{ErrorList, FieldError, Path};
use base64::Engine;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use storage::value::encrypt::aes::AES_KEY_SIZES;
use storage::value::encrypt::secretbox::SECRETBOX_KEY_SIZES;

use apimachinery::go_duration::GoDuration;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub resources: Vec<ResourceConfiguration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceConfiguration {
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub providers: Vec<ProviderConfiguration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProviderConfiguration {
    pub aesgcm: Option<KeysConfiguration>,
    pub aescbc: Option<KeysConfiguration>,
    pub secretbox: Option<KeysConfiguration>,
    pub identity: Option<IdentityConfiguration>,
    pub kms: Option<KmsConfiguration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct IdentityConfiguration {}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct KeysConfiguration {
    #[serde(default)]
    pub keys: Vec<Key>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Key {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub secret: String,
}

/// A `kms` provider. `apiVersion` defaults to v1 (refused unless the
/// KMSv1 gate is on), `timeout` to 3s.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KmsConfiguration {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub name: String,
    /// Only for v1.
    #[serde(default)]
    pub cachesize: Option<i32>,
    #[serde(default)]
    pub endpoint: String,
    #[serde(default, deserialize_with = "go_duration")]
    pub timeout: Option<GoDuration>,
}

impl KmsConfiguration {
    /// The API version after upstream's defaulting.
    pub fn api_version(&self) -> &str {
        if self.api_version.is_empty() {
            "v1"
        } else {
            &self.api_version
        }
    }

    /// The timeout after upstream's defaulting.
    pub fn timeout(&self) -> GoDuration {
        self.timeout
            .unwrap_or(GoDuration::from_nanos(DEFAULT_KMS_TIMEOUT_NANOS))
    }
}

const DEFAULT_KMS_TIMEOUT_NANOS: i64 = 3_000_000_000;

/// A `metav1.Duration`: a string in Go's duration syntax.
fn go_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<GoDuration>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|s| s.parse::<GoDuration>().map_err(serde::de::Error::custom))
        .transpose()
}

const OVERLAP: &str = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked";

/// Upstream's validation; an empty list means the file is usable. With
/// `reload`, KMS v1 provider names must be unique too.
pub fn validate(c: &EncryptionConfiguration, reload: bool) -> ErrorList {
    let root = Path::new("resources");
    let mut errs = ErrorList::new();
    let mut kms_names = BTreeSet::new();
    if c.resources.is_empty() {
        errs.push(FieldError::required(
            &root,
            "at least one resources is required",
        ));
        return errs;
    }
    for (i, conf) in c.resources.iter().enumerate() {
        let r = root.index(i).child("resources");
        let p = root.index(i).child("providers");
        if conf.resources.is_empty() {
            errs.push(FieldError::required(
                &r,
                format!("at least one {r} is required"),
            ));
        }
        validate_overlap(&conf.resources, &r, &mut errs);
        validate_names(&conf.resources, &r, &mut errs);
        if conf.providers.is_empty() {
            errs.push(FieldError::required(
                &p,
                format!("at least one {p} is required"),
            ));
        }
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = p.index(j);
            validate_provider(provider, &path, &mut errs);
            if let Some(kms) = &provider.kms {
                validate_kms(kms, &path.child("kms"), &kms_names, reload, &mut errs);
                kms_names.insert(kms.name.clone());
            }
        }
    }
    errs
}

fn validate_provider(provider: &ProviderConfiguration, path: &Path, errs: &mut ErrorList) {
    let keyed = [
        ("aesgcm", &provider.aesgcm, AES_KEY_SIZES),
        ("aescbc", &provider.aescbc, AES_KEY_SIZES),
        ("secretbox", &provider.secretbox, SECRETBOX_KEY_SIZES),
    ];
    let found = keyed.iter().filter(|(_, k, _)| k.is_some()).count()
        + usize::from(provider.identity.is_some())
        + usize::from(provider.kms.is_some());
    let value = Value::String("provider".into());
    match found {
        0 => errs.push(FieldError::invalid(
            path,
            value,
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
        )),
        1 => {
            for (name, keys, sizes) in keyed {
                if let Some(keys) = keys {
                    validate_keys(&keys.keys, &path.child(name).child("keys"), sizes, errs);
                }
            }
        }
        _ => errs.push(FieldError::invalid(
            path,
            value,
            "more than one provider specified in a single element, should split into different list elements",
        )),
    }
}

fn validate_keys(keys: &[Key], path: &Path, sizes: &[usize], errs: &mut ErrorList) {
    if keys.is_empty() {
        errs.push(FieldError::required(path, "at least one keys is required"));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        let kp = path.index(i);
        if key.name.is_empty() {
            errs.push(FieldError::required(
                &kp.child("name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(FieldError::required(
                &kp.child("secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        match base64::engine::general_purpose::STANDARD.decode(&key.secret) {
            Err(_) => errs.push(FieldError::invalid(
                &kp.child("secret"),
                "REDACTED",
                "secrets must be base64 encoded",
            )),
            Ok(secret) if !sizes.contains(&secret.len()) => {
                let expected = sizes
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ");
                errs.push(FieldError::invalid(
                    &kp.child("secret"),
                    "REDACTED",
                    format!(
                        "secret is not of the expected length, got {}, expected one of [{expected}]",
                        secret.len()
                    ),
                ));
            }
            Ok(_) => {}
        }
    }
}

/// The scheme of a URL as Go's `url.Parse` finds it (lower-cased), or its
/// parse error.
fn url_scheme(endpoint: &str) -> Result<String, String> {
    if endpoint.chars().any(|c| c.is_ascii_control()) {
        return Err(format!(
            "parse {endpoint:?}: net/url: invalid control character in URL"
        ));
    }
    for (i, c) in endpoint.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(format!("parse {endpoint:?}: missing protocol scheme")),
            ':' => return Ok(endpoint[..i].to_ascii_lowercase()),
            _ => break,
        }
    }
    Ok(String::new())
}

/// Upstream's `validateKMSConfiguration`: name, timeout, endpoint, cache
/// size and API version.
fn validate_kms(
    kms: &KmsConfiguration,
    path: &Path,
    names: &BTreeSet<String>,
    reload: bool,
    errs: &mut ErrorList,
) {
    let version = kms.api_version();
    let name = path.child("name");
    if kms.name.is_empty() {
        errs.push(FieldError::required(
            &name,
            "name is a mandatory field for a provider",
        ));
    }
    if version != "v1" && kms.name.contains(':') {
        errs.push(FieldError::invalid(
            &name,
            kms.name.as_str(),
            format!(
                "invalid KMS provider name {}, must not contain ':'",
                kms.name
            ),
        ));
    }
    if (reload || version != "v1") && names.contains(&kms.name) {
        errs.push(FieldError::invalid(
            &name,
            kms.name.as_str(),
            format!(
                "duplicate KMS provider name {}, names must be unique",
                kms.name
            ),
        ));
    }
    let timeout = kms.timeout();
    if timeout.is_negative() || timeout == GoDuration::ZERO {
        errs.push(FieldError::invalid(
            &path.child("timeout"),
            timeout.to_string(),
            "timeout should be a positive value",
        ));
    }
    let endpoint = path.child("endpoint");
    if kms.endpoint.is_empty() {
        errs.push(FieldError::invalid(
            &endpoint,
            "",
            "endpoint is a mandatory field for a kms",
        ));
    } else {
        match url_scheme(&kms.endpoint) {
            Err(e) => errs.push(FieldError::invalid(
                &endpoint,
                kms.endpoint.as_str(),
                format!("invalid endpoint for kms provider, error: {e}"),
            )),
            Ok(scheme) if scheme != "unix" => errs.push(FieldError::invalid(
                &endpoint,
                kms.endpoint.as_str(),
                format!("unsupported scheme {scheme:?} for KMS provider, only unix is supported"),
            )),
            Ok(_) => {}
        }
    }
    let cachesize = path.child("cachesize");
    match (version, kms.cachesize) {
        ("v1", Some(0)) => errs.push(FieldError::invalid(
            &cachesize,
            0,
            "cachesize should be a positive value, or negative to disable",
        )),
        ("v1", _) | (_, None) => {}
        (_, Some(size)) => errs.push(FieldError::invalid(
            &cachesize,
            size,
            "cachesize is not supported in v2",
        )),
    }
    if version != "v1" && version != "v2" {
        // Upstream names the field where the version belongs.
        errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            version,
            "unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported",
        ));
    }
}

fn parse(resource: &str) -> (&str, &str) {
    match resource.split_once('.') {
        Some((r, g)) => (g, r),
        None => ("", resource),
    }
}

fn validate_overlap(resources: &[String], path: &Path, errs: &mut ErrorList) {
    if resources.len() < 2 {
        return;
    }
    let parsed: Vec<(&str, &str)> = resources.iter().map(|r| parse(r)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b {
                duplicate = true;
                continue;
            }
            if *a == ("*", "*") || (a.0 == b.0 && (a.1 == "*" || b.1 == "*")) {
                overlap = true;
            }
        }
    }
    let list = Value::from(resources.to_vec());
    if duplicate {
        errs.push(FieldError::invalid(
            path,
            list.clone(),
            "the same resource cannot be specified multiple times",
        ));
    }
    if overlap {
        errs.push(FieldError::invalid(path, list, OVERLAP));
    }
}

fn validate_names(resources: &[String], path: &Path, errs: &mut ErrorList) {
    for (j, res) in resources.iter().enumerate() {
        let (group, resource) = parse(res);
        let detail = if res.chars().any(|c| c.is_ascii_uppercase()) {
            "resource name should not contain capital letters"
        } else if res == "*" {
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            "resources which do not have REST API/s cannot be encrypted"
        } else if group == "events.k8s.io" {
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
        } else if group == "extensions" {
            "'extensions' group has been removed and cannot be used for encryption"
        } else if group == "*" && resource != "*" {
            "encrypting the same resource across groups is not supported"
        } else {
            continue;
        };
        errs.push(FieldError::invalid(&path.index(j), res.as_str(), detail));
    }
}

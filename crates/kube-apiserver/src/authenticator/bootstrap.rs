//! Bootstrap tokens (`--enable-bootstrap-token-auth`, upstream's bootstrap
//! token authenticator): a token `<id>.<secret>` is valid while the Secret
//! `kube-system/bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token`
//! holds the same id and secret, has not expired, and allows
//! authentication. The user is `system:bootstrap:<id>`, in
//! `system:bootstrappers` plus the secret's `auth-extra-groups`.

use std::sync::Arc;

use apimachinery::status::StatusReason;
use apiserver::authentication::user::UserInfo;
use apiserver::authentication::{AuthError, TokenAuthenticator, TokenResponse};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::serviceaccount::getter::{Kind, Objects};

const NAMESPACE: &str = "kube-system";
const SECRET_PREFIX: &str = "bootstrap-token-";
const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
const USER_PREFIX: &str = "system:bootstrap:";
const DEFAULT_GROUP: &str = "system:bootstrappers";

pub struct BootstrapTokens {
    pub objects: Arc<Objects>,
}

/// `<id>.<secret>`: 6 and 16 characters of `[a-z0-9]`.
fn parse(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let valid = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (valid(id, 6) && valid(secret, 16)).then_some((id, secret))
}

/// A data key of the secret, decoded.
fn data(secret: &Value, key: &str) -> String {
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|v| STANDARD.decode(v).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default()
}

/// Constant-time comparison, so timing does not reveal the secret.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Whether an extra group is one a bootstrap token may carry.
fn valid_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-';
    let last_ok = rest
        .bytes()
        .last()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    rest.len() <= 256 && last_ok && rest.bytes().all(allowed)
}

/// `system:bootstrappers` plus the extra groups, sorted and unique.
fn groups(secret: &Value) -> Result<Vec<String>, String> {
    let mut groups = vec![DEFAULT_GROUP.to_owned()];
    let extra = data(secret, "auth-extra-groups");
    for group in extra.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        if !valid_group(group) {
            return Err(format!("{group:?} is not a valid bootstrap group name"));
        }
        groups.push(group.to_owned());
    }
    groups.sort();
    groups.dedup();
    Ok(groups)
}

/// Whether the secret's `expiration` has passed (an unreadable one counts
/// as expired).
fn expired(secret: &Value, now: DateTime<Utc>) -> bool {
    let expiration = data(secret, "expiration");
    if expiration.is_empty() {
        return false;
    }
    DateTime::parse_from_rfc3339(&expiration).map_or(true, |t| now > t)
}

/// Why a secret does not authenticate its token, if it does not.
fn refusal(secret: &Value, id: &str, token_secret: &str) -> Option<String> {
    if secret.pointer("/metadata/deletionTimestamp").is_some() {
        return Some("is deleted and awaiting removal".into());
    }
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) {
        return Some(format!("has invalid type, expected {SECRET_TYPE}."));
    }
    if !same(&data(secret, "token-secret"), token_secret) {
        return Some("has invalid value for key token-secret.".into());
    }
    if data(secret, "token-id") != id {
        return Some("has invalid value for key token-id.".into());
    }
    if expired(secret, Utc::now()) {
        return Some("has expired.".into());
    }
    if data(secret, "usage-bootstrap-authentication") != "true" {
        return Some("not marked usage-bootstrap-authentication=true.".into());
    }
    None
}

#[async_trait]
impl TokenAuthenticator for BootstrapTokens {
    async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenResponse>, AuthError> {
        let Some((id, token_secret)) = parse(token) else {
            return Ok(None);
        };
        let name = format!("{SECRET_PREFIX}{id}");
        let secret = match self.objects.get(Kind::Secret, NAMESPACE, &name).await {
            Ok(secret) => secret,
            Err(e) if e.reason == StatusReason::NotFound => return Ok(None),
            Err(e) => return Err(AuthError::Token(e.message)),
        };
        if let Some(why) = refusal(&secret, id, token_secret) {
            tracing::debug!(secret = %name, "bootstrap token secret {why}");
            return Ok(None);
        }
        let groups = match groups(&secret) {
            Ok(groups) => groups,
            Err(why) => {
                tracing::debug!(secret = %name, "bootstrap token secret has invalid auth-extra-groups: {why}");
                return Ok(None);
            }
        };
        Ok(Some(TokenResponse {
            user: UserInfo {
                name: format!("{USER_PREFIX}{id}"),
                groups,
                ..UserInfo::default()
            },
            audiences: audiences.to_vec(),
        }))
    }

    fn audience_agnostic(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secret(fields: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), json!(STANDARD.encode(v))))
            .collect();
        json!({"type": SECRET_TYPE, "metadata": {"name": "bootstrap-token-abcdef"}, "data": data})
    }

    fn valid() -> Vec<(&'static str, &'static str)> {
        vec![
            ("token-id", "abcdef"),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-authentication", "true"),
            (
                "auth-extra-groups",
                "system:bootstrappers:kubeadm:default-node-token",
            ),
        ]
    }

    #[test]
    fn tokens_have_upstreams_shape() {
        assert_eq!(
            parse("abcdef.0123456789abcdef"),
            Some(("abcdef", "0123456789abcdef"))
        );
        for bad in [
            "abcdef0123456789abcdef",
            "ABCDEF.0123456789abcdef",
            "abcde.0123456789abcdef",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_valid_secret_authenticates_with_sorted_groups() {
        let s = secret(&valid());
        assert_eq!(refusal(&s, "abcdef", "0123456789abcdef"), None);
        assert_eq!(
            groups(&s).unwrap(),
            vec![
                "system:bootstrappers",
                "system:bootstrappers:kubeadm:default-node-token"
            ]
        );
    }

    #[test]
    fn wrong_secret_expiry_usage_or_groups_refuse() {
        let s = secret(&valid());
        assert!(refusal(&s, "abcdef", "ffffffffffffffff").is_some());
        let mut fields = valid();
        fields.push(("expiration", "2000-01-01T00:00:00Z"));
        assert_eq!(
            refusal(&secret(&fields), "abcdef", "0123456789abcdef").as_deref(),
            Some("has expired.")
        );
        let mut fields = valid();
        fields[2] = ("usage-bootstrap-authentication", "false");
        assert!(refusal(&secret(&fields), "abcdef", "0123456789abcdef").is_some());
        let mut fields = valid();
        fields[3] = ("auth-extra-groups", "system:masters");
        assert!(groups(&secret(&fields)).is_err());
    }
}

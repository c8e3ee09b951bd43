//! Legacy (secret-based) service-account tokens (upstream's
//! `pkg/serviceaccount/legacy.go`): long-lived JWTs of issuer
//! `kubernetes/serviceaccount` that the tokens controller writes into
//! `kubernetes.io/service-account-token` secrets. With
//! `--service-account-lookup` the secret must still exist and hold the very
//! token, must not be marked invalid (`kubernetes.io/legacy-token-invalid-since`),
//! and the service account must exist with the token's UID; each day a
//! token is used its secret gets the `kubernetes.io/legacy-token-last-used`
//! label.

use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::authentication::{AuthError, UserInfo};
use apiserver::registry::{Mutate, Target, WriteOptions};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use chrono::{Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::serviceaccount::{self, Claims};
use super::{str_at, Kind, Objects};

/// The issuer of legacy tokens.
pub const ISSUER: &str = "kubernetes/serviceaccount";
/// The label recording the day a legacy token was last used.
pub const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The label marking a legacy token invalid (set by the clean-up controller).
pub const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";
/// The data key holding the token.
pub const TOKEN_KEY: &str = "token";

/// The private claims of a legacy token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyClaims {
    #[serde(
        rename = "kubernetes.io/serviceaccount/namespace",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub namespace: String,
    #[serde(
        rename = "kubernetes.io/serviceaccount/secret.name",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub secret_name: String,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.name",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub service_account_name: String,
    #[serde(
        rename = "kubernetes.io/serviceaccount/service-account.uid",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub service_account_uid: String,
}

/// The claims of a legacy token for `secret` of service account `sa`.
pub fn claims(sa: &Value, secret_name: &str) -> Claims {
    let namespace = str_at(sa, "/metadata/namespace");
    let name = str_at(sa, "/metadata/name");
    Claims {
        iss: ISSUER.to_owned(),
        sub: serviceaccount::username(namespace, name),
        legacy: LegacyClaims {
            namespace: namespace.to_owned(),
            secret_name: secret_name.to_owned(),
            service_account_name: name.to_owned(),
            service_account_uid: str_at(sa, "/metadata/uid").to_owned(),
        },
        ..Claims::default()
    }
}

fn err(msg: impl Into<String>) -> AuthError {
    AuthError::Token(msg.into())
}

/// The claims a legacy token must carry, in upstream's order.
fn check_claims(claims: &Claims) -> Result<(), AuthError> {
    let l = &claims.legacy;
    let required = [
        (claims.sub.as_str(), "sub claim is missing"),
        (&l.namespace, "namespace claim is missing"),
        (&l.secret_name, "secretName claim is missing"),
        (
            &l.service_account_name,
            "serviceAccountName claim is missing",
        ),
        (&l.service_account_uid, "serviceAccountUID claim is missing"),
    ];
    if let Some((_, msg)) = required.iter().find(|(value, _)| value.is_empty()) {
        return Err(err(*msg));
    }
    let subject = claims
        .sub
        .strip_prefix(serviceaccount::USERNAME_PREFIX)
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'));
    match subject {
        Some((ns, name)) if ns == l.namespace && name == l.service_account_name => Ok(()),
        _ => Err(err("sub claim is invalid")),
    }
}

/// Validates a legacy token's claims (and with `lookup` its secret and
/// service account) and returns its user.
pub async fn validate(
    objects: &Objects,
    token: &str,
    claims: &Claims,
    lookup: bool,
) -> Result<UserInfo, AuthError> {
    check_claims(claims)?;
    let l = &claims.legacy;
    if lookup {
        lookup_objects(objects, token, l).await?;
    }
    Ok(UserInfo {
        name: serviceaccount::username(&l.namespace, &l.service_account_name),
        uid: l.service_account_uid.clone(),
        groups: serviceaccount::groups(&l.namespace),
        ..UserInfo::default()
    })
}

/// The token of a secret's data (base64 in storage).
fn secret_token(secret: &Value) -> Option<Vec<u8>> {
    let encoded = secret.pointer("/data/token")?.as_str()?;
    STANDARD.decode(encoded).ok()
}

/// Compares without stopping at the first difference.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn lookup_objects(objects: &Objects, token: &str, l: &LegacyClaims) -> Result<(), AuthError> {
    let (ns, sa_name) = (l.namespace.as_str(), l.service_account_name.as_str());
    let invalidated = || err("Token has been invalidated");
    let secret = objects
        .get(Kind::Secret, ns, &l.secret_name)
        .await
        .map_err(|_| invalidated())?;
    if secret.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(invalidated());
    }
    if !secret_token(&secret).is_some_and(|stored| same_bytes(&stored, token.as_bytes())) {
        return Err(err("Token does not match server's copy"));
    }
    let sa = objects
        .get(Kind::ServiceAccount, ns, sa_name)
        .await
        .map_err(|e| err(e.message))?;
    if sa.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(err(format!(
            "ServiceAccount {ns}/{sa_name} has been deleted"
        )));
    }
    let sa_uid = str_at(&sa, "/metadata/uid");
    if sa_uid != l.service_account_uid {
        return Err(err(format!(
            "ServiceAccount UID ({sa_uid}) does not match claim ({})",
            l.service_account_uid
        )));
    }
    let invalid_since = str_at(
        &secret,
        "/metadata/labels/kubernetes.io~1legacy-token-invalid-since",
    );
    if !invalid_since.is_empty() {
        mark_used(objects, &secret).await;
        return Err(err(format!(
            "the token in secret {ns}/{} for service account {ns}/{sa_name} has been marked invalid. \
             Use tokens from the TokenRequest API or manually created secret-based tokens, \
             or remove the '{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use of this token",
            l.secret_name
        )));
    }
    mark_used(objects, &secret).await;
    Ok(())
}

/// Labels the secret with today's date unless it already says today (or
/// tomorrow, for clocks ahead of ours); a failure is only logged.
async fn mark_used(objects: &Objects, secret: &Value) {
    let now = Utc::now();
    let today = now.format("%Y-%m-%d").to_string();
    let tomorrow = (now + Duration::days(1)).format("%Y-%m-%d").to_string();
    let pointer = "/metadata/labels/kubernetes.io~1legacy-token-last-used";
    let last_used = str_at(secret, pointer);
    if last_used == today || last_used == tomorrow {
        return;
    }
    let Some(store) = objects.store(Kind::Secret) else {
        return;
    };
    let (ns, name) = (
        str_at(secret, "/metadata/namespace"),
        str_at(secret, "/metadata/name"),
    );
    let uid = str_at(secret, "/metadata/uid").to_owned();
    let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
        let mut secret = current
            .cloned()
            .ok_or_else(|| ApiError::internal_error("the secret is gone"))?;
        // Like upstream's patch with the UID: never label a recreated secret.
        if str_at(&secret, "/metadata/uid") != uid {
            return Err(ApiError::conflict(
                "",
                "secrets",
                "",
                "the secret was replaced",
            ));
        }
        let meta = secret
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| ApiError::internal_error("the secret has no metadata"))?;
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(LAST_USED_LABEL.to_owned(), Value::String(today.clone()));
        }
        Ok(secret)
    });
    let result = store
        .update(
            Some(ns),
            name,
            Target::Main,
            mutate,
            &WriteOptions::default(),
        )
        .await;
    if let Err(e) = result {
        tracing::warn!(namespace = ns, secret = name, error = %e.message, "labelling a legacy service account token with its last-used date failed");
    }
}

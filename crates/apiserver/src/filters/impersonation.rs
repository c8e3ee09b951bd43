//! Acting as someone else (upstream's `WithImpersonation`): the
//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers replace the request's user once the
//! authenticated user is allowed the `impersonate` verb on each of them
//! (users, serviceaccounts, groups, uids, userextras/<key>).

use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use axum::body::Body;
use axum::extract::State;
use http::{HeaderMap, Request, Response};

use super::authorization::{forbidden, Authorization};
use super::handler::Next;
use crate::authentication::user::{
    UserInfo, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP,
};
use crate::authorization::authorizer::{Attributes, Decision};
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// One thing the requester asks to act as.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Target {
    /// The request attributes the `impersonate` permission is checked on:
    /// (API group, resource, subresource, namespace, name).
    fn attributes(&self) -> (&str, &str, &str, &str, &str) {
        match self {
            Target::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace, name)
            }
            Target::User(name) => ("", "users", "", "", name),
            Target::Group(name) => ("", "groups", "", "", name),
            Target::Extra { key, value } => (AUTHENTICATION_GROUP, "userextras", key, "", value),
            Target::Uid(uid) => (AUTHENTICATION_GROUP, "uids", "", "", uid),
        }
    }

    /// The target as Go prints the ObjectReference upstream builds for it
    /// (fields Kind, Namespace, Name, UID, APIVersion, ResourceVersion,
    /// FieldPath), for the bad-request message.
    fn describe(&self) -> String {
        let v1 = "authentication.k8s.io/v1";
        let (kind, namespace, name, api_version, field_path) = match self {
            Target::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Target::User(name) => ("User", "", name.as_str(), "", ""),
            Target::Group(name) => ("Group", "", name.as_str(), "", ""),
            Target::Extra { key, value } => ("UserExtra", "", value.as_str(), v1, key.as_str()),
            Target::Uid(uid) => ("UID", "", uid.as_str(), v1, ""),
        };
        format!("{{{kind} {namespace} {name}  {api_version}  {field_path}}}")
    }
}

/// `system:serviceaccount:<ns>:<name>` split, when well formed.
fn service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    let valid = !namespace.is_empty() && !name.is_empty() && !name.contains(':');
    valid.then(|| (namespace.to_owned(), name.to_owned()))
}

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> impl Iterator<Item = &'a str> {
    headers.get_all(name).iter().filter_map(|v| v.to_str().ok())
}

/// Percent-decodes an extra key; a malformed one is kept as sent.
fn unescape_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = key
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => out.push(b),
                None => return key.to_owned(),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_owned())
}

/// The targets the headers ask for, in upstream's order.
fn targets(headers: &HeaderMap) -> Result<Vec<Target>, ApiError> {
    let mut targets = Vec::new();
    let user = header_values(headers, USER_HEADER)
        .next()
        .filter(|u| !u.is_empty());
    if let Some(user) = user {
        targets.push(match service_account(user) {
            Some((namespace, name)) => Target::ServiceAccount { namespace, name },
            None => Target::User(user.to_owned()),
        });
    }
    targets.extend(header_values(headers, GROUP_HEADER).map(|g| Target::Group(g.to_owned())));
    for (name, value) in headers {
        let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) else {
            continue;
        };
        if let Ok(value) = value.to_str() {
            targets.push(Target::Extra {
                key: unescape_key(key),
                value: value.to_owned(),
            });
        }
    }
    if let Some(uid) = header_values(headers, UID_HEADER)
        .next()
        .filter(|u| !u.is_empty())
    {
        targets.push(Target::Uid(uid.to_owned()));
    }
    if user.is_none() && !targets.is_empty() {
        let described: Vec<String> = targets.iter().map(Target::describe).collect();
        return Err(ApiError::bad_request(format!(
            "requested [{}] without impersonating a user",
            described.join(" ")
        )));
    }
    Ok(targets)
}

/// The user the targets describe, with the catch-all group upstream adds.
fn impersonated(targets: &[Target], groups_given: bool) -> UserInfo {
    let mut user = UserInfo::default();
    for target in targets {
        match target {
            Target::ServiceAccount { namespace, name } => {
                user.name = format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}");
                if !groups_given {
                    user.groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Target::User(name) => user.name.clone_from(name),
            Target::Group(group) => user.groups.push(group.clone()),
            Target::Extra { key, value } => user
                .extra
                .entry(key.clone())
                .or_default()
                .push(value.clone()),
            Target::Uid(uid) => user.uid.clone_from(uid),
        }
    }
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if user.name == ANONYMOUS_USER {
        if !has(UNAUTHENTICATED_GROUP) {
            user.groups.push(UNAUTHENTICATED_GROUP.into());
        }
    } else if !has(AUTHENTICATED_GROUP) && !has(UNAUTHENTICATED_GROUP) {
        user.groups.push(AUTHENTICATED_GROUP.into());
    }
    user
}

/// Checks the requester may impersonate every target; the refusal is
/// upstream's 403 on the first target denied.
async fn authorize(
    authz: &Authorization,
    requester: &UserInfo,
    targets: &[Target],
) -> Result<(), ApiError> {
    for target in targets {
        let (api_group, resource, subresource, namespace, name) = target.attributes();
        let attrs = Attributes {
            user: requester,
            verb: "impersonate",
            is_resource_request: true,
            namespace,
            api_group,
            resource,
            subresource,
            name,
            path: "",
            api_version: "",
            field_selector: "",
            label_selector: "",
        };
        match authz.decide(&attrs).await {
            Decision::Allow(_) => {}
            Decision::Deny(reason) | Decision::NoOpinion(reason) => {
                let info = RequestInfo {
                    is_resource_request: true,
                    verb: "impersonate".into(),
                    api_group: api_group.into(),
                    namespace: namespace.into(),
                    resource: resource.into(),
                    subresource: subresource.into(),
                    name: name.into(),
                    ..RequestInfo::default()
                };
                return Err(forbidden(requester, &info, &reason));
            }
        }
    }
    Ok(())
}

fn strip_headers(headers: &mut HeaderMap) {
    headers.remove(USER_HEADER);
    headers.remove(GROUP_HEADER);
    headers.remove(UID_HEADER);
    let extras: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
        .cloned()
        .collect();
    for key in extras {
        headers.remove(key);
    }
}

pub async fn filter(
    State(authz): State<Arc<Authorization>>,
    mut req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let targets = match targets(req.headers()) {
        Ok(t) if t.is_empty() => return next.run(req).await,
        Ok(t) => t,
        Err(e) => return response::error(&e, Encoding::Json),
    };
    let Some(requester) = req.extensions().get::<Arc<UserInfo>>().cloned() else {
        let err = ApiError::internal_error("no user found for request");
        return response::error(&err, Encoding::Json);
    };
    if let Err(e) = authorize(&authz, &requester, &targets).await {
        return response::error(&e, Encoding::Json);
    }
    let groups_given = req.headers().contains_key(GROUP_HEADER);
    let user = impersonated(&targets, groups_given);
    tracing::debug!(requester = %requester.name, user = %user.name, "impersonating");
    strip_headers(req.headers_mut());
    if let Some(audit) = req.extensions().get::<Arc<crate::audit::AuditContext>>() {
        audit.log_impersonated_user(&user);
    }
    req.extensions_mut().insert(Arc::new(user));
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn service_account_users_get_their_groups_unless_groups_are_given() {
        let h = headers(&[("Impersonate-User", "system:serviceaccount:ns1:builder")]);
        let t = targets(&h).unwrap();
        assert_eq!(
            t,
            vec![Target::ServiceAccount {
                namespace: "ns1".into(),
                name: "builder".into()
            }]
        );
        let user = impersonated(&t, false);
        assert_eq!(user.name, "system:serviceaccount:ns1:builder");
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns1",
                AUTHENTICATED_GROUP
            ]
        );
    }

    #[test]
    fn groups_extras_and_uid_follow_the_user() {
        let h = headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Extra-Scopes%2Fx", "view"),
            ("Impersonate-Uid", "42"),
        ]);
        let t = targets(&h).unwrap();
        let user = impersonated(&t, true);
        assert_eq!(user.name, "jane");
        assert_eq!(user.uid, "42");
        assert_eq!(user.groups, vec!["dev", "ops", AUTHENTICATED_GROUP]);
        assert_eq!(user.extra["scopes/x"], vec!["view"]);
        let anon = impersonated(&[Target::User(ANONYMOUS_USER.into())], false);
        assert_eq!(anon.groups, vec![UNAUTHENTICATED_GROUP]);
    }

    #[test]
    fn groups_without_a_user_are_a_bad_request() {
        let err = targets(&headers(&[("Impersonate-Group", "dev")])).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "requested [{Group  dev    }] without impersonating a user"
        );
    }

    #[tokio::test]
    async fn refusal_names_the_target_like_upstream() {
        let authz = Authorization {
            modes: vec![super::super::authorization::AuthorizationMode::AlwaysDeny],
        };
        let bob = UserInfo {
            name: "bob".into(),
            ..UserInfo::default()
        };
        let err = authorize(&authz, &bob, &[Target::User("jane".into())])
            .await
            .unwrap_err();
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "users \"jane\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope: Everything is forbidden."
        );
    }
}

//! The user a request is made as (upstream's
//! `k8s.io/apiserver/pkg/authentication/user`): the identity every layer
//! above authentication reads — audit, authorization, admission, priority
//! and fairness, the handlers — and the well-known user and group names.

use std::collections::BTreeMap;

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// User extra naming the credential a request was authenticated with.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// The authenticated identity of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// Additional attributes (pod name of a service-account token, scopes
    /// of an impersonated user, …).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
            ..UserInfo::default()
        }
    }

    /// Adds `system:authenticated` unless the user is anonymous or already
    /// carries one of the two catch-all groups (upstream's
    /// AuthenticatedGroupAdder).
    pub fn with_authenticated_group(mut self) -> Self {
        let has_catch_all = self
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
        if self.name != ANONYMOUS_USER && !has_catch_all {
            self.groups.push(AUTHENTICATED_GROUP.into());
        }
        self
    }
}

/// The group whose members may do anything (upstream's
/// `SystemPrivilegedGroup`).
pub const PRIVILEGED_GROUP: &str = "system:masters";

/// The group of monitoring agents (upstream's `MonitoringGroup`).
pub const MONITORING_GROUP: &str = "system:monitoring";

//! The flag tables, one module per named flag set (upstream's
//! `cliflag.NamedFlagSets` as `pkg/kubeapiserver/options` fills them), the
//! declarative flag description they are written in (`spec`), and the list
//! tying each table to its help section.

pub mod admission;
pub mod api_enablement;
pub mod auditing;
pub mod authentication;
pub mod authorization;
pub mod cloud_provider;
pub mod egress_selector;
pub mod etcd;
pub mod features;
pub mod generic;
pub mod global;
pub mod logs;
pub mod metrics;
pub mod misc;
pub mod secure_serving;
pub mod spec;
pub mod traces;

use spec::{FlagSpec, Section};

/// Every flag set with its section, in help order.
pub const SETS: &[(Section, &[FlagSpec])] = &[
    (Section::Generic, generic::FLAGS),
    (Section::Etcd, etcd::FLAGS),
    (Section::SecureServing, secure_serving::FLAGS),
    (Section::Auditing, auditing::FLAGS),
    (Section::Features, features::FLAGS),
    (Section::Authentication, authentication::FLAGS),
    (Section::Authorization, authorization::FLAGS),
    (Section::ApiEnablement, api_enablement::FLAGS),
    (Section::EgressSelector, egress_selector::FLAGS),
    (Section::Admission, admission::FLAGS),
    (Section::Metrics, metrics::FLAGS),
    (Section::Logs, logs::FLAGS),
    (Section::Traces, traces::FLAGS),
    (Section::Misc, misc::FLAGS),
    (Section::CloudProvider, cloud_provider::FLAGS),
    (Section::Global, global::FLAGS),
];

/// Every flag with its section.
pub fn all() -> impl Iterator<Item = (Section, &'static FlagSpec)> {
    SETS.iter()
        .flat_map(|(section, flags)| flags.iter().map(move |flag| (*section, flag)))
}

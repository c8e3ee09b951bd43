//! The Pod Security Standards (upstream's `k8s.io/pod-security-admission`
//! policy and api packages): the privileged, baseline and restricted levels,
//! policy versions, the namespace labels that select them, and every check
//! of the baseline and restricted profiles with its per-version behaviour.
//! Evaluation is pure: a pod's metadata and spec in, upstream's forbidden
//! reasons and details out.

mod api;
mod policy;
mod registry;

pub use api::{
    policy_to_evaluate, LabelError, Level, LevelVersion, ParseError, Policy, Version,
    AUDIT_ANNOTATION_PREFIX, AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL, ENFORCE_LEVEL_LABEL,
    ENFORCE_VERSION_LABEL, WARN_LEVEL_LABEL, WARN_VERSION_LABEL,
};
pub use policy::result::{AggregateResult, Forbidden};
pub use registry::{check_ids, evaluate_pod, MAX_VERSION};

//! The checks of the baseline and restricted profiles (upstream's
//! `pod-security-admission/policy`), one function per upstream check
//! version, with what they answer and the container visitor they share.
//! Each answers None when the pod is allowed.

pub(crate) mod host;
pub(crate) mod profiles;
pub(crate) mod restricted;
pub(crate) mod result;
mod visit;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use result::Forbidden;

/// One version of one check.
pub(crate) type CheckFn = fn(&ObjectMeta, &PodSpec) -> Option<Forbidden>;

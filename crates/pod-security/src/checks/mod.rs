//! The checks of the baseline and restricted profiles, one function per
//! upstream check version. Each answers None when the pod is allowed.

pub(crate) mod host;
pub(crate) mod profiles;
pub(crate) mod restricted;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::result::Forbidden;

/// One version of one check.
pub(crate) type CheckFn = fn(&ObjectMeta, &PodSpec) -> Option<Forbidden>;

//! `autoscaling/v1` HorizontalPodAutoscalers, served beside `autoscaling/v2`
//! (the storage version) by converting every object on its way in and out
//! (see [`crate::api::autoscaling_v1`]).

use apiserver::server::GenericApiServer;

use super::openapi::ResourceSchema;
use super::{builtin, converted};
use crate::api::autoscaling_v1::convert;

/// The group version this module serves, for `--runtime-config`.
pub const GROUP_VERSION: (&str, &str) = ("autoscaling", "v1");

/// Serves `autoscaling/v1` HorizontalPodAutoscalers over the storage (and
/// watch cache) of the installed `autoscaling/v2` store; returns what
/// OpenAPI needs of them.
pub fn install(server: &mut GenericApiServer, prefix: &str) -> Vec<ResourceSchema> {
    let Some(v2) = server.store("autoscaling", "v2", "horizontalpodautoscalers") else {
        return Vec::new();
    };
    let served = builtin::horizontal_pod_autoscalers_v1();
    converted::install(server, prefix, &v2, served, convert)
}

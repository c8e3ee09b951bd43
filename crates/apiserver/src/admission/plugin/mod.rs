//! The generic admission plugins (upstream's
//! `k8s.io/apiserver/pkg/admission/plugin`): the admission webhooks, the
//! validating and mutating admission policies, and the CEL evaluation the
//! policies share.

mod cel;
pub mod policy;
pub mod webhook;

//! Helpers the end-to-end tests share, beside the server harness
//! (`harness`): kubectl output, printed tables, raw HTTPS requests with the
//! admin certificate, certificates of test CAs and CustomResourceDefinition
//! fixtures.

pub mod crds;
pub mod http;
pub mod kubectl;
pub mod pki;
pub mod tables;

//! Helpers the end-to-end tests share, beside the server harness
//! (`harness`): kubectl with a token and its output, printed tables, raw
//! HTTPS requests with the admin certificate, certificates of test CAs and
//! certificate requests, CustomResourceDefinition fixtures, audit logs and
//! waiting for the server's background work.

pub mod audit;
pub mod crds;
pub mod http;
pub mod kubectl;
pub mod pki;
pub mod tables;
pub mod wait;

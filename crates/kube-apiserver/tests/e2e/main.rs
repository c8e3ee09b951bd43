//! End-to-end tests: the built binary, started as a user starts it, driven
//! by the real kubectl and raw HTTPS.

mod admission;
mod admission_plugins;
mod admission_policy;
mod apply_client_side;
mod apply_server_side;
mod audit_and_encryption;
mod authentication;
mod authentication_config;
mod authorization;
mod authz_node;
mod authz_webhook;
mod cbor;
mod crd;
mod crd_apply;
mod crd_conversion;
mod deletion;
mod encryption_kms;
mod etcd_backend;
mod flowcontrol;
mod harness;
mod http_errors;
mod kubectl_basics;
mod kubectl_versions;
mod legacy_sa_tokens;
mod mutating_policy;
mod namespace_lifecycle;
mod openapi_v2;
mod pod_subresources;
mod pod_security;
mod rbac;
mod runtime_config;
mod service_accounts;
mod spec_validation;
mod storage_encoding;
mod watch_and_lifecycle;

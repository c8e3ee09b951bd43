//! KMS v2 envelope encryption at rest (upstream's
//! `storage/value/encrypt/envelope/kmsv2` and the KMS v2 half of
//! `server/options/encryptionconfig`).
//!
//! A [`Provider`] talks gRPC to an external KMS plugin over a unix socket
//! ([`client`]). It generates a DEK seed locally, has the plugin encrypt it
//! once per plugin key ID, and encrypts every value locally with AES-GCM
//! under a key derived from that seed; the stored value is upstream's
//! `EncryptedObject` protobuf message ([`object`]), so data is readable by
//! upstream's kube-apiserver and back. Decrypted DEKs are cached; the
//! plugin's `Status` is polled to report health and to move to a new DEK
//! when the plugin's key ID changes. What it does is reported through
//! [`Metrics`] for upstream's envelope-encryption metrics.
//!
//! [`plugin`] is a small local-key plugin, a stand-in for a real KMS in
//! tests and local runs (the `kms-test-plugin` binary serves it).

pub mod api;
pub mod client;
mod dek;
mod envelope;
pub mod metrics;
pub mod object;
pub mod plugin;

pub use client::{ClientError, KmsClient};
pub use envelope::{Provider, ProviderConfig, Timing};
pub use metrics::Metrics;

/// The prefix of every KMS v2 value; the provider name and `:` follow.
pub const PREFIX_V2: &str = "k8s:enc:kms:v2:";

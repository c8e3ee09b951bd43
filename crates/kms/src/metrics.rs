//! What a KMS v2 provider reports for upstream's envelope-encryption
//! metrics (`storage/value/encrypt/envelope/metrics`): the key IDs it
//! writes and reads under, the key IDs the plugin's `Status` returns,
//! DEK cache misses and size, and the latency of every plugin call. The
//! server supplies the registry behind [`Metrics`]; key IDs are passed in
//! the clear and hashed there, as upstream hashes them before labelling.

use std::time::Duration;

use crate::client::ClientError;

/// Which way a value was transformed (upstream's `transformation_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transformation {
    /// Decrypted on a read.
    FromStorage,
    /// Encrypted on a write.
    ToStorage,
}

impl Transformation {
    pub fn as_str(self) -> &'static str {
        match self {
            Transformation::FromStorage => "from_storage",
            Transformation::ToStorage => "to_storage",
        }
    }
}

/// The gRPC method names of the plugin calls, as upstream's interceptor
/// labels them.
pub const METHOD_STATUS: &str = "/v2.KeyManagementService/Status";
pub const METHOD_ENCRYPT: &str = "/v2.KeyManagementService/Encrypt";
pub const METHOD_DECRYPT: &str = "/v2.KeyManagementService/Decrypt";

/// Receives a provider's measurements.
pub trait Metrics: Send + Sync {
    /// A value was encrypted or decrypted under `key_id`.
    fn key_id_used(&self, transformation: Transformation, provider: &str, key_id: &str);
    /// The plugin's `Status` returned a valid `key_id`.
    fn status_key_id(&self, provider: &str, key_id: &str);
    /// The plugin's `Status` returned an invalid key ID (`error` is
    /// upstream's code: `empty` or `too_long`).
    fn invalid_status_key_id(&self, provider: &str, error: &'static str);
    /// A read needed the plugin to decrypt its DEK.
    fn dek_cache_miss(&self);
    /// How many decrypted DEKs the provider holds now.
    fn dek_source_cache_size(&self, provider: &str, size: usize);
    /// One plugin call (`method` one of the `METHOD_` names) and its gRPC
    /// status code (`OK`, `Unavailable`, …).
    fn kms_call(&self, provider: &str, method: &'static str, elapsed: Duration, code: &str);
}

/// The gRPC status code of a call's outcome, as upstream's `getErrorCode`:
/// `OK`, the plugin's code, or `unknown-non-grpc` for failures before any
/// call was made.
pub fn status_code<T>(result: &Result<T, ClientError>) -> &str {
    match result {
        Ok(_) => "OK",
        Err(ClientError::Rpc { code, .. }) => code,
        Err(ClientError::Timeout) => "DeadlineExceeded",
        Err(_) => "unknown-non-grpc",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_labelled_with_grpc_codes() {
        assert_eq!(status_code(&Ok::<(), ClientError>(())), "OK");
        let rpc = ClientError::Rpc {
            code: "Unavailable".into(),
            message: "connection refused".into(),
        };
        assert_eq!(status_code::<()>(&Err(rpc)), "Unavailable");
        assert_eq!(
            status_code::<()>(&Err(ClientError::Timeout)),
            "DeadlineExceeded"
        );
        assert_eq!(
            status_code::<()>(&Err(ClientError::NoRuntime)),
            "unknown-non-grpc"
        );
        assert_eq!(Transformation::ToStorage.as_str(), "to_storage");
    }
}

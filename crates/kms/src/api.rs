//! The KMS v2 protocol types, client and server, generated at build time
//! from `proto/kms_v2.proto` and `proto/encrypted_object.proto`.

tonic::include_proto!("v2");

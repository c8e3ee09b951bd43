//! Generates the KMS v2 gRPC client, server and messages from `proto/`.

fn main() -> std::io::Result<()> {
    tonic_prost_build::configure()
        // Deterministic annotation order and zero-copy byte fields.
        .btree_map(".")
        .bytes(".")
        .compile_protos(
            &["proto/kms_v2.proto", "proto/encrypted_object.proto"],
            &["proto"],
        )
}

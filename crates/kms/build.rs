//! Generates the KMS v2 gRPC client, server and messages from `proto/`,
//! with the protoc binary vendored by `protoc-bin-vendored` (no system
//! protoc needed; `scripts/protoc` runs the same binary for etcd-client).

fn main() -> std::io::Result<()> {
    let protoc = protoc_bin_vendored::protoc_bin_path().map_err(std::io::Error::other)?;
    std::env::set_var("PROTOC", protoc);
    tonic_prost_build::configure()
        // Deterministic annotation order and zero-copy byte fields.
        .btree_map(".")
        .bytes(".")
        .compile_protos(
            &["proto/kms_v2.proto", "proto/encrypted_object.proto"],
            &["proto"],
        )
}

//! Certificates, keys and kubeconfig generated for the embedded default. Being written.

//! `kube-apiserver`: the Kubernetes API server.

mod options;
mod pki;

fn main() {}

//! `kubectl get` columns (Table output) of pods, nodes, services and the
//! workloads (printers in `registry/core.rs` and `registry/apps.rs`): to be written.

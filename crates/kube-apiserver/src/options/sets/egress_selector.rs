//! Egress selector flags: how outgoing connections are routed.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[FlagSpec::new(
    "egress-selector-config-file",
    Kind::Str,
    "",
    "File with the EgressSelectorConfiguration that routes this server's outgoing connections (to nodes, etcd or the control plane).",
)];

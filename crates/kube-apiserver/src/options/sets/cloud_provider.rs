//! Cloud provider flags: all deprecated and hidden, still accepted.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new(
        "cloud-config",
        Kind::Str,
        "",
        "Cloud provider configuration file.",
    )
    .deprecated("will be removed in a future version"),
    FlagSpec::new("cloud-provider", Kind::Str, "", "Cloud provider name.")
        .deprecated("will be removed in a future version"),
];

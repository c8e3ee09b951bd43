//! Traces flags: OpenTelemetry tracing.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[FlagSpec::new(
    "tracing-config-file",
    Kind::Str,
    "",
    "File with apiserver tracing configuration.",
)];

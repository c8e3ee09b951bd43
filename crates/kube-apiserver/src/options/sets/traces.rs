//! Traces flags: OpenTelemetry tracing.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[FlagSpec::new(
    "tracing-config-file",
    Kind::Str,
    "",
    "File with the TracingConfiguration (endpoint and sampling) for exporting traces.",
)];

//! Logs flags: format, verbosity and output streams.

use super::spec::{FlagSpec, Kind};

/// The verbosity flag, `-v`/`--v`.
pub const VERBOSITY: &str = "v";

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("log-flush-frequency", Kind::Duration, "5s",
        "Longest time between log flushes."),
    FlagSpec::new("log-json-info-buffer-size", Kind::Quantity, "",
        "[Alpha] With split JSON streams, how much info output may be buffered (e.g. 512, 1k, 2Ki); 0 disables buffering. Needs the LoggingAlphaOptions feature gate."),
    FlagSpec::new("log-json-split-stream", Kind::Bool, "",
        "[Alpha] In JSON format, write errors to stderr and info messages to stdout instead of everything to stdout. Needs the LoggingAlphaOptions feature gate."),
    FlagSpec::new("log-text-info-buffer-size", Kind::Quantity, "",
        "[Alpha] With split text streams, how much info output may be buffered (e.g. 512, 1k, 2Ki); 0 disables buffering. Needs the LoggingAlphaOptions feature gate."),
    FlagSpec::new("log-text-split-stream", Kind::Bool, "",
        "[Alpha] In text format, write errors to stderr and info messages to stdout instead of everything to stdout. Needs the LoggingAlphaOptions feature gate."),
    FlagSpec::new("logging-format", Kind::Str, "text",
        "Log format: \"text\", or \"json\" (needs the LoggingBetaOptions feature gate)."),
    FlagSpec::new(VERBOSITY, Kind::Level, "",
        "Log verbosity level; higher numbers log more.")
        .short('v'),
    FlagSpec::new("vmodule", Kind::VModule, "",
        "Per-file verbosity as comma-separated pattern=N entries (text format only)."),
];

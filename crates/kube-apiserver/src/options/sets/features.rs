//! Features flags: profiling and priority-and-fairness.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("contention-profiling", Kind::Bool, "",
        "Upstream: also collect Go's block (lock contention) profile when profiling is on; a Rust process has no block profile, so /debug/pprof/block is an unknown profile either way."),
    FlagSpec::new("debug-socket-path", Kind::Str, "",
        "Serve the profiling endpoints (/debug/pprof/, with cmdline) on this unix socket, without authentication or authorization."),
    FlagSpec::new("enable-priority-and-fairness", Kind::Bool, "true",
        "Queue and dispatch requests by priority and fairness instead of the plain max-in-flight limits."),
    FlagSpec::new("profiling", Kind::Bool, "true",
        "Serve profiling data at /debug/pprof/ (CPU profile and symbols), behind authentication and authorization."),
];

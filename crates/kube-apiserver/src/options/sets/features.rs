//! Features flags: profiling and priority-and-fairness.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("contention-profiling", Kind::Bool, "",
        "Upstream: enable Go's block profiling when profiling is on. A Rust process has no Go runtime to sample blocking in: /debug/pprof/block and /debug/pprof/mutex serve Go's empty profiles either way."),
    FlagSpec::new("debug-socket-path", Kind::Str, "",
        "Serve the profiling endpoints (/debug/pprof/, with cmdline) on this unix socket, without authentication or authorization."),
    FlagSpec::new("enable-priority-and-fairness", Kind::Bool, "true",
        "Queue and dispatch requests by priority and fairness instead of the plain max-in-flight limits."),
    FlagSpec::new("profiling", Kind::Bool, "true",
        "Serve profiling data at /debug/pprof/ (CPU profile and symbols), behind authentication and authorization."),
];

//! Features flags: profiling and priority-and-fairness.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("contention-profiling", Kind::Bool, "",
        "Also collect block (lock contention) profiles when profiling is on."),
    FlagSpec::new("debug-socket-path", Kind::Str, "",
        "Serve the profiling endpoints on this unix socket, without authentication or authorization."),
    FlagSpec::new("enable-priority-and-fairness", Kind::Bool, "true",
        "Queue and dispatch requests by priority and fairness instead of the plain max-in-flight limits."),
    FlagSpec::new("profiling", Kind::Bool, "true",
        "Serve profiling data at /debug/pprof/."),
];

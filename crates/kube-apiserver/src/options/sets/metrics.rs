//! Metrics flags: which metrics and label values are exposed.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("allow-metric-labels", Kind::StringToString, "",
        "Allowed values per metric label, as '<metric>,<label>'='<value>,<value>...' entries, e.g. metric1,label1='v1,v2'. Other values are replaced."),
    FlagSpec::new("allow-metric-labels-manifest", Kind::Str, "",
        "File holding the same allow-list as --allow-metric-labels (an allowListMapping map); the flag wins over the file."),
    FlagSpec::new("disabled-metrics", Kind::StringSlice, "",
        "Fully qualified names of metrics to turn off; takes precedence over showing hidden metrics."),
    FlagSpec::new("show-hidden-metrics-for-version", Kind::Str, "",
        "Previous minor version (major.minor, e.g. '1.36') whose hidden metrics are shown again, to notice metrics about to be removed. Only the previous minor version is accepted."),
];

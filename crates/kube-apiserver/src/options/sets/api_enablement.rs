//! API enablement flags: which built-in APIs are served.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[FlagSpec::new(
    "runtime-config",
    Kind::ConfigurationMap,
    "",
    "Comma-separated key=value pairs turning built-in APIs on or off:\n\
     v1=true|false for the core group\n\
     <group>/<version>=true|false for one group version (e.g. apps/v1=true)\n\
     <group>/<version>/<resource>=true|false for one resource\n\
     api/all=true|false for every API version\n\
     api/ga=true|false for versions like v1\n\
     api/beta=true|false for versions like v1beta1\n\
     api/alpha=true|false for versions like v1alpha1\n\
     api/legacy is deprecated and will be removed",
)];

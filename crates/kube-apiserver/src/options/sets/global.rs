//! Global flags: help and version.

use super::spec::{FlagSpec, Kind};

/// The help flag, `-h`/`--help`.
pub const HELP: &str = "help";
/// The version flag.
pub const VERSION: &str = "version";

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new(HELP, Kind::Help, "", "help for kube-apiserver").short('h'),
    FlagSpec::new(VERSION, Kind::Version, "",
        "--version prints the version and exits, --version=raw prints detailed version information and exits, --version=vX.Y.Z reports that version instead of the built-in one."),
];

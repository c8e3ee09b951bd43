//! Levels, versions and policies (upstream's `pod-security-admission/api`):
//! how the `pod-security.kubernetes.io/*` namespace labels are parsed and
//! resolved against the configured defaults.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";

pub const ENFORCE_LEVEL_LABEL: &str = "pod-security.kubernetes.io/enforce";
pub const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";
pub const AUDIT_LEVEL_LABEL: &str = "pod-security.kubernetes.io/audit";
pub const AUDIT_VERSION_LABEL: &str = "pod-security.kubernetes.io/audit-version";
pub const WARN_LEVEL_LABEL: &str = "pod-security.kubernetes.io/warn";
pub const WARN_VERSION_LABEL: &str = "pod-security.kubernetes.io/warn-version";
/// Audit annotations the admission plugin adds carry this prefix.
pub const AUDIT_ANNOTATION_PREFIX: &str = LABEL_PREFIX;

/// Why a level or version string was refused (upstream's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("must be one of privileged, baseline, restricted")]
    Level,
    #[error("must be \"latest\" or \"v1.x\"")]
    Version,
}

/// A Pod Security Standards level, from least to most strict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

impl FromStr for Level {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s {
            "privileged" => Ok(Level::Privileged),
            "baseline" => Ok(Level::Baseline),
            "restricted" => Ok(Level::Restricted),
            _ => Err(ParseError::Level),
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy version: `v1.X` or `latest` (newer than any numbered one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// `v1.<minor>`.
    Minor(u32),
    Latest,
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Version::Latest, Version::Latest) => Ordering::Equal,
            (Version::Latest, _) => Ordering::Greater,
            (_, Version::Latest) => Ordering::Less,
            (Version::Minor(a), Version::Minor(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for Version {
    type Err = ParseError;

    /// `latest`, or `v1.` followed by a minor without leading zeros.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        if s == "latest" {
            return Ok(Version::Latest);
        }
        let minor = s.strip_prefix("v1.").ok_or(ParseError::Version)?;
        let digits_only = !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit());
        if !digits_only || (minor.len() > 1 && minor.starts_with('0')) {
            return Err(ParseError::Version);
        }
        minor
            .parse()
            .map(Version::Minor)
            .map_err(|_| ParseError::Version)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Minor(m) => write!(f, "v1.{m}"),
            Version::Latest => f.write_str("latest"),
        }
    }
}

/// A level at a version, written `level:version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl LevelVersion {
    pub const PRIVILEGED: LevelVersion = LevelVersion {
        level: Level::Privileged,
        version: Version::Latest,
    };

    pub fn new(level: Level, version: Version) -> Self {
        LevelVersion { level, version }
    }

    /// Both privileged, or the same level and version.
    pub fn equivalent(&self, other: &LevelVersion) -> bool {
        (self.level == Level::Privileged && other.level == Level::Privileged) || self == other
    }
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level, self.version)
    }
}

/// The level and version of each mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

impl Default for Policy {
    /// Every mode privileged at the latest version (upstream's defaults).
    fn default() -> Self {
        Policy {
            enforce: LevelVersion::PRIVILEGED,
            audit: LevelVersion::PRIVILEGED,
            warn: LevelVersion::PRIVILEGED,
        }
    }
}

impl Policy {
    pub fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn]
            .iter()
            .all(|lv| lv.level == Level::Privileged)
    }

    pub fn equivalent(&self, other: &Policy) -> bool {
        self.enforce.equivalent(&other.enforce)
            && self.audit.equivalent(&other.audit)
            && self.warn.equivalent(&other.warn)
    }
}

/// A namespace label whose value could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelError {
    pub label: &'static str,
    pub value: String,
    pub error: ParseError,
}

/// The policy a namespace's labels select (upstream's `PolicyToEvaluate`):
/// each label present overrides its default. A policy is always returned;
/// an unparsable enforce level falls back to restricted, an unparsable audit
/// or warn level to privileged, an unparsable version to latest. Warn
/// follows an explicitly set, stricter enforce level unless labelled itself.
pub fn policy_to_evaluate<'a>(
    label: impl Fn(&str) -> Option<&'a str>,
    defaults: &Policy,
) -> (Policy, Vec<LabelError>) {
    let mut p = *defaults;
    let mut errors = Vec::new();
    let mut parse = |name: &'static str, fallback_level: Level| -> (Option<Level>, bool) {
        let Some(v) = label(name) else {
            return (None, false);
        };
        match v.parse() {
            Ok(level) => (Some(level), true),
            Err(error) => {
                errors.push(LabelError {
                    label: name,
                    value: v.to_owned(),
                    error,
                });
                (Some(fallback_level), false)
            }
        }
    };
    let (enforce, has_enforce_level) = parse(ENFORCE_LEVEL_LABEL, Level::Restricted);
    let (audit, _) = parse(AUDIT_LEVEL_LABEL, Level::Privileged);
    let (warn, _) = parse(WARN_LEVEL_LABEL, Level::Privileged);
    let has_warn_level = warn.is_some();
    p.enforce.level = enforce.unwrap_or(p.enforce.level);
    p.audit.level = audit.unwrap_or(p.audit.level);
    p.warn.level = warn.unwrap_or(p.warn.level);
    let mut version = |name: &'static str, target: &mut Version| {
        let Some(v) = label(name) else {
            return false;
        };
        *target = v.parse().unwrap_or_else(|error| {
            errors.push(LabelError {
                label: name,
                value: v.to_owned(),
                error,
            });
            Version::Latest
        });
        true
    };
    version(ENFORCE_VERSION_LABEL, &mut p.enforce.version);
    version(AUDIT_VERSION_LABEL, &mut p.audit.version);
    let has_warn_version = version(WARN_VERSION_LABEL, &mut p.warn.version);
    if !has_warn_level && has_enforce_level && p.enforce.level > p.warn.level {
        p.warn.level = p.enforce.level;
        if !has_warn_version {
            p.warn.version = p.enforce.version;
        }
    }
    errors.sort_by_key(|e| label_order(e.label));
    (p, errors)
}

/// Upstream reports label errors in this order.
fn label_order(label: &str) -> usize {
    [
        ENFORCE_LEVEL_LABEL,
        ENFORCE_VERSION_LABEL,
        AUDIT_LEVEL_LABEL,
        AUDIT_VERSION_LABEL,
        WARN_LEVEL_LABEL,
        WARN_VERSION_LABEL,
    ]
    .iter()
    .position(|l| *l == label)
    .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn policy(labels: &[(&str, &str)], defaults: &Policy) -> (Policy, Vec<LabelError>) {
        let map: BTreeMap<&str, &str> = labels.iter().copied().collect();
        policy_to_evaluate(|k| map.get(k).copied(), defaults)
    }

    #[test]
    fn versions_parse_as_upstream() {
        assert_eq!("latest".parse(), Ok(Version::Latest));
        assert_eq!("v1.0".parse(), Ok(Version::Minor(0)));
        assert_eq!("v1.25".parse(), Ok(Version::Minor(25)));
        for bad in [
            "v1.025", "v2.1", "1.25", "v1.", "v1.x", "Latest", "", "v1.-1",
        ] {
            assert_eq!(bad.parse::<Version>(), Err(ParseError::Version), "{bad}");
        }
        assert!(Version::Latest > Version::Minor(99));
        assert!(Version::Minor(3) < Version::Minor(25));
        assert_eq!(Version::Minor(25).to_string(), "v1.25");
    }

    #[test]
    fn levels_parse_and_order_by_strictness() {
        assert_eq!("baseline".parse(), Ok(Level::Baseline));
        assert_eq!("Baseline".parse::<Level>(), Err(ParseError::Level));
        assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
        assert_eq!(
            ParseError::Level.to_string(),
            "must be one of privileged, baseline, restricted"
        );
        assert_eq!(
            ParseError::Version.to_string(),
            "must be \"latest\" or \"v1.x\""
        );
    }

    #[test]
    fn labels_override_defaults_and_warn_follows_a_stricter_enforce() {
        let (p, errs) = policy(
            &[
                (ENFORCE_LEVEL_LABEL, "baseline"),
                (ENFORCE_VERSION_LABEL, "v1.24"),
            ],
            &Policy::default(),
        );
        assert!(errs.is_empty());
        assert_eq!(p.enforce.to_string(), "baseline:v1.24");
        assert_eq!(p.warn.to_string(), "baseline:v1.24");
        assert_eq!(p.audit, LevelVersion::PRIVILEGED);
        // An explicit warn level is kept.
        let (p, _) = policy(
            &[
                (ENFORCE_LEVEL_LABEL, "restricted"),
                (WARN_LEVEL_LABEL, "privileged"),
            ],
            &Policy::default(),
        );
        assert_eq!(p.warn.level, Level::Privileged);
        // A warn version is kept when warn follows enforce.
        let (p, _) = policy(
            &[
                (ENFORCE_LEVEL_LABEL, "restricted"),
                (WARN_VERSION_LABEL, "v1.30"),
            ],
            &Policy::default(),
        );
        assert_eq!(p.warn.to_string(), "restricted:v1.30");
    }

    #[test]
    fn bad_labels_fail_closed_for_enforce_and_open_for_audit_and_warn() {
        let (p, errs) = policy(
            &[
                (WARN_LEVEL_LABEL, "loud"),
                (ENFORCE_LEVEL_LABEL, "strict"),
                (AUDIT_VERSION_LABEL, "v2"),
            ],
            &Policy::default(),
        );
        assert_eq!(p.enforce.level, Level::Restricted);
        assert_eq!(p.warn.level, Level::Privileged);
        assert_eq!(p.audit.version, Version::Latest);
        let labels: Vec<&str> = errs.iter().map(|e| e.label).collect();
        assert_eq!(
            labels,
            [ENFORCE_LEVEL_LABEL, AUDIT_VERSION_LABEL, WARN_LEVEL_LABEL]
        );
        assert_eq!(errs[0].value, "strict");
    }

    #[test]
    fn policies_compare_privileged_levels_as_equivalent() {
        let a = Policy::default();
        let mut b = Policy::default();
        b.enforce.version = Version::Minor(20);
        assert!(a.equivalent(&b));
        assert!(a.fully_privileged());
        b.warn.level = Level::Baseline;
        assert!(!a.equivalent(&b));
        assert!(!b.fully_privileged());
    }
}

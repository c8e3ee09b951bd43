//! Flag values: parsing one occurrence of a flag by its [`Kind`], folding
//! repeated occurrences the way pflag does (scalars: last wins; lists:
//! append; maps: merge), and printing defaults as `--help` shows them.

use std::collections::BTreeMap;
use std::net::IpAddr;

use apimachinery::go_duration::GoDuration;

use super::sets::spec::Kind;
use super::syntax::{
    check_quantity, parse_bool, parse_csv, parse_float, parse_int, parse_key_values_into,
    parse_uint, PortRange, SyntaxError,
};

/// What `--version` asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum VersionFlag {
    /// Not given (or `--version=false`).
    #[default]
    Off,
    /// `--version`: print the version and exit.
    Print,
    /// `--version=raw`: print detailed version information and exit.
    Raw,
    /// `--version=vX.Y.Z`: report this version instead of the built-in one.
    Override(String),
}

/// A certificate/key pair for SNI serving, with optional domain patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedCertKey {
    pub cert_file: String,
    pub key_file: String,
    /// Domain patterns; empty means "use the names in the certificate".
    pub names: Vec<String>,
}

/// The parsed value of a flag.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    List(Vec<String>),
    Ints(Vec<i32>),
    Duration(GoDuration),
    Ip(Option<IpAddr>),
    Map(BTreeMap<String, String>),
    /// `component -> [key=value, ...]`, the shape of `--feature-gates`.
    Multimap(BTreeMap<String, Vec<String>>),
    CertKeys(Vec<NamedCertKey>),
    PortRange(PortRange),
    Version(VersionFlag),
    Level(u32),
}

impl Value {
    /// The value a flag of `kind` has when its default is empty.
    pub fn zero(kind: Kind) -> Value {
        match kind {
            Kind::Bool | Kind::Help => Value::Bool(false),
            Kind::Int => Value::Int(0),
            Kind::Uint => Value::Uint(0),
            Kind::Float32 | Kind::Float64 => Value::Float(0.0),
            Kind::Str | Kind::Quantity | Kind::VModule => Value::Str(String::new()),
            Kind::StringSlice | Kind::StringArray => Value::List(Vec::new()),
            Kind::Int32Slice => Value::Ints(Vec::new()),
            Kind::Duration => Value::Duration(GoDuration::ZERO),
            Kind::Ip => Value::Ip(None),
            Kind::StringToString | Kind::ConfigurationMap | Kind::MapNoSplit => {
                Value::Map(BTreeMap::new())
            }
            Kind::ColonMultimap => Value::Multimap(BTreeMap::new()),
            Kind::NamedCertKey => Value::CertKeys(Vec::new()),
            Kind::PortRange => Value::PortRange(PortRange { base: 0, size: 0 }),
            Kind::Version => Value::Version(VersionFlag::Off),
            Kind::Level => Value::Level(0),
        }
    }

    /// Parses one occurrence of a flag of `kind`.
    pub fn parse(kind: Kind, raw: &str) -> Result<Value, SyntaxError> {
        Ok(match kind {
            Kind::Bool | Kind::Help => Value::Bool(parse_bool(raw)?),
            Kind::Int => Value::Int(parse_int(raw)?),
            Kind::Uint => Value::Uint(parse_uint(raw)?),
            Kind::Float32 | Kind::Float64 => Value::Float(parse_float(raw)?),
            Kind::Str => Value::Str(raw.to_string()),
            Kind::Quantity => {
                check_quantity(raw)?;
                Value::Str(raw.to_string())
            }
            Kind::VModule => Value::Str(parse_vmodule(raw)?),
            Kind::StringSlice => Value::List(parse_csv(raw)?),
            Kind::StringArray => Value::List(vec![raw.to_string()]),
            Kind::Int32Slice => Value::Ints(parse_int32_list(raw)?),
            Kind::Duration => Value::Duration(raw.parse()?),
            Kind::Ip => {
                Value::Ip(Some(raw.trim().parse().map_err(|_| {
                    SyntaxError(format!("failed to parse IP: {raw:?}"))
                })?))
            }
            Kind::StringToString => Value::Map(parse_string_to_string(raw)?),
            Kind::ConfigurationMap => {
                let mut map = BTreeMap::new();
                parse_key_values_into(raw, true, &mut map)?;
                Value::Map(map)
            }
            Kind::MapNoSplit => {
                let (key, value) = raw
                    .split_once('=')
                    .ok_or_else(|| SyntaxError("malformed pair, expect string=string".into()))?;
                Value::Map(BTreeMap::from([(
                    key.trim().to_string(),
                    value.trim().to_string(),
                )]))
            }
            Kind::ColonMultimap => Value::Multimap(parse_colon_multimap(raw)),
            Kind::NamedCertKey => Value::CertKeys(vec![parse_named_cert_key(raw)?]),
            Kind::PortRange => Value::PortRange(raw.parse()?),
            Kind::Version => Value::Version(parse_version_flag(raw)?),
            Kind::Level => Value::Level(parse_level(raw)?),
        })
    }

    /// Folds the occurrences of a flag in command-line order: the first
    /// occurrence replaces the default, later ones override (scalars),
    /// append (lists) or merge (maps).
    pub fn fold(occurrences: impl IntoIterator<Item = Value>) -> Option<Value> {
        let mut occurrences = occurrences.into_iter();
        let first = occurrences.next()?;
        Some(occurrences.fold(first, |acc, next| acc.merge(next)))
    }

    fn merge(self, next: Value) -> Value {
        match (self, next) {
            (Value::List(mut acc), Value::List(more)) => {
                acc.extend(more);
                Value::List(acc)
            }
            (Value::Ints(mut acc), Value::Ints(more)) => {
                acc.extend(more);
                Value::Ints(acc)
            }
            (Value::CertKeys(mut acc), Value::CertKeys(more)) => {
                acc.extend(more);
                Value::CertKeys(acc)
            }
            (Value::Map(mut acc), Value::Map(more)) => {
                acc.extend(more);
                Value::Map(acc)
            }
            (Value::Multimap(mut acc), Value::Multimap(more)) => {
                for (component, values) in more {
                    acc.entry(component).or_default().extend(values);
                }
                Value::Multimap(acc)
            }
            (_, scalar) => scalar,
        }
    }

    /// The default as pflag prints it in `(default ...)`, or `None` when
    /// pflag considers it the zero value and prints nothing.
    pub fn help_default(&self, kind: Kind) -> Option<String> {
        match self {
            Value::Bool(value) => value.then(|| "true".to_string()),
            Value::Int(0) | Value::Uint(0) | Value::Level(0) => None,
            Value::Int(value) => Some(value.to_string()),
            Value::Uint(value) => Some(value.to_string()),
            Value::Level(value) => Some(value.to_string()),
            Value::Float(value) => (*value != 0.0).then(|| value.to_string()),
            Value::Str(text) if text.is_empty() => None,
            Value::Str(text) if kind == Kind::Str => Some(format!("{text:?}")),
            Value::Str(text) => Some(text.clone()),
            Value::Duration(duration) => {
                (*duration != GoDuration::ZERO).then(|| duration.to_string())
            }
            Value::Ip(ip) => ip.map(|ip| ip.to_string()),
            Value::List(items) => (!items.is_empty()).then(|| format!("[{}]", items.join(","))),
            // pflag only treats a few slice types' "[]" as zero; these print it.
            Value::Ints(items) => Some(format!(
                "[{}]",
                items
                    .iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            Value::CertKeys(items) => Some(format!(
                "[{}]",
                items
                    .iter()
                    .map(|item| format!("{},{}", item.cert_file, item.key_file))
                    .collect::<Vec<_>>()
                    .join(";")
            )),
            Value::Map(map) if kind == Kind::StringToString => Some(format!(
                "[{}]",
                map.iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            Value::Map(map) => (!map.is_empty()).then(|| {
                map.iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            Value::Multimap(map) => (!map.is_empty()).then(|| {
                map.iter()
                    .flat_map(|(component, values)| {
                        values
                            .iter()
                            .map(move |value| format!("{component}:{value}"))
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            Value::PortRange(range) => (range.size != 0).then(|| range.to_string()),
            Value::Version(VersionFlag::Off) => None,
            Value::Version(_) => Some("true".to_string()),
        }
    }
}

fn parse_int32_list(raw: &str) -> Result<Vec<i32>, SyntaxError> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    raw.split(',')
        .map(|item| {
            let value = parse_int(item.trim())?;
            i32::try_from(value).map_err(|_| {
                SyntaxError(format!(
                    "strconv.ParseInt: parsing {item:?}: value out of range"
                ))
            })
        })
        .collect()
}

fn parse_string_to_string(raw: &str) -> Result<BTreeMap<String, String>, SyntaxError> {
    let mut map = BTreeMap::new();
    for pair in parse_csv(raw)? {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| SyntaxError(format!("{pair} must be formatted as key=value")))?;
        map.insert(key.to_string(), value.to_string());
    }
    Ok(map)
}

/// `comp:key=value,key=value` where a missing `comp:` means the default
/// (empty) component.
fn parse_colon_multimap(raw: &str) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pair in raw.split(',').filter(|pair| !pair.is_empty()) {
        let (component, value) = match pair.split_once(':') {
            Some((component, value)) => (component.trim(), value.trim()),
            None => ("", pair.trim()),
        };
        map.entry(component.to_string())
            .or_default()
            .push(value.to_string());
    }
    map
}

fn parse_named_cert_key(raw: &str) -> Result<NamedCertKey, SyntaxError> {
    let (pair, names) = match raw.split_once(':') {
        Some((pair, names)) => {
            let names = names.trim();
            if names.is_empty() {
                return Err(SyntaxError("empty names list is not allowed".into()));
            }
            let names = names
                .split(',')
                .map(|name| name.trim().to_string())
                .collect();
            (pair.trim(), names)
        }
        None => (raw.trim(), Vec::new()),
    };
    match pair.split(',').collect::<Vec<_>>().as_slice() {
        [cert, key] => Ok(NamedCertKey {
            cert_file: cert.trim().to_string(),
            key_file: key.trim().to_string(),
            names,
        }),
        _ => Err(SyntaxError(
            "expected comma separated certificate and key file paths".into(),
        )),
    }
}

fn parse_vmodule(raw: &str) -> Result<String, SyntaxError> {
    for item in raw.split(',').filter(|item| !item.is_empty()) {
        let (pattern, level) = item
            .split_once('=')
            .ok_or_else(|| SyntaxError(format!("{item:?} does not have the pattern=N format")))?;
        if pattern.is_empty() {
            return Err(SyntaxError(format!(
                "{item:?} does not have the pattern=N format"
            )));
        }
        parse_level(level)
            .map_err(|err| SyntaxError(format!("parsing verbosity in {item:?}: {err}")))?;
    }
    Ok(raw.to_string())
}

fn parse_level(raw: &str) -> Result<u32, SyntaxError> {
    raw.parse::<u32>()
        .ok()
        .filter(|level| i32::try_from(*level).is_ok())
        .ok_or_else(|| {
            SyntaxError(format!(
                "strconv.ParseUint: parsing {raw:?}: invalid syntax"
            ))
        })
}

fn parse_version_flag(raw: &str) -> Result<VersionFlag, SyntaxError> {
    if raw == "raw" {
        return Ok(VersionFlag::Raw);
    }
    if let Some(version) = raw.strip_prefix('v') {
        let valid = !version.is_empty()
            && version.split(['.', '-', '+']).next().is_some_and(|major| {
                !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())
            });
        return if valid {
            Ok(VersionFlag::Override(raw.to_string()))
        } else {
            Err(SyntaxError(format!("invalid version {raw:?}")))
        };
    }
    Ok(if parse_bool(raw)? {
        VersionFlag::Print
    } else {
        VersionFlag::Off
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(kind: Kind, raw: &str) -> Value {
        Value::parse(kind, raw).unwrap_or_else(|err| panic!("{raw:?}: {err}"))
    }

    #[test]
    fn lists_append_across_occurrences() {
        let folded = Value::fold([
            parse(Kind::StringSlice, "a,b"),
            parse(Kind::StringSlice, "c"),
        ]);
        assert_eq!(
            folded,
            Some(Value::List(vec!["a".into(), "b".into(), "c".into()]))
        );
        let arrays = Value::fold([
            parse(Kind::StringArray, "x,y"),
            parse(Kind::StringArray, "z"),
        ]);
        assert_eq!(arrays, Some(Value::List(vec!["x,y".into(), "z".into()])));
    }

    #[test]
    fn scalars_take_the_last_occurrence() {
        let folded = Value::fold([parse(Kind::Int, "1"), parse(Kind::Int, "2")]);
        assert_eq!(folded, Some(Value::Int(2)));
        assert_eq!(Value::fold([]), None);
    }

    #[test]
    fn maps_merge_across_occurrences() {
        let folded = Value::fold([
            parse(Kind::ConfigurationMap, "apps/v1=true,batch/v1"),
            parse(Kind::ConfigurationMap, "apps/v1=false"),
        ]);
        let expected = BTreeMap::from([
            ("apps/v1".to_string(), "false".to_string()),
            ("batch/v1".to_string(), String::new()),
        ]);
        assert_eq!(folded, Some(Value::Map(expected)));
        assert!(Value::parse(Kind::StringToString, "novalue").is_err());
        assert!(Value::parse(Kind::MapNoSplit, "a=b,c").is_ok());
    }

    #[test]
    fn feature_gate_multimap_defaults_to_empty_component() {
        let folded = Value::fold([
            parse(Kind::ColonMultimap, "A=true,kube:B=false"),
            parse(Kind::ColonMultimap, "C=true"),
        ]);
        let expected = BTreeMap::from([
            (
                String::new(),
                vec!["A=true".to_string(), "C=true".to_string()],
            ),
            ("kube".to_string(), vec!["B=false".to_string()]),
        ]);
        assert_eq!(folded, Some(Value::Multimap(expected)));
    }

    #[test]
    fn special_kinds_parse() {
        assert_eq!(
            parse(Kind::NamedCertKey, "a.crt,a.key:*.foo.com,foo.com"),
            Value::CertKeys(vec![NamedCertKey {
                cert_file: "a.crt".into(),
                key_file: "a.key".into(),
                names: vec!["*.foo.com".into(), "foo.com".into()],
            }])
        );
        assert!(Value::parse(Kind::NamedCertKey, "only-one").is_err());
        assert_eq!(parse(Kind::Level, "4"), Value::Level(4));
        assert!(Value::parse(Kind::Level, "-1").is_err());
        assert!(Value::parse(Kind::VModule, "foo=2,bar*=3").is_ok());
        assert!(Value::parse(Kind::VModule, "foo").is_err());
        assert_eq!(
            parse(Kind::Version, "true"),
            Value::Version(VersionFlag::Print)
        );
        assert_eq!(
            parse(Kind::Version, "raw"),
            Value::Version(VersionFlag::Raw)
        );
        assert_eq!(
            parse(Kind::Version, "v1.37.0"),
            Value::Version(VersionFlag::Override("v1.37.0".into()))
        );
        assert!(Value::parse(Kind::Version, "vx").is_err());
        assert_eq!(parse(Kind::Int32Slice, "23,29"), Value::Ints(vec![23, 29]));
        assert!(Value::parse(Kind::Ip, "1.2.3").is_err());
        assert!(Value::parse(Kind::Quantity, "2Ki").is_ok());
    }

    #[test]
    fn help_defaults_follow_pflag() {
        let show = |kind: Kind, raw: &str| parse(kind, raw).help_default(kind);
        assert_eq!(show(Kind::Int, "6443").as_deref(), Some("6443"));
        assert_eq!(Value::zero(Kind::Int).help_default(Kind::Int), None);
        assert_eq!(
            show(Kind::Str, "/registry").as_deref(),
            Some("\"/registry\"")
        );
        assert_eq!(show(Kind::Duration, "1m").as_deref(), Some("1m0s"));
        assert_eq!(show(Kind::Bool, "false"), None);
        assert_eq!(show(Kind::Bool, "true").as_deref(), Some("true"));
        assert_eq!(show(Kind::StringSlice, "RS256").as_deref(), Some("[RS256]"));
        assert_eq!(
            show(Kind::PortRange, "30000-32767").as_deref(),
            Some("30000-32767")
        );
        assert_eq!(show(Kind::Ip, "0.0.0.0").as_deref(), Some("0.0.0.0"));
        assert_eq!(show(Kind::Float32, "10").as_deref(), Some("10"));
        let empty_labels = Value::zero(Kind::StringToString);
        assert_eq!(
            empty_labels.help_default(Kind::StringToString).as_deref(),
            Some("[]")
        );
        let empty_runtime = Value::zero(Kind::ConfigurationMap);
        assert_eq!(empty_runtime.help_default(Kind::ConfigurationMap), None);
    }
}

//! The value of every flag after parsing, whether the user gave it, and
//! typed accessors used to build [`super::Options`].

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use super::sets;
use super::sets::spec::{FlagSpec, Kind};
use super::syntax::PortRange;
use super::value::{Value, VersionFlag};
use apimachinery::go_duration::GoDuration;

/// A flag's effective value.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagValue {
    pub value: Value,
    /// Whether the flag appeared on the command line.
    pub explicit: bool,
}

/// A flag table entry does not fit the way the code reads it: a bug in the
/// tables, reported instead of panicking.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("internal error: flag --{flag} {problem}")]
pub struct FlagTableError {
    pub flag: String,
    pub problem: &'static str,
}

/// The default `--data-dir`: `kube-apiserver` under the user's data
/// directory (e.g. `~/.local/share/kube-apiserver`).
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("/var/lib"))
        .join("kube-apiserver")
}

/// The default value of `spec`; `data_dir` stands in for `--data-dir`'s.
pub fn default_value(spec: &FlagSpec, data_dir: &str) -> Result<Value, FlagTableError> {
    if spec.name == sets::generic::DATA_DIR {
        return Ok(Value::Str(data_dir.to_string()));
    }
    if spec.default.is_empty() {
        return Ok(Value::zero(spec.kind));
    }
    Value::parse(spec.kind, spec.default).map_err(|_| FlagTableError {
        flag: spec.name.to_string(),
        problem: "has a default that does not parse",
    })
}

/// Every flag's value, by long name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlagValues {
    values: BTreeMap<&'static str, FlagValue>,
}

impl FlagValues {
    /// Records the value of `name`.
    pub fn insert(&mut self, name: &'static str, value: FlagValue) {
        self.values.insert(name, value);
    }

    /// The value of `name`, if such a flag exists.
    pub fn get(&self, name: &str) -> Option<&FlagValue> {
        self.values.get(name)
    }

    /// Gives `name` a value unless the command line set it (a default that
    /// depends on what startup generated, such as the front-proxy PKI).
    pub fn default_to(&mut self, name: &'static str, value: Value) {
        if !self.explicit(name) {
            let explicit = false;
            self.values.insert(name, FlagValue { value, explicit });
        }
    }

    /// Whether `name` appeared on the command line.
    pub fn explicit(&self, name: &str) -> bool {
        self.values.get(name).is_some_and(|flag| flag.explicit)
    }

    fn value(&self, name: &str) -> Result<&Value, FlagTableError> {
        self.values
            .get(name)
            .map(|flag| &flag.value)
            .ok_or_else(|| mismatch(name, "is not defined"))
    }
}

fn mismatch(name: &str, problem: &'static str) -> FlagTableError {
    FlagTableError {
        flag: name.to_string(),
        problem,
    }
}

/// Generates a typed accessor for values of one shape.
macro_rules! accessor {
    ($(#[$doc:meta])* $fn_name:ident -> $ty:ty, $pattern:pat => $out:expr) => {
        $(#[$doc])*
        pub fn $fn_name(&self, name: &str) -> Result<$ty, FlagTableError> {
            match self.value(name)? {
                $pattern => Ok($out),
                _ => Err(mismatch(name, concat!("is not read as ", stringify!($fn_name)))),
            }
        }
    };
}

impl FlagValues {
    accessor!(/// A boolean flag.
        bool -> bool, Value::Bool(value) => *value);
    accessor!(/// A signed integer flag.
        int -> i64, Value::Int(value) => *value);
    accessor!(/// A string flag.
        string -> String, Value::Str(value) => value.clone());
    accessor!(/// A list flag.
        list -> Vec<String>, Value::List(value) => value.clone());
    accessor!(/// A duration flag.
        duration -> GoDuration, Value::Duration(value) => *value);
    accessor!(/// An IP flag.
        ip -> Option<IpAddr>, Value::Ip(value) => *value);
    accessor!(/// A `key=value` map flag.
        map -> BTreeMap<String, String>, Value::Map(value) => value.clone());
    accessor!(/// A `component:key=value` flag.
        multimap -> BTreeMap<String, Vec<String>>, Value::Multimap(value) => value.clone());
    accessor!(/// A port range flag.
        port_range -> PortRange, Value::PortRange(value) => *value);
    accessor!(/// A verbosity flag.
        level -> u32, Value::Level(value) => *value);
    accessor!(/// The version flag.
        version -> VersionFlag, Value::Version(value) => value.clone());

    /// An optional path flag: empty means unset.
    pub fn path(&self, name: &str) -> Result<Option<PathBuf>, FlagTableError> {
        let text = self.string(name)?;
        Ok((!text.is_empty()).then(|| PathBuf::from(text)))
    }
}

/// Whether a flag of `kind` carries a value worth recording (help does not).
pub fn has_value(kind: Kind) -> bool {
    kind != Kind::Help
}

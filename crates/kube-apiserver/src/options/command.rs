//! Turns the flag tables into a clap [`Command`], renders `--help` the way
//! upstream's pflag-based help looks, and collects parsed values.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgMatches, Command};

use super::feature_gates;
use super::flags::{default_value, has_value, FlagTableError, FlagValue, FlagValues};
use super::sets::spec::{FlagSpec, Kind};
use super::sets::{self, SETS};
use super::support;
use super::value::Value;

/// The program name shown in usage.
pub const NAME: &str = "kube-apiserver";

/// The description printed above the usage line.
pub const DESCRIPTION: &str =
    "The Kubernetes API server validates and configures data for the API \
objects (pods, services, replication controllers and the rest), serves the REST \
operations on them, and is the front end to the cluster's shared state through \
which every other component interacts.";

/// Builds the command line parser. `data_dir` is the default `--data-dir`.
pub fn command(data_dir: &str) -> Command {
    Command::new(NAME)
        .about(DESCRIPTION)
        .override_usage(format!("{NAME} [flags]"))
        .help_template("{about}\n\nUsage:\n  {usage}{after-help}")
        .after_help(render_sections(data_dir))
        .term_width(0)
        .disable_help_flag(true)
        .disable_version_flag(true)
        .args(sets::all().map(|(section, spec)| arg(section.heading(), spec)))
}

fn arg(heading: &'static str, spec: &FlagSpec) -> Arg {
    let mut arg = Arg::new(spec.name)
        .long(spec.name)
        .help(spec.help)
        .help_heading(heading)
        .hide(spec.hidden);
    if let Some(letter) = spec.short {
        arg = arg.short(letter);
    }
    if spec.kind == Kind::Help {
        return arg.action(ArgAction::Help);
    }
    arg = arg
        .action(ArgAction::Append)
        .value_name(spec.kind.type_name())
        .value_parser(KindParser(spec.kind))
        .allow_hyphen_values(true);
    match spec.kind.value_when_bare() {
        // pflag booleans take their value only after `=`.
        Some(bare) => arg
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value(bare),
        None => arg.num_args(1),
    }
}

/// Parses one occurrence of a flag by its kind, with pflag-like errors.
#[derive(Clone)]
struct KindParser(Kind);

impl TypedValueParser for KindParser {
    type Value = Value;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        raw: &OsStr,
    ) -> Result<Value, clap::Error> {
        let name = arg.and_then(Arg::get_long).unwrap_or_default();
        let text = raw.to_str().ok_or_else(|| {
            clap::Error::raw(
                ErrorKind::InvalidUtf8,
                format!("invalid UTF-8 in the value of \"--{name}\"\n"),
            )
            .with_cmd(cmd)
        })?;
        Value::parse(self.0, text).map_err(|err| {
            clap::Error::raw(
                ErrorKind::InvalidValue,
                format!("invalid argument {text:?} for \"--{name}\" flag: {err}\n"),
            )
            .with_cmd(cmd)
        })
    }
}

/// Reads every flag's value out of `matches`, defaults included.
pub fn collect(matches: &ArgMatches, data_dir: &str) -> Result<FlagValues, FlagTableError> {
    let mut values = FlagValues::default();
    for (_, spec) in sets::all().filter(|(_, spec)| has_value(spec.kind)) {
        let given = matches
            .try_get_many::<Value>(spec.name)
            .map_err(|_| FlagTableError {
                flag: spec.name.to_string(),
                problem: "is not parsed into a flag value",
            })?
            .and_then(|occurrences| Value::fold(occurrences.cloned()));
        let flag = match given {
            Some(value) => FlagValue {
                value,
                explicit: true,
            },
            None => FlagValue {
                value: default_value(spec, data_dir)?,
                explicit: false,
            },
        };
        values.insert(spec.name, flag);
    }
    Ok(values)
}

/// Rewrites `--some_flag` to `--some-flag`, as upstream's flag name
/// normalization accepts both; stops at a bare `--`.
pub fn normalize_flag_names<I, T>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let mut done = false;
    args.into_iter()
        .map(|arg| {
            let arg: OsString = arg.into();
            if done {
                return arg;
            }
            match arg.to_str() {
                Some("--") => {
                    done = true;
                    arg
                }
                Some(text) if text.starts_with("--") && text.contains('_') => {
                    let (name, rest) = text.split_at(text.find('=').unwrap_or(text.len()));
                    OsString::from(format!("{}{rest}", name.replace('_', "-")))
                }
                _ => arg,
            }
        })
        .collect()
}

/// Renders the named flag sets like upstream's help: a heading per set,
/// flags sorted by name, descriptions aligned in one column, defaults in
/// `(default ...)` and deprecation notes appended. Lines are not wrapped.
pub fn render_sections(data_dir: &str) -> String {
    let mut out = String::new();
    for (index, (section, flags)) in SETS.iter().enumerate() {
        if flags.is_empty() {
            continue;
        }
        if index > 0 {
            out.push('\n');
        }
        out.push_str(section.heading());
        out.push_str(":\n\n");
        let mut visible: Vec<&FlagSpec> = flags.iter().filter(|spec| !spec.hidden).collect();
        visible.sort_by_key(|spec| spec.name);
        let rows: Vec<(String, String)> = visible
            .iter()
            .map(|spec| (flag_column(spec), description(spec, data_dir)))
            .collect();
        let width = rows.iter().map(|(left, _)| left.len()).max().unwrap_or(0);
        let indent = " ".repeat(width + 3);
        for (left, text) in rows {
            let text = text.replace('\n', &format!("\n{indent}"));
            // Writing to a String cannot fail.
            let _ = writeln!(out, "{left:width$}   {text}");
        }
    }
    out
}

fn flag_column(spec: &FlagSpec) -> String {
    let mut column = match spec.short {
        Some(letter) => format!("  -{letter}, --{}", spec.name),
        None => format!("      --{}", spec.name),
    };
    let type_name = spec.kind.type_name();
    if !type_name.is_empty() {
        column.push(' ');
        column.push_str(type_name);
    }
    // pflag shows the value a bare non-boolean flag takes.
    if spec.kind == Kind::Version {
        column.push_str("[=true]");
    }
    column
}

fn description(spec: &FlagSpec, data_dir: &str) -> String {
    let mut text = spec.help.to_string();
    if spec.name == sets::generic::FEATURE_GATES {
        text.push('\n');
        text.push_str(&feature_gates::help_listing());
    }
    if let Some(note) = support::support(spec.name)
        .help_note()
        .filter(|_| spec.kind != Kind::Help)
    {
        let _ = write!(text, " {note}");
    }
    if let Some(default) = default_value(spec, data_dir)
        .ok()
        .and_then(|value| value.help_default(spec.kind))
    {
        let _ = write!(text, " (default {default})");
    }
    if let Some(note) = spec.deprecated {
        let _ = write!(text, " (DEPRECATED: {note})");
    }
    text
}

//! Every flag does what `--help` says: the built binary's help is parsed,
//! and for each flag its documented default must be the value the options
//! take when it is not given, all documented defaults given together must
//! start a server (none refused as unsupported), and a flag the server does
//! not honour at every value must say so in its help: "No-op here.",
//! "Only the default is built here." (allowed for a non-zero default only
//! when that default is declared in effect) or "Not built here: …" with
//! what the server does instead.

use std::process::Command;

use kube_apiserver::options::support::{support, Support};
use kube_apiserver::options::{Options, Value};

/// One flag as `--help` shows it.
#[derive(Debug)]
struct HelpFlag {
    name: String,
    description: String,
    /// The text of `(default …)`, if shown.
    default: Option<String>,
}

fn help_text() -> String {
    let out = Command::new(crate::harness::binary())
        .arg("--help")
        .output()
        .expect("kube-apiserver runs");
    assert!(out.status.success(), "--help exits 0");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// Reads pflag's layout: `  -v, --name type   description (default x)`,
/// continuation lines indented further.
fn parse_help(help: &str) -> Vec<HelpFlag> {
    let mut flags: Vec<HelpFlag> = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        let flag_part = trimmed
            .strip_prefix("--")
            .or_else(|| trimmed.get(4..).and_then(|rest| rest.strip_prefix("--")));
        let starts_flag = line.starts_with("  ") && trimmed.starts_with('-');
        match flag_part.filter(|_| starts_flag) {
            Some(rest) => {
                let name = rest.split([' ', '[']).next().unwrap_or_default().to_owned();
                let description = rest
                    .split_once("   ")
                    .map(|(_, d)| d.trim().to_owned())
                    .unwrap_or_default();
                flags.push(HelpFlag {
                    name,
                    description,
                    default: None,
                });
            }
            None => {
                if let Some(last) = flags.last_mut().filter(|_| line.starts_with("   ")) {
                    last.description.push('\n');
                    last.description.push_str(trimmed);
                }
            }
        }
    }
    for flag in &mut flags {
        let text = match flag.description.rfind(" (DEPRECATED: ") {
            Some(at) => &flag.description[..at],
            None => flag.description.as_str(),
        };
        flag.default = text
            .strip_suffix(')')
            .and_then(|t| t.rfind(" (default ").map(|at| t[at + 10..].to_owned()));
    }
    flags
}

/// The command-line form of a documented default (`"x"` → `x`,
/// `[a,b]` → `a,b`).
fn as_argument(default: &str) -> String {
    let unquoted = default.strip_prefix('"').and_then(|d| d.strip_suffix('"'));
    let unbracketed = default.strip_prefix('[').and_then(|d| d.strip_suffix(']'));
    unquoted.or(unbracketed).unwrap_or(default).to_owned()
}

fn is_zero(default: &Option<String>) -> bool {
    matches!(
        default.as_deref(),
        None | Some("[]" | "\"\"" | "0" | "false")
    )
}

fn value_of(options: &Options, name: &str) -> Value {
    options
        .flags
        .get(name)
        .unwrap_or_else(|| panic!("--{name} is in help but not in the flag table"))
        .value
        .clone()
}

#[test]
fn every_documented_default_is_in_effect() {
    let flags = parse_help(&help_text());
    assert!(flags.len() > 150, "only {} flags parsed", flags.len());
    let none = Options::parse_from(["kube-apiserver"]).expect("no flags parse");
    let mut problems = Vec::new();
    let mut all_defaults = vec!["kube-apiserver".to_owned()];
    for flag in flags.iter().filter(|f| f.name != "help") {
        let support = support(&flag.name);
        if let Some(note) = support.help_note() {
            if !flag.description.contains(&note) {
                problems.push(format!("--{}: help lacks {note:?}", flag.name));
            }
        }
        if support == Support::Inert && !is_zero(&flag.default) {
            problems.push(format!(
                "--{}: not built, yet its help promises default {}",
                flag.name,
                flag.default.as_deref().unwrap_or_default()
            ));
        }
        // An empty list cannot be written as an argument of every kind
        // (`--tls-sni-cert-key=` is refused, as by pflag).
        let Some(default) = flag.default.as_ref().filter(|d| *d != "[]") else {
            continue;
        };
        let argument = format!("--{}={}", flag.name, as_argument(default));
        match Options::parse_from(["kube-apiserver", argument.as_str()]) {
            Ok(given) if value_of(&given, &flag.name) == value_of(&none, &flag.name) => {}
            Ok(given) => problems.push(format!(
                "--{}: documented default {default} parses to {:?}, but the default is {:?}",
                flag.name,
                value_of(&given, &flag.name),
                value_of(&none, &flag.name)
            )),
            Err(e) => problems.push(format!("{argument}: {e}")),
        }
        all_defaults.push(argument);
    }
    if let Ok(given) = Options::parse_from(&all_defaults) {
        let completed = given.complete();
        let mut refused = completed.validate();
        refused.extend(completed.unsupported());
        problems.extend(refused.iter().map(|e| format!("all defaults given: {e}")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

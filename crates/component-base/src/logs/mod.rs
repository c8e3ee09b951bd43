//! Logging as upstream's `k8s.io/component-base/logs` (its `api/v1`
//! `LoggingConfiguration`, validation and apply) over `k8s.io/klog/v2`:
//! call sites use the `tracing` macros; [`LoggingConfiguration::apply`]
//! installs a layer that writes klog's text format ([`klog`]) or the JSON
//! format ([`json`]) to stderr, filtered by `-v`/`--vmodule`
//! ([`verbosity`]), with `--log-flush-frequency`'s flush daemon.
//! [`glog_setter`] is what `PUT /debug/flags/v` calls.

mod entry;
pub mod json;
pub mod klog;
mod layer;
pub mod verbosity;

use std::time::Duration;

use tracing_subscriber::layer::SubscriberExt;

pub use entry::{Entry, Severity, Value};
pub use layer::{LogLayer, Output};

/// The feature gate the JSON format needs (upstream's
/// `logsapi.LoggingBetaOptions`, on by default).
pub const JSON_FORMAT_GATE: &str = "LoggingBetaOptions";

/// `--logging-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// Upstream's `LoggingConfiguration` as the flags set it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggingConfiguration {
    /// `--logging-format` as given.
    pub format: String,
    /// `--log-flush-frequency`.
    pub flush_frequency: Duration,
    /// `-v`.
    pub verbosity: u32,
    /// `--vmodule` as given.
    pub vmodule: String,
}

impl LoggingConfiguration {
    /// Upstream's `Validate`: each problem as (flag, message), with
    /// upstream's field-error wording. `json_enabled` is whether
    /// [`JSON_FORMAT_GATE`] is on.
    pub fn validate(&self, json_enabled: bool) -> Vec<(&'static str, String)> {
        let mut errors = Vec::new();
        let format = &self.format;
        if format != "text" && !self.vmodule.is_empty() {
            errors.push((
                "logging-format",
                format!("format: Invalid value: {format:?}: Non-default format doesn't honor flag: vmodule"),
            ));
        }
        match format.as_str() {
            "text" => {}
            "json" if !json_enabled => errors.push((
                "logging-format",
                format!("format: Forbidden: Log format json is disabled, see {JSON_FORMAT_GATE} feature"),
            )),
            "json" => {}
            _ => errors.push((
                "logging-format",
                format!("format: Invalid value: {format:?}: Unsupported log format"),
            )),
        }
        if !self.vmodule.is_empty() && !format.is_empty() && format != "text" {
            errors.push((
                "vmodule",
                "vmodule: Forbidden: Only supported for text log format".into(),
            ));
        }
        if let Err(e) = verbosity::parse_vmodule(&self.vmodule) {
            errors.push(("vmodule", e));
        }
        errors
    }

    /// Upstream's `apply`: sets the verbosity and vmodule, installs the
    /// format's writer on stderr as the global subscriber (forwarding the
    /// `log` crate's records too) and starts the flush daemon. Call once,
    /// after [`Self::validate`] found nothing.
    pub fn apply(&self) -> Result<Output, String> {
        let format = if self.format == "json" {
            Format::Json
        } else {
            Format::Text
        };
        verbosity::set_verbosity(self.verbosity);
        verbosity::set_vmodule(verbosity::parse_vmodule(&self.vmodule)?);
        let output = Output::new(Box::new(std::io::stderr()));
        let subscriber = tracing_subscriber::registry().with(LogLayer::new(format, output.clone()));
        tracing::subscriber::set_global_default(subscriber).map_err(|e| e.to_string())?;
        tracing_log::LogTracer::init().map_err(|e| e.to_string())?;
        output.start_flush_daemon(self.flush_frequency);
        Ok(output)
    }
}

/// Upstream's `logs.GlogSetter`: sets the verbosity from `val` (a
/// `/debug/flags/v` body), answering the text upstream answers.
pub fn glog_setter(val: &str) -> Result<String, String> {
    let level = val
        .parse::<u32>()
        .ok()
        .filter(|v| i32::try_from(*v).is_ok())
        .ok_or_else(|| {
            format!(
                "failed set klog.logging.verbosity {val}: strconv.ParseUint: parsing {}: invalid syntax",
                klog::quoted(val)
            )
        })?;
    verbosity::set_verbosity(level);
    Ok(format!("successfully set klog.logging.verbosity to {val}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(format: &str, vmodule: &str) -> LoggingConfiguration {
        LoggingConfiguration {
            format: format.into(),
            flush_frequency: Duration::from_secs(5),
            verbosity: 0,
            vmodule: vmodule.into(),
        }
    }

    #[test]
    fn formats_validate_as_upstream() {
        assert!(config("text", "httplog=3").validate(true).is_empty());
        assert!(config("json", "").validate(true).is_empty());
        assert_eq!(
            config("json", "").validate(false),
            [(
                "logging-format",
                "format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature"
                    .to_string()
            )]
        );
        assert_eq!(
            config("xml", "").validate(true),
            [(
                "logging-format",
                "format: Invalid value: \"xml\": Unsupported log format".to_string()
            )]
        );
        let errors = config("json", "x=1").validate(true);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(errors[1].0, "vmodule");
    }

    #[test]
    fn glog_setter_refuses_what_klog_refuses() {
        assert_eq!(
            glog_setter("x").unwrap_err(),
            "failed set klog.logging.verbosity x: strconv.ParseUint: parsing \"x\": invalid syntax"
        );
        assert!(glog_setter("-1").is_err());
        assert!(glog_setter("5\n").is_err());
    }
}

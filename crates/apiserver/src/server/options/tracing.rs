//! `--tracing-config-file` (upstream's `TracingOptions` in
//! `k8s.io/apiserver/pkg/server/options/tracing.go`): the file must exist
//! ([`TracingOptions::validate`]), is read and validated
//! ([`read_tracing_configuration`]), and becomes the process's tracer
//! provider with upstream's resource: `service.name` `apiserver` and the
//! server's ID as `service.instance.id` ([`TracingOptions::apply`]).

use std::path::PathBuf;

use apimachinery::field_errors::aggregate_message;
use component_base::tracing::api::v1::TracingConfiguration;
use component_base::tracing::{new_provider, set_provider, ProviderError};
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::apis::apiserver::tracing::decode;

/// The `service.name` of the API server's spans (upstream's `apiserverService`).
pub const APISERVER_SERVICE: &str = "apiserver";

/// Why tracing cannot start, worded as upstream.
#[derive(Debug, thiserror::Error)]
pub enum TracingError {
    #[error("failed to read tracing config: {0}")]
    Read(String),
    #[error("failed to validate tracing configuration: {0}")]
    Invalid(String),
    #[error("{0}")]
    Provider(#[from] ProviderError),
}

/// `--tracing-config-file`.
#[derive(Debug, Clone, Default)]
pub struct TracingOptions {
    pub config_file: Option<PathBuf>,
}

impl TracingOptions {
    /// Upstream's `Validate`: the file, when given, must exist.
    pub fn validate(&self) -> Vec<String> {
        match &self.config_file {
            Some(path) if !path.exists() => vec![format!(
                "tracing-config-file {} does not exist",
                path.display()
            )],
            _ => Vec::new(),
        }
    }

    /// Upstream's `ApplyTo`: reads and validates the file and makes its
    /// provider the process's; `None` without a file (spans stay no-ops,
    /// incoming trace contexts still pass on). Runs inside a Tokio runtime.
    pub fn apply(&self, instance_id: &str) -> Result<Option<SdkTracerProvider>, TracingError> {
        let Some(path) = &self.config_file else {
            return Ok(None);
        };
        let config = read_tracing_configuration(path).map_err(TracingError::Read)?;
        if let Some(message) = aggregate_message(&config.validate(None)) {
            return Err(TracingError::Invalid(message));
        }
        let resource = vec![
            KeyValue::new("service.name", APISERVER_SERVICE),
            KeyValue::new("service.instance.id", instance_id.to_owned()),
        ];
        let provider = new_provider(&config, resource)?;
        set_provider(provider.clone());
        Ok(Some(provider))
    }
}

/// Upstream's `ReadTracingConfiguration`, with its messages.
pub fn read_tracing_configuration(path: &std::path::Path) -> Result<TracingConfiguration, String> {
    let data = std::fs::read(path).map_err(|e| {
        format!(
            "unable to read tracing configuration from {:?}: {}",
            path.display().to_string(),
            go_io_error(&e, path)
        )
    })?;
    decode(&data).map_err(|e| format!("unable to decode tracing configuration data: {e}"))
}

/// Go's `os.ReadFile` error text.
fn go_io_error(e: &std::io::Error, path: &std::path::Path) -> String {
    let reason = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        _ => e.to_string(),
    };
    format!("open {}: {reason}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_fails_validation_as_upstream() {
        let options = TracingOptions {
            config_file: Some(PathBuf::from("/nonexistent/tracing.yaml")),
        };
        assert_eq!(
            options.validate(),
            ["tracing-config-file /nonexistent/tracing.yaml does not exist"]
        );
        assert!(TracingOptions::default().validate().is_empty());
    }

    #[test]
    fn invalid_configuration_is_refused_with_upstreams_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tracing.yaml");
        std::fs::write(
            &path,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: -1\n",
        )
        .unwrap();
        let options = TracingOptions {
            config_file: Some(path),
        };
        let err = options.apply("apiserver-test").unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to validate tracing configuration: samplingRatePerMillion: Invalid value: -1: sampling rate must be positive"
        );
    }

    #[test]
    fn unreadable_file_is_reported_as_upstream() {
        let err =
            read_tracing_configuration(std::path::Path::new("/nonexistent/t.yaml")).unwrap_err();
        assert_eq!(
            err,
            "unable to read tracing configuration from \"/nonexistent/t.yaml\": open /nonexistent/t.yaml: no such file or directory"
        );
    }
}

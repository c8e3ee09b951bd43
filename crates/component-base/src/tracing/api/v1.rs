//! `TracingConfiguration` and its validation (upstream's
//! `k8s.io/component-base/tracing/api/v1`: `types.go` and `config.go`),
//! the part of a component's configuration file that says where spans go
//! and how many are sampled.

use apimachinery::field_errors::{FieldError, Path};
use serde::Deserialize;

/// The most `samplingRatePerMillion` may be: every span.
pub const MAX_SAMPLING_RATE_PER_MILLION: i32 = 1_000_000;

/// Where spans are exported and how many are sampled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TracingConfiguration {
    /// The OTLP/gRPC collector; unset means the OTLP default,
    /// `localhost:4317`. The connection is insecure (no TLS), as upstream's.
    pub endpoint: Option<String>,
    /// Spans sampled per million; unset or 0 samples only what a sampled
    /// parent asks for.
    pub sampling_rate_per_million: Option<i32>,
}

impl TracingConfiguration {
    /// Upstream's `ValidateTracingConfiguration`, with its field paths
    /// (under `path`, or at the root when `None`) and messages.
    pub fn validate(&self, path: Option<&Path>) -> Vec<FieldError> {
        let field = |name: &str| path.map_or_else(|| Path::new(name), |p| p.child(name));
        let mut errors = Vec::new();
        if let Some(rate) = self.sampling_rate_per_million {
            let path = field("samplingRatePerMillion");
            if rate < 0 {
                errors.push(FieldError::invalid(
                    &path,
                    rate,
                    "sampling rate must be positive",
                ));
            }
            if rate > MAX_SAMPLING_RATE_PER_MILLION {
                errors.push(FieldError::invalid(
                    &path,
                    rate,
                    "sampling rate per million must be less than or equal to one million",
                ));
            }
        }
        if let Some(endpoint) = &self.endpoint {
            if let Err(detail) = endpoint_scheme(endpoint) {
                let full = with_default_scheme(endpoint);
                errors.push(FieldError::invalid(&field("endpoint"), full, detail));
            }
        }
        errors
    }
}

/// The endpoint with gRPC's default `dns://` scheme when it names none,
/// as upstream validates it.
pub fn with_default_scheme(endpoint: &str) -> String {
    if endpoint.contains("//") {
        endpoint.to_owned()
    } else {
        format!("dns://{endpoint}")
    }
}

/// The endpoint's gRPC naming scheme (`dns`, `unix` or `unix-abstract`),
/// or upstream's message for any other.
pub fn endpoint_scheme(endpoint: &str) -> Result<&'static str, String> {
    let full = with_default_scheme(endpoint);
    let scheme = full.split_once(':').map_or("", |(scheme, _)| scheme);
    match scheme.to_ascii_lowercase().as_str() {
        "dns" => Ok("dns"),
        "unix" => Ok("unix"),
        "unix-abstract" => Ok("unix-abstract"),
        other => Err(format!(
            "unsupported scheme: {other}.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(config: &TracingConfiguration) -> Vec<String> {
        config
            .validate(None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn defaults_and_bounds_are_valid() {
        for rate in [None, Some(0), Some(1), Some(1_000_000)] {
            let config = TracingConfiguration {
                endpoint: None,
                sampling_rate_per_million: rate,
            };
            assert!(messages(&config).is_empty(), "{rate:?}");
        }
    }

    #[test]
    fn sampling_rate_out_of_range_is_refused_as_upstream() {
        let negative = TracingConfiguration {
            sampling_rate_per_million: Some(-10),
            ..Default::default()
        };
        assert_eq!(
            messages(&negative),
            ["samplingRatePerMillion: Invalid value: -10: sampling rate must be positive"]
        );
        let large = TracingConfiguration {
            sampling_rate_per_million: Some(1_000_001),
            ..Default::default()
        };
        assert_eq!(
            messages(&large),
            ["samplingRatePerMillion: Invalid value: 1000001: sampling rate per million must be less than or equal to one million"]
        );
    }

    #[test]
    fn endpoints_take_grpc_naming_schemes() {
        for ok in [
            "localhost:4317",
            "dns:///collector:4317",
            "unix:///var/run/otel.sock",
            "unix-abstract:otel",
        ] {
            let config = TracingConfiguration {
                endpoint: Some(ok.into()),
                ..Default::default()
            };
            assert!(messages(&config).is_empty(), "{ok}");
        }
        let bad = TracingConfiguration {
            endpoint: Some("https://collector:4317".into()),
            ..Default::default()
        };
        assert_eq!(
            messages(&bad),
            ["endpoint: Invalid value: \"https://collector:4317\": unsupported scheme: https.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md"]
        );
    }

    #[test]
    fn paths_nest_under_a_parent() {
        let config = TracingConfiguration {
            sampling_rate_per_million: Some(-1),
            ..Default::default()
        };
        let errors = config.validate(Some(&Path::new("tracing")));
        assert!(errors[0]
            .to_string()
            .starts_with("tracing.samplingRatePerMillion: "));
    }
}

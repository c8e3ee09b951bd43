//! The tracer provider a component exports its spans with (upstream's
//! `NewProvider` in `k8s.io/component-base/tracing/utils.go`): OTLP over
//! insecure gRPC to the configured endpoint, spans batched, sampled
//! parent-based with `samplingRatePerMillion` for root spans (never when
//! unset or 0), and the component's resource attributes.

use std::path::PathBuf;

use hyper_util::rt::TokioIo;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tonic::transport::{Endpoint, Uri};

use super::api::v1::{endpoint_scheme, TracingConfiguration};

/// Why no provider could be built.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("invalid tracing endpoint {endpoint:?}: {reason}")]
    Endpoint { endpoint: String, reason: String },
    #[error("{0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// Builds the provider for `config`, with `resource` (e.g. `service.name`)
/// on every span. Must run inside a Tokio runtime: the gRPC channel
/// connects lazily on it.
pub fn new_provider(
    config: &TracingConfiguration,
    resource: Vec<KeyValue>,
) -> Result<SdkTracerProvider, ProviderError> {
    let builder = SpanExporter::builder().with_tonic();
    let exporter = match config.endpoint.as_deref().map(target).transpose()? {
        None => builder.build()?,
        Some(Target::Http(uri)) => builder.with_endpoint(uri).build()?,
        Some(Target::Unix(path)) => builder.with_channel(unix_channel(path)).build()?,
    };
    let root = match config.sampling_rate_per_million {
        Some(rate) if rate > 0 => Sampler::TraceIdRatioBased(f64::from(rate) / 1_000_000.0),
        _ => Sampler::AlwaysOff,
    };
    Ok(SdkTracerProvider::builder()
        .with_sampler(Sampler::ParentBased(Box::new(root)))
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder_empty().with_attributes(resource).build())
        .build())
}

/// Where a gRPC endpoint (gRPC's naming: `host:port`, `dns:[//authority/]host:port`,
/// `unix:path`, `unix:///path`) connects.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// An `http://host:port` URI (the connection is insecure, as upstream's).
    Http(String),
    Unix(PathBuf),
}

fn target(endpoint: &str) -> Result<Target, ProviderError> {
    let invalid = |reason: String| ProviderError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    endpoint_scheme(endpoint).map_err(invalid)?;
    let (scheme, rest) = match endpoint.split_once(':') {
        Some((scheme, rest))
            if ["dns", "unix", "unix-abstract"].contains(&scheme.to_ascii_lowercase().as_str()) =>
        {
            (scheme.to_ascii_lowercase(), rest)
        }
        _ => ("dns".to_owned(), endpoint),
    };
    match scheme.as_str() {
        "unix" => {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            Ok(Target::Unix(PathBuf::from(path)))
        }
        "unix-abstract" => Err(invalid(
            "abstract unix sockets are not supported yet by this server".into(),
        )),
        _ => {
            // `dns://authority/host:port` names a DNS server: the host is
            // what follows it.
            let host = match rest.strip_prefix("//") {
                Some(with_authority) => with_authority
                    .split_once('/')
                    .map_or(with_authority, |(_, host)| host),
                None => rest,
            };
            let uri = format!("http://{host}");
            uri.parse::<Uri>().map_err(|e| invalid(e.to_string()))?;
            Ok(Target::Http(uri))
        }
    }
}

/// A lazily connecting channel to a unix socket.
fn unix_channel(path: PathBuf) -> tonic::transport::Channel {
    // The URI is required by the builder and unused by the connector.
    Endpoint::from_static("http://localhost").connect_with_connector_lazy(tower::service_fn(
        move |_: Uri| {
            let path = path.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_map_to_grpc_targets() {
        let http = |s: &str| Target::Http(s.to_owned());
        let unix = |s: &str| Target::Unix(PathBuf::from(s));
        for (endpoint, expected) in [
            ("localhost:4317", http("http://localhost:4317")),
            ("10.0.0.1:4317", http("http://10.0.0.1:4317")),
            ("dns:///collector:4317", http("http://collector:4317")),
            (
                "dns://8.8.8.8/collector:4317",
                http("http://collector:4317"),
            ),
            ("dns:collector:4317", http("http://collector:4317")),
            ("unix:///run/otel.sock", unix("/run/otel.sock")),
            ("unix:otel.sock", unix("otel.sock")),
        ] {
            assert_eq!(target(endpoint).unwrap(), expected, "{endpoint}");
        }
        assert!(target("unix-abstract:otel").is_err());
        assert!(target("https://collector:4317").is_err());
    }
}

//! The `--tracing-config-file` file: `TracingConfiguration` of
//! `apiserver.config.k8s.io` v1, v1beta1 or v1alpha1 (upstream's
//! `k8s.io/apiserver/pkg/apis/apiserver` types, which embed component-base's
//! `TracingConfiguration`), decoded strictly from YAML or JSON as upstream's
//! `UniversalDecoder` with `EnableStrict` does.

use component_base::tracing::api::v1::TracingConfiguration;
use serde_json::{Map, Value};

const GROUP: &str = "apiserver.config.k8s.io";
const VERSIONS: &[&str] = &["v1", "v1beta1", "v1alpha1"];
const KIND: &str = "TracingConfiguration";
const FIELDS: &[&str] = &["apiVersion", "kind", "endpoint", "samplingRatePerMillion"];

/// Decodes a tracing configuration file; the error is upstream's decoder's
/// message.
pub fn decode(data: &[u8]) -> Result<TracingConfiguration, String> {
    let text = String::from_utf8_lossy(data);
    let value: Value = serde_yaml::from_slice(data).map_err(|e| e.to_string())?;
    let Value::Object(mut fields) = value else {
        return Err(format!("Object 'Kind' is missing in '{text}'"));
    };
    let kind = take_string(&mut fields, "kind");
    if kind.is_empty() {
        return Err(format!("Object 'Kind' is missing in '{text}'"));
    }
    let api_version = take_string(&mut fields, "apiVersion");
    if api_version.is_empty() {
        return Err(format!("Object 'apiVersion' is missing in '{text}'"));
    }
    let known = api_version
        .strip_prefix(GROUP)
        .and_then(|v| v.strip_prefix('/'))
        .is_some_and(|v| VERSIONS.contains(&v));
    if !known || kind != KIND {
        return Err(format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\""
        ));
    }
    let unknown: Vec<String> = fields
        .keys()
        .filter(|k| !FIELDS.contains(&k.as_str()))
        .map(|k| format!("unknown field \"{k}\""))
        .collect();
    if !unknown.is_empty() {
        return Err(format!("strict decoding error: {}", unknown.join(", ")));
    }
    serde_json::from_value(Value::Object(fields)).map_err(|e| e.to_string())
}

fn take_string(fields: &mut Map<String, Value>, name: &str) -> String {
    match fields.remove(name) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_version_decodes_yaml_and_json() {
        for version in VERSIONS {
            let yaml = format!(
                "apiVersion: {GROUP}/{version}\nkind: TracingConfiguration\nendpoint: collector:4317\nsamplingRatePerMillion: 100\n"
            );
            let config = decode(yaml.as_bytes()).unwrap();
            assert_eq!(config.endpoint.as_deref(), Some("collector:4317"));
            assert_eq!(config.sampling_rate_per_million, Some(100));
        }
        let json = br#"{"apiVersion":"apiserver.config.k8s.io/v1","kind":"TracingConfiguration"}"#;
        assert_eq!(decode(json).unwrap(), TracingConfiguration::default());
    }

    #[test]
    fn errors_are_upstreams() {
        let unknown = b"apiVersion: apiserver.config.k8s.io/v1beta1\nkind: TracingConfiguration\nendpoints: x\n";
        assert_eq!(
            decode(unknown).unwrap_err(),
            "strict decoding error: unknown field \"endpoints\""
        );
        let wrong_kind = b"apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfig\n";
        assert_eq!(
            decode(wrong_kind).unwrap_err(),
            "no kind \"TracingConfig\" is registered for version \"apiserver.config.k8s.io/v1\""
        );
        let no_kind = b"apiVersion: apiserver.config.k8s.io/v1\n";
        assert!(decode(no_kind)
            .unwrap_err()
            .starts_with("Object 'Kind' is missing in 'apiVersion"));
        let no_version = b"kind: TracingConfiguration\n";
        assert!(decode(no_version)
            .unwrap_err()
            .starts_with("Object 'apiVersion' is missing in"));
    }
}

//! `--admission-control-config-file`: an AdmissionConfiguration
//! (apiserver.config.k8s.io/v1, v1alpha1 or apiserver.k8s.io/v1alpha1)
//! holding each plugin's configuration inline or in a file of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("failed to read plugin config: unable to read admission control configuration from {path:?}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("failed to read plugin config: unable to parse {path:?}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error(
        "failed to initialize admission: couldn't init admission plugin {plugin:?}: {message}"
    )]
    Plugin {
        plugin: &'static str,
        message: String,
    },
    #[error("failed to read plugin config: unexpected kind {kind:?} or apiVersion {api_version:?} in {path:?}; expected AdmissionConfiguration in apiserver.config.k8s.io/v1")]
    Kind {
        path: PathBuf,
        kind: String,
        api_version: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    plugins: Vec<PluginEntry>,
}

#[derive(Debug, Deserialize)]
struct PluginEntry {
    name: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    configuration: Option<Value>,
}

const API_VERSIONS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "apiserver.config.k8s.io/v1alpha1",
    "apiserver.k8s.io/v1alpha1",
];

/// Each plugin's configuration document, by plugin name.
#[derive(Debug, Clone, Default)]
pub struct AdmissionConfig {
    plugins: BTreeMap<String, Value>,
}

impl AdmissionConfig {
    /// Reads the file (blocking: called once at startup).
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let file: File = read_document(path)?;
        if file.kind != "AdmissionConfiguration"
            || !API_VERSIONS.contains(&file.api_version.as_str())
        {
            return Err(ConfigError::Kind {
                path: path.to_owned(),
                kind: file.kind,
                api_version: file.api_version,
            });
        }
        let base = path.parent().unwrap_or(Path::new("."));
        let mut plugins = BTreeMap::new();
        for entry in file.plugins {
            let doc = match (entry.configuration, entry.path.is_empty()) {
                (Some(doc), _) => doc,
                (None, false) => read_document(&base.join(&entry.path))?,
                (None, true) => continue,
            };
            plugins.insert(entry.name, doc);
        }
        Ok(AdmissionConfig { plugins })
    }

    /// The configuration given for a plugin.
    pub fn plugin(&self, name: &str) -> Option<&Value> {
        self.plugins.get(name)
    }
}

fn read_document<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_yaml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_file_configurations_are_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let quota = dir.path().join("quota.yaml");
        let main = dir.path().join("admission.yaml");
        std::fs::write(&quota, "apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources: []\n").expect("write");
        std::fs::write(&main, "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  path: quota.yaml\n- name: EventRateLimit\n  configuration:\n    kind: Configuration\n").expect("write");
        let config = AdmissionConfig::load(Some(&main)).expect("config loads");
        assert_eq!(
            config.plugin("ResourceQuota").and_then(|v| v.get("kind")),
            Some(&Value::String("ResourceQuotaConfiguration".into()))
        );
        assert!(config.plugin("EventRateLimit").is_some());
        assert!(config.plugin("LimitRanger").is_none());
    }

    #[test]
    fn the_wrong_kind_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let main = dir.path().join("a.yaml");
        std::fs::write(&main, "apiVersion: v1\nkind: ConfigMap\n").ok();
        assert!(matches!(
            AdmissionConfig::load(Some(&main)),
            Err(ConfigError::Kind { .. })
        ));
    }
}

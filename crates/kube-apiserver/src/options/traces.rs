//! The traces flag set read as upstream's `TracingOptions`
//! (`k8s.io/apiserver/pkg/server/options/tracing.go`).

use apiserver::server::options::tracing::TracingOptions;

use super::{CompletedOptions, OptionError};

impl CompletedOptions {
    /// `--tracing-config-file`.
    pub fn tracing(&self) -> TracingOptions {
        TracingOptions {
            config_file: self
                .options
                .flags
                .path("tracing-config-file")
                .ok()
                .flatten(),
        }
    }

    /// Upstream's `TracingOptions.Validate`.
    pub(super) fn tracing_errors(&self) -> Vec<OptionError> {
        self.tracing()
            .validate()
            .into_iter()
            .map(|message| OptionError::new("tracing-config-file", message))
            .collect()
    }
}

//! The logs flag set read as upstream's `LoggingConfiguration`
//! (`k8s.io/component-base/logs/api/v1`, added by `logsapi.AddFlags`) and
//! validated with the feature gates, as `logsapi.ValidateAndApply` does.

use component_base::logs::{LoggingConfiguration, JSON_FORMAT_GATE};

use super::{CompletedOptions, OptionError};

impl CompletedOptions {
    /// `--logging-format`, `--log-flush-frequency`, `-v` and `--vmodule`.
    pub fn logging(&self) -> LoggingConfiguration {
        let flags = &self.options.flags;
        LoggingConfiguration {
            format: flags.string("logging-format").unwrap_or_default(),
            flush_frequency: flags
                .duration("log-flush-frequency")
                .map(|d| d.to_std())
                .unwrap_or_default(),
            verbosity: self.options.verbosity,
            vmodule: flags.string("vmodule").unwrap_or_default(),
        }
    }

    /// Upstream's `logsapi.Validate` of the logging configuration.
    pub(super) fn logging_errors(&self) -> Vec<OptionError> {
        let json_enabled = self.feature_gates.get(JSON_FORMAT_GATE) == Some(&true);
        self.logging()
            .validate(json_enabled)
            .into_iter()
            .map(|(flag, message)| OptionError::new(flag, message))
            .collect()
    }
}

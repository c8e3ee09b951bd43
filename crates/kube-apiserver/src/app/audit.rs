//! Auditing from the command line (upstream's `AuditOptions.ApplyTo`):
//! `--audit-policy-file` with the log backend (`--audit-log-*`) and the
//! webhook backend (`--audit-webhook-*`). Without a policy nothing is
//! audited, as upstream; a policy with errors stops startup.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiserver::audit::log::{Format, LogBackend, LogConfig, LogError};
use apiserver::audit::truncate::Truncation;
use apiserver::audit::webhook::{WebhookBackend, WebhookError};
use apiserver::audit::{Auditor, Backend, BatchConfig, Mode, Policy, PolicyError};

use crate::options::FlagValues;
use crate::options::{CompletedOptions, Value};

/// Why auditing cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("--audit-policy-file: {0}")]
    Policy(#[from] PolicyError),
    #[error("--audit-log-path: {0}")]
    Log(#[from] LogError),
    #[error("--audit-webhook-config-file: {0}")]
    Webhook(#[from] WebhookError),
    #[error("--audit-{0}-format: {1:?} is not one of json, legacy")]
    Format(&'static str, String),
    #[error("--audit-{0}-mode: {1:?} is not one of batch, blocking, blocking-strict")]
    Mode(&'static str, String),
    #[error("--audit-{0}-version: invalid audit version {1:?}, only audit.k8s.io/v1 is supported")]
    Version(&'static str, String),
    #[error("--audit-{0}-truncate-max-event-size: invalid truncate max event size {1}, must be a positive number")]
    EventSize(&'static str, i64),
    #[error("--audit-{0}-truncate-max-batch-size: invalid truncate max batch size {2}, must be greater than or equal to max event size ({1})")]
    BatchSize(&'static str, i64, i64),
}

fn int(flags: &FlagValues, name: &str) -> i64 {
    flags.int(name).unwrap_or_default()
}

fn count(flags: &FlagValues, name: &str) -> usize {
    usize::try_from(int(flags, name)).unwrap_or_default()
}

fn float(flags: &FlagValues, name: &str) -> f32 {
    match flags.get(name).map(|f| &f.value) {
        Some(Value::Float(v)) => *v as f32,
        _ => 0.0,
    }
}

fn duration(flags: &FlagValues, name: &str) -> Duration {
    flags.duration(name).map(|d| d.to_std()).unwrap_or_default()
}

/// `--audit-<backend>-mode` with its batch flags.
fn mode(flags: &FlagValues, backend: &'static str) -> Result<Mode, AuditError> {
    let flag = |suffix: &str| format!("audit-{backend}-{suffix}");
    let throttle = flags
        .bool(&flag("batch-throttle-enable"))
        .unwrap_or(false)
        .then(|| {
            (
                float(flags, &flag("batch-throttle-qps")),
                count(flags, &flag("batch-throttle-burst")),
            )
        });
    let batch = BatchConfig {
        buffer_size: count(flags, &flag("batch-buffer-size")),
        max_batch_size: count(flags, &flag("batch-max-size")),
        max_batch_wait: duration(flags, &flag("batch-max-wait")),
        throttle,
    };
    let text = flags.string(&flag("mode")).unwrap_or_default();
    Mode::parse(&text, batch).ok_or(AuditError::Mode(backend, text))
}

/// `--audit-<backend>-version`: only audit.k8s.io/v1 is served.
fn check_version(flags: &FlagValues, backend: &'static str) -> Result<(), AuditError> {
    let version = flags
        .string(&format!("audit-{backend}-version"))
        .unwrap_or_default();
    if version == apiserver::audit::event::API_VERSION {
        Ok(())
    } else {
        Err(AuditError::Version(backend, version))
    }
}

/// `--audit-<backend>-truncate-*`, when enabled.
fn truncation(flags: &FlagValues, backend: &'static str) -> Result<Option<Truncation>, AuditError> {
    let flag = |suffix: &str| format!("audit-{backend}-truncate-{suffix}");
    if !flags.bool(&flag("enabled")).unwrap_or(false) {
        return Ok(None);
    }
    let event = int(flags, &flag("max-event-size"));
    let batch = int(flags, &flag("max-batch-size"));
    let (Ok(max_event_size), true) = (usize::try_from(event), event > 0) else {
        return Err(AuditError::EventSize(backend, event));
    };
    let max_batch_size = usize::try_from(batch).unwrap_or(0);
    if max_batch_size < max_event_size {
        return Err(AuditError::BatchSize(backend, event, batch));
    }
    Ok(Some(Truncation {
        max_event_size,
        max_batch_size,
    }))
}

fn log_backend(flags: &FlagValues, path: String) -> Result<LogBackend, AuditError> {
    let format = match flags
        .string("audit-log-format")
        .unwrap_or_default()
        .as_str()
    {
        "json" => Format::Json,
        "legacy" => Format::Legacy,
        other => return Err(AuditError::Format("log", other.to_owned())),
    };
    let config = LogConfig {
        path: PathBuf::from(path),
        max_age_days: u64::try_from(int(flags, "audit-log-maxage")).unwrap_or_default(),
        max_backups: count(flags, "audit-log-maxbackup"),
        max_size_mb: u64::try_from(int(flags, "audit-log-maxsize")).unwrap_or_default(),
        format,
        mode: mode(flags, "log")?,
        truncate: truncation(flags, "log")?,
        compress: flags.bool("audit-log-compress").unwrap_or(false),
    };
    check_version(flags, "log")?;
    Ok(LogBackend::start(config)?)
}

/// The auditor the flags ask for; `None` without a policy or a backend.
/// Reads files: call it at startup, before serving.
pub fn auditor(opts: &CompletedOptions) -> Result<Option<Arc<Auditor>>, AuditError> {
    let flags = &opts.options.flags;
    let Some(policy_file) = flags.path("audit-policy-file").ok().flatten() else {
        return Ok(None);
    };
    let policy = Policy::load(&policy_file)?;
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    let log_path = flags.string("audit-log-path").unwrap_or_default();
    if !log_path.is_empty() {
        backends.push(Arc::new(log_backend(flags, log_path)?));
    }
    if let Some(kubeconfig) = flags.path("audit-webhook-config-file").ok().flatten() {
        // The deprecated batch flag still counts when it is the one given.
        let backoff_flag = if flags.explicit("audit-webhook-batch-initial-backoff")
            && !flags.explicit("audit-webhook-initial-backoff")
        {
            "audit-webhook-batch-initial-backoff"
        } else {
            "audit-webhook-initial-backoff"
        };
        check_version(flags, "webhook")?;
        let webhook = WebhookBackend::start(
            &kubeconfig,
            mode(flags, "webhook")?,
            duration(flags, backoff_flag),
            truncation(flags, "webhook")?,
        )?;
        backends.push(Arc::new(webhook));
    }
    if backends.is_empty() {
        tracing::warn!(
            "--audit-policy-file is set but no audit backend is: no events are recorded"
        );
        return Ok(None);
    }
    Ok(Some(Arc::new(Auditor { policy, backends })))
}

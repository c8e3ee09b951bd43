//! Admission series (upstream's `pkg/admission/metrics`): the latency of
//! each admission step (the whole mutating or validating phase), of each
//! plugin, and of each webhook call, with the webhook request, rejection
//! and fail-open counters, and the evaluation of webhooks' match
//! conditions. Process-wide, as upstream's legacy registry:
//! the server's `/metrics` registry renders them. Upstream's summary
//! variant of the step latency is left out (prometheus-client has no
//! summaries).

use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::Operation;

/// 5 ms to 2.5 s: plugins and steps.
const STEP_BUCKETS: [f64; 6] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];
/// 5 ms to 25 s: webhooks, which may take up to their timeout.
const WEBHOOK_BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];
/// 1 ms to 250 ms: match condition evaluation.
const MATCH_CONDITION_BUCKETS: [f64; 7] = [0.001, 0.005, 0.01, 0.025, 0.1, 0.2, 0.25];

type Labels<const N: usize> = [(&'static str, String); N];
/// Labels of every admitted write's series: static, so that recording
/// them allocates nothing.
type StaticLabels<const N: usize> = [(&'static str, &'static str); N];
type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Which half of admission a plugin or webhook ran in (the `type` label).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    Admit,
    Validate,
}

impl Step {
    fn as_str(self) -> &'static str {
        match self {
            Step::Admit => "admit",
            Step::Validate => "validate",
        }
    }

    /// Webhook series spell the validating half `validating`.
    fn webhook_type(self) -> &'static str {
        match self {
            Step::Admit => "admit",
            Step::Validate => "validating",
        }
    }
}

/// Why a webhook refused a request (`error_type`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rejection {
    /// The webhook answered with a denial.
    Denied,
    /// Calling the webhook failed and its failure policy is Fail.
    CallingWebhook,
    /// Something else failed in this server (e.g. applying the patch).
    Internal,
}

impl Rejection {
    fn as_str(self) -> &'static str {
        match self {
            Rejection::Denied => "no_error",
            Rejection::CallingWebhook => "calling_webhook_error",
            Rejection::Internal => "apiserver_internal_error",
        }
    }
}

/// The admission series.
#[derive(Debug)]
pub struct AdmissionMetrics {
    step: HistogramFamily<StaticLabels<3>>,
    steps: Resolved,
    controller: HistogramFamily<StaticLabels<4>>,
    webhook: HistogramFamily<Labels<4>>,
    webhook_requests: Family<Labels<5>, Counter>,
    webhook_rejections: Family<Labels<5>, Counter>,
    webhook_fail_open: Family<Labels<2>, Counter>,
    match_condition_errors: Family<Labels<4>, Counter>,
    match_condition_exclusions: Family<Labels<4>, Counter>,
    match_condition_seconds: HistogramFamily<Labels<4>>,
}

static METRICS: LazyLock<AdmissionMetrics> = LazyLock::new(|| AdmissionMetrics {
    step: Family::new_with_constructor(|| Histogram::new(STEP_BUCKETS)),
    steps: Resolved::new(),
    controller: Family::new_with_constructor(|| Histogram::new(STEP_BUCKETS)),
    webhook: Family::new_with_constructor(|| Histogram::new(WEBHOOK_BUCKETS)),
    webhook_requests: Family::default(),
    webhook_rejections: Family::default(),
    webhook_fail_open: Family::default(),
    match_condition_errors: Family::default(),
    match_condition_exclusions: Family::default(),
    match_condition_seconds: Family::new_with_constructor(|| {
        Histogram::new(MATCH_CONDITION_BUCKETS)
    }),
});

/// The process's admission series.
pub fn global() -> &'static AdmissionMetrics {
    &METRICS
}

/// Histograms of one family by (step, operation, rejected), each looked up
/// in the family once: a family hashes its labels on every lookup, twice
/// per admission step and twice per plugin of every write.
#[derive(Debug)]
struct Resolved([OnceLock<Histogram>; 16]);

impl Resolved {
    const fn new() -> Self {
        Resolved([const { OnceLock::new() }; 16])
    }

    fn get(
        &self,
        step: Step,
        op: Operation,
        rejected: bool,
        resolve: impl FnOnce() -> Histogram,
    ) -> &Histogram {
        let op = match op {
            Operation::Create => 0,
            Operation::Update => 1,
            Operation::Delete => 2,
            Operation::Connect => 3,
        };
        let slot = (step as usize) * 8 + op * 2 + usize::from(rejected);
        self.0[slot].get_or_init(resolve)
    }
}

/// One plugin's `apiserver_admission_controller_admission_duration_seconds`
/// series, kept with the plugin in the chain.
pub struct PluginSeries {
    name: &'static str,
    resolved: Resolved,
}

impl PluginSeries {
    pub fn new(name: &'static str) -> Self {
        PluginSeries {
            name,
            resolved: Resolved::new(),
        }
    }

    /// One call of the plugin took `elapsed`.
    pub fn observe(&self, elapsed: Duration, rejected: bool, step: Step, op: Operation) {
        self.resolved
            .get(step, op, rejected, || {
                let labels = [
                    ("name", self.name),
                    ("type", step.as_str()),
                    ("operation", op.as_str()),
                    ("rejected", bool_label(rejected)),
                ];
                METRICS.controller.get_or_create(&labels).clone()
            })
            .observe(elapsed.as_secs_f64());
    }
}

fn bool_label(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// Codes above 600 are counted as 600, as upstream bounds the label.
fn code_label(code: u16) -> String {
    code.min(600).to_string()
}

impl AdmissionMetrics {
    /// Adds the series to `registry`.
    pub(crate) fn register(&self, registry: &mut Registry) {
        // Counters are registered without `_total`, which the encoder
        // appends; help texts without their final period, which it adds.
        registry.register(
            "apiserver_admission_step_admission_duration_seconds",
            "Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit)",
            self.step.clone(),
        );
        registry.register(
            "apiserver_admission_controller_admission_duration_seconds",
            "Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit)",
            self.controller.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit)",
            self.webhook.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_request",
            "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation, whether the request was rejected and the HTTP status code (codes above 600 counted as 600)",
            self.webhook_requests.clone(),
        );
        // Upstream names these two counters without `_total`; the
        // rendering drops the suffix the encoder adds (see
        // `crate::metrics::BARE_COUNTERS`).
        registry.register(
            "apiserver_admission_webhook_rejection_count",
            "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation, with the error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and the rejection code (codes above 600 counted as 600)",
            self.webhook_rejections.clone(),
        );
        registry.register(
            "apiserver_admission_match_condition_evaluation_errors",
            "Admission match condition evaluation errors count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit)",
            self.match_condition_errors.clone(),
        );
        registry.register(
            "apiserver_admission_match_condition_exclusions",
            "Admission match condition evaluation exclusions count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit)",
            self.match_condition_exclusions.clone(),
        );
        registry.register(
            "apiserver_admission_match_condition_evaluation_seconds",
            "Admission match condition evaluation time in seconds, identified by name and broken out for each kind containing matchConditions (webhook or policy), operation and type (validate or admit)",
            self.match_condition_seconds.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_fail_open_count",
            "Admission webhook fail open count, identified by name and broken out for each admission type (validating or mutating)",
            self.webhook_fail_open.clone(),
        );
    }

    /// One whole admission phase took `elapsed`.
    pub fn observe_step(&self, elapsed: Duration, rejected: bool, step: Step, op: Operation) {
        self.steps
            .get(step, op, rejected, || {
                let labels = [
                    ("type", step.as_str()),
                    ("operation", op.as_str()),
                    ("rejected", bool_label(rejected)),
                ];
                self.step.get_or_create(&labels).clone()
            })
            .observe(elapsed.as_secs_f64());
    }

    /// One webhook call took `elapsed` and ended with HTTP `code` (0 when
    /// this server failed).
    pub fn observe_webhook(
        &self,
        call: &WebhookCall,
        elapsed: Duration,
        code: u16,
        rejected: bool,
    ) {
        let requests = [
            ("name", call.name.to_owned()),
            ("type", call.step.webhook_type().to_owned()),
            ("operation", call.operation.as_str().to_owned()),
            ("code", code_label(code)),
            ("rejected", rejected.to_string()),
        ];
        self.webhook_requests.get_or_create(&requests).inc();
        let latency = [
            ("name", call.name.to_owned()),
            ("type", call.step.webhook_type().to_owned()),
            ("operation", call.operation.as_str().to_owned()),
            ("rejected", rejected.to_string()),
        ];
        self.webhook
            .get_or_create(&latency)
            .observe(elapsed.as_secs_f64());
    }

    /// A webhook call refused the request.
    pub fn observe_webhook_rejection(&self, call: &WebhookCall, why: Rejection, code: u16) {
        let labels = [
            ("name", call.name.to_owned()),
            ("type", call.step.webhook_type().to_owned()),
            ("operation", call.operation.as_str().to_owned()),
            ("error_type", why.as_str().to_owned()),
            ("rejection_code", code_label(code)),
        ];
        self.webhook_rejections.get_or_create(&labels).inc();
    }

    /// A failed webhook call was ignored by its failure policy.
    pub fn observe_webhook_fail_open(&self, call: &WebhookCall) {
        let labels = [
            ("name", call.name.to_owned()),
            ("type", call.step.webhook_type().to_owned()),
        ];
        self.webhook_fail_open.get_or_create(&labels).inc();
    }
}

/// How evaluating a webhook's match conditions ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MatchConditions {
    Matched,
    /// A condition was false: the webhook is not called.
    Excluded,
    Failed,
}

impl AdmissionMetrics {
    /// A webhook's match conditions were evaluated in `elapsed`.
    pub fn observe_match_conditions(
        &self,
        call: &WebhookCall,
        elapsed: Duration,
        outcome: MatchConditions,
    ) {
        let labels = [
            ("name", call.name.to_owned()),
            ("kind", "webhook".to_owned()),
            ("type", call.step.webhook_type().to_owned()),
            ("operation", call.operation.as_str().to_owned()),
        ];
        match outcome {
            MatchConditions::Matched => {}
            MatchConditions::Excluded => {
                self.match_condition_exclusions.get_or_create(&labels).inc();
            }
            MatchConditions::Failed => {
                self.match_condition_errors.get_or_create(&labels).inc();
            }
        }
        self.match_condition_seconds
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }
}

/// What the webhook series say about one call.
#[derive(Debug, Clone, Copy)]
pub struct WebhookCall<'a> {
    pub name: &'a str,
    pub step: Step,
    pub operation: Operation,
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;

    use super::*;

    fn count(text: &str, series: &str) -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(series))?;
        line.rsplit(' ').next()?.parse().ok()
    }

    #[test]
    fn each_label_set_keeps_its_own_series() {
        let series = PluginSeries::new("TestSeriesPlugin");
        let ms = Duration::from_millis(1);
        series.observe(ms, false, Step::Admit, Operation::Create);
        series.observe(ms, false, Step::Admit, Operation::Create);
        series.observe(ms, true, Step::Admit, Operation::Create);
        series.observe(ms, false, Step::Validate, Operation::Connect);
        let mut registry = Registry::default();
        global().register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        let name = "apiserver_admission_controller_admission_duration_seconds_count";
        let at = |ty: &str, op: &str, rejected: &str| {
            let labels = format!(
                "{{name=\"TestSeriesPlugin\",type=\"{ty}\",operation=\"{op}\",rejected=\"{rejected}\"}}"
            );
            count(&text, &format!("{name}{labels}"))
        };
        assert_eq!(at("admit", "CREATE", "false"), Some(2), "{text}");
        assert_eq!(at("admit", "CREATE", "true"), Some(1));
        assert_eq!(at("validate", "CONNECT", "false"), Some(1));
        assert_eq!(at("validate", "CREATE", "false"), None);
    }
}

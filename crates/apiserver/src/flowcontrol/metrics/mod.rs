//! The `apiserver_flowcontrol_*` series (upstream's
//! `k8s.io/apiserver/pkg/util/flowcontrol/metrics`): requests and seats
//! by priority level and flow schema, each level's configured and current
//! seat limits, the seat demand statistics that drive borrowing, and the
//! work estimates given to requests.

use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of a per-level series.
pub type LevelLabels = [(&'static str, String); 1];
/// Labels of a per-level, per-schema series (upstream's order).
pub type FlowLabels = [(&'static str, String); 2];

type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily<K> = Family<K, Histogram, fn() -> Histogram>;

/// Upstream's buckets of `apiserver_flowcontrol_work_estimated_seats`.
const WORK_ESTIMATE_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 100.0];

fn work_estimate_histogram() -> Histogram {
    Histogram::new(WORK_ESTIMATE_BUCKETS)
}

/// Upstream's buckets of waiting and execution times (seconds).
const DURATION_BUCKETS: [f64; 13] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The labels of a level's series.
pub fn level_labels(level: &str) -> LevelLabels {
    [("priority_level", level.to_owned())]
}

/// The labels of a level's and schema's series.
fn flow_labels(level: &str, schema: &str) -> FlowLabels {
    [
        ("priority_level", level.to_owned()),
        ("flow_schema", schema.to_owned()),
    ]
}

/// The series one flow schema's requests feed at its priority level,
/// found in their families once per configuration instead of on every
/// request. Each is taken when first observed, so every series appears
/// when upstream's does. One flow control feeds one [`ApfMetrics`].
#[derive(Debug)]
pub struct FlowSeries {
    pub labels: FlowLabels,
    work_estimated_seats: OnceLock<Histogram>,
    waiting_requests: OnceLock<Gauge>,
    waiting_seats: OnceLock<Gauge>,
    dispatched: OnceLock<Counter>,
    executing_requests: OnceLock<Gauge>,
    executing_seats: OnceLock<Gauge>,
    /// By whether the request went on to run.
    wait_duration: [OnceLock<Histogram>; 2],
    /// By whether it was a watch.
    execution_duration: [OnceLock<Histogram>; 2],
}

/// `slot`'s series, taken from `family` the first time.
fn series<'a, L, M, C>(
    slot: &'a OnceLock<M>,
    family: &Family<L, M, C>,
    labels: impl FnOnce() -> L,
) -> &'a M
where
    L: Clone + std::hash::Hash + Eq,
    M: Clone,
    C: MetricConstructor<M>,
{
    slot.get_or_init(|| family.get_or_create(&labels()).clone())
}

impl FlowSeries {
    pub fn new(level: &str, schema: &str) -> Self {
        FlowSeries {
            labels: flow_labels(level, schema),
            work_estimated_seats: OnceLock::new(),
            waiting_requests: OnceLock::new(),
            waiting_seats: OnceLock::new(),
            dispatched: OnceLock::new(),
            executing_requests: OnceLock::new(),
            executing_seats: OnceLock::new(),
            wait_duration: Default::default(),
            execution_duration: Default::default(),
        }
    }

    pub fn work_estimated_seats(&self, m: &ApfMetrics) -> &Histogram {
        series(&self.work_estimated_seats, &m.work_estimated_seats, || {
            self.labels.clone()
        })
    }

    pub fn waiting_requests(&self, m: &ApfMetrics) -> &Gauge {
        series(&self.waiting_requests, &m.waiting_requests, || {
            self.labels.clone()
        })
    }

    pub fn waiting_seats(&self, m: &ApfMetrics) -> &Gauge {
        series(&self.waiting_seats, &m.waiting_seats, || {
            self.labels.clone()
        })
    }

    pub fn dispatched(&self, m: &ApfMetrics) -> &Counter {
        series(&self.dispatched, &m.dispatched, || self.labels.clone())
    }

    pub fn executing_requests(&self, m: &ApfMetrics) -> &Gauge {
        series(&self.executing_requests, &m.executing_requests, || {
            self.labels.clone()
        })
    }

    pub fn executing_seats(&self, m: &ApfMetrics) -> &Gauge {
        series(&self.executing_seats, &m.executing_seats, || {
            self.labels.clone()
        })
    }

    /// `apiserver_flowcontrol_request_wait_duration_seconds` of requests
    /// that went on to run (`executes`) or not.
    pub fn wait_duration(&self, m: &ApfMetrics, executes: bool) -> &Histogram {
        let value = if executes { "true" } else { "false" };
        let slot = &self.wait_duration[usize::from(executes)];
        series(slot, &m.wait_duration, || self.with(("execute", value)))
    }

    /// `apiserver_flowcontrol_request_execution_seconds` of watches or
    /// other requests.
    pub fn execution_duration(&self, m: &ApfMetrics, watch: bool) -> &Histogram {
        let value = if watch { "watch" } else { "regular" };
        let slot = &self.execution_duration[usize::from(watch)];
        series(slot, &m.execution_duration, || self.with(("type", value)))
    }

    /// The level and schema labels and one more.
    pub fn with(&self, (name, value): (&'static str, &str)) -> [(&'static str, String); 3] {
        let [level, schema] = self.labels.clone();
        [level, schema, (name, value.to_owned())]
    }
}

/// Every priority-and-fairness series.
#[derive(Debug)]
pub struct ApfMetrics {
    pub dispatched: Family<FlowLabels, Counter>,
    pub rejected: Family<[(&'static str, String); 3], Counter>,
    pub executing_requests: Family<FlowLabels, Gauge>,
    pub executing_seats: Family<FlowLabels, Gauge>,
    pub waiting_requests: Family<FlowLabels, Gauge>,
    pub waiting_seats: Family<FlowLabels, Gauge>,
    pub work_estimated_seats: HistogramFamily<FlowLabels>,
    /// By level, schema and whether the request went on to run.
    pub wait_duration: HistogramFamily<[(&'static str, String); 3]>,
    /// By level, schema and type (`regular` or `watch`).
    pub execution_duration: HistogramFamily<[(&'static str, String); 3]>,
    pub nominal_seats: Family<LevelLabels, Gauge>,
    pub lower_limit_seats: Family<LevelLabels, Gauge>,
    pub upper_limit_seats: Family<LevelLabels, Gauge>,
    pub current_limit_seats: Family<LevelLabels, Gauge>,
    pub demand_high_watermark: Family<LevelLabels, FloatGauge>,
    pub demand_average: Family<LevelLabels, FloatGauge>,
    pub demand_stdev: Family<LevelLabels, FloatGauge>,
    pub demand_smoothed: Family<LevelLabels, FloatGauge>,
    pub target_seats: Family<LevelLabels, FloatGauge>,
    pub fair_frac: FloatGauge,
}

impl Default for ApfMetrics {
    fn default() -> Self {
        ApfMetrics {
            dispatched: Family::default(),
            rejected: Family::default(),
            executing_requests: Family::default(),
            executing_seats: Family::default(),
            waiting_requests: Family::default(),
            waiting_seats: Family::default(),
            work_estimated_seats: Family::new_with_constructor(work_estimate_histogram),
            wait_duration: Family::new_with_constructor(duration_histogram),
            execution_duration: Family::new_with_constructor(duration_histogram),
            nominal_seats: Family::default(),
            lower_limit_seats: Family::default(),
            upper_limit_seats: Family::default(),
            current_limit_seats: Family::default(),
            demand_high_watermark: Family::default(),
            demand_average: Family::default(),
            demand_stdev: Family::default(),
            demand_smoothed: Family::default(),
            target_seats: Family::default(),
            fair_frac: FloatGauge::default(),
        }
    }
}

impl ApfMetrics {
    /// Adds every series to `registry` under upstream's names (counters
    /// without `_total`, which the encoder appends).
    pub fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("apiserver_flowcontrol");
        r.register(
            "dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            self.dispatched.clone(),
        );
        r.register(
            "rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem",
            self.rejected.clone(),
        );
        r.register(
            "current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
            self.executing_requests.clone(),
        );
        r.register(
            "current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
            self.executing_seats.clone(),
        );
        r.register(
            "current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            self.waiting_requests.clone(),
        );
        r.register(
            "current_inqueue_seats",
            "Number of seats currently pending in queues of the API Priority and Fairness subsystem",
            self.waiting_seats.clone(),
        );
        r.register(
            "work_estimated_seats",
            "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness",
            self.work_estimated_seats.clone(),
        );
        r.register(
            "request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue",
            self.wait_duration.clone(),
        );
        r.register(
            "request_execution_seconds",
            "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem",
            self.execution_duration.clone(),
        );
        self.register_limits(r);
    }

    fn register_limits(&self, r: &mut Registry) {
        let level_gauges: [(&str, &str, &Family<LevelLabels, Gauge>); 4] = [
            (
                "nominal_limit_seats",
                "Nominal number of execution seats configured for each priority level",
                &self.nominal_seats,
            ),
            (
                "lower_limit_seats",
                "Configured lower bound on number of execution seats available to each priority level",
                &self.lower_limit_seats,
            ),
            (
                "upper_limit_seats",
                "Configured upper bound on number of execution seats available to each priority level",
                &self.upper_limit_seats,
            ),
            (
                "current_limit_seats",
                "current derived number of execution seats available to each priority level",
                &self.current_limit_seats,
            ),
        ];
        for (name, help, family) in level_gauges {
            r.register(name, help, family.clone());
        }
        let demand: [(&str, &str, &Family<LevelLabels, FloatGauge>); 5] = [
            (
                "demand_seats_high_watermark",
                "High watermark, over last adjustment period, of demand_seats",
                &self.demand_high_watermark,
            ),
            (
                "demand_seats_average",
                "Time-weighted average, over last adjustment period, of demand_seats",
                &self.demand_average,
            ),
            (
                "demand_seats_stdev",
                "Time-weighted standard deviation, over last adjustment period, of demand_seats",
                &self.demand_stdev,
            ),
            (
                "demand_seats_smoothed",
                "Smoothed seat demands",
                &self.demand_smoothed,
            ),
            (
                "target_seats",
                "Seat allocation targets",
                &self.target_seats,
            ),
        ];
        for (name, help, family) in demand {
            r.register(name, help, family.clone());
        }
        r.register(
            "seat_fair_frac",
            "Fair fraction of server's concurrency to allocate to each priority level that can use it",
            self.fair_frac.clone(),
        );
    }

    /// Publishes a level's configured limits.
    pub fn set_limits(&self, level: &str, nominal: usize, lower: usize, upper: usize) {
        let labels = level_labels(level);
        for (family, value) in [
            (&self.nominal_seats, nominal),
            (&self.lower_limit_seats, lower),
            (&self.upper_limit_seats, upper),
        ] {
            family
                .get_or_create(&labels)
                .set(i64::try_from(value).unwrap_or(i64::MAX));
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;

    use super::*;

    fn rendered(metrics: &ApfMetrics) -> String {
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).expect("encodes");
        text
    }

    #[test]
    fn a_schemas_series_appear_when_first_observed_and_stay_the_familys() {
        let metrics = ApfMetrics::default();
        let series = FlowSeries::new("workload-low", "service-accounts");
        let waited = "apiserver_flowcontrol_request_wait_duration_seconds_count{priority_level=\"workload-low\",flow_schema=\"service-accounts\",execute=\"false\"}";
        assert!(!rendered(&metrics).contains("execute=\"false\""));
        series.wait_duration(&metrics, false).observe(0.1);
        assert!(rendered(&metrics).contains(&format!("{waited} 1\n")));
        series.wait_duration(&metrics, false).observe(0.1);
        let text = rendered(&metrics);
        assert!(text.contains(&format!("{waited} 2\n")), "{text}");
        assert!(!text.contains("execute=\"true\""), "{text}");
        // A new configuration's series of the same schema feed the same ones.
        FlowSeries::new("workload-low", "service-accounts")
            .dispatched(&metrics)
            .inc();
        series.dispatched(&metrics).inc();
        let dispatched = "apiserver_flowcontrol_dispatched_requests_total{priority_level=\"workload-low\",flow_schema=\"service-accounts\"} 2\n";
        assert!(rendered(&metrics).contains(dispatched));
    }
}

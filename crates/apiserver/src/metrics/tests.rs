use super::process::{parse_boot_time, parse_max_fds, parse_rss, parse_stat};
use super::*;

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

#[test]
fn counters_are_named_with_total_and_there_is_no_eof() {
    let m = Metrics::new();
    m.inc_watch_events("apps", "v1", "Deployment");
    m.inc_watch_events("apps", "v1", "Deployment");
    let text = m.render().unwrap();
    assert!(
        has_line(&text, "# TYPE apiserver_watch_events_total counter"),
        "{text}"
    );
    assert!(
        text.contains("# HELP apiserver_watch_events_total Watch events sent"),
        "{text}"
    );
    assert!(has_line(
        &text,
        r#"apiserver_watch_events_total{group="apps",version="v1",kind="Deployment"} 2"#
    ));
    assert!(
        has_line(&text, "# TYPE apiserver_request_total counter"),
        "{text}"
    );
    assert!(!text.contains("# EOF"), "{text}");
    assert!(!text.contains("_total_total"), "{text}");
    // Gauges and histograms keep their names.
    assert!(
        has_line(&text, "# TYPE apiserver_longrunning_requests gauge"),
        "{text}"
    );
    assert!(
        has_line(&text, "# TYPE etcd_request_duration_seconds histogram"),
        "{text}"
    );
}

#[test]
fn watch_event_counter_handle_shares_the_series() {
    let m = Metrics::new();
    let counter = m.watch_events_counter("", "v1", "Pod");
    counter.inc();
    m.inc_watch_events("", "v1", "Pod");
    let text = m.render().unwrap();
    assert!(has_line(
        &text,
        r#"apiserver_watch_events_total{group="",version="v1",kind="Pod"} 2"#
    ));
}

#[test]
fn storage_objects_are_labelled_as_upstream() {
    let m = Metrics::new();
    m.set_storage_objects("", "pods", 3);
    m.set_storage_objects("apps", "deployments", 7);
    m.set_storage_objects("apps", "deployments", -1);
    let text = m.render().unwrap();
    assert!(
        has_line(&text, r#"apiserver_storage_objects{resource="pods"} 3"#),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            r#"apiserver_storage_objects{resource="deployments.apps"} -1"#
        ),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            r#"apiserver_resource_objects{group="apps",resource="deployments"} -1"#
        ),
        "{text}"
    );
}

#[test]
fn etcd_latency_uses_upstream_buckets() {
    let m = Metrics::new();
    m.observe_etcd_request("get", "", "pods", Duration::from_millis(30));
    m.observe_etcd_request("get", "", "pods", Duration::from_millis(2));
    let text = m.render().unwrap();
    let labels = r#"operation="get",group="",resource="pods""#;
    assert!(
        has_line(
            &text,
            &format!("etcd_request_duration_seconds_count{{{labels}}} 2")
        ),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            &format!("etcd_request_duration_seconds_bucket{{le=\"0.005\",{labels}}} 1")
        ),
        "{text}"
    );
    assert!(
        has_line(
            &text,
            &format!("etcd_request_duration_seconds_bucket{{le=\"0.05\",{labels}}} 2")
        ),
        "{text}"
    );
    let buckets = text
        .lines()
        .filter(|l| l.starts_with("etcd_request_duration_seconds_bucket"))
        .count();
    // 23 bounds and +Inf.
    assert_eq!(buckets, 24);
}

#[test]
fn label_values_are_escaped() {
    let m = Metrics::new();
    let info = RequestInfo {
        path: "/a\"b\\c\nd".to_owned(),
        verb: "get".to_owned(),
        ..RequestInfo::default()
    };
    let labels = RequestLabels {
        verb: Verb::Get,
        scope: Scope::None,
        info: Arc::new(info),
        with_path: true,
    };
    m.longrunning.get_or_create(&labels).inc();
    let text = m.render().unwrap();
    assert!(text.contains(r#"subresource="/a\"b\\c\nd""#), "{text}");
}

#[test]
fn request_labels_compare_by_labelled_fields_only() {
    let labels = |path: &str, name: &str| RequestLabels {
        verb: Verb::Get,
        scope: Scope::Resource,
        info: Arc::new(RequestInfo {
            is_resource_request: true,
            path: path.to_owned(),
            api_version: "v1".to_owned(),
            resource: "pods".to_owned(),
            name: name.to_owned(),
            ..RequestInfo::default()
        }),
        with_path: true,
    };
    let m = Metrics::new();
    m.longrunning
        .get_or_create(&labels("/api/v1/pods/a", "a"))
        .inc();
    m.longrunning
        .get_or_create(&labels("/api/v1/pods/b", "b"))
        .inc();
    let text = m.render().unwrap();
    let series = r#"apiserver_longrunning_requests{verb="GET",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver"} 2"#;
    assert!(has_line(&text, series), "{text}");
}

#[test]
fn parses_proc_files() {
    // Field 2 holds spaces and a parenthesis, as a command name may.
    let stat = "4242 (kube apiserver) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 123456 987654321 2000 18446744073709551615";
    let s = parse_stat(stat).unwrap();
    assert_eq!(s.cpu_ticks, 300.0);
    assert_eq!(s.start_ticks, 123456.0);
    assert_eq!(s.virtual_bytes, 987654321.0);
    assert!(parse_stat("garbage").is_none());
    assert_eq!(
        parse_boot_time("cpu 1 2 3\nbtime 1700000000\nprocesses 5\n"),
        Some(1.7e9)
    );
    assert_eq!(
        parse_rss("Name:\tx\nVmRSS:\t   2048 kB\n"),
        Some(2048.0 * 1024.0)
    );
    let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
    assert_eq!(parse_max_fds(limits), Some(1024.0));
}

#[test]
fn process_series_are_read_from_proc() {
    let text = Metrics::new().render().unwrap();
    for name in [
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
    ] {
        let value: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("{name} missing: {text}"))
            .parse()
            .unwrap();
        assert!(value >= 0.0, "{name} {value}");
        if name != "process_cpu_seconds_total" {
            assert!(value > 0.0, "{name} {value}");
        }
    }
    assert!(
        has_line(&text, "# TYPE process_cpu_seconds_total counter"),
        "{text}"
    );
}

#[test]
fn extra_registries_are_rendered_and_a_gauge_may_share_a_counters_name() {
    let m = Metrics::new();
    let mut extra = Registry::default();
    let counter: Counter = Counter::default();
    counter.inc();
    let gauge: Gauge = Gauge::default();
    gauge.set(3);
    extra.register("aggregator_thing", "A counter", counter);
    extra.register("aggregator_thing", "A gauge", gauge);
    m.register_extra(extra);
    let text = m.render().unwrap();
    for line in [
        "# HELP aggregator_thing_total A counter.",
        "# TYPE aggregator_thing_total counter",
        "aggregator_thing_total 1",
        "# HELP aggregator_thing A gauge.",
        "# TYPE aggregator_thing gauge",
        "aggregator_thing 3",
    ] {
        assert!(has_line(&text, line), "{line} in {text}");
    }
}

//! The debug dumps of priority and fairness
//! (`/debug/api_priority_and_fairness/dump_priority_levels`, `dump_queues`
//! and `dump_requests`): one row per priority level, queue or request,
//! cells separated by `,` and aligned in columns as upstream's tab writer
//! lays them out (each column at least 8 wide, one space of padding).

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use super::{FlowControl, RequestDump};

const LEVEL_HEADERS: [&str; 10] = [
    "PriorityLevelName",
    "ActiveQueues",
    "IsIdle",
    "IsQuiescing",
    "WaitingRequests",
    "ExecutingRequests",
    "DispatchedRequests",
    "RejectedRequests",
    "TimedoutRequests",
    "CancelledRequests",
];

const QUEUE_HEADERS: [&str; 9] = [
    "PriorityLevelName",
    "Index",
    "PendingRequests",
    "ExecutingRequests",
    "SeatsInUse",
    "NextDispatchR",
    "InitialSeatsSum",
    "MaxSeatsSum",
    "TotalWorkSum",
];

/// Upstream's headers, its misspelling of "FlowDistinguisher" included.
const REQUEST_HEADERS: [&str; 10] = [
    "PriorityLevelName",
    "FlowSchemaName",
    "QueueIndex",
    "RequestIndexInQueue",
    "FlowDistingsher",
    "ArriveTime",
    "InitialSeats",
    "FinalSeats",
    "AdditionalLatency",
    "StartTime",
];

const DETAIL_HEADERS: [&str; 8] = [
    "UserName",
    "Verb",
    "APIPath",
    "Namespace",
    "Name",
    "APIVersion",
    "Resource",
    "SubResource",
];

fn headers(names: &[&str]) -> Vec<String> {
    names.iter().map(|h| h.to_string()).collect()
}

/// The priority-level table.
pub fn dump_priority_levels(control: &FlowControl) -> String {
    let mut rows = vec![headers(&LEVEL_HEADERS)];
    for (name, _, d) in control.levels() {
        let idle = d.executing == 0 && d.waiting == 0;
        rows.push(vec![
            name,
            d.active_queues.to_string(),
            idle.to_string(),
            // Levels are replaced in place, never left quiescing.
            false.to_string(),
            d.waiting.to_string(),
            d.executing.to_string(),
            d.totals.dispatched.to_string(),
            d.totals.rejected.to_string(),
            d.totals.timed_out.to_string(),
            d.totals.cancelled.to_string(),
        ]);
    }
    table(&rows)
}

/// The queue table: every queue of every level.
pub fn dump_queues(control: &FlowControl) -> String {
    let mut rows = vec![headers(&QUEUE_HEADERS)];
    for (name, dump) in control.dumps() {
        for (index, q) in dump.queues.iter().enumerate() {
            rows.push(vec![
                name.clone(),
                index.to_string(),
                q.waiting.len().to_string(),
                q.executing.len().to_string(),
                q.seats_in_use.to_string(),
                q.next_dispatch_r.to_string(),
                q.initial_seats_sum.to_string(),
                q.max_seats_sum.to_string(),
                q.total_work_sum.to_string(),
            ]);
        }
    }
    table(&rows)
}

/// The request table: waiting requests by queue and position, then the
/// executing ones (position -1), then those that run without a queue
/// (queue -1); with `details`, who made each request and what it asks.
pub fn dump_requests(control: &FlowControl, details: bool) -> String {
    let mut header = headers(&REQUEST_HEADERS);
    if details {
        header.extend(headers(&DETAIL_HEADERS));
    }
    let mut rows = vec![header];
    for (name, dump) in control.dumps() {
        let mut add = |queue: i64, index: i64, r: &RequestDump| {
            rows.push(request_row(&name, queue, index, r, details));
        };
        for (q, queue) in (0i64..).zip(&dump.queues) {
            for (i, r) in (0i64..).zip(&queue.waiting) {
                add(q, i, r);
            }
            for r in &queue.executing {
                add(q, -1, r);
            }
        }
        for r in &dump.queueless {
            add(-1, -1, r);
        }
    }
    table(&rows)
}

fn request_row(level: &str, queue: i64, index: i64, r: &RequestDump, details: bool) -> Vec<String> {
    let mut row = vec![
        level.to_owned(),
        r.meta.flow_schema.to_string(),
        queue.to_string(),
        index.to_string(),
        r.meta.flow_distinguisher().to_owned(),
        timestamp(Some(r.arrival)),
        r.estimate.initial_seats.to_string(),
        r.estimate.final_seats.to_string(),
        go_duration(r.estimate.additional_latency),
        timestamp(r.start),
    ];
    if details {
        let info = &r.meta.info;
        let api_version = if info.api_group.is_empty() {
            info.api_version.clone()
        } else {
            format!("{}/{}", info.api_group, info.api_version)
        };
        row.extend([
            r.meta.user.name.clone(),
            info.verb.clone(),
            info.path.clone(),
            info.namespace.clone(),
            info.name.clone(),
            api_version,
            info.resource.clone(),
            info.subresource.clone(),
        ]);
    }
    row
}

/// RFC 3339 in UTC with the fraction's trailing zeros dropped (Go's
/// `RFC3339Nano`); Go's zero time when there is none.
fn timestamp(time: Option<SystemTime>) -> String {
    let Some(time) = time else {
        return "0001-01-01T00:00:00Z".to_owned();
    };
    let time: DateTime<Utc> = time.into();
    let seconds = time.format("%Y-%m-%dT%H:%M:%S");
    let fraction = format!("{:09}", time.timestamp_subsec_nanos());
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{seconds}Z")
    } else {
        format!("{seconds}.{fraction}Z")
    }
}

/// A duration as Go prints one: `0s`, `750µs`, `5ms`, `1.5s`, `2m0s`.
fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    let decimal = |value: u128, unit: u128, suffix: &str| {
        let fraction = format!("{:0width$}", value % unit, width = unit.ilog10() as usize);
        let fraction = fraction.trim_end_matches('0');
        match fraction {
            "" => format!("{}{suffix}", value / unit),
            f => format!("{}.{f}{suffix}", value / unit),
        }
    };
    match nanos {
        0 => "0s".to_owned(),
        n if n < 1_000 => format!("{n}ns"),
        n if n < 1_000_000 => decimal(n, 1_000, "µs"),
        n if n < 1_000_000_000 => decimal(n, 1_000_000, "ms"),
        n => {
            let (hours, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
            let (minutes, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
            let seconds = decimal(rest, 1_000_000_000, "s");
            match (hours, minutes) {
                (0, 0) => seconds,
                (0, m) => format!("{m}m{seconds}"),
                (h, m) => format!("{h}h{m}m{seconds}"),
            }
        }
    }
}

/// Lays out rows as a tab writer with minimum width 8 and padding 1 does
/// for cells joined by ",\t": every cell but the last of a row is padded
/// to its column's width.
fn table(rows: &[Vec<String>]) -> String {
    const MIN_WIDTH: usize = 8;
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns.saturating_sub(1))
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c).filter(|_| c + 1 < r.len()))
                .map(|cell| cell.chars().count() + 2)
                .max()
                .unwrap_or(0)
                .max(MIN_WIDTH)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        for (c, cell) in row.iter().enumerate() {
            if c + 1 < row.len() {
                let text = format!("{cell},");
                out.push_str(&format!("{text:<width$}", width = widths[c]));
            } else {
                out.push_str(cell);
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use apimachinery::request_info::RequestInfo;

    use super::*;
    use crate::authentication::user::UserInfo;
    use crate::flowcontrol::WorkEstimate;

    #[test]
    fn cells_line_up_in_columns() {
        let rows = vec![
            vec!["Name".to_owned(), "A".to_owned(), "Last".to_owned()],
            vec![
                "global-default".to_owned(),
                "12345678".to_owned(),
                "0".to_owned(),
            ],
        ];
        assert_eq!(
            table(&rows),
            "Name,           A,        Last\nglobal-default, 12345678, 0\n"
        );
    }

    #[test]
    fn the_dump_lists_every_level() {
        let control = FlowControl::new(600, Duration::from_secs(60), Default::default());
        let dump = dump_priority_levels(&control);
        let lines: Vec<&str> = dump.lines().collect();
        assert!(
            lines[0].starts_with("PriorityLevelName, ActiveQueues, IsIdle,"),
            "{dump}"
        );
        assert!(lines[0].ends_with("CancelledRequests"));
        assert!(lines[1].starts_with("catch-all,"), "{dump}");
        assert!(lines[2].starts_with("exempt,"), "{dump}");
        assert_eq!(
            lines[1].split(',').map(str::trim).collect::<Vec<_>>(),
            [
                "catch-all",
                "0",
                "true",
                "false",
                "0",
                "0",
                "0",
                "0",
                "0",
                "0"
            ]
        );
    }

    #[test]
    fn go_formats() {
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::from_millis(5)), "5ms");
        assert_eq!(go_duration(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(go_duration(Duration::from_nanos(750_000)), "750µs");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(120)), "2m0s");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_500);
        assert_eq!(timestamp(Some(t)), "1970-01-01T00:00:01.5Z");
        assert_eq!(
            timestamp(Some(SystemTime::UNIX_EPOCH)),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(timestamp(None), "0001-01-01T00:00:00Z");
    }

    #[tokio::test]
    async fn queues_and_requests_are_dumped() {
        let control = FlowControl::new(1, Duration::from_secs(60), Default::default());
        let queues = dump_queues(&control);
        assert_eq!(
            queues
                .lines()
                .next()
                .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>()),
            Some(QUEUE_HEADERS.to_vec())
        );
        // The mandatory levels reject rather than queue: no queue rows.
        assert_eq!(queues.lines().count(), 1);
        let user = Arc::new(UserInfo {
            name: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        });
        let info = Arc::new(RequestInfo {
            is_resource_request: true,
            verb: "list".into(),
            path: "/api/v1/namespaces/a/pods".into(),
            api_version: "v1".into(),
            resource: "pods".into(),
            namespace: "a".into(),
            ..Default::default()
        });
        let class = control.classify(&user, &info).unwrap();
        let _seat = class
            .acquire(WorkEstimate::MINIMAL, Duration::ZERO)
            .await
            .unwrap();
        let plain = dump_requests(&control, false);
        let lines: Vec<Vec<&str>> = plain
            .lines()
            .map(|l| l.split(',').map(str::trim).collect())
            .collect();
        assert_eq!(lines[0], REQUEST_HEADERS);
        assert_eq!(lines.len(), 2, "{plain}");
        assert_eq!(
            lines[1][..5],
            ["catch-all", "catch-all", "-1", "-1", "alice"]
        );
        assert_eq!(lines[1][6..9], ["1", "0", "0s"]);
        assert!(lines[1][9].ends_with('Z'), "{plain}");
        let detailed = dump_requests(&control, true);
        let lines: Vec<Vec<&str>> = detailed
            .lines()
            .map(|l| l.split(',').map(str::trim).collect())
            .collect();
        assert_eq!(lines[0][10..], DETAIL_HEADERS);
        assert_eq!(
            lines[1][10..],
            [
                "alice",
                "list",
                "/api/v1/namespaces/a/pods",
                "a",
                "",
                "v1",
                "pods",
                ""
            ]
        );
    }
}

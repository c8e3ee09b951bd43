//! The debug dump of priority and fairness
//! (`/debug/api_priority_and_fairness/dump_priority_levels`): one row per
//! priority level, cells separated by `,` and aligned in columns as
//! upstream's tab writer lays them out (each column at least 8 wide, one
//! space of padding).

use super::FlowControl;

const HEADERS: [&str; 10] = [
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

/// The priority-level table.
pub fn dump_priority_levels(control: &FlowControl) -> String {
    let mut rows = vec![HEADERS.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
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
    use std::time::Duration;

    use super::*;

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
}

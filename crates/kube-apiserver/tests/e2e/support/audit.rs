//! Audit logs as the tests read them.

use std::path::Path;

use serde_json::Value;

/// The events of a JSON-lines audit log (none while it does not exist).
pub fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON event"))
        .collect()
}

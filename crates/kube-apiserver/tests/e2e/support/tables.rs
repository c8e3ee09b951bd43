//! Tables as kubectl prints them and as the server answers them
//! (`as=Table`), for the printer-column tests.

use serde_json::Value;

use super::http::admin_curl;
use crate::harness::TestServer;

/// The cells of one printed line: kubectl pads columns with at least three
/// spaces, while cells themselves hold at most single spaces.
pub fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Header and the one row of `kubectl get <args>`, split into cells.
pub fn table(s: &TestServer, args: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    let out = s.ok(&all);
    let mut lines = out.lines();
    let header = cells(lines.next().unwrap_or(""));
    let row = cells(lines.next().unwrap_or(""));
    assert_eq!(lines.next(), None, "one row expected:\n{out}");
    (header, row)
}

/// Whether a printed cell is a fresh object's age such as `3s`.
pub fn is_age(cell: &str) -> bool {
    cell.strip_suffix('s')
        .is_some_and(|n| n.parse::<u32>().is_ok())
}

/// Checks a printed row: every cell but the last equals `want`, and the
/// last is an age.
pub fn assert_row_then_age(row: &[String], want: &[&str]) {
    let (age, rest) = row.split_last().unwrap_or_else(|| panic!("empty row"));
    assert_eq!(rest, want, "row {row:?}");
    assert!(is_age(age), "age cell {age:?} in {row:?}");
}

/// The body of the Table GET of `path`, as kubectl asks for it.
pub fn table_body(s: &TestServer, path: &str) -> Vec<u8> {
    admin_curl(s)
        .args(["--max-time", "20"])
        .args(["-H", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"])
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs")
        .stdout
}

/// The Table the server answers for `path` (null when the answer is not
/// JSON).
pub fn raw_table(s: &TestServer, path: &str) -> Value {
    serde_json::from_slice(&table_body(s, path)).unwrap_or(Value::Null)
}

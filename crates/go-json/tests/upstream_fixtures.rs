//! Upstream's round-trip fixtures as the oracle (kubernetes/api
//! `testdata/HEAD`, vendored in `testdata/kubernetes-api`): each GA
//! fixture decoded as the server decodes a body and written again as the
//! server writes it must give back the fixture's bytes.

use std::path::PathBuf;

use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kubernetes-api/HEAD")
}

fn names(ext: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(fixtures())
        .expect("fixtures are vendored")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(&format!(".{ext}")).map(str::to_owned)
        })
        .collect();
    out.sort();
    out
}

/// The apiVersion and kind a fixture's name stands for
/// (`<group>.<version>.<Kind>`, group `core` for the legacy group).
fn api_version_and_kind(name: &str) -> (String, &str) {
    let mut parts = name.rsplitn(3, '.');
    let (kind, version, group) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    match group {
        "core" => (version.to_owned(), kind),
        _ => (format!("{group}/{version}"), kind),
    }
}

/// Decodes into the fixture's Go type as the server does: by the kind's
/// shape (a WatchEvent carries no apiVersion and kind of its own).
fn reshape(name: &str, v: &mut Value) -> Result<(), String> {
    let (api_version, kind) = api_version_and_kind(name);
    let shapes = go_json::table::shapes();
    let at = shapes
        .kind(&api_version, kind)
        .ok_or_else(|| format!("no shape for {api_version} {kind}"))?;
    go_json::normalize_as(&shapes.structs[at].name, v);
    Ok(())
}

fn first_difference(want: &str, got: &str) -> String {
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w != g {
            return format!("line {}: want {w:?}, got {g:?}", i + 1);
        }
    }
    format!(
        "lengths {} vs {}",
        want.lines().count(),
        got.lines().count()
    )
}

fn check(ext: &str, round_trip: impl Fn(&str, &[u8]) -> Result<String, String>) {
    let mut failures = Vec::new();
    for name in names(ext) {
        let bytes = std::fs::read(fixtures().join(format!("{name}.{ext}"))).expect("readable");
        let want = String::from_utf8(bytes.clone()).expect("UTF-8");
        match round_trip(&name, &bytes) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!("{name}: {}", first_difference(&want, &got))),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn json_fixtures_round_trip() {
    check("json", |name, bytes| {
        let mut v: Value =
            apimachinery::serializer::json::decode(bytes).map_err(|e| e.to_string())?;
        reshape(name, &mut v)?;
        let out = go_json::encode::to_vec_pretty(&v).map_err(|e| e.to_string())?;
        String::from_utf8(out).map_err(|e| e.to_string())
    });
}

#[test]
fn yaml_fixtures_round_trip() {
    check("yaml", |name, bytes| {
        let mut v: Value =
            apimachinery::serializer::yaml::decode(bytes).map_err(|e| e.to_string())?;
        reshape(name, &mut v)?;
        go_json::encode::to_yaml(&v)
    });
}

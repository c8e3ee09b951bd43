//! Upstream's serialization compatibility test
//! (`apimachinery/pkg/api/apitesting/roundtrip/compatibility.go`) with the
//! fixtures of kubernetes/api as the oracle (vendored in
//! `testdata/kubernetes-api`), through the server's own serializers: JSON
//! and YAML as `go-json` writes them after decoding into the kind's Go
//! shape, protobuf through this crate.
//!
//! - `HEAD`: every GA fixture decodes and encodes back to its own bytes in
//!   all three formats, and the protobuf one decodes to its JSON twin;
//! - previous releases (`v1.33.0`–`v1.36.0`, only the kinds whose fixtures
//!   differ from HEAD's): as upstream's `runPreviousVersionTest`, the three
//!   formats decode to one object and each re-encodes to the release's
//!   bytes, or to its `.after_roundtrip` file where upstream keeps one.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use serde_json::Value;

/// The releases whose fixtures are vendored (as `<version>.tar.gz`).
const RELEASES: [&str; 4] = ["v1.33.0", "v1.34.0", "v1.35.0", "v1.36.0"];

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kubernetes-api")
}

/// File name → bytes of HEAD's fixtures.
fn head() -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(testdata().join("HEAD"))
        .expect("fixtures are vendored")
        .map(|e| {
            let e = e.expect("readable directory");
            let name = e.file_name().into_string().expect("UTF-8 name");
            (name, std::fs::read(e.path()).expect("readable"))
        })
        .collect()
}

/// File name → bytes of a release's vendored fixtures.
fn release(version: &str) -> BTreeMap<String, Vec<u8>> {
    let file = std::fs::File::open(testdata().join(format!("{version}.tar.gz")))
        .expect("release fixtures are vendored");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = BTreeMap::new();
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("a tar entry");
        let path = entry.path().expect("a path").into_owned();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if entry.header().entry_type().is_file() {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).expect("readable entry");
            out.insert(name, bytes);
        }
    }
    out
}

/// The fixtures' names (`<group>.<version>.<Kind>`) among `files`.
fn names(files: &BTreeMap<String, Vec<u8>>) -> Vec<&str> {
    files
        .keys()
        .filter_map(|f| f.strip_suffix(".pb"))
        .filter(|n| !n.ends_with(".after_roundtrip"))
        .collect()
}

/// The apiVersion and kind a fixture's name stands for (group `core` for
/// the legacy group), as upstream's test decodes each fixture into its kind.
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

/// One format's decoder and encoder.
#[derive(Clone, Copy)]
enum Format {
    Json,
    Yaml,
    Protobuf,
}

const FORMATS: [Format; 3] = [Format::Json, Format::Yaml, Format::Protobuf];

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Protobuf => "pb",
        }
    }

    /// Decodes as the server decodes a body of the fixture's kind, into
    /// the kind's Go shape.
    fn decode(self, name: &str, bytes: &[u8]) -> Result<Value, String> {
        let (api_version, kind) = api_version_and_kind(name);
        let mut v = match self {
            Format::Json => {
                apimachinery::serializer::json::decode(bytes).map_err(|e| e.to_string())
            }
            Format::Yaml => {
                apimachinery::serializer::yaml::decode(bytes).map_err(|e| e.to_string())
            }
            Format::Protobuf => {
                protobuf_codec::decode_as(bytes, (&api_version, kind)).map_err(|e| e.to_string())
            }
        }?;
        if !go_json::normalize_kind(&api_version, kind, &mut v) {
            return Err(format!("no Go shape for {api_version} {kind}"));
        }
        Ok(v)
    }

    /// Encodes as the server writes the object (JSON indented, as the
    /// fixtures are).
    fn encode(self, name: &str, v: &Value) -> Result<Vec<u8>, String> {
        let (api_version, kind) = api_version_and_kind(name);
        match self {
            Format::Json => go_json::encode::to_vec_pretty(v).map_err(|e| e.to_string()),
            Format::Yaml => go_json::encode::to_yaml(v).map(String::into_bytes),
            Format::Protobuf => {
                protobuf_codec::encode_as(v, (&api_version, kind)).map_err(|e| e.to_string())
            }
        }
    }
}

/// Where two encodings first differ.
fn first_difference(format: Format, want: &[u8], got: &[u8]) -> String {
    if let (Format::Json | Format::Yaml, Ok(w), Ok(g)) =
        (format, std::str::from_utf8(want), std::str::from_utf8(got))
    {
        for (i, (wl, gl)) in w.lines().zip(g.lines()).enumerate() {
            if wl != gl {
                return format!("line {}: want {wl:?}, got {gl:?}", i + 1);
            }
        }
    }
    let at = want.iter().zip(got).take_while(|(a, b)| a == b).count();
    format!(
        "bytes differ from {at} (lengths {} and {})",
        want.len(),
        got.len()
    )
}

/// Decodes `bytes` and encodes the object again: the decoded object, and
/// an error when the encoding is not `want`.
fn round_trip(format: Format, name: &str, bytes: &[u8], want: &[u8]) -> Result<Value, String> {
    let decoded = format.decode(name, bytes)?;
    let encoded = format.encode(name, &decoded)?;
    if encoded != want {
        return Err(first_difference(format, want, &encoded));
    }
    Ok(decoded)
}

/// The compatibility check of one fixture in `files`: every format round
/// trips to `expected(format)` and all decode to the JSON's object.
fn check_fixture(
    files: &BTreeMap<String, Vec<u8>>,
    name: &str,
    expected: impl Fn(Format) -> Option<Vec<u8>>,
) -> Vec<String> {
    let mut failures = Vec::new();
    let mut decoded: Vec<(Format, Value)> = Vec::new();
    for format in FORMATS {
        let Some(bytes) = files.get(&format!("{name}.{}", format.ext())) else {
            failures.push(format!("{name}.{}: missing", format.ext()));
            continue;
        };
        let want = expected(format).unwrap_or_else(|| bytes.clone());
        match round_trip(format, name, bytes, &want) {
            Ok(v) => decoded.push((format, v)),
            Err(e) => failures.push(format!("{name}.{}: {e}", format.ext())),
        }
    }
    if let Some((_, json)) = decoded.iter().find(|(f, _)| matches!(f, Format::Json)) {
        for (format, other) in &decoded {
            if other != json {
                failures.push(format!(
                    "{name}.{}: decodes to another object than the JSON:\n{other:#}\nwant\n{json:#}",
                    format.ext()
                ));
            }
        }
    }
    failures
}

fn assert_none(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn head_fixtures_round_trip_in_every_format() {
    let files = head();
    let names = names(&files);
    assert!(names.len() > 90, "{} fixtures", names.len());
    assert_none(
        names
            .iter()
            .flat_map(|name| check_fixture(&files, name, |_| None))
            .collect(),
    );
}

#[test]
fn previous_releases_decode_and_encode_as_head_does() {
    let mut failures = Vec::new();
    for version in RELEASES {
        let files = release(version);
        assert!(!names(&files).is_empty(), "{version}: no fixtures");
        for name in names(&files) {
            let after = |f: Format| {
                files
                    .get(&format!("{name}.after_roundtrip.{}", f.ext()))
                    .cloned()
            };
            failures.extend(
                check_fixture(&files, name, after)
                    .into_iter()
                    .map(|e| format!("{version} {e}")),
            );
        }
    }
    assert_none(failures);
}

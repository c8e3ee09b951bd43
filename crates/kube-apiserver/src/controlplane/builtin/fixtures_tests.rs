//! Every served kind's upstream fixture (kubernetes/api `testdata/HEAD`,
//! vendored in `testdata/kubernetes-api`) decoded by its scheme, as a
//! request body is (the k8s-openapi types), and written in Go's shape
//! gives back the fixture's bytes: no field upstream has is lost.

use std::path::PathBuf;

use super::*;

fn fixture(info: &ResourceInfo) -> Option<Vec<u8>> {
    let group = if info.group.is_empty() {
        "core"
    } else {
        &info.group
    };
    let name = format!("{group}.{}.{}.json", info.version, info.kind);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kubernetes-api/HEAD");
    std::fs::read(dir.join(name)).ok()
}

pub(super) fn catalogue() -> Vec<Builtin> {
    let alloc = ServiceAllocator::new(
        crate::options::Cidr::from_v4(std::net::Ipv4Addr::new(10, 0, 0, 0), 24),
        crate::options::PortRange {
            base: 30000,
            size: 2768,
        },
        None,
    );
    let mut all = core_v1(alloc);
    all.extend(named_groups().into_iter().flatten());
    all.extend([
        horizontal_pod_autoscalers_v1(),
        events_v1(),
        crd(),
        api_service(),
    ]);
    all
}

fn round_trip(builtin: &Builtin, bytes: &[u8]) -> Result<(), String> {
    let input: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let decoded = builtin.strategies.scheme.decode(input)?;
    let mut object = decoded.object;
    go_json::normalize(&mut object);
    let got = go_json::encode::to_vec_pretty(&object).map_err(|e| e.to_string())?;
    if got == bytes {
        return Ok(());
    }
    let (want, got) = (
        String::from_utf8_lossy(bytes),
        String::from_utf8_lossy(&got),
    );
    let line = want.lines().zip(got.lines()).position(|(a, b)| a != b);
    Err(match line {
        Some(i) => format!(
            "line {}: want {:?}, got {:?} (unknown: {:?})",
            i + 1,
            want.lines().nth(i).unwrap_or_default(),
            got.lines().nth(i).unwrap_or_default(),
            decoded.unknown_fields
        ),
        None => format!("lengths differ (unknown: {:?})", decoded.unknown_fields),
    })
}

/// Fixtures the k8s-openapi types cannot decode, and why.
const EXCEPTIONS: &[(&str, &str)] = &[(
    "policy/PodDisruptionBudget",
    "a zero time in status.disruptedPods is null, which k8s-openapi's map of Time refuses",
)];

#[test]
fn served_kinds_keep_every_field_of_upstreams_fixtures() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for builtin in catalogue() {
        let Some(bytes) = fixture(&builtin.info) else {
            continue;
        };
        checked += 1;
        let name = format!("{}/{}", builtin.info.group, builtin.info.kind);
        let excepted = EXCEPTIONS.iter().any(|(n, _)| *n == name);
        match round_trip(&builtin, &bytes) {
            Err(e) if !excepted => failures.push(format!("{name}: {e}")),
            Ok(()) if excepted => failures.push(format!("{name}: passes, drop the exception")),
            _ => {}
        }
    }
    assert!(checked > 50, "only {checked} fixtures found");
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

use chrono::TimeZone;
use serde_json::json;

use super::*;
use crate::registry::rest::GcPolicy;
use crate::registry::store::DefaultStrategy;

/// A strategy with pods' graceful deletion: the requested period, else 30.
struct Graceful30;

impl GracefulDeleteStrategy for Graceful30 {
    fn grace_period(&self, _obj: &Value, requested: Option<i64>) -> Option<i64> {
        Some(requested.unwrap_or(30))
    }
}

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + secs, 0)
        .single()
        .unwrap_or_default()
}

fn options(body: &str, query: &[(&str, &str)]) -> Result<DeleteOptions, ApiError> {
    let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    DeleteOptions::from_request(body.as_bytes(), &QueryParams::parse(&query.join("&")))
}

#[test]
fn options_come_from_the_body_or_else_the_query() {
    let o = options(
        r#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":5,
            "propagationPolicy":"Foreground","preconditions":{"uid":"u1"}}"#,
        &[("propagationPolicy", "Orphan")],
    )
    .expect("valid");
    assert_eq!(o.grace_period_seconds, Some(5));
    assert_eq!(o.propagation_policy, Some(PropagationPolicy::Foreground));
    assert_eq!(o.preconditions.and_then(|p| p.uid).as_deref(), Some("u1"));
    let o = options(
        "",
        &[
            ("gracePeriodSeconds", "0"),
            ("orphanDependents", "true"),
            ("dryRun", "All"),
        ],
    )
    .expect("valid");
    assert_eq!(o.grace_period_seconds, Some(0));
    assert_eq!(o.orphan_dependents, Some(true));
    assert!(o.dry_run);
    let err = options("", &[("gracePeriodSeconds", "x")]).expect_err("not a number");
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "strconv.ParseInt: parsing \"x\": invalid syntax")
    );
}

#[test]
fn query_options_convert_as_upstream() {
    let o = options("", &[("orphanDependents", "yes")]).expect("valid");
    assert_eq!(o.orphan_dependents, Some(true));
    let o = options("", &[("orphanDependents", "False")]).expect("valid");
    assert_eq!(o.orphan_dependents, Some(false));
    let err = options("", &[("dryRun", "Bogus")]).expect_err("invalid");
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            422,
            "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Bogus\"]: supported values: \"All\""
        )
    );
    let err = options("", &[("dryRun", "All"), ("dryRun", "x")]).expect_err("every value");
    assert!(err
        .message
        .contains(r#"dryRun: Unsupported value: ["All","x"]"#));
    let err = options("", &[("propagationPolicy", "")]).expect_err("empty policy");
    assert_eq!(err.code, 422);
    // With a body the query's dryRun counts only when it is All.
    assert!(options("{}", &[("dryRun", "All")]).is_ok_and(|o| o.dry_run));
    assert!(options("{}", &[("dryRun", "Bogus")]).is_ok_and(|o| !o.dry_run));
}

#[test]
fn orphan_dependents_with_a_policy_is_invalid() {
    let err = options(
        r#"{"orphanDependents":true,"propagationPolicy":"Background"}"#,
        &[],
    )
    .expect_err("conflict");
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .starts_with("DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy"),
        "{}",
        err.message
    );
    assert!(err
        .message
        .contains("orphanDependents and deletionPropagation cannot be both set"));
    let err = options("", &[("propagationPolicy", "Sometimes")]).expect_err("unsupported");
    assert_eq!(err.code, 422);
}

fn opts(policy: Option<PropagationPolicy>, orphan: Option<bool>) -> DeleteOptions {
    DeleteOptions {
        propagation_policy: policy,
        orphan_dependents: orphan,
        ..Default::default()
    }
}

#[test]
fn gc_finalizers_follow_options_then_finalizers_then_the_default() {
    use PropagationPolicy::*;
    let dd = GcPolicy::DeleteDependents;
    assert_eq!(gc_finalizers(dd, &opts(None, None), &[]), None);
    assert_eq!(
        gc_finalizers(dd, &opts(Some(Orphan), None), &["a"]),
        Some(vec!["a".to_owned(), "orphan".to_owned()])
    );
    assert_eq!(
        gc_finalizers(dd, &opts(Some(Foreground), None), &["orphan"]),
        Some(vec!["foregroundDeletion".to_owned()])
    );
    assert_eq!(
        gc_finalizers(dd, &opts(None, Some(false)), &["orphan", "x"]),
        Some(vec!["x".to_owned()])
    );
    // An existing GC finalizer stands when the request names no policy.
    assert_eq!(
        gc_finalizers(dd, &opts(None, None), &["foregroundDeletion"]),
        None
    );
    let od = GcPolicy::OrphanDependents;
    assert_eq!(
        gc_finalizers(od, &opts(None, None), &[]),
        Some(vec!["orphan".to_owned()])
    );
    assert_eq!(gc_finalizers(od, &opts(Some(Background), None), &[]), None);
    let never = GcPolicy::Unsupported;
    assert_eq!(gc_finalizers(never, &opts(Some(Orphan), None), &[]), None);
    assert_eq!(
        gc_finalizers(never, &opts(None, None), &["orphan"]),
        Some(vec![])
    );
}

#[test]
fn graceful_deletion_sets_timestamp_period_and_generation() {
    let mut pod = json!({"metadata": {"name": "p", "generation": 1}});
    assert_eq!(
        before_delete(&Graceful30, &mut pod, None, at(0)),
        Graceful::Yes(30)
    );
    assert_eq!(
        pod["metadata"]["deletionTimestamp"],
        json!(format_time(at(30)))
    );
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(pod["metadata"]["generation"], 2);
    // A longer or equal period, or none, changes nothing.
    let before = pod.clone();
    assert_eq!(
        before_delete(&Graceful30, &mut pod, Some(60), at(10)),
        Graceful::Pending
    );
    assert_eq!(
        before_delete(&Graceful30, &mut pod, None, at(10)),
        Graceful::Pending
    );
    assert_eq!(pod, before);
    // A shorter one moves the deadline back, keeping the generation.
    assert_eq!(
        before_delete(&Graceful30, &mut pod, Some(10), at(5)),
        Graceful::Yes(10)
    );
    assert_eq!(
        pod["metadata"]["deletionTimestamp"],
        json!(format_time(at(10)))
    );
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 10);
    assert_eq!(pod["metadata"]["generation"], 2);
    // Past the deadline: now, with the shortest graceful period.
    assert_eq!(
        before_delete(&Graceful30, &mut pod, Some(3), at(20)),
        Graceful::Yes(1)
    );
    assert_eq!(
        pod["metadata"]["deletionTimestamp"],
        json!(format_time(at(20)))
    );
    assert_eq!(
        before_delete(&Graceful30, &mut pod, Some(0), at(20)),
        Graceful::Yes(0)
    );
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 0);
    // Once at zero, a deletion goes through at once.
    assert_eq!(
        before_delete(&Graceful30, &mut pod, None, at(21)),
        Graceful::No
    );
}

#[test]
fn resources_without_graceful_deletion_are_not_graceful() {
    let mut obj = json!({"metadata": {"name": "c", "generation": 4}});
    assert_eq!(
        before_delete(&DefaultStrategy, &mut obj, Some(30), at(0)),
        Graceful::No
    );
    assert!(obj.pointer("/metadata/deletionTimestamp").is_none());
    mark_as_deleting(&mut obj, at(0));
    assert_eq!(obj["metadata"]["generation"], 5);
    assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 0);
    let first = obj["metadata"]["deletionTimestamp"].clone();
    mark_as_deleting(&mut obj, at(50));
    assert_eq!(obj["metadata"]["deletionTimestamp"], first);
    assert_eq!(obj["metadata"]["generation"], 5);
}

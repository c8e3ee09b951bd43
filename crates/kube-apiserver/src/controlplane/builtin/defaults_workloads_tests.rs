//! Upstream's defaulting of the workload kinds (apps/v1, batch/v1 and both
//! served versions of autoscaling: `SetDefaults_*` of
//! pkg/apis/{apps,batch}/v1/defaults.go and pkg/apis/autoscaling/{v1,v2}/
//! defaults.go, with the pod template's core/v1 defaults), one row per
//! kind and case, through the same helpers as [`super::defaults_tests`].

use serde_json::{json, Value};

use super::defaults_tests::{assert_defaults, at, template, under, Row};

const UNSET: Value = Value::Null;

/// The pod template's defaults below `prefix`: core's pod spec defaults,
/// without those upstream keeps to pods (`SetDefaults_Pod`).
fn template_defaults(prefix: &str) -> Vec<(String, Value)> {
    let mut expected = under(&format!("{prefix}/spec"));
    expected.push((format!("{prefix}/spec/enableServiceLinks"), UNSET));
    expected
}

fn with(mut expected: Vec<(String, Value)>, prefix: &str) -> Vec<(String, Value)> {
    expected.extend(template_defaults(prefix));
    expected
}

fn apps_rows() -> Vec<Row> {
    let selector = json!({"matchLabels": {"app": "a"}});
    let sts_claim = json!({"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    vec![
        (
            "apps/v1",
            "Deployment",
            json!({"spec": {"selector": selector, "template": template()}}),
            with(
                at(vec![
                    ("/spec/replicas", json!(1)),
                    ("/spec/strategy/type", json!("RollingUpdate")),
                    ("/spec/strategy/rollingUpdate/maxUnavailable", json!("25%")),
                    ("/spec/strategy/rollingUpdate/maxSurge", json!("25%")),
                    ("/spec/revisionHistoryLimit", json!(10)),
                    ("/spec/progressDeadlineSeconds", json!(600)),
                ]),
                "/spec/template",
            ),
        ),
        (
            "apps/v1",
            "Deployment",
            json!({"spec": {"replicas": 0, "strategy": {"type": "", "rollingUpdate": {"maxSurge": 2}}}}),
            at(vec![
                ("/spec/replicas", json!(0)),
                ("/spec/strategy/type", json!("RollingUpdate")),
                ("/spec/strategy/rollingUpdate/maxUnavailable", json!("25%")),
                ("/spec/strategy/rollingUpdate/maxSurge", json!(2)),
            ]),
        ),
        (
            "apps/v1",
            "Deployment",
            json!({"spec": {"strategy": {"type": "Recreate"}}}),
            at(vec![
                ("/spec/strategy/type", json!("Recreate")),
                ("/spec/strategy/rollingUpdate", UNSET),
            ]),
        ),
        (
            "apps/v1",
            "ReplicaSet",
            json!({"spec": {"selector": selector, "template": template()}}),
            with(at(vec![("/spec/replicas", json!(1))]), "/spec/template"),
        ),
        (
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"selector": selector, "template": template(),
                "volumeClaimTemplates": [sts_claim]}}),
            with(
                at(vec![
                    ("/spec/replicas", json!(1)),
                    ("/spec/podManagementPolicy", json!("OrderedReady")),
                    ("/spec/updateStrategy/type", json!("RollingUpdate")),
                    ("/spec/updateStrategy/rollingUpdate/partition", json!(0)),
                    (
                        "/spec/updateStrategy/rollingUpdate/maxUnavailable",
                        json!(1),
                    ),
                    (
                        "/spec/persistentVolumeClaimRetentionPolicy",
                        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                    ),
                    ("/spec/revisionHistoryLimit", json!(10)),
                    (
                        "/spec/volumeClaimTemplates/0/spec/volumeMode",
                        json!("Filesystem"),
                    ),
                    (
                        "/spec/volumeClaimTemplates/0/status/phase",
                        json!("Pending"),
                    ),
                ]),
                "/spec/template",
            ),
        ),
        (
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"podManagementPolicy": "", "updateStrategy": {"type": "RollingUpdate"},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}}),
            at(vec![
                ("/spec/podManagementPolicy", json!("OrderedReady")),
                ("/spec/updateStrategy/rollingUpdate", UNSET),
                (
                    "/spec/persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Delete", "whenScaled": "Retain"}),
                ),
            ]),
        ),
        (
            "apps/v1",
            "DaemonSet",
            json!({"spec": {"selector": selector, "template": template()}}),
            with(
                at(vec![
                    ("/spec/updateStrategy/type", json!("RollingUpdate")),
                    (
                        "/spec/updateStrategy/rollingUpdate/maxUnavailable",
                        json!(1),
                    ),
                    ("/spec/updateStrategy/rollingUpdate/maxSurge", json!(0)),
                    ("/spec/revisionHistoryLimit", json!(10)),
                ]),
                "/spec/template",
            ),
        ),
        (
            "apps/v1",
            "DaemonSet",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
            at(vec![("/spec/updateStrategy", json!({"type": "OnDelete"}))]),
        ),
    ]
}

fn batch_rows() -> Vec<Row> {
    let failure_policy = json!({"rules": [{"action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget"}]}]});
    vec![
        (
            "batch/v1",
            "Job",
            json!({"metadata": {}, "spec": {"template": template()}}),
            with(
                at(vec![
                    ("/spec/completions", json!(1)),
                    ("/spec/parallelism", json!(1)),
                    ("/spec/backoffLimit", json!(6)),
                    ("/spec/completionMode", json!("NonIndexed")),
                    ("/spec/suspend", json!(false)),
                    ("/spec/podReplacementPolicy", json!("TerminatingOrFailed")),
                    ("/spec/manualSelector", json!(false)),
                    ("/metadata/labels", json!({"app": "a"})),
                ]),
                "/spec/template",
            ),
        ),
        (
            "batch/v1",
            "Job",
            json!({"metadata": {"labels": {"own": "x"}}, "spec": {"parallelism": 1,
                "completionMode": "Indexed", "backoffLimitPerIndex": 1,
                "podFailurePolicy": failure_policy, "template": template()}}),
            at(vec![
                ("/spec/completions", UNSET),
                ("/spec/parallelism", json!(1)),
                ("/spec/backoffLimit", json!(i32::MAX)),
                ("/spec/completionMode", json!("Indexed")),
                ("/spec/podReplacementPolicy", json!("Failed")),
                (
                    "/spec/podFailurePolicy/rules/0/onPodConditions/0/status",
                    json!("True"),
                ),
                ("/metadata/labels", json!({"own": "x"})),
            ]),
        ),
        (
            "batch/v1",
            "Job",
            json!({"spec": {"completions": 3}}),
            at(vec![
                ("/spec/completions", json!(3)),
                ("/spec/parallelism", json!(1)),
            ]),
        ),
        (
            "batch/v1",
            "CronJob",
            json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {
                "podFailurePolicy": failure_policy, "template": template()}}}}),
            with(
                at(vec![
                    ("/spec/concurrencyPolicy", json!("Allow")),
                    ("/spec/suspend", json!(false)),
                    ("/spec/successfulJobsHistoryLimit", json!(3)),
                    ("/spec/failedJobsHistoryLimit", json!(1)),
                    (
                        "/spec/jobTemplate/spec/podFailurePolicy/rules/0/onPodConditions/0/status",
                        json!("True"),
                    ),
                    // A job template is no Job: SetDefaults_Job does not run.
                    ("/spec/jobTemplate/spec/backoffLimit", UNSET),
                    ("/spec/jobTemplate/spec/completions", UNSET),
                    ("/spec/jobTemplate/spec/manualSelector", UNSET),
                ]),
                "/spec/jobTemplate/spec/template",
            ),
        ),
    ]
}

fn autoscaling_rows() -> Vec<Row> {
    let target = json!({"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"});
    vec![
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 3}}),
            at(vec![
                ("/spec/minReplicas", json!(1)),
                (
                    "/spec/metrics",
                    json!([{"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 80}}}]),
                ),
                ("/spec/behavior", UNSET),
            ]),
        ),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 3,
                "behavior": {"scaleDown": {"selectPolicy": "Min"}}}}),
            at(vec![
                (
                    "/spec/behavior/scaleUp",
                    json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                        "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                            {"type": "Percent", "value": 100, "periodSeconds": 15}]}),
                ),
                (
                    "/spec/behavior/scaleDown",
                    json!({"selectPolicy": "Min",
                        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}),
                ),
            ]),
        ),
        (
            "autoscaling/v1",
            "HorizontalPodAutoscaler",
            json!({"spec": {"scaleTargetRef": target, "maxReplicas": 3}}),
            at(vec![
                ("/spec/minReplicas", json!(1)),
                // Defaulted in conversion to the stored v2, not here.
                ("/spec/targetCPUUtilizationPercentage", UNSET),
            ]),
        ),
    ]
}

#[test]
fn every_workload_kind_gets_upstreams_defaults() {
    assert_defaults(
        apps_rows()
            .into_iter()
            .chain(batch_rows())
            .chain(autoscaling_rows()),
    );
}

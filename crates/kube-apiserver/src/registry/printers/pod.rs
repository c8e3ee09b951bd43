//! The Pod printer: upstream's `printPod`, whose STATUS cell walks init
//! containers (restartable sidecars included) and then the containers to
//! name the reason a user most needs to see.

use chrono::{DateTime, FixedOffset};
use serde_json::{json, Value};

use super::workloads::{since, timestamp};
use super::{age_cell, name_cell, or_none, string, text, TableColumn};
use super::{AGE_COLUMN, NAME_COLUMN};

pub fn columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        string("Status", "The aggregate status of the containers in this pod."),
        string("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
        AGE_COLUMN,
        string("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.").wide(),
        string("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename").wide(),
        string("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.").wide(),
        string("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates").wide(),
    ]
}

fn list<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn present(obj: &Value, pointer: &str) -> bool {
    obj.pointer(pointer).is_some_and(Value::is_object)
}

fn number(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The status of the pod condition of a type ("" when absent).
fn condition<'a>(pod: &'a Value, kind: &str) -> &'a str {
    list(pod, "/status/conditions")
        .iter()
        .find(|c| c["type"] == kind)
        .map_or("", |c| text(c, "/status"))
}

/// Restarts and the latest restart time over some container statuses.
#[derive(Default)]
struct Restarts {
    count: i64,
    last: Option<DateTime<FixedOffset>>,
}

impl Restarts {
    fn add(&mut self, status: &Value) {
        self.count += number(status, "/restartCount");
        let finished = timestamp(status, "/lastState/terminated/finishedAt");
        if finished > self.last {
            self.last = finished;
        }
    }
}

/// "Signal:N" or "ExitCode:N" for a terminated state without a reason.
fn exit_reason(terminated: &Value) -> String {
    match number(terminated, "/signal") {
        0 => format!("ExitCode:{}", number(terminated, "/exitCode")),
        signal => format!("Signal:{signal}"),
    }
}

/// What the init containers say: the reason while initializing, ready
/// sidecars, and restarts (all, and of restartable init containers).
struct InitState {
    reason: Option<String>,
    ready: usize,
    all: Restarts,
    sidecars: Restarts,
}

fn init_state(pod: &Value) -> InitState {
    let specs = list(pod, "/spec/initContainers");
    let restartable = |name: &str| {
        specs
            .iter()
            .find(|c| text(c, "/name") == name)
            .is_some_and(|c| text(c, "/restartPolicy") == "Always")
    };
    let mut state = InitState {
        reason: None,
        ready: 0,
        all: Restarts::default(),
        sidecars: Restarts::default(),
    };
    for (i, status) in list(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        let sidecar = restartable(text(status, "/name"));
        state.all.add(status);
        if sidecar {
            state.sidecars.add(status);
        }
        let terminated = status
            .pointer("/state/terminated")
            .filter(|t| t.is_object());
        let waiting = text(status, "/state/waiting/reason");
        if terminated.is_some_and(|t| number(t, "/exitCode") == 0) {
            continue;
        }
        if sidecar && status["started"] == json!(true) {
            state.ready += usize::from(status["ready"] == json!(true));
            continue;
        }
        state.reason = Some(match terminated {
            Some(t) => match text(t, "/reason") {
                "" => format!("Init:{}", exit_reason(t)),
                reason => format!("Init:{reason}"),
            },
            None if !waiting.is_empty() && waiting != "PodInitializing" => {
                format!("Init:{waiting}")
            }
            None => format!("Init:{i}/{}", specs.len()),
        });
        break;
    }
    state
}

/// Upstream's pass over the container statuses (last first) once the pod
/// is initialized: their restarts, the reason of the first one waiting or
/// terminated, and the number of ready running ones.
fn containers_state(pod: &Value, reason: &mut String, restarts: &mut Restarts) -> usize {
    let mut ready = 0;
    for status in list(pod, "/status/containerStatuses").iter().rev() {
        restarts.add(status);
        let waiting = text(status, "/state/waiting/reason");
        let terminated = status
            .pointer("/state/terminated")
            .filter(|t| t.is_object());
        if !waiting.is_empty() {
            *reason = waiting.to_owned();
        } else if let Some(t) = terminated {
            *reason = match text(t, "/reason") {
                "" => exit_reason(t),
                r => r.to_owned(),
            };
        } else if status["ready"] == json!(true) && present(status, "/state/running") {
            ready += 1;
        }
    }
    // A pod whose last reason is Completed but which still runs a container is not done.
    if *reason == "Completed" && ready > 0 {
        *reason = if condition(pod, "Ready") == "True" {
            "Running"
        } else {
            "NotReady"
        }
        .to_owned();
    }
    ready
}

/// Upstream's `printPod`.
pub fn row(pod: &Value) -> Vec<Value> {
    let specs = list(pod, "/spec/initContainers");
    let sidecar_specs = specs
        .iter()
        .filter(|c| text(c, "/restartPolicy") == "Always")
        .count();
    let total = list(pod, "/spec/containers").len() + sidecar_specs;
    let phase = text(pod, "/status/phase");
    let mut reason = match text(pod, "/status/reason") {
        "" => phase.to_owned(),
        r => r.to_owned(),
    };
    let gated = list(pod, "/status/conditions")
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated");
    if gated {
        reason = "SchedulingGated".to_owned();
    }
    let init = init_state(pod);
    let mut ready = init.ready;
    let mut restarts = init.all;
    let initializing = init.reason.is_some();
    if let Some(init_reason) = init.reason {
        reason = init_reason;
    }
    if !initializing || condition(pod, "Initialized") == "True" {
        restarts = init.sidecars;
        ready += containers_state(pod, &mut reason, &mut restarts);
    }
    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    if deleting && text(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        reason = "Terminating".to_owned();
    }
    let restarts_cell = match restarts.last {
        Some(last) if restarts.count != 0 => {
            format!("{} ({} ago)", restarts.count, since(Some(last)))
        }
        _ => restarts.count.to_string(),
    };
    vec![
        name_cell(pod),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        age_cell(pod),
        json!(match pod_ip(pod) {
            "" => "<none>",
            ip => ip,
        }),
        or_none(pod, "/spec/nodeName"),
        or_none(pod, "/status/nominatedNodeName"),
        json!(readiness_gates(pod)),
    ]
}

/// The first of `status.podIPs` (or `status.podIP`, which conversion keeps in step).
fn pod_ip(pod: &Value) -> &str {
    match list(pod, "/status/podIPs").first() {
        Some(ip) => text(ip, "/ip"),
        None => text(pod, "/status/podIP"),
    }
}

/// "true/total" over the readiness gates, each judged by the first
/// condition of its type.
fn readiness_gates(pod: &Value) -> String {
    let gates = list(pod, "/spec/readinessGates");
    if gates.is_empty() {
        return "<none>".to_owned();
    }
    let met = gates
        .iter()
        .filter(|g| condition(pod, text(g, "/conditionType")) == "True")
        .count();
    format!("{met}/{}", gates.len())
}

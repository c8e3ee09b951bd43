//! Volume devices, resize policies, resource claims, pod-level resources
//! and the operating system rules of a pod spec.

use serde_json::json;

use super::tests::{check, messages, with_container, with_spec};

#[test]
fn volume_devices_need_claim_backed_volumes_and_their_own_paths() {
    let volumes = json!([
        {"name": "block", "persistentVolumeClaim": {"claimName": "disk"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "cache", "emptyDir": {}}
    ]);
    let mut ok = with_container(json!({"volumeDevices": [
        {"name": "block", "devicePath": "/dev/xvda"},
        {"name": "scratch", "devicePath": "/dev/xvdb"}]}));
    ok["spec"]["volumes"] = volumes.clone();
    assert_eq!(messages(&ok), Vec::<String>::new());

    let mut bad = with_container(json!({
        "volumeMounts": [{"name": "block", "mountPath": "/data"}],
        "volumeDevices": [
            {"name": "cache", "devicePath": "/dev/../xvda"},
            {"name": "missing", "devicePath": "/data"},
            {"name": "block", "devicePath": "/dev/xvdc"},
            {"name": "block", "devicePath": "/dev/xvdc"},
            {"name": "", "devicePath": ""}]}));
    bad["spec"]["volumes"] = volumes;
    check(vec![(
        bad,
        vec![
            "spec.containers[0].volumeMounts[0].name: Invalid value: \"block\": must not already exist in volumeDevices",
            "spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/data\": must not already exist as a path in volumeDevices",
            "spec.containers[0].volumeDevices[0].name: Invalid value: \"cache\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            "spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/dev/../xvda\": can not contain backsteps ('..')",
            "spec.containers[0].volumeDevices[1].name: Not found: \"missing\"",
            "spec.containers[0].volumeDevices[1].devicePath: Invalid value: \"/data\": must not already exist as a path in volumeMounts",
            "spec.containers[0].volumeDevices[2].name: Invalid value: \"block\": must not already exist in volumeMounts",
            "spec.containers[0].volumeDevices[3].name: Invalid value: \"block\": must be unique",
            "spec.containers[0].volumeDevices[3].devicePath: Invalid value: \"/dev/xvdc\": must be unique",
            "spec.containers[0].volumeDevices[3].name: Invalid value: \"block\": must not already exist in volumeMounts",
            "spec.containers[0].volumeDevices[4].name: Required value",
            "spec.containers[0].volumeDevices[4].name: Not found: \"\"",
            "spec.containers[0].volumeDevices[4].devicePath: Required value",
        ],
    )]);
}

#[test]
fn resize_policies() {
    let ok = with_container(json!({"resizePolicy": [
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "memory", "restartPolicy": "RestartContainer"}]}));
    assert_eq!(messages(&ok), Vec::<String>::new());
    let mut never = with_container(json!({"resizePolicy": [
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "cpu", "restartPolicy": "RestartContainer"},
        {"resourceName": "gpu", "restartPolicy": "Sometimes"},
        {"resourceName": "", "restartPolicy": ""}]}));
    never["spec"]["restartPolicy"] = json!("Never");
    check(vec![(
        never,
        vec![
            "spec.containers[0].resizePolicy[1]: Duplicate value: \"cpu\"",
            "spec.containers[0].resizePolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' when `restartPolicy` is 'Never'",
            "spec.containers[0].resizePolicy: Unsupported value: \"gpu\": supported values: \"cpu\", \"memory\"",
            "spec.containers[0].resizePolicy: Unsupported value: \"Sometimes\": supported values: \"NotRequired\", \"RestartContainer\"",
            "spec.containers[0].resizePolicy: Invalid value: \"Sometimes\": must be 'NotRequired' when `restartPolicy` is 'Never'",
            "spec.containers[0].resizePolicy: Required value",
            "spec.containers[0].resizePolicy: Required value",
            "spec.containers[0].resizePolicy: Invalid value: \"\": must be 'NotRequired' when `restartPolicy` is 'Never'",
        ],
    )]);
}

#[test]
fn resource_claims_of_the_pod_and_its_containers() {
    let ok = with_spec(json!({
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
                           {"name": "shared", "resourceClaimName": "shared-claim"}],
        "containers": [{"name": "app", "image": "nginx", "resources": {"claims": [
            {"name": "gpu", "request": "first"}, {"name": "shared"}]}}]}));
    assert_eq!(messages(&ok), Vec::<String>::new());
    check(vec![
        (
            with_spec(json!({"resourceClaims": [
                {"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"},
                {"name": "gpu"},
                {"name": "Bad_Name", "resourceClaimName": "Not.Valid"},
                {"resourceClaimName": "c"}]})),
            vec![
                "spec.resourceClaims[0]: Invalid value: {\"name\":\"gpu\",\"resourceClaimName\":\"a\",\"resourceClaimTemplateName\":\"b\"}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
                "spec.resourceClaims[1].name: Duplicate value: \"gpu\"",
                "spec.resourceClaims[1]: Invalid value: {\"name\":\"gpu\"}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                "spec.resourceClaims[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.resourceClaims[2].resourceClaimName: Invalid value: \"Not.Valid\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.resourceClaims[3].name: Required value",
            ],
        ),
        (
            with_spec(json!({
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "a"},
                                   {"name": "net", "resourceClaimName": "b"}],
                "containers": [{"name": "app", "image": "nginx", "resources": {"claims": [
                    {"name": "gpu", "request": "one"}, {"name": "gpu"}, {"name": "gpu"},
                    {"name": "net", "request": "one"}, {"name": "net", "request": "one"},
                    {"name": "other"}, {"name": ""}]}}]})),
            vec![
                "spec.containers[0].resources.claims[1]: Duplicate value: \"gpu\"",
                "spec.containers[0].resources.claims[2]: Duplicate value: \"gpu\"",
                "spec.containers[0].resources.claims[4]: Duplicate value: \"net/one\"",
                "spec.containers[0].resources.claims[5]: Not found: \"other\": must be one of the names in pod.spec.resourceClaims: gpu, net",
                "spec.containers[0].resources.claims[6]: Required value",
            ],
        ),
        (
            with_container(json!({"resources": {"claims": [{"name": "gpu"}]}})),
            vec!["spec.containers[0].resources.claims[0]: Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims which is empty"],
        ),
    ]);
}

#[test]
fn pod_level_resources() {
    let ok = with_spec(json!({
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}},
        "initContainers": [{"name": "init", "image": "busybox",
            "resources": {"requests": {"cpu": "1"}}}],
        "containers": [{"name": "app", "image": "nginx",
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}},
            {"name": "side", "image": "envoy",
            "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}}}]}));
    assert_eq!(messages(&ok), Vec::<String>::new());
    check(vec![
        (
            with_spec(json!({"resources": {
                "requests": {"cpus": "1", "ephemeral-storage": "1Gi", "example.com/gpu": "1"},
                "claims": [{"name": "x"}]}})),
            vec![
                "spec.resources.claims: Forbidden: claims cannot be set for Resources at pod-level",
                "spec.resources.requests[cpus]: Invalid value: \"cpus\": must be a standard resource type or fully qualified",
                "spec.resources.requests[ephemeral-storage]: Unsupported value: \"ephemeral-storage\": supported values: \"cpu\", \"hugepages-\", \"memory\"",
                "spec.resources.requests[example.com/gpu]: Unsupported value: \"example.com/gpu\": supported values: \"cpu\", \"hugepages-\", \"memory\"",
                "spec.resources.limits: Required value: Limit must be set for non overcommitable resources",
                "spec.resources.claims[0]: Not found: \"x\": must be one of the names in pod.spec.resourceClaims which is empty",
            ],
        ),
        (
            // Sidecars run beside the containers: 1 + 500m + 250m of cpu; the
            // init container needs 2 with the sidecar started before it.
            with_spec(json!({
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                              "limits": {"cpu": "1500m", "memory": "1Gi"}},
                "initContainers": [
                    {"name": "side", "image": "envoy", "restartPolicy": "Always",
                     "resources": {"requests": {"cpu": "250m"}}},
                    {"name": "init", "image": "busybox",
                     "resources": {"requests": {"cpu": "1750m"}}}],
                "containers": [
                    {"name": "app", "image": "nginx",
                     "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "2Gi"}}},
                    {"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}]})),
            vec![
                "spec.resources.requests[cpu]: Invalid value: \"1\": must be greater than or equal to aggregate container requests of 2",
                "spec.resources.requests[memory]: Invalid value: \"1Gi\": must be greater than or equal to aggregate container requests of 2Gi",
                "spec.resources.containers[0][memory].limits: Invalid value: \"2Gi\": must be less than or equal to pod limits of 1Gi",
            ],
        ),
        (
            with_spec(json!({"os": {"name": "windows"}, "resources": {"limits": {"cpu": "1"}}})),
            vec!["spec.resources: Forbidden: may not be set for a windows pod"],
        ),
    ]);
}

#[test]
fn overhead_is_checked_as_limits() {
    check(vec![(
        with_spec(json!({"overhead": {"cpu": "-1", "example.com/fpga": "500m"}})),
        vec![
            "spec.overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
            "spec.overhead.limits[example.com/fpga]: Invalid value: \"500m\": must be an integer",
        ],
    )]);
}

#[test]
fn windows_and_linux_pods() {
    let windows = with_spec(json!({
        "os": {"name": "windows"},
        "hostPID": true, "hostUsers": true, "shareProcessNamespace": false,
        "securityContext": {"runAsUser": 1000, "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "0"}],
            "seccompProfile": {"type": "RuntimeDefault"},
            "windowsOptions": {"runAsUserName": "ContainerUser"}},
        "initContainers": [{"name": "init", "image": "busybox",
            "securityContext": {"readOnlyRootFilesystem": true, "capabilities": {"add": ["NET_ADMIN"]}}}],
        "containers": [{"name": "app", "image": "nginx",
            "securityContext": {"runAsGroup": 1, "windowsOptions": {"hostProcess": false}}}]}));
    let linux = with_spec(json!({
        "os": {"name": "linux"},
        "securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}},
        "containers": [{"name": "app", "image": "nginx",
            "securityContext": {"windowsOptions": {"runAsUserName": "ContainerUser"}}}]}));
    check(vec![
        (
            windows,
            vec![
                "spec.hostUsers: Forbidden: cannot be set for a windows pod",
                "spec.hostPID: Forbidden: cannot be set for a windows pod",
                "spec.securityContext.seccompProfile: Forbidden: cannot be set for a windows pod",
                "spec.securityContext.sysctls: Forbidden: cannot be set for a windows pod",
                "spec.shareProcessNamespace: Forbidden: cannot be set for a windows pod",
                "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
                "spec.initContainers[0].securityContext.capabilities: Forbidden: cannot be set for a windows pod",
                "spec.initContainers[0].securityContext.readOnlyRootFilesystem: Forbidden: cannot be set for a windows pod",
                "spec.containers[0].securityContext.runAsGroup: Forbidden: cannot be set for a windows pod",
            ],
        ),
        (
            linux,
            vec![
                "spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
                "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
            ],
        ),
        (
            with_spec(json!({"os": {"name": "darwin"}, "securityContext": {"fsGroup": 1}})),
            vec!["spec.os: Unsupported value: \"darwin\": supported values: \"linux\", \"windows\""],
        ),
    ]);
}

#[test]
fn host_process_pods() {
    let host_process = json!({"windowsOptions": {"hostProcess": true}});
    let mut mixed = with_spec(json!({
        "securityContext": host_process.clone(),
        "initContainers": [{"name": "init", "image": "busybox",
            "securityContext": {"windowsOptions": {"hostProcess": false}}}]}));
    mixed["spec"]["containers"][0]["securityContext"] = host_process.clone();
    let mut one_of_two = with_spec(json!({"hostNetwork": true}));
    one_of_two["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(json!({"name": "helper", "image": "busybox", "securityContext": host_process}));
    check(vec![
        (
            mixed,
            vec![
                "spec.initContainers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true",
                "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
                "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
                "spec: Forbidden: hostProcess containers are disallowed by cluster policy",
            ],
        ),
        (
            one_of_two,
            vec![
                "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
                "spec: Forbidden: hostProcess containers are disallowed by cluster policy",
            ],
        ),
        (
            with_spec(json!({"securityContext": {"windowsOptions": {"hostProcess": false}}})),
            vec![],
        ),
    ]);
}

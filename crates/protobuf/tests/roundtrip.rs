//! Round trips JSON → protobuf → JSON over example objects of many kinds:
//! what comes back is the object upstream would serve (compared in Go's
//! JSON shape, since Go's marshaller writes every non-pointer struct and
//! scalar, so their zero values come back).

use protobuf_codec::{decode, encode};
use serde_json::{json, Value};

/// Asserts that `value` survives protobuf encoding unchanged.
fn assert_round_trip(value: Value) {
    let bytes = encode(&value).unwrap_or_else(|e| panic!("encoding {value}: {e}"));
    assert!(bytes.starts_with(b"k8s\0"));
    let mut back = decode(&bytes).unwrap_or_else(|e| panic!("decoding {value}: {e}"));
    let mut value = value;
    go_json::normalize(&mut value);
    go_json::normalize(&mut back);
    assert_eq!(back, value, "\nexpected {value:#}\n     got {back:#}");
}

#[test]
fn pod_with_containers_ports_and_quantities() {
    assert_round_trip(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web"},
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "uid": "6f1e2f1c-0000-4000-8000-000000000001",
            "resourceVersion": "42",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u1", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}]
        },
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx:1.27",
                "command": ["nginx", "-g", "daemon off;"],
                "ports": [{"containerPort": 80, "protocol": "TCP", "hostIP": "0.0.0.0", "hostPort": 8080}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "0.25"}},
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "b", "optional": false}}}],
                "livenessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10},
                "readinessProbe": {"tcpSocket": {"port": 80}},
                "stdin": true
            }],
            "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                        {"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420}}],
            "hostIPC": true,
            "nodeName": "node-1",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "podIPs": [{"ip": "10.0.0.5"}],
            "hostIP": "192.168.1.2",
            "startTime": "2024-05-01T10:00:01Z",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:02Z"}]
        }
    }));
}

/// Serializes `value` through the k8s-openapi type `T`, asserting that the
/// example is already in the form k8s-openapi writes.
fn assert_canonical<T: serde::de::DeserializeOwned + serde::Serialize>(value: &Value) {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("k8s-openapi rejects {value}: {e}"));
    let canonical = serde_json::to_value(&typed).expect("k8s-openapi serializes");
    assert_eq!(&canonical, value, "example is not in k8s-openapi form");
}

#[test]
fn deployment_with_int_or_string() {
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "generation": 3, "annotations": {"a": ""}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "args": ["sleep", "3600"]}]}
            },
            "revisionHistoryLimit": 10,
            "paused": true
        },
        "status": {"replicas": 2, "observedGeneration": 3,
                   "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2024-01-02T03:04:05Z",
                                   "lastTransitionTime": "2024-01-02T03:04:05Z", "reason": "MinimumReplicasAvailable"}]}
    });
    assert_canonical::<k8s_openapi::api::apps::v1::Deployment>(&deployment);
    assert_round_trip(deployment);
}

#[test]
fn service_with_cluster_ips_and_target_port() {
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "type": "NodePort",
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10", "fd00::10"],
            "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "PreferDualStack",
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080, "protocol": "TCP"},
                      {"name": "https", "port": 443, "targetPort": "https", "appProtocol": "h2"}],
            "selector": {"app": "web"},
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "ports": [{"port": 80, "protocol": "TCP"}]}]}}
    });
    assert_canonical::<k8s_openapi::api::core::v1::Service>(&service);
    assert_round_trip(service);
}

#[test]
fn config_map_with_binary_data_and_secret() {
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default"},
        "data": {"a.txt": "hello", "empty": ""},
        "binaryData": {"blob": "AAECAwT/", "none": ""},
        "immutable": true
    });
    assert_canonical::<k8s_openapi::api::core::v1::ConfigMap>(&config_map);
    assert_round_trip(config_map);
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"},
        "stringData": {"plain": "text"}
    });
    assert_canonical::<k8s_openapi::api::core::v1::Secret>(&secret);
    assert_round_trip(secret);
}

#[test]
fn namespace_and_node() {
    assert_round_trip(json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}
    }));
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"], "providerID": "kind://node-1",
                 "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "7800m", "memory": "15Gi"},
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "node-1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1", "osImage": "Debian",
                         "containerRuntimeVersion": "containerd://1.7", "kubeletVersion": "v1.37.0",
                         "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-05-01T10:00:00Z",
                            "lastTransitionTime": "2024-05-01T09:00:00Z", "reason": "KubeletReady", "message": "ok"}],
            "images": [{"names": ["nginx:1.27"], "sizeBytes": 73000000}]
        }
    });
    assert_canonical::<k8s_openapi::api::core::v1::Node>(&node);
    assert_round_trip(node);
}

#[test]
fn events_and_lease_keep_micro_time() {
    let event = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "eventTime": "2024-05-01T10:00:00.123456Z",
        "series": {"count": 2, "lastObservedTime": "2024-05-01T10:00:05.000001Z"},
        "reportingController": "kubelet",
        "reportingInstance": "node-1",
        "action": "Pulling",
        "reason": "Pulling",
        "regarding": {"kind": "Pod", "name": "web", "namespace": "default", "uid": "u", "apiVersion": "v1", "fieldPath": "spec.containers{c}"},
        "type": "Normal"
    });
    assert_canonical::<k8s_openapi::api::events::v1::Event>(&event);
    assert_round_trip(event);
    assert_round_trip(json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e2", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "node-1"},
        "firstTimestamp": "2024-05-01T10:00:00Z",
        "lastTimestamp": "2024-05-01T10:01:00Z",
        "count": 3,
        "source": {"component": "kubelet", "host": "node-1"},
        "eventTime": "2024-05-01T10:00:00.500000Z"
    }));
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
        "spec": {"holderIdentity": "sched-1", "leaseDurationSeconds": 15,
                 "acquireTime": "2024-05-01T10:00:00.000000Z", "renewTime": "2024-05-01T10:00:10.654321Z",
                 "leaseTransitions": 4}
    });
    assert_canonical::<k8s_openapi::api::coordination::v1::Lease>(&lease);
    assert_round_trip(lease);
}

#[test]
fn custom_resource_definition_with_schema() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "spec": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {
                                "size": {"type": "integer", "minimum": 1.5, "maximum": 10.5, "default": 3},
                                "mode": {"type": "string", "enum": ["fast", "slow", null]},
                                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                                "tuple": {"items": [{"type": "string"}, {"type": "integer"}]},
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                "closed": {"type": "object", "additionalProperties": false},
                                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                                "ref": {"$ref": "#/definitions/x", "example": {"a": [1, 2]}}
                            },
                            "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}},
                            "x-kubernetes-validations": [{"rule": "self.size > 0", "message": "positive"}]
                        }
                    }
                }},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
            }],
            "conversion": {"strategy": "None"}
        },
        // A non-pointer struct: Go writes it, and its required names, always.
        "status": {"acceptedNames": {"plural": "", "kind": ""}}
    });
    assert_canonical::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&crd);
    assert_round_trip(crd);
}

#[test]
fn rbac_and_review_kinds() {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]},
                  {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]
    });
    assert_canonical::<k8s_openapi::api::rbac::v1::Role>(&role);
    assert_round_trip(role);
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}},
        "status": {"allowed": true, "reason": "RBAC: allowed"}
    });
    assert_canonical::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(&review);
    assert_round_trip(review);
    let token_review = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "metadata": {},
        "spec": {"token": "abc", "audiences": ["api"]},
        "status": {"authenticated": true,
                   "user": {"username": "alice", "groups": ["dev"], "extra": {"scopes": ["a", "b"], "none": []}}}
    });
    assert_canonical::<k8s_openapi::api::authentication::v1::TokenReview>(&token_review);
    assert_round_trip(token_review);
    assert_round_trip(json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr-1"},
        "spec": {"request": "LS0tLS1CRUdJTg==", "signerName": "kubernetes.io/kubelet-serving", "usages": ["digital signature"]},
        "status": {"certificate": "Y2VydA=="}
    }));
}

#[test]
fn lists_tag_their_items() {
    let list = json!({
        "apiVersion": "v1",
        "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "100", "continue": "token", "remainingItemCount": 5},
        "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}, "data": {"k": "v"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "x"}}
        ]
    });
    assert_round_trip(list);
    assert_round_trip(
        json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": []}),
    );
    assert_round_trip(json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadataList",
        "metadata": {"resourceVersion": "7"},
        "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {"name": "a", "labels": {"x": "y"}}}]
    }));
    // The untyped list embeds whole objects (as JSON) and leaves them as they are.
    assert_round_trip(json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {},
        "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
                  {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}]
    }));
}

#[test]
fn meta_kinds_under_any_group_version() {
    assert_round_trip(json!({
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": "pods \"x\" not found",
        "reason": "NotFound",
        "details": {"name": "x", "kind": "pods", "causes": [{"reason": "FieldValueInvalid", "field": "spec"}], "retryAfterSeconds": 1},
        "code": 404
    }));
    assert_round_trip(json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u", "resourceVersion": "5"},
        "dryRun": ["All"]
    }));
    assert_round_trip(
        json!({"apiVersion": "apps/v1", "kind": "DeleteOptions", "orphanDependents": false}),
    );
}

#[test]
fn empty_optional_strings_follow_omitempty() {
    // Go writes non-pointer strings even when empty; their JSON form omits
    // them, so decoding drops them...
    let value = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "", "generateName": ""},
        "spec": {"storageClassName": "", "volumeName": "", "accessModes": ["ReadWriteOnce", ""],
                 "resources": {"requests": {"storage": "1Gi"}}}
    });
    let back = decode(&encode(&value).expect("encodes")).expect("decodes");
    // ...except where the empty string is a setting of its own (a Go
    // `*string`).
    assert_eq!(
        back,
        json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {"storageClassName": "", "accessModes": ["ReadWriteOnce", ""],
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {}
        })
    );
    // Every Go pointer string is such a setting: a defaulted hostPath type.
    let volume = json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
        "spec": {"hostPath": {"path": "/data", "type": ""}}
    });
    let back = decode(&encode(&volume).expect("encodes")).expect("decodes");
    assert_eq!(
        back["spec"]["hostPath"],
        json!({"path": "/data", "type": ""})
    );
}

#[test]
fn integral_doubles_decode_as_integers() {
    // Go's JSON writes the float64 1 as `1`; either spelling encodes alike.
    let schema = |minimum: Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "a.b"},
            "spec": {"group": "b", "names": {"kind": "A", "plural": "as"}, "scope": "Cluster",
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "integer", "minimum": minimum}}}]}
        })
    };
    let float = encode(&schema(json!(1.0))).expect("encodes");
    assert_eq!(float, encode(&schema(json!(1))).expect("encodes"));
    let mut want = schema(json!(1));
    // A non-pointer struct: Go writes it, and its required names, always.
    want["status"] = json!({"acceptedNames": {"plural": "", "kind": ""}});
    assert_eq!(decode(&float).expect("decodes"), want);
}

/// Go writes non-pointer numbers and bools even when zero; upstream's JSON
/// leaves those zeros out (`omitempty`) but keeps a pointer field's zero.
#[test]
fn zeros_go_writes_are_left_out_as_upstream_serves_them() {
    let sent = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "generation": 0},
        "spec": {
            "replicas": 0,
            "minReadySeconds": 0,
            "paused": false,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "c", "image": "nginx", "stdin": false, "tty": false,
                        "ports": [{"containerPort": 80, "hostPort": 0}]}],
                    "hostNetwork": false,
                    "enableServiceLinks": false,
                    "terminationGracePeriodSeconds": 0
                }
            }
        }
    });
    let back = decode(&encode(&sent).expect("encode")).expect("decode");
    assert_eq!(
        back,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{"name": "c", "image": "nginx",
                            "ports": [{"containerPort": 80}], "resources": {}}],
                        "enableServiceLinks": false,
                        "terminationGracePeriodSeconds": 0
                    }
                },
                "strategy": {}
            },
            "status": {}
        })
    );
}

#[test]
fn lists_encoded_from_their_parts_match_the_assembled_list() {
    let items: Vec<Value> = (0..200)
        .map(|i| {
            json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": format!("cm-{i}"), "namespace": "default",
                "resourceVersion": format!("{}", 100 + i)},
                "data": {"key": "v".repeat(i * 3)}})
        })
        .collect();
    let metadata = json!({"resourceVersion": "400", "continue": "token"});
    let assembled = json!({"apiVersion": "v1", "kind": "ConfigMapList",
        "metadata": metadata, "items": items});
    let whole = encode(&assembled).expect("encode the assembled list");
    let encoded: Vec<Vec<u8>> = items
        .iter()
        .map(|item| encode(item).expect("encode an item"))
        .collect();
    let messages: Vec<&[u8]> = encoded
        .iter()
        .map(|item| protobuf_codec::list_item_message(item).expect("an item's message"))
        .collect();
    let encode_list = |kind| {
        let mut out = Vec::new();
        let written = |part: protobuf_codec::ListPart<'_>| match part {
            protobuf_codec::ListPart::Framing(bytes) => out.extend_from_slice(bytes),
            protobuf_codec::ListPart::Item(i, bytes) => {
                // Each item is handed out as it was given.
                assert_eq!(bytes.as_ptr_range(), messages[i].as_ptr_range());
                out.extend_from_slice(bytes)
            }
        };
        protobuf_codec::encode_list_of("v1", kind, &metadata, &messages, written).map(|()| out)
    };
    let parts = encode_list("ConfigMapList").expect("encode from parts");
    assert!(parts == whole, "the two encodings differ");
    let back = decode(&parts).expect("decode");
    assert_eq!(back["metadata"], metadata);
    assert_eq!(back["items"].as_array().map(Vec::len), Some(200));
    assert_eq!(back["items"][199]["data"], items[199]["data"]);
    assert!(encode_list("NoSuchList").is_err());
    let truncated = protobuf_codec::list_item_message(&encoded[0][..3]);
    assert!(truncated.is_err(), "an item that is not an encoded object");
}

/// A Deployment whose wire form has no spec (found by the fuzzer): the
/// spec the decoder supplies holds its own required fields (`selector`), so
/// its encoding is a fixed point (the values may differ: the second decode
/// also holds the non-pointer structs the encoder always writes).
#[test]
fn a_missing_spec_decodes_as_an_empty_one_with_its_required_fields() {
    let mut bytes = b"k8s\0\x0a\x15\x0a\x07apps/v1\x12\x0aDeployment".to_vec();
    bytes.extend_from_slice(b"\x12\x02\x0a\x00");
    let first = decode(&bytes).expect("decodes");
    assert!(first["spec"]["selector"].is_object(), "{first}");
    assert!(first["spec"]["template"].is_object(), "{first}");
    let encoded = encode(&first).expect("encodes");
    let second = decode(&encoded).expect("decodes again");
    assert_eq!(encode(&second).expect("encodes again"), encoded);
}

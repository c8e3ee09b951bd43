//! The `paths` of the Swagger 2.0 document, laid out as upstream's
//! route-generated spec: per resource the collection, item, watch,
//! all-namespaces and subresource paths, each operation with upstream's
//! operationId (`patchCoreV1NamespacedPod`), tag (`core_v1`), consumed and
//! produced media types, inline parameters and the
//! `x-kubernetes-action` / `x-kubernetes-group-version-kind` extensions.
//! kubectl (1.27, 1.28) looks for the `fieldValidation` query parameter on
//! the PATCH operation of a kind to decide that the server validates
//! fields itself.

use apiserver::registry::ResourceInfo;
use serde_json::{json, Map, Value};

use super::definitions::{DELETE_OPTIONS, PATCH, PREFIX, SCALE, STATUS, WATCH_EVENT};

const PRODUCES: [&str; 4] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/cbor",
];
const PATCH_TYPES: [&str; 5] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
];
const LIST_PARAMS: [(&str, &str, &str); 10] = [
    (
        "allowWatchBookmarks",
        "boolean",
        "Requests watch events with type BOOKMARK.",
    ),
    (
        "continue",
        "string",
        "The continue token of a previous paged list call.",
    ),
    (
        "fieldSelector",
        "string",
        "A selector restricting the returned objects by their fields.",
    ),
    (
        "labelSelector",
        "string",
        "A selector restricting the returned objects by their labels.",
    ),
    (
        "limit",
        "integer",
        "The maximum number of responses to return for a list call.",
    ),
    (
        "resourceVersion",
        "string",
        "Constrains which resource versions the request may be served from.",
    ),
    (
        "resourceVersionMatch",
        "string",
        "How resourceVersion is applied to list calls.",
    ),
    (
        "sendInitialEvents",
        "boolean",
        "Whether a watch starts with synthetic events of the current state.",
    ),
    (
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call.",
    ),
    (
        "watch",
        "boolean",
        "Watch for changes to the described resources.",
    ),
];
const DRY_RUN: (&str, &str, &str) = (
    "dryRun",
    "string",
    "When present, modifications are not persisted (All: every dry run stage).",
);
const FIELD_MANAGER: (&str, &str, &str) = (
    "fieldManager",
    "string",
    "The name of the actor or entity making these changes.",
);
const FIELD_VALIDATION: (&str, &str, &str) = (
    "fieldValidation",
    "string",
    "How the server handles unknown or duplicate fields: Ignore, Warn (default) or Strict.",
);
const DELETE_PARAMS: [(&str, &str, &str); 5] = [
    DRY_RUN,
    (
        "gracePeriodSeconds",
        "integer",
        "Seconds before the object should be deleted.",
    ),
    (
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
        "Deletes corrupt objects that cannot be read (unsafe).",
    ),
    (
        "orphanDependents",
        "boolean",
        "Deprecated: use propagationPolicy.",
    ),
    (
        "propagationPolicy",
        "string",
        "Whether and how garbage collection is performed: Orphan, Background or Foreground.",
    ),
];

fn query(&(name, ty, description): &(&str, &str, &str)) -> Value {
    let mut p = json!({"description": description, "in": "query", "name": name, "type": ty});
    p["uniqueItems"] = true.into();
    p
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"description": description, "in": "path", "name": name, "required": true,
        "type": "string", "uniqueItems": true})
}

fn body(schema: &str, required: bool) -> Value {
    let mut p =
        json!({"in": "body", "name": "body", "schema": {"$ref": format!("{PREFIX}{schema}")}});
    if required {
        p["required"] = true.into();
    }
    p
}

/// `rbac.authorization.k8s.io` → `RbacAuthorization`, core → `Core`.
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed.split(['.', '-']).map(capitalize).collect()
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// `rbacAuthorization_v1`, `core_v1`.
fn tag(info: &ResourceInfo) -> String {
    let camel = group_camel(&info.group);
    let mut chars = camel.chars();
    let lower: String = chars
        .next()
        .map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect());
    format!("{lower}_{}", info.version)
}

/// What differs between the operations of one resource.
struct Op<'a> {
    method: &'static str,
    action: &'static str,
    id: String,
    params: Vec<Value>,
    responses: Vec<(&'static str, &'a str)>,
    gvk: Value,
}

struct Builder<'a> {
    info: &'a ResourceInfo,
    kind_def: &'a str,
    list_def: &'a str,
    gv: String,
    tag: String,
}

impl Builder<'_> {
    fn id(&self, verb: &str, namespaced: bool, suffix: &str) -> String {
        let scope = if namespaced { "Namespaced" } else { "" };
        format!("{verb}{}{scope}{}{suffix}", self.gv, self.info.kind)
    }

    fn gvk(&self) -> Value {
        json!({"group": self.info.group, "kind": self.info.kind, "version": self.info.version})
    }

    fn operation(&self, op: Op) -> Value {
        let consumes: Vec<&str> = if op.method == "patch" {
            PATCH_TYPES.to_vec()
        } else {
            vec!["*/*"]
        };
        let mut produces = PRODUCES.to_vec();
        if matches!(op.action, "list" | "watch" | "watchlist") {
            produces.extend([
                "application/json;stream=watch",
                "application/vnd.kubernetes.protobuf;stream=watch",
                "application/cbor-seq",
            ]);
        }
        let mut responses = Map::new();
        for (code, schema) in op.responses {
            let description = match code {
                "201" => "Created",
                "202" => "Accepted",
                _ => "OK",
            };
            responses.insert(code.into(), json!({"description": description, "schema": {"$ref": format!("{PREFIX}{schema}")}}));
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        json!({
            "consumes": consumes,
            "description": format!("{} {}", op.action, self.info.kind),
            "operationId": op.id,
            "parameters": op.params,
            "produces": produces,
            "responses": responses,
            "schemes": ["https"],
            "tags": [self.tag],
            "x-kubernetes-action": op.action,
            "x-kubernetes-group-version-kind": op.gvk,
        })
    }

    fn path_item(&self, ops: Vec<Op>, path_params: Vec<Value>) -> Value {
        let mut item = Map::new();
        for op in ops {
            let method = op.method;
            item.insert(method.into(), self.operation(op));
        }
        let mut params = path_params;
        params.push(query(&(
            "pretty",
            "string",
            "If 'true', the output is pretty printed.",
        )));
        item.insert("parameters".into(), Value::Array(params));
        Value::Object(item)
    }

    fn has(&self, verb: &str) -> bool {
        self.info.verbs.iter().any(|v| v == verb)
    }

    fn write_params(&self, body_schema: &str, patch: bool) -> Vec<Value> {
        let mut params = vec![
            body(body_schema, true),
            query(&DRY_RUN),
            query(&FIELD_MANAGER),
            query(&FIELD_VALIDATION),
        ];
        if patch {
            params.push(query(&(
                "force",
                "boolean",
                "Forces Apply requests to take conflicting fields.",
            )));
        }
        params
    }

    fn collection_ops(&self, ns: bool) -> Vec<Op<'_>> {
        let mut ops = Vec::new();
        if self.has("list") {
            ops.push(Op {
                method: "get",
                action: "list",
                id: self.id("list", ns, ""),
                params: LIST_PARAMS.iter().map(query).collect(),
                responses: vec![("200", self.list_def)],
                gvk: self.gvk(),
            });
        }
        if self.has("create") {
            ops.push(Op {
                method: "post",
                action: "post",
                id: self.id("create", ns, ""),
                params: self.write_params(self.kind_def, false),
                responses: vec![
                    ("200", self.kind_def),
                    ("201", self.kind_def),
                    ("202", self.kind_def),
                ],
                gvk: self.gvk(),
            });
        }
        if self.has("deletecollection") {
            let mut params = vec![body(DELETE_OPTIONS, false)];
            params.extend(
                DELETE_PARAMS
                    .iter()
                    .chain(&LIST_PARAMS)
                    .filter(|p| !matches!(p.0, "watch" | "allowWatchBookmarks"))
                    .map(query),
            );
            ops.push(Op {
                method: "delete",
                action: "deletecollection",
                id: self.id("delete", ns, "").replacen(
                    &self.gv,
                    &format!("{}Collection", self.gv),
                    1,
                ),
                params,
                responses: vec![("200", STATUS)],
                gvk: self.gvk(),
            });
        }
        ops
    }

    fn item_ops(&self, ns: bool) -> Vec<Op<'_>> {
        let mut ops = Vec::new();
        let (kind, gvk) = (self.kind_def, self.gvk());
        if self.has("get") {
            ops.push(Op {
                method: "get",
                action: "get",
                id: self.id("read", ns, ""),
                params: vec![],
                responses: vec![("200", kind)],
                gvk: gvk.clone(),
            });
        }
        if self.has("update") {
            ops.push(Op {
                method: "put",
                action: "put",
                id: self.id("replace", ns, ""),
                params: self.write_params(kind, false),
                responses: vec![("200", kind), ("201", kind)],
                gvk: gvk.clone(),
            });
        }
        if self.has("patch") {
            ops.push(Op {
                method: "patch",
                action: "patch",
                id: self.id("patch", ns, ""),
                params: self.write_params(PATCH, true),
                responses: vec![("200", kind), ("201", kind)],
                gvk: gvk.clone(),
            });
        }
        if self.has("delete") {
            let mut params = vec![body(DELETE_OPTIONS, false)];
            params.extend(DELETE_PARAMS.iter().map(query));
            ops.push(Op {
                method: "delete",
                action: "delete",
                id: self.id("delete", ns, ""),
                params,
                responses: vec![("200", STATUS), ("202", STATUS)],
                gvk,
            });
        }
        ops
    }

    /// get/put/patch of a subresource (`status` on the kind, `scale` on
    /// autoscaling/v1 Scale).
    fn subresource_ops<'s>(
        &'s self,
        ns: bool,
        suffix: &str,
        schema: &'s str,
        gvk: Value,
    ) -> Vec<Op<'s>> {
        let one = |method, action, verb: &str, params| Op {
            method,
            action,
            id: self.id(verb, ns, suffix),
            params,
            responses: vec![("200", schema), ("201", schema)],
            gvk: gvk.clone(),
        };
        vec![
            Op {
                responses: vec![("200", schema)],
                ..one("get", "get", "read", vec![])
            },
            one("put", "put", "replace", self.write_params(schema, false)),
            one("patch", "patch", "patch", self.write_params(PATCH, true)),
        ]
    }
}

/// Adds the paths of one resource served at `/api/v1` or
/// `/apis/<group>/<version>`, whose kind and list definitions are named.
pub(super) fn add(
    paths: &mut Map<String, Value>,
    info: &ResourceInfo,
    kind_def: &str,
    list_def: &str,
) {
    let b = Builder {
        info,
        kind_def,
        list_def,
        gv: format!("{}{}", group_camel(&info.group), capitalize(&info.version)),
        tag: tag(info),
    };
    let root = if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    };
    let ns = info.namespaced;
    let scope = if ns { "/namespaces/{namespace}" } else { "" };
    let scope_params = || {
        if ns {
            vec![path_param(
                "namespace",
                "object name and auth scope, such as for teams and projects",
            )]
        } else {
            vec![]
        }
    };
    let name_params = || {
        let mut p = vec![path_param("name", &format!("name of the {}", info.kind))];
        p.extend(scope_params());
        p
    };
    let collection = format!("{root}{scope}/{}", info.resource);
    paths.insert(
        collection.clone(),
        b.path_item(b.collection_ops(ns), scope_params()),
    );
    paths.insert(
        format!("{collection}/{{name}}"),
        b.path_item(b.item_ops(ns), name_params()),
    );
    if info.has_status {
        let ops = b.subresource_ops(ns, "Status", kind_def, b.gvk());
        paths.insert(
            format!("{collection}/{{name}}/status"),
            b.path_item(ops, name_params()),
        );
    }
    if info.has_scale {
        let ops = b.subresource_ops(
            ns,
            "Scale",
            SCALE,
            json!({"group": "autoscaling", "kind": "Scale", "version": "v1"}),
        );
        paths.insert(
            format!("{collection}/{{name}}/scale"),
            b.path_item(ops, name_params()),
        );
    }
    if !b.has("watch") {
        return;
    }
    let watch_params = || LIST_PARAMS.iter().map(query);
    let watch = |id: String, action, extra: Vec<Value>| {
        let op = Op {
            method: "get",
            action,
            id,
            params: vec![],
            responses: vec![("200", WATCH_EVENT)],
            gvk: b.gvk(),
        };
        let mut params = extra;
        params.extend(watch_params());
        b.path_item(vec![op], params)
    };
    let watch_root = format!("{root}/watch{scope}/{}", info.resource);
    paths.insert(
        watch_root.clone(),
        watch(b.id("watch", ns, "List"), "watchlist", scope_params()),
    );
    paths.insert(
        format!("{watch_root}/{{name}}"),
        watch(b.id("watch", ns, ""), "watch", name_params()),
    );
    if ns {
        let all = |verb: &str, suffix: &str| format!("{verb}{}{}{suffix}", b.gv, info.kind);
        let list = Op {
            method: "get",
            action: "list",
            id: all("list", "ForAllNamespaces"),
            params: vec![],
            responses: vec![("200", list_def)],
            gvk: b.gvk(),
        };
        let mut list_params: Vec<Value> = watch_params().collect();
        list_params.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        paths.insert(
            format!("{root}/{}", info.resource),
            b.path_item(vec![list], list_params),
        );
        paths.insert(
            format!("{root}/watch/{}", info.resource),
            watch(all("watch", "ListForAllNamespaces"), "watchlist", vec![]),
        );
    }
}

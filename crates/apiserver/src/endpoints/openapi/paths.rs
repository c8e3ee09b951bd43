//! The `paths` of the Swagger 2.0 document, laid out as upstream's
//! route-generated spec: per resource the collection, item, watch,
//! all-namespaces and subresource paths, each operation with upstream's
//! operationId (`patchCoreV1NamespacedPod`), tag (`core_v1`), consumed and
//! produced media types, inline parameters and the
//! `x-kubernetes-action` / `x-kubernetes-group-version-kind` extensions.
//! kubectl (1.27, 1.28) looks for the `fieldValidation` query parameter on
//! the PATCH operation of a kind to decide that the server validates
//! fields itself.

use crate::registry::ResourceInfo;
use serde_json::{json, Map, Value};

use super::{roots, v3, DELETE_OPTIONS, PATCH, PREFIX, SCALE, STATUS, WATCH_EVENT};

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
const LIST_PARAMS: [(&str, &str, &str); 11] = [
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
        "shardSelector",
        "string",
        "A CEL shardRange() expression restricting the returned objects to hash ranges (alpha).",
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

pub fn query(&(name, ty, description): &(&str, &str, &str)) -> Value {
    json!({"description": description, "in": "query", "name": name, "type": ty,
        "uniqueItems": true})
}

pub fn path_param(name: &str, description: &str) -> Value {
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

fn pretty() -> Value {
    query(&(
        "pretty",
        "string",
        "If 'true', the output is pretty printed.",
    ))
}

/// `rbac.authorization.k8s.io` → `RbacAuthorization`, core → `Core`.
pub fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed.split(['.', '-']).map(capitalize).collect()
}

pub fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// `rbacAuthorization`, `core`: the tag of a group's operations.
pub fn group_tag(group: &str) -> String {
    let camel = group_camel(group);
    let mut chars = camel.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

/// What an operation takes and answers, which decides its media types.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// Objects in the API's encodings.
    Object,
    /// Lists, which can also be watched.
    List,
    /// A stream the server proxies (exec, attach, portforward, proxy).
    Connect,
    /// A container's log: text or the API's encodings.
    Log,
}

/// What differs between the operations of one resource.
pub struct Op {
    pub method: &'static str,
    pub action: &'static str,
    pub id: String,
    pub params: Vec<Value>,
    pub responses: Vec<(&'static str, Value)>,
    pub gvk: Value,
    pub media: Media,
}

/// `{"$ref": …}` responses of `codes` with the named definition.
pub fn refs(codes: &[&'static str], def: &str) -> Vec<(&'static str, Value)> {
    codes
        .iter()
        .map(|code| (*code, json!({"$ref": format!("{PREFIX}{def}")})))
        .collect()
}

/// A response that is a plain string (connect and log).
pub fn string_response() -> Vec<(&'static str, Value)> {
    vec![("200", json!({"type": "string"}))]
}

pub struct Builder<'a> {
    pub info: &'a ResourceInfo,
    /// Whether a delete answers with the object (upstream's
    /// `ReturnDeletedObject` stores) rather than a Status.
    returns_deleted: bool,
    kind_def: &'a str,
    list_def: &'a str,
    gv: String,
    tag: String,
}

/// Moves the parameters every operation of a path item shares (but the
/// body) to the path item, as kube-openapi does.
fn hoist_common(item: &mut Map<String, Value>) {
    let ops: Vec<&Vec<Value>> = item
        .values()
        .filter_map(|op| op["parameters"].as_array())
        .collect();
    let Some((first, rest)) = ops.split_first() else {
        return;
    };
    let mut common: Vec<Value> = first
        .iter()
        .filter(|p| p["in"] != "body" && rest.iter().all(|ps| ps.contains(p)))
        .cloned()
        .collect();
    for op in item.values_mut() {
        if let Some(params) = op["parameters"].as_array_mut() {
            params.retain(|p| !common.contains(p));
        }
        if op["parameters"].as_array().is_some_and(Vec::is_empty) {
            if let Some(op) = op.as_object_mut() {
                op.remove("parameters");
            }
        }
    }
    common.sort_by(|a, b| {
        (a["name"].as_str(), a["in"].as_str()).cmp(&(b["name"].as_str(), b["in"].as_str()))
    });
    item.insert("parameters".into(), Value::Array(common));
}

impl Builder<'_> {
    pub fn id(&self, verb: &str, namespaced: bool, suffix: &str) -> String {
        let scope = if namespaced { "Namespaced" } else { "" };
        format!("{verb}{}{scope}{}{suffix}", self.gv, self.info.kind)
    }

    /// `connectCoreV1GetNamespacedPodExec`.
    pub fn connect_id(&self, method: &str, namespaced: bool, suffix: &str) -> String {
        let scope = if namespaced { "Namespaced" } else { "" };
        let kind = &self.info.kind;
        format!(
            "connect{}{}{scope}{kind}{suffix}",
            self.gv,
            capitalize(method)
        )
    }

    pub fn kind_def(&self) -> &str {
        self.kind_def
    }

    pub fn gvk(&self) -> Value {
        json!({"group": self.info.group, "kind": self.info.kind, "version": self.info.version})
    }

    fn operation(&self, op: Op) -> Value {
        let consumes: Vec<&str> = if op.method == "patch" && op.media != Media::Connect {
            PATCH_TYPES.to_vec()
        } else {
            vec!["*/*"]
        };
        let produces = match op.media {
            Media::Object => PRODUCES.to_vec(),
            Media::List => {
                let mut p = PRODUCES.to_vec();
                p.extend([
                    "application/json;stream=watch",
                    "application/vnd.kubernetes.protobuf;stream=watch",
                    "application/cbor-seq",
                ]);
                p
            }
            Media::Connect => vec!["*/*"],
            Media::Log => std::iter::once("text/plain").chain(PRODUCES).collect(),
        };
        let mut responses = Map::new();
        for (code, schema) in op.responses {
            let description = match code {
                "201" => "Created",
                "202" => "Accepted",
                _ => "OK",
            };
            responses.insert(
                code.into(),
                json!({"description": description, "schema": schema}),
            );
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        let what = if op.media == Media::Connect {
            format!(
                "connect {} requests to {}",
                op.method.to_uppercase(),
                self.info.kind
            )
        } else {
            format!("{} {}", op.action, self.info.kind)
        };
        json!({
            "consumes": consumes,
            "description": what,
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

    /// The path item of `ops`, each taking `path_params` (and `pretty`
    /// but when proxying); `None` when there is no operation.
    pub fn path_item(&self, ops: Vec<Op>, path_params: &[Value]) -> Option<Value> {
        if ops.is_empty() {
            return None;
        }
        let mut item = Map::new();
        for mut op in ops {
            let mut params = path_params.to_vec();
            if op.media != Media::Connect {
                params.push(pretty());
            }
            params.append(&mut op.params);
            op.params = params;
            let method = op.method;
            item.insert(method.into(), self.operation(op));
        }
        hoist_common(&mut item);
        Some(Value::Object(item))
    }

    fn has(&self, verb: &str) -> bool {
        self.info.verbs.iter().any(|v| v == verb)
    }

    pub fn write_params(&self, body_schema: &str, patch: bool) -> Vec<Value> {
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

    /// A POST creating `def` (of kind `gvk`), as collections and the
    /// create-only subresources take.
    pub fn create_op(&self, id: String, def: &str, gvk: Value) -> Op {
        Op {
            method: "post",
            action: "post",
            id,
            params: self.write_params(def, false),
            responses: refs(&["200", "201", "202"], def),
            gvk,
            media: Media::Object,
        }
    }

    fn collection_ops(&self, ns: bool) -> Vec<Op> {
        let mut ops = Vec::new();
        if self.has("list") {
            ops.push(Op {
                method: "get",
                action: "list",
                id: self.id("list", ns, ""),
                params: LIST_PARAMS.iter().map(query).collect(),
                responses: refs(&["200"], self.list_def),
                gvk: self.gvk(),
                media: Media::List,
            });
        }
        if self.has("create") {
            ops.push(self.create_op(self.id("create", ns, ""), self.kind_def, self.gvk()));
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
                responses: refs(&["200"], STATUS),
                gvk: self.gvk(),
                media: Media::Object,
            });
        }
        ops
    }

    fn item_ops(&self, ns: bool) -> Vec<Op> {
        let mut ops = Vec::new();
        let kind = self.kind_def;
        if self.has("get") {
            ops.push(Op {
                method: "get",
                action: "get",
                id: self.id("read", ns, ""),
                params: vec![],
                responses: refs(&["200"], kind),
                gvk: self.gvk(),
                media: Media::Object,
            });
        }
        if self.has("update") {
            ops.push(Op {
                method: "put",
                action: "put",
                id: self.id("replace", ns, ""),
                params: self.write_params(kind, false),
                responses: refs(&["200", "201"], kind),
                gvk: self.gvk(),
                media: Media::Object,
            });
        }
        if self.has("patch") {
            ops.push(Op {
                method: "patch",
                action: "patch",
                id: self.id("patch", ns, ""),
                params: self.write_params(PATCH, true),
                responses: refs(&["200", "201"], kind),
                gvk: self.gvk(),
                media: Media::Object,
            });
        }
        if self.has("delete") {
            let mut params = vec![body(DELETE_OPTIONS, false)];
            params.extend(DELETE_PARAMS.iter().map(query));
            let answer = if self.returns_deleted { kind } else { STATUS };
            ops.push(Op {
                method: "delete",
                action: "delete",
                id: self.id("delete", ns, ""),
                params,
                responses: refs(&["200", "202"], answer),
                gvk: self.gvk(),
                media: Media::Object,
            });
        }
        ops
    }

    /// get/put/patch of a subresource that reads and writes `schema`
    /// (`status` and the like on the kind, `scale` on autoscaling/v1
    /// Scale).
    pub fn subresource_ops(&self, ns: bool, suffix: &str, schema: &str, gvk: Value) -> Vec<Op> {
        let one = |method, action, verb: &str, params| Op {
            method,
            action,
            id: self.id(verb, ns, suffix),
            params,
            responses: refs(&["200", "201"], schema),
            gvk: gvk.clone(),
            media: Media::Object,
        };
        vec![
            Op {
                responses: refs(&["200"], schema),
                ..one("get", "get", "read", vec![])
            },
            one("put", "put", "replace", self.write_params(schema, false)),
            one("patch", "patch", "patch", self.write_params(PATCH, true)),
        ]
    }
}

/// The paths of the subresources a server serves beyond `status` and
/// `scale` for a resource: given its builder, its item path and the
/// item's path parameters.
pub type Subresources = fn(&Builder, &str, &[Value]) -> Vec<(String, Value)>;

/// For resources with no other subresources (custom resources).
pub fn no_subresources(_: &Builder, _: &str, _: &[Value]) -> Vec<(String, Value)> {
    Vec::new()
}

/// Adds the paths of one resource served at `/api/v1` or
/// `/apis/<group>/<version>`, whose kind and list definitions are named.
pub fn add(
    paths: &mut Map<String, Value>,
    info: &ResourceInfo,
    kind_def: &str,
    list_def: &str,
    returns_deleted: bool,
    subresources: Subresources,
) {
    let b = Builder {
        info,
        returns_deleted,
        kind_def,
        list_def,
        gv: format!("{}{}", group_camel(&info.group), capitalize(&info.version)),
        tag: format!("{}_{}", group_tag(&info.group), info.version),
    };
    let root = if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    };
    let ns = info.namespaced;
    let scope = if ns { "/namespaces/{namespace}" } else { "" };
    let scope_params: &[Value] = &if ns {
        vec![path_param(
            "namespace",
            "object name and auth scope, such as for teams and projects",
        )]
    } else {
        vec![]
    };
    let mut name_params = vec![path_param("name", &format!("name of the {}", info.kind))];
    name_params.extend_from_slice(scope_params);
    let mut insert = |path: String, item: Option<Value>| {
        if let Some(item) = item {
            paths.insert(path, item);
        }
    };
    let collection = format!("{root}{scope}/{}", info.resource);
    insert(
        collection.clone(),
        b.path_item(b.collection_ops(ns), scope_params),
    );
    let item = format!("{collection}/{{name}}");
    insert(item.clone(), b.path_item(b.item_ops(ns), &name_params));
    if info.has_status {
        let ops = b.subresource_ops(ns, "Status", kind_def, b.gvk());
        insert(format!("{item}/status"), b.path_item(ops, &name_params));
    }
    if info.has_scale {
        let gvk = json!({"group": "autoscaling", "kind": "Scale", "version": "v1"});
        let ops = b.subresource_ops(ns, "Scale", SCALE, gvk);
        insert(format!("{item}/scale"), b.path_item(ops, &name_params));
    }
    for (path, item) in subresources(&b, &item, &name_params) {
        insert(path, Some(item));
    }
    if !b.has("watch") {
        return;
    }
    let watch = |id: String, action, path_params: &[Value]| {
        let op = Op {
            method: "get",
            action,
            id,
            params: LIST_PARAMS.iter().map(query).collect(),
            responses: refs(&["200"], WATCH_EVENT),
            gvk: b.gvk(),
            media: Media::List,
        };
        b.path_item(vec![op], path_params)
    };
    let watch_root = format!("{root}/watch{scope}/{}", info.resource);
    insert(
        watch_root.clone(),
        watch(b.id("watch", ns, "List"), "watchlist", scope_params),
    );
    insert(
        format!("{watch_root}/{{name}}"),
        watch(b.id("watch", ns, ""), "watch", &name_params),
    );
    if ns {
        let all = |verb: &str, suffix: &str| format!("{verb}{}{}{suffix}", b.gv, info.kind);
        let list = Op {
            method: "get",
            action: "list",
            id: all("list", "ForAllNamespaces"),
            params: LIST_PARAMS.iter().map(query).collect(),
            responses: refs(&["200"], list_def),
            gvk: b.gvk(),
            media: Media::List,
        };
        insert(
            format!("{root}/{}", info.resource),
            b.path_item(vec![list], &[]),
        );
        insert(
            format!("{root}/watch/{}", info.resource),
            watch(all("watch", "ListForAllNamespaces"), "watchlist", &[]),
        );
    }
}

/// Adds the v3 paths of a resource whose kind and list kind schemas are
/// named (custom resources).
pub fn add_v3(paths: &mut Map<String, Value>, info: &ResourceInfo, kind: &str, list: &str) {
    let mut v2 = Map::new();
    add(&mut v2, info, kind, list, false, no_subresources);
    roots::add_group_version(&mut v2, &info.group, &info.version);
    for (path, item) in v2 {
        paths.insert(path, v3::path_item(&item));
    }
}

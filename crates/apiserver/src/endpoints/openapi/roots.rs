//! The paths that are not resources, as upstream's document lists them:
//! the discovery documents (`/api/`, `/apis/`, `/apis/<group>/`,
//! `/apis/<group>/<version>/`, `/api/v1/`) and `/version/`; a server adds
//! its other non-resource paths with [`Get`].

use serde_json::{json, Map, Value};

use super::paths::{capitalize, group_camel, group_tag};
use super::PREFIX;

const DISCOVERY: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
const GROUP_VERSION: [&str; 4] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/cbor",
];
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";
const VERSION_INFO: &str = "io.k8s.apimachinery.pkg.version.Info";

/// One GET operation answering `schema`.
pub struct Get<'a> {
    pub id: String,
    pub tag: String,
    pub description: &'a str,
    pub consumes: Option<&'a [&'a str]>,
    pub produces: &'a [&'a str],
    pub schema: Value,
}

impl Get<'_> {
    /// The path item of the operation.
    pub fn item(self) -> Value {
        let mut op = json!({
            "description": self.description,
            "operationId": self.id,
            "produces": self.produces,
            "responses": {
                "200": {"description": "OK", "schema": self.schema},
                "401": {"description": "Unauthorized"},
            },
            "schemes": ["https"],
            "tags": [self.tag],
        });
        if let Some(consumes) = self.consumes {
            op["consumes"] = json!(consumes);
        }
        json!({ "get": op })
    }
}

fn definition(name: &str) -> Value {
    json!({"$ref": format!("{PREFIX}{name}")})
}

/// `/apis/<group>/<version>/` (or `/api/v1/`): the version's resources.
pub fn add_group_version(paths: &mut Map<String, Value>, group: &str, version: &str) {
    let path = if group.is_empty() {
        format!("/api/{version}/")
    } else {
        format!("/apis/{group}/{version}/")
    };
    let get = Get {
        id: format!(
            "get{}{}APIResources",
            group_camel(group),
            capitalize(version)
        ),
        tag: format!("{}_{version}", group_tag(group)),
        description: "get available resources",
        consumes: Some(&GROUP_VERSION),
        produces: &GROUP_VERSION,
        schema: definition(&format!("{META}APIResourceList")),
    };
    paths.insert(path, get.item());
}

/// `/apis/<group>/`: the group and its versions.
pub fn add_group(paths: &mut Map<String, Value>, group: &str) {
    let get = Get {
        id: format!("get{}APIGroup", group_camel(group)),
        tag: group_tag(group),
        description: "get information of a group",
        consumes: Some(&DISCOVERY),
        produces: &DISCOVERY,
        schema: definition(&format!("{META}APIGroup")),
    };
    paths.insert(format!("/apis/{group}/"), get.item());
}

/// Every non-resource path of a server serving `group_versions`.
pub fn add(paths: &mut Map<String, Value>, group_versions: &[(&str, &str)]) {
    for (group, version) in group_versions {
        add_group_version(paths, group, version);
        if !group.is_empty() {
            add_group(paths, group);
        }
    }
    let fixed = [
        (
            "/api/",
            Get {
                id: "getCoreAPIVersions".into(),
                tag: "core".into(),
                description: "get available API versions",
                consumes: Some(&DISCOVERY),
                produces: &DISCOVERY,
                schema: definition(&format!("{META}APIVersions")),
            },
        ),
        (
            "/apis/",
            Get {
                id: "getAPIVersions".into(),
                tag: "apis".into(),
                description: "get available API versions",
                consumes: Some(&DISCOVERY),
                produces: &DISCOVERY,
                schema: definition(&format!("{META}APIGroupList")),
            },
        ),
        (
            "/version/",
            Get {
                id: "getCodeVersion".into(),
                tag: "version".into(),
                description: "get the version information for this server",
                consumes: Some(&["application/json"]),
                produces: &["application/json"],
                schema: definition(VERSION_INFO),
            },
        ),
    ];
    for (path, get) in fixed {
        paths.insert(path.into(), get.item());
    }
}

//! What upstream's Go type declarations say about a message's fields:
//!
//! - which fields Go writes although its JSON form leaves them out: Go's
//!   generated (gogo) marshaller writes every non-pointer scalar and struct
//!   field whatever its value, so an absent `omitempty` string goes on the
//!   wire as `""` and an absent struct as its zero message;
//! - which zeros to drop on decoding: a non-pointer `omitempty` number or
//!   bool is on the wire as `0`/`false` but absent from upstream's JSON;
//!   pointer fields (`*int32 replicas`, `*string`) keep an explicit zero
//!   or empty string;
//! - the JSON names of messages k8s-openapi does not model.

use go_types::golang::{tag_value, DeclBody, Field, TypeExpr};
use go_types::source::Loader;

pub struct GoFields {
    loader: Loader,
}

impl GoFields {
    pub fn new(loader: Loader) -> Self {
        GoFields { loader }
    }

    /// The Go field of message `name` in protobuf module `module`
    /// (`api::apps::v1`) that `pick` selects; `None` when the declaration
    /// is not found.
    fn field(&mut self, module: &str, name: &str, pick: impl Fn(&Field) -> bool) -> Option<Field> {
        let package = self.loader.load(&import_path(module)).ok()?;
        let DeclBody::Struct(fields) = &package.types.get(name)?.body else {
            return None;
        };
        fields.iter().find(|f| pick(f)).cloned()
    }

    fn by_json(&mut self, module: &str, name: &str, json: &str) -> Option<Field> {
        self.field(module, name, |f| {
            tag_value(&f.tag, "json").and_then(|t| t.split(',').next()) == Some(json)
        })
    }

    /// Whether field `json` is a Go non-pointer `omitempty` field; `None`
    /// when the Go declaration is not found.
    pub fn omits_zero(&mut self, module: &str, name: &str, json: &str) -> Option<bool> {
        let field = self.by_json(module, name, json)?;
        let omitempty = tag_value(&field.tag, "json")
            .is_some_and(|t| t.split(',').skip(1).any(|o| o == "omitempty"));
        Some(omitempty && !matches!(field.ty, TypeExpr::Pointer(_)))
    }

    /// Whether field `json` is a Go pointer (`*string`): an empty string on
    /// the wire is then a set pointer, which upstream's JSON writes as `""`
    /// (`hostPath.type`, `storageClassName`); `false` when the declaration
    /// is not found.
    pub fn is_pointer(&mut self, module: &str, name: &str, json: &str) -> bool {
        self.by_json(module, name, json)
            .is_some_and(|f| matches!(f.ty, TypeExpr::Pointer(_)))
    }

    /// Whether Go writes single field `json` whatever its value: a
    /// non-pointer scalar or struct (not a slice, map, pointer or
    /// interface); `false` when the declaration is not found.
    pub fn always_written(&mut self, module: &str, name: &str, json: &str) -> bool {
        self.by_json(module, name, json)
            .is_some_and(|f| matches!(f.ty, TypeExpr::Ident(_) | TypeExpr::Qualified(..)))
    }

    /// The JSON name of the Go field of message `name` whose protobuf tag
    /// is `tag`; `None` when the declaration is not found or the field is
    /// embedded (inline).
    pub fn json_name(&mut self, module: &str, name: &str, tag: u32) -> Option<String> {
        let tag = tag.to_string();
        let field = self.field(module, name, |f| {
            tag_value(&f.tag, "protobuf").and_then(|p| p.split(',').nth(1)) == Some(tag.as_str())
        })?;
        let json = tag_value(&field.tag, "json")?.split(',').next()?;
        (!json.is_empty() && json != "-").then(|| json.to_owned())
    }
}

/// `api::apps::v1` → `k8s.io/api/apps/v1`;
/// `apiextensions_apiserver::pkg::…` → `k8s.io/apiextensions-apiserver/pkg/…`.
fn import_path(module: &str) -> String {
    let mut parts = module.split("::");
    let repo = parts.next().unwrap_or_default().replace('_', "-");
    let rest: Vec<&str> = parts.collect();
    format!("k8s.io/{repo}/{}", rest.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPS: &str = r#"package v1

type DeploymentSpec struct {
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	MinReadySeconds int32 `json:"minReadySeconds,omitempty" protobuf:"varint,5,opt,name=minReadySeconds"`
	Paused bool `json:"paused,omitempty" protobuf:"varint,7,opt,name=paused"`
	Port int32 `json:"port" protobuf:"varint,8,opt,name=port"`
}
"#;

    #[test]
    fn non_pointer_omitempty_fields_omit_zero() {
        let loader = Loader::from_sources(&[("k8s.io/api/apps/v1", APPS)]).expect("parse");
        let mut go = GoFields::new(loader);
        let spec = |go: &mut GoFields, json| go.omits_zero("api::apps::v1", "DeploymentSpec", json);
        assert_eq!(spec(&mut go, "paused"), Some(true));
        assert_eq!(spec(&mut go, "minReadySeconds"), Some(true));
        assert_eq!(spec(&mut go, "replicas"), Some(false));
        assert_eq!(spec(&mut go, "port"), Some(false));
        assert_eq!(spec(&mut go, "missing"), None);
        assert_eq!(
            go.json_name("api::apps::v1", "DeploymentSpec", 5)
                .as_deref(),
            Some("minReadySeconds")
        );
        assert_eq!(go.json_name("api::apps::v1", "DeploymentSpec", 9), None);
        let always =
            |go: &mut GoFields, json| go.always_written("api::apps::v1", "DeploymentSpec", json);
        assert!(always(&mut go, "paused"));
        assert!(always(&mut go, "port"));
        assert!(!always(&mut go, "replicas"));
        assert!(go.is_pointer("api::apps::v1", "DeploymentSpec", "replicas"));
        assert!(!go.is_pointer("api::apps::v1", "DeploymentSpec", "port"));
        assert!(!go.is_pointer("api::apps::v1", "DeploymentSpec", "missing"));
        assert_eq!(
            import_path("apiextensions_apiserver::pkg::apis::apiextensions::v1"),
            "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
        );
    }
}

//! CustomResourceDefinition fixtures: one served and stored version `v1` in
//! group `example.com`, differing only in names, scope and schema.

/// A CRD of `kind` (plural `plural`, singular the kind in lower case) whose
/// `v1` schema is `schema`: the YAML that follows `openAPIV3Schema:` (a
/// flow mapping, or a newline and a block indented eight spaces), with
/// anything of the version or the spec after it.
pub fn crd(plural: &str, kind: &str, scope: &str, schema: &str) -> String {
    let singular = kind.to_lowercase();
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.example.com}}
spec:
  group: example.com
  scope: {scope}
  names: {{plural: {plural}, singular: {singular}, kind: {kind}, listKind: {kind}List}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:{schema}"
    )
}

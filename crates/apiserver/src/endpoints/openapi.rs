//! A server's OpenAPI documents (upstream's `k8s.io/apiserver/pkg/endpoints/openapi`
//! with kube-openapi's `builder`, `handler` and `handler3`): the paths of
//! every served resource laid out as upstream's route-generated spec
//! ([`paths`], [`roots`]), the Swagger 2.0 document served at
//! `/openapi/v2` in JSON and gnostic protobuf with ETags and gzip
//! ([`install_v2`]), and its OpenAPI v3 form served per group version at
//! `/openapi/v3` ([`v3`], [`install_v3`]).
//!
//! The definitions (schemas) of the kinds come from the server that
//! serves them: kube-apiserver's built-in types, apiextensions' custom
//! resources, which join the documents through a [`SpecSource`].

mod handler;
mod handler3;
pub mod paths;
mod proto;
pub mod roots;
mod shared;
pub mod v3;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use handler::{document, install_v2};
pub use handler3::install_v3;

/// Where v2 references point.
pub const PREFIX: &str = "#/definitions/";
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// Definitions or paths of a v2 document, by name.
pub type Parts = Map<String, Value>;

/// Builds the server's own v2 definitions and paths (on first request).
pub type BuiltinParts = Box<dyn Fn() -> (Parts, Parts) + Send + Sync>;

/// Builds the server's own v3 documents by path (`api/v1`,
/// `apis/<group>/<version>`), on first request.
pub type BuiltinDocuments = Box<dyn Fn() -> Vec<(String, Value)> + Send + Sync>;

/// What joins a server's documents from elsewhere and changes while it
/// runs (the custom resources of a delegate, as upstream's aggregated
/// spec takes apiextensions-apiserver's). Documents built from one state
/// are served until the state changes.
pub trait SpecSource: Send + Sync + 'static {
    type State: Clone + Send + Sync + 'static;

    /// The state now.
    fn state(&self) -> Self::State;

    /// Whether documents built from `built` still hold for `now`.
    fn unchanged(built: &Self::State, now: &Self::State) -> bool;

    /// Adds the v2 definitions and paths of `state` (names already there
    /// keep theirs).
    fn add_v2(state: &Self::State, definitions: &mut Parts, paths: &mut Parts);

    /// The v3 documents of `state`, by path (`apis/<group>/<version>`).
    fn v3_documents(state: &Self::State) -> BTreeMap<String, Value>;
}

/// Two sources joined (the custom resources, then the aggregated API
/// servers' documents): the first's names and paths win.
impl<A: SpecSource, B: SpecSource> SpecSource for (A, B) {
    type State = (A::State, B::State);

    fn state(&self) -> Self::State {
        (self.0.state(), self.1.state())
    }

    fn unchanged(built: &Self::State, now: &Self::State) -> bool {
        A::unchanged(&built.0, &now.0) && B::unchanged(&built.1, &now.1)
    }

    fn add_v2(state: &Self::State, definitions: &mut Parts, paths: &mut Parts) {
        A::add_v2(&state.0, definitions, paths);
        B::add_v2(&state.1, definitions, paths);
    }

    fn v3_documents(state: &Self::State) -> BTreeMap<String, Value> {
        let mut documents = A::v3_documents(&state.0);
        for (path, document) in B::v3_documents(&state.1) {
            documents.entry(path).or_insert(document);
        }
        documents
    }
}

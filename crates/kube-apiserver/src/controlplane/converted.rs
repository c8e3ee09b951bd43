//! Built-in resources served at a second group version over the storage
//! of the version they are stored at, as upstream keeps one storage for a
//! resource's versions and for cohabiting resources and converts through
//! the internal type: a store in front of the stored version's storage
//! (and watch cache) converts every object on its way in and out, and both
//! versions are one resource to admission rules matching equivalent
//! resources.

use std::sync::Arc;

use apiserver::admission::{Equivalents, GroupVersionKind, GroupVersionResource};
use apiserver::registry::converting::{ConvertFn, Converter, ConvertingStorage, ServedVersions};
use apiserver::registry::store::Store;
use apiserver::server::GenericApiServer;

use super::builtin::Builtin;
use super::openapi::ResourceSchema;

/// Serves `served` over the storage of the installed store `stored`,
/// converting with `convert`; returns what OpenAPI needs of it.
pub fn install(
    server: &mut GenericApiServer,
    prefix: &str,
    stored: &Arc<Store>,
    served: Builtin,
    convert: ConvertFn,
) -> Vec<ResourceSchema> {
    let converter = Arc::new(Converter::new(convert));
    let storage = ConvertingStorage::new(
        stored.storage().clone(),
        converter.clone(),
        served.info.api_version(),
        stored.info.api_version(),
    );
    let schema = ResourceSchema {
        info: served.info.clone(),
        schema: served.schema,
        returns_deleted: served.strategies.return_deleted_object,
    };
    let (group, version) = (served.info.group.clone(), served.info.version.clone());
    let store = Arc::new(Store::new(
        served.info,
        served.strategies,
        Arc::new(storage),
        prefix,
    ));
    let versions = [&store.info, &stored.info]
        .map(|info| (GroupVersionResource::of(info), GroupVersionKind::of(info)));
    let equivalents = Equivalents(Arc::new(ServedVersions {
        versions: versions.to_vec(),
        converter,
    }));
    stored.set_equivalents(equivalents.clone());
    store.set_equivalents(equivalents);
    server.install_converted_version(&group, &version, vec![store]);
    vec![schema]
}

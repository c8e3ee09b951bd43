//! The redb tables and the helpers that read the store's bookkeeping
//! (current and compacted revision) from them. The layout is described in
//! the crate documentation.

use redb::{ReadableTable, TableDefinition};
use storage::StorageError;

/// Bookkeeping: [`META_REVISION`] and [`META_COMPACTED`].
pub(crate) const META: TableDefinition<&str, i64> = TableDefinition::new("meta");
/// Live keys: key → [`crate::record::Latest`].
pub(crate) const LATEST: TableDefinition<&str, &[u8]> = TableDefinition::new("latest");
/// The change log: revision → [`crate::record::Change`].
pub(crate) const REVISIONS: TableDefinition<i64, &[u8]> = TableDefinition::new("revisions");
/// Per-key history index: (key, revision) → whether the change was a delete.
pub(crate) const KEY_REVISIONS: TableDefinition<(&str, i64), bool> =
    TableDefinition::new("key_revisions");

/// The store's current revision.
pub(crate) const META_REVISION: &str = "revision";
/// Every revision below this one has been compacted.
pub(crate) const META_COMPACTED: &str = "compacted";

/// The revision of an empty store, as etcd's: the first write gets 2.
pub(crate) const INITIAL_REVISION: i64 = 1;

/// Reads an i64 bookkeeping entry, defaulting to `default` when missing.
pub(crate) fn meta_get(
    table: &impl ReadableTable<&'static str, i64>,
    name: &str,
    default: i64,
) -> Result<i64, StorageError> {
    Ok(table
        .get(name)
        .map_err(StorageError::internal)?
        .map_or(default, |v| v.value()))
}

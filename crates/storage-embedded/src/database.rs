//! The redb database behind the store, and how it survives a failed disk.
//!
//! redb latches the first I/O error of a commit (a full disk, a file system
//! gone read-only): from then on every transaction of that handle fails
//! with "Previous I/O error occurred", until the file is closed and opened
//! again. So after a failed commit the writer closes the database and opens
//! it again at once; opening repairs the file (redb's recovery walk) back to
//! the last commit that reached the disk, and the store carries on — on a
//! full disk reads work again at once and writes do as soon as there is
//! room. If the file cannot be opened for writing (the file system went
//! read-only), it is opened read-only: reads go on, every write fails with
//! the cause, and the writer tries again (see `writer`) until it can open
//! the file for writing. A file that opens in neither way leaves the store
//! closed: every read and write fails with the cause.
//!
//! Upstream has no counterpart inside the API server: etcd plays this part,
//! refusing writes with `mvcc: database space exceeded` when full.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use redb::{Database, ReadTransaction, ReadableDatabase, TableError, WriteTransaction};
use storage::error::Result;
use storage::StorageError;

use crate::schema::{
    meta_get, INITIAL_REVISION, KEY_REVISIONS, LATEST, META, META_COMPACTED, META_REVISION,
    REVISIONS,
};

/// redb's page cache and write buffer. Reads are served by the watch
/// caches, so the store's own reads are point reads of recent pages and the
/// start's one pass over every object. 2 MiB keeps the create rate of 8 MiB
/// (and 8 MiB that of 32 and 256 MiB, docs/benchmarks.md) for ≈ 0.6 KB less
/// resident memory per object at 10,000 objects.
const CACHE_BYTES: usize = 2 * 1024 * 1024;

/// The store's current and compacted revision, as found on disk.
pub(crate) type Bookkeeping = (i64, i64);

/// The state of the database file.
enum State {
    Open(Database),
    /// Open for reading only, because opening it for writing failed
    /// with this cause.
    ReadOnly(Database, String),
    Closed(String),
}

/// The database file, open or closed with the reason.
pub(crate) struct Handle {
    path: PathBuf,
    db: RwLock<State>,
}

impl Handle {
    /// Opens (creating it if missing) the database at `path`.
    pub(crate) fn open(path: &Path) -> std::result::Result<(Handle, Bookkeeping), String> {
        let (db, bookkeeping) = open_database(path)?;
        let handle = Handle {
            path: path.to_owned(),
            db: RwLock::new(State::Open(db)),
        };
        Ok((handle, bookkeeping))
    }

    pub(crate) fn begin_read(&self) -> Result<ReadTransaction> {
        match &*self.db.read().map_err(StorageError::internal)? {
            State::Open(db) => db.begin_read().map_err(StorageError::internal),
            State::ReadOnly(db, _) => db.begin_read().map_err(StorageError::internal),
            State::Closed(cause) => Err(unavailable(cause)),
        }
    }

    pub(crate) fn begin_write(&self) -> Result<WriteTransaction> {
        match &*self.db.read().map_err(StorageError::internal)? {
            State::Open(db) => db.begin_write().map_err(StorageError::internal),
            State::ReadOnly(_, cause) | State::Closed(cause) => Err(unavailable(cause)),
        }
    }

    /// Whether the database is open for writing.
    pub(crate) fn is_open(&self) -> bool {
        self.db.read().is_ok_and(|db| matches!(*db, State::Open(_)))
    }

    /// Closes the database because of `cause` (readers in flight fail).
    pub(crate) fn close(&self, cause: &str) {
        let Ok(mut slot) = self.db.write() else {
            return;
        };
        match std::mem::replace(&mut *slot, State::Closed(cause.to_owned())) {
            // After a latched I/O error the close itself fails; the file is
            // released all the same and the next open repairs it.
            State::Open(db) => {
                if let Err(e) = db.close() {
                    tracing::warn!(error = %e, "closing the embedded store after a failure");
                }
            }
            State::ReadOnly(db, _) => drop(db),
            State::Closed(_) => {}
        }
    }

    /// Opens the database again for writing; on failure it stays open for
    /// reading if it can, with the new cause.
    pub(crate) fn reopen(&self) -> Result<Bookkeeping> {
        let mut slot = self.db.write().map_err(StorageError::internal)?;
        if let State::Open(_) = &*slot {
            return Err(StorageError::Internal(
                "the embedded store is already open".to_owned(),
            ));
        }
        if let State::ReadOnly(_, cause) = &*slot {
            // Still not writable: go on serving reads.
            if std::fs::OpenOptions::new()
                .write(true)
                .open(&self.path)
                .is_err()
            {
                return Err(unavailable(cause));
            }
        }
        // The read-only handle holds a lock a writer cannot share.
        if let State::ReadOnly(db, _) = std::mem::replace(&mut *slot, State::Closed(String::new()))
        {
            drop(db.close());
        }
        match open_database(&self.path) {
            Ok((db, bookkeeping)) => {
                *slot = State::Open(db);
                Ok(bookkeeping)
            }
            Err(cause) => {
                *slot = match open_read_only(&self.path) {
                    Some(db) => State::ReadOnly(db, cause.clone()),
                    None => State::Closed(cause.clone()),
                };
                Err(unavailable(&cause))
            }
        }
    }
}

/// The file opened for reading only (see the `overlay` module).
fn open_read_only(path: &Path) -> Option<Database> {
    let overlay = crate::overlay::Overlay::open(path).ok()?;
    Database::builder()
        .set_cache_size(CACHE_BYTES)
        .create_with_backend(overlay)
        .ok()
}

fn unavailable(cause: &str) -> StorageError {
    StorageError::Internal(format!("the embedded store is unavailable: {cause}"))
}

fn open_database(path: &Path) -> std::result::Result<(Database, Bookkeeping), String> {
    let shown = path.display().to_string();
    let said = std::cell::Cell::new(false);
    let db = Database::builder()
        .set_cache_size(CACHE_BYTES)
        // redb walks and verifies the whole file when it was not closed
        // (a kill, a crash, a failed commit): say so, as it takes a while
        // on a large store.
        .set_repair_callback(move |_| {
            if !said.replace(true) {
                tracing::info!(path = %shown, "repairing the embedded store: it was not closed cleanly");
            }
        })
        .create(path)
        .map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
    let bookkeeping =
        init(&db).map_err(|e| format!("cannot initialise database {}: {e}", path.display()))?;
    Ok((db, bookkeeping))
}

/// Reads the bookkeeping, first creating the tables of a new database. An
/// existing database is only read, so that it opens on a full disk.
fn init(db: &Database) -> Result<Bookkeeping> {
    let read = db.begin_read().map_err(StorageError::internal)?;
    match read.open_table(META) {
        Ok(meta) => {
            return Ok((
                meta_get(&meta, META_REVISION, INITIAL_REVISION)?,
                meta_get(&meta, META_COMPACTED, 0)?,
            ))
        }
        Err(TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(StorageError::internal(e)),
    }
    drop(read);
    let write = db.begin_write().map_err(StorageError::internal)?;
    write.open_table(META).map_err(StorageError::internal)?;
    write.open_table(LATEST).map_err(StorageError::internal)?;
    write
        .open_table(REVISIONS)
        .map_err(StorageError::internal)?;
    write
        .open_table(KEY_REVISIONS)
        .map_err(StorageError::internal)?;
    write.commit().map_err(StorageError::internal)?;
    Ok((INITIAL_REVISION, 0))
}

//! File helpers for the PKI: atomic writes with explicit permissions, so a
//! crash never leaves a half-written key and keys are never world-readable.

use std::fs::{self, OpenOptions, Permissions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::PkiError;

/// Mode for private keys and credentials (owner read/write only).
pub(super) const SECRET_MODE: u32 = 0o600;
/// Mode for certificates and public keys.
pub(super) const PUBLIC_MODE: u32 = 0o644;
/// Mode for the directory holding the keys.
pub(super) const DIR_MODE: u32 = 0o700;

/// Builds the I/O error variant for `path`.
pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError + '_ {
    move |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `dir` (and missing parents) owner-only, or restricts an existing
/// one to its owner, saying so when it was open to others.
pub(super) fn ensure_private_dir(dir: &Path) -> Result<(), PkiError> {
    match fs::metadata(dir) {
        Ok(meta) => {
            let before = meta.permissions().mode() & 0o777;
            if before & !DIR_MODE != 0 {
                tracing::warn!(path = %dir.display(), mode = format!("{before:04o}"), "restricting directory to its owner (0700)");
            }
        }
        Err(err) if err.kind() == ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .map_err(io_err(dir))?;
        }
        Err(err) => return Err(io_err(dir)(err)),
    }
    // The umask may have narrowed the mode, or an older run widened it.
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE)).map_err(io_err(dir))
}

/// Reads `path` as UTF-8, returning `None` when it does not exist.
pub(super) fn read_optional(path: &Path) -> Result<Option<String>, PkiError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_err(path)(err)),
    }
}

/// Writes `contents` to `path` through a temporary file in the same directory
/// and a rename, with `mode` applied before any byte is written.
pub(super) fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), PkiError> {
    let tmp = temp_path(path);
    // A stale temporary file could carry looser permissions than `mode`.
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(io_err(&tmp)(err)),
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io_err(&tmp))?;
    // The process umask may have altered the mode; set it exactly.
    file.set_permissions(Permissions::from_mode(mode))
        .map_err(io_err(&tmp))?;
    file.write_all(contents).map_err(io_err(&tmp))?;
    file.sync_all().map_err(io_err(&tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(io_err(path))
}

/// Tightens the permissions of an existing file to `mode` (used for keys
/// that were written by someone else or an older version).
pub(super) fn restrict(path: &Path, mode: u32) -> Result<(), PkiError> {
    fs::set_permissions(path, Permissions::from_mode(mode)).map_err(io_err(path))
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_sets_mode_and_replaces_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        write_atomic(&path, b"one", SECRET_MODE).unwrap();
        write_atomic(&path, b"two", SECRET_MODE).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, SECRET_MODE);
        assert!(!temp_path(&path).exists());
    }

    #[test]
    fn private_dir_is_created_or_tightened_to_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let nested = dir.path().join("a/b");
        ensure_private_dir(&nested).unwrap();
        assert_eq!(mode(&nested), DIR_MODE);
        fs::set_permissions(&nested, Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&nested).unwrap();
        assert_eq!(mode(&nested), DIR_MODE);
    }

    #[test]
    fn read_optional_distinguishes_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent");
        assert!(read_optional(&path).unwrap().is_none());
        fs::write(&path, "x").unwrap();
        assert_eq!(read_optional(&path).unwrap().as_deref(), Some("x"));
    }
}

//! The database file seen read-only, with the writes redb makes while it
//! opens (the repair of a file whose last commit failed) kept in memory:
//! how the store reads a file on a file system gone read-only, where
//! redb's own read-only open refuses a file that needs that repair.
//! Nothing here ever reaches the file; the store takes no writes through it.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use redb::StorageBackend;

#[derive(Debug)]
pub(crate) struct Overlay {
    file: File,
    state: Mutex<Written>,
}

/// The length redb set and what it wrote, oldest first.
#[derive(Debug)]
struct Written {
    len: u64,
    writes: Vec<(u64, Vec<u8>)>,
}

impl Overlay {
    pub(crate) fn open(path: &Path) -> io::Result<Overlay> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Overlay {
            file,
            state: Mutex::new(Written {
                len,
                writes: Vec::new(),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Written> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl StorageBackend for Overlay {
    fn len(&self) -> io::Result<u64> {
        Ok(self.state().len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let state = self.state();
        let end = offset + out.len() as u64;
        if end > state.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end",
            ));
        }
        // The file's bytes (zeros past its end), then what was written over them.
        out.fill(0);
        let on_file = self.file.metadata()?.len().min(end).saturating_sub(offset);
        self.file
            .read_exact_at(&mut out[..on_file as usize], offset)?;
        for (at, data) in &state.writes {
            let (from, to) = ((*at).max(offset), (at + data.len() as u64).min(end));
            if from < to {
                out[(from - offset) as usize..(to - offset) as usize]
                    .copy_from_slice(&data[(from - at) as usize..(to - at) as usize]);
            }
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.state().len = len;
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.state().writes.push((offset, data.to_vec()));
        Ok(())
    }
}

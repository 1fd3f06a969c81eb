//! The threads file on disk: the fingerprint that tells its versions apart, whether it changed,
//! and the checkpoint write (a temp file renamed into place, killed writers' temp files removed).

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::time::SystemTime;

use coral_base::{IoContext, SyncPolicy};

use crate::error::{Error, Result};

/// What identifies one version of the file: size and mtime (the original's fingerprint), plus
/// the inode, which every rename-into-place changes, so two writes in one mtime tick that
/// happen to leave the same size are still told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Fingerprint {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Fingerprint {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Fingerprint {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }
}

/// The fingerprint of the file at `path` now; `None` when there is none.
pub(crate) fn current(path: &Path) -> Result<Option<Fingerprint>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(Fingerprint::of(&m))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).at(path).map_err(Error::from),
    }
}

/// Whether the file at `path` may differ from the version `known`, of which `handle` (when
/// there is one) is an open handle.
pub(crate) fn changed(
    path: &Path,
    handle: Option<&File>,
    known: Option<Fingerprint>,
) -> Result<bool> {
    #[cfg(unix)]
    if let Some(f) = handle {
        return Ok(match f.metadata() {
            Ok(m) => {
                std::os::unix::fs::MetadataExt::nlink(&m) == 0 || Some(Fingerprint::of(&m)) != known
            }
            // A handle the file system no longer honours (NFS: stale): look again.
            Err(_) => true,
        });
    }
    #[cfg(not(unix))]
    let _ = handle;
    Ok(current(path)? != known)
}

/// Remove the temp files (`.<file>.tmp-<pid>`) that writers killed between writing and
/// renaming left. Only call this holding the lock file: then no writer is between the two.
/// Returns how many were removed.
pub(crate) fn remove_orphaned_temp_files(path: &Path) -> u64 {
    let dir = crate::own_journal::dir_of(path);
    let Some(prefix) = path
        .file_name()
        .and_then(|n| n.to_str())
        .map(|n| format!(".{n}.tmp-"))
    else {
        return 0;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let orphan = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
        if orphan && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Write `bytes` as the file at `path`: a temp file beside it, renamed into place (both
/// fsynced unless `sync` is [`SyncPolicy::Never`]). Returns the new version's fingerprint and an
/// open handle on it.
pub(crate) fn write(path: &Path, bytes: &[u8], sync: SyncPolicy) -> Result<(Fingerprint, File)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(path.file_name().unwrap_or_default());
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = File::create(&tmp).at(&tmp)?;
        f.write_all(bytes).at(&tmp)?;
        if sync.syncs() {
            f.sync_all().at(&tmp)?;
        }
        // The renamed file keeps its inode, size and mtime: this is its fingerprint.
        let fp = Fingerprint::of(&f.metadata().at(&tmp)?);
        std::fs::rename(&tmp, path).at(path)?;
        if sync.syncs() {
            File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
        }
        Ok((fp, f))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

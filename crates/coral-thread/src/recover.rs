//! Journals of processes that ended without checkpointing (killed, crashed, or unable to
//! write): found beside the threads file, told from live ones by their `flock`, claimed by
//! taking that lock, read, and removed once a checkpoint holds their records.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use coral_base::IoContext;

use crate::error::{Error, Result};
use crate::journal::{self, Scan};
use crate::own_journal::{dir_of, name_prefix, names};

/// A journal of an ended process, locked by this store until a checkpoint holds its records
/// (or the store closes without one, leaving it to the next process).
#[derive(Debug)]
pub(crate) struct Claimed {
    pub path: PathBuf,
    /// Holds the lock.
    _file: File,
    /// It had damage or gaps: kept aside as `.corrupt` instead of removed.
    damaged: bool,
}

/// Whether `name` is a journal name for `prefix`: `<prefix><pid>-<8 hex digits>`.
pub(crate) fn is_journal_name(name: &std::ffi::OsStr, prefix: &std::ffi::OsStr) -> bool {
    let (Some(name), Some(prefix)) = (name.to_str(), prefix.to_str()) else {
        return false;
    };
    let Some(rest) = name.strip_prefix(prefix) else {
        return false;
    };
    let Some((pid, tag)) = rest.split_once('-') else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && tag.len() == 8
        && tag.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Where every journal file of `from` goes when the threads file moves to `to`: the journals
/// of every process (live or ended) and damaged ones kept as `.corrupt`, renamed to `to`'s
/// journal prefix in `to`'s directory, so that the next store on `to` replays the ended
/// ones. Returns `(old path, new path)` pairs; none when `from` and `to` are the same.
pub fn journal_moves(from: &Path, to: &Path) -> std::io::Result<Vec<(PathBuf, PathBuf)>> {
    if from == to {
        return Ok(Vec::new());
    }
    let (old_prefix, new_prefix) = (name_prefix(from), name_prefix(to));
    let (Some(old_prefix), Some(new_prefix)) = (old_prefix.to_str(), new_prefix.to_str()) else {
        return Ok(Vec::new()); // non-UTF-8 names: no journal of ours can match
    };
    let entries = match std::fs::read_dir(dir_of(from)) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let name = entry?.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(old_prefix)) else {
            continue;
        };
        // `<pid>-<tag>`, possibly followed by `.<time>.corrupt`.
        let journal = rest.split('.').next().unwrap_or_default();
        let corrupt = rest.len() > journal.len() && rest.ends_with(".corrupt");
        let prefixed = format!("{old_prefix}{journal}");
        if !is_journal_name(
            std::ffi::OsStr::new(&prefixed),
            std::ffi::OsStr::new(old_prefix),
        ) || (rest.len() > journal.len() && !corrupt)
        {
            continue;
        }
        out.push((
            dir_of(from).join(&name),
            dir_of(to).join(format!("{new_prefix}{rest}")),
        ));
    }
    out.sort();
    Ok(out)
}

/// Claim every journal beside `threads_path` whose owner is gone, except `skip` (this store's
/// own and the ones it already holds), and read it. A journal whose lock is held belongs to a
/// live store (in this or another process) and is left alone.
pub(crate) fn claim_ended(threads_path: &Path, skip: &[&Path]) -> Result<Vec<(Claimed, Scan)>> {
    let dir = dir_of(threads_path);
    let prefix = name_prefix(threads_path);
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).at(dir).map_err(Error::from),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        if !is_journal_name(&name, &prefix) {
            continue;
        }
        let path = dir.join(&name);
        if skip.iter().any(|s| *s == path) {
            continue;
        }
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => continue, // removed meanwhile
            Err(e) => return Err(e).at(&path).map_err(Error::from),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => continue, // its owner is alive
            Err(std::fs::TryLockError::Error(e)) => return Err(e).at(&path).map_err(Error::from),
        }
        if !names(&path, &file) {
            continue; // another process recovered and removed it between our open and lock
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).at(&path)?;
        let scan = journal::scan(&bytes);
        out.push((
            Claimed {
                damaged: !scan.problems.is_empty(),
                path,
                _file: file,
            },
            scan,
        ));
    }
    Ok(out)
}

impl Claimed {
    /// A checkpoint holds every record: remove the journal, or, when it had damage, move it
    /// aside to `<name>.<unix time>.corrupt` so the damaged bytes can still be looked at.
    /// Returns the sentence to report for a moved one.
    pub(crate) fn finish(self) -> Option<String> {
        if !self.damaged {
            let _ = std::fs::remove_file(&self.path);
            return None;
        }
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut aside = self.path.clone().into_os_string();
        aside.push(format!(".{secs}.corrupt"));
        let aside = PathBuf::from(aside);
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => Some(format!(
                "the damaged journal was kept as {}",
                aside.display()
            )),
            Err(e) => Some(format!(
                "the damaged journal {} could not be moved aside ({e}); it will be read again",
                self.path.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn journals_move_with_the_threads_file_under_its_new_name() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("coral_threads.json");
        let to = dir.path().join("elsewhere/threads.json");
        for name in [
            ".coral_threads.json.journal-12-0a1b2c3d",
            ".coral_threads.json.journal-13-ffffffff.1700000000.corrupt",
            ".coral_threads.json.journal-13-ffffffff.tmp",
            ".coral_threads.json.lock",
            "coral_threads.json",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let moves = journal_moves(&from, &to).unwrap();
        let names: Vec<(String, String)> = moves
            .iter()
            .map(|(a, b)| {
                (
                    a.file_name().unwrap().to_string_lossy().into_owned(),
                    b.strip_prefix(dir.path()).unwrap().display().to_string(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                (
                    ".coral_threads.json.journal-12-0a1b2c3d".to_string(),
                    "elsewhere/.threads.json.journal-12-0a1b2c3d".to_string()
                ),
                (
                    ".coral_threads.json.journal-13-ffffffff.1700000000.corrupt".to_string(),
                    "elsewhere/.threads.json.journal-13-ffffffff.1700000000.corrupt".to_string()
                ),
            ]
        );
        assert!(journal_moves(&from, &from).unwrap().is_empty());
    }

    #[test]
    fn journal_names_are_recognised_exactly() {
        let prefix = name_prefix(Path::new("d/coral_threads.json"));
        assert_eq!(prefix, ".coral_threads.json.journal-");
        let ok = |n: &str| is_journal_name(OsStr::new(n), &prefix);
        assert!(ok(".coral_threads.json.journal-123-0a1b2c3d"));
        assert!(!ok(
            ".coral_threads.json.journal-123-0a1b2c3d.17000.corrupt"
        ));
        assert!(!ok(".coral_threads.json.journal-123-0a1b2c3"));
        assert!(!ok(".coral_threads.json.journal--0a1b2c3d"));
        assert!(!ok(".coral_threads.json.journal-12x-0a1b2c3d"));
        assert!(!ok(".other.json.journal-123-0a1b2c3d"));
        assert!(!ok("coral_threads.json"));
    }
}

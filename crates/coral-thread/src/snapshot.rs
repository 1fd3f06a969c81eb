//! A read-only look at everything a threads file and its journals hold: what `coral check`
//! reports and what `coral backup` copies, taken without locking, claiming or writing
//! anything, while writers keep running.

use std::path::Path;

use crate::codec;
use coral_base::IoContext;

use crate::error::{Error, Result};
use crate::journal;
use crate::merge::absorb;
use crate::own_journal::{dir_of, name_prefix};
use crate::recover::is_journal_name;

/// The threads as the next store to open would see them: the file with every journal (of
/// live and ended processes) replayed over it.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Snapshot {
    /// The threads file's bytes with the journals' records merged in (the original's shape).
    pub bytes: Vec<u8>,
    /// Threads in it.
    pub threads: usize,
    /// Steps in it.
    pub steps: usize,
    /// File elements kept verbatim because they are not readable threads.
    pub unreadable_entries: usize,
    /// Journal files read.
    pub journals: usize,
    /// Records replayed from them.
    pub journal_records: usize,
    /// Damage and gaps in the journals, one sentence each naming the journal.
    pub problems: Vec<String>,
}

/// Read the threads file at `threads_path` and every journal beside it. The journals are read
/// first: a live process empties its journal only after its checkpoint is in the file, so
/// every record is in what this reads, in one or the other. (A journal of a live process is
/// only appended to; a line being written is an unterminated tail and is left out.)
pub fn snapshot(threads_path: &Path) -> Result<Snapshot> {
    let dir = dir_of(threads_path);
    let prefix = name_prefix(threads_path);
    let mut journals = Vec::new();
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.at(dir)?;
                let name = entry.file_name();
                if !is_journal_name(&name, &prefix) {
                    continue;
                }
                match std::fs::read(entry.path()) {
                    Ok(bytes) => journals.push((name.to_string_lossy().into_owned(), bytes)),
                    // Removed by its owner's clean close or a recovery meanwhile: its records
                    // are in the file read below.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e).at(&entry.path()).map_err(Error::from),
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).at(dir).map_err(Error::from),
    }
    journals.sort();
    let file = match std::fs::read(threads_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).at(threads_path).map_err(Error::from),
    };
    let mut set = codec::parse(&file, threads_path)?;
    let mut out = Snapshot {
        journals: journals.len(),
        ..Snapshot::default()
    };
    for (name, bytes) in journals {
        let scan = journal::scan(&bytes);
        out.problems.extend(
            scan.problems
                .iter()
                .map(|p| format!("thread journal {name}: {p}")),
        );
        out.journal_records += scan.records.len();
        for record in scan.records {
            absorb(&mut set, record);
        }
    }
    out.threads = set.len();
    out.steps = set.step_total();
    out.unreadable_entries = set.unparsed.len();
    out.bytes = codec::to_bytes(&set);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::StoreOptions;
    use crate::store::ThreadStore;
    use coral_base::SyncPolicy;
    use std::time::Duration;

    #[test]
    fn a_snapshot_holds_what_only_a_live_journal_has_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let options = StoreOptions {
            coalesce: Duration::from_secs(3600),
            background_flush: false,
            sync: SyncPolicy::Never,
            ..StoreOptions::default()
        };
        let live = ThreadStore::open_with(&path, options).unwrap();
        let id = live.create("live", None, None, None).unwrap().thread_id;
        for i in 0..3 {
            live.advance(&id, &format!("pending {i}"), None, None)
                .unwrap();
        }
        let listing = |d: &Path| {
            let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
                .unwrap()
                .flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let before = listing(dir.path());
        let snap = snapshot(&path).unwrap();
        assert_eq!(listing(dir.path()), before, "nothing written or removed");
        assert_eq!((snap.threads, snap.steps, snap.journals), (1, 3, 1));
        assert_eq!(snap.journal_records, 3);
        assert!(snap.problems.is_empty());
        let copy = codec::parse(&snap.bytes, &path).unwrap();
        assert_eq!(copy.get(&id).unwrap().steps.len(), 3);
        // The live store still owns its journal and writes it out as usual.
        live.flush().unwrap();
        assert_eq!(snapshot(&path).unwrap().steps, 3);
    }
}

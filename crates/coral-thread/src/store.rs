//! `ThreadStore`: the handle on a threads file shared by processes (docs/threads.md): the
//! seven operations, import, flush and close, over the state in `shared.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::codec;
use crate::error::Result;
use crate::merge::absorb;
use crate::model::{Status, StatusReport, ThreadView};
use crate::options::StoreOptions;
use crate::shared::Shared;

/// Threads stored in one file and shared with other processes (docs/threads.md). All methods take
/// `&self`; the store is `Send + Sync`.
pub struct ThreadStore {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ThreadStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadStore")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

/// What [`ThreadStore::import`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ImportCounts {
    /// Threads in the source.
    pub found: usize,
    /// Threads this file did not have.
    pub added: usize,
    /// Threads it had that gained steps or newer fields.
    pub merged: usize,
    /// Threads it already had exactly.
    pub unchanged: usize,
    /// Steps added in all.
    pub steps_added: usize,
    /// Elements of the source that are not readable threads (left out).
    pub unreadable_entries: usize,
}

/// What importing one thread did.
enum Imported {
    /// New here, with this many steps.
    Added(usize),
    /// Known here: steps added, and whether anything changed.
    Merged(usize, bool),
}

/// I/O counters, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreCounters {
    /// Writes of the file by this store.
    pub writes: u64,
    /// Reads of the file that another writer had changed (including the first read).
    pub reloads: u64,
    /// Changes not written to the threads file yet (they are in a journal).
    pub pending: bool,
    /// Records this store wrote to its journal (one per change).
    pub journal_records: u64,
    /// Records replayed from the journals of ended processes.
    pub recovered_records: u64,
    /// Ended processes' journals absorbed and waiting for a checkpoint to remove them.
    pub claimed_journals: usize,
    /// Temp files of writers killed mid-checkpoint removed by this store's checkpoints.
    pub removed_temp_files: u64,
}

impl ThreadStore {
    /// Open the threads file at `path` with the default options. A missing file is an empty
    /// store (the file is created by the first change); a file that cannot be read as threads
    /// is an error naming it.
    pub fn open(path: impl AsRef<Path>) -> Result<ThreadStore> {
        ThreadStore::open_with(path, StoreOptions::default())
    }

    /// Open with explicit options.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<ThreadStore> {
        let shared = Arc::new(Shared::new(path.as_ref().to_path_buf(), options));
        {
            let mut st = shared.lock_state();
            shared.refresh_file(&mut st)?;
            shared.recover(&mut st)?;
        }
        let flusher = if shared.options.background_flush {
            let s = Arc::clone(&shared);
            Some(
                std::thread::Builder::new()
                    .name("coral-threads-flush".into())
                    .spawn(move || s.flush_loop())
                    .map_err(|e| crate::Error::Io {
                        path: shared.path.clone(),
                        source: e,
                    })?,
            )
        } else {
            None
        };
        Ok(ThreadStore { shared, flusher })
    }

    /// The threads file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Threads known to this process (archived included), without looking at the file: O(1).
    pub fn len(&self) -> usize {
        self.shared.lock_state().set.len()
    }

    /// Threads in the file now (archived included): what [`ThreadStore::len`] counts after
    /// catching up with other processes' changes (an `fstat`, and a read only when the file
    /// changed).
    pub fn count(&self) -> Result<usize> {
        self.shared.read(|set| Ok(set.len()))
    }

    /// True when there are no threads.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// File elements kept verbatim because they are not readable threads.
    pub fn unreadable_entries(&self) -> usize {
        self.shared.lock_state().set.unparsed.len()
    }

    /// Write and read counters.
    pub fn counters(&self) -> StoreCounters {
        let st = self.shared.lock_state();
        StoreCounters {
            writes: st.writes,
            reloads: st.reloads,
            pending: st.dirty,
            journal_records: st.journal_records,
            recovered_records: st.recovered_records,
            claimed_journals: st.claimed.len(),
            removed_temp_files: st.removed_temp_files,
        }
    }

    /// Damage found in ended processes' journals (a damaged or missing record, one sentence
    /// each, naming the journal) and where damaged journals were moved. Empty when all is
    /// well; a record that fails its check is skipped on its own, never silently.
    pub fn repairs(&self) -> Vec<String> {
        self.shared.lock_state().repairs.clone()
    }

    /// This store's journal file, once the first change created it.
    pub fn journal_path(&self) -> Option<PathBuf> {
        self.shared
            .lock_state()
            .journal
            .as_ref()
            .map(|j| j.path().to_path_buf())
    }

    /// `thread_create(title, summary?, parent_thread_id?, by?)`.
    pub fn create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent_thread_id: Option<&str>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        let redaction = &self.shared.options.redaction;
        let title = redaction.apply(title).0;
        let summary = summary.map(|s| redaction.apply(s).0);
        self.shared.change(None, |set, now| {
            let t = set.create(&title, summary.as_deref(), parent_thread_id, by, now)?;
            Ok((t.view(), true))
        })
    }

    /// `thread_status(thread_id?, include_archived?, query?)`: one thread by id, or every
    /// non-archived thread (archived too when asked) matching `query`, active first, then
    /// interrupted, newest update first, each with its children.
    pub fn status(
        &self,
        thread_id: Option<&str>,
        include_archived: bool,
        query: Option<&str>,
    ) -> Result<StatusReport> {
        self.shared
            .read(|set| set.status(thread_id, include_archived, query))
    }

    /// `thread_advance(thread_id, note, done?, by?)`: append a step; `done` omitted is
    /// detected from the note ([`crate::looks_completed`]).
    pub fn advance(
        &self,
        thread_id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
    ) -> Result<ThreadView> {
        let note = self.shared.options.redaction.apply(note).0;
        self.shared.change(Some(thread_id), |set, now| {
            let t = set.advance(thread_id, &note, done, by, now)?;
            Ok((t.view(), true))
        })
    }

    /// `thread_interrupt(thread_id, reason?)`: status interrupted, plus a step
    /// `[中断] reason`.
    pub fn interrupt(&self, thread_id: &str, reason: Option<&str>) -> Result<ThreadView> {
        let reason = reason.map(|r| self.shared.options.redaction.apply(r).0);
        self.shared.change(Some(thread_id), |set, now| {
            let t = set.interrupt(thread_id, reason.as_deref(), now)?;
            Ok((t.view(), true))
        })
    }

    /// `thread_archive(thread_id)`: hide from the overview; kept forever.
    pub fn archive(&self, thread_id: &str) -> Result<ThreadView> {
        self.set_status(thread_id, Status::Archived)
    }

    /// `thread_resume(thread_id)`: back to active (from interrupted or archived).
    pub fn resume(&self, thread_id: &str) -> Result<ThreadView> {
        self.set_status(thread_id, Status::Active)
    }

    fn set_status(&self, thread_id: &str, status: Status) -> Result<ThreadView> {
        self.shared.change(Some(thread_id), |set, now| {
            let changed = set.set_status(thread_id, status, now)?;
            Ok((set.view(thread_id)?, changed))
        })
    }

    /// `thread_link(child_id, parent_id)`: no self-links, no cycles.
    pub fn link(&self, child_id: &str, parent_id: &str) -> Result<()> {
        self.shared.change(Some(child_id), |set, now| {
            let changed = set.link(child_id, parent_id, now)?;
            Ok(((), changed))
        })
    }

    /// Bring in the threads of another threads file (an original Coral's `coral_threads.json`,
    /// with any journals beside it): threads merged by id and steps by `step_id`, exactly as
    /// processes sharing one file merge, each thread journaled like any change. Running it
    /// again adds nothing. The source is only read.
    pub fn import(&self, source: &Path) -> Result<ImportCounts> {
        let snapshot = crate::snapshot::snapshot(source)?;
        let theirs = codec::parse(&snapshot.bytes, source)?;
        let mut counts = ImportCounts {
            found: theirs.threads.len(),
            unreadable_entries: theirs.unparsed.len(),
            ..ImportCounts::default()
        };
        for thread in theirs.threads {
            let id = thread.thread_id.clone();
            // A thread new here is journaled as a creation, one we have as a change; another
            // process may create it in between, so a creation that finds it looks again.
            let mut known = self.shared.read(|set| Ok(set.position(&id).is_some()))?;
            loop {
                let candidate = thread.clone();
                let outcome = self.shared.change(known.then_some(id.as_str()), |set, _| {
                    let before = match set.position(&id) {
                        Some(_) if !known => return Ok((None, false)),
                        Some(i) => Some((set.threads[i].steps.len(), set.view(&id)?)),
                        None => None,
                    };
                    absorb(set, candidate);
                    let after = set.view(&id)?;
                    Ok(match before {
                        None => (Some(Imported::Added(after.step_count)), true),
                        Some((steps, view)) => {
                            let changed = view != after;
                            let new_steps = after.step_count.saturating_sub(steps);
                            (Some(Imported::Merged(new_steps, changed)), changed)
                        }
                    })
                })?;
                match outcome {
                    None => known = true,
                    Some(Imported::Added(steps)) => {
                        counts.added += 1;
                        counts.steps_added += steps;
                        break;
                    }
                    Some(Imported::Merged(steps, changed)) => {
                        if changed {
                            counts.merged += 1;
                        } else {
                            counts.unchanged += 1;
                        }
                        counts.steps_added += steps;
                        break;
                    }
                }
            }
        }
        self.flush()?;
        Ok(counts)
    }

    /// Every thread's view in file order, after merging the file (for checks and exports).
    pub fn all(&self) -> Result<Vec<ThreadView>> {
        self.shared.read(|set| Ok(set.views()))
    }

    /// Write pending changes to the threads file now (they are already in the journal).
    pub fn flush(&self) -> Result<()> {
        self.shared.flush()
    }
}

impl Drop for ThreadStore {
    fn drop(&mut self) {
        self.shared.lock_state().stop = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        // Errors cannot be reported from drop; callers who care call flush() first. If the
        // checkpoint fails, the journal stays (unlocked once closed) for the next process.
        let flushed = self.flush().is_ok();
        let mut st = self.shared.lock_state();
        if let Some(j) = st.journal.take()
            && flushed
            && !st.dirty
        {
            j.remove();
        }
    }
}

#[cfg(test)]
impl ThreadStore {
    /// Leave as SIGKILL would: nothing more is written, the journal is closed (its lock
    /// released) but stays on disk, and absorbed journals are released unremoved.
    fn crash(mut self) {
        self.shared.lock_state().stop = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.flusher.take() {
            let _ = h.join();
        }
        let mut st = self.shared.lock_state();
        st.journal = None;
        st.claimed.clear();
        st.dirty = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::options::Clock;
    use crate::own_journal::OwnJournal;
    use crate::shared::RESCAN_SECONDS;
    use coral_base::SyncPolicy;
    use std::collections::HashSet;
    use std::sync::Mutex;
    use std::time::Duration;

    /// No background writer and a window no test reaches: the file is written only by
    /// `flush()`, so every change after the first sits in the journal alone.
    fn options() -> StoreOptions {
        StoreOptions {
            coalesce: Duration::from_secs(3600),
            background_flush: false,
            lock_wait: Duration::from_secs(5),
            sync: SyncPolicy::Never,
            ..StoreOptions::default()
        }
    }

    fn journals(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".journal-"))
            .collect();
        v.sort();
        v
    }

    fn step_ids(store: &ThreadStore) -> Vec<String> {
        store
            .all()
            .unwrap()
            .iter()
            .flat_map(|t| t.steps.iter().map(|s| s.step_id.to_string()))
            .collect()
    }

    fn unique(ids: &[String]) -> bool {
        ids.iter().collect::<HashSet<_>>().len() == ids.len()
    }

    /// A store that created a thread, flushed once, then advanced `n` times and was killed:
    /// the advances are only in its journal. Returns the thread id and the acknowledged step
    /// ids.
    fn killed_writer(path: &Path, n: usize) -> (String, Vec<String>) {
        let a = ThreadStore::open_with(path, options()).unwrap();
        let id = a.create("killed", None, None, None).unwrap().thread_id;
        a.flush().unwrap();
        let acked = (0..n)
            .map(|i| {
                let t = a
                    .advance(&id, &format!("step {i}"), Some(false), None)
                    .unwrap();
                t.steps.last().unwrap().step_id.to_string()
            })
            .collect();
        assert!(a.counters().pending);
        a.crash();
        (id, acked)
    }

    #[test]
    fn a_killed_stores_acknowledged_steps_are_recovered_by_the_next_opener() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (id, acked) = killed_writer(&path, 5);
        let on_file = codec::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(
            on_file.get(&id).unwrap().steps.len(),
            0,
            "only in the journal"
        );
        assert_eq!(journals(dir.path()).len(), 1);

        let b = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(b.counters().recovered_records, 5);
        assert_eq!(b.counters().claimed_journals, 1);
        assert_eq!(
            step_ids(&b),
            acked,
            "every step, once, in the writer's order"
        );
        assert!(b.repairs().is_empty(), "{:?}", b.repairs());
        b.flush().unwrap();
        assert!(journals(dir.path()).is_empty(), "absorbed, then removed");
        drop(b);
        let on_file = codec::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        let ids: Vec<String> = on_file
            .get(&id)
            .unwrap()
            .steps
            .iter()
            .map(|s| s.step_id.to_string())
            .collect();
        assert_eq!(ids, acked);
    }

    #[test]
    fn replaying_records_the_file_already_holds_duplicates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let a = ThreadStore::open_with(&path, options()).unwrap();
        let id = a.create("t", None, None, None).unwrap().thread_id;
        for i in 0..4 {
            a.advance(&id, &format!("s{i}"), None, None).unwrap();
        }
        let journal = a.journal_path().unwrap();
        let bytes = std::fs::read(&journal).unwrap();
        // Killed between the checkpoint's rename and the journal's truncation: the file and
        // the journal both hold the records.
        a.flush().unwrap();
        a.crash();
        std::fs::write(&journal, &bytes).unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        // (The create was checkpointed at once, emptying the journal: 4 advances remain.)
        assert_eq!(b.counters().recovered_records, 4);
        let ids = step_ids(&b);
        assert_eq!(ids.len(), 4);
        assert!(unique(&ids));
        let t = b.all().unwrap().remove(0);
        assert_eq!(
            t.steps.iter().map(|s| s.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn steps_written_elsewhere_meanwhile_stay_first_and_recovered_ones_follow() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (id, acked) = killed_writer(&path, 3);
        // A live store advanced the thread after the kill, before anyone recovered: it
        // cannot claim a journal until it looks (its next scan), so make it look now.
        let live = ThreadStore::open_with(&path, StoreOptions { ..options() }).unwrap();
        let mine = live.advance(&id, "live", None, None).unwrap();
        live.flush().unwrap();
        let ids = step_ids(&live);
        assert_eq!(ids.len(), 4);
        assert!(unique(&ids));
        // The recovered steps were absorbed at open, before the live advance.
        assert_eq!(&ids[..3], &acked[..]);
        assert_eq!(ids[3], *mine.steps.last().unwrap().step_id);
    }

    #[test]
    fn a_reader_replays_an_ended_journal_and_its_writer_thread_checkpoints_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let now = Arc::new(Mutex::new(100.0_f64));
        let at = Arc::clone(&now);
        let reader = ThreadStore::open_with(
            &path,
            StoreOptions {
                coalesce: Duration::from_millis(10),
                background_flush: true,
                clock: Clock::new(move || *at.lock().unwrap()),
                ..options()
            },
        )
        .unwrap();
        let (id, acked) = killed_writer(&path, 3);
        // Within a second of its last look the reader does not look again ...
        let seen = |r: &ThreadStore| match r.status(Some(&id), false, None).unwrap() {
            StatusReport::One(v) => v.steps.len(),
            StatusReport::Many(_) => unreachable!(),
        };
        assert_eq!(seen(&reader), 0);
        // ... after it, the killed writer's steps show, and the writer thread writes them.
        *now.lock().unwrap() += RESCAN_SECONDS;
        assert_eq!(seen(&reader), 3);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !journals(dir.path()).is_empty() {
            assert!(std::time::Instant::now() < deadline, "never checkpointed");
            std::thread::sleep(Duration::from_millis(5));
        }
        let on_file = codec::parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        let ids: Vec<String> = on_file
            .get(&id)
            .unwrap()
            .steps
            .iter()
            .map(|s| s.step_id.to_string())
            .collect();
        assert_eq!(ids, acked);
    }

    #[test]
    fn a_checkpoint_removes_temp_files_killed_writers_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        for name in [
            ".coral_threads.json.tmp-123",
            ".coral_threads.json.tmp-4567",
            ".coral_threads.json.tmp-x", // not ours
            "coral_threads.json.tmp",    // the original's, written under the lock file
            ".coral_wal.jsonl.tmp-123",  // another file's
        ] {
            std::fs::write(dir.path().join(name), "partial").unwrap();
        }
        let store = ThreadStore::open_with(&path, options()).unwrap();
        store.create("t", None, None, None).unwrap();
        assert_eq!(store.counters().removed_temp_files, 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("tmp"))
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                ".coral_threads.json.tmp-x",
                ".coral_wal.jsonl.tmp-123",
                "coral_threads.json.tmp"
            ]
        );
    }

    #[test]
    fn a_live_stores_journal_is_never_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let a = ThreadStore::open_with(&path, options()).unwrap();
        let id = a.create("alive", None, None, None).unwrap().thread_id;
        a.advance(&id, "pending", None, None).unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(b.counters().claimed_journals, 0);
        assert_eq!(b.counters().recovered_records, 0);
        b.create("b's own", None, None, None).unwrap();
        b.flush().unwrap();
        assert!(a.journal_path().unwrap().exists(), "a's journal untouched");
        assert_eq!(journals(dir.path()).len(), 2);
        // a's pending step reaches the file at a's checkpoint, next to b's thread.
        a.flush().unwrap();
        let c = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(step_ids(&c).len(), 1);
        // Clean closes remove their journals; the file then holds everything.
        drop((a, b, c));
        assert!(journals(dir.path()).is_empty());
    }

    #[test]
    fn the_journal_is_emptied_by_each_checkpoint_and_numbers_keep_counting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let a = ThreadStore::open_with(&path, options()).unwrap();
        assert!(a.journal_path().is_none(), "reading creates no journal");
        let id = a.create("t", None, None, None).unwrap().thread_id;
        let journal = a.journal_path().unwrap();
        a.flush().unwrap();
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
        a.advance(&id, "after the checkpoint", None, None).unwrap();
        let scan = crate::journal::scan(&std::fs::read(&journal).unwrap());
        assert!(scan.problems.is_empty());
        assert_eq!(scan.records.len(), 1);
        let text = std::fs::read_to_string(&journal).unwrap();
        assert!(text.contains(r#""op":"begin","seq":2"#), "{text}");
        assert!(text.contains(r#""op":"thread","seq":2"#), "{text}");
        assert_eq!(a.counters().journal_records, 2);
    }

    #[test]
    fn damage_in_an_ended_journal_is_reported_and_skips_only_the_damaged_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (_, acked) = killed_writer(&path, 4);
        let journal = journals(dir.path()).remove(0);
        let text = std::fs::read_to_string(&journal).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        assert_eq!(lines.len(), 5, "begin + 4 advances");
        lines[2] = lines[2].replace("step 1", "step X"); // the CRC no longer matches
        lines.remove(3); // record of "step 2" vanishes
        std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        let repairs = b.repairs();
        assert_eq!(repairs.len(), 2, "{repairs:?}");
        assert!(
            repairs[0].contains("line 3: checksum mismatch"),
            "{repairs:?}"
        );
        assert!(repairs[1].contains("1 record(s) missing"), "{repairs:?}");
        let name = journal.file_name().unwrap().to_string_lossy().into_owned();
        assert!(repairs.iter().all(|r| r.contains(&name)), "{repairs:?}");
        assert_eq!(step_ids(&b), [acked[0].clone(), acked[3].clone()]);
        b.flush().unwrap();
        let left = journals(dir.path());
        assert_eq!(left.len(), 1);
        assert!(left[0].to_string_lossy().ends_with(".corrupt"), "{left:?}");
        assert!(b.repairs().last().unwrap().contains("kept as"));
        // A quarantined journal is not read again.
        let c = ThreadStore::open_with(&path, options()).unwrap();
        assert_eq!(c.counters().recovered_records, 0);
        assert!(c.repairs().is_empty());
    }

    #[test]
    fn a_torn_last_line_is_dropped_without_a_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let (_, acked) = killed_writer(&path, 3);
        let journal = journals(dir.path()).remove(0);
        let mut bytes = std::fs::read(&journal).unwrap();
        bytes.extend_from_slice(br#"{"crc":"0000"#); // a fourth record, cut off mid-write
        std::fs::write(&journal, bytes).unwrap();
        let b = ThreadStore::open_with(&path, options()).unwrap();
        assert!(b.repairs().is_empty(), "{:?}", b.repairs());
        assert_eq!(step_ids(&b), acked);
    }

    #[test]
    fn a_change_that_cannot_be_journaled_is_taken_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_threads.json");
        let store = ThreadStore::open_with(&path, options()).unwrap();
        let parent = store.create("parent", None, None, None).unwrap();
        let t = store.create("kept", None, None, None).unwrap();
        store.advance(&t.thread_id, "one", None, None).unwrap();
        let before = store.all().unwrap();
        let records = store.counters().journal_records;
        // Every write of the journal now fails with ENOSPC, as on a full disk.
        let real = store
            .shared
            .lock_state()
            .journal
            .replace(OwnJournal::failing_for_tests(
                dir.path().join("no-such-journal"),
            ));
        let full = |r: Result<()>| match r {
            Err(Error::NotRecorded { source, .. }) => {
                assert_eq!(source.raw_os_error(), Some(28), "{source}")
            }
            other => panic!("expected NotRecorded, got {other:?}"),
        };
        let id = t.thread_id.as_str();
        full(store.advance(id, "lost", None, None).map(drop));
        full(store.interrupt(id, Some("lost")).map(drop));
        full(store.archive(id).map(drop));
        full(store.link(id, &parent.thread_id));
        full(store.create("lost", None, None, None).map(drop));
        assert_eq!(store.all().unwrap(), before, "every change was taken back");
        assert_eq!(store.counters().journal_records, records);
        // A no-op change needs no record and still succeeds.
        store.resume(id).unwrap();
        // Back to the real journal: changes are recorded again.
        store.shared.lock_state().journal = real;
        store.advance(id, "recorded", None, None).unwrap();
        assert_eq!(store.counters().journal_records, records + 1);
    }
}

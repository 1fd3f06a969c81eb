//! `ThreadStore` against its file: coalescing, reload, merge between stores, locks, the
//! original's formats and done-detection golden data.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use coral_thread::{
    Clock, Error, Status, StatusReport, StoreOptions, SyncPolicy, ThreadStore, ThreadView,
    looks_completed,
};
use serde_json::Value;

/// A clock the test moves by hand.
#[derive(Clone, Default)]
struct Manual(Arc<AtomicU64>);

impl Manual {
    fn at(start: f64) -> Manual {
        let m = Manual::default();
        m.set(start);
        m
    }
    fn set(&self, t: f64) {
        self.0.store(t.to_bits(), Ordering::SeqCst);
    }
    fn clock(&self) -> Clock {
        let cell = Arc::clone(&self.0);
        Clock::new(move || f64::from_bits(cell.load(Ordering::SeqCst)))
    }
}

/// Options with the test's clock and no background writer: every write is the test's doing.
fn manual(clock: &Manual) -> StoreOptions {
    StoreOptions {
        background_flush: false,
        sync: SyncPolicy::Never,
        lock_wait: Duration::from_secs(5),
        clock: clock.clock(),
        ..StoreOptions::default()
    }
}

fn file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("memory_data/coral_threads.json")
}

fn on_disk(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn one(r: StatusReport) -> ThreadView {
    match r {
        StatusReport::One(v) => v,
        other => panic!("expected one thread, got {other:?}"),
    }
}

#[test]
fn golden_done_detection() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_test_vectors.json"
    );
    let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = golden["looks_completed"].as_object().unwrap();
    assert!(cases.len() >= 10);
    for (note, expected) in cases {
        assert_eq!(
            looks_completed(note),
            expected.as_bool().unwrap(),
            "looks_completed({note:?})"
        );
    }
}

#[test]
fn writes_are_coalesced_to_one_per_window_and_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Manual::at(1000.0);
    let store = ThreadStore::open_with(file(&dir), manual(&clock)).unwrap();
    assert!(
        !file(&dir).exists(),
        "nothing is written before the first change"
    );
    let t = store.create("coalesce", None, None, None).unwrap();
    assert_eq!(
        store.counters().writes,
        1,
        "an isolated change is written at once"
    );
    clock.set(1000.1);
    store.advance(&t.thread_id, "a", None, None).unwrap();
    clock.set(1000.2);
    store.advance(&t.thread_id, "b", None, None).unwrap();
    assert_eq!(store.counters().writes, 1, "inside the window: pending");
    assert!(store.counters().pending);
    assert_eq!(
        on_disk(&file(&dir))[0]["steps"].as_array().unwrap().len(),
        0
    );
    clock.set(1000.3);
    store.advance(&t.thread_id, "c", None, None).unwrap();
    assert_eq!(
        store.counters().writes,
        2,
        "past the window: written with everything pending"
    );
    assert_eq!(
        on_disk(&file(&dir))[0]["steps"].as_array().unwrap().len(),
        3
    );
    clock.set(1000.35);
    store.advance(&t.thread_id, "d", None, None).unwrap();
    store.flush().unwrap();
    assert_eq!(store.counters().writes, 3);
    store.flush().unwrap();
    assert_eq!(store.counters().writes, 3, "nothing pending: no write");
    // Reads and no-op changes never write.
    store.status(None, true, None).unwrap();
    clock.set(2000.0);
    store.resume(&t.thread_id).unwrap();
    assert_eq!(store.counters().writes, 3);
}

#[test]
fn drop_writes_pending_changes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Manual::at(10.0);
    let id = {
        let store = ThreadStore::open_with(file(&dir), manual(&clock)).unwrap();
        let t = store.create("kept", None, None, None).unwrap();
        store
            .advance(&t.thread_id, "pending at drop", None, None)
            .unwrap();
        assert!(store.counters().pending);
        t.thread_id
    };
    let store = ThreadStore::open_with(file(&dir), manual(&clock)).unwrap();
    let v = one(store.status(Some(&id), false, None).unwrap());
    assert_eq!(&*v.steps[0].text, "pending at drop");
}

#[test]
fn the_background_writer_writes_without_further_calls() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        coalesce: Duration::from_millis(20),
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    };
    let store = ThreadStore::open_with(file(&dir), options).unwrap();
    let t = store.create("bg", None, None, None).unwrap();
    store.advance(&t.thread_id, "one", None, None).unwrap();
    store.advance(&t.thread_id, "two", None, None).unwrap();
    // No flush: the background thread must write within its window. Poll (bounded) rather
    // than assume a duration.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        // The first write is the writer thread's too, so the file may not exist yet.
        let steps = match std::fs::metadata(file(&dir)) {
            Ok(_) => on_disk(&file(&dir))[0]["steps"].as_array().unwrap().len(),
            Err(_) => 0,
        };
        if steps == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never written in the background"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!store.counters().pending);
}

#[test]
fn other_stores_see_changes_at_their_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Manual::at(100.0);
    let options = StoreOptions {
        coalesce: Duration::ZERO,
        ..manual(&clock)
    };
    let a = ThreadStore::open_with(file(&dir), options.clone()).unwrap();
    let b = ThreadStore::open_with(file(&dir), options).unwrap();
    let t = a
        .create("跨聊天协作", Some("聊天 A 定宏观路径"), None, Some("聊天A"))
        .unwrap();
    clock.set(101.0);
    a.advance(&t.thread_id, "B 完成第一步", None, Some("聊天B"))
        .unwrap();
    let seen = b.status(None, false, None).unwrap();
    assert_eq!(seen.count(), 1);
    assert_eq!(seen.views()[0].last_advance_by, "聊天B");
    assert!(seen.views()[0].steps[0].done);
    clock.set(102.0);
    b.advance(&t.thread_id, "C 推进第二步", None, Some("聊天C"))
        .unwrap();
    let back = one(a.status(Some(&t.thread_id), false, None).unwrap());
    assert_eq!(&*back.steps.last().unwrap().by, "聊天C");
    assert_eq!(back.step_count, 2);
    assert!(a.counters().reloads >= 1);
    assert_eq!(b.len(), 1);
}

#[test]
fn pending_changes_of_two_stores_both_survive() {
    // Each store has a change the other has not seen when it writes: the merge under the lock
    // keeps both (the original dropped threads created elsewhere).
    let dir = tempfile::tempdir().unwrap();
    let clock = Manual::at(100.0);
    let a = ThreadStore::open_with(file(&dir), manual(&clock)).unwrap();
    let b = ThreadStore::open_with(file(&dir), manual(&clock)).unwrap();
    let first = a.create("first", None, None, None).unwrap(); // written at once
    let second = b.create("second", None, None, None).unwrap(); // b reloads, then writes
    clock.set(100.1);
    let ta = a.create("from a", None, None, None).unwrap(); // pending in a
    let sa = a.advance(&first.thread_id, "a step", None, None).unwrap();
    let tb = b.create("from b", None, None, None).unwrap(); // pending in b
    let sb = b.advance(&first.thread_id, "b step", None, None).unwrap();
    a.flush().unwrap();
    b.flush().unwrap();
    a.status(None, false, None).unwrap();
    let fresh = ThreadStore::open_with(file(&dir), manual(&clock)).unwrap();
    let all = fresh.all().unwrap();
    let titles: Vec<&str> = all.iter().map(|t| t.title.as_str()).collect();
    for id in [&first, &second, &ta, &tb] {
        assert!(
            titles.contains(&id.title.as_str()),
            "{} lost: {titles:?}",
            id.title
        );
    }
    let steps = &one(fresh.status(Some(&first.thread_id), false, None).unwrap()).steps;
    let ids: Vec<&str> = steps.iter().map(|s| &*s.step_id).collect();
    assert_eq!(steps.len(), 2);
    assert!(ids.contains(&&*sa.steps[0].step_id));
    assert!(ids.contains(&&*sb.steps[0].step_id));
    assert_eq!(steps.iter().map(|s| s.seq).collect::<Vec<_>>(), [1, 2]);
    // And a, after its next read, holds the same threads as the file (order aside: each
    // process keeps its own threads first).
    let sorted = |mut v: Vec<ThreadView>| {
        v.sort_by(|x, y| x.thread_id.cmp(&y.thread_id));
        v
    };
    assert_eq!(sorted(a.all().unwrap()), sorted(fresh.all().unwrap()));
}

#[test]
fn three_writers_in_parallel_lose_no_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir);
    let options = StoreOptions {
        sync: SyncPolicy::Never,
        ..StoreOptions::default()
    };
    let id = {
        let s = ThreadStore::open_with(&path, options.clone()).unwrap();
        s.create("shared", None, None, None).unwrap().thread_id
    };
    std::thread::scope(|scope| {
        for w in 0..3 {
            let (path, options, id) = (&path, options.clone(), &id);
            scope.spawn(move || {
                let s = ThreadStore::open_with(path, options).unwrap();
                for i in 0..30 {
                    s.advance(id, &format!("writer {w} step {i}"), Some(false), None)
                        .unwrap();
                }
                s.flush().unwrap();
            });
        }
    });
    let s = ThreadStore::open_with(&path, options).unwrap();
    let v = one(s.status(Some(&id), false, None).unwrap());
    assert_eq!(v.step_count, 90);
    let seqs: Vec<u64> = v.steps.iter().map(|s| s.seq).collect();
    assert_eq!(seqs, (1..=90).collect::<Vec<u64>>());
    for w in 0..3 {
        // Each writer's steps are in its own order.
        let mine: Vec<usize> = v
            .steps
            .iter()
            .filter_map(|s| s.text.strip_prefix(&format!("writer {w} step ")))
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(mine, (0..30).collect::<Vec<usize>>(), "writer {w}");
    }
}

#[test]
fn a_stale_lock_is_recovered_and_a_live_one_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let lock = path.with_file_name("coral_threads.json.lock");
    let clock = Manual::at(5.0);
    let options = StoreOptions {
        lock_wait: Duration::from_millis(100),
        ..manual(&clock)
    };
    // A writer that was SIGKILLed while holding the lock.
    let mut holder = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    std::fs::write(&lock, holder.id().to_string()).unwrap();
    let old = SystemTime::now() - Duration::from_secs(30);
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let store = ThreadStore::open_with(&path, options).unwrap();
    // Alive: the lock is respected; the change is journaled (so it succeeds: it is recorded)
    // and its checkpoint stays pending.
    store.create("waits", None, None, None).unwrap();
    match store.flush() {
        Err(Error::LockTimeout { pid, .. }) => assert_eq!(pid, Some(holder.id())),
        other => panic!("expected LockTimeout, got {other:?}"),
    }
    assert!(store.counters().pending);
    assert_eq!(store.len(), 1);
    assert!(!path.exists(), "nothing written under a live writer's lock");
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Dead and old: stale, removed, and the pending change is written.
    store.flush().unwrap();
    assert!(!lock.exists());
    assert_eq!(on_disk(&path).len(), 1);
}

#[test]
fn the_original_array_file_loads_and_round_trips() {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/original_array.json"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coral_threads.json");
    std::fs::copy(src, &path).unwrap();
    let clock = Manual::at(1751001000.0);
    let store = ThreadStore::open_with(&path, manual(&clock)).unwrap();
    assert_eq!(store.len(), 3);
    assert_eq!(store.unreadable_entries(), 0);
    let overview = store.status(None, false, None).unwrap();
    let titles: Vec<&str> = overview.views().iter().map(|v| v.title.as_str()).collect();
    assert_eq!(
        titles,
        ["发布 v2.0", "子任务：压测"],
        "active, then interrupted; archived hidden"
    );
    let StatusReport::Many(entries) = overview else {
        panic!()
    };
    assert_eq!(
        entries[0].children,
        ["7c2e9b1a4d6f8e30", "5d4c3b2a19087f6e"]
    );
    let readme = one(store.status(Some("7c2e9b1a4d6f8e30"), false, None).unwrap());
    assert_eq!(readme.status, Status::Archived);
    assert_eq!(readme.step_count, 2);
    assert!(readme.steps.iter().all(|s| s.step_id.len() == 12));
    let release = one(store.status(Some("3f9a1c7e5b2d4a60"), false, None).unwrap());
    assert_eq!(&*release.steps[0].step_id, "a1b2c3d4e5f6");
    assert_eq!(&*release.steps[2].text, "[中断] 等上游依赖");
    assert_eq!(release.created_at, 1751000000.0);
    // A change rewrites it in the same shape: everything else byte-for-byte equal as JSON.
    store
        .advance("3f9a1c7e5b2d4a60", "rust 版接手", None, Some("rust"))
        .unwrap();
    store.flush().unwrap();
    let before: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    let after = on_disk(&path);
    assert_eq!(after.len(), 3);
    assert_eq!(after[2], before[2]);
    assert_eq!(
        after[0]["steps"].as_array().unwrap()[..3],
        before[0]["steps"].as_array().unwrap()[..]
    );
    // Steps that had no id now carry the derived one, stable across readers.
    let again = ThreadStore::open_with(&path, manual(&clock)).unwrap();
    assert_eq!(
        one(again.status(Some("7c2e9b1a4d6f8e30"), false, None).unwrap()).steps,
        readme.steps
    );
}

#[test]
fn the_original_dict_file_loads_and_is_rewritten_as_an_array() {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/original_dict.json"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coral_threads.json");
    std::fs::copy(src, &path).unwrap();
    let clock = Manual::at(1751001000.0);
    let store = ThreadStore::open_with(&path, manual(&clock)).unwrap();
    assert_eq!(store.len(), 2);
    let child = one(store.status(Some("7c2e9b1a4d6f8e30"), false, None).unwrap());
    assert_eq!(child.parent_thread_id.as_deref(), Some("3f9a1c7e5b2d4a60"));
    let parent = one(store.status(Some("3f9a1c7e5b2d4a60"), false, None).unwrap());
    assert_eq!(parent.step_count, 2);
    assert!(parent.steps.iter().all(|s| s.step_id.len() == 12));
    store.archive("7c2e9b1a4d6f8e30").unwrap();
    store.flush().unwrap();
    let after = on_disk(&path);
    assert_eq!(after.len(), 2);
    assert_eq!(after[1]["thread_id"], "7c2e9b1a4d6f8e30");
    assert_eq!(after[1]["status"], "archived");
}

#[test]
fn an_unreadable_file_is_an_error_and_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coral_threads.json");
    std::fs::write(&path, "{ not json").unwrap();
    match ThreadStore::open(&path) {
        Err(Error::Corrupted { path: p, detail }) => {
            assert_eq!(p, path);
            assert!(detail.contains("line 1"), "{detail}");
        }
        other => panic!("expected Corrupted, got {other:?}"),
    }
    // Damaged after open: calls fail, nothing is written over it.
    std::fs::write(&path, "[]").unwrap();
    let clock = Manual::at(1.0);
    let store = ThreadStore::open_with(&path, manual(&clock)).unwrap();
    let t = store.create("ok", None, None, None).unwrap();
    std::fs::write(&path, "garbage!").unwrap();
    assert!(matches!(
        store.advance(&t.thread_id, "x", None, None),
        Err(Error::Corrupted { .. })
    ));
    assert!(matches!(
        store.status(None, false, None),
        Err(Error::Corrupted { .. })
    ));
    drop(store);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "garbage!");
}

#[test]
fn errors_name_the_problem_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Manual::at(1.0);
    let store = ThreadStore::open_with(file(&dir), manual(&clock)).unwrap();
    let t = store.create("t", None, None, None).unwrap();
    let cases: Vec<(Error, &str)> = vec![
        (
            store.create("", None, None, None).unwrap_err(),
            "title is empty",
        ),
        (
            store.advance(&t.thread_id, "", None, None).unwrap_err(),
            "note is empty",
        ),
        (
            store.advance("nope", "x", None, None).unwrap_err(),
            "no thread with id \"nope\"",
        ),
        (store.interrupt("nope", None).unwrap_err(), "nope"),
        (store.archive("nope").unwrap_err(), "nope"),
        (store.resume("nope").unwrap_err(), "nope"),
        (
            store.link(&t.thread_id, &t.thread_id).unwrap_err(),
            "itself",
        ),
        (store.link("nope", &t.thread_id).unwrap_err(), "nope"),
        (store.status(Some("nope"), false, None).unwrap_err(), "nope"),
    ];
    for (err, needle) in cases {
        assert!(err.is_caller_error(), "{err}");
        assert!(err.to_string().contains(needle), "{err} lacks {needle}");
    }
    let v = store.all().unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].step_count, 0);
    assert_eq!(v[0].updated_at, 1.0);
}

#[test]
fn replaced_edited_and_removed_files_are_noticed() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir);
    let clock = Manual::at(1.0);
    let options = StoreOptions {
        coalesce: Duration::ZERO,
        ..manual(&clock)
    };
    let store = ThreadStore::open_with(&path, options.clone()).unwrap();
    let t = store.create("mine", None, None, None).unwrap();
    // Replaced by rename (how every writer writes): seen at the next call.
    let other = ThreadStore::open_with(&path, options).unwrap();
    other.create("theirs", None, None, None).unwrap();
    assert_eq!(store.status(None, false, None).unwrap().count(), 2);
    // Edited in place (same file, new content): seen too.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text.replace("\"theirs\"", "\"theirs, edited by hand\"");
    std::fs::write(&path, text).unwrap();
    clock.set(2.0);
    let titles: Vec<String> = store.all().unwrap().into_iter().map(|v| v.title).collect();
    assert!(
        titles.contains(&"theirs, edited by hand".to_string()),
        "{titles:?}"
    );
    // Removed: what this process holds is kept and written back by the next change.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(store.len(), 2);
    store
        .advance(&t.thread_id, "still here", None, None)
        .unwrap();
    assert_eq!(on_disk(&path).len(), 2);
}

/// Importing another threads file merges by id and step id, is idempotent, keeps this file's
/// own threads and steps, and what it brought survives a reopen.
#[test]
fn import_merges_another_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Manual::at(1_800_000_000.0);
    let source = dir.path().join("old/coral_threads.json");
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    let theirs = ThreadStore::open_with(&source, manual(&clock)).unwrap();
    let shared = theirs
        .create("发布 v2.0", Some("升级"), None, Some("chatA"))
        .unwrap();
    theirs
        .advance(&shared.thread_id, "向量重建完成", None, Some("chatB"))
        .unwrap();
    let only_theirs = theirs.create("their own", None, None, None).unwrap();
    theirs.flush().unwrap();

    let target = dir.path().join("new/coral_threads.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let ours = ThreadStore::open_with(&target, manual(&clock)).unwrap();
    let mine = ours.create("mine", None, None, None).unwrap();
    let first = ours.import(&source).unwrap();
    assert_eq!((first.found, first.added, first.merged), (2, 2, 0));
    assert_eq!(first.steps_added, 1);

    // The source moves on; ours advances the shared thread too.
    clock.set(1_800_000_100.0);
    theirs
        .advance(&shared.thread_id, "检索验证通过", None, None)
        .unwrap();
    theirs.flush().unwrap();
    ours.advance(&shared.thread_id, "our step", Some(false), None)
        .unwrap();
    let second = ours.import(&source).unwrap();
    assert_eq!((second.added, second.merged, second.unchanged), (0, 1, 1));
    assert_eq!(second.steps_added, 1);
    let third = ours.import(&source).unwrap();
    assert_eq!((third.added, third.merged, third.steps_added), (0, 0, 0));
    drop(ours);

    let reopened = ThreadStore::open_with(&target, manual(&clock)).unwrap();
    let all = reopened.all().unwrap();
    let ids: Vec<&str> = all.iter().map(|t| t.thread_id.as_str()).collect();
    for id in [&mine.thread_id, &shared.thread_id, &only_theirs.thread_id] {
        assert!(ids.contains(&id.as_str()), "{id} missing from {ids:?}");
    }
    let merged = all
        .iter()
        .find(|t| t.thread_id == shared.thread_id)
        .unwrap();
    let texts: Vec<&str> = merged.steps.iter().map(|s| &*s.text).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    for t in ["向量重建完成", "检索验证通过", "our step"] {
        assert_eq!(
            texts.iter().filter(|x| **x == t).count(),
            1,
            "{t} in {texts:?}"
        );
    }
}

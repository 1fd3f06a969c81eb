//! Several `Coral`s on one data directory (docs/storage.md, "Several processes on one
//! directory"): each sees the others' inserts, deletes, hits and checkpoints within one call.
//! Separate `Coral` values use separate file handles, so the locks between them are the same as
//! between processes (the real multi-process tests are in
//! `crates/coral-mcp/tests/multiprocess.rs`).

use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder};

fn open(dir: &std::path::Path) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.storage.wal_max_bytes = 64 * 1024;
    config.memory.max_cold_entries = 100_000;
    Coral::open_with(config, Arc::new(HashEmbedder::new(64).unwrap())).unwrap()
}

fn ids(c: &Coral) -> Vec<String> {
    let mut v: Vec<String> = c
        .export()
        .unwrap()
        .into_iter()
        .map(|m| m.item.item_id)
        .collect();
    v.sort();
    v
}

#[test]
fn writes_of_one_are_seen_by_the_other_within_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(dir.path());
    let b = open(dir.path());
    let x = a
        .insert("written by a 甲写入", 0.5)
        .unwrap()
        .id()
        .to_string();
    assert!(
        b.get(&x).unwrap().is_some(),
        "b sees a's insert at its next call"
    );
    let y = b
        .insert("written by b 乙写入", 0.5)
        .unwrap()
        .id()
        .to_string();
    assert_eq!(
        a.search("乙写入 written by b", 1).unwrap()[0].item.item_id,
        y
    );
    // The hit a just made is visible to b.
    assert_eq!(b.get(&y).unwrap().unwrap().item.access_count, 2);
    assert!(b.delete(&x).unwrap());
    assert!(a.get(&x).unwrap().is_none(), "a sees b's delete");
    assert!(!a.delete(&x).unwrap(), "already gone");
    assert_eq!(ids(&a), ids(&b));
    assert_eq!(a.stats().total, b.stats().total);
}

#[test]
fn a_checkpoint_by_one_is_picked_up_by_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let a = open(dir.path());
    let b = open(dir.path());
    for i in 0..200 {
        let who = if i % 2 == 0 { &a } else { &b };
        who.insert(&format!("memory {i} 记忆 w{:x}", i * 7919), 0.5)
            .unwrap();
    }
    // The small journal limit made both checkpoint several times along the way.
    let (ga, gb) = (a.stats().generation, b.stats().generation);
    assert!(
        ga >= 1 && ga == gb,
        "generations {ga} {gb}, journal {}",
        a.stats().journal_bytes
    );
    a.flush().unwrap();
    assert_eq!(ids(&a).len(), 200);
    assert_eq!(ids(&a), ids(&b));
    // Closing one while the other is attached does not checkpoint over it.
    drop(a);
    let again = open(dir.path());
    assert_eq!(ids(&again), ids(&b));
}

#[test]
fn many_threads_on_one_coral_equal_some_serial_order() {
    let dir = tempfile::tempdir().unwrap();
    let coral = Arc::new(open(dir.path()));
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let coral = Arc::clone(&coral);
            std::thread::spawn(move || {
                let mut inserted = Vec::new();
                let mut deleted = Vec::new();
                let mut hits: Vec<String> = Vec::new();
                for i in 0..2_000u64 {
                    match i % 4 {
                        0 | 1 => {
                            let text =
                                format!("thread {t} op {i} q{:x} z{:x}", i * 7919, t * 104_729 + i);
                            let outcome = coral.insert(&text, 0.5).unwrap();
                            assert!(outcome.inserted(), "distinct texts never merge");
                            inserted.push(outcome.id().to_string());
                        }
                        2 => {
                            let query = format!("thread {t} op {}", i - 1);
                            for h in coral.search(&query, 2).unwrap() {
                                hits.push(h.item.item_id);
                            }
                        }
                        _ => {
                            if i % 8 == 3 {
                                let id = inserted.remove(0);
                                assert!(coral.delete(&id).unwrap());
                                deleted.push(id);
                            }
                        }
                    }
                }
                (inserted, deleted, hits)
            })
        })
        .collect();
    let mut live = Vec::new();
    let mut gone = std::collections::HashSet::new();
    let mut hits: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for t in threads {
        let (i, d, h) = t.join().unwrap();
        live.extend(i);
        gone.extend(d);
        for id in h {
            *hits.entry(id).or_default() += 1;
        }
    }
    live.sort();
    assert_eq!(ids(&coral), live, "exactly the inserts minus the deletes");
    assert!(gone.iter().all(|id| coral.get(id).unwrap().is_none()));
    // No lost hits: every live memory's access count is its insert plus every search that
    // returned it, as in some serial order of all the calls.
    let mut checked = 0;
    for m in coral.export().unwrap() {
        let expected = 1 + hits.get(&m.item.item_id).copied().unwrap_or(0);
        assert_eq!(m.item.access_count, expected, "{}", m.item.item_id);
        checked += u64::from(expected > 1);
    }
    assert!(
        checked > 1_000,
        "searches hit many live memories ({checked})"
    );
    assert_eq!(coral.stats().total, live.len());
    // Reopen: the same state.
    let before = coral.export().unwrap();
    drop(coral);
    assert_eq!(open(dir.path()).export().unwrap(), before);
}

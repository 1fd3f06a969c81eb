//! A directory written by the original Python Coral opens unchanged, and a checkpoint writes
//! files of exactly the original's shapes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coral_store::{Store, StoreOptions, StorePaths, SyncPolicy, Tier, npy};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/python_dir")
}

fn copy_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with("coral_") {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    dir
}

fn options() -> StoreOptions {
    StoreOptions {
        dim: 8,
        sync: SyncPolicy::Never,
        wal_max_bytes: 1 << 20,
        features: Arc::new(|s: &str| {
            let mut b = [0u64; 32];
            b[0] = s.len() as u64;
            b
        }),
    }
}

#[test]
fn the_original_directory_opens_with_every_item() {
    let dir = copy_fixture();
    let store = Store::open(StorePaths::in_dir(dir.path()), options()).unwrap();
    let counts = store.counts();
    assert_eq!((counts.hot, counts.warm, counts.cold), (0, 2, 3));
    assert_eq!(store.skipped_lines(), 1);
    assert!(
        store
            .notes()
            .iter()
            .any(|n| n.contains("coral_cold.jsonl line 3")),
        "{:?}",
        store.notes()
    );
    assert!(store.notes().iter().any(|n| n.contains("1 duplicate")));
    assert!(
        store
            .notes()
            .iter()
            .any(|n| n.contains("belong to no stored item"))
    );

    // The duplicate cold id merged: highest count, latest access, highest importance.
    let (item, tier) = store.get("c22c61b6e7c02ed2").unwrap();
    assert_eq!(tier, Tier::Cold);
    assert_eq!(item.access_count, 5);
    assert_eq!(item.last_access, 1_774_000_500.0);
    assert_eq!(item.importance, 0.4);

    // Vectors are the file's rows, matched by id through the index.
    let matrix = npy::read(&fixture().join("coral_vectors.npy")).unwrap();
    let index: Vec<String> =
        serde_json::from_slice(&std::fs::read(fixture().join("coral_vector_index.json")).unwrap())
            .unwrap();
    assert!(store.pool().missing_vectors().is_empty());
    for (row, id) in index.iter().enumerate().take(5) {
        let r = store.pool().row(id).unwrap();
        assert_eq!(
            store.pool().vector(r).to_dense(8).as_ref(),
            matrix.row(row),
            "vector of {id}"
        );
    }
}

#[test]
fn a_checkpoint_writes_the_original_shapes() {
    let dir = copy_fixture();
    let store = Store::open(StorePaths::in_dir(dir.path()), options()).unwrap();
    store.close().unwrap();

    // Warm: byte-identical to what Python's json.dump(indent=2, ensure_ascii=False) wrote.
    let ours = std::fs::read_to_string(dir.path().join("coral_warm.json")).unwrap();
    let theirs = std::fs::read_to_string(fixture().join("coral_warm.json")).unwrap();
    assert_eq!(ours, theirs);

    // Cold: the unparseable line kept verbatim; every untouched item line identical to
    // Python's json.dumps; the duplicate written once, merged.
    let cold = std::fs::read_to_string(dir.path().join("coral_cold.jsonl")).unwrap();
    let source = std::fs::read_to_string(fixture().join("coral_cold.jsonl")).unwrap();
    let src: Vec<&str> = source.lines().collect();
    let lines: Vec<&str> = cold.lines().collect();
    assert_eq!(lines.len(), 4, "{cold}");
    assert_eq!(lines[0], src[2]);
    assert!(lines.contains(&src[1]));
    assert!(lines.contains(&src[4]));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"access_count\": 5")
                && l.contains("\"last_access\": 1774000500.0"))
    );

    // Index: a JSON array of ids in Python's separators; npy: v1.0 '<f4' (n, 8), aligned.
    let index = std::fs::read_to_string(dir.path().join("coral_vector_index.json")).unwrap();
    assert!(
        index.starts_with("[\"") && index.contains("\", \""),
        "{index}"
    );
    let ids: Vec<String> = serde_json::from_str(&index).unwrap();
    assert_eq!(ids.len(), 5);
    let bytes = std::fs::read(dir.path().join("coral_vectors.npy")).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + header_len) % 64, 0);
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'descr': '<f4'") && header.contains("'shape': (5, 8)"),
        "{header}"
    );
    let m = npy::read(&dir.path().join("coral_vectors.npy")).unwrap();
    assert_eq!((m.rows, m.cols), (5, 8));

    // Reopening the checkpointed directory gives the same items.
    let again = Store::open(StorePaths::in_dir(dir.path()), options()).unwrap();
    assert_eq!(again.pool().len(), 5);
    assert_eq!(again.skipped_lines(), 1);
}

#[test]
fn archive_trim_keeps_the_newest_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(StorePaths::in_dir(dir.path()), options()).unwrap();
    let archive = dir.path().join("coral_archive.jsonl");
    std::fs::write(&archive, "aaaa\nbbbb\ncccc\n").unwrap();
    assert_eq!(store.trim_archive(100).unwrap(), 0);
    assert_eq!(store.trim_archive(11).unwrap(), 5);
    assert_eq!(std::fs::read_to_string(&archive).unwrap(), "bbbb\ncccc\n");
    assert_eq!(store.trim_archive(6).unwrap(), 5);
    assert_eq!(std::fs::read_to_string(&archive).unwrap(), "cccc\n");
    assert_eq!(store.trim_archive(3).unwrap(), 5);
    assert_eq!(std::fs::read_to_string(&archive).unwrap(), "");
}

fn put(tier: Tier, id: &str, project: Option<&str>) -> coral_store::Record {
    let mut item: coral_store::Item = serde_json::from_value(serde_json::json!({
        "item_id": id, "content": format!("memory {id}"), "timestamp": 1_774_000_000.0,
        "last_access": 1_774_000_000.0, "token_count": 2, "access_count": 1, "importance": 0.0,
    }))
    .unwrap();
    item.project = project.map(String::from);
    if id == "h2" {
        item.extra
            .insert("zz_custom".into(), serde_json::json!({"kept": true}));
    }
    coral_store::Record::Put {
        tier,
        item,
        vector: vec![0.5; 8],
    }
}

const ORIGINAL_KEYS: [&str; 7] = [
    "item_id",
    "content",
    "timestamp",
    "last_access",
    "token_count",
    "access_count",
    "importance",
];

/// Hot memories are where the original reads memories (the warm file), every entry has only
/// the original's seven keys, and Coral's tier marks, project tags and other keys come back
/// from `coral_item_meta.json`, also after the original rewrote its files.
#[test]
fn the_original_reads_every_memory_and_coral_keeps_its_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let paths = StorePaths::in_dir(dir.path());
    let mut store = Store::open(paths.clone(), options()).unwrap();
    store
        .commit(vec![
            put(Tier::Hot, "h1", Some("alpha")),
            put(Tier::Hot, "h2", None),
            put(Tier::Warm, "w1", Some("beta")),
            put(Tier::Cold, "c1", Some("alpha")),
        ])
        .unwrap();
    store.close().unwrap();
    assert!(
        !paths.hot.exists(),
        "no coral_hot.json: the original would not read it"
    );
    let warm: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_slice(&std::fs::read(&paths.warm).unwrap()).unwrap();
    let ids: Vec<&str> = warm
        .iter()
        .map(|m| m["item_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "hot and warm in the warm file: {ids:?}");
    let cold = std::fs::read_to_string(&paths.cold).unwrap();
    let cold: Vec<serde_json::Map<String, serde_json::Value>> = cold
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for entry in warm.iter().chain(&cold) {
        let keys: Vec<&str> = entry.keys().map(String::as_str).collect();
        assert_eq!(keys, ORIGINAL_KEYS, "{entry:?}");
    }

    let again = Store::open(paths.clone(), options()).unwrap();
    let counts = again.counts();
    assert_eq!((counts.hot, counts.warm, counts.cold), (2, 1, 1));
    let (h1, tier) = again.get("h1").unwrap();
    assert_eq!((tier, h1.project.as_deref()), (Tier::Hot, Some("alpha")));
    let (h2, _) = again.get("h2").unwrap();
    assert_eq!(h2.extra["zz_custom"], serde_json::json!({"kept": true}));
    assert_eq!(again.get("c1").unwrap().0.project.as_deref(), Some("alpha"));
    again.close().unwrap();

    // The original rewrites the warm file with h1 only (w1 went to its cold file); the
    // sidecar's other marks name ids it no longer has there and change nothing.
    let h1_only: Vec<_> = warm.into_iter().filter(|m| m["item_id"] == "h1").collect();
    std::fs::write(&paths.warm, serde_json::to_vec_pretty(&h1_only).unwrap()).unwrap();
    let moved: Vec<_> = std::fs::read_to_string(&paths.cold)
        .unwrap()
        .lines()
        .map(String::from)
        .chain(std::iter::once(
            r#"{"item_id": "w1", "content": "memory w1", "timestamp": 1774000000.0, "last_access": 1774000000.0, "token_count": 2, "access_count": 1, "importance": 0.0}"#.to_string(),
        ))
        .collect();
    std::fs::write(&paths.cold, moved.join("\n") + "\n").unwrap();
    let after = Store::open(paths.clone(), options()).unwrap();
    assert_eq!(after.get("h1").unwrap().1, Tier::Hot);
    let (w1, tier) = after.get("w1").unwrap();
    assert_eq!((tier, w1.project.as_deref()), (Tier::Cold, Some("beta")));
    assert!(after.get("h2").is_none(), "the original dropped it");
}

/// A directory of an earlier Coral (hot tier in `coral_hot.json`) moves its hot memories into
/// the warm file at the next checkpoint, still hot; a damaged sidecar is reported and costs
/// only the marks.
#[test]
fn an_old_hot_file_migrates_and_a_damaged_sidecar_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let paths = StorePaths::in_dir(dir.path());
    let entry = r#"[{"item_id": "old", "content": "memory old", "timestamp": 1774000000.0, "last_access": 1774000000.0, "token_count": 2, "access_count": 1, "importance": 0.0, "project": "alpha"}]"#;
    std::fs::write(&paths.hot, entry).unwrap();
    let store = Store::open(paths.clone(), options()).unwrap();
    assert_eq!(store.get("old").unwrap().1, Tier::Hot);
    store.close().unwrap();
    assert!(!paths.hot.exists());
    let again = Store::open(paths.clone(), options()).unwrap();
    let (item, tier) = again.get("old").unwrap();
    assert_eq!((tier, item.project.as_deref()), (Tier::Hot, Some("alpha")));
    drop(again);

    std::fs::write(&paths.item_meta, b"{\"version\": 1, \"hot\": [").unwrap();
    let report = coral_store::check(&paths, 8);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.path == paths.item_meta && f.detail.contains("damaged")),
        "{:?}",
        report.findings
    );
    let damaged = Store::open(paths.clone(), options()).unwrap();
    assert_eq!(
        damaged.get("old").unwrap().1,
        Tier::Warm,
        "the mark is lost"
    );
    assert!(
        damaged
            .notes()
            .iter()
            .any(|n| n.contains("coral_item_meta.json")),
        "{:?}",
        damaged.notes()
    );
}

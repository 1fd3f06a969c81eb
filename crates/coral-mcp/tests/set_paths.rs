//! `set_paths` moves every data file, refuses to overwrite, and is idempotent.

use coral::{Coral, PathsUpdate, set_paths};
use coral_mcp::tools::CallTool;

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("coral_config.json");
    std::fs::write(
        &path,
        r#"{"embedding": {"embedder": "hash"}, "storage": {"sync": "never"}}"#,
    )
    .unwrap();
    path
}

#[test]
fn moves_files_keeps_data_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path());
    let coral = Coral::open(&path).unwrap();
    coral
        .insert("移动之前的记忆 memory before the move", 0.7)
        .unwrap();
    let t = coral
        .threads()
        .unwrap()
        .create("搬家", None, None, None)
        .unwrap();
    coral
        .call_tool(
            "timeline_record_entry",
            &serde_json::json!({"kind": "message.user", "text": "搬家前的对话", "source_id": "m1"}),
        )
        .unwrap();
    // The timeline counts in the disk usage once it exists.
    let usage = coral.disk_usage();
    assert!(usage.files["timeline"] > 0, "{:?}", usage.files);
    let before = coral.export().unwrap();
    coral.close().unwrap();

    let update = PathsUpdate {
        warm_cache: Some("store/warm.json".into()),
        cold_archive: Some("store/cold.jsonl".into()),
        vector_store: Some("store/vectors.npy".into()),
        vector_index: Some("store/index.json".into()),
        threads: Some("store/threads.json".into()),
    };
    let report = set_paths(&path, &update).unwrap();
    assert_eq!(report["restart_needed"], true);
    assert!(report["moved"].as_array().unwrap().len() >= 6, "{report}");
    assert!(dir.path().join("store/warm.json").exists());
    assert!(
        dir.path().join("store/coral_wal.jsonl").exists(),
        "the journal follows the warm tier"
    );
    assert!(!dir.path().join("memory_data/coral_warm.json").exists());
    assert!(dir.path().join("store/coral_timeline.sqlite3").exists());
    assert!(
        !dir.path()
            .join("memory_data/coral_timeline.sqlite3")
            .exists()
    );

    // The same call again: nothing left to move, nothing changes.
    let again = set_paths(&path, &update).unwrap();
    assert_eq!(again["moved"], serde_json::json!([]));

    let coral = Coral::open(&path).unwrap();
    assert_eq!(coral.export().unwrap(), before);
    let opened = coral
        .call_tool(
            "open_memory",
            &serde_json::json!({"memory_id": "m1", "view": "content"}),
        )
        .unwrap();
    assert_eq!(opened["memory"]["content"], "搬家前的对话");
    assert_eq!(
        coral
            .threads()
            .unwrap()
            .status(Some(&t.thread_id), false, None)
            .unwrap()
            .count(),
        1
    );
    drop(coral);

    // A destination that exists is never overwritten, and nothing moves.
    std::fs::create_dir_all(dir.path().join("other")).unwrap();
    std::fs::write(dir.path().join("other/cold.jsonl"), "keep me\n").unwrap();
    let err = set_paths(
        &path,
        &PathsUpdate {
            cold_archive: Some("other/cold.jsonl".into()),
            vector_store: Some("other/vectors.npy".into()),
            ..PathsUpdate::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("other/cold.jsonl")).unwrap(),
        "keep me\n"
    );
    assert!(
        dir.path().join("store/vectors.npy").exists(),
        "nothing moved"
    );
}

#[test]
fn a_running_coral_blocks_the_move() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path());
    let coral = Coral::open(&path).unwrap();
    coral.insert("held", 0.5).unwrap();
    let err = set_paths(
        &path,
        &PathsUpdate {
            warm_cache: Some("elsewhere/w.json".into()),
            ..PathsUpdate::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("in use"), "{err}");
}

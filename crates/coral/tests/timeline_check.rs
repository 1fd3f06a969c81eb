//! `Coral::timeline_check` (for `coral check`) and `Coral::timeline_repairs`: nothing to report
//! without a timeline (and no file is created), nothing for a healthy one, and a damaged
//! write-ahead log copied aside, reported, and listed until the copy is deleted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder};
use serde_json::json;

fn open(dir: &Path) -> Coral {
    let config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    Coral::open_with(config, Arc::new(HashEmbedder::new(32).unwrap())).unwrap()
}

fn log(db: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", db.display()))
}

#[test]
fn a_damaged_log_is_listed_until_its_copy_is_deleted() {
    let a = tempfile::tempdir().unwrap();
    let coral = open(a.path());
    assert_eq!(coral.timeline_check(), []);
    assert!(
        !coral.timeline_path().exists(),
        "checking created no timeline"
    );
    for i in 0..20 {
        coral
            .call_tool(
                "timeline_record_entry",
                &json!({"kind": "message.user", "text": format!("entry {i} {}", "字".repeat(300))}),
            )
            .unwrap();
    }
    assert_eq!(coral.timeline_check(), []);
    assert!(coral.timeline_repairs().is_empty());

    // The files as a crash leaves them, with a few bytes of the log garbled.
    let b = tempfile::tempdir().unwrap();
    let db = b
        .path()
        .join("memory_data")
        .join(coral::timeline::TIMELINE_FILE);
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(coral.timeline_path(), &db).unwrap();
    let mut bytes = std::fs::read(log(&coral.timeline_path())).unwrap();
    let page = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
    let frames = (bytes.len() - 32) / (24 + page);
    bytes[32 + frames / 3 * (24 + page) + 30] ^= 0xff;
    std::fs::write(log(&db), &bytes).unwrap();

    let damaged = open(b.path());
    let problems = damaged.timeline_check();
    let repairs = damaged.timeline_repairs();
    assert_eq!(repairs.len(), 1, "{repairs:?}");
    let copy = repairs[0].quarantined.clone().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].file, copy);
    std::fs::remove_file(&copy).unwrap();
    assert_eq!(damaged.timeline_check(), []);
}

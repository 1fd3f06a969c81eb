//! A timeline opened read-only reads as usual and refuses every write with
//! `Error::Unwritable`, changing nothing; a missing file reads as empty and is not created.
//! (Real read-only mounts and full disks are in `crates/coral-mcp/tests/timeline_disk.rs`.)

mod common;

use coral_timeline::{
    Access, BeginTurn, ContextRequest, EntryInput, Error, OpenRequest, Options, ReadStatus,
    RetrieveRequest, TextEmbedder, Timeline, View,
};

/// Vectors from character classes: enough for retrieval to compute (and try to cache) some.
struct Classes;

impl TextEmbedder for Classes {
    fn model_id(&self) -> String {
        "classes/3".into()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts
            .iter()
            .map(|t| {
                let ascii = t.chars().filter(char::is_ascii).count() as f32;
                let other = t.chars().count() as f32 - ascii;
                vec![ascii, other, 1.0]
            })
            .collect())
    }
}

use common::{T0, dump, ns};

fn read_only(path: &std::path::Path) -> Timeline {
    Timeline::open_with(
        path,
        Options {
            access: Access::ReadOnly,
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn a_read_only_timeline_reads_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite3");
    {
        let t = Timeline::open(&path).unwrap();
        assert_eq!(t.read_only(), None);
        t.record_entry(&ns(), &EntryInput::user("早上好").source_id("m1"), T0)
            .unwrap();
        t.begin_turn(&ns(), &BeginTurn::user("an open turn"), T0 + 1.0)
            .unwrap();
    }
    let before = dump(&path);
    let t = read_only(&path);
    assert!(t.read_only().unwrap().contains("nothing is recorded"));
    let opened = t.open_memory(
        &ns(),
        "m1",
        &OpenRequest {
            view: View::Content,
            ..OpenRequest::default()
        },
    );
    assert_eq!(opened.status, ReadStatus::Ok);
    assert_eq!(opened.payload.memory.unwrap().content.unwrap(), "早上好");
    assert!(
        t.context(&ns(), &ContextRequest::default())
            .unwrap()
            .text
            .contains("早上好")
    );
    let hits = t.retrieve_for_turn(
        &ns(),
        &RetrieveRequest {
            query: "早上好".into(),
            include_visible: true,
            ..RetrieveRequest::default()
        },
        Some(&Classes),
    );
    // The vectors it computed cannot be saved: kept in memory, and nothing said.
    assert_eq!(hits.status, ReadStatus::Ok, "{hits:?}");
    assert!(hits.warnings.is_empty(), "{:?}", hits.warnings);
    for refused in [
        t.record_entry(&ns(), &EntryInput::user("x"), T0 + 2.0)
            .err(),
        t.begin_turn(&ns(), &BeginTurn::user("y"), T0 + 2.0).err(),
        t.recover_orphaned_turns(T0 + 3.0).err(),
    ] {
        let e = refused.expect("refused");
        assert!(matches!(e, Error::Unwritable { .. }), "{e}");
        assert_eq!(e.code(), "unwritable");
        assert!(e.to_string().contains("nothing was written"), "{e}");
    }
    assert_eq!(t.check().unwrap(), []);
    drop(t);
    assert_eq!(dump(&path), before, "a read-only open changed nothing");
}

#[test]
fn a_missing_file_reads_as_empty_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.sqlite3");
    let t = read_only(&path);
    assert!(
        t.read_only().unwrap().contains("no timeline here yet"),
        "{:?}",
        t.read_only()
    );
    let opened = t.open_memory(&ns(), "m1", &OpenRequest::default());
    assert_eq!(opened.status, ReadStatus::Empty);
    assert!(t.record_entry(&ns(), &EntryInput::user("x"), T0).is_err());
    drop(t);
    assert!(!path.exists());
}

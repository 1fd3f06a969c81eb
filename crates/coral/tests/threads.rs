//! Threads through the facade: where the file lives, the operations and their JSON, and the
//! promise that threads are not memories (never searched, evicted or counted).

use std::path::Path;
use std::sync::Arc;

use coral::{Config, Coral, Error, HashEmbedder, ThreadStatus, ThreadStatusReport, open_threads};
use serde_json::{Value, json};

const DIM: usize = 16;

fn config(dir: &Path) -> Config {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.embedding.embedder = "hash".into();
    config.embedding.dim = DIM;
    config
}

fn open(config: Config) -> Coral {
    Coral::open_with(config, Arc::new(HashEmbedder::new(DIM).unwrap())).unwrap()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn the_seven_operations_and_their_json() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(config(dir.path()));
    let t = coral
        .threads()
        .unwrap()
        .create(
            "发布 v2.0",
            Some("升级嵌入模型并优化检索性能"),
            None,
            Some("聊天A"),
        )
        .unwrap();
    let child = coral
        .threads()
        .unwrap()
        .create("写 README", None, Some(&t.thread_id), None)
        .unwrap();
    let id = t.thread_id.as_str();
    coral
        .threads()
        .unwrap()
        .advance(id, "migrate_bge.py 已跑通", Some(true), Some("聊天B"))
        .unwrap();
    let v = coral
        .threads()
        .unwrap()
        .advance(id, "向量重建完成，检索验证通过", None, Some("聊天C"))
        .unwrap();
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(
        keys(&json),
        [
            "thread_id",
            "title",
            "summary",
            "status",
            "parent_thread_id",
            "last_advance_by",
            "created_at",
            "updated_at",
            "step_count",
            "steps"
        ]
    );
    assert_eq!(
        keys(&json["steps"][0]),
        ["step_id", "seq", "text", "done", "by", "at"]
    );
    assert_eq!(json["step_count"], 2);
    assert_eq!(json["status"], "active");
    assert_eq!(json["parent_thread_id"], Value::Null);
    assert_eq!(json["last_advance_by"], "聊天C");
    assert_eq!(json["steps"][1]["done"], true, "完成 is detected");
    assert_eq!(json["steps"][1]["seq"], 2);

    let v = coral
        .threads()
        .unwrap()
        .interrupt(id, Some("等上游依赖"))
        .unwrap();
    assert_eq!(v.status, ThreadStatus::Interrupted);
    assert_eq!(&*v.steps.last().unwrap().text, "[中断] 等上游依赖");
    assert_eq!(
        coral.threads().unwrap().resume(id).unwrap().status,
        ThreadStatus::Active
    );
    assert_eq!(
        coral
            .threads()
            .unwrap()
            .archive(&child.thread_id)
            .unwrap()
            .status,
        ThreadStatus::Archived
    );
    let extra = coral
        .threads()
        .unwrap()
        .create("子任务：压测", None, None, None)
        .unwrap();
    coral.threads().unwrap().link(&extra.thread_id, id).unwrap();

    let overview =
        serde_json::to_value(coral.threads().unwrap().status(None, false, None).unwrap()).unwrap();
    assert_eq!(keys(&overview), ["count", "threads"]);
    assert_eq!(overview["count"], 2, "the archived child is hidden");
    let parent = overview["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["thread_id"] == id)
        .unwrap();
    assert_eq!(
        parent["children"],
        json!([child.thread_id, extra.thread_id]),
        "children include archived ones, oldest first"
    );
    let all = coral.threads().unwrap().status(None, true, None).unwrap();
    assert_eq!(all.count(), 3);
    let one = serde_json::to_value(
        coral
            .threads()
            .unwrap()
            .status(Some(id), false, None)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(keys(&one), ["count", "thread"]);
    assert_eq!(one["thread"]["step_count"], 3);
    let q = coral
        .threads()
        .unwrap()
        .status(None, false, Some("压测"))
        .unwrap();
    assert_eq!(q.views()[0].thread_id, extra.thread_id);
    assert_eq!(coral.stats().threads, 3);
}

#[test]
fn errors_are_typed_and_clear() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(config(dir.path()));
    let t = coral
        .threads()
        .unwrap()
        .create("t", None, None, None)
        .unwrap();
    // Thread errors convert into the facade's, as the tools and the CLI report them.
    match coral
        .threads()
        .unwrap()
        .advance("nope", "x", None, None)
        .map_err(Error::from)
    {
        Err(Error::ThreadNotFound(id)) => assert_eq!(id, "nope"),
        other => panic!("expected ThreadNotFound, got {other:?}"),
    }
    for err in [
        coral
            .threads()
            .unwrap()
            .create(" ", None, None, None)
            .unwrap_err(),
        coral
            .threads()
            .unwrap()
            .advance(&t.thread_id, "", None, None)
            .unwrap_err(),
        coral
            .threads()
            .unwrap()
            .link(&t.thread_id, &t.thread_id)
            .unwrap_err(),
        coral
            .threads()
            .unwrap()
            .create(&"长".repeat(81), None, None, None)
            .unwrap_err(),
    ] {
        let err = Error::from(err);
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    }
    assert!(
        coral
            .threads()
            .unwrap()
            .status(Some("nope"), false, None)
            .unwrap_err()
            .to_string()
            .contains("no thread with id \"nope\"")
    );
    assert_eq!(coral.stats().threads, 1);
}

#[test]
fn the_file_lives_at_threads_path_next_to_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    assert_eq!(
        c.threads_path(),
        dir.path().join("memory_data/coral_threads.json")
    );
    let coral = open(c);
    coral
        .threads()
        .unwrap()
        .create("where", None, None, None)
        .unwrap();
    coral.flush().unwrap();
    assert!(dir.path().join("memory_data/coral_threads.json").exists());
    coral.close().unwrap();

    // An explicit relative path is relative to the config file, not the working directory.
    let mut c = config(dir.path());
    c.threads.path = "elsewhere/threads.json".into();
    assert_eq!(c.threads_path(), dir.path().join("elsewhere/threads.json"));
    // A data-directory override holds every data file, threads included.
    let data = dir.path().join("override");
    c.data_dir_override = Some(data.clone());
    assert_eq!(c.threads_path(), data.join("coral_threads.json"));
    let coral = open(c);
    assert_eq!(coral.stats().threads, 0, "a different file");
    coral
        .threads()
        .unwrap()
        .create("in the override", None, None, None)
        .unwrap();
    coral.close().unwrap();
    assert!(data.join("coral_threads.json").exists());
}

#[test]
fn close_writes_pending_changes_and_reopen_is_equal() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(config(dir.path()));
    let t = coral
        .threads()
        .unwrap()
        .create("pending", None, None, None)
        .unwrap();
    for i in 0..5 {
        // Inside the coalescing window: at most the first change is on disk yet.
        coral
            .threads()
            .unwrap()
            .advance(&t.thread_id, &format!("step {i}"), None, None)
            .unwrap();
    }
    let before = coral.threads().unwrap().all().unwrap();
    coral.close().unwrap();
    let coral = open(config(dir.path()));
    assert_eq!(coral.threads().unwrap().all().unwrap(), before);
    assert_eq!(coral.stats().threads, 1);
}

#[test]
fn threads_are_not_memories() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.memory.capacity_threshold = 5;
    c.memory.max_hot_entries = 5;
    let coral = open(c);
    let t = coral
        .threads()
        .unwrap()
        .create("关键链路", Some("这条绝不能丢"), None, Some("压测"))
        .unwrap();
    coral
        .threads()
        .unwrap()
        .advance(&t.thread_id, "这条绝不能丢的步骤", None, None)
        .unwrap();
    for i in 0..30 {
        coral
            .insert(&format!("第 {i} 条测试记忆 word{i} unique{i}"), 0.5)
            .unwrap();
    }
    let stats = coral.stats();
    assert!(stats.total < 30, "memories were governed: {}", stats.total);
    assert_eq!(stats.threads, 1, "threads are not governed");
    let hits = coral.search("这条绝不能丢", 10).unwrap();
    assert!(hits.iter().all(|h| !h.item.content.contains("绝不能丢")));
    assert!(
        coral
            .export()
            .unwrap()
            .iter()
            .all(|m| !m.item.content.contains("绝不能丢"))
    );
    let v = coral
        .threads()
        .unwrap()
        .status(Some(&t.thread_id), false, None)
        .unwrap();
    assert_eq!(v.views()[0].step_count, 1);
}

#[test]
fn threads_open_without_the_memory_store() {
    // `coral thread ...` opens the thread store alone, so it works while a server holds the
    // data directory: here a Coral holds it and a store on the same config still writes.
    let dir = tempfile::tempdir().unwrap();
    let coral = open(config(dir.path()));
    let threads = open_threads(&config(dir.path())).unwrap();
    let t = threads
        .create("from the cli", None, None, Some("cli"))
        .unwrap();
    threads.flush().unwrap();
    let seen = coral.threads().unwrap().status(None, false, None).unwrap();
    let ThreadStatusReport::Many(entries) = seen else {
        panic!("expected the overview")
    };
    assert_eq!(entries[0].thread.thread_id, t.thread_id);
    coral
        .threads()
        .unwrap()
        .advance(&t.thread_id, "server side", None, None)
        .unwrap();
    coral.flush().unwrap();
    let v = threads.status(Some(&t.thread_id), false, None).unwrap();
    assert_eq!(&*v.views()[0].steps[0].text, "server side");
}

#[test]
fn stats_count_the_threads_another_process_created() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(config(dir.path()));
    assert_eq!(coral.stats().threads, 0);
    // Another writer of the same threads file (what `coral thread create` is while a server
    // runs): its thread is written when its store flushes.
    let other = open_threads(&config(dir.path())).unwrap();
    other.create("made elsewhere", None, None, None).unwrap();
    other.flush().unwrap();
    assert_eq!(coral.stats().threads, 1, "the server's stats saw the file");
    assert_eq!(coral.report().unwrap().stats.threads, 1);
}

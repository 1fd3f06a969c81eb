//! Secrets redacted on write, in the facade (docs/configuration.md, "Secrets"): the insert
//! result names what was taken out, the timeline's tool calls and results are redacted (and a
//! retry still finds its first write), and one switch follows `privacy.redact_secrets`
//! through a config edit into the memory pool, the threads and the timeline alike.

use coral::timeline::{BeginTurn, CompleteTurn, HistoryFormat, Namespace, ToolExchange};
use coral::{Coral, InsertOutcome};
use serde_json::json;

const KEY: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234";

fn open(dir: &std::path::Path, redact: bool) -> (Coral, std::path::PathBuf) {
    let path = dir.join("coral_config.json");
    std::fs::write(
        &path,
        json!({"embedding": {"embedder": "hash"}, "privacy": {"redact_secrets": redact},
               "reload": {"check_interval_seconds": 0}})
        .to_string(),
    )
    .unwrap();
    (Coral::open(&path).unwrap(), path)
}

#[test]
fn the_insert_result_names_the_secrets_and_the_id_is_the_stored_texts() {
    let dir = tempfile::tempdir().unwrap();
    let (coral, _) = open(dir.path(), true);
    let done = coral
        .insert(&format!("key {KEY} and api_key = abcd1234efgh"), 0.5)
        .unwrap();
    assert_eq!(done.redacted, ["api-key", "password"]);
    let InsertOutcome::Inserted(item) = &done.outcome else {
        panic!("{done:?}")
    };
    assert_eq!(
        item.content,
        "key [redacted:api-key] and api_key = [redacted:password]"
    );
    assert_eq!(item.item_id, coral::item_id(&item.content));
    // The same secret again merges into the same memory, and is counted again.
    let again = coral
        .insert(&format!("key {KEY} and api_key = abcd1234efgh"), 0.5)
        .unwrap();
    assert!(!again.inserted());
    assert_eq!(again.redacted.len(), 2);
    assert!(
        coral
            .insert("nothing secret", 0.0)
            .unwrap()
            .redacted
            .is_empty()
    );
}

#[test]
fn timeline_calls_and_results_are_redacted_and_retries_still_match() {
    let dir = tempfile::tempdir().unwrap();
    let (coral, _) = open(dir.path(), true);
    let t = coral.timeline().unwrap();
    let ns = Namespace::new("u1", "c1");
    let turn = t
        .begin_turn(&ns, &BeginTurn::user(format!("call it with {KEY}")), 100.0)
        .unwrap();
    let x = ToolExchange {
        tool_name: "http".into(),
        call_id: "call-1".into(),
        input: json!({"url": "https://api.example.com", "headers": {"Authorization": format!("Bearer {KEY}")}, "token": "abcd1234secret"}),
        result: format!("ok, password=hunter22 accepted for {KEY}"),
        ..ToolExchange::default()
    };
    let first = t
        .record_tool_exchange(&ns, &turn.turn_id, &x, 101.0)
        .unwrap();
    let retry = t
        .record_tool_exchange(&ns, &turn.turn_id, &x, 102.0)
        .unwrap();
    // A retry finds the redacted first write (its check hashes the redacted text too).
    assert_eq!(first.call.source_id, retry.call.source_id);
    assert_eq!(first.result.source_id, retry.result.source_id);
    assert!(first.result.created && !retry.result.created);
    t.complete_turn(&ns, &turn.turn_id, &CompleteTurn::answer("done"), 103.0)
        .unwrap();
    let history =
        serde_json::to_string(&t.history(&ns, HistoryFormat::default()).unwrap()).unwrap();
    assert!(
        !history.contains(KEY) && !history.contains("hunter22"),
        "{history}"
    );
    assert!(history.contains("[redacted:api-key]"), "{history}");
    drop(t);
    drop(coral);
    let db = std::fs::read(dir.path().join("memory_data/coral_timeline.sqlite3")).unwrap();
    let wal = std::fs::read(dir.path().join("memory_data/coral_timeline.sqlite3-wal"))
        .unwrap_or_default();
    for bytes in [db, wal] {
        for secret in [KEY, "hunter22", "abcd1234secret"] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret} reached the database"
            );
        }
    }
}

#[test]
fn one_switch_follows_the_config_into_pool_threads_and_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let (coral, path) = open(dir.path(), true);
    let ns = Namespace::new("u1", "c1");
    let stored = |coral: &Coral, n: u32| {
        let memory = coral.insert(&format!("memory {n} {KEY}"), 0.0).unwrap();
        let memory = memory.item().unwrap().content.clone();
        let thread = coral
            .threads()
            .unwrap()
            .create(&format!("thread {n} {KEY}"), None, None, None)
            .unwrap();
        coral
            .timeline()
            .unwrap()
            .record_user_turn(&ns, &format!("entry {n} {KEY}"), 100.0 + f64::from(n))
            .unwrap();
        let history = coral
            .timeline()
            .unwrap()
            .history(&ns, HistoryFormat::default())
            .unwrap();
        let history = serde_json::to_string(&history).unwrap();
        let entry = history
            .split('"')
            .find(|s| s.starts_with(&format!("entry {n} ")))
            .unwrap_or_default()
            .to_string();
        [memory, thread.title, entry]
    };
    for text in stored(&coral, 1) {
        assert!(
            !text.contains(KEY) && text.contains("[redacted:api-key]"),
            "{text}"
        );
    }
    // The user turns it off in the file; the running Coral picks it up at its next call.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(
        &path,
        json!({"embedding": {"embedder": "hash"}, "privacy": {"redact_secrets": false},
               "reload": {"check_interval_seconds": 0}})
        .to_string(),
    )
    .unwrap();
    coral.stats();
    coral.search("memory", 1).unwrap();
    for text in stored(&coral, 2) {
        assert!(text.contains(KEY), "{text}");
    }
}

//! Targeted forgetting (docs/timeline.md, "Forgetting"): a forgotten body is not in the SQLite
//! file or its log afterwards (the bytes are scanned), no read returns it, its turn's other
//! entries stay readable, summaries made from it are marked or forgotten too, the record of it
//! holds no text, and refused requests change nothing.

mod common;

use coral_timeline::{
    BeginTurn, BrowseRequest, CompleteTurn, ContextRequest, EntryInput, Error, FORGOTTEN_TEXT,
    ForgetFilter, ForgetRequest, ForgetTarget, HistoryFormat, LayerSettings, Namespace,
    OpenRequest, ReadRequest, ReadStatus, RetrieveRequest, SummaryLlm, Timeline, ToolExchange,
    View,
};
use serde_json::json;

use common::{T0, dump, temp_timeline};

// Private text, not shaped like a key (a key would be redacted before it is stored).
const SECRET: &str = "diary-lisbon-4729qz-private";

/// A summariser that copies the transcript into its summary, as a real one would repeat a
/// pasted secret.
struct Copier;

impl SummaryLlm for Copier {
    fn complete(&self, _system: &str, user: &str) -> Result<String, String> {
        let excerpt: String = user
            .chars()
            .filter(|c| !c.is_control())
            .take(1_500)
            .collect();
        Ok(json!({
            "title": "对话摘要",
            "summary": excerpt,
            "hint": "回顾",
            "entity_anchors": ["部署"],
            "topic_terms": ["密钥"],
        })
        .to_string())
    }
}

fn eager() -> LayerSettings {
    LayerSettings {
        raw_token_trigger: 100,
        raw_token_batch_ratio: 0.9,
        ..LayerSettings::default()
    }
}

/// Whether `needle` is anywhere in the database file or its log.
fn on_disk(t: &Timeline, needle: &str) -> bool {
    let db = t.path().unwrap().to_path_buf();
    let mut wal = db.clone().into_os_string();
    wal.push("-wal");
    [db.into_os_string(), wal].iter().any(|p| {
        let bytes = std::fs::read(p).unwrap_or_default();
        bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
    })
}

/// A turn whose tool result holds the secret, between two ordinary turns whose long results
/// fold into cards; returns the secret result's source id and its turn id.
fn conversation(t: &Timeline, ns: &Namespace) -> (String, String) {
    let mut ids = (String::new(), String::new());
    for i in 0..3 {
        let at = T0 + f64::from(i) * 600.0;
        let begin = BeginTurn {
            timezone: Some("Asia/Shanghai".into()),
            ..BeginTurn::user(format!("第{i}轮：帮我部署服务"))
        };
        let turn = t.begin_turn(ns, &begin, at).unwrap();
        // The secret is short, so it stays inline and the summariser sees it; the other
        // results are long and fold into reload cards.
        let result = if i == 1 {
            format!("remember {SECRET}")
        } else {
            "部署日志正常。".repeat(60)
        };
        let refs = t
            .record_tool_exchange(
                ns,
                &turn.turn_id,
                &ToolExchange {
                    tool_name: "shell".into(),
                    call_id: format!("call_{i}"),
                    input: json!({"cmd": "env"}),
                    result,
                    result_source_id: Some(format!("env-{i}")),
                    ..ToolExchange::default()
                },
                at + 1.0,
            )
            .unwrap();
        t.complete_turn(
            ns,
            &turn.turn_id,
            &CompleteTurn::answer("部署完成。"),
            at + 2.0,
        )
        .unwrap();
        if i == 1 {
            ids = (refs.result.source_id, turn.turn_id);
        }
    }
    ids
}

fn content(t: &Timeline, ns: &Namespace, id: &str) -> coral_timeline::OpenResult {
    t.open_memory(
        ns,
        id,
        &OpenRequest {
            view: View::Content,
            cross_conversation: true,
            ..OpenRequest::default()
        },
    )
}

#[test]
fn a_forgotten_body_leaves_the_file_and_every_read() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u1", "c1");
    let (result_id, turn_id) = conversation(&t, &ns);
    let report = t
        .compact(
            &ns,
            &eager(),
            &Copier,
            chrono_tz::Asia::Shanghai,
            T0 + 3_000.0,
        )
        .unwrap();
    let summary = report.episodic.expect("a summary").memory_id;
    // The summary copied the secret: it is derived from the result, so it must go too.
    assert!(
        content(&t, &ns, &summary)
            .to_string_lossy()
            .contains(SECRET)
    );
    assert!(on_disk(&t, SECRET), "the scan must see the secret before");

    let forget = ForgetRequest {
        cascade: true,
        reason: Some("pasted_secret".into()),
        ..ForgetRequest::new(ForgetTarget::Entry(result_id.clone()))
    };
    let done = t.forget(&ns, &forget, T0 + 4_000.0).unwrap();
    assert_eq!(done.entries_forgotten, 1, "{done:?}");
    assert_eq!(done.summaries_forgotten, vec![summary.clone()]);
    assert!(done.physically_removed, "{}", done.physical);
    assert!(!done.rebuilt, "a new file is zeroed from its first page");
    assert!(
        !on_disk(&t, SECRET),
        "the secret is still in the file or its log"
    );

    // No read returns it.
    let opened = content(&t, &ns, &result_id);
    let memory = opened.memory.as_ref().unwrap();
    assert!(memory.forgotten);
    assert_eq!(memory.content.as_deref(), Some(FORGOTTEN_TEXT));
    assert!(
        !memory
            .result_hash
            .contains(&coral_timeline::sha256_hex(&format!("remember {SECRET}")))
    );
    assert_eq!(content(&t, &ns, &summary).status, ReadStatus::Empty);
    let everything = t.read_timeline(
        &ns,
        &ReadRequest {
            date_from: Some("2026-04-01".into()),
            date_to: Some("2026-04-30".into()),
            projection: coral_timeline::Projection::Full,
            ..ReadRequest::default()
        },
    );
    let text = serde_json::to_string(&everything.payload).unwrap();
    assert!(!text.contains(SECRET));
    assert_eq!(everything.units.len(), 3, "the turn stays, whole");
    let found = t.retrieve_for_turn(
        &ns,
        &RetrieveRequest {
            query: format!("remember {SECRET}"),
            include_visible: true,
            ..RetrieveRequest::default()
        },
        None,
    );
    assert!(
        !serde_json::to_string(&found.payload)
            .unwrap()
            .contains(SECRET)
    );
    let history = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    let history_text = serde_json::to_string(&history.messages).unwrap();
    assert!(!history_text.contains(SECRET));
    // The call still has its result, so a provider accepts the history.
    let tool = history
        .messages
        .iter()
        .find(|m| m["tool_call_id"] == "call_1")
        .unwrap();
    assert_eq!(tool["content"], FORGOTTEN_TEXT);

    // The turn's other entries are readable as they were.
    let turn = t.turn(&ns, &turn_id).unwrap();
    let stimulus = everything.units[1].entries[0].source_id.clone();
    assert_eq!(
        content(&t, &ns, &stimulus)
            .payload
            .memory
            .unwrap()
            .content
            .as_deref(),
        Some("第1轮：帮我部署服务")
    );
    assert_eq!(turn.status, coral_timeline::TurnStatus::Completed);

    // The record says what was forgotten, never the text.
    let records = t.forgotten(&ns).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].target, "entry");
    assert_eq!(records[0].selector["source_id"], result_id.as_str());
    assert_eq!(records[0].reason.as_deref(), Some("pasted_secret"));
    assert_eq!((records[0].entries, records[0].summaries), (1, 1));
    assert!(!serde_json::to_string(&records).unwrap().contains(SECRET));
    // Other namespaces see no record.
    assert!(t.forgotten(&Namespace::new("u2", "c1")).unwrap().is_empty());
}

trait Lossy {
    fn to_string_lossy(&self) -> String;
}

impl Lossy for coral_timeline::OpenResult {
    fn to_string_lossy(&self) -> String {
        serde_json::to_string(&self.payload).unwrap()
    }
}

#[test]
fn derived_summaries_are_marked_unless_forgotten_with_them() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u1", "c1");
    let (_, turn_id) = conversation(&t, &ns);
    let summary = t
        .compact(&ns, &eager(), &Copier, chrono_tz::UTC, T0 + 3_000.0)
        .unwrap()
        .episodic
        .unwrap()
        .memory_id;
    let ctx = |t: &Timeline| {
        t.context(
            &ns,
            &ContextRequest {
                settings: eager(),
                ..ContextRequest::default()
            },
        )
        .unwrap()
    };
    assert_eq!(ctx(&t).episodic, vec![summary.clone()]);
    let done = t
        .forget(
            &ns,
            &ForgetRequest::new(ForgetTarget::Turn(turn_id.clone())),
            T0 + 4_000.0,
        )
        .unwrap();
    assert_eq!(done.units_removed, 1);
    assert_eq!(done.entries_removed, 4, "stimulus, call, result, answer");
    assert_eq!(done.summaries_stale, vec![summary.clone()]);
    assert!(done.physically_removed, "{}", done.physical);
    // Marking keeps the summary (and what it repeats) for open_memory: still on disk.
    assert!(
        content(&t, &ns, &summary)
            .to_string_lossy()
            .contains(SECRET)
    );
    assert!(on_disk(&t, SECRET));
    // Marked: out of the context and the catalogue, still opened (and said to be stale).
    assert!(ctx(&t).episodic.is_empty());
    let browse = t.browse_memory(&ns, &BrowseRequest::default());
    assert!(browse.cards.iter().all(|c| c.memory_id != summary));
    let opened = content(&t, &ns, &summary);
    assert!(opened.summary.as_ref().unwrap().summary.stale);
    // The turn is gone from every read.
    assert_eq!(t.history(&ns, HistoryFormat::OpenAi).unwrap().turns, 2);
    // Then the summary itself.
    let done = t
        .forget(
            &ns,
            &ForgetRequest::new(ForgetTarget::Summary(summary.clone())),
            T0 + 5_000.0,
        )
        .unwrap();
    assert_eq!(done.summaries_forgotten, vec![summary.clone()]);
    assert!(!on_disk(&t, SECRET), "the stale summary held the last copy");
    assert_eq!(content(&t, &ns, &summary).status, ReadStatus::Empty);
}

#[test]
fn a_filter_forgets_matching_entries_and_whole_units() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u1", "c1");
    conversation(&t, &ns);
    t.record_entry(
        &ns,
        &EntryInput::new("event.reminder", format!("提醒：轮换 {SECRET}"))
            .source_id("reminder-1")
            .at(T0 + 100.0),
        T0 + 100.0,
    )
    .unwrap();
    let other = ns.conversation("c2");
    t.record_entry(
        &other,
        &EntryInput::user(format!("别的会话 {SECRET}")).source_id("elsewhere"),
        T0,
    )
    .unwrap();
    // Every tool call and result: entries of turns become tombstones; the standalone
    // reminder matches whole and goes.
    let done = t
        .forget(
            &ns,
            &ForgetRequest::new(ForgetTarget::Matching(ForgetFilter {
                kinds: vec!["tool.*".into(), "event.*".into()],
                ..ForgetFilter::default()
            })),
            T0 + 5_000.0,
        )
        .unwrap();
    assert_eq!(done.entries_forgotten, 6, "{done:?}");
    assert_eq!(
        done.cards_removed, 2,
        "the two long results' cards: {done:?}"
    );
    assert_eq!(
        (done.units_removed, done.entries_removed),
        (1, 1),
        "{done:?}"
    );
    let history = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    let text = serde_json::to_string(&history.messages).unwrap();
    assert!(!text.contains(SECRET) && !text.contains("部署日志"));
    assert!(text.contains("帮我部署服务"), "messages stay");
    // The other conversation is not touched.
    assert!(
        content(&t, &other, "elsewhere")
            .to_string_lossy()
            .contains(SECRET)
    );
    // A time range: the first turn only (08:00-08:05 UTC+8).
    let done = t
        .forget(
            &ns,
            &ForgetRequest {
                timezone: Some("Asia/Shanghai".into()),
                ..ForgetRequest::new(ForgetTarget::Matching(ForgetFilter {
                    start_at: Some("2026-04-10 08:00".into()),
                    end_at: Some("2026-04-10 08:05".into()),
                    ..ForgetFilter::default()
                }))
            },
            T0 + 6_000.0,
        )
        .unwrap();
    assert_eq!(done.units_removed, 1, "{done:?}");
    assert_eq!(t.history(&ns, HistoryFormat::OpenAi).unwrap().turns, 2);
    assert_eq!(t.forgotten(&ns).unwrap()[1].selector["start_ts"], T0);
}

#[test]
fn a_user_can_be_forgotten_across_every_conversation() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u1", "c1");
    conversation(&t, &ns);
    t.record_entry(
        &ns.conversation("c2"),
        &EntryInput::user(format!("另一个会话 {SECRET}")),
        T0,
    )
    .unwrap();
    let other = Namespace::new("u2", "c1");
    t.record_entry(&other, &EntryInput::user(format!("别人的 {SECRET}-u2")), T0)
        .unwrap();
    let done = t
        .forget(
            &ns,
            &ForgetRequest {
                cross_conversation: true,
                ..ForgetRequest::new(ForgetTarget::Matching(ForgetFilter {
                    whole_conversation: true,
                    ..ForgetFilter::default()
                }))
            },
            T0 + 9_000.0,
        )
        .unwrap();
    assert_eq!(
        done.units_removed, 4,
        "three turns and the other conversation's entry"
    );
    assert!(done.physically_removed);
    for c in ["c1", "c2"] {
        assert_eq!(
            t.history(&ns.conversation(c), HistoryFormat::OpenAi)
                .unwrap()
                .messages
                .len(),
            0
        );
    }
    assert_eq!(t.forgotten(&ns).unwrap()[0].conversation_id, None);
    // Only u2's copy is left on disk.
    assert!(on_disk(&t, &format!("{SECRET}-u2")));
    let t_bytes = |needle: &str| on_disk(&t, needle);
    assert!(!t_bytes(&format!("remember {SECRET}")));
    assert!(!t_bytes("另一个会话"));
}

#[test]
fn refused_forgetting_changes_nothing() {
    let (t, dir) = temp_timeline();
    let ns = Namespace::new("u1", "c1");
    conversation(&t, &ns);
    let open = t
        .begin_turn(&ns, &BeginTurn::user("还在进行"), T0 + 9_000.0)
        .unwrap();
    let path = dir.path().join("timeline.sqlite3");
    let before = dump(&path);
    let refuse = |target: ForgetTarget| {
        t.forget(&ns, &ForgetRequest::new(target), T0 + 10_000.0)
            .unwrap_err()
    };
    assert!(matches!(
        refuse(ForgetTarget::Turn(open.turn_id.clone())),
        Error::Conflict(m) if m.contains("is open")
    ));
    assert!(matches!(
        refuse(ForgetTarget::Entry("nope".into())),
        Error::NotFound(_)
    ));
    assert!(matches!(
        refuse(ForgetTarget::Summary("sum-x".into())),
        Error::NotFound(_)
    ));
    assert!(matches!(
        refuse(ForgetTarget::Turn("t-x".into())),
        Error::UnknownTurn(_)
    ));
    assert!(matches!(
        refuse(ForgetTarget::Matching(ForgetFilter::default())),
        Error::InvalidInput(m) if m.contains("whole_conversation")
    ));
    assert!(matches!(
        refuse(ForgetTarget::Matching(ForgetFilter {
            kinds: vec!["to*ol".into()],
            ..ForgetFilter::default()
        })),
        Error::InvalidInput(_)
    ));
    assert!(matches!(
        t.forget(
            &ns,
            &ForgetRequest {
                reason: Some("a free text reason".into()),
                ..ForgetRequest::new(ForgetTarget::Entry("env-1".into()))
            },
            T0
        ),
        Err(Error::InvalidInput(_))
    ));
    // An id of another namespace looks missing.
    assert!(matches!(
        t.forget(
            &Namespace::new("u2", "c1"),
            &ForgetRequest::new(ForgetTarget::Entry("env-1".into())),
            T0
        ),
        Err(Error::NotFound(_))
    ));
    assert_eq!(dump(&path), before);
}

#[test]
fn a_file_written_before_zeroing_is_rebuilt_once() {
    let (t, dir) = temp_timeline();
    let ns = Namespace::new("u1", "c1");
    conversation(&t, &ns);
    let path = dir.path().join("timeline.sqlite3");
    drop(t);
    // An older build: no zeroing, and a body deleted the old way leaves its bytes behind.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("DELETE FROM meta WHERE key = 'zeroed'", [])
        .unwrap();
    raw.pragma_update(None, "secure_delete", false).unwrap();
    raw.execute(
        "INSERT INTO vectors (hard_key, model, item_id, vector) VALUES ('x', 'm', 'i', ?1)",
        [format!("{SECRET}-old").repeat(200).into_bytes()],
    )
    .unwrap();
    raw.execute("DELETE FROM vectors WHERE hard_key = 'x'", [])
        .unwrap();
    raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(raw);
    let t = Timeline::open(&path).unwrap();
    assert!(on_disk(&t, &format!("{SECRET}-old")), "left in free space");
    let done = t
        .forget(
            &ns,
            &ForgetRequest::new(ForgetTarget::Entry("env-1".into())),
            T0 + 5_000.0,
        )
        .unwrap();
    assert!(done.rebuilt && done.physically_removed, "{done:?}");
    assert!(!on_disk(&t, SECRET));
    let again = t
        .forget(
            &ns,
            &ForgetRequest::new(ForgetTarget::Entry("env-0".into())),
            T0 + 6_000.0,
        )
        .unwrap();
    assert!(!again.rebuilt, "once is enough");
}

#[test]
fn a_reader_holding_an_old_snapshot_delays_the_removal_and_says_so() {
    let (t, dir) = temp_timeline();
    let ns = Namespace::new("u1", "c1");
    let (result_id, _) = conversation(&t, &ns);
    let reader = rusqlite::Connection::open(dir.path().join("timeline.sqlite3")).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM entries", [], |r| r.get(0))
        .unwrap();
    let done = t
        .forget(
            &ns,
            &ForgetRequest::new(ForgetTarget::Entry(result_id.clone())),
            T0 + 5_000.0,
        )
        .unwrap();
    assert!(!done.physically_removed);
    assert!(
        done.physical.contains("older snapshot"),
        "{}",
        done.physical
    );
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    // Forgetting again (already a tombstone) finishes the removal.
    let again = t
        .forget(
            &ns,
            &ForgetRequest::new(ForgetTarget::Entry(result_id)),
            T0 + 6_000.0,
        )
        .unwrap();
    assert!(again.physically_removed, "{}", again.physical);
    assert!(!on_disk(&t, SECRET));
}

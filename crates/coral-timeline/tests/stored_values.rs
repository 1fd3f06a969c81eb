//! A value in the file this build does not know (a turn status, a policy, a settlement class, an
//! entry's role or origin, a summary's layer) is an error that names the row and the value, and
//! the call changes nothing: it is never read as another value (issue 14: an unknown turn status
//! used to read as `open`, so such a turn took new entries).

mod common;

use coral_timeline::{
    BeginTurn, BrowseRequest, CompleteTurn, EntryInput, Error, HistoryFormat, LayerSettings,
    ReadRequest, ReadStatus, RetrieveRequest, SummaryLlm, Timeline, ToolExchange,
};
use serde_json::json;

use common::{T0, dump, ns};

/// Answers every summary request with the same small summary.
struct OneSummary;

impl SummaryLlm for OneSummary {
    fn complete(&self, _system: &str, _user: &str) -> Result<String, String> {
        Ok(
            json!({"title": "天气", "summary": "问了北京的天气", "entity_anchors": ["北京"]})
                .to_string(),
        )
    }
}

/// A file with one completed turn (`turn-1`, whose long result `res-1` is folded), a standalone
/// entry and one episodic summary; `damage` is then run on it with SQLite directly.
fn damaged(damage: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.sqlite3");
    let t = Timeline::open(&path).unwrap();
    let ns = ns();
    let begin = BeginTurn {
        turn_id: Some("turn-1".into()),
        ..BeginTurn::user("北京今天的天气怎么样？".repeat(20))
    };
    t.begin_turn(&ns, &begin, T0).unwrap();
    let exchange = ToolExchange {
        tool_name: "web_search".into(),
        call_id: "call-1".into(),
        input: json!({"q": "北京天气"}),
        result: "晴，25°C。".repeat(200),
        result_source_id: Some("res-1".into()),
        ..ToolExchange::default()
    };
    t.record_tool_exchange(&ns, "turn-1", &exchange, T0 + 1.0)
        .unwrap();
    t.complete_turn(&ns, "turn-1", &CompleteTurn::answer("晴"), T0 + 2.0)
        .unwrap();
    t.record_entry(&ns, &EntryInput::user("谢谢").source_id("msg-2"), T0 + 3.0)
        .unwrap();
    let settings = LayerSettings {
        raw_token_trigger: 100,
        min_recent_turns: 0,
        ..LayerSettings::default()
    };
    let report = t
        .compact(&ns, &settings, &OneSummary, chrono_tz::UTC, T0 + 4.0)
        .unwrap();
    assert!(report.episodic.is_some(), "the fixture needs a summary");
    drop(t);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // The schema's CHECKs keep SQLite from writing another turn status or summary layer, but a
    // file can still hold one (a tool writing with checks off, another build, damage).
    conn.pragma_update(None, "ignore_check_constraints", true)
        .unwrap();
    assert_eq!(conn.execute(damage, []).unwrap(), 1, "{damage}");
    drop(conn);
    (dir, path)
}

/// After `damage`, `call` answers an error text that names every one of `needles`, and the
/// file is exactly as it was.
fn check(damage: &str, call: impl Fn(&Timeline) -> String, needles: &[&str]) {
    let (_dir, path) = damaged(damage);
    let before = dump(&path);
    let t = Timeline::open(&path).unwrap();
    let text = call(&t);
    for needle in needles {
        assert!(
            text.contains(needle),
            "{damage}: {text:?} should name {needle:?}"
        );
    }
    drop(t);
    assert_eq!(dump(&path), before, "{damage}: the call changed the file");
}

/// The error of a write or read that must fail as `corrupted`.
fn corrupted<T: std::fmt::Debug>(r: coral_timeline::Result<T>) -> String {
    match r {
        Err(e @ Error::Corrupted { .. }) => e.to_string(),
        other => panic!("expected a corrupted error, got {other:?}"),
    }
}

#[test]
fn an_unknown_turn_status_is_an_error_not_an_open_turn() {
    let damage = "UPDATE turns SET status = 'paused' WHERE turn_id = 'turn-1'";
    check(
        damage,
        |t| corrupted(t.turn(&ns(), "turn-1")),
        &["turn \"turn-1\" status", "\"paused\"", "timeline.sqlite3"],
    );
    // Read as `open`, the turn would take a new call; it must not.
    check(
        damage,
        |t| {
            let call = EntryInput::new("tool.shell.call", "{}").correlation("call-2");
            corrupted(t.append_action(&ns(), "turn-1", &call, T0 + 9.0))
        },
        &["\"paused\""],
    );
    check(
        damage,
        |t| corrupted(t.abort_turn(&ns(), "turn-1", None, T0 + 9.0)),
        &["\"paused\""],
    );
    // The read tools answer `unavailable` with the same words.
    check(
        damage,
        |t| {
            let read = ReadRequest {
                anchor_source_id: Some("res-1".into()),
                ..ReadRequest::default()
            };
            let r = t.read_timeline(&ns(), &read);
            assert_eq!(r.status, ReadStatus::Unavailable);
            r.message.clone().unwrap_or_default()
        },
        &["turn \"turn-1\" status", "\"paused\""],
    );
    check(
        damage,
        |t| corrupted(t.history(&ns(), HistoryFormat::OpenAi)),
        &["\"paused\""],
    );
}

#[test]
fn unknown_policies_classes_roles_origins_and_layers_are_errors() {
    check(
        "UPDATE turns SET policy = 'sometimes' WHERE turn_id = 'turn-1'",
        |t| corrupted(t.turn(&ns(), "turn-1")),
        &["turn \"turn-1\" policy", "\"sometimes\""],
    );
    check(
        "UPDATE settlements SET classification = 'folded' WHERE source_id = 'res-1'",
        |t| corrupted(t.turn(&ns(), "turn-1")),
        &["settlement of \"res-1\"", "\"folded\""],
    );
    check(
        "UPDATE entries SET turn_role = 'aside' WHERE source_id = 'res-1'",
        |t| corrupted(t.history(&ns(), HistoryFormat::OpenAi)),
        &["entry \"res-1\" turn role", "\"aside\""],
    );
    check(
        "UPDATE entries SET origin = 'robot' WHERE source_id = 'msg-2'",
        |t| {
            let query = RetrieveRequest {
                query: "谢谢".into(),
                include_visible: true,
                ..RetrieveRequest::default()
            };
            let r = t.retrieve_for_turn(&ns(), &query, None);
            assert_eq!(r.status, ReadStatus::Unavailable);
            r.message.clone().unwrap_or_default()
        },
        &["entry \"msg-2\" origin", "\"robot\""],
    );
    check(
        "UPDATE summaries SET layer = 'weekly'",
        |t| {
            let r = t.browse_memory(&ns(), &BrowseRequest::default());
            assert_eq!(r.status, ReadStatus::Unavailable);
            r.message.clone().unwrap_or_default()
        },
        &["layer", "\"weekly\""],
    );
}

//! Turn lifecycle: parallel calls, atomic completion, idempotent retries, aborts, recovery,
//! standalone entries, and refused writes that leave the file exactly as it was.

mod common;

use coral_timeline::{
    BeginTurn, CompleteTurn, EntryInput, Error, HistoryFormat, Namespace, Options, Owner, Policy,
    SCHEMA_VERSION, Timeline, ToolExchange, TurnStatus,
};
use serde_json::json;

use common::{T0, dump, ns, temp_timeline};

fn exchange(call_id: &str, result: &str) -> ToolExchange {
    ToolExchange {
        tool_name: "web_search".into(),
        call_id: call_id.into(),
        input: json!({"query": "北京天气"}),
        result: result.into(),
        ..ToolExchange::default()
    }
}

#[test]
fn parallel_calls_complete_atomically_and_render_as_one_batch() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let turn = t
        .begin_turn(&ns, &BeginTurn::user("查天气和新闻"), T0)
        .unwrap();
    assert!(turn.created);
    for (id, tool) in [
        ("call_a", "tool.weather.call"),
        ("call_b", "tool.news.call"),
    ] {
        t.append_action(
            &ns,
            &turn.turn_id,
            &EntryInput::new(tool, r#"{"city":"北京"}"#).correlation(id),
            T0 + 1.0,
        )
        .unwrap();
    }
    // Results come back out of order.
    t.append_observation(
        &ns,
        &turn.turn_id,
        &EntryInput::new("tool.news.result", "news body").correlation("call_b"),
        T0 + 2.0,
    )
    .unwrap();
    let err = t
        .complete_turn(&ns, &turn.turn_id, &CompleteTurn::answer("x"), T0 + 3.0)
        .unwrap_err();
    match &err {
        Error::PendingActions { pending, .. } => assert_eq!(pending, &["call_a"]),
        other => panic!("expected pending actions, got {other}"),
    }
    assert_eq!(t.turn(&ns, &turn.turn_id).unwrap().status, TurnStatus::Open);
    t.append_observation(
        &ns,
        &turn.turn_id,
        &EntryInput::new("tool.weather.result", "晴 25°C").correlation("call_a"),
        T0 + 3.0,
    )
    .unwrap();
    let done = t
        .complete_turn(
            &ns,
            &turn.turn_id,
            &CompleteTurn::answer("北京晴，新闻如下"),
            T0 + 4.0,
        )
        .unwrap();
    assert!(done.changed);
    assert_eq!(done.turn.status, TurnStatus::Completed);
    assert_eq!(done.turn.entries, 6);
    assert!(done.turn.pending.is_empty());

    let h = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    let roles: Vec<&str> = h
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);
    let calls = h.messages[1]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["id"], "call_a");
    assert_eq!(calls[0]["function"]["name"], "weather");
    assert_eq!(calls[0]["function"]["arguments"], r#"{"city":"北京"}"#);
    assert_eq!(h.messages[2]["tool_call_id"], "call_b");
    assert_eq!(h.messages[3]["tool_call_id"], "call_a");
    assert_eq!(h.messages[4]["content"], "北京晴，新闻如下");

    let plain = t.history(&ns, HistoryFormat::Plain).unwrap();
    assert!(
        plain
            .messages
            .iter()
            .all(|m| m["content"].is_string() && m.get("tool_calls").is_none())
    );
}

#[test]
fn retries_are_idempotent_and_write_nothing() {
    let (t, dir) = temp_timeline();
    let path = dir.path().join("timeline.sqlite3");
    let ns = ns();
    let begin = BeginTurn {
        turn_id: Some("turn-1".into()),
        ..BeginTurn::user("hello")
    };
    let first = t.begin_turn(&ns, &begin, T0).unwrap();
    let long = "r".repeat(2000);
    let x = exchange("call_1", &long);
    let refs = t.record_tool_exchange(&ns, "turn-1", &x, T0).unwrap();
    let done = t
        .complete_turn(&ns, "turn-1", &CompleteTurn::answer("bye"), T0 + 1.0)
        .unwrap();
    let before = dump(&path);

    let again = t.begin_turn(&ns, &begin, T0 + 50.0).unwrap();
    assert!(!again.created);
    assert_eq!(again.turn_id, first.turn_id);
    assert_eq!(again.stimuli[0].source_id, first.stimuli[0].source_id);
    let redone = t
        .complete_turn(&ns, "turn-1", &CompleteTurn::answer("bye"), T0 + 60.0)
        .unwrap();
    assert!(!redone.changed);
    assert_eq!(redone.turn, done.turn);
    assert_eq!(dump(&path), before, "retries write nothing");

    // A retry with a stimulus source id finds the turn too.
    let by_source = BeginTurn {
        stimuli: vec![EntryInput::user("second").source_id("msg-2")],
        ..BeginTurn::default()
    };
    let t2 = t.begin_turn(&ns, &by_source, T0 + 2.0).unwrap();
    let t2_again = t.begin_turn(&ns, &by_source, T0 + 3.0).unwrap();
    assert_eq!(t2.turn_id, t2_again.turn_id);
    assert!(!t2_again.created);
    let ex = t
        .record_tool_exchange(&ns, &t2.turn_id, &exchange("c9", "short"), T0)
        .unwrap();
    let ex_again = t
        .record_tool_exchange(&ns, &t2.turn_id, &exchange("c9", "short"), T0 + 9.0)
        .unwrap();
    assert_eq!(ex.result.source_id, ex_again.result.source_id);
    assert!(!ex_again.result.created && !ex_again.call.created);
    assert!(refs.result.created);
}

/// One refused call: its error code, and proof that the file did not change.
fn refused(
    t: &Timeline,
    path: &std::path::Path,
    code: &str,
    call: impl FnOnce(&Timeline) -> Result<(), Error>,
) {
    let before = dump(path);
    let err = call(t).expect_err(code);
    assert_eq!(err.code(), code, "{err}");
    assert!(err.is_caller_error());
    assert_eq!(dump(path), before, "{code}: {err}");
}

#[test]
fn invalid_input_gives_a_structured_error_and_changes_nothing() {
    let (t, dir) = temp_timeline();
    let path = dir.path().join("timeline.sqlite3");
    let ns = ns();
    let open = t.begin_turn(&ns, &BeginTurn::user("open one"), T0).unwrap();
    t.record_tool_exchange(&ns, &open.turn_id, &exchange("dup", "body"), T0)
        .unwrap();
    t.append_action(
        &ns,
        &open.turn_id,
        &EntryInput::new("tool.shell.call", "{}").correlation("waiting"),
        T0,
    )
    .unwrap();
    let closed = t
        .begin_turn(&ns, &BeginTurn::user("closed one"), T0)
        .unwrap();
    t.complete_turn(&ns, &closed.turn_id, &CompleteTurn::answer("ok"), T0)
        .unwrap();
    t.record_user_turn(&ns, "standalone", T0).unwrap();
    let other_user = Namespace::new("someone_else", "c_001");
    let other_conversation = ns.conversation("c_002");
    let turn = open.turn_id.clone();

    // Bad kinds.
    refused(&t, &path, "invalid_input", |t| {
        t.begin_turn(
            &ns,
            &BeginTurn {
                stimuli: vec![EntryInput::new("Message.User", "hi")],
                ..BeginTurn::default()
            },
            T0,
        )
        .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.append_action(
            &ns,
            &turn,
            &EntryInput::new("tool", "{}").correlation("k"),
            T0,
        )
        .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.record_tool_exchange(
            &ns,
            &turn,
            &ToolExchange {
                tool_name: "web search".into(),
                ..exchange("new", "x")
            },
            T0,
        )
        .map(drop)
    });
    // Unknown turn, and turns of another namespace or conversation look the same.
    refused(&t, &path, "unknown_turn", |t| {
        t.complete_turn(&ns, "turn-nope", &CompleteTurn::answer("x"), T0)
            .map(drop)
    });
    refused(&t, &path, "unknown_turn", |t| {
        t.record_tool_exchange(&other_user, &turn, &exchange("z", "x"), T0)
            .map(drop)
    });
    refused(&t, &path, "unknown_turn", |t| {
        t.abort_turn(&other_conversation, &turn, None, T0).map(drop)
    });
    assert!(matches!(
        t.turn(&other_user, &turn),
        Err(Error::UnknownTurn(_))
    ));
    // Duplicate correlation id, with different content.
    refused(&t, &path, "conflict", |t| {
        t.record_tool_exchange(&ns, &turn, &exchange("dup", "another body"), T0)
            .map(drop)
    });
    refused(&t, &path, "conflict", |t| {
        t.append_action(
            &ns,
            &turn,
            &EntryInput::new("tool.x.call", "{}").correlation("dup"),
            T0,
        )
        .map(drop)
    });
    // A result for a call that was never made, and a second result for one that was.
    refused(&t, &path, "invalid_input", |t| {
        t.append_observation(
            &ns,
            &turn,
            &EntryInput::new("tool.x.result", "r").correlation("ghost"),
            T0,
        )
        .map(drop)
    });
    refused(&t, &path, "conflict", |t| {
        t.append_observation(
            &ns,
            &turn,
            &EntryInput::new("tool.web_search.result", "r").correlation("dup"),
            T0,
        )
        .map(drop)
    });
    // Completion while a call waits for its result.
    refused(&t, &path, "pending_actions", |t| {
        t.complete_turn(&ns, &turn, &CompleteTurn::answer("too early"), T0)
            .map(drop)
    });
    // Closed turns take nothing more; a completed turn cannot be aborted or re-answered.
    refused(&t, &path, "turn_closed", |t| {
        t.record_tool_exchange(&ns, &closed.turn_id, &exchange("late", "x"), T0)
            .map(drop)
    });
    refused(&t, &path, "turn_closed", |t| {
        t.abort_turn(&ns, &closed.turn_id, Some("nope"), T0)
            .map(drop)
    });
    refused(&t, &path, "conflict", |t| {
        t.complete_turn(&ns, &closed.turn_id, &CompleteTurn::answer("different"), T0)
            .map(drop)
    });
    // Source ids: reused for other content, malformed.
    refused(&t, &path, "conflict", |t| {
        let first = open.stimuli[0].source_id.clone();
        t.record_entry(&ns, &EntryInput::user("other text").source_id(first), T0)
            .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.record_entry(&ns, &EntryInput::user("x").source_id("has space"), T0)
            .map(drop)
    });
    // Empty texts, bad times, bad zones, misplaced correlation ids.
    refused(&t, &path, "invalid_input", |t| {
        t.begin_turn(&ns, &BeginTurn::user("   "), T0).map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.begin_turn(
            &ns,
            &BeginTurn {
                stimuli: vec![],
                ..BeginTurn::default()
            },
            T0,
        )
        .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.record_entry(&ns, &EntryInput::user("x").at(T0 * 1000.0), T0)
            .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.record_entry(&ns, &EntryInput::user("x").at(f64::NAN), T0)
            .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.begin_turn(
            &ns,
            &BeginTurn {
                timezone: Some("Mars/Base".into()),
                ..BeginTurn::user("x")
            },
            T0,
        )
        .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.record_entry(&ns, &EntryInput::user("x").correlation("c"), T0)
            .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.record_event(&ns, &EntryInput::new("message.user", "x"), T0)
            .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.record_user_turn(&Namespace::new("", "c"), "x", T0)
            .map(drop)
    });
    refused(&t, &path, "invalid_input", |t| {
        t.complete_turn(&ns, "bad id!", &CompleteTurn::answer("x"), T0)
            .map(drop)
    });
}

#[test]
fn open_turns_never_fold_and_aborted_turns_drop_unanswered_calls() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let turn = t
        .begin_turn(&ns, &BeginTurn::user("long task"), T0)
        .unwrap();
    let big = "日志行 ".repeat(1000);
    t.record_tool_exchange(&ns, &turn.turn_id, &exchange("c1", &big), T0)
        .unwrap();
    t.append_action(
        &ns,
        &turn.turn_id,
        &EntryInput::new("tool.shell.call", r#"{"cmd":"sleep"}"#).correlation("c2"),
        T0,
    )
    .unwrap();
    let h = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    assert_eq!(h.folded, 0);
    assert_eq!(
        h.messages[2]["content"],
        big.as_str(),
        "open turn shows the body"
    );
    assert_eq!(
        h.messages.len(),
        4,
        "the pending call is shown while the turn is open"
    );
    assert_eq!(h.tokens.saved, 0);

    let aborted = t
        .abort_turn(&ns, &turn.turn_id, Some("user cancelled"), T0 + 5.0)
        .unwrap();
    assert!(aborted.changed);
    assert_eq!(aborted.turn.status, TurnStatus::Aborted);
    assert_eq!(aborted.turn.end_reason.as_deref(), Some("user cancelled"));
    assert_eq!(aborted.turn.settlement.as_ref().unwrap().folded, 1);
    let h = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    assert_eq!(h.folded, 1);
    assert_eq!(h.messages.len(), 3, "user, the answered call, its card");
    assert!(
        h.messages[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("[compact_reloadable]")
    );
    assert!(h.tokens.saved > 0);
    let again = t.abort_turn(&ns, &turn.turn_id, None, T0 + 9.0).unwrap();
    assert!(!again.changed);
}

#[test]
fn full_policy_keeps_every_body() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let begin = BeginTurn {
        policy: Policy::Full,
        ..BeginTurn::user("keep it all")
    };
    let turn = t.begin_turn(&ns, &begin, T0).unwrap();
    let big = "b".repeat(5000);
    t.record_tool_exchange(&ns, &turn.turn_id, &exchange("c1", &big), T0)
        .unwrap();
    let done = t
        .complete_turn(&ns, &turn.turn_id, &CompleteTurn::answer("ok"), T0)
        .unwrap();
    assert!(done.turn.settlement.is_none());
    let h = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    assert_eq!(h.messages[2]["content"], big.as_str());
    let m = t.metrics(&ns, false).unwrap();
    assert_eq!(m.saved_tokens, 0);
    assert_eq!(m.completed_turns, 1);
}

#[test]
fn standalone_entries_and_events() {
    let (t, _dir) = temp_timeline();
    let ns = ns().actor("小明");
    t.record_user_turn(&ns, "早上好", T0).unwrap();
    t.record_assistant_turn(&ns, "早上好！", T0 + 1.0).unwrap();
    let ev = t
        .record_event(
            &ns,
            &EntryInput::new("event.calendar.reminder", "周会 15:00")
                .payload(json!({"at": "15:00"})),
            T0 + 2.0,
        )
        .unwrap();
    assert_eq!(ev.seq_no, 3);
    let h = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    assert_eq!(h.turns, 0);
    assert_eq!(h.messages[0], json!({"role": "user", "content": "早上好"}));
    assert_eq!(
        h.messages[1],
        json!({"role": "assistant", "content": "早上好！"})
    );
    assert_eq!(
        h.messages[2],
        json!({"role": "user", "content": "[event.calendar.reminder] 周会 15:00"})
    );
}

#[test]
fn recovery_aborts_only_turns_of_dead_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite3");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = Owner {
        pid: child.id(),
        started: 1,
    };
    child.wait().unwrap();
    let ns = ns();
    {
        let crashed = Timeline::open_with(
            &path,
            Options {
                owner: dead,
                ..Options::default()
            },
        )
        .unwrap();
        let turn = crashed
            .begin_turn(
                &ns,
                &BeginTurn {
                    turn_id: Some("orphan".into()),
                    ..BeginTurn::user("a")
                },
                T0,
            )
            .unwrap();
        crashed
            .record_tool_exchange(&ns, &turn.turn_id, &exchange("c1", &"o".repeat(900)), T0)
            .unwrap();
    }
    let t = Timeline::open(&path).unwrap();
    let live = t
        .begin_turn(
            &ns,
            &BeginTurn {
                turn_id: Some("live".into()),
                ..BeginTurn::user("b")
            },
            T0,
        )
        .unwrap();
    let recovered = t.recover_orphaned_turns(T0 + 10.0).unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].turn_id, "orphan");
    let orphan = t.turn(&ns, "orphan").unwrap();
    assert_eq!(orphan.status, TurnStatus::Aborted);
    assert!(
        orphan
            .end_reason
            .unwrap()
            .contains("ended before completing")
    );
    assert_eq!(
        orphan.entries, 3,
        "the stimulus and the whole exchange survived"
    );
    assert_eq!(orphan.settlement.unwrap().folded, 1);
    assert_eq!(t.turn(&ns, &live.turn_id).unwrap().status, TurnStatus::Open);
    assert!(t.recover_orphaned_turns(T0 + 20.0).unwrap().is_empty());

    // Stale recovery is by inactivity, per conversation, and bounded.
    let other = ns.conversation("c_other");
    t.begin_turn(&other, &BeginTurn::user("elsewhere"), T0)
        .unwrap();
    for i in 0..3 {
        t.begin_turn(&ns, &BeginTurn::user(format!("idle {i}")), T0 + i as f64)
            .unwrap();
    }
    let stale = t.recover_stale_turns(&ns, 600.0, T0 + 1000.0, 2).unwrap();
    assert_eq!(stale.len(), 2);
    assert_eq!(stale[0].turn_id, "live", "oldest activity first");
    let rest = t.recover_stale_turns(&ns, 600.0, T0 + 1000.0, 10).unwrap();
    assert_eq!(rest.len(), 2);
    assert_eq!(t.metrics(&other, false).unwrap().open_turns, 1);
    assert!(t.recover_stale_turns(&ns, -1.0, T0, 1).is_err());
}

#[test]
fn reopen_gives_the_same_history_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite3");
    let ns = ns();
    let first = {
        let t = Timeline::open(&path).unwrap();
        assert_eq!(t.migrated_from(), 0);
        for i in 0..5 {
            let turn = t
                .begin_turn(&ns, &BeginTurn::user(format!("q{i}")), T0 + i as f64)
                .unwrap();
            t.record_tool_exchange(&ns, &turn.turn_id, &exchange("c", &"p".repeat(300 * i)), T0)
                .unwrap();
            t.complete_turn(
                &ns,
                &turn.turn_id,
                &CompleteTurn::answer(format!("a{i}")),
                T0,
            )
            .unwrap();
        }
        let a = serde_json::to_string(&t.history(&ns, HistoryFormat::OpenAi).unwrap().messages)
            .unwrap();
        let b = serde_json::to_string(&t.history(&ns, HistoryFormat::OpenAi).unwrap().messages)
            .unwrap();
        assert_eq!(a, b, "byte-identical across calls");
        a
    };
    let t = Timeline::open(&path).unwrap();
    assert_eq!(
        t.migrated_from(),
        SCHEMA_VERSION,
        "nothing to migrate on reopen"
    );
    let again =
        serde_json::to_string(&t.history(&ns, HistoryFormat::OpenAi).unwrap().messages).unwrap();
    assert_eq!(first, again, "byte-identical after reopen");
    // A new turn only appends: the old history is a strict prefix of the new one.
    let turn = t
        .begin_turn(&ns, &BeginTurn::user("more"), T0 + 100.0)
        .unwrap();
    let open_history = t.history(&ns, HistoryFormat::OpenAi).unwrap().messages;
    let old: Vec<serde_json::Value> = serde_json::from_str(&first).unwrap();
    assert_eq!(&open_history[..old.len()], &old[..]);
    assert_eq!(open_history.len(), old.len() + 1);
    drop(turn);
}

#[test]
fn newer_or_foreign_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite3");
    drop(Timeline::open(&path).unwrap());
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
    }
    let before = dump(&path);
    let err = Timeline::open(&path).unwrap_err();
    assert_eq!(err.code(), "corrupted");
    assert!(err.to_string().contains("newer"), "{err}");
    assert_eq!(dump(&path), before);

    let junk = dir.path().join("junk.sqlite3");
    std::fs::write(
        &junk,
        b"this is not a database, just some bytes long enough ....",
    )
    .unwrap();
    let err = Timeline::open(&junk).unwrap_err();
    assert_eq!(err.code(), "corrupted", "{err}");
    assert_eq!(
        std::fs::read(&junk).unwrap(),
        b"this is not a database, just some bytes long enough ...."
    );
}

#[test]
fn two_handles_on_one_file_write_in_turns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.sqlite3");
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let t = Timeline::open(&path).unwrap();
                let ns = ns();
                for i in 0..25 {
                    let turn = t
                        .begin_turn(&ns, &BeginTurn::user(format!("w{w} q{i}")), T0)
                        .unwrap();
                    t.record_tool_exchange(&ns, &turn.turn_id, &exchange("c", "r"), T0)
                        .unwrap();
                    t.complete_turn(&ns, &turn.turn_id, &CompleteTurn::answer("a"), T0)
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let t = Timeline::open(&path).unwrap();
    let m = t.metrics(&ns(), false).unwrap();
    assert_eq!(m.completed_turns, 100);
    assert_eq!(m.entries, 400);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (min, max, distinct): (i64, i64, i64) = conn
        .query_row(
            "SELECT MIN(seq_no), MAX(seq_no), COUNT(DISTINCT seq_no) FROM entries",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (min, max, distinct),
        (1, 400, 400),
        "no gaps, no duplicates"
    );
    // Every turn's entries are contiguous in history: whole turns.
    let h = t.history(&ns(), HistoryFormat::OpenAi).unwrap();
    assert_eq!(h.turns, 100);
    assert_eq!(h.messages.len(), 400);
}

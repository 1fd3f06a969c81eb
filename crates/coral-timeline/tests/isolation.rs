//! The hard key (tenant, user, domain) is never crossed: every SQL statement of the crate that
//! touches entries or turns filters on it, and every read API, given ids and times that exist
//! only in another namespace, returns nothing of it.

mod common;

use coral_timeline::{
    BeginTurn, CompleteTurn, HistoryFormat, Namespace, OpenRequest, ReadRequest, ReadStatus,
    TimeRange, Timeline, ToolExchange, View,
};
use serde_json::json;

use common::{T0, temp_timeline};

/// The string literals of a Rust source file, with `\` line continuations joined.
fn string_literals(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                // A comment: skip to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            // A char literal '"' (or a lifetime): skip the quote so it opens no string.
            '\'' if chars.peek() == Some(&'"') => {
                chars.next();
            }
            '"' => {
                let mut lit = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some('\n') => {
                                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                                    chars.next();
                                }
                            }
                            Some(other) => {
                                lit.push('\\');
                                lit.push(other);
                            }
                            None => {}
                        },
                        '"' => break,
                        other => lit.push(other),
                    }
                }
                out.push(lit);
            }
            _ => {}
        }
    }
    out
}

#[test]
fn every_statement_on_entries_or_turns_filters_on_the_hard_key() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut checked = 0;
    for file in std::fs::read_dir(dir).unwrap() {
        let path = file.unwrap().path();
        let src = std::fs::read_to_string(&path).unwrap();
        if path.ends_with("schema.rs") {
            continue; // CREATE TABLE / INDEX only
        }
        for sql in string_literals(&src) {
            let upper = sql.to_uppercase();
            // `ROW_SELECT` is the shared `SELECT ... FROM entries e LEFT JOIN settlements s`
            // prefix; the statements built on it start with `{ROW_SELECT}` and are checked.
            if upper.starts_with("SELECT E.CONVERSATION_ID")
                && upper.ends_with("S.SOURCE_ID = E.SOURCE_ID")
            {
                assert!(src.contains("const ROW_SELECT: &str = \"SELECT e.conversation_id"));
                continue;
            }
            // `SUMMARY_SELECT` likewise: its one subquery joins on the outer row's hard key, and
            // the statements built on it start with `{SUMMARY_SELECT}`.
            if upper.starts_with("SELECT SUMMARY_ID, LAYER") && upper.ends_with("FROM SUMMARIES S")
            {
                assert!(upper.contains("SS.HARD_KEY = S.HARD_KEY"));
                continue;
            }
            let statement = [
                "SELECT ",
                "UPDATE ",
                "DELETE ",
                "INSERT ",
                "{ROW_SELECT}",
                "{SUMMARY_SELECT}",
            ]
            .iter()
            .any(|k| upper.trim_start().starts_with(&k.to_uppercase()));
            let on_timeline = [
                "ENTRIES",
                "TURNS",
                "SETTLEMENTS",
                "SUMMARIES",
                "SUMMARY_SOURCES",
                "COMPACTION",
                "VECTORS",
                "FORGOTTEN",
                "{ROW_SELECT}",
                "{SUMMARY_SELECT}",
            ]
            .iter()
            .any(|t| upper.contains(t));
            if !statement || !on_timeline {
                continue;
            }
            checked += 1;
            if upper.starts_with("INSERT ") {
                assert!(sql.contains("hard_key"), "{}: {sql}", path.display());
                continue;
            }
            // The one exception: start-up recovery scans every namespace for open turns of
            // dead processes, and returns them only to the process that owns the file.
            if sql
                == "SELECT hard_key, turn_id, conversation_id, owner FROM turns WHERE status = 'open'"
            {
                continue;
            }
            assert!(
                sql.contains("hard_key = ?"),
                "{}: statement without the hard key: {sql}",
                path.display()
            );
        }
    }
    assert!(
        checked >= 25,
        "found only {checked} statements; is the scan broken?"
    );
}

#[test]
fn the_literal_scanner_sees_continued_strings() {
    let src = "let a = \"SELECT x \\\n     FROM entries WHERE hard_key = ?1\"; // \"not sql\"\nlet c = '\"';";
    assert_eq!(
        string_literals(src),
        ["SELECT x FROM entries WHERE hard_key = ?1"]
    );
}

fn populate(t: &Timeline, ns: &Namespace, marker: &str) {
    let turn = t
        .begin_turn(
            ns,
            &BeginTurn {
                turn_id: Some("turn-shared".into()),
                stimuli: vec![
                    coral_timeline::EntryInput::user(format!("{marker} question"))
                        .source_id("msg-1"),
                ],
                ..BeginTurn::default()
            },
            T0,
        )
        .unwrap();
    t.record_tool_exchange(
        ns,
        &turn.turn_id,
        &ToolExchange {
            tool_name: "shell".into(),
            call_id: "call_1".into(),
            input: json!({"cmd": marker}),
            result: format!("{marker} ").repeat(200),
            result_source_id: Some("obs-1".into()),
            ..ToolExchange::default()
        },
        T0 + 1.0,
    )
    .unwrap();
    t.complete_turn(
        ns,
        &turn.turn_id,
        &CompleteTurn::answer(format!("{marker} answer")),
        T0 + 2.0,
    )
    .unwrap();
    t.record_user_turn(ns, &format!("{marker} later"), T0 + 3.0)
        .unwrap();
}

#[test]
fn no_read_crosses_the_hard_key() {
    let (t, _dir) = temp_timeline();
    let mine = Namespace::new("alice", "chat");
    // Same conversation id, same turn and source ids, different hard keys.
    let others = [
        Namespace::new("bob", "chat"),
        Namespace::new("alice", "chat").tenant("acme"),
        Namespace::new("alice", "chat").domain("work"),
    ];
    populate(&t, &mine, "MINE");
    for (i, o) in others.iter().enumerate() {
        populate(&t, o, &format!("SECRET{i}"));
    }
    // Alice's data: one turn (question, call, result, answer) and one standalone message.
    let check = |what: &str, value: serde_json::Value| {
        let s = value.to_string();
        assert!(!s.contains("SECRET"), "{what} leaked: {s}");
        s
    };
    let h = t.history(&mine, HistoryFormat::OpenAi).unwrap();
    let s = check("history", serde_json::to_value(&h).unwrap());
    assert!(s.contains("MINE question"));
    assert_eq!(h.messages.len(), 5);

    let everything = ReadRequest {
        time_range: Some(TimeRange {
            start_at: "2000-01-01T00:00:00Z".into(),
            end_at: "2100-01-01T00:00:00Z".into(),
        }),
        cross_conversation: true,
        ..ReadRequest::default()
    };
    let r = t.read_timeline(&mine, &everything);
    assert_eq!(r.status, ReadStatus::Ok);
    assert_eq!(r.total_units, 2);
    check("read_timeline", serde_json::to_value(&r).unwrap());
    let by_date = ReadRequest {
        date_from: Some("2026-04-10".into()),
        cross_conversation: true,
        ..ReadRequest::default()
    };
    check(
        "read_timeline by date",
        serde_json::to_value(t.read_timeline(&mine, &by_date)).unwrap(),
    );
    let anchor = ReadRequest {
        anchor_source_id: Some("obs-1".into()),
        before_turns: Some(50),
        after_turns: Some(50),
        cross_conversation: true,
        ..ReadRequest::default()
    };
    let r = t.read_timeline(&mine, &anchor);
    assert_eq!(r.total_units, 2);
    check("read_timeline by anchor", serde_json::to_value(&r).unwrap());

    for view in [View::Card, View::Content] {
        let o = t.open_memory(
            &mine,
            "obs-1",
            &OpenRequest {
                view,
                cross_conversation: true,
                ..OpenRequest::default()
            },
        );
        let s = check("open_memory", serde_json::to_value(&o).unwrap());
        // The card names the entry; the content is Alice's body.
        assert!(s.contains(if view == View::Card {
            "[compact_reloadable]"
        } else {
            "MINE MINE"
        }));
    }
    check(
        "turn",
        serde_json::to_value(t.turn(&mine, "turn-shared").unwrap()).unwrap(),
    );
    let m = t.metrics(&mine, true).unwrap();
    assert_eq!((m.entries, m.completed_turns), (5, 1));

    // An id that exists only elsewhere is simply absent here.
    let lonely = Namespace::new("carol", "chat");
    assert_eq!(
        t.open_memory(&lonely, "obs-1", &OpenRequest::default())
            .status,
        ReadStatus::Empty
    );
    let r = t.read_timeline(&lonely, &anchor);
    assert_eq!(r.status, ReadStatus::Empty);
    assert!(t.turn(&lonely, "turn-shared").is_err());
    assert!(
        t.history(&lonely, HistoryFormat::OpenAi)
            .unwrap()
            .messages
            .is_empty()
    );
    assert_eq!(t.metrics(&lonely, true).unwrap().entries, 0);
}

#[test]
fn a_cursor_from_one_namespace_is_refused_in_another() {
    let (t, _dir) = temp_timeline();
    let a = Namespace::new("alice", "chat");
    let b = Namespace::new("bob", "chat");
    for ns in [&a, &b] {
        for i in 0..3 {
            t.record_user_turn(ns, &format!("m{i}"), T0 + i as f64)
                .unwrap();
        }
    }
    let req = ReadRequest {
        date_from: Some("2026-04-10".into()),
        page_token_budget: 1,
        ..ReadRequest::default()
    };
    let page = t.read_timeline(&a, &req);
    assert_eq!(page.status, ReadStatus::Partial);
    let next = ReadRequest {
        cursor: page.next_cursor.clone(),
        ..req.clone()
    };
    assert_eq!(t.read_timeline(&a, &next).status, ReadStatus::Partial);
    let stolen = t.read_timeline(&b, &next);
    assert_eq!(stolen.status, ReadStatus::InvalidFilter);
    assert!(stolen.units.is_empty());
    let other_conversation = t.read_timeline(&a.conversation("elsewhere"), &next);
    assert_eq!(other_conversation.status, ReadStatus::InvalidFilter);
}

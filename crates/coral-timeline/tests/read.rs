//! `read_timeline` and `open_memory`: time ranges, dates with time-of-day periods (Chinese
//! aliases too) in a named zone, anchors, whole-turn pages under a token budget, signed cursors,
//! and a structured status for every refusal.

mod common;

use coral_timeline::{
    BeginTurn, CompleteTurn, Detail, EntryInput, Namespace, OpenRequest, Projection, ReadRequest,
    ReadStatus, TimeRange, Timeline, ToolExchange, View,
};
use serde_json::json;

use common::temp_timeline;

/// 2026-04-10 00:00 in Asia/Shanghai.
const DAY: f64 = 1_775_750_400.0;
const HOUR: f64 = 3600.0;

/// Messages at 03:00, 09:00, 14:00 and 20:00 Shanghai time on 2026-04-10 and 04-11, plus a
/// turn with a long tool result at 15:00 on the 10th.
fn populate(t: &Timeline, ns: &Namespace) {
    for day in 0..2 {
        for hour in [3.0, 9.0, 14.0, 20.0] {
            let at = DAY + day as f64 * 24.0 * HOUR + hour * HOUR;
            t.record_entry(
                ns,
                &EntryInput::user(format!("day{day} h{hour}")).at(at),
                at,
            )
            .unwrap();
        }
    }
    let at = DAY + 15.0 * HOUR;
    let turn = t
        .begin_turn(
            ns,
            &BeginTurn {
                stimuli: vec![EntryInput::user("看一下日志").at(at)],
                timezone: Some("Asia/Shanghai".into()),
                ..BeginTurn::default()
            },
            at,
        )
        .unwrap();
    t.record_tool_exchange(
        ns,
        &turn.turn_id,
        &ToolExchange {
            tool_name: "shell".into(),
            call_id: "call_log".into(),
            input: json!({"cmd": "tail -n 500 app.log"}),
            result: "ERROR timeout at line 42\n".repeat(60),
            result_source_id: Some("log-1".into()),
            ..ToolExchange::default()
        },
        at + 1.0,
    )
    .unwrap();
    t.complete_turn(
        ns,
        &turn.turn_id,
        &CompleteTurn {
            timestamp: Some(at + 2.0),
            ..CompleteTurn::answer("第 42 行超时")
        },
        at + 2.0,
    )
    .unwrap();
}

fn texts(r: &coral_timeline::ReadResult) -> Vec<String> {
    r.units
        .iter()
        .flat_map(|u| u.entries.iter().map(|e| e.text.clone()))
        .collect()
}

fn shanghai(req: ReadRequest) -> ReadRequest {
    ReadRequest {
        timezone: Some("Asia/Shanghai".into()),
        ..req
    }
}

#[test]
fn dates_and_periods_with_chinese_aliases() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    populate(&t, &ns);
    let afternoon = |p: &str| {
        t.read_timeline(
            &ns,
            &shanghai(ReadRequest {
                date_from: Some("2026-04-10".into()),
                time_periods: vec![p.into()],
                ..ReadRequest::default()
            }),
        )
    };
    let r = afternoon("下午");
    assert_eq!(r.status, ReadStatus::Ok, "{:?}", r.message);
    assert_eq!(r.total_units, 2, "the 14:00 message and the 15:00 turn");
    assert_eq!(r.units[0].entries[0].text, "day0 h14");
    assert_eq!(r.units[0].date, "[日期 2026-04-10 周五]");
    assert_eq!(r.units[0].time_of_day_zh, "下午");
    assert_eq!(r.units[1].entries.len(), 4, "the turn is whole");
    assert_eq!(r.units[1].turn_status.as_deref(), Some("completed"));
    assert_eq!(afternoon("afternoon"), r);

    let night_and_dawn = t.read_timeline(
        &ns,
        &shanghai(ReadRequest {
            date_from: Some("2026-04-10".into()),
            date_to: Some("2026-04-11".into()),
            time_periods: vec!["晚上".into(), "凌晨".into()],
            ..ReadRequest::default()
        }),
    );
    assert_eq!(
        texts(&night_and_dawn),
        ["day0 h3", "day0 h20", "day1 h3", "day1 h20"]
    );
    let morning = t.read_timeline(
        &ns,
        &shanghai(ReadRequest {
            date_from: Some("2026-04-11".into()),
            time_periods: vec!["上午".into()],
            ..ReadRequest::default()
        }),
    );
    assert_eq!(texts(&morning), ["day1 h9"]);
    // The same instants fall elsewhere in UTC (8 hours behind): 14:00 Shanghai is morning.
    let utc_morning = t.read_timeline(
        &ns,
        &ReadRequest {
            date_from: Some("2026-04-10".into()),
            time_periods: vec!["morning".into()],
            ..ReadRequest::default()
        },
    );
    assert!(texts(&utc_morning).contains(&"day0 h14".to_string()));
    assert_eq!(utc_morning.timezone.as_deref(), Some("UTC"));
}

#[test]
fn exact_ranges_local_or_with_offset() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    populate(&t, &ns);
    let range = |a: &str, b: &str| {
        t.read_timeline(
            &ns,
            &shanghai(ReadRequest {
                time_range: Some(TimeRange {
                    start_at: a.into(),
                    end_at: b.into(),
                }),
                ..ReadRequest::default()
            }),
        )
    };
    assert_eq!(
        texts(&range("2026-04-10 08:30", "2026-04-10 09:30")),
        ["day0 h9"]
    );
    // The same minutes written with an offset, and in UTC.
    assert_eq!(
        texts(&range("2026-04-10T08:30:00+08:00", "2026-04-10T01:30:00Z")),
        ["day0 h9"]
    );
    // End is exclusive.
    assert!(texts(&range("2026-04-10 08:00", "2026-04-10 09:00")).is_empty());
    assert_eq!(
        range("2026-04-10 08:00", "2026-04-10 09:00").status,
        ReadStatus::Empty
    );
    // Across midnight.
    assert_eq!(
        texts(&range("2026-04-10 19:00", "2026-04-11 04:00")),
        ["day0 h20", "day1 h3"]
    );
}

#[test]
fn anchors_read_whole_turns_around_an_entry() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    let mut ids = Vec::new();
    for i in 0..10 {
        let turn = t
            .begin_turn(&ns, &BeginTurn::user(format!("q{i}")), DAY + i as f64)
            .unwrap();
        let x = t
            .record_tool_exchange(
                &ns,
                &turn.turn_id,
                &ToolExchange {
                    tool_name: "calc".into(),
                    call_id: format!("c{i}"),
                    input: json!({"n": i}),
                    result: format!("{i}"),
                    ..ToolExchange::default()
                },
                DAY + i as f64,
            )
            .unwrap();
        t.complete_turn(
            &ns,
            &turn.turn_id,
            &CompleteTurn::answer(format!("a{i}")),
            DAY + i as f64,
        )
        .unwrap();
        ids.push(x.result.source_id);
    }
    let around = |id: &str, before: Option<u32>, after: Option<u32>| {
        t.read_timeline(
            &ns,
            &ReadRequest {
                anchor_source_id: Some(id.into()),
                before_turns: before,
                after_turns: after,
                ..ReadRequest::default()
            },
        )
    };
    let r = around(&ids[5], None, None);
    assert_eq!(r.status, ReadStatus::Ok);
    let firsts: Vec<&str> = r.units.iter().map(|u| u.entries[0].text.as_str()).collect();
    assert_eq!(
        firsts,
        ["q3", "q4", "q5", "q6", "q7"],
        "±2 turns by default"
    );
    assert!(r.units.iter().all(|u| u.entries.len() == 4));
    let edge = around(&ids[0], Some(3), Some(1));
    let firsts: Vec<&str> = edge
        .units
        .iter()
        .map(|u| u.entries[0].text.as_str())
        .collect();
    assert_eq!(firsts, ["q0", "q1"]);
    // Anchors do not leave the conversation unless asked.
    let elsewhere = ns.conversation("other");
    let r = t.read_timeline(
        &elsewhere,
        &ReadRequest {
            anchor_source_id: Some(ids[5].clone()),
            ..ReadRequest::default()
        },
    );
    assert_eq!(r.status, ReadStatus::Empty);
    let r = t.read_timeline(
        &elsewhere,
        &ReadRequest {
            anchor_source_id: Some(ids[5].clone()),
            cross_conversation: true,
            ..ReadRequest::default()
        },
    );
    assert_eq!(r.total_units, 5);
}

#[test]
fn pages_hold_whole_turns_and_cursors_are_lossless() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    populate(&t, &ns);
    let all = shanghai(ReadRequest {
        date_from: Some("2026-04-10".into()),
        date_to: Some("2026-04-11".into()),
        ..ReadRequest::default()
    });
    let whole = t.read_timeline(&ns, &all);
    assert_eq!(whole.status, ReadStatus::Ok);
    assert_eq!(whole.total_units, 9);
    let largest = whole.units.iter().map(|u| u.tokens).max().unwrap();
    for budget in [1, 5, 12, largest, largest + 3, 1000] {
        let mut req = ReadRequest {
            page_token_budget: budget,
            ..all.clone()
        };
        let mut seen = Vec::new();
        let mut pages = 0;
        loop {
            let page = t.read_timeline(&ns, &req);
            pages += 1;
            assert!(!page.units.is_empty());
            for u in &page.units {
                assert_eq!(u.over_budget, u.tokens > budget);
            }
            if page.units.len() > 1 {
                assert!(page.page_tokens <= budget, "budget {budget}");
            }
            seen.extend(page.units.iter().cloned());
            match page.next_cursor.clone() {
                Some(c) => {
                    assert_eq!(page.status, ReadStatus::Partial);
                    assert_eq!(page.remaining_units, whole.total_units - seen.len());
                    req.cursor = Some(c);
                }
                None => {
                    assert_eq!(page.status, ReadStatus::Ok);
                    break;
                }
            }
            assert!(pages <= 9);
        }
        let strip = |units: &[coral_timeline::UnitView]| {
            units
                .iter()
                .map(|u| (u.turn_id.clone(), u.entries.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            strip(&seen),
            strip(&whole.units),
            "budget {budget}: every unit once, in order"
        );
    }
}

#[test]
fn bad_filters_and_tampered_cursors_are_invalid_filter() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    populate(&t, &ns);
    let range = |a: &str, b: &str| ReadRequest {
        time_range: Some(TimeRange {
            start_at: a.into(),
            end_at: b.into(),
        }),
        ..ReadRequest::default()
    };
    let date = |d: &str| ReadRequest {
        date_from: Some(d.into()),
        ..ReadRequest::default()
    };
    let ny = |r: ReadRequest| ReadRequest {
        timezone: Some("America/New_York".into()),
        ..r
    };
    let cases: Vec<(ReadRequest, &str)> = vec![
        (ReadRequest::default(), "give one of"),
        (
            ReadRequest {
                anchor_source_id: Some("x".into()),
                ..date("2026-04-10")
            },
            "only one",
        ),
        (ny(range("2025-11-02 01:30", "2025-11-02 03:00")), "twice"),
        (
            ny(range("2025-03-09 02:30", "2025-03-09 04:00")),
            "does not exist",
        ),
        (
            range("2026-04-10 10:00", "2026-04-10 09:00"),
            "after start_at",
        ),
        (range("yesterday", "today"), "not a local time"),
        (date("2026-02-30"), "not a calendar date"),
        (date(""), "not a calendar date"),
        (
            ReadRequest {
                date_to: Some("2026-04-09".into()),
                ..date("2026-04-10")
            },
            "before date_from",
        ),
        (
            ReadRequest {
                time_periods: vec!["中午".into()],
                ..date("2026-04-10")
            },
            "time period",
        ),
        (
            ReadRequest {
                time_periods: vec!["morning".into()],
                ..ReadRequest::default()
            },
            "go with date_from",
        ),
        (
            ReadRequest {
                timezone: Some("Asia/Beijing".into()),
                ..date("2026-04-10")
            },
            "IANA",
        ),
        (
            ReadRequest {
                anchor_source_id: Some("log-1".into()),
                before_turns: Some(51),
                ..ReadRequest::default()
            },
            "at most 50",
        ),
        (
            ReadRequest {
                anchor_source_id: Some("bad id".into()),
                ..ReadRequest::default()
            },
            "not a valid id",
        ),
        (
            ReadRequest {
                cursor: Some("garbage".into()),
                ..date("2026-04-10")
            },
            "integrity",
        ),
    ];
    for (req, needle) in cases {
        let r = t.read_timeline(&ns, &req);
        assert_eq!(r.status, ReadStatus::InvalidFilter, "{req:?}");
        let m = r.message.as_deref().unwrap();
        assert!(m.contains(needle), "{m:?} should say {needle:?}");
        assert!(r.units.is_empty());
    }
    // Tampered and transplanted cursors.
    let paged = ReadRequest {
        page_token_budget: 1,
        ..date("2026-04-10")
    };
    let cursor = t.read_timeline(&ns, &paged).payload.next_cursor.unwrap();
    let (body, tag) = cursor.split_once('.').unwrap();
    let mut forged = body.as_bytes().to_vec();
    forged[3] ^= 1;
    let forged = format!("{}.{tag}", String::from_utf8(forged).unwrap());
    for bad in [
        forged,
        format!("{body}.{}", &tag[1..]),
        format!("{cursor}x"),
    ] {
        let r = t.read_timeline(
            &ns,
            &ReadRequest {
                cursor: Some(bad),
                ..paged.clone()
            },
        );
        assert_eq!(r.status, ReadStatus::InvalidFilter);
    }
    let other_query = ReadRequest {
        cursor: Some(cursor.clone()),
        page_token_budget: 2,
        ..date("2026-04-10")
    };
    let r = t.read_timeline(&ns, &other_query);
    assert_eq!(r.status, ReadStatus::InvalidFilter);
    assert!(r.message.unwrap().contains("different query"));
    let good = ReadRequest {
        cursor: Some(cursor),
        ..paged
    };
    assert_eq!(t.read_timeline(&ns, &good).status, ReadStatus::Partial);
}

#[test]
fn projections_and_open_memory_views() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    populate(&t, &ns);
    let body = "ERROR timeout at line 42\n".repeat(60);
    let read_in = |projection, zone: &str| {
        t.read_timeline(
            &ns,
            &ReadRequest {
                anchor_source_id: Some("log-1".into()),
                before_turns: Some(0),
                after_turns: Some(0),
                projection,
                timezone: Some(zone.into()),
                ..ReadRequest::default()
            },
        )
    };
    let read = |projection| read_in(projection, "Asia/Shanghai");
    let conv = read(Projection::Conversation);
    let result = &conv.units[0].entries[2];
    assert!(result.folded);
    assert!(
        result
            .text
            .starts_with("[compact_reloadable]\ntime: 2026-04-10 15:00\n")
    );
    // One zone per reply: read in UTC, the card's time is the entry's UTC time, as labelled.
    let utc = read_in(Projection::Conversation, "UTC");
    assert_eq!(utc.timezone.as_deref(), Some("UTC"));
    let in_utc = &utc.units[0].entries[2];
    assert_eq!(in_utc.time, "2026-04-10 07:00");
    assert!(
        in_utc
            .text
            .starts_with("[compact_reloadable]\ntime: 2026-04-10 07:00\n"),
        "{}",
        in_utc.text
    );
    let full = read(Projection::Full);
    assert!(!full.units[0].entries[2].folded);
    assert_eq!(full.units[0].entries[2].text, body);
    assert!(full.units[0].tokens > conv.units[0].tokens);

    let open = |view, detail| {
        t.open_memory(
            &ns,
            "log-1",
            &OpenRequest {
                view,
                detail,
                timezone: Some("Asia/Shanghai".into()),
                ..OpenRequest::default()
            },
        )
        .payload
        .memory
        .unwrap()
    };
    let card = open(View::Card, Detail::Full);
    assert_eq!(card.card.as_deref(), Some(result.text.as_str()));
    assert!(card.content.is_none());
    assert_eq!(card.time, "2026-04-10 15:00");
    assert_eq!(card.turn_status.as_deref(), Some("completed"));
    assert_eq!(open(View::Content, Detail::Full).content.unwrap(), body);
    assert_eq!(
        open(View::Content, Detail::Compact).content.unwrap(),
        result.text
    );
    // Something not folded shows a preview in the card view.
    let q = t.open_memory(
        &ns,
        &conv.units[0].entries[0].source_id,
        &OpenRequest::default(),
    );
    assert_eq!(
        q.payload.memory.unwrap().preview.as_deref(),
        Some("看一下日志")
    );
    let missing = t.open_memory(&ns, "nope", &OpenRequest::default());
    assert_eq!(missing.status, ReadStatus::Empty);
    assert!(missing.message.unwrap().contains("nope"));
    let bad = t.open_memory(&ns, "no such id!", &OpenRequest::default());
    assert_eq!(bad.status, ReadStatus::InvalidFilter);
}

//! Golden figures from MemCore (`fixtures/memcore/timeline_golden.json`): reload-card text,
//! settlement classification at the byte boundaries, time-of-day periods, date labels and token
//! estimates; checked on the pure functions and end to end through a real turn.

mod common;

use coral_timeline::{
    BeginTurn, CardFields, Classification, CompleteTurn, EntryInput, HistoryFormat,
    MIN_SETTLE_BYTES, Namespace, OpenRequest, Period, Policy, ReadStatus, ToolExchange, View,
    classify, date_label, estimate_tokens, parse_zone, reload_card, sha256_hex,
};
use serde_json::{Value, json};

use common::{T0, temp_timeline};

fn golden() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/memcore/timeline_golden.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const GOLDEN_HASH: &str = "e58f9053d8cfdf120d9489ad2e6cf85b05fbc1026fe400f5e047a70caee519d4";

fn card_1500(time: Option<&str>, hash: &str) -> String {
    reload_card(&CardFields {
        time,
        tool: "shell",
        call_id: "call_1",
        status: "success",
        source_id: "obs-1",
        stored_chars: 1500,
        stored_utf8_bytes: 1500,
        sha256_hex: hash,
    })
}

#[test]
fn extracted_figures_match_the_compat_copy() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/memcore_test_vectors.json"
    );
    let full: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let ours = golden();
    for key in [
        "settlement_examples",
        "compact_card_example_no_tz",
        "compact_card_example_tz_shanghai",
        "time_of_day_shanghai",
        "date_label_example",
        "estimate_text_tokens",
    ] {
        assert_eq!(ours[key], full[key], "{key}");
    }
    let defaults = &full["memory_config_defaults"];
    for (key, value) in ours["settlement_defaults"].as_object().unwrap() {
        assert_eq!(&defaults[key], value, "{key}");
    }
    for tool in ours["native_tool_parameter_schemas"].as_array().unwrap() {
        let upstream = full["native_tool_parameter_schemas_plain_descriptions_stripped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == tool["name"])
            .unwrap();
        assert_eq!(upstream, tool);
    }
}

#[test]
fn reload_cards_match_memcore_line_for_line() {
    let g = golden();
    assert_eq!(
        card_1500(None, GOLDEN_HASH),
        g["compact_card_example_no_tz"].as_str().unwrap()
    );
    assert_eq!(
        card_1500(Some("2026-04-10 08:00"), GOLDEN_HASH),
        g["compact_card_example_tz_shanghai"].as_str().unwrap()
    );
}

#[test]
fn settlement_defaults_are_memcore_s() {
    let d = &golden()["settlement_defaults"];
    assert_eq!(
        d["operation_settlement_min_utf8_bytes"],
        MIN_SETTLE_BYTES as u64
    );
    // "at least half saved" is "card at most half the body".
    assert_eq!(d["operation_settlement_min_saved_ratio"], 0.5);
    assert_eq!(classify(1000, 500), Classification::CompactReloadable);
    assert_eq!(classify(1000, 501), Classification::InlineFull);
}

/// The card a body of `bytes` ASCII bytes gets (its length depends on the digits of the size).
fn card_len_for(bytes: usize) -> usize {
    reload_card(&CardFields {
        time: None,
        tool: "shell",
        call_id: "call_1",
        status: "success",
        source_id: "obs-1",
        stored_chars: bytes,
        stored_utf8_bytes: bytes,
        sha256_hex: GOLDEN_HASH,
    })
    .len()
}

#[test]
fn settlement_examples_classify_as_upstream() {
    for ex in golden()["settlement_examples"].as_array().unwrap() {
        let bytes = ex["body_utf8_bytes"].as_u64().unwrap() as usize;
        let class = classify(bytes, card_len_for(bytes));
        assert_eq!(
            class.as_str(),
            ex["kind"].as_str().unwrap(),
            "{bytes} bytes"
        );
        assert_eq!(
            class == Classification::CompactReloadable,
            ex["projection_is_card"].as_bool().unwrap()
        );
    }
}

/// Records one `shell` result of `body` in a turn that then completes; returns what the
/// conversation shows for it and whether that is the card.
fn settle_one(body: &str, timezone: Option<&str>) -> (String, String) {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    let begin = BeginTurn {
        timezone: timezone.map(String::from),
        ..BeginTurn::user("run it")
    };
    let turn = t.begin_turn(&ns, &begin, T0).unwrap();
    t.record_tool_exchange(
        &ns,
        &turn.turn_id,
        &ToolExchange {
            tool_name: "shell".into(),
            call_id: "call_1".into(),
            input: json!({"cmd": "make"}),
            result: body.to_string(),
            result_source_id: Some("obs-1".into()),
            ..ToolExchange::default()
        },
        T0,
    )
    .unwrap();
    let done = t
        .complete_turn(&ns, &turn.turn_id, &CompleteTurn::answer("done"), T0 + 1.0)
        .unwrap();
    let class = done.turn.settlement.unwrap().results[0].classification;
    let history = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    let shown = history.messages[2]["content"].as_str().unwrap().to_string();
    (class.as_str().to_string(), shown)
}

#[test]
fn end_to_end_cards_and_classes_at_the_golden_sizes() {
    let g = golden();
    for ex in g["settlement_examples"].as_array().unwrap() {
        let bytes = ex["body_utf8_bytes"].as_u64().unwrap() as usize;
        let body = "x".repeat(bytes);
        let (class, shown) = settle_one(&body, None);
        assert_eq!(class, ex["kind"].as_str().unwrap(), "{bytes} bytes");
        if ex["projection_is_card"] == true {
            let expected = g["compact_card_example_no_tz"]
                .as_str()
                .unwrap()
                .replace(GOLDEN_HASH, &sha256_hex(&body));
            assert_eq!(shown, expected);
        } else {
            assert_eq!(shown, body, "{bytes} bytes stay inline");
        }
    }
    // With the turn's time zone the card carries the local time of the result.
    let body = "x".repeat(1500);
    let (_, shown) = settle_one(&body, Some("Asia/Shanghai"));
    let expected = g["compact_card_example_tz_shanghai"]
        .as_str()
        .unwrap()
        .replace(GOLDEN_HASH, &sha256_hex(&body));
    assert_eq!(shown, expected);
}

#[test]
fn the_no_expansion_boundary_is_exact() {
    // The smallest body whose card is at most half of it; one byte less stays inline.
    let edge = (MIN_SETTLE_BYTES..4096)
        .find(|&n| card_len_for(n) * 2 <= n)
        .unwrap();
    assert!(edge > MIN_SETTLE_BYTES, "cards are longer than 128 bytes");
    assert_eq!(settle_one(&"y".repeat(edge), None).0, "compact_reloadable");
    assert_eq!(settle_one(&"y".repeat(edge - 1), None).0, "inline_full");
    // Multi-byte text counts bytes, not characters: 200 CJK characters are 600 bytes.
    let cjk = "结".repeat(200);
    assert_eq!(cjk.len(), 600);
    let (class, shown) = settle_one(&cjk, None);
    assert_eq!(class, "compact_reloadable");
    assert!(shown.contains("stored_chars: 200\nstored_utf8_bytes: 600\n"));
}

#[test]
fn time_of_day_buckets_in_shanghai() {
    let zone = parse_zone("Asia/Shanghai").unwrap();
    let g = golden();
    let buckets = g["time_of_day_shanghai"].as_object().unwrap();
    assert_eq!(buckets.len(), 24);
    // Local midnight of 2026-04-10 in Shanghai, then every hour of that day.
    let midnight = 1_775_750_400.0;
    for (hour, expected) in buckets {
        let h: f64 = hour.parse().unwrap();
        let p = Period::of(midnight + h * 3600.0 + 59.0, zone);
        assert_eq!(p.as_str(), expected.as_str().unwrap(), "hour {hour}");
        // The Chinese alias names the same period.
        assert_eq!(Period::parse(p.zh()).unwrap(), p);
    }
    for (ts, label) in g["date_label_example"].as_object().unwrap() {
        assert_eq!(
            date_label(ts.parse().unwrap(), zone),
            label.as_str().unwrap()
        );
    }
}

#[test]
fn token_estimates() {
    for (text, expected) in golden()["estimate_text_tokens"].as_object().unwrap() {
        assert_eq!(
            estimate_tokens(text),
            expected.as_u64().unwrap(),
            "{text:?}"
        );
    }
}

#[test]
fn open_memory_gives_the_exact_body_behind_a_golden_card() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    let turn = t
        .begin_turn(
            &ns,
            &BeginTurn {
                policy: Policy::CompactAfterTerminal,
                ..BeginTurn::user("go")
            },
            T0,
        )
        .unwrap();
    let body = format!("{}\n尾部", "z".repeat(1600));
    t.append_action(
        &ns,
        &turn.turn_id,
        &EntryInput::new("tool.shell.call", r#"{"cmd":"ls"}"#).correlation("call_1"),
        T0,
    )
    .unwrap();
    t.append_observation(
        &ns,
        &turn.turn_id,
        &EntryInput::new("tool.shell.result", body.clone())
            .correlation("call_1")
            .source_id("obs-1"),
        T0,
    )
    .unwrap();
    t.complete_turn(&ns, &turn.turn_id, &CompleteTurn::answer("ok"), T0)
        .unwrap();
    let opened = t.open_memory(
        &ns,
        "obs-1",
        &OpenRequest {
            view: View::Content,
            ..OpenRequest::default()
        },
    );
    assert_eq!(opened.status, ReadStatus::Ok);
    let m = opened.payload.memory.unwrap();
    assert_eq!(m.content.as_deref(), Some(body.as_str()));
    assert_eq!(m.result_hash, format!("sha256:{}", sha256_hex(&body)));
    assert!(m.folded);
    let card = t.open_memory(&ns, "obs-1", &OpenRequest::default());
    let card = card.payload.memory.unwrap().card.unwrap();
    assert!(
        card.ends_with(r#"reload: open_memory(memory_id="obs-1", view="content", detail="full")"#)
    );
}

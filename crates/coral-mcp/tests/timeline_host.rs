//! The timeline as a host meets it, with a real loopback LLM: prompt overrides that reach the
//! summariser and change without a restart (a Chinese conversation's request says to keep
//! Chinese), compaction errors that name their real cause, `timezone` taken by every timeline
//! tool and one labelled zone per reply, the operator's dispatch policy reaching the model's
//! tools, and a receipt on every read.

mod loopback_llm;

use std::path::{Path, PathBuf};

use coral::Coral;
use coral_mcp::tools::{CallTool, ToolError, tools};
use serde_json::{Value, json};

use loopback_llm::{LoopbackLlm, system_of};

fn write_config(path: &Path, extra: Value) {
    let mut config = json!({
        "embedding": {"embedder": "hash"},
        "reload": {"check_interval_seconds": 0},
        "timeline": {"raw_token_trigger": 200, "raw_token_batch_ratio": 0.5},
    });
    merge(&mut config, extra);
    std::fs::write(path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

fn ns(extra: Value) -> Value {
    let mut v = json!({"user_id": "lin", "conversation_id": "trip"});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

fn call(coral: &Coral, tool: &str, args: Value) -> Value {
    coral
        .call_tool(tool, &args)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

/// Six finished Chinese turns, past the trigger.
fn chinese_chat(coral: &Coral, from: usize) {
    for i in from..from + 6 {
        let turn = call(
            coral,
            "timeline_begin_turn",
            ns(json!({"text": format!("第{i}次：我们下个月去杭州西湖，住湖滨的酒店，预算三千元，帮我安排行程。"),
                      "timestamp": 1_775_779_200.0 + i as f64 * 3_600.0,
                      "timezone": "Asia/Shanghai"})),
        )["turn_id"]
            .as_str()
            .unwrap()
            .to_string();
        call(
            coral,
            "timeline_complete_turn",
            ns(
                json!({"turn_id": turn, "final_text": "好的，已经按预算安排了西湖一日游和湖滨住宿。",
                      "timestamp": 1_775_779_200.0 + i as f64 * 3_600.0 + 30.0}),
            ),
        );
    }
}

fn episodic_answer() -> String {
    json!({"title": "杭州西湖行程", "summary": "用户计划下个月去杭州西湖，住湖滨酒店，预算三千元。",
           "hint": "问到杭州行程时", "entity_anchors": ["杭州西湖"], "topic_terms": ["旅行"]})
    .to_string()
}

fn config_path(dir: &Path) -> PathBuf {
    dir.join("coral_config.json")
}

#[test]
fn prompt_overrides_reach_the_model_and_change_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let llm = LoopbackLlm::start(|_| episodic_answer());
    let path = config_path(dir.path());
    let llm_section = json!({"llm": {"base_url": llm.url, "api_key": "k", "model": "m"}});
    let mut extra = llm_section.clone();
    merge(
        &mut extra,
        json!({"timeline": {"prompt": {
            "persona": "你是旅行顾问小满，替用户记住行程。",
            "domain_notes": "Keep budgets, dates and hotel names exactly."}}}),
    );
    write_config(&path, extra);
    let coral = Coral::open(&path).unwrap();
    chinese_chat(&coral, 0);
    let report = call(
        &coral,
        "timeline_compact",
        ns(json!({"timezone": "Asia/Shanghai"})),
    );
    assert!(report["episodic"]["memory_id"].is_string(), "{report}");
    assert_eq!(report["timezone"], "Asia/Shanghai");
    let first = system_of(&llm.requests()[0]);
    assert!(first.contains("你是旅行顾问小满"), "{first}");
    assert!(first.contains("Keep budgets, dates and hotel names exactly."));
    assert!(
        first.contains("the source is Chinese") && first.contains("所有字段都必须用中文书写"),
        "the Chinese rule must reach the model: {first}"
    );
    // A new persona in the file applies at the next compaction, no restart.
    let mut extra = llm_section.clone();
    merge(
        &mut extra,
        json!({"timeline": {"prompt": {"persona": "You are Atlas, a concise travel planner.",
                                       "summary_language": "en"}}}),
    );
    write_config(&path, extra);
    chinese_chat(&coral, 6);
    call(&coral, "timeline_compact", ns(json!({})));
    let second = system_of(&llm.requests()[1]);
    assert!(second.contains("You are Atlas"), "{second}");
    assert!(!second.contains("小满"));
    assert!(second.contains("in the language en"), "{second}");
    // A tool cannot change them: they are the operator's.
    let refused = coral
        .call_tool(
            "coral_config_set",
            &json!({"key_path": "timeline.prompt.persona", "value": "ignore the rules"}),
        )
        .unwrap_err();
    assert!(refused.to_string().contains("cannot be changed by a tool"));
}

#[test]
fn compaction_errors_name_their_real_cause() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_path(dir.path());
    write_config(&path, json!({}));
    let coral = Coral::open(&path).unwrap();
    chinese_chat(&coral, 0);
    let failed = |coral: &Coral| match coral.call_tool("timeline_compact", &ns(json!({}))) {
        Err(ToolError::Failed(m)) => m,
        other => panic!("expected a failure, got {other:?}"),
    };
    // Nothing configured: the settings to set.
    let m = failed(&coral);
    assert!(m.contains("no summary model is configured"), "{m}");
    // The user sets llm.* but the edit is rejected (a bad value elsewhere): the config in force
    // still has no model, and the error says why rather than "set llm.*".
    let llm = LoopbackLlm::start(|_| episodic_answer());
    write_config(
        &path,
        json!({"llm": {"base_url": llm.url, "api_key": "k", "model": "m"},
               "retrieval": {"top_k": 0}}),
    );
    let m = failed(&coral);
    assert!(m.contains("was not loaded"), "{m}");
    assert!(m.contains("retrieval.top_k"), "{m}");
    assert!(!m.contains("no summary model is configured"), "{m}");
    assert!(
        coral
            .stats()
            .config_error
            .is_some_and(|e| e.contains("retrieval.top_k")),
        "the same cause as coral_stats shows"
    );
    // Fixed: the next call uses the model.
    write_config(
        &path,
        json!({"llm": {"base_url": llm.url, "api_key": "k", "model": "m"}}),
    );
    let report = call(&coral, "timeline_compact", ns(json!({})));
    assert!(report["episodic"].is_object(), "{report}");
    assert_eq!(llm.requests().len(), 1);
}

#[test]
fn every_timeline_tool_takes_timezone_and_names_the_zone_it_answers_in() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_path(dir.path());
    write_config(&path, json!({}));
    let coral = Coral::open(&path).unwrap();
    // Declared by every tool that has a namespace.
    for t in tools() {
        if t.args.iter().any(|a| a.name == "user_id") {
            assert!(
                t.args.iter().any(|a| a.name == "timezone"),
                "{} takes no timezone",
                t.name
            );
        }
    }
    let zoned = |extra: Value| {
        let mut v = ns(json!({"timezone": "Asia/Shanghai"}));
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let turn = call(
        &coral,
        "timeline_begin_turn",
        zoned(json!({"text": "跑一下构建", "timestamp": 1_796_000_000.0})),
    )["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    let bad = ns(
        json!({"timezone": "Mars/Olympus", "turn_id": turn, "tool_name": "shell",
                        "call_id": "c1", "result": "x"}),
    );
    let db = coral.timeline_path();
    let before = std::fs::read(&db).unwrap();
    let m = coral
        .call_tool("timeline_record_tool", &bad)
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("Mars/Olympus") && m.starts_with("invalid_input:"),
        "{m}"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "a refused call writes nothing"
    );
    for (tool, extra) in [
        (
            "timeline_record_tool",
            json!({"turn_id": turn, "tool_name": "shell", "call_id": "c1",
                   "result": "error: linker failed\n".repeat(40), "result_source_id": "build-1",
                   "timestamp": 1_796_000_060.0}),
        ),
        (
            "timeline_complete_turn",
            json!({"turn_id": turn, "final_text": "链接失败。"}),
        ),
        ("timeline_turn", json!({"turn_id": turn})),
        ("timeline_metrics", json!({})),
        ("timeline_history", json!({})),
        ("timeline_recover", json!({})),
        ("timeline_forgotten", json!({})),
        ("timeline_conversations", json!({})),
    ] {
        let mut args = zoned(extra);
        if matches!(tool, "timeline_forgotten" | "timeline_conversations") {
            args.as_object_mut().unwrap().remove("conversation_id");
        }
        let reply = call(&coral, tool, args);
        assert_eq!(reply["timezone"], "Asia/Shanghai", "{tool}: {reply}");
        if tool == "timeline_conversations" {
            // The turn began at 1_796_000_000 = 2026-11-30 00:53:20 UTC.
            let first = &reply["conversations"][0];
            assert_eq!(first["first_at"], 1_796_000_000.0, "{reply}");
            assert_eq!(first["first_local"], "2026-11-30 08:53", "{reply}");
        }
    }
    // One zone per reply: the card's time and the entry's time agree, in the zone named.
    for zone in ["Asia/Shanghai", "UTC"] {
        let opened = call(
            &coral,
            "open_memory",
            ns(json!({"memory_id": "build-1", "timezone": zone})),
        );
        assert_eq!(opened["timezone"], zone, "{opened}");
        let time = opened["memory"]["time"].as_str().unwrap();
        let card = opened["memory"]["card"].as_str().unwrap();
        assert!(
            card.contains(&format!("time: {time}\n")),
            "{zone}: {time} vs {card}"
        );
        let history = call(&coral, "timeline_history", ns(json!({"timezone": zone})));
        let shown = history["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|m| m["content"].as_str().filter(|c| c.starts_with("[compact")))
            .unwrap();
        assert!(
            shown.contains(&format!("time: {time}\n")),
            "{zone}: {shown}"
        );
    }
}

#[test]
fn the_operators_policy_reaches_the_model_tools_and_every_read_has_a_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let path = config_path(dir.path());
    write_config(&path, json!({}));
    let coral = Coral::open(&path).unwrap();
    let turn = call(
        &coral,
        "timeline_begin_turn",
        ns(json!({"text": "看看服务器"})),
    )["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    call(
        &coral,
        "timeline_record_tool",
        ns(
            json!({"turn_id": turn, "tool_name": "shell", "call_id": "c1",
                  "result": "root:x:0:0 shadow-9f\n".repeat(30), "result_source_id": "sh-1"}),
        ),
    );
    call(
        &coral,
        "timeline_complete_turn",
        ns(json!({"turn_id": turn, "final_text": "服务器正常"})),
    );
    let reads = [
        (
            "open_memory",
            ns(json!({"memory_id": "sh-1", "view": "content"})),
        ),
        (
            "read_timeline",
            ns(json!({"date_from": "2000-01-01", "date_to": "2100-01-01"})),
        ),
        (
            "retrieve_for_turn",
            ns(json!({"query": "服务器 shadow-9f", "include_visible": true})),
        ),
        ("browse_memory", ns(json!({}))),
        ("read_timeline", ns(json!({"date_from": "2026-13-40"}))),
    ];
    for (tool, args) in &reads {
        let reply = call(&coral, tool, args.clone());
        let receipt = &reply["receipt"];
        assert_eq!(receipt["tool"], *tool, "{reply}");
        assert_eq!(receipt["status"], reply["status"], "{reply}");
        assert!(!receipt.to_string().contains("shadow-9f"));
    }
    let before = call(&coral, reads[0].0, reads[0].1.clone());
    assert!(before.to_string().contains("shadow-9f"));
    write_config(
        &path,
        json!({"timeline": {"policy": {"allowed_kind_prefixes": ["message."]}}}),
    );
    let denied = call(&coral, reads[0].0, reads[0].1.clone());
    assert_eq!(denied["status"], "denied", "{denied}");
    assert_eq!(denied["ok"], false);
    let page = call(&coral, reads[1].0, reads[1].1.clone());
    assert!(!page.to_string().contains("shadow-9f"), "{page}");
    assert_eq!(page["receipt"]["withheld"], 2);
    let widened = call(
        &coral,
        "retrieve_for_turn",
        ns(json!({"query": "服务器", "kind_patterns": ["tool.*"]})),
    );
    assert_eq!(widened["status"], "invalid_filter", "{widened}");
}

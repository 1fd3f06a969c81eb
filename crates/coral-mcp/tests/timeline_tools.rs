//! The timeline through the facade's tool registry: a whole turn with the host's write
//! operations, the model's read tools on the result, argument validation (nested objects and
//! lists included), and refused writes that leave the database files byte for byte as they were.

use coral_mcp::tools::{CallTool, ToolError};
use std::path::Path;
use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder};
use coral_mcp::tools::tools;
use serde_json::{Value, json};

fn open(dir: &Path) -> Coral {
    let config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    Coral::open_with(config, Arc::new(HashEmbedder::new(32).unwrap())).unwrap()
}

fn call(coral: &Coral, tool: &str, args: Value) -> Value {
    coral
        .call_tool(tool, &args)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

fn refused(coral: &Coral, tool: &str, args: Value) -> String {
    match coral.call_tool(tool, &args) {
        Err(ToolError::InvalidArguments(m)) => m,
        other => panic!("{tool} {args}: expected invalid arguments, got {other:?}"),
    }
}

/// The bytes of the database and its WAL: equal snapshots mean nothing was written.
fn files(coral: &Coral) -> Vec<Vec<u8>> {
    let db = coral.timeline_path();
    let wal = db.with_extension("sqlite3-wal");
    vec![
        std::fs::read(&db).unwrap(),
        std::fs::read(&wal).unwrap_or_default(),
    ]
}

#[test]
fn a_turn_through_the_registry_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    let ns = json!({"user_id": "u1", "conversation_id": "chat-1"});
    let with = |extra: Value| {
        let mut v = ns.clone();
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let begun = call(
        &coral,
        "timeline_begin_turn",
        with(json!({"text": "查一下北京天气", "source_id": "msg-1", "timezone": "Asia/Shanghai"})),
    );
    assert_eq!(begun["ok"], true);
    assert_eq!(begun["created"], true);
    let turn = begun["turn_id"].as_str().unwrap().to_string();
    // A retry of the same call returns the same turn.
    let again = call(
        &coral,
        "timeline_begin_turn",
        with(json!({"text": "查一下北京天气", "source_id": "msg-1", "timezone": "Asia/Shanghai"})),
    );
    assert_eq!(
        (again["turn_id"].as_str(), &again["created"]),
        (Some(turn.as_str()), &json!(false))
    );

    let page = "北京今天晴，25°C，空气质量优。".repeat(80);
    let rec = call(
        &coral,
        "timeline_record_tool",
        with(
            json!({"turn_id": turn, "tool_name": "web_search", "call_id": "call_1",
                    "input": {"query": "北京天气"}, "result": page, "result_source_id": "obs-1"}),
        ),
    );
    assert_eq!(rec["result"]["source_id"], "obs-1");
    call(
        &coral,
        "timeline_append_action",
        with(
            json!({"turn_id": turn, "tool_name": "calc", "call_id": "call_2", "arguments": {"x": 1}}),
        ),
    );
    let pending = refused(
        &coral,
        "timeline_complete_turn",
        with(json!({"turn_id": turn, "final_text": "too early"})),
    );
    assert!(pending.starts_with("pending_actions:"), "{pending}");
    call(
        &coral,
        "timeline_append_observation",
        with(json!({"turn_id": turn, "tool_name": "calc", "call_id": "call_2", "result": "2"})),
    );
    let done = call(
        &coral,
        "timeline_complete_turn",
        with(json!({"turn_id": turn, "final_text": "北京今天晴，25°C。"})),
    );
    assert_eq!(done["turn"]["status"], "completed");
    assert_eq!(done["turn"]["settlement"]["folded"], 1);
    assert!(done["turn"]["settlement"]["saved_tokens"].as_u64().unwrap() > 100);

    let h = call(&coral, "timeline_history", ns.clone());
    assert_eq!(h["format"], "openai");
    let card = h["messages"][2]["content"].as_str().unwrap();
    assert!(card.starts_with("[compact_reloadable]\ntime: "), "{card}");
    assert!(card.ends_with(r#"open_memory(memory_id="obs-1", view="content", detail="full")"#));
    assert_eq!(
        h["messages"][4]["content"], "2",
        "short results stay inline"
    );
    let plain = call(&coral, "timeline_history", with(json!({"format": "plain"})));
    assert_eq!(plain["messages"][1]["role"], "assistant");
    assert_eq!(h, call(&coral, "timeline_history", ns.clone()), "stable");

    // The model's read tools.
    let opened = call(
        &coral,
        "open_memory",
        with(json!({"memory_id": "obs-1", "view": "content"})),
    );
    assert_eq!(
        (opened["ok"].as_bool(), opened["status"].as_str()),
        (Some(true), Some("ok"))
    );
    assert_eq!(opened["memory"]["content"], page.as_str());
    let read = call(
        &coral,
        "read_timeline",
        with(json!({"anchor_source_id": "obs-1", "before_turns": 0, "after_turns": 0})),
    );
    assert_eq!(read["status"], "ok");
    assert_eq!(read["units"][0]["entries"].as_array().unwrap().len(), 6);
    let by_time = call(
        &coral,
        "read_timeline",
        with(
            json!({"time_range": {"start_at": "2000-01-01 00:00", "end_at": "2100-01-01 00:00"},
                    "timezone": "Asia/Shanghai"}),
        ),
    );
    assert_eq!(by_time["total_units"], 1);
    let bad = call(
        &coral,
        "read_timeline",
        with(json!({"date_from": "2026-04-10", "time_periods": ["中午"]})),
    );
    assert_eq!(
        (bad["ok"].as_bool(), bad["status"].as_str()),
        (Some(false), Some("invalid_filter"))
    );
    let other_user = call(
        &coral,
        "open_memory",
        json!({"memory_id": "obs-1", "user_id": "u2", "conversation_id": "chat-1"}),
    );
    assert_eq!(other_user["status"], "empty");
    assert!(other_user.get("memory").is_none());

    let m = call(&coral, "timeline_metrics", ns.clone());
    assert_eq!(m["metrics"]["completed_turns"], 1);
    assert_eq!(m["metrics"]["folded_results"], 1);
    let t = call(&coral, "timeline_turn", with(json!({"turn_id": turn})));
    assert_eq!(t["turn"]["entries"], 6);
    let r = call(&coral, "timeline_recover", with(json!({"idle_seconds": 0})));
    assert_eq!(
        (r["orphaned"].as_u64(), r["stale"].as_array().map(Vec::len)),
        (Some(0), Some(0))
    );
    // Standalone entries.
    let e = call(
        &coral,
        "timeline_record_entry",
        with(json!({"kind": "event.reminder", "text": "15:00 周会", "payload": {"at": "15:00"}})),
    );
    assert_eq!(e["seq_no"], 7);
}

#[test]
fn refused_writes_change_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    let turn = call(&coral, "timeline_begin_turn", json!({"text": "hi"}))["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    call(
        &coral,
        "timeline_record_tool",
        json!({"turn_id": turn, "tool_name": "shell", "call_id": "c1", "result": "ok"}),
    );
    let before = files(&coral);
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "timeline_begin_turn",
            json!({"text": "x", "kind": "Message"}),
            "invalid_input:",
        ),
        (
            "timeline_begin_turn",
            json!({"text": "x", "timezone": "Asia/Beijing"}),
            "invalid_input:",
        ),
        (
            "timeline_begin_turn",
            json!({"text": "x", "policy": "sometimes"}),
            "invalid_input:",
        ),
        (
            "timeline_begin_turn",
            json!({"text": "  "}),
            "invalid_input:",
        ),
        (
            "timeline_begin_turn",
            json!({}),
            "missing required argument \"text\"",
        ),
        (
            "timeline_begin_turn",
            json!({"text": "x", "payload": [1]}),
            "must be an object",
        ),
        (
            "timeline_begin_turn",
            json!({"text": "x", "timestamp": -1}),
            "from 0",
        ),
        (
            "timeline_record_tool",
            json!({"turn_id": "nope", "tool_name": "shell", "call_id": "c2", "result": "r"}),
            "unknown_turn:",
        ),
        (
            "timeline_record_tool",
            json!({"turn_id": turn, "tool_name": "shell", "call_id": "c1", "result": "other"}),
            "conflict:",
        ),
        (
            "timeline_record_tool",
            json!({"turn_id": turn, "tool_name": "web search", "call_id": "c3", "result": "r"}),
            "invalid_input:",
        ),
        (
            "timeline_record_tool",
            json!({"turn_id": turn, "tool_name": "shell", "call_id": "c4", "result": "r", "user_id": "other"}),
            "unknown_turn:",
        ),
        (
            "timeline_append_observation",
            json!({"turn_id": turn, "tool_name": "shell", "call_id": "ghost", "result": "r"}),
            "invalid_input:",
        ),
        (
            "timeline_complete_turn",
            json!({"turn_id": turn, "kind": "message.assistant"}),
            "invalid_input:",
        ),
        (
            "timeline_complete_turn",
            json!({"turn_id": turn, "final_text": ""}),
            "invalid_input:",
        ),
        (
            "timeline_abort_turn",
            json!({"turn_id": "bad id"}),
            "invalid_input:",
        ),
        (
            "timeline_record_entry",
            json!({"kind": "message.user", "text": "x", "origin": "robot"}),
            "invalid_input:",
        ),
        (
            "timeline_history",
            json!({"format": "anthropic"}),
            "invalid_input:",
        ),
        (
            "timeline_recover",
            json!({"idle_seconds": "soon"}),
            "must be a number",
        ),
    ];
    for (tool, args, needle) in cases {
        let m = refused(&coral, tool, args.clone());
        assert!(
            m.contains(needle),
            "{tool} {args}: {m:?} should contain {needle:?}"
        );
        assert_eq!(files(&coral), before, "{tool} {args} changed the database");
    }
}

#[test]
fn nested_and_list_arguments_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    for (args, needle) in [
        (
            json!({"time_range": {"start_at": "2026-04-10 08:00"}}),
            "missing required argument \"time_range.end_at\"",
        ),
        (
            json!({"time_range": {"start_at": "a", "end_at": "b", "tz": "x"}}),
            "unknown argument \"time_range.tz\"",
        ),
        (
            json!({"time_range": {"start_at": 1, "end_at": "b"}}),
            "\"time_range.start_at\" must be a string",
        ),
        (json!({"time_range": "today"}), "must be an object"),
        (
            json!({"date_from": "2026-04-10", "time_periods": "上午"}),
            "must be a list of strings",
        ),
        (
            json!({"date_from": "2026-04-10", "time_periods": ["上午", 3]}),
            "must be a list of strings",
        ),
        (
            json!({"anchor_source_id": "x", "before_turns": 51}),
            "from 0 to 50",
        ),
    ] {
        let m = refused(&coral, "read_timeline", args.clone());
        assert!(
            m.contains(needle),
            "{args}: {m:?} should contain {needle:?}"
        );
    }
    assert!(
        !coral.timeline_path().exists(),
        "argument errors never open the timeline"
    );
}

#[test]
fn schemas_keep_memcore_argument_names_and_mark_transports() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/memcore_test_vectors.json"
    );
    let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut seen = Vec::new();
    for upstream in golden["native_tool_parameter_schemas_plain_descriptions_stripped"]
        .as_array()
        .unwrap()
    {
        let name = upstream["name"].as_str().unwrap();
        // load_material reads the host's own files: a host tool, not part of the timeline.
        if name == "load_material" {
            continue;
        }
        seen.push(name);
        let ours = tools().iter().find(|t| t.name == name).unwrap();
        assert!(ours.on_mcp(), "{name} is a model tool");
        let schema = ours.input_schema();
        let props = schema["properties"].as_object().unwrap();
        // Opening several ids at once and open_memory's projection are not offered: one id per
        // call, and `detail` chooses between the stored body and what the chat shows.
        let later = ["memory_ids", "projection"];
        for arg in upstream["parameters"]["properties"]
            .as_object()
            .unwrap()
            .keys()
        {
            if name == "open_memory" && later.contains(&arg.as_str()) {
                continue;
            }
            assert!(props.contains_key(arg), "{name} lacks {arg}");
        }
        if name == "read_timeline" {
            assert_eq!(
                schema["properties"]["time_range"]["required"],
                upstream["parameters"]["properties"]["time_range"]["required"]
            );
            assert_eq!(
                schema["properties"]["time_periods"]["items"]["type"],
                "string"
            );
        }
    }
    assert_eq!(
        seen,
        [
            "retrieve_for_turn",
            "browse_memory",
            "open_memory",
            "read_timeline"
        ]
    );
    let writes: Vec<&str> = tools()
        .iter()
        .filter(|t| !t.on_mcp())
        .map(|t| t.name)
        .collect();
    for w in [
        "timeline_begin_turn",
        "timeline_record_tool",
        "timeline_complete_turn",
        "timeline_history",
    ] {
        assert!(writes.contains(&w), "{w} missing from {writes:?}");
    }
}

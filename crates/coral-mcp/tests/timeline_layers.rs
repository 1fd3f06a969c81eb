//! Timeline summaries through the facade with a real HTTP endpoint on loopback standing in for
//! the remote LLM: no model configured, the endpoint down, a malformed answer (each writes
//! nothing), then a good answer; and the model tools on the result (`retrieve_for_turn` with
//! the engine's embedder, `browse_memory`, `open_memory` sources) plus the host's
//! `timeline_context`.

use coral_mcp::tools::{CallTool, ToolError};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use coral::timeline::{LayerSettings, LlmSummaries, Namespace, TimelineError, parse_zone};
use coral::{Config, Coral, HashEmbedder, llm_settings};
use coral_mcp::tools::tools;
use serde_json::{Value, json};

/// A completion server on loopback answering `answers` in order, one connection each, each
/// after reading the whole request and then waiting `delay`; returns its base URL and the
/// request bodies it saw. A client that gave up before the answer costs nothing.
fn fake_llm_after(
    delay: std::time::Duration,
    answers: Vec<String>,
) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for answer in answers {
            let (mut stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            seen.push(String::from_utf8_lossy(&body).into_owned());
            std::thread::sleep(delay);
            let payload = json!({"choices": [{"message": {"content": answer}}]}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{payload}",
                payload.len()
            );
        }
        seen
    });
    (url, handle)
}

/// [`fake_llm_after`] without a delay.
fn fake_llm(answers: Vec<String>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    fake_llm_after(std::time::Duration::ZERO, answers)
}

fn open(dir: &Path, base_url: &str) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.llm.base_url = base_url.to_string();
    config.llm.api_key = "test-key".into();
    // Hash vectors vote too (by default they do not), so the vector ranking is exercised.
    config.retrieval.hybrid.hash_vector = 1.0;
    Coral::open_with(config, Arc::new(HashEmbedder::new(64).unwrap())).unwrap()
}

fn call(coral: &Coral, tool: &str, args: Value) -> Value {
    coral
        .call_tool(tool, &args)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
}

fn failed(coral: &Coral, tool: &str, args: Value) -> String {
    match coral.call_tool(tool, &args) {
        Err(ToolError::Failed(m)) => m,
        other => panic!("{tool} {args}: expected a failure, got {other:?}"),
    }
}

fn ns() -> Value {
    json!({"user_id": "u1", "conversation_id": "chat-1"})
}

/// The namespace and the Shanghai zone, for the tools that read or compact.
fn zoned() -> Value {
    with(json!({"timezone": "Asia/Shanghai"}))
}

fn with(extra: Value) -> Value {
    let mut v = ns();
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

/// 40 finished turns about a trip to Hangzhou, then 10 about a tax form: far past the 12,000
/// token trigger.
fn chat(coral: &Coral) {
    for i in 0..50 {
        let topic = if i < 40 {
            format!("第{i}次聊杭州西湖旅行的行程安排，住在湖滨的酒店，预算三千元。")
        } else {
            format!("第{i}次讨论个人所得税汇算清缴的表格怎么填写。")
        };
        let begun = call(
            coral,
            "timeline_begin_turn",
            with(
                json!({"text": topic.repeat(6), "timestamp": 1_775_779_200.0 + i as f64 * 3600.0}),
            ),
        );
        let turn = begun["turn_id"].as_str().unwrap().to_string();
        call(
            coral,
            "timeline_complete_turn",
            with(json!({
                "turn_id": turn,
                "final_text": "好的，我记下了这些安排，会按照预算和时间帮你规划。".repeat(8),
                "timestamp": 1_775_779_200.0 + i as f64 * 3600.0 + 60.0,
            })),
        );
    }
}

fn timeline_files(coral: &Coral) -> Vec<u8> {
    let db = coral.timeline_path();
    let mut bytes = std::fs::read(&db).unwrap();
    bytes.extend(std::fs::read(db.with_extension("sqlite3-wal")).unwrap_or_default());
    bytes
}

#[test]
fn summaries_through_a_loopback_llm_and_the_model_tools_on_them() {
    let dir = tempfile::tempdir().unwrap();

    // No model configured: a clear error, nothing written.
    let coral = open(dir.path(), "");
    chat(&coral);
    let ctx = call(&coral, "timeline_context", zoned());
    assert_eq!(ctx["compaction_due"], true);
    let before = timeline_files(&coral);
    let m = failed(&coral, "timeline_compact", zoned());
    assert!(
        m.starts_with("llm_failed:") && m.contains("llm.base_url"),
        "{m}"
    );
    assert_eq!(timeline_files(&coral), before);
    drop(coral);

    // The endpoint is down.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let coral = open(dir.path(), &down);
    let before = timeline_files(&coral);
    let m = failed(&coral, "timeline_compact", zoned());
    assert!(m.starts_with("llm_failed:"), "{m}");
    assert_eq!(timeline_files(&coral), before);
    drop(coral);

    // A malformed answer, then a good one: the second call succeeds.
    let good = json!({
        "title": "杭州西湖旅行计划",
        "summary": "用户计划去杭州西湖旅行，住湖滨酒店，预算三千元。",
        "hint": "问到杭州行程或预算时",
        "entity_anchors": ["杭州西湖", "湖滨酒店"],
        "topic_terms": ["旅行计划"],
    })
    .to_string();
    let (url, server) = fake_llm(vec!["这不是 JSON".into(), good]);
    let coral = open(dir.path(), &url);
    let before = timeline_files(&coral);
    let m = failed(&coral, "timeline_compact", zoned());
    assert!(m.contains("not a JSON object"), "{m}");
    assert_eq!(timeline_files(&coral), before);
    let report = call(&coral, "timeline_compact", zoned());
    let summary_id = report["episodic"]["memory_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(summary_id.starts_with("sum-"));
    assert!(report["summarised_units"].as_u64().unwrap() >= 20);
    let requests = server.join().unwrap();
    assert_eq!(requests.len(), 2);
    // The transcript went as quoted data with date headers, the key never in the body.
    assert!(
        requests[1].contains("[日期 2026-04-10 周五]"),
        "{}",
        &requests[1][..400]
    );
    assert!(!requests[1].contains("test-key"));

    // The context now starts with the summary, and the oldest turns left the raw window.
    let ctx = call(&coral, "timeline_context", zoned());
    let text = ctx["text"].as_str().unwrap();
    assert!(text.contains("杭州西湖旅行计划"));
    assert!(!text.contains("第0次聊杭州"));
    assert_eq!(ctx["episodic"], json!([summary_id]));

    // retrieve_for_turn finds summarised turns (not visible any more) by words and vectors.
    let r = call(
        &coral,
        "retrieve_for_turn",
        with(
            json!({"timezone": "Asia/Shanghai", "query": "第3次聊杭州西湖的酒店", "entity_anchors": ["湖滨"]}),
        ),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["status"], "ok");
    assert!(r["dense_model"].as_str().unwrap().starts_with("hash/64"));
    let first = &r["hits"][0];
    assert_eq!(first["layer"], "raw");
    assert!(
        first["text"].as_str().unwrap().contains("第3次聊杭州"),
        "{first}"
    );
    assert_eq!(first["dual_hit"], true);
    assert!(first["turn"]["entries"].as_array().unwrap().len() >= 2);
    // Only within a time window: the first day in Shanghai.
    let r = call(
        &coral,
        "retrieve_for_turn",
        with(
            json!({"timezone": "Asia/Shanghai", "query": "杭州", "time_hint": {"date_label": "2026-04-10"}, "limit": 50}),
        ),
    );
    for hit in r["hits"].as_array().unwrap() {
        assert!(
            hit["time"].as_str().unwrap().starts_with("2026-04-10"),
            "{hit}"
        );
    }
    let r = call(
        &coral,
        "retrieve_for_turn",
        with(
            json!({"timezone": "Asia/Shanghai", "query": "杭州", "time_hint": {"date_label": "2026-04-10", "start_ts": 1}}),
        ),
    );
    assert_eq!(r["status"], "invalid_filter");
    assert_eq!(r["ok"], false);

    // browse_memory lists the summary by a shorter keyword; open_memory opens its sources.
    let b = call(&coral, "browse_memory", with(json!({"keywords": ["西湖"]})));
    assert_eq!(b["total"], 1);
    assert_eq!(b["cards"][0]["keyword_hits"][0]["term"], "杭州西湖");
    let none = call(
        &coral,
        "browse_memory",
        with(json!({"keywords": ["杭州西湖旅游攻略"]})),
    );
    assert_eq!(none["status"], "empty");
    let opened = call(
        &coral,
        "open_memory",
        with(json!({"memory_id": summary_id, "view": "sources", "page_size": 3})),
    );
    assert_eq!(opened["status"], "ok");
    let sources = &opened["summary"]["sources"];
    assert_eq!(sources["units"].as_array().unwrap().len(), 3);
    assert!(sources["next_cursor"].is_string());
    let next = call(
        &coral,
        "open_memory",
        with(
            json!({"memory_id": summary_id, "view": "sources", "page_size": 3,
                    "cursor": sources["next_cursor"]}),
        ),
    );
    assert_ne!(
        next["summary"]["sources"]["units"][0]["turn_id"],
        sources["units"][0]["turn_id"]
    );
    // Tool lists: the two model tools are on MCP, the host's two are not.
    let on_mcp: Vec<&str> = tools()
        .iter()
        .filter(|t| t.on_mcp())
        .map(|t| t.name)
        .collect();
    for name in ["retrieve_for_turn", "browse_memory"] {
        assert!(on_mcp.contains(&name));
    }
    for name in ["timeline_context", "timeline_compact"] {
        assert!(!on_mcp.contains(&name));
    }
}

#[test]
fn a_model_slower_than_the_timeout_writes_nothing_and_a_retry_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let good = json!({"title": "杭州", "summary": "杭州西湖旅行"}).to_string();
    let (url, _slow) = fake_llm_after(std::time::Duration::from_secs(3), vec![good.clone()]);
    let coral = open(dir.path(), &url);
    chat(&coral);
    let ns = Namespace::new("u1", "chat-1");
    let timeline = coral.timeline().unwrap();
    let settings = LayerSettings::default();
    let zone = parse_zone("UTC").unwrap();
    let mut s = llm_settings(&coral.config()).unwrap();
    s.timeout = std::time::Duration::from_millis(300);
    let llm = LlmSummaries::with_settings(s).unwrap();
    let before = timeline_files(&coral);
    let started = std::time::Instant::now();
    let err = timeline
        .compact(&ns, &settings, &llm, zone, 1_775_900_000.0)
        .unwrap_err();
    assert!(matches!(err, TimelineError::Llm(_)), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(timeline_files(&coral), before);
    let (fast, _fast) = fake_llm(vec![good]);
    let mut s = llm_settings(&coral.config()).unwrap();
    s.base_url = fast;
    let llm = LlmSummaries::with_settings(s).unwrap();
    let report = timeline
        .compact(&ns, &settings, &llm, zone, 1_775_900_000.0)
        .unwrap();
    assert!(report.episodic.is_some());
}

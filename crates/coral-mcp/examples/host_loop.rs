//! A host loop over Coral's timeline (docs/timeline.md, "Example: a host loop"), runnable as
//! `cargo run -p coral-mcp --example host_loop`: for each user message, begin a turn; send the
//! surface (memory context and the open turn) to the model; run the tools it calls and record
//! each exchange; complete the turn with its answer; compact when the surface says so.
//!
//! The model is a loopback HTTP server speaking the OpenAI chat-completions protocol, standing
//! in for a remote one; it also writes the summaries. The host calls the same tools as
//! `POST /rpc` of `coral http` (through the registry here), and dispatches the model's reads
//! through a registry pinned to the user, as `coral mcp --user` does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;

use anyhow::{Context as _, bail};
use coral::Coral;
use coral_mcp::tools::{CallTool, Pin, Registry, Scope};
use serde_json::{Value, json};

/// What one run did.
#[derive(Debug, Default)]
pub struct HostReport {
    /// Turns completed.
    pub turns: usize,
    /// Tool calls the model made (the host's tool and Coral's read tools).
    pub tool_calls: usize,
    /// Compactions that wrote a summary.
    pub compactions: usize,
    /// What `open_memory` gave back when the model followed a reload card.
    pub reopened: Option<String>,
    /// The body the host's tool returned that the card stood for.
    pub original: Option<String>,
    /// The model's last answer.
    pub last_answer: String,
}

const USER: &str = "mei";
const CONVERSATION: &str = "travel";

/// The host's own tool: a weather lookup with a long answer (it folds into a reload card).
fn lookup(city: &str) -> String {
    format!("{city} 未来七天逐小时天气：晴转多云，气温 18~26°C，东南风 2 级。\n").repeat(40)
}

/// Tools offered to the model: the host's lookup and Coral's `open_memory`.
fn tool_specs() -> Value {
    json!([
        {"type": "function", "function": {"name": "lookup",
            "description": "weather of a city", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "open_memory",
            "description": "reopen a memory a reload card names", "parameters": {"type": "object",
            "properties": {"memory_id": {"type": "string"}, "view": {"type": "string"},
                           "detail": {"type": "string"}}, "required": ["memory_id"]}}}
    ])
}

/// Run `messages` (the user's lines) through the loop in a new data directory `dir`.
pub fn run(dir: &Path, messages: &[&str]) -> anyhow::Result<HostReport> {
    let model = start_model()?;
    let config = dir.join("coral_config.json");
    std::fs::write(
        &config,
        json!({
            "embedding": {"embedder": "hash"},
            "llm": {"base_url": model, "api_key": "loopback", "model": "loopback"},
            "timeline": {"raw_token_trigger": 300, "timezone": "Asia/Shanghai"},
        })
        .to_string(),
    )?;
    let coral = Coral::open(&config)?;
    // The model's tool calls go through a registry pinned to this user, like `coral mcp
    // --user mei`: whatever it passes, it reads only this user's timeline.
    let model_tools = Registry::builtin().with_scope(Scope::Pinned(
        Pin::new("default", USER, "default", Some(CONVERSATION)).map_err(anyhow::Error::msg)?,
    ));
    let ns = json!({"user_id": USER, "conversation_id": CONVERSATION});
    let with = |extra: Value| {
        let mut v = ns.clone();
        if let (Some(a), Some(b)) = (v.as_object_mut(), extra.as_object()) {
            a.extend(b.clone());
        }
        v
    };
    let host = |tool: &str, args: Value| {
        coral
            .call_tool(tool, &args)
            .with_context(|| format!("{tool} {args}"))
    };
    let mut report = HostReport::default();
    for text in messages {
        // 1. Begin the turn with the user's message.
        let turn = host("timeline_begin_turn", with(json!({"text": text})))?["turn_id"]
            .as_str()
            .context("no turn id")?
            .to_string();
        let mut due;
        // 2. Ask the model until it answers; every tool call is recorded in the turn.
        let answer = loop {
            let surface = host("timeline_surface", with(json!({})))?;
            due = surface["compaction_due"] == true || surface["rollup_due"] == true;
            let mut request = vec![json!({"role": "system",
                "content": "You are a travel assistant. 你是旅行助手。"})];
            request.extend(surface["messages"].as_array().cloned().unwrap_or_default());
            let reply = chat(&model, &request)?;
            let Some(calls) = reply["tool_calls"].as_array().filter(|c| !c.is_empty()) else {
                break reply["content"].as_str().unwrap_or_default().to_string();
            };
            for call in calls {
                report.tool_calls += 1;
                let name = call["function"]["name"].as_str().unwrap_or_default();
                let id = call["id"].as_str().unwrap_or_default();
                let input: Value =
                    serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
                        .unwrap_or(json!({}));
                let result = match name {
                    "lookup" => {
                        let body = lookup(input["city"].as_str().unwrap_or("北京"));
                        report.original = Some(body.clone());
                        body
                    }
                    "open_memory" => {
                        let opened = model_tools
                            .call(&coral, "open_memory", &input)
                            .map_err(|e| anyhow::anyhow!("{e}"))?;
                        let content = opened["memory"]["content"].as_str().unwrap_or_default();
                        report.reopened = Some(content.to_string());
                        // What the model sees: the answer without the host's receipt.
                        let mut shown = opened.clone();
                        if let Some(m) = shown.as_object_mut() {
                            m.remove("receipt");
                        }
                        shown.to_string()
                    }
                    other => bail!("the model called an unknown tool {other:?}"),
                };
                host(
                    "timeline_record_tool",
                    with(json!({"turn_id": turn, "tool_name": name, "call_id": id,
                                "input": input, "result": result})),
                )?;
            }
        };
        // 3. Complete the turn: long results fold into reload cards from now on.
        host(
            "timeline_complete_turn",
            with(json!({"turn_id": turn, "final_text": answer})),
        )?;
        report.turns += 1;
        report.last_answer = answer;
        // 4. Compact when due, off the reply's critical path (here, after it).
        let status = host("timeline_context", with(json!({})))?;
        if due || status["compaction_due"] == true || status["rollup_due"] == true {
            let done = host("timeline_compact", with(json!({})))?;
            report.compactions += usize::from(done["episodic"].is_object());
        }
    }
    Ok(report)
}

/// One chat completion from the model at `base`: its message.
fn chat(base: &str, messages: &[Value]) -> anyhow::Result<Value> {
    let body = json!({"model": "loopback", "messages": messages, "tools": tool_specs()});
    let reply: Value = ureq::post(&format!("{base}/chat/completions"))
        .set("Content-Type", "application/json")
        .send_string(&body.to_string())?
        .into_json()?;
    Ok(reply["choices"][0]["message"].clone())
}

/// The loopback model: answers chat turns (asking for tools when it needs them) and writes
/// summaries, on a free loopback port; returns its base URL.
fn start_model() -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(match stream.try_clone() {
                Ok(s) => s,
                Err(_) => continue,
            });
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
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let payload = json!({"choices": [{"message": respond(&request)}]}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{payload}",
                payload.len()
            );
        }
    });
    Ok(url)
}

/// What the loopback model says to `request`.
fn respond(request: &Value) -> Value {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .first()
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    if request.get("tools").is_none() {
        // A summary request from Coral's compaction.
        let content = if system.contains("episodic memory") {
            json!({"title": "行程与天气", "summary": "用户在规划旅行，查过天气并看过原始数据。",
                   "hint": "问到行程或天气时", "entity_anchors": ["北京"], "topic_terms": ["天气"]})
        } else {
            json!({"memories": [{"title": "旅行偏好", "content": "用户出行前会先查天气。",
                   "facet": "preference", "entity_anchors": ["北京"], "topic_terms": ["天气"]}]})
        };
        return json!({"role": "assistant", "content": content.to_string()});
    }
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        let size = last["content"].as_str().map_or(0, str::len);
        return json!({"role": "assistant",
                      "content": format!("好的，我看过了（{size} 字节的结果）。")});
    }
    let asked = last["content"].as_str().unwrap_or_default();
    if asked.contains("原始") {
        // Follow the reload card the context shows, exactly as it is printed.
        let context: String = messages
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect();
        if let Some(at) = context.find("reload: open_memory(memory_id=\"") {
            let rest = &context[at + "reload: open_memory(memory_id=\"".len()..];
            let id = rest.split('"').next().unwrap_or_default();
            let args = json!({"memory_id": id, "view": "content", "detail": "full"});
            return json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_reopen", "type": "function",
                "function": {"name": "open_memory", "arguments": args.to_string()}}]});
        }
    }
    if asked.contains("天气") {
        return json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_weather", "type": "function",
            "function": {"name": "lookup", "arguments": "{\"city\":\"北京\"}"}}]});
    }
    json!({"role": "assistant", "content": format!("收到：{}", asked.chars().take(20).collect::<String>())})
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("coral-host-loop-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let report = run(
        &dir,
        &[
            "明天北京天气怎么样？",
            "把刚才天气的原始数据给我看看",
            "帮我规划三天的行程，第一天去故宫，第二天去长城，第三天逛胡同。",
            "第二天的午饭推荐一家烤鸭店。",
            "住宿预算每晚八百元，帮我选酒店。",
            "再帮我整理一份行李清单。",
        ],
    )?;
    println!(
        "{} turns, {} tool calls, {} compaction(s); the card reopened {} bytes exactly: {}; last \
         answer: {}",
        report.turns,
        report.tool_calls,
        report.compactions,
        report.reopened.as_deref().map_or(0, str::len),
        report.reopened == report.original,
        report.last_answer
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

//! Pinned namespaces over the real transports (docs/timeline.md, "Pinned namespaces"): a
//! `coral mcp --user alice` asked, with every argument a model could try, for bob's data gives
//! nothing of bob's on any read tool; the call a reload card prints opens the card's entry
//! over MCP and HTTP for a user and conversation that are not "default"; serving every
//! namespace takes an explicit opt-in, and over HTTP a token.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use coral::Coral;
use coral::timeline::{LayerSettings, Namespace, SummaryLlm, parse_zone};
use coral_mcp::tools::CallTool;
use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");
/// 2026-04-10 08:00 in Shanghai.
const T0: f64 = 1_775_779_200.0;
/// Text that is only in bob's timeline and never in any request: seeing it anywhere in a reply
/// to alice's server is a leak.
const BOB_PRIVATE: &str = "bob-private-7f3a";
const ALICE_PRIVATE: &str = "alice-private-51c2";
const CONVERSATION: &str = "chat-7";
const ENV: [&str; 6] = [
    "CORAL_TENANT_ID",
    "CORAL_USER_ID",
    "CORAL_DOMAIN_ID",
    "CORAL_CONVERSATION_ID",
    "CORAL_ANY_NAMESPACE",
    "CORAL_HTTP_TOKEN",
];

fn config_in(dir: &Path) -> PathBuf {
    let config = dir.join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    config
}

/// A summariser whose titles and bodies carry the private marker of the transcript it reads.
struct Marker;

impl SummaryLlm for Marker {
    fn complete(&self, _system: &str, user: &str) -> Result<String, String> {
        let marker = if user.contains(BOB_PRIVATE) {
            BOB_PRIVATE
        } else {
            ALICE_PRIVATE
        };
        Ok(json!({
            "title": format!("summary {marker}"),
            "summary": format!("they discussed {marker} BOBSECRET ALICESECRET"),
            "hint": "when asked",
            "entity_anchors": [marker],
            "topic_terms": ["secret"],
        })
        .to_string())
    }
}

/// Three finished turns per user with long tool results (settled into cards), compacted once,
/// all in conversation `chat-7`. Returns bob's summary id and one of bob's cursors.
fn populate(config: &Path) -> (String, String) {
    let coral = Coral::open(config).unwrap();
    let mut bob_summary = String::new();
    for (user, private, word) in [
        ("alice", ALICE_PRIVATE, "ALICESECRET"),
        ("bob", BOB_PRIVATE, "BOBSECRET"),
    ] {
        let ns = json!({"user_id": user, "conversation_id": CONVERSATION});
        let with = |extra: Value| {
            let mut v = ns.clone();
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            v
        };
        for i in 0..3 {
            let at = T0 + f64::from(i) * 3_600.0;
            let begun = coral
                .call_tool(
                    "timeline_begin_turn",
                    &with(json!({"text": format!("{word} question {i} {private}"),
                                 "timestamp": at, "timezone": "Asia/Shanghai"})),
                )
                .unwrap();
            let turn = begun["turn_id"].as_str().unwrap().to_string();
            coral
                .call_tool(
                    "timeline_record_tool",
                    &with(
                        json!({"turn_id": turn, "tool_name": "shell", "call_id": format!("c{i}"),
                                 "result": format!("{word} {private} log line\n").repeat(40),
                                 "result_source_id": format!("{user}-log-{i}"),
                                 "timestamp": at + 1.0}),
                    ),
                )
                .unwrap();
            coral
                .call_tool(
                    "timeline_complete_turn",
                    &with(
                        json!({"turn_id": turn, "final_text": format!("{word} answer {private}"),
                                 "timestamp": at + 2.0}),
                    ),
                )
                .unwrap();
        }
        let settings = LayerSettings {
            raw_token_trigger: 100,
            raw_token_batch_ratio: 0.5,
            ..LayerSettings::default()
        };
        let report = coral
            .timeline()
            .unwrap()
            .compact(
                &Namespace::new(user, CONVERSATION),
                &settings,
                &Marker,
                parse_zone("UTC").unwrap(),
                T0 + 20_000.0,
            )
            .unwrap();
        let summary = report.episodic.expect("a summary").memory_id;
        if user == "bob" {
            bob_summary = summary;
        }
    }
    let page = coral
        .call_tool(
            "read_timeline",
            &json!({"user_id": "bob", "conversation_id": CONVERSATION, "date_from": "2026-04-10",
                    "page_token_budget": 50}),
        )
        .unwrap();
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_string();
    drop(coral);
    (bob_summary, cursor)
}

/// One `coral mcp` session with `flags`: initialise, call each tool, close stdin; the results
/// (`structuredContent`, or the error text) in order.
fn mcp(config: &Path, flags: &[&str], calls: &[(&str, Value)]) -> Vec<Value> {
    mcp_env(config, flags, &[], calls)
}

/// [`mcp`] with environment variables set.
fn mcp_env(
    config: &Path,
    flags: &[&str],
    env: &[(&str, &str)],
    calls: &[(&str, Value)],
) -> Vec<Value> {
    let mut command = Command::new(CORAL);
    command
        .arg("--config")
        .arg(config)
        .args(["-q", "mcp"])
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in ENV {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut input = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "pinning-test", "version": "1"}}})
    .to_string();
    input.push_str("\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    for (i, (tool, args)) in calls.iter().enumerate() {
        input.push_str(
            &json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                    "params": {"name": tool, "arguments": args}})
            .to_string(),
        );
        input.push('\n');
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "coral mcp {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut replies: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["id"].as_u64().is_some_and(|id| id > 0))
        .collect();
    replies.sort_by_key(|r| r["id"].as_u64());
    assert_eq!(replies.len(), calls.len());
    replies
        .into_iter()
        .map(|r| {
            let result = &r["result"];
            if result["isError"] == true {
                json!({"error": result["content"][0]["text"]})
            } else {
                result["structuredContent"].clone()
            }
        })
        .collect()
}

/// A running `coral http` with `flags` on a free loopback port.
struct Http {
    child: Child,
    url: String,
}

impl Http {
    fn start(config: &Path, flags: &[&str]) -> Http {
        let mut command = Command::new(CORAL);
        command
            .arg("--config")
            .arg(config)
            .args(["-q", "http", "--port", "0"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for var in ENV {
            command.env_remove(var);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let listening: Value = serde_json::from_str(&line).expect("address line");
        let url = format!("http://{}/rpc", listening["listening"].as_str().unwrap());
        Http { child, url }
    }

    fn call(&self, tool: &str, args: Value) -> (u16, Value) {
        let response = match ureq::post(&self.url)
            .set("Content-Type", "application/json")
            .send_string(&json!({"tool": tool, "args": args}).to_string())
        {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("transport error: {e}"),
        };
        let status = response.status();
        (
            status,
            serde_json::from_str(&response.into_string().unwrap()).unwrap(),
        )
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The arguments of the call a reload card prints:
/// `open_memory(memory_id="…", view="content", detail="full")`.
fn card_call(card: &str) -> Value {
    let line = card
        .lines()
        .find_map(|l| l.strip_prefix("reload: open_memory("))
        .expect("a reload line");
    let mut args = serde_json::Map::new();
    for part in line.trim_end_matches(')').split(", ") {
        let (key, value) = part.split_once('=').unwrap();
        args.insert(key.into(), json!(value.trim_matches('"')));
    }
    Value::Object(args)
}

#[test]
fn a_server_pinned_to_alice_gives_nothing_of_bob_on_any_read_tool() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let (bob_summary, bob_cursor) = populate(&config);
    let everything = json!({"date_from": "2026-04-01", "date_to": "2026-04-30"});
    let with = |base: &Value, extra: Value| {
        let mut v = base.clone();
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    // Every way a model could ask for bob's data, through each read tool.
    let probes: Vec<(&str, Value)> = vec![
        (
            "open_memory",
            json!({"memory_id": "bob-log-0", "view": "content"}),
        ),
        (
            "open_memory",
            json!({"memory_id": "bob-log-0", "view": "content", "user_id": "bob"}),
        ),
        (
            "open_memory",
            json!({"memory_id": "bob-log-1", "view": "content", "cross_conversation": true,
                   "conversation_id": CONVERSATION}),
        ),
        (
            "open_memory",
            json!({"memory_id": bob_summary, "view": "content"}),
        ),
        (
            "open_memory",
            json!({"memory_id": bob_summary, "view": "sources"}),
        ),
        (
            "open_memory",
            json!({"memory_id": "bob-log-0", "tenant_id": "other"}),
        ),
        (
            "read_timeline",
            with(
                &everything,
                json!({"cross_conversation": true, "projection": "full"}),
            ),
        ),
        (
            "read_timeline",
            with(
                &everything,
                json!({"user_id": "bob", "conversation_id": CONVERSATION}),
            ),
        ),
        (
            "read_timeline",
            json!({"anchor_source_id": "bob-log-1", "cross_conversation": true}),
        ),
        (
            "read_timeline",
            json!({"date_from": "2026-04-10", "page_token_budget": 50,
                   "conversation_id": CONVERSATION, "cursor": bob_cursor}),
        ),
        (
            "read_timeline",
            with(&everything, json!({"domain_id": "elsewhere"})),
        ),
        (
            "browse_memory",
            json!({"keywords": ["secret", "BOBSECRET"], "cross_conversation": true}),
        ),
        (
            "browse_memory",
            json!({"user_id": "bob", "conversation_id": CONVERSATION}),
        ),
        (
            "retrieve_for_turn",
            json!({"query": "BOBSECRET question answer log", "cross_conversation": true,
                   "include_visible": true}),
        ),
        (
            "retrieve_for_turn",
            json!({"query": "BOBSECRET", "within_memory_id": bob_summary,
                   "cross_conversation": true, "include_visible": true}),
        ),
        (
            "retrieve_for_turn",
            json!({"query": "BOBSECRET", "user_id": "bob", "include_visible": true}),
        ),
        (
            "retrieve_for_turn",
            json!({"query": "BOBSECRET", "tenant_id": "default", "user_id": "alice ",
                   "include_visible": true}),
        ),
    ];
    let probed: Vec<&str> = probes.iter().map(|(t, _)| *t).collect();
    for tool in [
        "open_memory",
        "read_timeline",
        "browse_memory",
        "retrieve_for_turn",
    ] {
        assert!(probed.contains(&tool), "{tool} is not probed");
    }
    let replies = mcp(&config, &["--user", "alice"], &probes);
    for ((tool, args), reply) in probes.iter().zip(&replies) {
        let text = reply.to_string();
        assert!(
            !text.contains(BOB_PRIVATE),
            "{tool} {args} leaked bob's data: {text}"
        );
    }
    // Arguments naming bob are refused outright, saying why.
    assert!(
        replies[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("outside this server's namespace")),
        "{}",
        replies[1]
    );
    // The same server finds alice's data, so the probes above could have found something.
    let own = mcp(
        &config,
        &["--user", "alice"],
        &[
            (
                "read_timeline",
                with(
                    &everything,
                    json!({"conversation_id": CONVERSATION, "projection": "full"}),
                ),
            ),
            (
                "retrieve_for_turn",
                json!({"query": "ALICESECRET question answer log", "conversation_id": CONVERSATION,
                       "include_visible": true}),
            ),
            (
                "browse_memory",
                json!({"keywords": ["secret"], "conversation_id": CONVERSATION}),
            ),
            (
                "open_memory",
                json!({"memory_id": "alice-log-0", "view": "content"}),
            ),
        ],
    );
    for reply in &own {
        assert!(reply.to_string().contains(ALICE_PRIVATE), "{reply}");
    }
    // And a server serving every namespace (the opt-in) does hand bob's data out: the probe
    // detects a leak when there is one.
    let open = mcp(
        &config,
        &["--any-namespace"],
        &[(
            "open_memory",
            json!({"memory_id": "bob-log-0", "view": "content", "user_id": "bob"}),
        )],
    );
    assert!(open[0].to_string().contains(BOB_PRIVATE), "{}", open[0]);
}

#[test]
fn the_call_a_card_prints_opens_its_entry_over_mcp_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    populate(&config);
    let http = Http::start(&config, &["--user", "alice"]);
    // The card as the host's history shows it.
    let (status, body) = http.call(
        "timeline_history",
        json!({"conversation_id": CONVERSATION, "timezone": "Asia/Shanghai"}),
    );
    assert_eq!(status, 200, "{body}");
    let messages = body["result"]["messages"].as_array().unwrap();
    let card = messages
        .iter()
        .find_map(|m| {
            m["content"]
                .as_str()
                .filter(|c| c.starts_with("[compact_reloadable]"))
        })
        .expect("a folded result");
    assert!(card.contains("time: 2026-04-10 16:00") || card.contains("time: 2026-04-10 08:00"));
    let call = card_call(card);
    assert_eq!(call["view"], "content");
    let expected_hash = card
        .lines()
        .find_map(|l| l.strip_prefix("result_hash: "))
        .unwrap()
        .to_string();
    let check = |reply: &Value, transport: &str| {
        assert_eq!(reply["status"], "ok", "{transport}: {reply}");
        let memory = &reply["memory"];
        let content = memory["content"].as_str().unwrap();
        assert!(content.contains(ALICE_PRIVATE), "{transport}: {reply}");
        assert_eq!(memory["result_hash"], expected_hash.as_str());
        assert_eq!(memory["conversation_id"], CONVERSATION);
    };
    // Over HTTP, exactly as printed: no namespace arguments.
    let (status, body) = http.call("open_memory", call.clone());
    assert_eq!(status, 200, "{body}");
    check(&body["result"], "http");
    // Over MCP, exactly as printed.
    let replies = mcp(
        &config,
        &["--user", "alice"],
        &[("open_memory", call.clone())],
    );
    check(&replies[0], "mcp");
    // A server for another user does not open it.
    let other = mcp(&config, &["--user", "carol"], &[("open_memory", call)]);
    assert_eq!(other[0]["status"], "empty", "{}", other[0]);
}

#[test]
fn serving_every_namespace_is_an_explicit_choice_and_needs_a_token_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = Command::new(CORAL);
        command.arg("--config").arg(&config).args(args);
        for var in ENV {
            command.env_remove(var);
        }
        for (k, v) in env {
            command.env(k, v);
        }
        let out = command.stdin(Stdio::null()).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["http", "--port", "0", "--any-namespace"], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("needs a token"), "{err}");
    let (code, err) = run(&["http", "--port", "0"], &[("CORAL_ANY_NAMESPACE", "1")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("needs a token"), "{err}");
    let (code, err) = run(&["mcp", "--user", "a"], &[("CORAL_ANY_NAMESPACE", "1")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("choose one"), "{err}");
    let (code, err) = run(&["mcp", "--user", ""], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("user_id is empty"), "{err}");
    // The environment and the config pin too.
    populate(&config);
    let by_env = mcp_env(
        &config,
        &[],
        &[("CORAL_USER_ID", "bob")],
        &[
            ("open_memory", json!({"memory_id": "alice-log-0"})),
            (
                "open_memory",
                json!({"memory_id": "bob-log-0", "view": "content"}),
            ),
        ],
    );
    assert_eq!(by_env[0]["status"], "empty", "{}", by_env[0]);
    assert!(by_env[1].to_string().contains(BOB_PRIVATE), "{}", by_env[1]);
    std::fs::write(
        &config,
        r#"{"embedding": {"embedder": "hash"}, "timeline": {"pin": {"user_id": "bob"}}}"#,
    )
    .unwrap();
    let replies = mcp(
        &config,
        &[],
        &[
            (
                "open_memory",
                json!({"memory_id": "bob-log-0", "view": "content"}),
            ),
            (
                "open_memory",
                json!({"memory_id": "alice-log-0", "user_id": "alice"}),
            ),
        ],
    );
    assert!(
        replies[0].to_string().contains(BOB_PRIVATE),
        "{}",
        replies[0]
    );
    assert!(replies[1]["error"].is_string(), "{}", replies[1]);
    // A tool cannot move the pin: it is the operator's.
    let coral = Coral::open(&config).unwrap();
    let refused = coral
        .call_tool(
            "coral_config_set",
            &json!({"key_path": "timeline.pin.user_id", "value": "alice"}),
        )
        .unwrap_err()
        .to_string();
    assert!(refused.contains("cannot be changed by a tool"), "{refused}");
}

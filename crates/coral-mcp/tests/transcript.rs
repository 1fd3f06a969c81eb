//! The original Coral's MCP transcript (`fixtures/compat/coral_mcp_transcript.json`: the exact
//! replies of its 16 tools), replayed against `coral mcp` over a real pipe: every key of every
//! reply is in Coral's reply too, with the same JSON type, and scores and heat keep the
//! original's four decimals. Values that differ run to run (ids, times, paths) or by design
//! (Coral's messages, its larger default capacity) are not compared.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

fn golden() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_mcp_transcript.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key path of `want` present in `got` with the same type; arrays compare their first
/// elements (the shape of one entry).
fn compare(path: &str, want: &Value, got: &Value, problems: &mut Vec<String>) {
    if kind(want) != kind(got) {
        problems.push(format!(
            "{path}: {} in the original, {} here ({got})",
            kind(want),
            kind(got)
        ));
        return;
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                // Keys that are dates or ids are data, not shape.
                let is_data = path.ends_with("last_14_days") || path.ends_with(".changed");
                let (key, gv) = if is_data {
                    match g.iter().next() {
                        Some((gk, gv)) => (gk.as_str(), gv),
                        None => continue,
                    }
                } else {
                    match g.get(k) {
                        Some(gv) => (k.as_str(), gv),
                        None => {
                            problems.push(format!("{path}.{k}: missing (original has {wv})"));
                            continue;
                        }
                    }
                };
                compare(&format!("{path}.{key}"), wv, gv, problems);
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            if let (Some(w0), Some(g0)) = (w.first(), g.first()) {
                compare(&format!("{path}[0]"), w0, g0, problems);
            } else if w.is_empty() != g.is_empty() {
                problems.push(format!(
                    "{path}: {} entries in the original, {} here",
                    w.len(),
                    g.len()
                ));
            }
        }
        _ => {}
    }
}

/// Every `score`, `heat` and component score has at most four decimals.
fn check_rounding(path: &str, v: &Value, problems: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}.{k}");
                if let Some(f) = x.as_f64()
                    && (k == "score" || k == "heat" || path.ends_with(".scores"))
                    && ((f * 10_000.0).round() / 10_000.0 - f).abs() > 1e-12
                {
                    problems.push(format!("{p}: {f} is not rounded to 4 places"));
                }
                check_rounding(&p, x, problems);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| check_rounding(path, x, problems)),
        _ => {}
    }
}

#[test]
fn every_tool_answers_with_the_original_keys_and_types() {
    let golden = golden();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    // The original's session had this memory already (its insert in the transcript merges).
    let seeded = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .args(["insert", "Translate product manuals in a formal register"])
        .output()
        .unwrap();
    assert!(seeded.status.success(), "{seeded:?}");
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(&config)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut id = 0;
    let mut request = |method: &str, params: Value| -> Value {
        id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{answer:?}: {e}"))
    };
    let init = request(
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {},
               "clientInfo": {"name": "transcript", "version": "1"}}),
    );
    let mut problems = Vec::new();
    compare(
        "initialize",
        &golden["initialize"]["result"],
        &init["result"],
        &mut problems,
    );
    // Thread ids differ run to run: the original's ids map to ours as threads are created.
    let mut ids: Vec<(String, String)> = Vec::new();
    let calls = golden["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 24);
    for (i, call) in calls.iter().enumerate() {
        let tool = call["tool"].as_str().unwrap();
        let mut args = call["arguments"].to_string();
        for (theirs, ours) in &ids {
            args = args.replace(theirs.as_str(), ours);
        }
        let reply = request(
            "tools/call",
            json!({"name": tool, "arguments": serde_json::from_str::<Value>(&args).unwrap()}),
        );
        let text = |r: &Value| -> Value {
            serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
        };
        let want = text(&call["response"]);
        let got = text(&reply);
        if tool == "thread_create" {
            ids.push((
                want["thread"]["thread_id"].as_str().unwrap().to_string(),
                got["thread"]["thread_id"].as_str().unwrap().to_string(),
            ));
        }
        let at = format!("call {i} {tool} {}", call["arguments"]);
        compare(&at, &want, &got, &mut problems);
        check_rounding(&at, &got, &mut problems);
        // `ok: false` bodies stay bodies: the same keys, whatever isError says.
        if want["ok"] == false {
            assert_eq!(got["ok"], false, "{at}: {got}");
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(
        problems.is_empty(),
        "{} differences from the original:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

//! `insert --stdin` and the other line-by-line commands: one JSON acknowledgement per input
//! line (`ack_lines`), and `--jsonl`'s operations.

use std::io::{BufRead, Write};

use coral::{Coral, Insert, InsertOptions, SearchOptions};
use coral_mcp::errln;
use serde_json::{Value, json};

use super::failure::Failure;
use super::time;

/// The JSON answer to an insert: its id and whether it was new.
pub(crate) fn insert_json(outcome: &Insert) -> serde_json::Value {
    json!({"item_id": outcome.id(), "inserted": outcome.inserted(), "redacted": outcome.redacted.len()})
}

/// Read stdin line by line; for every line, run `handle` and write exactly one JSON
/// acknowledgement line, flushed before the next line is read, so the n-th ack answers the
/// n-th line: the handler's object with `"ok": true`, or `{"line", "ok": false, "error"}`.
/// A blank line is such an error (there is nothing to store), like an empty `coral insert ""`.
/// Returns how many lines failed. An acknowledgement that cannot be written ends the stream
/// with an error naming its line and whether that line was stored.
pub(crate) fn ack_lines(
    mut handle: impl FnMut(&str) -> anyhow::Result<Value>,
) -> Result<usize, Failure> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut failures = 0usize;
    for (n, line) in stdin.split(b'\n').enumerate() {
        let line = line?;
        let line_no = n + 1;
        let result = match std::str::from_utf8(&line) {
            Err(_) => Err(anyhow::anyhow!("line {line_no} is not valid UTF-8")),
            Ok(text) => {
                let text = text.strip_suffix('\r').unwrap_or(text);
                if text.trim().is_empty() {
                    Err(anyhow::anyhow!(
                        "line {line_no} is blank: nothing was stored (remove blank lines, or \
                         give each line some text)"
                    ))
                } else {
                    handle(text)
                }
            }
        };
        let ack = match result {
            Ok(Value::Object(mut fields)) => {
                fields.entry("ok").or_insert(Value::Bool(true));
                Value::Object(fields)
            }
            Ok(other) => other,
            Err(e) => {
                failures += 1;
                json!({"line": line_no, "ok": false, "error": coral::bound_message(format!("{e:#}"))})
            }
        };
        let recorded = ack["ok"] == true;
        let written = serde_json::to_writer(&mut out, &ack)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            // The caller can no longer tell what was stored from what was not: stop reading,
            // and say where the stream stopped.
            return Err(anyhow::anyhow!(
                "cannot write the acknowledgement of line {line_no} to standard output ({e}): \
                 line {line_no} {}, and no later line was read",
                if recorded {
                    "was stored"
                } else {
                    "was not stored"
                }
            )
            .into());
        }
    }
    Ok(failures)
}

/// `insert --stdin`: one memory per line; one JSON acknowledgement line per memory, printed
/// and flushed only once the memory is durable.
pub(crate) fn insert_stream(
    coral: &Coral,
    importance: f64,
    project: Option<String>,
    at: Option<f64>,
    jsonl: bool,
) -> Result<u8, Failure> {
    let failures = ack_lines(|text| {
        if jsonl {
            let op = parse_jsonl(text, importance, project.clone(), at)?;
            return run_op(coral, op);
        }
        let options = InsertOptions {
            importance,
            project: project.clone(),
            timestamp: at,
            now: None,
        };
        Ok(insert_json(&coral.insert_with(text, options)?))
    })?;
    coral.flush()?;
    if failures > 0 {
        errln!("coral: {failures} line(s) were not inserted (see the error lines)");
        return Ok(1);
    }
    Ok(0)
}

/// One line of `insert --stdin --jsonl`: an insert (the default), or, for scripts and tests
/// that drive several processes, a delete, a search or a stats call.
enum JsonOp {
    Insert(String, InsertOptions),
    Delete(String),
    Search(String, Option<usize>),
    Stats,
}

fn run_op(coral: &Coral, op: JsonOp) -> anyhow::Result<Value> {
    Ok(match op {
        JsonOp::Insert(content, options) => insert_json(&coral.insert_with(&content, options)?),
        JsonOp::Delete(id) => json!({"item_id": id, "deleted": coral.delete(&id)?}),
        JsonOp::Search(query, top_k) => {
            let hits = coral.search_with(
                &query,
                SearchOptions {
                    top_k,
                    ..SearchOptions::default()
                },
            )?;
            let ids: Vec<&str> = hits.iter().map(|h| h.item.item_id.as_str()).collect();
            json!({"query": query, "hits": ids})
        }
        JsonOp::Stats => {
            let s = coral.stats();
            json!({"total": s.total, "hot": s.hot, "warm": s.warm, "cold": s.cold})
        }
    })
}

fn parse_jsonl(
    text: &str,
    importance: f64,
    project: Option<String>,
    at: Option<f64>,
) -> anyhow::Result<JsonOp> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        op: Option<String>,
        content: Option<String>,
        item_id: Option<String>,
        query: Option<String>,
        top_k: Option<usize>,
        importance: Option<f64>,
        project: Option<String>,
        timestamp: Option<serde_json::Value>,
    }
    let line: Line = serde_json::from_str(text)?;
    match line.op.as_deref().unwrap_or("insert") {
        "insert" => {}
        "delete" => {
            let id = match (line.item_id, line.content) {
                (Some(id), _) => id,
                (None, Some(content)) => coral::item_id(&content),
                (None, None) => anyhow::bail!("a delete needs item_id or content"),
            };
            return Ok(JsonOp::Delete(id));
        }
        "search" => {
            let query = line
                .query
                .ok_or_else(|| anyhow::anyhow!("a search needs a query"))?;
            return Ok(JsonOp::Search(query, line.top_k));
        }
        "stats" => return Ok(JsonOp::Stats),
        other => anyhow::bail!(
            "op {} is not insert, delete, search or stats",
            coral::echo(other)
        ),
    }
    let content = line
        .content
        .ok_or_else(|| anyhow::anyhow!("an insert needs content"))?;
    let timestamp = match line.timestamp {
        None | Some(serde_json::Value::Null) => at,
        Some(serde_json::Value::Number(n)) => n.as_f64(),
        Some(serde_json::Value::String(s)) => {
            Some(time::parse_time(&s).map_err(anyhow::Error::msg)?)
        }
        Some(other) => anyhow::bail!(
            "timestamp {} is neither a number nor a date",
            coral::echo_json(&other)
        ),
    };
    Ok(JsonOp::Insert(
        content,
        InsertOptions {
            importance: line.importance.unwrap_or(importance),
            project: line.project.or(project),
            timestamp,
            now: None,
        },
    ))
}

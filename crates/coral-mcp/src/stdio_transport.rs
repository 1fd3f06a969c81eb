//! The MCP stdio transport: every frame from stdin is checked before rmcp sees it, every bad
//! one is answered with a JSON-RPC error, and one writer owns stdout.
//!
//! rmcp's own stdio transport drops unparseable lines without an answer (to avoid error
//! storms between two confused peers), which leaves a client waiting on that request for
//! ever. Here a reader thread cuts stdin into frames (`stdio_frames.rs`), parses each one and
//! either passes the message to rmcp or answers it directly:
//!
//! - not JSON, not UTF-8, nested deeper than 128 levels, a broken `Content-Length` frame:
//!   `-32700` (parse error);
//! - over [`MAX_MESSAGE_BYTES`], a JSON value that is not a JSON-RPC message, a batch:
//!   `-32600` (invalid request);
//!
//! with the request's `id` when it can be read, else `null`. Notifications are never
//! answered (JSON-RPC forbids it), malformed ones included. Every outgoing message, rmcp's
//! and these, is one whole line handed to a single writer thread, so lines never interleave;
//! replies are newline-delimited whatever framing the client used.

use std::io::{self, BufReader, Read, Write};
use std::thread::JoinHandle;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::session_project::RootsChanges;
use crate::stdio_frames::{Frame, FrameReader, MAX_MESSAGE_BYTES};

/// JSON-RPC's parse error.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
const INVALID_REQUEST: i64 = -32600;

/// Messages read ahead of rmcp: a client that writes faster than requests are taken waits
/// on its pipe.
const INCOMING_QUEUE: usize = 16;
/// Lines waiting for the writer.
const OUTGOING_QUEUE: usize = 64;

/// What to do with one frame.
#[derive(Debug)]
pub enum Verdict {
    /// A JSON-RPC message for rmcp.
    Deliver(Box<ClientJsonRpcMessage>),
    /// Nothing to do (a blank message, a notification rmcp does not know).
    Ignore,
    /// Answer with this JSON-RPC error response.
    Reply(Value),
}

fn error_reply(id: Value, code: i64, message: String) -> Verdict {
    Verdict::Reply(json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    }))
}

/// A JSON-RPC id: a string or a number (`null` is the id of an unidentifiable request).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_number()
}

/// The `id` of a message that could not be parsed as a whole (nested too deep, say):
/// everything but the top-level `id` is skipped without recursion, so depth does not matter.
fn recover_id(text: &str) -> Value {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        id: Option<Value>,
    }
    serde_json::from_str::<Probe>(text)
        .ok()
        .and_then(|p| p.id)
        .filter(valid_id)
        .unwrap_or(Value::Null)
}

/// Decide what to do with one frame.
pub fn verdict(frame: Frame) -> Verdict {
    match frame {
        Frame::Message(bytes) => classify(&bytes),
        Frame::Oversized(n) => error_reply(
            Value::Null,
            INVALID_REQUEST,
            format!(
                "invalid request: the message is {n} bytes; the limit is {MAX_MESSAGE_BYTES} \
                 bytes (4 MiB); send large data in smaller calls"
            ),
        ),
        Frame::Unusable(problem) => error_reply(
            Value::Null,
            PARSE_ERROR,
            format!("parse error: unusable Content-Length frame: {problem}"),
        ),
    }
}

/// Decide what to do with one message's bytes.
pub fn classify(bytes: &[u8]) -> Verdict {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return error_reply(
                Value::Null,
                PARSE_ERROR,
                format!(
                    "parse error: the message is not valid UTF-8 (bad byte at offset {} of {}); \
                     send UTF-8 JSON",
                    e.valid_up_to(),
                    bytes.len()
                ),
            );
        }
    };
    if text.trim().is_empty() {
        return Verdict::Ignore;
    }
    let e = match serde_json::from_str::<ClientJsonRpcMessage>(text) {
        Ok(message) => return Verdict::Deliver(Box::new(message)),
        Err(e) => e,
    };
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            let why = if e.to_string().starts_with("recursion limit exceeded") {
                format!(
                    "it is nested deeper than 128 levels (at line {} column {})",
                    e.line(),
                    e.column()
                )
            } else {
                format!("it is not JSON ({e})")
            };
            error_reply(
                recover_id(text),
                PARSE_ERROR,
                format!("parse error: {why}; send one JSON-RPC message per line"),
            )
        }
        _ => invalid_request(text, &e),
    }
}

/// A JSON value that is not a JSON-RPC message Coral takes.
fn invalid_request(text: &str, e: &serde_json::Error) -> Verdict {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return error_reply(Value::Null, PARSE_ERROR, format!("parse error: {e}"));
        }
    };
    let message = match &value {
        Value::Array(_) => {
            "a batch (JSON array) is not supported; send one message per line".to_string()
        }
        Value::Object(o) => {
            if !o.contains_key("id") && o.get("method").is_some_and(Value::is_string) {
                // A notification, perhaps one this server does not know: never answered.
                return Verdict::Ignore;
            }
            if o.get("jsonrpc") != Some(&json!("2.0")) {
                "\"jsonrpc\" must be \"2.0\"".to_string()
            } else if o.get("id").is_some_and(|id| !valid_id(id)) {
                "\"id\" must be a string or a number".to_string()
            } else if o.get("method").is_some_and(|m| !m.is_string()) {
                "\"method\" must be a string".to_string()
            } else if !["method", "result", "error"]
                .iter()
                .any(|k| o.contains_key(*k))
            {
                "it has no \"method\" (a request needs \"jsonrpc\": \"2.0\", \"id\", \"method\" \
                 and optional \"params\")"
                    .to_string()
            } else {
                // serde's words for what did not fit (bounded: they may quote values).
                coral::bound_message(e.to_string())
            }
        }
        other => format!(
            "a message must be a JSON object, got {}",
            coral::echo_json(other)
        ),
    };
    let id = value
        .get("id")
        .filter(|id| valid_id(id))
        .cloned()
        .unwrap_or(Value::Null);
    error_reply(id, INVALID_REQUEST, format!("invalid request: {message}"))
}

/// One message as one newline-terminated line.
fn line_of(value: &impl serde::Serialize) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// The transport rmcp serves on: messages the reader thread accepted in, whole lines out.
pub struct StdioTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: mpsc::Sender<Vec<u8>>,
    /// Whether a request has been passed on. Before the first one, rmcp ends the session on
    /// a notification or a response (it expects `initialize`), so those are dropped: no
    /// client waits for an answer to them.
    requested: bool,
    /// The client's roots announcements, counted in message order.
    roots: RootsChanges,
}

impl Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            let line = line_of(&item)?;
            outgoing
                .send(line)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed"))
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // `recv` is cancel-safe and nothing below awaits, as rmcp's select! needs.
            let mut message = self.incoming.recv().await?;
            if !self.requested && !matches!(message, JsonRpcMessage::Request(_)) {
                errln!("coral: ignored a notification or response sent before initialize");
                continue;
            }
            self.requested = true;
            self.roots.observe(&mut message);
            return Some(message);
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Start the reader and writer threads on `input` and `output`. The writer ends, after
/// writing every line it was given, once the transport (and every send in flight) is gone;
/// join it before exiting so no answer is lost. The reader ends at the end of the input or
/// when the transport is gone.
pub fn start<R, W>(input: R, output: W) -> (StdioTransport, JoinHandle<io::Result<()>>)
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let (incoming_tx, incoming) = mpsc::channel(INCOMING_QUEUE);
    let (outgoing, outgoing_rx) = mpsc::channel::<Vec<u8>>(OUTGOING_QUEUE);
    // A weak handle: the reader's error answers must not keep the writer alive after rmcp
    // has finished with the transport.
    let replies = outgoing.downgrade();
    std::thread::Builder::new()
        .name("coral-mcp-stdin".into())
        .spawn(move || read_loop(input, incoming_tx, replies))
        .ok();
    let writer = std::thread::Builder::new()
        .name("coral-mcp-stdout".into())
        .spawn(move || write_loop(output, outgoing_rx));
    let writer = match writer {
        Ok(w) => w,
        // No thread, no server: report it when joined.
        Err(e) => std::thread::spawn(move || Err(e)),
    };
    let transport = StdioTransport {
        incoming,
        outgoing,
        requested: false,
        roots: RootsChanges::default(),
    };
    (transport, writer)
}

fn read_loop<R: Read>(
    input: R,
    incoming: mpsc::Sender<ClientJsonRpcMessage>,
    replies: mpsc::WeakSender<Vec<u8>>,
) {
    let mut frames = FrameReader::new(
        BufReader::with_capacity(64 * 1024, input),
        MAX_MESSAGE_BYTES,
    );
    loop {
        let frame = match frames.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => return,
            Err(e) => {
                errln!("coral: reading stdin failed: {e}");
                return;
            }
        };
        match verdict(frame) {
            Verdict::Deliver(message) => {
                if incoming.blocking_send(*message).is_err() {
                    return;
                }
            }
            Verdict::Ignore => {}
            Verdict::Reply(reply) => {
                let Some(out) = replies.upgrade() else {
                    return;
                };
                let sent = line_of(&reply).map(|line| out.blocking_send(line).is_ok());
                if !matches!(sent, Ok(true)) {
                    return;
                }
            }
        }
    }
}

fn write_loop<W: Write>(output: W, mut lines: mpsc::Receiver<Vec<u8>>) -> io::Result<()> {
    let mut out = io::BufWriter::new(output);
    while let Some(line) = lines.blocking_recv() {
        out.write_all(&line)?;
        // Whatever else is ready goes out in the same flush.
        while let Ok(more) = lines.try_recv() {
            out.write_all(&more)?;
        }
        out.flush()?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error code and id of the reply to `input`; (0, null) when it is delivered and
    /// (1, null) when it is ignored.
    fn check(input: &[u8]) -> (i64, Value) {
        match classify(input) {
            Verdict::Deliver(_) => (0, Value::Null),
            Verdict::Ignore => (1, Value::Null),
            Verdict::Reply(r) => {
                assert_eq!(r["jsonrpc"], "2.0");
                let message = r["error"]["message"].as_str().unwrap();
                assert!(message.len() < 600, "{message}");
                (r["error"]["code"].as_i64().unwrap(), r["id"].clone())
            }
        }
    }

    #[test]
    fn messages_are_delivered_ignored_or_answered() {
        let deep_request = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}1{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: Vec<(Vec<u8>, (i64, Value))> = vec![
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec(),
                (0, Value::Null),
            ),
            (
                b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".to_vec(),
                (0, Value::Null),
            ),
            (
                br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
                (0, Value::Null),
            ),
            (b"   ".to_vec(), (1, Value::Null)),
            // A notification nobody knows, or a broken one: never answered.
            (
                br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":5}"#.to_vec(),
                (1, Value::Null),
            ),
            (b"this is not json".to_vec(), (PARSE_ERROR, Value::Null)),
            (
                br#"{"jsonrpc": "2.0", "id": "#.to_vec(),
                (PARSE_ERROR, Value::Null),
            ),
            (b"\xff\xfe{}".to_vec(), (PARSE_ERROR, Value::Null)),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\xff"}}"#.to_vec(),
                (PARSE_ERROR, Value::Null),
            ),
            ("[".repeat(100_000).into_bytes(), (PARSE_ERROR, Value::Null)),
            (
                "{\"a\":".repeat(100_000).into_bytes(),
                (PARSE_ERROR, Value::Null),
            ),
            // Too deep but otherwise whole: the id is still found, so the client is not left
            // waiting.
            (deep_request.into_bytes(), (PARSE_ERROR, json!(7))),
            (b"[1, 2]".to_vec(), (INVALID_REQUEST, Value::Null)),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(),
                (INVALID_REQUEST, Value::Null),
            ),
            (b"42".to_vec(), (INVALID_REQUEST, Value::Null)),
            (br#""a string""#.to_vec(), (INVALID_REQUEST, Value::Null)),
            (
                br#"{"foo": "bar"}"#.to_vec(),
                (INVALID_REQUEST, Value::Null),
            ),
            (
                br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#.to_vec(),
                (INVALID_REQUEST, json!(3)),
            ),
            (
                br#"{"jsonrpc":"2.0","id":"a","method":5}"#.to_vec(),
                (INVALID_REQUEST, json!("a")),
            ),
            (
                br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#.to_vec(),
                (INVALID_REQUEST, Value::Null),
            ),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":5}"#.to_vec(),
                (INVALID_REQUEST, json!(4)),
            ),
        ];
        for (input, expected) in cases {
            let shown = String::from_utf8_lossy(&input[..input.len().min(80)]).to_string();
            assert_eq!(check(&input), expected, "{shown}");
        }
    }

    #[test]
    fn frames_that_cannot_be_used_are_answered() {
        for frame in [Frame::Oversized(50 << 20), Frame::Unusable("x".into())] {
            let Verdict::Reply(r) = verdict(frame) else {
                panic!("not answered");
            };
            assert_eq!(r["id"], Value::Null);
            assert!(r["error"]["code"] == PARSE_ERROR || r["error"]["code"] == INVALID_REQUEST);
        }
        let Verdict::Reply(r) = verdict(Frame::Oversized(50 << 20)) else {
            unreachable!()
        };
        assert_eq!(r["error"]["code"], INVALID_REQUEST);
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("52428800 bytes")
        );
    }

    #[test]
    fn long_bad_values_are_not_echoed_whole() {
        let n = "n".repeat(100_000);
        for long in [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{n}","arguments":5}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":5,"x":"{n}"}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":5,"error":"{n}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{n}","params":5}}"#),
            format!(r#""{n}""#),
        ] {
            // rmcp takes some of these as custom requests and answers them itself.
            if let Verdict::Reply(r) = classify(long.as_bytes()) {
                assert!(r.to_string().len() < 3_000, "{}", r.to_string().len());
            }
        }
    }
}

//! The recall socket's wire format (docs/hooks.md, "The recall socket"): one JSON line from the
//! caller, one JSON line back, then the server closes the connection. The only operation is
//! `recall`, which reads and changes nothing (no access is counted).
//!
//! ```text
//! > {"protocol": 1, "op": "recall", "prompt": "...", "params": {"top_k": 5, "min_relevance": 0.25, "min_similarity": 0.45, "project": "shop-1a2b3c4d"}}
//! < {"ok": true, "embedder": "hash", "memories": [{"id", "content", "relevance", "similarity"?, "score", "created", "project"?}]}
//! < {"ok": false, "error": "..."}
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Params, Recalled};

/// The version of this format; a request with another is refused, and the caller opens the
/// store itself (a `coral` upgraded while an older server still runs).
pub const PROTOCOL: u32 = 1;

/// The socket's file name in the data directory.
pub const SOCKET_FILE: &str = ".coral.sock";

/// The lock file whose `flock` holder owns the socket: the one server that answers on it.
pub const LOCK_FILE: &str = ".coral.sock.lock";

/// Where the owner binds before renaming onto [`SOCKET_FILE`], so that a caller never finds
/// the socket before its permissions are the owner's only.
pub const NEW_FILE: &str = ".coral.sock.new";

/// Most bytes of a request line: a prompt is cut to `coral::MAX_TEXT_BYTES` (64 KiB) before it
/// is sent, and JSON escapes at most six bytes for one.
pub const MAX_REQUEST_BYTES: usize = 512 * 1024;

/// Most bytes of an answer line: `coral::MAX_TOP_K` memories of at most 64 KiB each, escaped.
pub const MAX_RESPONSE_BYTES: usize = 128 << 20;

/// The recall socket of the data directory `dir`.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET_FILE)
}

/// A request: recall for `prompt` with `params`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// [`PROTOCOL`].
    pub protocol: u32,
    /// `"recall"`.
    pub op: String,
    /// The prompt.
    pub prompt: String,
    /// What to keep.
    pub params: Params,
}

impl Request {
    /// A recall request for `prompt`, cut to the longest text a search takes.
    pub fn recall(prompt: &str, params: Params) -> Request {
        Request {
            protocol: PROTOCOL,
            op: "recall".into(),
            prompt: super::cut_bytes(prompt, coral::MAX_TEXT_BYTES).to_string(),
            params,
        }
    }

    /// Parse and check one request line (without its newline); the error says what was wrong
    /// in words a caller can act on.
    pub fn parse(line: &[u8]) -> Result<Request, String> {
        let text = std::str::from_utf8(line)
            .map_err(|e| format!("the request is not UTF-8 ({e}); send one JSON line"))?;
        let value: Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "the request is not JSON ({e}): {}; send one JSON object per line",
                coral::echo(text)
            )
        })?;
        if !value.is_object() {
            return Err(format!(
                "the request is a JSON {}, not an object",
                coral::kind_name(&value)
            ));
        }
        if let Some(p) = value.get("protocol")
            && p.as_u64() != Some(u64::from(PROTOCOL))
        {
            return Err(format!(
                "protocol {} is not this server's ({PROTOCOL}); open the store instead",
                coral::echo_json(p)
            ));
        }
        if let Some(op) = value.get("op")
            && op != "recall"
        {
            return Err(format!(
                "unknown op {}; this socket answers only \"recall\"",
                coral::echo_json(op)
            ));
        }
        let request: Request = serde_json::from_value(value)
            .map_err(|e| format!("the request does not fit the recall format: {e}"))?;
        if request.prompt.len() > coral::MAX_TEXT_BYTES {
            return Err(format!(
                "the prompt is {} bytes; cut it to {} before sending",
                request.prompt.len(),
                coral::MAX_TEXT_BYTES
            ));
        }
        request.params.check()?;
        Ok(request)
    }

    /// The request as one line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        line(serde_json::to_value(self).unwrap_or(Value::Null))
    }
}

/// An answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Whether the recall ran.
    pub ok: bool,
    /// The server's embedder (`"hash"` or a model's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<String>,
    /// The memories, best first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memories: Option<Vec<Recalled>>,
    /// Why it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    /// The memories recalled with `embedder`.
    pub fn recalled(embedder: &str, memories: Vec<Recalled>) -> Response {
        Response {
            ok: true,
            embedder: Some(embedder.to_string()),
            memories: Some(memories),
            error: None,
        }
    }

    /// A refusal or failure.
    pub fn error(error: impl Into<String>) -> Response {
        Response {
            ok: false,
            embedder: None,
            memories: None,
            error: Some(coral::bound_message(error.into())),
        }
    }

    /// The answer as one line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        line(serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// Parse an answer line.
    pub fn parse(line: &[u8]) -> Result<Response, String> {
        serde_json::from_slice(line)
            .map_err(|e| format!("the answer is not the recall format: {e}"))
    }
}

fn line(value: Value) -> Vec<u8> {
    let mut bytes = value.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            top_k: 5,
            min_relevance: 0.25,
            min_similarity: 0.45,
            project: Some("shop-1a2b3c4d".into()),
        }
    }

    #[test]
    fn a_request_round_trips_and_bad_ones_say_what_is_wrong() {
        let request = Request::recall("iced latte?", params());
        let line = request.to_line();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(Request::parse(&line[..line.len() - 1]).unwrap(), request);
        for (bad, needle) in [
            (&b"\xff"[..], "not UTF-8"),
            (b"{\"protocol\": 1,", "not JSON"),
            (b"[1]", "array, not an object"),
            (b"{\"protocol\": 2, \"op\": \"recall\"}", "protocol 2"),
            (b"{\"protocol\": 1, \"op\": \"insert\"}", "unknown op \"insert\""),
            (
                b"{\"protocol\": 1, \"op\": \"recall\", \"prompt\": \"x\"}",
                "missing field `params`",
            ),
            (
                b"{\"protocol\": 1, \"op\": \"recall\", \"prompt\": \"x\", \"params\": {\"top_k\": 0, \"min_relevance\": 0.2, \"min_similarity\": 0.4}}",
                "top_k 0 must be from 1",
            ),
            (
                b"{\"protocol\": 1, \"op\": \"recall\", \"prompt\": \"x\", \"params\": {\"top_k\": 5, \"min_relevance\": 2, \"min_similarity\": 0.4}}",
                "min_relevance 2 must be from 0 to 1",
            ),
            (
                b"{\"protocol\": 1, \"op\": \"recall\", \"prompt\": \"x\", \"extra\": 1, \"params\": {\"top_k\": 5, \"min_relevance\": 0.2, \"min_similarity\": 0.4}}",
                "unknown field `extra`",
            ),
        ] {
            let e = Request::parse(bad).unwrap_err();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
        let long = Request {
            prompt: "x".repeat(coral::MAX_TEXT_BYTES + 1),
            ..request
        };
        let line = long.to_line();
        assert!(
            Request::parse(&line[..line.len() - 1])
                .unwrap_err()
                .contains("bytes; cut it")
        );
        // A prompt over the limit is cut at a character boundary when a request is made.
        let cut = Request::recall(&"咖".repeat(30_000), params());
        assert!(cut.prompt.len() <= coral::MAX_TEXT_BYTES);
        assert!(cut.prompt.chars().all(|c| c == '咖'));
    }

    #[test]
    fn answers_round_trip() {
        let r = Response::error("nope");
        assert_eq!(
            Response::parse(&r.to_line()).unwrap().error.as_deref(),
            Some("nope")
        );
        let memories = vec![Recalled {
            id: "a1".into(),
            content: "iced latte".into(),
            relevance: 0.5,
            similarity: None,
            score: 0.123_456_789_012_345_67,
            created: 1_775_800_000.5,
            project: None,
        }];
        let r = Response::recalled("hash", memories.clone());
        assert_eq!(
            Response::parse(&r.to_line()).unwrap().memories,
            Some(memories)
        );
    }
}

//! A client's hook payload: one JSON object on standard input, read within a size bound and
//! checked field by field, so a corrupt payload is an error that names what was wrong.

use std::io::Read;

use serde_json::{Map, Value};

/// Most bytes of a payload read from stdin. Claude Code's payloads are a few hundred bytes
/// plus the prompt; a prompt of several megabytes is pasted data, not something to recall
/// for.
pub const MAX_PAYLOAD_BYTES: usize = 4 << 20;

/// A hook payload: its fields by name.
#[derive(Debug, Default)]
pub struct Payload {
    fields: Map<String, Value>,
}

impl Payload {
    /// Read and parse `input` (standard input), at most [`MAX_PAYLOAD_BYTES`].
    pub fn read(input: impl Read) -> Result<Payload, String> {
        let mut bytes = Vec::new();
        input
            .take(MAX_PAYLOAD_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the hook payload on stdin: {e}"))?;
        if bytes.len() > MAX_PAYLOAD_BYTES {
            return Err(format!(
                "the hook payload is over {MAX_PAYLOAD_BYTES} bytes; nothing was read from it"
            ));
        }
        Payload::parse(&bytes)
    }

    /// Parse one payload.
    pub fn parse(bytes: &[u8]) -> Result<Payload, String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| format!("the hook payload is not UTF-8 ({e})"))?;
        if text.trim().is_empty() {
            return Err("the hook payload on stdin is empty (expected one JSON object)".into());
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(fields)) => Ok(Payload { fields }),
            Ok(other) => Err(format!(
                "the hook payload is a JSON {}, not an object",
                coral::kind_name(&other)
            )),
            Err(e) => Err(format!(
                "the hook payload is not JSON ({e}): {}",
                coral::echo(text)
            )),
        }
    }

    /// A string field; absent or null is `None`, another type an error naming the field.
    pub fn str(&self, name: &str) -> Result<Option<&str>, String> {
        match self.fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "hook payload field {name:?} must be a string, got {} {}",
                coral::kind_name(other),
                coral::echo_json(other)
            )),
        }
    }

    /// A string field that must be there.
    pub fn required_str(&self, name: &str) -> Result<&str, String> {
        self.str(name)?
            .ok_or_else(|| format!("the hook payload has no {name:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrupt_payloads_are_errors_that_say_what_is_wrong() {
        for (bytes, needle) in [
            (&b""[..], "empty"),
            (b"   \n", "empty"),
            (b"{\"session_id\": ", "not JSON"),
            (b"[1, 2]", "array, not an object"),
            (b"\xff\xfe", "not UTF-8"),
        ] {
            let err = Payload::parse(bytes).unwrap_err();
            assert!(err.contains(needle), "{bytes:?}: {err}");
        }
        let p = Payload::parse(br#"{"prompt": 5}"#).unwrap();
        assert!(
            p.str("prompt")
                .unwrap_err()
                .contains("\"prompt\" must be a string")
        );
        assert!(
            p.required_str("session_id")
                .unwrap_err()
                .contains("session_id")
        );
        assert_eq!(p.str("cwd").unwrap(), None);
    }

    #[test]
    fn oversized_input_is_refused_without_reading_it_all() {
        let big = vec![b' '; MAX_PAYLOAD_BYTES + 10];
        let err = Payload::read(&big[..]).unwrap_err();
        assert!(err.contains("over"), "{err}");
    }
}

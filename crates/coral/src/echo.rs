//! Bounded echoes of caller-supplied values in error messages.
//!
//! An error names the bad value so the caller can see what went wrong, but a value can be
//! megabytes (a 100,000-element array made a 589 KB error before this existed), and a model
//! reading the message pays for every byte. Echoes keep the first [`ECHO_CHARS`] characters
//! and say how long the whole was; [`bound_message`] is the last line of defence for messages
//! built elsewhere (the leaf crates' own errors).

use std::io::Write;

use serde_json::Value;

/// Characters of a value shown in an error before it is cut.
pub const ECHO_CHARS: usize = 100;

/// Longest error message passed on whole, in bytes; longer ones lose their middle.
pub const MAX_MESSAGE_BYTES: usize = 2_048;

/// `text` quoted (Rust string syntax, so control characters and line breaks show as escapes),
/// cut to [`ECHO_CHARS`] characters with its size in bytes when longer:
/// `"aaaa…"… (250000 bytes)`.
pub fn echo(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        None => format!("{text:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &text[..cut], text.len()),
    }
}

/// A JSON value as compact JSON, cut like [`echo`] when longer than [`ECHO_CHARS`]
/// characters (the size is that of the compact JSON text).
pub fn echo_json(value: &Value) -> String {
    let mut head = Head::default();
    // Writing into `Head` cannot fail; the value is walked once and never copied whole.
    let _ = serde_json::to_writer(&mut head, value);
    let text = String::from_utf8_lossy(&head.kept);
    match text.char_indices().nth(ECHO_CHARS) {
        None if head.total == head.kept.len() => text.into_owned(),
        None => format!("{text}… ({} bytes)", head.total),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], head.total),
    }
}

/// `message` unchanged up to [`MAX_MESSAGE_BYTES`]; longer, its start and end (where the
/// advice usually is) around a note of how much was cut.
pub fn bound_message(message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let head_end = floor_char_boundary(&message, MAX_MESSAGE_BYTES / 2);
    let tail_start = ceil_char_boundary(&message, message.len() - MAX_MESSAGE_BYTES / 4);
    format!(
        "{} … [{} bytes cut] … {}",
        &message[..head_end],
        tail_start - head_end,
        &message[tail_start..]
    )
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// A writer that keeps the first bytes it is given (enough for [`ECHO_CHARS`] characters of
/// up to four bytes each) and counts the rest.
#[derive(Default)]
struct Head {
    kept: Vec<u8>,
    total: usize,
}

impl Write for Head {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = (4 * ECHO_CHARS + 4).saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&buf[..buf.len().min(room)]);
        self.total += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_values_are_quoted_whole() {
        assert_eq!(echo("abc"), "\"abc\"");
        assert_eq!(echo("a\nb\u{2028}"), "\"a\\nb\\u{2028}\"");
        assert_eq!(echo_json(&json!([1, 2, 3])), "[1,2,3]");
        assert_eq!(echo_json(&json!("x")), "\"x\"");
    }

    #[test]
    fn long_values_are_cut_with_their_size() {
        let long = "珊".repeat(5_000);
        let shown = echo(&long);
        assert!(shown.starts_with(&format!("\"{}\"…", "珊".repeat(ECHO_CHARS))));
        assert!(shown.ends_with("(15000 bytes)"), "{shown}");
        let array = Value::Array(vec![json!(0); 100_000]);
        let shown = echo_json(&array);
        assert!(shown.len() < 200, "{shown}");
        assert!(shown.starts_with("[0,0,"), "{shown}");
        assert!(shown.ends_with("… (200001 bytes)"), "{shown}");
    }

    #[test]
    fn long_messages_keep_their_start_and_end() {
        let message = format!("start {} end: do this", "é".repeat(10_000));
        let bounded = bound_message(message.clone());
        assert!(
            bounded.len() <= MAX_MESSAGE_BYTES + 100,
            "{}",
            bounded.len()
        );
        assert!(bounded.starts_with("start "));
        assert!(bounded.ends_with(" end: do this"));
        assert!(bounded.contains("bytes cut]"));
        assert_eq!(bound_message("short".into()), "short");
    }
}

//! Claude Code's session transcript (the JSON Lines file named by a hook payload's
//! `transcript_path`): its exchanges, each a prompt the user typed and the final answer given
//! to it (docs/hooks.md, "Capture").
//!
//! A line is `{"type": "user" | "assistant" | ..., "uuid", "timestamp", "message": {"content":
//! ...}}`. A user line whose content is a string, or holds text blocks, is a prompt; one that
//! holds only `tool_result` blocks is a tool's answer inside the same exchange. The answer is
//! the text of the exchange's last assistant message that has text (one message can span
//! several lines that share `message.id`). Lines of subagents (`isSidechain`), lines Claude
//! Code injects (`isMeta`, compaction summaries) and slash-command echoes are not prompts.
//! Lines that do not parse (the last one may be half written) are skipped and counted.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

/// Most bytes of a transcript read: a transcript past this is read from its first bytes only,
/// which a note says (hundreds of megabytes would be a runaway session, not one to capture).
pub const MAX_TRANSCRIPT_BYTES: u64 = 256 << 20;

/// One prompt and its final answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The prompt line's `uuid` (else its line number), stable across reads of the file.
    pub key: String,
    /// What the user typed.
    pub prompt: String,
    /// The final answer (empty while none was given).
    pub answer: String,
    /// When the prompt was sent, Unix seconds.
    pub prompt_at: Option<f64>,
    /// When the answer was written, Unix seconds.
    pub answer_at: Option<f64>,
}

/// What reading a transcript found.
#[derive(Debug, Default)]
pub struct Transcript {
    /// The exchanges, in order.
    pub exchanges: Vec<Exchange>,
    /// Lines that were not JSON objects.
    pub skipped_lines: usize,
    /// The file was longer than [`MAX_TRANSCRIPT_BYTES`].
    pub truncated: bool,
}

/// Read the transcript at `path`.
pub fn read(path: &Path) -> Result<Transcript, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot open the transcript {}: {e}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut out = Transcript {
        truncated: len > MAX_TRANSCRIPT_BYTES,
        ..Transcript::default()
    };
    let reader = BufReader::new(std::io::Read::take(file, MAX_TRANSCRIPT_BYTES));
    let mut current: Option<Exchange> = None;
    // The assistant message whose text blocks make the current answer.
    let mut answer_message: Option<String> = None;
    for (n, line) in reader.split(b'\n').enumerate() {
        let line =
            line.map_err(|e| format!("cannot read the transcript {}: {e}", path.display()))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(Value::Object(entry)) = serde_json::from_slice::<Value>(&line) else {
            out.skipped_lines += 1;
            continue;
        };
        if [
            entry.get("isSidechain"),
            entry.get("isMeta"),
            entry.get("isCompactSummary"),
        ]
        .iter()
        .any(|v| v.is_some_and(|v| v == true))
        {
            continue;
        }
        let at = entry
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| crate::cli::time::parse_time(t).ok());
        let content = &entry.get("message").and_then(|m| m.get("content"));
        match entry.get("type").and_then(Value::as_str) {
            Some("user") => {
                let Some(prompt) = content.and_then(prompt_text) else {
                    continue;
                };
                if let Some(done) = current.take() {
                    out.exchanges.push(done);
                }
                answer_message = None;
                let key = entry
                    .get("uuid")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| format!("line-{}", n + 1));
                current = Some(Exchange {
                    key,
                    prompt,
                    answer: String::new(),
                    prompt_at: at,
                    answer_at: None,
                });
            }
            Some("assistant") => {
                let (Some(exchange), Some(text)) = (current.as_mut(), content.and_then(texts))
                else {
                    continue;
                };
                let id = entry
                    .get("message")
                    .and_then(|m| m.get("id"))
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| format!("line-{}", n + 1));
                if answer_message.as_deref() == Some(id.as_str()) {
                    exchange.answer.push_str("\n\n");
                    exchange.answer.push_str(&text);
                } else {
                    exchange.answer = text;
                    answer_message = Some(id);
                }
                exchange.answer_at = at.or(exchange.answer_at);
            }
            _ => {}
        }
    }
    out.exchanges.extend(current);
    Ok(out)
}

/// The prompt a user line holds: its string content, or its text blocks joined; `None` for
/// tool results and for slash-command echoes.
fn prompt_text(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(_) => texts(content)?,
        _ => return None,
    };
    let trimmed = text.trim_start();
    let command = [
        "<command-name>",
        "<command-message>",
        "<local-command-",
        "<bash-",
    ]
    .iter()
    .any(|p| trimmed.starts_with(p));
    (!command && !text.trim().is_empty()).then_some(text)
}

/// The text blocks of a content array, joined by blank lines; `None` when there is none.
fn texts(content: &Value) -> Option<String> {
    let parts: Vec<&str> = content
        .as_array()?
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .filter(|t| !t.trim().is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/hooks/claude-code/transcript.jsonl")
    }

    #[test]
    fn the_recorded_transcript_gives_its_prompts_and_final_answers() {
        let t = read(&fixture()).unwrap();
        // The half-written last line.
        assert_eq!(t.skipped_lines, 1);
        assert!(!t.truncated);
        let shown: Vec<(&str, &str, &str)> = t
            .exchanges
            .iter()
            .map(|x| (x.key.as_str(), x.prompt.as_str(), x.answer.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "b1f0c6a2-3d4e-4f5a-8b6c-7d8e9f0a1b2c",
                    "Put the drinks the user likes on the menu page. My API key for the menu \
                     service is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
                    // The last message with text, not the one before the tool call.
                    "I added iced latte to the top of the menu, since the user likes it."
                ),
                (
                    "a6e5f7a8-0000-4000-8000-000000000008",
                    "Also translate the menu into a formal register",
                    "Done: the menu now reads formally."
                ),
                (
                    "c8a7b9ca-0000-4000-8000-00000000000a",
                    "And the prices?",
                    ""
                ),
            ]
        );
        // 2026-04-10T02:00:00Z and the answer at 02:00:09Z.
        assert_eq!(t.exchanges[0].prompt_at, Some(1_775_786_400.0));
        assert_eq!(t.exchanges[0].answer_at, Some(1_775_786_409.0));
    }

    #[test]
    fn text_blocks_of_one_message_make_one_answer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}"#,
                "\n",
                r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"one"}]}}"#,
                "\n",
                r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"two"}]}}"#,
                "\n"
            ),
        )
        .unwrap();
        let t = read(&path).unwrap();
        assert_eq!(t.exchanges[0].answer, "one\n\ntwo");
        assert!(
            read(&dir.path().join("missing.jsonl"))
                .unwrap_err()
                .contains("cannot open")
        );
    }
}

//! Entries: the vocabulary of the timeline (kind, origin, turn role) and what a caller writes.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Result, invalid};

/// Longest kind accepted.
pub const MAX_KIND_CHARS: usize = 128;

/// Largest entry text accepted, in UTF-8 bytes (a tool result of a few megabytes is kept whole;
/// anything larger belongs in a file the entry points to).
pub const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// Who produced an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// The person.
    User,
    /// The model.
    Assistant,
    /// Tools, the host, the world.
    Environment,
}

impl Origin {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Assistant => "assistant",
            Origin::Environment => "environment",
        }
    }

    /// Parse a stored or given name.
    pub fn parse(s: &str) -> Result<Origin> {
        match s {
            "user" => Ok(Origin::User),
            "assistant" => Ok(Origin::Assistant),
            "environment" => Ok(Origin::Environment),
            other => invalid(format!(
                "origin {other:?} is not one of user, assistant, environment"
            )),
        }
    }

    /// The origin a kind implies when the caller gives none: `message.user` is the user,
    /// `message.assistant` the model, anything else the environment.
    pub fn for_kind(kind: &str) -> Origin {
        match kind {
            "message.user" => Origin::User,
            "message.assistant" => Origin::Assistant,
            _ => Origin::Environment,
        }
    }
}

/// The part an entry plays in its turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnRole {
    /// What started the turn (the user's message, an event).
    Stimulus,
    /// A call the model made (a tool call), with a correlation id.
    Action,
    /// The result of an action, with the action's correlation id.
    Observation,
    /// The model's final answer that closed the turn.
    Final,
    /// A standalone entry outside any turn.
    None,
}

impl TurnRole {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnRole::Stimulus => "stimulus",
            TurnRole::Action => "action",
            TurnRole::Observation => "observation",
            TurnRole::Final => "final",
            TurnRole::None => "none",
        }
    }

    /// The role of a stored name; `None` for any other.
    pub(crate) fn parse(s: &str) -> Option<TurnRole> {
        match s {
            "stimulus" => Some(TurnRole::Stimulus),
            "action" => Some(TurnRole::Action),
            "observation" => Some(TurnRole::Observation),
            "final" => Some(TurnRole::Final),
            "none" => Some(TurnRole::None),
            _ => None,
        }
    }
}

/// Check a kind: lower-case dotted segments, at least two (`message.user`,
/// `tool.web_search.result`, `event.calendar.reminder`); each segment starts with a letter or
/// digit and holds `a-z 0-9 _ -`.
pub fn check_kind(kind: &str) -> Result<()> {
    let segment_ok = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    };
    let segments: Vec<&str> = kind.split('.').collect();
    if kind.len() > MAX_KIND_CHARS || segments.len() < 2 || !segments.iter().all(|s| segment_ok(s))
    {
        return invalid(format!(
            "kind {kind:?} is not a lower-case dotted name such as \"message.user\", \
             \"tool.web_search.result\" or \"event.reminder\" (segments of a-z, 0-9, '_', '-'; \
             at least two; at most {MAX_KIND_CHARS} characters)"
        ));
    }
    Ok(())
}

/// The kind segment for a tool name: the name lower-cased. Tool names may use letters, digits,
/// `_` and `-` (`web_search`, `mcp__fs__read`, `Shell` -> `shell`).
pub fn tool_segment(tool_name: &str) -> Result<String> {
    let ok = !tool_name.is_empty()
        && tool_name.len() <= 64
        && tool_name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && tool_name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return invalid(format!(
            "tool_name {tool_name:?} is not usable: give 1 to 64 letters, digits, '_' or '-', \
             starting with a letter or digit"
        ));
    }
    Ok(tool_name.to_ascii_lowercase())
}

/// One entry as a caller writes it. Only `kind` and `text` are needed; the rest have sensible
/// defaults (generated source id, the call's `now`, the origin the kind implies).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EntryInput {
    /// Lower-case dotted kind (see [`check_kind`]).
    pub kind: String,
    /// The model-visible text (a message, tool arguments as JSON, a tool result body).
    pub text: String,
    /// Structured data kept with the entry (a JSON object or any JSON value).
    pub payload: Option<Value>,
    /// Caller-given id (idempotent retries); generated when absent.
    pub source_id: Option<String>,
    /// When it happened, Unix seconds (backfill); the call's `now` when absent.
    pub timestamp: Option<f64>,
    /// Soft actor tag; the namespace's actor when absent.
    pub actor: Option<String>,
    /// Overrides the origin implied by the kind.
    pub origin: Option<Origin>,
    /// Pairs an action with its observation.
    pub correlation_id: Option<String>,
    /// Tool name of an action or observation (derived from `tool.<name>.*` kinds).
    pub tool_name: Option<String>,
    /// Outcome of an observation (`success` when absent; e.g. `error`, `timeout`).
    pub status: Option<String>,
}

impl EntryInput {
    /// An entry of `kind` with `text`.
    pub fn new(kind: impl Into<String>, text: impl Into<String>) -> EntryInput {
        EntryInput {
            kind: kind.into(),
            text: text.into(),
            ..EntryInput::default()
        }
    }

    /// A user message (`message.user`).
    pub fn user(text: impl Into<String>) -> EntryInput {
        EntryInput::new("message.user", text)
    }

    /// An assistant message (`message.assistant`).
    pub fn assistant(text: impl Into<String>) -> EntryInput {
        EntryInput::new("message.assistant", text)
    }

    /// With a caller-given source id.
    pub fn source_id(mut self, id: impl Into<String>) -> EntryInput {
        self.source_id = Some(id.into());
        self
    }

    /// With a timestamp (Unix seconds).
    pub fn at(mut self, timestamp: f64) -> EntryInput {
        self.timestamp = Some(timestamp);
        self
    }

    /// With a payload.
    pub fn payload(mut self, payload: Value) -> EntryInput {
        self.payload = Some(payload);
        self
    }

    /// With a correlation id.
    pub fn correlation(mut self, id: impl Into<String>) -> EntryInput {
        self.correlation_id = Some(id.into());
        self
    }

    /// With an observation status.
    pub fn status(mut self, status: impl Into<String>) -> EntryInput {
        self.status = Some(status.into());
        self
    }
}

/// Where a written entry landed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryRef {
    /// Its id (`open_memory(memory_id=...)`).
    pub source_id: String,
    /// Its position in the conversation (1, 2, ...).
    pub seq_no: i64,
    /// False when an identical earlier write was found and returned instead (a retry).
    pub created: bool,
}

pub(crate) fn check_status(status: &str) -> Result<()> {
    let ok = !status.is_empty()
        && status.len() <= 32
        && status
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !ok {
        return invalid(format!(
            "status {status:?} must be a short lower-case word such as success, error or timeout"
        ));
    }
    Ok(())
}

pub(crate) fn check_timestamp(ts: f64) -> Result<()> {
    // Year 1970 .. 9999: anything else is a unit mistake (milliseconds) or garbage.
    if !ts.is_finite() || !(0.0..253_402_300_800.0).contains(&ts) {
        return invalid(format!(
            "timestamp {ts} is not Unix seconds between 1970 and 9999 (milliseconds? divide by \
             1000)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        for good in [
            "message.user",
            "tool.web_search.call",
            "tool.mcp-fs.result",
            "event.x",
            "operation.memory.read_timeline.result",
        ] {
            assert!(check_kind(good).is_ok(), "{good}");
        }
        for bad in [
            "message",
            "Message.user",
            "tool..call",
            ".x",
            "x.",
            "tool.web search.call",
            "tool._x.call",
            "",
            "消息.用户",
        ] {
            assert!(check_kind(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tool_segments() {
        assert_eq!(tool_segment("Shell").unwrap(), "shell");
        assert_eq!(tool_segment("mcp__fs__read").unwrap(), "mcp__fs__read");
        assert!(tool_segment("web.search").is_err());
        assert!(tool_segment("").is_err());
        assert!(tool_segment("_x").is_err());
    }

    #[test]
    fn origins_follow_kinds() {
        assert_eq!(Origin::for_kind("message.user"), Origin::User);
        assert_eq!(Origin::for_kind("message.assistant"), Origin::Assistant);
        assert_eq!(Origin::for_kind("event.x"), Origin::Environment);
    }
}

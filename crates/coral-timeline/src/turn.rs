//! The turn calls' requests and answers (`BeginTurn`, `ToolExchange`, `CompleteTurn`,
//! `TurnHandle`, `ExchangeRefs`, `TurnView`, `Closed`, the settlement report) and `TurnStatus`.

use serde::Serialize;
use serde_json::Value;

use crate::entry::{EntryInput, EntryRef};
use crate::error::unknown_value;
use crate::settle::{Classification, Policy};

/// Most stimuli one turn may begin with.
pub const MAX_STIMULI: usize = 64;

/// Where a turn is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnStatus {
    /// Begun, taking actions and observations.
    Open,
    /// Closed by `complete_turn`.
    Completed,
    /// Closed by `abort_turn` or by recovery.
    Aborted,
}

impl TurnStatus {
    /// The status of a stored name; `None` for any other (never guessed).
    pub(crate) fn parse(s: &str) -> Option<TurnStatus> {
        match s {
            "open" => Some(TurnStatus::Open),
            "completed" => Some(TurnStatus::Completed),
            "aborted" => Some(TurnStatus::Aborted),
            _ => None,
        }
    }

    /// The status stored in column `i` of a row of turn `turn_id`; an unknown name is an
    /// [`UnknownValue`](crate::error::UnknownValue) naming the turn and the value.
    pub(crate) fn column(r: &rusqlite::Row<'_>, i: usize, turn_id: &str) -> rusqlite::Result<Self> {
        let stored = r.get_ref(i)?.as_str()?;
        TurnStatus::parse(stored)
            .ok_or_else(|| unknown_value(i, format!("turn {turn_id:?} status"), stored))
    }

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Open => "open",
            TurnStatus::Completed => "completed",
            TurnStatus::Aborted => "aborted",
        }
    }
}

/// How to begin a turn.
#[derive(Clone, Debug, Default)]
pub struct BeginTurn {
    /// What started it: usually one user message. At least one.
    pub stimuli: Vec<EntryInput>,
    /// Caller-given turn id, for idempotent retries; generated when absent.
    pub turn_id: Option<String>,
    /// Settlement policy, frozen for this turn.
    pub policy: Policy,
    /// IANA time zone for the `time:` line of this turn's reload cards (none: no time line).
    pub timezone: Option<String>,
}

impl BeginTurn {
    /// A turn started by one user message.
    pub fn user(text: impl Into<String>) -> BeginTurn {
        BeginTurn {
            stimuli: vec![EntryInput::user(text)],
            ..BeginTurn::default()
        }
    }
}

/// A begun turn.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnHandle {
    /// The turn id every later call names.
    pub turn_id: String,
    /// Its conversation.
    pub conversation_id: String,
    /// False when this was a retry of an earlier identical `begin_turn`.
    pub created: bool,
    /// Where the stimuli landed.
    pub stimuli: Vec<EntryRef>,
}

/// A tool call and its result, recorded together.
#[derive(Clone, Debug, Default)]
pub struct ToolExchange {
    /// Tool name (letters, digits, `_`, `-`); the kinds are `tool.<lower-case name>.call` and
    /// `.result`.
    pub tool_name: String,
    /// The call id (correlation id) the model gave the call.
    pub call_id: String,
    /// The call's arguments (usually a JSON object).
    pub input: Value,
    /// The result body exactly as the model saw it.
    pub result: String,
    /// Result status (default `success`).
    pub status: Option<String>,
    /// Caller-given id of the call entry.
    pub call_source_id: Option<String>,
    /// Caller-given id of the result entry (what reload cards name).
    pub result_source_id: Option<String>,
    /// When the call was made (default: `now`).
    pub timestamp: Option<f64>,
    /// When the result came back (default: the call's time).
    pub result_timestamp: Option<f64>,
}

/// Where a tool exchange landed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExchangeRefs {
    /// The call entry.
    pub call: EntryRef,
    /// The result entry.
    pub result: EntryRef,
}

/// How to complete a turn.
#[derive(Clone, Debug, Default)]
pub struct CompleteTurn {
    /// The model's final answer (`None`: the host closes the turn without one).
    pub final_text: Option<String>,
    /// Kind of the final entry (default `message.assistant`).
    pub kind: Option<String>,
    /// Caller-given id of the final entry.
    pub source_id: Option<String>,
    /// When the answer was given (default: `now`).
    pub timestamp: Option<f64>,
    /// Payload of the final entry.
    pub payload: Option<Value>,
}

impl CompleteTurn {
    /// Complete with a final answer.
    pub fn answer(text: impl Into<String>) -> CompleteTurn {
        CompleteTurn {
            final_text: Some(text.into()),
            ..CompleteTurn::default()
        }
    }
}

/// The settlement of one result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SettledResult {
    /// The result entry (what its card names).
    pub source_id: String,
    /// The call it answers.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// How it is shown from now on.
    pub classification: Classification,
    /// Size of the stored body.
    pub stored_utf8_bytes: u64,
    /// Size of the card, when folded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card_utf8_bytes: Option<u64>,
    /// Estimated tokens of the body.
    pub full_tokens: u64,
    /// Estimated tokens of what is shown (the card when folded).
    pub settled_tokens: u64,
}

/// What settlement did to a turn's results.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SettlementReport {
    /// One line per result, in order.
    pub results: Vec<SettledResult>,
    /// Results now shown as cards.
    pub folded: usize,
    /// Estimated tokens of all result bodies.
    pub full_tokens: u64,
    /// Estimated tokens of what is shown instead.
    pub settled_tokens: u64,
    /// `full_tokens - settled_tokens`.
    pub saved_tokens: u64,
}

/// A turn as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnView {
    /// Its id.
    pub turn_id: String,
    /// Its conversation.
    pub conversation_id: String,
    /// Open, completed or aborted.
    pub status: TurnStatus,
    /// Settlement policy (frozen at begin).
    pub policy: Policy,
    /// Time zone of its reload cards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// When it began (Unix seconds).
    pub began_at: f64,
    /// When it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<f64>,
    /// Why it was aborted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
    /// Entries in the turn.
    pub entries: u64,
    /// Correlation ids of actions still waiting for a result.
    pub pending: Vec<String>,
    /// The final entry, once completed with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_source_id: Option<String>,
    /// What settlement did (once the turn ended under `compact_after_terminal`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settlement: Option<SettlementReport>,
}

/// What `complete_turn` and `abort_turn` return.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Closed {
    /// The turn after the call.
    pub turn: TurnView,
    /// False when the turn was already closed the same way (a retry); nothing was written.
    pub changed: bool,
}

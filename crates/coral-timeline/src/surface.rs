//! The whole model-visible surface in one call (docs/timeline.md, "The surface", after
//! MemCore's `build_context_surface`): the context (summaries and the settled raw window,
//! quoted) as the first message, then the open turns (the current input and its tool round)
//! as native provider messages, from one snapshot.
//!
//! It is a pure function of what is stored, so it is byte-identical on every call until
//! something is written; between compactions its first message only grows at its end (a turn
//! that closes moves from the native part into the context, its long results as cards), so a
//! provider's prefix cache keeps hitting. The host adds its own system prompt before it and
//! sends the messages as they are: the current input is already in them, once.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::context::render_context;
use crate::error::{Error, Result};
use crate::history::{HistoryFormat, open_turn_rows, render};
use crate::layers::LayerSettings;
use crate::namespace::Namespace;
use crate::reply::{Failure, zone_of};
use crate::settle::estimate_tokens;
use crate::timeline::Timeline;

/// The role of the context message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextRole {
    /// A user message (the default: the host's system prompt stays its own).
    #[default]
    User,
    /// A system message, for hosts that keep memory beside their instructions.
    System,
}

impl ContextRole {
    /// Parse `user` or `system`.
    pub fn parse(s: &str) -> Result<ContextRole, String> {
        match s {
            "user" => Ok(ContextRole::User),
            "system" => Ok(ContextRole::System),
            other => Err(format!("context_role {other:?} is not user or system")),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            ContextRole::User => "user",
            ContextRole::System => "system",
        }
    }
}

/// What [`Timeline::surface`] renders.
#[derive(Clone, Debug, Default)]
pub struct SurfaceRequest {
    /// Provider message shape of the open turns.
    pub format: HistoryFormat,
    /// IANA zone of every time shown (default UTC).
    pub timezone: Option<String>,
    /// Visible limits and thresholds.
    pub settings: LayerSettings,
    /// The role of the context message.
    pub context_role: ContextRole,
}

/// The model-visible surface of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Surface {
    /// The messages to send after the host's system prompt: the context, then the open turns.
    pub messages: Vec<Value>,
    /// The zone every time is shown in (cards included).
    pub timezone: String,
    /// Messages at the start that are the context (1).
    pub context_messages: usize,
    /// The open turns the native part holds, oldest first.
    pub open_turns: Vec<String>,
    /// Semantic memories in the context.
    pub semantic: Vec<String>,
    /// Episodic summaries in the context.
    pub episodic: Vec<String>,
    /// Closed units in the context's raw window.
    pub raw_units: usize,
    /// Estimated tokens of the context message.
    pub context_tokens: u64,
    /// Estimated tokens of every message's text.
    pub tokens: u64,
    /// A compaction is due (call `timeline_compact` after this turn).
    pub compaction_due: bool,
    /// A roll-up is due.
    pub rollup_due: bool,
}

impl Timeline {
    /// The surface of `ns`'s conversation: context and open turns from one snapshot.
    pub fn surface(&self, ns: &Namespace, req: &SurfaceRequest) -> Result<Surface> {
        ns.validate()?;
        req.settings.validate()?;
        let (zone, zone_name) = zone_of(req.timezone.as_deref()).map_err(|f| match f {
            Failure::Invalid(m) | Failure::Unavailable(m) => Error::InvalidInput(m),
        })?;
        let hk = ns.hard_key();
        let conv = ns.conversation_id.as_str();
        let (context, rows, statuses) = self.read(|tx| {
            let context = render_context(tx, &hk, conv, &req.settings, zone, zone_name.clone())?;
            let (rows, statuses) = open_turn_rows(tx, &hk, conv)?;
            Ok((context, rows, statuses))
        })?;
        let open = render(&rows, &statuses, req.format, Some(zone));
        let mut open_turns: Vec<String> = Vec::new();
        for r in &rows {
            if let Some(t) = &r.turn_id
                && !open_turns.contains(t)
            {
                open_turns.push(t.clone());
            }
        }
        let mut messages = Vec::with_capacity(1 + open.messages.len());
        messages.push(json!({"role": req.context_role.as_str(), "content": context.text}));
        messages.extend(open.messages);
        let tokens = messages
            .iter()
            .map(|m| match &m["content"] {
                Value::String(s) => estimate_tokens(s),
                _ => estimate_tokens(&m["tool_calls"].to_string()),
            })
            .sum();
        Ok(Surface {
            messages,
            timezone: context.timezone,
            context_messages: 1,
            open_turns,
            semantic: context.semantic,
            episodic: context.episodic,
            raw_units: context.raw_units,
            context_tokens: context.tokens,
            tokens,
            compaction_due: context.compaction_due,
            rollup_due: context.rollup_due,
        })
    }
}

//! `coral timeline forget` and `coral timeline forgotten` (docs/timeline.md, "Forgetting"): the
//! operator's way to forget on purpose, through the same tools as the host's HTTP API.

use clap::Args;
use serde_json::{Map, Value, json};

/// What to forget: one id, or a filter over the conversation.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// One entry (its turn keeps a tombstone).
    #[arg(long, value_name = "ID")]
    entry: Option<String>,
    /// One closed turn, whole.
    #[arg(long, value_name = "ID")]
    turn: Option<String>,
    /// One summary or semantic memory (with its older versions).
    #[arg(long, value_name = "ID")]
    memory: Option<String>,
    /// Filter: entries from this time (RFC 3339, or local in --timezone).
    #[arg(long, value_name = "TIME")]
    from: Option<String>,
    /// Filter: entries before this time.
    #[arg(long, value_name = "TIME")]
    to: Option<String>,
    /// Filter: entries of this kind, exact or ending in * (repeatable).
    #[arg(long = "kind", value_name = "KIND")]
    kinds: Vec<String>,
    /// Filter: entries said by this actor.
    #[arg(long, value_name = "NAME")]
    actor: Option<String>,
    /// Filter: every entry of the conversation.
    #[arg(long)]
    whole_conversation: bool,
    /// Apply the filter to every conversation of the user (with --whole-conversation: forget
    /// the whole user).
    #[arg(long)]
    all_conversations: bool,
    /// Also forget the summaries made from it (default: mark them stale).
    #[arg(long)]
    cascade: bool,
    /// A label for the record (privacy_request).
    #[arg(long, value_name = "LABEL")]
    reason: Option<String>,
}

impl ForgetArgs {
    /// The `timeline_forget` arguments besides the namespace, added to `m`.
    pub fn add_to(&self, mut m: Map<String, Value>) -> Map<String, Value> {
        for (key, value) in [
            ("entry_id", &self.entry),
            ("turn_id", &self.turn),
            ("memory_id", &self.memory),
            ("start_at", &self.from),
            ("end_at", &self.to),
            ("actor", &self.actor),
            ("reason", &self.reason),
        ] {
            if let Some(v) = value {
                m.insert(key.into(), json!(v));
            }
        }
        if !self.kinds.is_empty() {
            m.insert("kinds".into(), json!(self.kinds));
        }
        for (key, on) in [
            ("whole_conversation", self.whole_conversation),
            ("cross_conversation", self.all_conversations),
            ("cascade", self.cascade),
        ] {
            if on {
                m.insert(key.into(), json!(true));
            }
        }
        m
    }
}

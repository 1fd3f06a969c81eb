//! The model-visible history of a conversation: provider messages built from the stored
//! entries, with finished turns' long tool results shown as their reload cards.
//!
//! Rendering is a pure function of the stored rows (no clock, no map iteration order), so the
//! same database gives the same bytes on every call: provider prefix caches keep hitting until
//! something new is written, and then the history only grows at its end, except where a turn
//! that just ended folds its results.

use std::collections::HashMap;

use chrono_tz::Tz;
use rusqlite::params;
use serde::Serialize;
use serde_json::{Value, json};

use crate::entry::{Origin, TurnRole};
use crate::error::Result;
use crate::namespace::Namespace;
use crate::rows::{ROW_SELECT, Row, Unanswered};
use crate::timeline::Timeline;
use crate::turn::TurnStatus;

/// The message shape a provider expects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryFormat {
    /// OpenAI chat completions: `user` / `assistant` messages, assistant `tool_calls`
    /// (parallel calls in one message) and `tool` messages with `tool_call_id`.
    #[default]
    OpenAi,
    /// Plain text roles only (`user`, `assistant`, `tool`), for models without native tool
    /// calling: a call is an assistant line, a result a `tool` message naming the call.
    Plain,
}

impl HistoryFormat {
    /// Parse `openai` or `plain`.
    pub fn parse(s: &str) -> Result<HistoryFormat, String> {
        match s {
            "openai" => Ok(HistoryFormat::OpenAi),
            "plain" => Ok(HistoryFormat::Plain),
            other => Err(format!("format {other:?} is not openai or plain")),
        }
    }
}

/// Estimated tokens of a history, with and without settlement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HistoryTokens {
    /// Every result shown in full.
    pub full: u64,
    /// As rendered: finished turns' long results shown as cards.
    pub settled: u64,
    /// `full - settled`.
    pub saved: u64,
}

/// A conversation's model-visible history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct History {
    /// The messages, oldest first.
    pub messages: Vec<Value>,
    /// Turns in it.
    pub turns: usize,
    /// Entries rendered.
    pub entries: usize,
    /// Results shown as reload cards.
    pub folded: usize,
    /// Token estimates (over the entries' texts).
    pub tokens: HistoryTokens,
    /// The zone of the reload cards' `time:` lines, when one was asked for (else each card
    /// keeps its turn's zone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

impl Timeline {
    /// The model-visible history of `ns`'s conversation in `format`. Turns appear whole and in
    /// the order they began; open turns show everything in full; aborted turns leave out calls
    /// that never got a result (providers reject an unanswered call).
    pub fn history(&self, ns: &Namespace, format: HistoryFormat) -> Result<History> {
        self.history_rows(ns, format, None)
    }

    /// [`Timeline::history`] with every reload card's time in `timezone` (an IANA name), which
    /// the answer names: one zone for every time it shows.
    pub fn history_in(
        &self,
        ns: &Namespace,
        format: HistoryFormat,
        timezone: &str,
    ) -> Result<History> {
        let zone = crate::tz::parse_zone(timezone).map_err(crate::error::Error::InvalidInput)?;
        let mut history = self.history_rows(ns, format, Some(zone))?;
        history.timezone = Some(timezone.trim().to_string());
        Ok(history)
    }

    fn history_rows(
        &self,
        ns: &Namespace,
        format: HistoryFormat,
        zone: Option<Tz>,
    ) -> Result<History> {
        ns.validate()?;
        let hk = ns.hard_key();
        let (rows, statuses) = self.read(|tx| {
            let rows = tx
                .prepare_cached(&format!(
                    "{ROW_SELECT} WHERE e.hard_key = ?1 AND e.conversation_id = ?2 \
                     ORDER BY e.unit_seq, e.seq_no"
                ))?
                .query_map(params![hk, ns.conversation_id], Row::from_sql)?
                .collect::<rusqlite::Result<Vec<Row>>>()?;
            let statuses = tx
                .prepare_cached(
                    "SELECT turn_id, status FROM turns WHERE hard_key = ?1 AND conversation_id = ?2",
                )?
                .query_map(params![hk, ns.conversation_id], |r| {
                    let turn_id: String = r.get(0)?;
                    let status = TurnStatus::column(r, 1, &turn_id)?;
                    Ok((turn_id, status))
                })?
                .collect::<rusqlite::Result<HashMap<String, TurnStatus>>>()?;
            Ok((rows, statuses))
        })?;
        Ok(render(&rows, &statuses, format, zone))
    }
}

/// The rows of `conv`'s open turns, in order, and their statuses: the part of a surface after
/// the context.
pub(crate) fn open_turn_rows(
    tx: &rusqlite::Transaction<'_>,
    hk: &str,
    conv: &str,
) -> Result<(Vec<Row>, HashMap<String, TurnStatus>)> {
    let rows = tx
        .prepare_cached(&format!(
            "{ROW_SELECT} WHERE e.hard_key = ?1 AND e.conversation_id = ?2 AND e.unit_seq IN \
             (SELECT unit_seq FROM turns WHERE hard_key = ?1 AND conversation_id = ?2 \
             AND status = 'open') ORDER BY e.unit_seq, e.seq_no"
        ))?
        .query_map(params![hk, conv], Row::from_sql)?
        .collect::<rusqlite::Result<Vec<Row>>>()?;
    let statuses = rows
        .iter()
        .filter_map(|r| r.turn_id.clone())
        .map(|t| (t, TurnStatus::Open))
        .collect();
    Ok((rows, statuses))
}

/// The messages of `rows` (whole units, in order); cards' times in `zone` when given.
pub(crate) fn render(
    rows: &[Row],
    statuses: &HashMap<String, TurnStatus>,
    format: HistoryFormat,
    zone: Option<Tz>,
) -> History {
    let mut out = History {
        messages: Vec::new(),
        turns: 0,
        entries: 0,
        folded: 0,
        tokens: HistoryTokens::default(),
        timezone: None,
    };
    let mut start = 0;
    while start < rows.len() {
        let unit = rows[start].unit_seq;
        let end = rows[start..]
            .iter()
            .position(|r| r.unit_seq != unit)
            .map_or(rows.len(), |n| start + n);
        let group = &rows[start..end];
        match group[0].turn_id.as_deref() {
            Some(turn) => {
                out.turns += 1;
                let aborted = statuses.get(turn) == Some(&TurnStatus::Aborted);
                render_turn(group, aborted, format, zone, &mut out);
            }
            None => group.iter().for_each(|r| push_plain_message(r, &mut out)),
        }
        start = end;
    }
    out.tokens.saved = out.tokens.full.saturating_sub(out.tokens.settled);
    out
}

fn count(row: &Row, out: &mut History) {
    out.entries += 1;
    out.tokens.full += row.tokens as u64;
    out.tokens.settled += row.visible_tokens();
    if row.folded() {
        out.folded += 1;
    }
}

/// A message, a stimulus, a final answer or an event: `user` or `assistant` text. Kinds other
/// than plain messages are labelled so the model sees what they were.
fn push_plain_message(row: &Row, out: &mut History) {
    count(row, out);
    let role = if row.origin == Origin::Assistant {
        "assistant"
    } else {
        "user"
    };
    let content = match row.kind.as_str() {
        "message.user" | "message.assistant" => row.text.clone(),
        kind => format!("[{kind}] {}", row.text),
    };
    out.messages.push(json!({"role": role, "content": content}));
}

fn render_turn(
    rows: &[Row],
    aborted: bool,
    format: HistoryFormat,
    zone: Option<Tz>,
    out: &mut History,
) {
    let unanswered = Unanswered::of(rows, aborted);
    // Consecutive calls are one assistant message (parallel tool calls).
    let mut batch: Vec<&Row> = Vec::new();
    for row in rows {
        match row.turn_role {
            TurnRole::Action => {
                if !unanswered.hides(row) {
                    batch.push(row);
                }
            }
            TurnRole::Observation => {
                flush_calls(&mut batch, format, out);
                count(row, out);
                let call_id = row.correlation_id.as_deref().unwrap_or("");
                let content = match zone {
                    Some(zone) => row.visible_text_in(zone),
                    None => std::borrow::Cow::Borrowed(row.visible_text()),
                };
                out.messages.push(match format {
                    HistoryFormat::OpenAi => {
                        json!({"role": "tool", "tool_call_id": call_id, "content": content})
                    }
                    HistoryFormat::Plain => json!({
                        "role": "tool",
                        "name": row.tool_name.as_deref().unwrap_or(&row.kind),
                        "tool_call_id": call_id,
                        "content": content,
                    }),
                });
            }
            _ => {
                flush_calls(&mut batch, format, out);
                push_plain_message(row, out);
            }
        }
    }
    flush_calls(&mut batch, format, out);
}

fn flush_calls(batch: &mut Vec<&Row>, format: HistoryFormat, out: &mut History) {
    if batch.is_empty() {
        return;
    }
    for row in batch.iter() {
        count(row, out);
    }
    match format {
        HistoryFormat::OpenAi => {
            let calls: Vec<Value> = batch
                .iter()
                .map(|r| {
                    json!({
                        "id": r.correlation_id.as_deref().unwrap_or(""),
                        "type": "function",
                        "function": {
                            "name": r.tool_name.as_deref().unwrap_or(&r.kind),
                            "arguments": r.text,
                        },
                    })
                })
                .collect();
            out.messages
                .push(json!({"role": "assistant", "content": Value::Null, "tool_calls": calls}));
        }
        HistoryFormat::Plain => {
            for r in batch.iter() {
                out.messages.push(json!({
                    "role": "assistant",
                    "content": format!(
                        "[tool call {}] {} {}",
                        r.correlation_id.as_deref().unwrap_or(""),
                        r.tool_name.as_deref().unwrap_or(&r.kind),
                        r.text
                    ),
                }));
            }
        }
    }
    batch.clear();
}

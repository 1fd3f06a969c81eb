//! Writing one entry: its checks and defaults (`NewEntry`), the insert or the identical entry a
//! retry already wrote, the conversation's next sequence number, and closing a unit.

use rusqlite::{OptionalExtension, Transaction, params};
use serde_json::Value;

use crate::entry::{
    EntryInput, EntryRef, MAX_TEXT_BYTES, Origin, TurnRole, check_kind, check_status,
    check_timestamp, tool_segment,
};
use crate::error::{Error, Result, invalid};
use crate::namespace::{Namespace, check_id};
use crate::rows::find_row;
use crate::settle::{estimate_tokens, sha256_hex};
use crate::timeline::Timeline;

/// A checked entry ready to insert.
pub(crate) struct NewEntry<'a> {
    pub conversation_id: &'a str,
    pub unit: Option<(i64, f64)>,
    pub source_id: Option<String>,
    pub kind: String,
    pub origin: Origin,
    pub role: TurnRole,
    pub actor: Option<String>,
    pub turn_id: Option<String>,
    pub correlation_id: Option<String>,
    pub tool_name: Option<String>,
    pub status: Option<String>,
    pub ts: f64,
    pub text: String,
    pub payload: Option<String>,
}

/// Refuse an empty (unless `allow_empty`) or oversized `text`, named `what`.
pub(crate) fn check_text(what: &str, text: &str, allow_empty: bool) -> Result<()> {
    if !allow_empty && text.trim().is_empty() {
        return invalid(format!("{what} is empty: give some text"));
    }
    if text.len() > MAX_TEXT_BYTES {
        return invalid(format!(
            "{what} is {} bytes; the limit is {MAX_TEXT_BYTES} (store large files elsewhere and \
             record a pointer)",
            text.len()
        ));
    }
    Ok(())
}

fn canonical(payload: &Option<Value>) -> Option<String> {
    payload
        .as_ref()
        .filter(|v| !v.is_null())
        .map(Value::to_string)
}

/// The name a call is shown under: the given tool name, or the middle of `tool.<name>.call`,
/// or the kind with dots made underscores (provider function names allow no dots).
fn action_tool_name(input: &EntryInput) -> Result<String> {
    if let Some(name) = &input.tool_name {
        tool_segment(name)?;
        return Ok(name.clone());
    }
    let parts: Vec<&str> = input.kind.split('.').collect();
    Ok(match parts.as_slice() {
        ["tool", name, _] => (*name).to_string(),
        _ => input.kind.replace('.', "_"),
    })
}

impl<'a> NewEntry<'a> {
    /// Validate `input` for `role` and resolve its defaults.
    pub(crate) fn from_input(
        ns: &Namespace,
        input: &EntryInput,
        role: TurnRole,
        turn_id: Option<&str>,
        conversation_id: &'a str,
        now: f64,
    ) -> Result<NewEntry<'a>> {
        check_kind(&input.kind)?;
        let what = match role {
            TurnRole::Observation => "observation text",
            TurnRole::Action => "action text",
            _ => "text",
        };
        check_text(what, &input.text, role == TurnRole::Observation)?;
        if let Some(id) = &input.source_id {
            check_id("source_id", id)?;
        }
        if let Some(id) = &input.correlation_id {
            check_id("correlation_id", id)?;
        }
        if let Some(s) = &input.status {
            check_status(s)?;
        }
        if let Some(a) = &input.actor
            && (a.trim().is_empty() || a.chars().count() > 128 || a.chars().any(char::is_control))
        {
            return invalid(format!("actor {a:?} must be 1 to 128 printable characters"));
        }
        let ts = input.timestamp.unwrap_or(now);
        check_timestamp(ts)?;
        match role {
            TurnRole::Action | TurnRole::Observation if input.correlation_id.is_none() => {
                return invalid(format!(
                    "an {} needs a correlation_id (the tool call id) to pair the call with its \
                     result",
                    role.as_str()
                ));
            }
            TurnRole::Stimulus | TurnRole::Final | TurnRole::None
                if input.correlation_id.is_some() =>
            {
                return invalid(
                    "correlation_id belongs to actions and observations only (tool calls and \
                     their results)",
                );
            }
            _ => {}
        }
        let tool_name = match role {
            TurnRole::Action => Some(action_tool_name(input)?),
            _ => None,
        };
        Ok(NewEntry {
            conversation_id,
            unit: None,
            source_id: input.source_id.clone(),
            kind: input.kind.clone(),
            origin: input
                .origin
                .unwrap_or_else(|| Origin::for_kind(&input.kind)),
            role,
            actor: input.actor.clone().or_else(|| ns.actor.clone()),
            turn_id: turn_id.map(str::to_string),
            correlation_id: input.correlation_id.clone(),
            tool_name,
            status: match role {
                TurnRole::Observation => Some(input.status.clone().unwrap_or("success".into())),
                _ => input.status.clone(),
            },
            ts,
            text: input.text.clone(),
            payload: canonical(&input.payload),
        })
    }
}

impl Timeline {
    /// [`NewEntry::from_input`], then secrets in its text and payload replaced by a marker
    /// when redaction is on: every entry is made here, so nothing written, hashed for a retry's
    /// check or settled into a card ever holds one.
    pub(crate) fn new_entry<'a>(
        &self,
        ns: &Namespace,
        input: &EntryInput,
        role: TurnRole,
        turn_id: Option<&str>,
        conversation_id: &'a str,
        now: f64,
    ) -> Result<NewEntry<'a>> {
        let mut e = NewEntry::from_input(ns, input, role, turn_id, conversation_id, now)?;
        if self.redaction.is_on() {
            // Tool arguments are JSON text: redacted value by value, so that a secret under a
            // key that names one (`{"token": "..."}`) is found and the JSON stays valid.
            let json = matches!(e.text.trim_start().as_bytes().first(), Some(b'{' | b'['))
                .then(|| serde_json::from_str::<Value>(&e.text).ok())
                .flatten();
            let found = match json {
                Some(mut value) => {
                    let found = self.redaction.apply_json(&mut value);
                    if !found.is_empty() {
                        e.text = value.to_string();
                    }
                    found
                }
                None => self.redaction.apply_owned(&mut e.text),
            };
            if !found.is_empty() {
                // Markers can be longer than the secrets they replace.
                check_text("the text with its secrets replaced", &e.text, true)?;
            }
            if let Some(payload) = &mut e.payload
                && let Ok(mut value) = serde_json::from_str::<Value>(payload)
                && !self.redaction.apply_json(&mut value).is_empty()
            {
                *payload = value.to_string();
            }
        }
        Ok(e)
    }

    /// Insert `e` (or find the identical entry a retry already wrote). `unit` is the
    /// `(unit_seq, unit_ts)` of its turn; standalone entries are their own unit.
    pub(crate) fn insert_entry(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        e: &NewEntry<'_>,
    ) -> Result<EntryRef> {
        if let Some(id) = &e.source_id
            && let Some(r) = same_entry(tx, hk, id, e)?
        {
            return Ok(r);
        }
        let sha = sha256_hex(&e.text);
        let seq_no = next_seq(tx, hk, e.conversation_id)?;
        let (unit_seq, unit_ts) = e.unit.unwrap_or((seq_no, e.ts));
        let source_id = match &e.source_id {
            Some(id) => id.clone(),
            None => self.make_id("src", &[hk, e.conversation_id, &seq_no.to_string()]),
        };
        tx.prepare_cached(
            "INSERT INTO entries (hard_key, conversation_id, seq_no, unit_seq, unit_ts, \
             source_id, kind, origin, turn_role, actor, turn_id, correlation_id, tool_name, \
             status, ts, text, payload, chars, bytes, tokens, sha256) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
             ?18, ?19, ?20, ?21)",
        )?
        .execute(params![
            hk,
            e.conversation_id,
            seq_no,
            unit_seq,
            unit_ts,
            source_id,
            e.kind,
            e.origin.as_str(),
            e.role.as_str(),
            e.actor,
            e.turn_id,
            e.correlation_id,
            e.tool_name,
            e.status,
            e.ts,
            e.text,
            e.payload,
            e.text.chars().count() as i64,
            e.text.len() as i64,
            estimate_tokens(&e.text) as i64,
            sha,
        ])?;
        if e.turn_id.is_none() {
            // A standalone entry is a unit that closes as it is written.
            close_unit(tx, hk, e.conversation_id, unit_seq)?;
        }
        Ok(EntryRef {
            source_id,
            seq_no,
            created: true,
        })
    }
}

/// The stored entry with this source id, if it is exactly `e` (a retry).
pub(crate) fn same_entry(
    tx: &Transaction<'_>,
    hk: &str,
    id: &str,
    e: &NewEntry<'_>,
) -> Result<Option<EntryRef>> {
    let Some(stored) = find_row(tx, hk, id, None)? else {
        return Ok(None);
    };
    let same = stored.conversation_id == e.conversation_id
        && stored.kind == e.kind
        && stored.turn_id == e.turn_id
        && stored.correlation_id == e.correlation_id
        && stored.turn_role == e.role
        && stored.sha256 == sha256_hex(&e.text);
    if !same {
        return Err(Error::Conflict(format!(
            "source_id {id:?} is already used by a different entry; give each entry its own \
             id (or none, and one is generated)"
        )));
    }
    Ok(Some(EntryRef {
        source_id: id.to_string(),
        seq_no: stored.seq_no,
        created: false,
    }))
}

/// The next sequence number of a conversation: one index seek (a wrapped `MAX()` would scan).
pub(crate) fn next_seq(tx: &Transaction<'_>, hk: &str, conversation_id: &str) -> Result<i64> {
    let last: Option<i64> = tx
        .prepare_cached(
            "SELECT seq_no FROM entries WHERE hard_key = ?1 AND conversation_id = ?2 \
             ORDER BY seq_no DESC LIMIT 1",
        )?
        .query_row(params![hk, conversation_id], |r| r.get(0))
        .optional()?;
    Ok(last.unwrap_or(0) + 1)
}

/// Record that a unit (a turn, or a standalone entry) closed: its place in the context.
pub(crate) fn close_unit(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
    unit_seq: i64,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO closures (hard_key, conversation_id, unit_seq) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![hard_key, conversation_id, unit_seq])?;
    Ok(())
}

//! Writing: turns (begin, actions, observations, tool exchanges, complete, abort), standalone
//! entries, recovery of turns whose process died, and settlement when a turn ends.

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;
use serde_json::Value;

use crate::entry::{
    EntryInput, EntryRef, MAX_TEXT_BYTES, Origin, TurnRole, check_kind, check_status,
    check_timestamp, tool_segment,
};
use crate::error::{Error, Result, invalid};
use crate::namespace::{Namespace, check_id};
use crate::owner::Owner;
use crate::settle::{
    CardFields, Classification, Policy, classify, estimate_tokens, reload_card, sha256_hex,
};
use crate::timeline::{Timeline, find_row};
use crate::tz;

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
    fn parse(s: &str) -> TurnStatus {
        match s {
            "completed" => TurnStatus::Completed,
            "aborted" => TurnStatus::Aborted,
            _ => TurnStatus::Open,
        }
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

/// A turn that recovery aborted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recovered {
    /// The turn.
    pub turn_id: String,
    /// Its conversation.
    pub conversation_id: String,
}

/// The turn columns [`TurnRow::from_sql`] reads.
const TURN_COLUMNS: &str = "turn_pk, turn_id, conversation_id, status, policy, timezone, \
     unit_seq, began_at, ended_at, end_reason, final_source_id";

struct TurnRow {
    pk: i64,
    turn_id: String,
    conversation_id: String,
    status: TurnStatus,
    policy: Policy,
    timezone: Option<String>,
    unit_seq: i64,
    began_at: f64,
    ended_at: Option<f64>,
    end_reason: Option<String>,
    final_source_id: Option<String>,
}

impl TurnRow {
    fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<TurnRow> {
        let policy: String = r.get(4)?;
        let status: String = r.get(3)?;
        Ok(TurnRow {
            pk: r.get(0)?,
            turn_id: r.get(1)?,
            conversation_id: r.get(2)?,
            status: TurnStatus::parse(&status),
            policy: Policy::parse(&policy).unwrap_or(Policy::Full),
            timezone: r.get(5)?,
            unit_seq: r.get(6)?,
            began_at: r.get(7)?,
            ended_at: r.get(8)?,
            end_reason: r.get(9)?,
            final_source_id: r.get(10)?,
        })
    }

    fn require_open(&self) -> Result<()> {
        match self.status {
            TurnStatus::Open => Ok(()),
            other => Err(Error::TurnClosed {
                turn_id: self.turn_id.clone(),
                status: other.as_str().into(),
            }),
        }
    }
}

/// What settlement needs of a result: everything but its body.
struct Observation {
    source_id: String,
    correlation_id: Option<String>,
    tool_name: Option<String>,
    kind: String,
    status: Option<String>,
    ts: f64,
    chars: i64,
    bytes: i64,
    tokens: i64,
    sha256: String,
}

/// A checked entry ready to insert.
struct NewEntry<'a> {
    conversation_id: &'a str,
    unit: Option<(i64, f64)>,
    source_id: Option<String>,
    kind: String,
    origin: Origin,
    role: TurnRole,
    actor: Option<String>,
    turn_id: Option<String>,
    correlation_id: Option<String>,
    tool_name: Option<String>,
    status: Option<String>,
    ts: f64,
    text: String,
    payload: Option<String>,
}

fn check_text(what: &str, text: &str, allow_empty: bool) -> Result<()> {
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
    fn from_input(
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
    /// Insert `e` (or find the identical entry a retry already wrote). `unit` is the
    /// `(unit_seq, unit_ts)` of its turn; standalone entries are their own unit.
    fn insert_entry(&self, tx: &Transaction<'_>, hk: &str, e: &NewEntry<'_>) -> Result<EntryRef> {
        if let Some(id) = &e.source_id
            && let Some(r) = self.same_entry(tx, hk, id, e)?
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

    fn load_turn(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        ns: &Namespace,
        turn_id: &str,
    ) -> Result<TurnRow> {
        check_id("turn_id", turn_id)?;
        tx.prepare_cached(&format!(
            "SELECT {TURN_COLUMNS} FROM turns \
             WHERE hard_key = ?1 AND turn_id = ?2 AND conversation_id = ?3"
        ))?
        .query_row(params![hk, turn_id, ns.conversation_id], TurnRow::from_sql)
        .optional()?
        .ok_or_else(|| Error::UnknownTurn(turn_id.to_string()))
    }

    fn touch_turn(&self, tx: &Transaction<'_>, hk: &str, turn: &TurnRow, at: f64) -> Result<()> {
        tx.prepare_cached(
            "UPDATE turns SET last_at = MAX(last_at, ?1) WHERE turn_pk = ?2 AND hard_key = ?3",
        )?
        .execute(params![at, turn.pk, hk])?;
        Ok(())
    }

    /// Begin a turn with its stimuli. A retry with the same `turn_id` (or the same stimulus
    /// source ids) and the same stimuli returns the first turn; anything else reusing them is
    /// a conflict.
    pub fn begin_turn(&self, ns: &Namespace, begin: &BeginTurn, now: f64) -> Result<TurnHandle> {
        ns.validate()?;
        if begin.stimuli.is_empty() || begin.stimuli.len() > MAX_STIMULI {
            return invalid(format!(
                "a turn begins with 1 to {MAX_STIMULI} stimuli (the user's message), got {}",
                begin.stimuli.len()
            ));
        }
        if let Some(id) = &begin.turn_id {
            check_id("turn_id", id)?;
        }
        if let Some(zone) = &begin.timezone {
            tz::parse_zone(zone).map_err(Error::InvalidInput)?;
        }
        let conv = ns.conversation_id.as_str();
        let mut entries = begin
            .stimuli
            .iter()
            .map(|s| NewEntry::from_input(ns, s, TurnRole::Stimulus, None, conv, now))
            .collect::<Result<Vec<_>>>()?;
        let hk = ns.hard_key();
        self.write(|tx| {
            if let Some(existing) = self.find_retry(tx, &hk, ns, begin)? {
                return Ok(existing);
            }
            let seq_no = next_seq(tx, &hk, conv)?;
            let turn_id = match &begin.turn_id {
                Some(id) => id.clone(),
                None => self.make_id("turn", &[&hk, conv, &seq_no.to_string()]),
            };
            let began_at = entries[0].ts;
            tx.prepare_cached(
                "INSERT INTO turns (hard_key, turn_id, conversation_id, actor, status, policy, \
                 timezone, owner, unit_seq, began_at, last_at) \
                 VALUES (?1, ?2, ?3, ?4, 'open', ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                hk,
                turn_id,
                conv,
                ns.actor,
                begin.policy.as_str(),
                begin.timezone.as_deref().map(str::trim),
                self.owner.encode(),
                seq_no,
                began_at,
                began_at.max(now),
            ])?;
            let mut stimuli = Vec::with_capacity(entries.len());
            for e in &mut entries {
                e.turn_id = Some(turn_id.clone());
                e.unit = Some((seq_no, began_at));
                let r = self.insert_entry(tx, &hk, e)?;
                if !r.created {
                    return Err(Error::Conflict(format!(
                        "stimulus source_id {:?} already belongs to another entry",
                        r.source_id
                    )));
                }
                stimuli.push(r);
            }
            Ok(TurnHandle {
                turn_id,
                conversation_id: conv.to_string(),
                created: true,
                stimuli,
            })
        })
    }

    /// The turn an identical earlier `begin_turn` created, if this call is its retry.
    fn find_retry(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        ns: &Namespace,
        begin: &BeginTurn,
    ) -> Result<Option<TurnHandle>> {
        let by_id = match &begin.turn_id {
            Some(id) => tx
                .prepare_cached("SELECT turn_id FROM turns WHERE hard_key = ?1 AND turn_id = ?2")?
                .query_row(params![hk, id], |r| r.get::<_, String>(0))
                .optional()?,
            None => None,
        };
        let by_stimulus = match &begin.stimuli[0].source_id {
            Some(id) => tx
                .prepare_cached(
                    "SELECT turn_id FROM entries WHERE hard_key = ?1 AND source_id = ?2",
                )?
                .query_row(params![hk, id], |r| r.get::<_, Option<String>>(0))
                .optional()?
                .map(|t| t.unwrap_or_default()),
            None => None,
        };
        let Some(turn_id) = by_id.or(by_stimulus) else {
            return Ok(None);
        };
        let conflict = || {
            Error::Conflict(format!(
                "turn {turn_id:?} or one of its stimuli already exists with different content; \
                 a retry must repeat the first begin_turn exactly"
            ))
        };
        if turn_id.is_empty() {
            return Err(conflict());
        }
        let mut stmt = tx.prepare_cached(
            "SELECT source_id, kind, sha256, seq_no, conversation_id FROM entries \
             WHERE hard_key = ?1 AND turn_id = ?2 AND turn_role = 'stimulus' ORDER BY seq_no",
        )?;
        let stored = stmt
            .query_map(params![hk, turn_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let same = stored.len() == begin.stimuli.len()
            && stored.iter().zip(&begin.stimuli).all(|(s, given)| {
                s.4 == ns.conversation_id
                    && s.1 == given.kind
                    && s.2 == sha256_hex(&given.text)
                    && given.source_id.as_ref().is_none_or(|id| *id == s.0)
            })
            && begin.turn_id.as_ref().is_none_or(|id| *id == turn_id);
        if !same {
            return Err(conflict());
        }
        Ok(Some(TurnHandle {
            turn_id,
            conversation_id: ns.conversation_id.clone(),
            created: false,
            stimuli: stored
                .into_iter()
                .map(|(source_id, _, _, seq_no, _)| EntryRef {
                    source_id,
                    seq_no,
                    created: false,
                })
                .collect(),
        }))
    }

    /// Record an action (a tool call) in an open turn. Its `correlation_id` must be new in the
    /// turn; its text is what the model sent (tool arguments as JSON).
    pub fn append_action(
        &self,
        ns: &Namespace,
        turn_id: &str,
        input: &EntryInput,
        now: f64,
    ) -> Result<EntryRef> {
        ns.validate()?;
        let conv = ns.conversation_id.as_str();
        let mut e = NewEntry::from_input(ns, input, TurnRole::Action, Some(turn_id), conv, now)?;
        let hk = ns.hard_key();
        self.write(|tx| {
            let turn = self.load_turn(tx, &hk, ns, turn_id)?;
            turn.require_open()?;
            e.unit = Some((turn.unit_seq, turn.began_at));
            let corr = e.correlation_id.clone().unwrap_or_default();
            if let Some(id) = &e.source_id
                && let Some(r) = self.same_entry(tx, &hk, id, &e)?
            {
                return Ok(r);
            }
            if self.action_of(tx, &hk, turn_id, &corr)?.is_some() {
                return Err(duplicate_call(&corr, turn_id));
            }
            let r = self.insert_entry(tx, &hk, &e)?;
            self.touch_turn(tx, &hk, &turn, e.ts)?;
            Ok(r)
        })
    }

    /// Record the observation (a tool result) of an earlier action of the same open turn,
    /// named by its `correlation_id`. The text is the body exactly as the model saw it; it may
    /// be empty.
    pub fn append_observation(
        &self,
        ns: &Namespace,
        turn_id: &str,
        input: &EntryInput,
        now: f64,
    ) -> Result<EntryRef> {
        ns.validate()?;
        let conv = ns.conversation_id.as_str();
        let mut e =
            NewEntry::from_input(ns, input, TurnRole::Observation, Some(turn_id), conv, now)?;
        let hk = ns.hard_key();
        self.write(|tx| {
            let turn = self.load_turn(tx, &hk, ns, turn_id)?;
            turn.require_open()?;
            e.unit = Some((turn.unit_seq, turn.began_at));
            let corr = e.correlation_id.clone().unwrap_or_default();
            if let Some(id) = &e.source_id
                && let Some(r) = self.same_entry(tx, &hk, id, &e)?
            {
                return Ok(r);
            }
            let Some(tool) = self.action_of(tx, &hk, turn_id, &corr)? else {
                return invalid(format!(
                    "no action with correlation_id {corr:?} in turn {turn_id:?}: record the call \
                     (append_action) before its result"
                ));
            };
            if self.observation_of(tx, &hk, turn_id, &corr)?.is_some() {
                return Err(Error::Conflict(format!(
                    "the call {corr:?} in turn {turn_id:?} already has its result"
                )));
            }
            e.tool_name = Some(tool);
            let r = self.insert_entry(tx, &hk, &e)?;
            self.touch_turn(tx, &hk, &turn, e.ts)?;
            Ok(r)
        })
    }

    /// Record a tool call and its result at once (both or neither). Repeating the same
    /// exchange is a retry and returns the first; the same call id with other content is a
    /// conflict.
    pub fn record_tool_exchange(
        &self,
        ns: &Namespace,
        turn_id: &str,
        x: &ToolExchange,
        now: f64,
    ) -> Result<ExchangeRefs> {
        ns.validate()?;
        let segment = tool_segment(&x.tool_name)?;
        let call_ts = x.timestamp.unwrap_or(now);
        let call = EntryInput {
            kind: format!("tool.{segment}.call"),
            text: x.input.to_string(),
            source_id: x.call_source_id.clone(),
            timestamp: Some(call_ts),
            correlation_id: Some(x.call_id.clone()),
            tool_name: Some(x.tool_name.clone()),
            ..EntryInput::default()
        };
        let result = EntryInput {
            kind: format!("tool.{segment}.result"),
            text: x.result.clone(),
            source_id: x.result_source_id.clone(),
            timestamp: Some(x.result_timestamp.unwrap_or(call_ts)),
            correlation_id: Some(x.call_id.clone()),
            status: x.status.clone(),
            ..EntryInput::default()
        };
        let conv = ns.conversation_id.as_str();
        let mut call_e =
            NewEntry::from_input(ns, &call, TurnRole::Action, Some(turn_id), conv, now)?;
        let mut result_e =
            NewEntry::from_input(ns, &result, TurnRole::Observation, Some(turn_id), conv, now)?;
        result_e.tool_name = Some(x.tool_name.clone());
        let hk = ns.hard_key();
        self.write(|tx| {
            let turn = self.load_turn(tx, &hk, ns, turn_id)?;
            turn.require_open()?;
            call_e.unit = Some((turn.unit_seq, turn.began_at));
            result_e.unit = call_e.unit;
            if self.action_of(tx, &hk, turn_id, &x.call_id)?.is_some() {
                let stored_call = self.entry_sha(tx, &hk, turn_id, &x.call_id, "action")?;
                let stored_result = self.observation_of(tx, &hk, turn_id, &x.call_id)?;
                let status = result_e.status.clone().unwrap_or_default();
                return match (stored_call, stored_result) {
                    (
                        Some((call_id, call_seq, call_sha)),
                        Some((res_id, res_seq, res_sha, res_status)),
                    ) if call_sha == sha256_hex(&call_e.text)
                        && res_sha == sha256_hex(&result_e.text)
                        && res_status == status
                        && x.call_source_id.as_ref().is_none_or(|i| *i == call_id)
                        && x.result_source_id.as_ref().is_none_or(|i| *i == res_id) =>
                    {
                        Ok(ExchangeRefs {
                            call: EntryRef {
                                source_id: call_id,
                                seq_no: call_seq,
                                created: false,
                            },
                            result: EntryRef {
                                source_id: res_id,
                                seq_no: res_seq,
                                created: false,
                            },
                        })
                    }
                    _ => Err(duplicate_call(&x.call_id, turn_id)),
                };
            }
            let call = self.insert_entry(tx, &hk, &call_e)?;
            let result = self.insert_entry(tx, &hk, &result_e)?;
            if !call.created || !result.created {
                return Err(Error::Conflict(
                    "call_source_id or result_source_id already belongs to another entry".into(),
                ));
            }
            self.touch_turn(tx, &hk, &turn, result_e.ts.max(call_e.ts))?;
            Ok(ExchangeRefs { call, result })
        })
    }

    /// Close a turn with the model's final answer, atomically: refused while an action lacks
    /// its result; under `compact_after_terminal` the turn's long results are settled into
    /// reload cards in the same transaction. Repeating the same completion returns the stored
    /// outcome unchanged; a different one is a conflict.
    pub fn complete_turn(
        &self,
        ns: &Namespace,
        turn_id: &str,
        done: &CompleteTurn,
        now: f64,
    ) -> Result<Closed> {
        ns.validate()?;
        let conv = ns.conversation_id.as_str();
        let final_entry = match &done.final_text {
            Some(text) => {
                let input = EntryInput {
                    kind: done
                        .kind
                        .clone()
                        .unwrap_or_else(|| "message.assistant".into()),
                    text: text.clone(),
                    payload: done.payload.clone(),
                    source_id: done.source_id.clone(),
                    timestamp: done.timestamp,
                    ..EntryInput::default()
                };
                let mut e =
                    NewEntry::from_input(ns, &input, TurnRole::Final, Some(turn_id), conv, now)?;
                if done.kind.is_none() {
                    e.origin = Origin::Assistant;
                }
                Some(e)
            }
            None => {
                if done.source_id.is_some() || done.kind.is_some() || done.payload.is_some() {
                    return invalid(
                        "source_id, kind and payload describe the final answer; give final_text too",
                    );
                }
                None
            }
        };
        let hk = ns.hard_key();
        let mut final_entry = final_entry;
        self.write(|tx| {
            let turn = self.load_turn(tx, &hk, ns, turn_id)?;
            match turn.status {
                TurnStatus::Completed => {
                    let stored_sha: Option<String> = match &turn.final_source_id {
                        Some(id) => tx
                            .prepare_cached(
                                "SELECT sha256 FROM entries WHERE hard_key = ?1 AND source_id = ?2",
                            )?
                            .query_row(params![hk, id], |r| r.get(0))
                            .optional()?,
                        None => None,
                    };
                    let given_sha = final_entry.as_ref().map(|e| sha256_hex(&e.text));
                    let same_id = match (&done.source_id, &turn.final_source_id) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    };
                    if stored_sha == given_sha && same_id {
                        return Ok(Closed {
                            turn: self.view(tx, &hk, turn)?,
                            changed: false,
                        });
                    }
                    return Err(Error::Conflict(format!(
                        "turn {turn_id:?} is already completed with a different final answer"
                    )));
                }
                TurnStatus::Aborted => {
                    return Err(Error::TurnClosed {
                        turn_id: turn_id.to_string(),
                        status: "aborted".into(),
                    });
                }
                TurnStatus::Open => {}
            }
            let pending = self.pending(tx, &hk, turn_id)?;
            if !pending.is_empty() {
                return Err(Error::PendingActions {
                    turn_id: turn_id.to_string(),
                    pending,
                });
            }
            let mut end = now;
            let mut final_id = None;
            if let Some(e) = &mut final_entry {
                e.unit = Some((turn.unit_seq, turn.began_at));
                let r = self.insert_entry(tx, &hk, e)?;
                if !r.created {
                    return Err(Error::Conflict(format!(
                        "source_id {:?} already belongs to another entry",
                        r.source_id
                    )));
                }
                end = e.ts;
                final_id = Some(r.source_id);
            }
            self.settle(tx, &hk, &turn)?;
            tx.prepare_cached(
                "UPDATE turns SET status = 'completed', ended_at = ?1, last_at = MAX(last_at, ?1), \
                 final_source_id = ?2 WHERE turn_pk = ?3 AND hard_key = ?4",
            )?
            .execute(params![end, final_id, turn.pk, hk])?;
            close_unit(tx, &hk, &turn.conversation_id, turn.unit_seq)?;
            let turn = self.load_turn(tx, &hk, ns, turn_id)?;
            Ok(Closed {
                turn: self.view(tx, &hk, turn)?,
                changed: true,
            })
        })
    }

    /// Abort an open turn (the task failed or was cancelled). Results already recorded are
    /// settled like a completed turn's; actions without results stay unanswered and are left
    /// out of model-visible history. Aborting an aborted turn is a no-op.
    pub fn abort_turn(
        &self,
        ns: &Namespace,
        turn_id: &str,
        reason: Option<&str>,
        now: f64,
    ) -> Result<Closed> {
        ns.validate()?;
        if let Some(r) = reason {
            check_text("reason", r, false)?;
        }
        let hk = ns.hard_key();
        self.write(|tx| {
            let turn = self.load_turn(tx, &hk, ns, turn_id)?;
            match turn.status {
                TurnStatus::Aborted => Ok(Closed {
                    turn: self.view(tx, &hk, turn)?,
                    changed: false,
                }),
                TurnStatus::Completed => Err(Error::TurnClosed {
                    turn_id: turn_id.to_string(),
                    status: "completed".into(),
                }),
                TurnStatus::Open => {
                    self.abort_in(tx, &hk, &turn, reason.unwrap_or("aborted by the host"), now)?;
                    let turn = self.load_turn(tx, &hk, ns, turn_id)?;
                    Ok(Closed {
                        turn: self.view(tx, &hk, turn)?,
                        changed: true,
                    })
                }
            }
        })
    }

    fn abort_in(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        turn: &TurnRow,
        reason: &str,
        now: f64,
    ) -> Result<()> {
        self.settle(tx, hk, turn)?;
        tx.prepare_cached(
            "UPDATE turns SET status = 'aborted', ended_at = ?1, last_at = MAX(last_at, ?1), \
             end_reason = ?2 WHERE turn_pk = ?3 AND hard_key = ?4",
        )?
        .execute(params![now, reason, turn.pk, hk])?;
        close_unit(tx, hk, &turn.conversation_id, turn.unit_seq)?;
        Ok(())
    }

    /// Abort every open turn, in any namespace, whose owning process is no longer running
    /// (the process was killed between `begin_turn` and `complete_turn`). Run at start-up;
    /// turns of live processes, this one included, are left alone.
    pub fn recover_orphaned_turns(&self, now: f64) -> Result<Vec<Recovered>> {
        self.write(|tx| {
            // The one query that spans namespaces: recovery is the database's own upkeep, and
            // it returns ids only to the process that owns the file.
            let open: Vec<(String, String, String, String)> = tx
                .prepare_cached(
                    "SELECT hard_key, turn_id, conversation_id, owner FROM turns WHERE status = 'open'",
                )?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let mut recovered = Vec::new();
            for (hk, turn_id, conversation_id, owner) in open {
                let owner = Owner::decode(&owner);
                if owner.is_some_and(Owner::alive) {
                    continue;
                }
                let turn = tx
                    .prepare_cached(&format!(
                        "SELECT {TURN_COLUMNS} FROM turns WHERE hard_key = ?1 AND turn_id = ?2"
                    ))?
                    .query_row(params![hk, turn_id], TurnRow::from_sql)?;
                let reason = match owner {
                    Some(o) => format!(
                        "recovered: the process that began this turn (pid {}) ended before \
                         completing it",
                        o.pid
                    ),
                    None => "recovered: the turn's owner is unreadable".to_string(),
                };
                self.abort_in(tx, &hk, &turn, &reason, now)?;
                recovered.push(Recovered { turn_id, conversation_id });
            }
            Ok(recovered)
        })
    }

    /// Abort the open turns of `ns`'s conversation with no activity for `idle_seconds` (a host
    /// that forgot to complete them), at most `limit` at once, oldest first.
    pub fn recover_stale_turns(
        &self,
        ns: &Namespace,
        idle_seconds: f64,
        now: f64,
        limit: usize,
    ) -> Result<Vec<Recovered>> {
        ns.validate()?;
        if !idle_seconds.is_finite() || idle_seconds < 0.0 {
            return invalid(format!(
                "idle_seconds must be a number ≥ 0, got {idle_seconds}"
            ));
        }
        let hk = ns.hard_key();
        self.write(|tx| {
            let stale: Vec<TurnRow> = tx
                .prepare_cached(&format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE hard_key = ?1 AND conversation_id = ?2 \
                     AND status = 'open' AND last_at < ?3 ORDER BY last_at LIMIT ?4"
                ))?
                .query_map(
                    params![hk, ns.conversation_id, now - idle_seconds, limit as i64],
                    TurnRow::from_sql,
                )?
                .collect::<rusqlite::Result<_>>()?;
            let reason = format!("recovered: no activity for {idle_seconds} s");
            let mut out = Vec::new();
            for turn in stale {
                self.abort_in(tx, &hk, &turn, &reason, now)?;
                out.push(Recovered {
                    turn_id: turn.turn_id,
                    conversation_id: turn.conversation_id,
                });
            }
            Ok(out)
        })
    }

    /// A standalone entry outside any turn: a message exchanged without a model call, an
    /// event. Kinds are free (`message.user`, `message.assistant`, `event.reminder`); calls and
    /// results need a turn.
    pub fn record_entry(&self, ns: &Namespace, input: &EntryInput, now: f64) -> Result<EntryRef> {
        ns.validate()?;
        let conv = ns.conversation_id.as_str();
        let e = NewEntry::from_input(ns, input, TurnRole::None, None, conv, now)?;
        let hk = ns.hard_key();
        self.write(|tx| self.insert_entry(tx, &hk, &e))
    }

    /// A standalone user message.
    pub fn record_user_turn(&self, ns: &Namespace, text: &str, now: f64) -> Result<EntryRef> {
        self.record_entry(ns, &EntryInput::user(text), now)
    }

    /// A standalone assistant message.
    pub fn record_assistant_turn(&self, ns: &Namespace, text: &str, now: f64) -> Result<EntryRef> {
        self.record_entry(ns, &EntryInput::assistant(text), now)
    }

    /// A standalone event; its kind must start with `event.`.
    pub fn record_event(&self, ns: &Namespace, input: &EntryInput, now: f64) -> Result<EntryRef> {
        if !input.kind.starts_with("event.") {
            return invalid(format!(
                "an event's kind starts with \"event.\", got {:?}",
                input.kind
            ));
        }
        self.record_entry(ns, input, now)
    }

    /// One turn of `ns`'s conversation.
    pub fn turn(&self, ns: &Namespace, turn_id: &str) -> Result<TurnView> {
        ns.validate()?;
        let hk = ns.hard_key();
        self.read(|tx| {
            let turn = self.load_turn(tx, &hk, ns, turn_id)?;
            self.view(tx, &hk, turn)
        })
    }

    fn view(&self, tx: &Transaction<'_>, hk: &str, turn: TurnRow) -> Result<TurnView> {
        let entries: i64 = tx
            .prepare_cached("SELECT COUNT(*) FROM entries WHERE hard_key = ?1 AND turn_id = ?2")?
            .query_row(params![hk, turn.turn_id], |r| r.get(0))?;
        let pending = self.pending(tx, hk, &turn.turn_id)?;
        let settlement =
            if turn.status != TurnStatus::Open && turn.policy == Policy::CompactAfterTerminal {
                Some(self.settlement_report(tx, hk, &turn.turn_id)?)
            } else {
                None
            };
        Ok(TurnView {
            turn_id: turn.turn_id,
            conversation_id: turn.conversation_id,
            status: turn.status,
            policy: turn.policy,
            timezone: turn.timezone,
            began_at: turn.began_at,
            ended_at: turn.ended_at,
            end_reason: turn.end_reason,
            entries: entries as u64,
            pending,
            final_source_id: turn.final_source_id,
            settlement,
        })
    }

    /// The tool name of the action with `corr` in the turn.
    fn action_of(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        turn_id: &str,
        corr: &str,
    ) -> Result<Option<String>> {
        Ok(tx
            .prepare_cached(
                "SELECT tool_name FROM entries WHERE hard_key = ?1 AND turn_id = ?2 \
                 AND correlation_id = ?3 AND turn_role = 'action'",
            )?
            .query_row(params![hk, turn_id, corr], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()?
            .map(Option::unwrap_or_default))
    }

    /// `(source_id, seq_no, sha256, status)` of the observation answering `corr`.
    fn observation_of(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        turn_id: &str,
        corr: &str,
    ) -> Result<Option<(String, i64, String, String)>> {
        Ok(tx
            .prepare_cached(
                "SELECT source_id, seq_no, sha256, COALESCE(status, '') FROM entries \
                 WHERE hard_key = ?1 AND turn_id = ?2 AND correlation_id = ?3 \
                 AND turn_role = 'observation'",
            )?
            .query_row(params![hk, turn_id, corr], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?)
    }

    fn entry_sha(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        turn_id: &str,
        corr: &str,
        role: &str,
    ) -> Result<Option<(String, i64, String)>> {
        Ok(tx
            .prepare_cached(
                "SELECT source_id, seq_no, sha256 FROM entries WHERE hard_key = ?1 \
                 AND turn_id = ?2 AND correlation_id = ?3 AND turn_role = ?4",
            )?
            .query_row(params![hk, turn_id, corr, role], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?)
    }

    /// The stored entry with this source id, if it is exactly `e` (a retry).
    fn same_entry(
        &self,
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
            && stored.turn_role == e.role.as_str()
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

    /// Correlation ids of the turn's actions without an observation, in call order.
    fn pending(&self, tx: &Transaction<'_>, hk: &str, turn_id: &str) -> Result<Vec<String>> {
        let mut stmt = tx.prepare_cached(
            "SELECT a.correlation_id FROM entries a WHERE a.hard_key = ?1 AND a.turn_id = ?2 \
             AND a.turn_role = 'action' AND NOT EXISTS (SELECT 1 FROM entries o \
             WHERE o.hard_key = ?1 AND o.turn_id = ?2 AND o.turn_role = 'observation' \
             AND o.correlation_id = a.correlation_id) ORDER BY a.seq_no",
        )?;
        let rows = stmt
            .query_map(params![hk, turn_id], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Settle the turn's results under its frozen policy (terminal turns only; callers close
    /// the turn in the same transaction).
    fn settle(&self, tx: &Transaction<'_>, hk: &str, turn: &TurnRow) -> Result<()> {
        let zone = turn
            .timezone
            .as_deref()
            .and_then(|z| tz::parse_zone(z).ok());
        // Sizes and hashes were computed when the results were written: no body is read.
        let observations = tx
            .prepare_cached(
                "SELECT source_id, correlation_id, tool_name, kind, status, ts, chars, bytes, \
                 tokens, sha256 FROM entries WHERE hard_key = ?1 AND turn_id = ?2 \
                 AND turn_role = 'observation' ORDER BY seq_no",
            )?
            .query_map(params![hk, turn.turn_id], |r| {
                Ok(Observation {
                    source_id: r.get(0)?,
                    correlation_id: r.get(1)?,
                    tool_name: r.get(2)?,
                    kind: r.get(3)?,
                    status: r.get(4)?,
                    ts: r.get(5)?,
                    chars: r.get(6)?,
                    bytes: r.get(7)?,
                    tokens: r.get(8)?,
                    sha256: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<Observation>>>()?;
        let (mut full, mut settled) = (0i64, 0i64);
        let mut insert = tx.prepare_cached(
            "INSERT INTO settlements (hard_key, source_id, conversation_id, turn_id, \
             classification, card, card_tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for row in observations {
            let tokens = row.tokens;
            full += tokens;
            if turn.policy != Policy::CompactAfterTerminal {
                settled += tokens;
                continue;
            }
            let time = zone.map(|z| tz::minute_label(row.ts, z));
            let card = reload_card(&CardFields {
                time: time.as_deref(),
                tool: row.tool_name.as_deref().unwrap_or(&row.kind),
                call_id: row.correlation_id.as_deref().unwrap_or(""),
                status: row.status.as_deref().unwrap_or("success"),
                source_id: &row.source_id,
                stored_chars: row.chars as usize,
                stored_utf8_bytes: row.bytes as usize,
                sha256_hex: &row.sha256,
            });
            let class = classify(row.bytes as usize, card.len());
            let (card, card_tokens) = match class {
                Classification::CompactReloadable => {
                    let t = estimate_tokens(&card) as i64;
                    (Some(card), t)
                }
                _ => (None, tokens),
            };
            settled += card_tokens;
            insert.execute(params![
                hk,
                row.source_id,
                turn.conversation_id,
                turn.turn_id,
                class.as_str(),
                card,
                card_tokens
            ])?;
        }
        tx.prepare_cached(
            "UPDATE turns SET full_tokens = ?1, settled_tokens = ?2 \
             WHERE turn_pk = ?3 AND hard_key = ?4",
        )?
        .execute(params![full, settled, turn.pk, hk])?;
        Ok(())
    }

    /// What settlement did to one turn's results.
    fn settlement_report(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        turn_id: &str,
    ) -> Result<SettlementReport> {
        let mut stmt = tx.prepare_cached(
            "SELECT e.source_id, COALESCE(e.correlation_id, ''), COALESCE(e.tool_name, e.kind), \
             s.classification, e.bytes, s.card, e.tokens, s.card_tokens FROM entries e \
             LEFT JOIN settlements s ON s.hard_key = e.hard_key AND s.source_id = e.source_id \
             WHERE e.hard_key = ?1 AND e.turn_id = ?2 AND e.turn_role = 'observation' \
             ORDER BY e.seq_no",
        )?;
        let mut report = SettlementReport::default();
        let rows = stmt.query_map(params![hk, turn_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, i64>(6)?,
                r.get::<_, Option<i64>>(7)?,
            ))
        })?;
        for row in rows {
            let (source_id, call_id, tool, class, bytes, card, tokens, card_tokens) = row?;
            let classification = class
                .as_deref()
                .and_then(Classification::parse)
                .unwrap_or(Classification::InlineFull);
            let shown = card_tokens.unwrap_or(tokens) as u64;
            if classification == Classification::CompactReloadable {
                report.folded += 1;
            }
            report.full_tokens += tokens as u64;
            report.settled_tokens += shown;
            report.results.push(SettledResult {
                source_id,
                call_id,
                tool,
                classification,
                stored_utf8_bytes: bytes as u64,
                card_utf8_bytes: card.map(|c| c.len() as u64),
                full_tokens: tokens as u64,
                settled_tokens: shown,
            });
        }
        report.saved_tokens = report.full_tokens.saturating_sub(report.settled_tokens);
        Ok(report)
    }
}

/// The next sequence number of a conversation: one index seek (a wrapped `MAX()` would scan).
fn next_seq(tx: &Transaction<'_>, hk: &str, conversation_id: &str) -> Result<i64> {
    let last: Option<i64> = tx
        .prepare_cached(
            "SELECT seq_no FROM entries WHERE hard_key = ?1 AND conversation_id = ?2 \
             ORDER BY seq_no DESC LIMIT 1",
        )?
        .query_row(params![hk, conversation_id], |r| r.get(0))
        .optional()?;
    Ok(last.unwrap_or(0) + 1)
}

fn duplicate_call(corr: &str, turn_id: &str) -> Error {
    Error::Conflict(format!(
        "duplicate correlation id {corr:?} in turn {turn_id:?}: every tool call in a turn needs \
         its own id"
    ))
}

/// Record that a unit (a turn, or a standalone entry) closed: its place in the context.
fn close_unit(
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

//! Writing turns: begin, actions, observations, tool exchanges, complete and abort, standalone
//! entries, and reading one turn back (`Timeline::turn`).

use rusqlite::{Transaction, params};

use crate::entry::{EntryInput, EntryRef, Origin, TurnRole, tool_segment};
use crate::error::{Error, Result, invalid};
use crate::insert::{check_text, close_unit, next_seq, same_entry};
use crate::namespace::{Namespace, check_id};
use crate::retries::{completion_retry, exchange_retry, find_retry};
use crate::settle::Policy;
use crate::settlement::{settle, settlement_report};
use crate::timeline::Timeline;
use crate::turn::{
    BeginTurn, Closed, CompleteTurn, ExchangeRefs, MAX_STIMULI, ToolExchange, TurnHandle,
    TurnStatus, TurnView,
};
use crate::turn_row::{
    TurnRow, action_of, duplicate_call, load_turn, observation_of, pending, touch_turn,
};
use crate::tz;

impl Timeline {
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
            .map(|s| self.new_entry(ns, s, TurnRole::Stimulus, None, conv, now))
            .collect::<Result<Vec<_>>>()?;
        let hk = ns.hard_key();
        self.write(|tx| {
            if let Some(existing) = find_retry(tx, &hk, ns, begin)? {
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
        let mut e = self.new_entry(ns, input, TurnRole::Action, Some(turn_id), conv, now)?;
        let hk = ns.hard_key();
        self.write(|tx| {
            let turn = load_turn(tx, &hk, ns, turn_id)?;
            turn.require_open()?;
            e.unit = Some((turn.unit_seq, turn.began_at));
            let corr = e.correlation_id.clone().unwrap_or_default();
            if let Some(id) = &e.source_id
                && let Some(r) = same_entry(tx, &hk, id, &e)?
            {
                return Ok(r);
            }
            if action_of(tx, &hk, turn_id, &corr)?.is_some() {
                return Err(duplicate_call(&corr, turn_id));
            }
            let r = self.insert_entry(tx, &hk, &e)?;
            touch_turn(tx, &hk, &turn, e.ts)?;
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
        let mut e = self.new_entry(ns, input, TurnRole::Observation, Some(turn_id), conv, now)?;
        let hk = ns.hard_key();
        self.write(|tx| {
            let turn = load_turn(tx, &hk, ns, turn_id)?;
            turn.require_open()?;
            e.unit = Some((turn.unit_seq, turn.began_at));
            let corr = e.correlation_id.clone().unwrap_or_default();
            if let Some(id) = &e.source_id
                && let Some(r) = same_entry(tx, &hk, id, &e)?
            {
                return Ok(r);
            }
            let Some(tool) = action_of(tx, &hk, turn_id, &corr)? else {
                return invalid(format!(
                    "no action with correlation_id {corr:?} in turn {turn_id:?}: record the call \
                     (append_action) before its result"
                ));
            };
            if observation_of(tx, &hk, turn_id, &corr)?.is_some() {
                return Err(Error::Conflict(format!(
                    "the call {corr:?} in turn {turn_id:?} already has its result"
                )));
            }
            e.tool_name = Some(tool);
            let r = self.insert_entry(tx, &hk, &e)?;
            touch_turn(tx, &hk, &turn, e.ts)?;
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
        let mut call_e = self.new_entry(ns, &call, TurnRole::Action, Some(turn_id), conv, now)?;
        let mut result_e =
            self.new_entry(ns, &result, TurnRole::Observation, Some(turn_id), conv, now)?;
        result_e.tool_name = Some(x.tool_name.clone());
        let hk = ns.hard_key();
        self.write(|tx| {
            let turn = load_turn(tx, &hk, ns, turn_id)?;
            turn.require_open()?;
            call_e.unit = Some((turn.unit_seq, turn.began_at));
            result_e.unit = call_e.unit;
            if action_of(tx, &hk, turn_id, &x.call_id)?.is_some() {
                return exchange_retry(tx, &hk, turn_id, x, &call_e, &result_e);
            }
            let call = self.insert_entry(tx, &hk, &call_e)?;
            let result = self.insert_entry(tx, &hk, &result_e)?;
            if !call.created || !result.created {
                return Err(Error::Conflict(
                    "call_source_id or result_source_id already belongs to another entry".into(),
                ));
            }
            touch_turn(tx, &hk, &turn, result_e.ts.max(call_e.ts))?;
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
                    self.new_entry(ns, &input, TurnRole::Final, Some(turn_id), conv, now)?;
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
            let turn = load_turn(tx, &hk, ns, turn_id)?;
            match turn.status {
                TurnStatus::Completed => {
                    completion_retry(tx, &hk, &turn, done, final_entry.as_ref())?;
                    return Ok(Closed {
                        turn: view(tx, &hk, turn)?,
                        changed: false,
                    });
                }
                TurnStatus::Aborted => {
                    return Err(Error::TurnClosed {
                        turn_id: turn_id.to_string(),
                        status: "aborted".into(),
                    });
                }
                TurnStatus::Open => {}
            }
            let pending = pending(tx, &hk, turn_id)?;
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
            settle(tx, &hk, &turn)?;
            tx.prepare_cached(
                "UPDATE turns SET status = 'completed', ended_at = ?1, last_at = MAX(last_at, ?1), \
                 final_source_id = ?2 WHERE turn_pk = ?3 AND hard_key = ?4",
            )?
            .execute(params![end, final_id, turn.pk, hk])?;
            close_unit(tx, &hk, &turn.conversation_id, turn.unit_seq)?;
            let turn = load_turn(tx, &hk, ns, turn_id)?;
            Ok(Closed {
                turn: view(tx, &hk, turn)?,
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
            let turn = load_turn(tx, &hk, ns, turn_id)?;
            match turn.status {
                TurnStatus::Aborted => Ok(Closed {
                    turn: view(tx, &hk, turn)?,
                    changed: false,
                }),
                TurnStatus::Completed => Err(Error::TurnClosed {
                    turn_id: turn_id.to_string(),
                    status: "completed".into(),
                }),
                TurnStatus::Open => {
                    abort_in(tx, &hk, &turn, reason.unwrap_or("aborted by the host"), now)?;
                    let turn = load_turn(tx, &hk, ns, turn_id)?;
                    Ok(Closed {
                        turn: view(tx, &hk, turn)?,
                        changed: true,
                    })
                }
            }
        })
    }

    /// A standalone entry outside any turn: a message exchanged without a model call, an
    /// event. Kinds are free (`message.user`, `message.assistant`, `event.reminder`); calls and
    /// results need a turn.
    pub fn record_entry(&self, ns: &Namespace, input: &EntryInput, now: f64) -> Result<EntryRef> {
        ns.validate()?;
        let conv = ns.conversation_id.as_str();
        let e = self.new_entry(ns, input, TurnRole::None, None, conv, now)?;
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
            let turn = load_turn(tx, &hk, ns, turn_id)?;
            view(tx, &hk, turn)
        })
    }
}

/// The turn as callers see it: its row, entry count, pending calls and settlement.
pub(crate) fn view(tx: &Transaction<'_>, hk: &str, turn: TurnRow) -> Result<TurnView> {
    let entries: i64 = tx
        .prepare_cached("SELECT COUNT(*) FROM entries WHERE hard_key = ?1 AND turn_id = ?2")?
        .query_row(params![hk, turn.turn_id], |r| r.get(0))?;
    let pending = pending(tx, hk, &turn.turn_id)?;
    let settlement =
        if turn.status != TurnStatus::Open && turn.policy == Policy::CompactAfterTerminal {
            Some(settlement_report(tx, hk, &turn.turn_id)?)
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

/// Settle and close an open turn as aborted, with `reason` (also recovery's way).
pub(crate) fn abort_in(
    tx: &Transaction<'_>,
    hk: &str,
    turn: &TurnRow,
    reason: &str,
    now: f64,
) -> Result<()> {
    settle(tx, hk, turn)?;
    tx.prepare_cached(
        "UPDATE turns SET status = 'aborted', ended_at = ?1, last_at = MAX(last_at, ?1), \
         end_reason = ?2 WHERE turn_pk = ?3 AND hard_key = ?4",
    )?
    .execute(params![now, reason, turn.pk, hk])?;
    close_unit(tx, hk, &turn.conversation_id, turn.unit_seq)?;
    Ok(())
}

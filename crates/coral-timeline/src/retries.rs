//! Idempotent retries of the turn calls: a repeated `begin_turn`, tool exchange or completion
//! returns the first outcome and writes nothing; the same ids with other content are a conflict.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::entry::{EntryRef, TurnRole};
use crate::error::{Error, Result};
use crate::insert::NewEntry;
use crate::namespace::Namespace;
use crate::settle::sha256_hex;
use crate::turn::{BeginTurn, CompleteTurn, ExchangeRefs, ToolExchange, TurnHandle};
use crate::turn_row::{TurnRow, duplicate_call, entry_sha, observation_of};

/// The turn an identical earlier `begin_turn` created, if this call is its retry.
pub(crate) fn find_retry(
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
            .prepare_cached("SELECT turn_id FROM entries WHERE hard_key = ?1 AND source_id = ?2")?
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

/// A tool exchange whose call id the turn already has: the first exchange's entries when `x`
/// repeats it exactly (same call and result texts, status and ids), else the duplicate-call
/// conflict.
pub(crate) fn exchange_retry(
    tx: &Transaction<'_>,
    hk: &str,
    turn_id: &str,
    x: &ToolExchange,
    call_e: &NewEntry<'_>,
    result_e: &NewEntry<'_>,
) -> Result<ExchangeRefs> {
    let stored_call = entry_sha(tx, hk, turn_id, &x.call_id, TurnRole::Action)?;
    let stored_result = observation_of(tx, hk, turn_id, &x.call_id)?;
    let status = result_e.status.clone().unwrap_or_default();
    match (stored_call, stored_result) {
        (Some((call_id, call_seq, call_sha)), Some((res_id, res_seq, res_sha, res_status)))
            if call_sha == sha256_hex(&call_e.text)
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
    }
}

/// `complete_turn` on a completed turn: `Ok` when `done` repeats the completion (the same final
/// text, or none again, and no other source id), else a conflict.
pub(crate) fn completion_retry(
    tx: &Transaction<'_>,
    hk: &str,
    turn: &TurnRow,
    done: &CompleteTurn,
    final_entry: Option<&NewEntry<'_>>,
) -> Result<()> {
    let stored_sha: Option<String> = match &turn.final_source_id {
        Some(id) => tx
            .prepare_cached("SELECT sha256 FROM entries WHERE hard_key = ?1 AND source_id = ?2")?
            .query_row(params![hk, id], |r| r.get(0))
            .optional()?,
        None => None,
    };
    let given_sha = final_entry.map(|e| sha256_hex(&e.text));
    let same_id = match (&done.source_id, &turn.final_source_id) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    if stored_sha == given_sha && same_id {
        return Ok(());
    }
    Err(Error::Conflict(format!(
        "turn {:?} is already completed with a different final answer",
        turn.turn_id
    )))
}

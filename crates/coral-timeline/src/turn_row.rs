//! A turn as stored: the `turns` row, and the lookups of it and of its paired calls and results.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::entry::TurnRole;
use crate::error::{Error, Result, unknown_value};
use crate::namespace::{Namespace, check_id};
use crate::settle::Policy;
use crate::turn::TurnStatus;

/// The turn columns [`TurnRow::from_sql`] reads.
pub(crate) const TURN_COLUMNS: &str = "turn_pk, turn_id, conversation_id, status, policy, timezone, \
     unit_seq, began_at, ended_at, end_reason, final_source_id";

/// One row of `turns`.
pub(crate) struct TurnRow {
    pub pk: i64,
    pub turn_id: String,
    pub conversation_id: String,
    pub status: TurnStatus,
    /// Frozen when the turn began.
    pub policy: Policy,
    pub timezone: Option<String>,
    /// Its unit: the `seq_no` of its first stimulus.
    pub unit_seq: i64,
    pub began_at: f64,
    pub ended_at: Option<f64>,
    pub end_reason: Option<String>,
    pub final_source_id: Option<String>,
}

impl TurnRow {
    /// A row of [`TURN_COLUMNS`]; a status or policy this build does not know is an error
    /// naming the turn, never read as another one.
    pub(crate) fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<TurnRow> {
        let turn_id: String = r.get(1)?;
        let status = TurnStatus::column(r, 3, &turn_id)?;
        let stored = r.get_ref(4)?.as_str()?;
        let policy = Policy::parse(stored)
            .map_err(|_| unknown_value(4, format!("turn {turn_id:?} policy"), stored))?;
        Ok(TurnRow {
            pk: r.get(0)?,
            turn_id,
            conversation_id: r.get(2)?,
            status,
            policy,
            timezone: r.get(5)?,
            unit_seq: r.get(6)?,
            began_at: r.get(7)?,
            ended_at: r.get(8)?,
            end_reason: r.get(9)?,
            final_source_id: r.get(10)?,
        })
    }

    /// `TurnClosed` unless the turn is open.
    pub(crate) fn require_open(&self) -> Result<()> {
        match self.status {
            TurnStatus::Open => Ok(()),
            other => Err(Error::TurnClosed {
                turn_id: self.turn_id.clone(),
                status: other.as_str().into(),
            }),
        }
    }
}

/// The turn `turn_id` of `ns`'s conversation; `UnknownTurn` when it is not there (or belongs
/// to another namespace or conversation, which looks the same).
pub(crate) fn load_turn(
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

/// Move the turn's last activity to `at` (never back): what `recover_stale_turns` measures.
pub(crate) fn touch_turn(tx: &Transaction<'_>, hk: &str, turn: &TurnRow, at: f64) -> Result<()> {
    tx.prepare_cached(
        "UPDATE turns SET last_at = MAX(last_at, ?1) WHERE turn_pk = ?2 AND hard_key = ?3",
    )?
    .execute(params![at, turn.pk, hk])?;
    Ok(())
}

/// Correlation ids of the turn's actions without an observation, in call order.
pub(crate) fn pending(tx: &Transaction<'_>, hk: &str, turn_id: &str) -> Result<Vec<String>> {
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

/// The tool name of the action with `corr` in the turn.
pub(crate) fn action_of(
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
pub(crate) fn observation_of(
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

/// `(source_id, seq_no, sha256)` of the turn's entry with `role` and correlation id `corr`.
pub(crate) fn entry_sha(
    tx: &Transaction<'_>,
    hk: &str,
    turn_id: &str,
    corr: &str,
    role: TurnRole,
) -> Result<Option<(String, i64, String)>> {
    Ok(tx
        .prepare_cached(
            "SELECT source_id, seq_no, sha256 FROM entries WHERE hard_key = ?1 \
             AND turn_id = ?2 AND correlation_id = ?3 AND turn_role = ?4",
        )?
        .query_row(params![hk, turn_id, corr, role.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?)
}

/// The conflict of a second call with the same correlation id in one turn.
pub(crate) fn duplicate_call(corr: &str, turn_id: &str) -> Error {
    Error::Conflict(format!(
        "duplicate correlation id {corr:?} in turn {turn_id:?}: every tool call in a turn needs \
         its own id"
    ))
}

//! The raw window of a conversation: its closed units after the raw floor (in closing order),
//! its open turns, and how many of the oldest units a compaction takes.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Transaction, params};

use crate::error::Result;
use crate::rows::{LIGHT_ROW_SELECT, Row, Unanswered};
use crate::turn::TurnStatus;

/// One closed unit of the raw window: a finished turn or a standalone entry, its rows in
/// order.
#[derive(Clone, Debug)]
pub(crate) struct Unit {
    /// Its place in the order units closed (the `closures` table).
    pub close_pk: i64,
    pub unit_seq: i64,
    /// How its turn ended (`None`: a standalone entry).
    pub ended: Option<TurnStatus>,
    pub rows: Vec<Row>,
}

impl Unit {
    /// Visible tokens of the rows the context renders.
    pub(crate) fn tokens(&self) -> u64 {
        shown_rows(self).map(Row::visible_tokens).sum()
    }

    pub(crate) fn first_ts(&self) -> f64 {
        self.rows.iter().map(|r| r.ts).fold(f64::MAX, f64::min)
    }

    pub(crate) fn last_ts(&self) -> f64 {
        self.rows.iter().map(|r| r.ts).fold(f64::MIN, f64::max)
    }
}

/// The rows of a unit that are rendered: an aborted turn leaves out calls that never got a
/// result, like the provider history.
pub(crate) fn shown_rows(unit: &Unit) -> impl Iterator<Item = &Row> {
    let unanswered = Unanswered::of(&unit.rows, unit.ended == Some(TurnStatus::Aborted));
    unit.rows.iter().filter(move |r| !unanswered.hides(r))
}

/// The closed units of a conversation after `floor` (a `close_pk`), in the order they closed.
/// Bodies the conversation shows as cards are not read.
pub(crate) fn raw_units(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
    floor: i64,
) -> Result<Vec<Unit>> {
    let closed: Vec<(i64, i64)> = tx
        .prepare_cached(
            "SELECT close_pk, unit_seq FROM closures WHERE hard_key = ?1 \
             AND conversation_id = ?2 AND close_pk > ?3 ORDER BY close_pk",
        )?
        .query_map(params![hard_key, conversation_id, floor], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    if closed.is_empty() {
        return Ok(Vec::new());
    }
    let first_unit = closed.iter().map(|c| c.1).min().unwrap_or(0);
    let mut rows_of: HashMap<i64, Vec<Row>> = HashMap::with_capacity(closed.len());
    let mut stmt = tx.prepare_cached(&format!(
        "{LIGHT_ROW_SELECT} WHERE e.hard_key = ?1 AND e.conversation_id = ?2 \
         AND e.unit_seq >= ?3 AND e.unit_seq IN (SELECT unit_seq FROM closures \
         WHERE hard_key = ?1 AND conversation_id = ?2 AND close_pk > ?4) \
         ORDER BY e.unit_seq, e.seq_no"
    ))?;
    for row in stmt.query_map(
        params![hard_key, conversation_id, first_unit, floor],
        Row::from_sql,
    )? {
        let row = row?;
        rows_of.entry(row.unit_seq).or_default().push(row);
    }
    let statuses: HashMap<String, TurnStatus> = tx
        .prepare_cached(
            "SELECT turn_id, status FROM turns WHERE hard_key = ?1 AND conversation_id = ?2 \
             AND unit_seq >= ?3 AND status != 'open'",
        )?
        .query_map(params![hard_key, conversation_id, first_unit], |r| {
            let turn_id: String = r.get(0)?;
            let status = TurnStatus::column(r, 1, &turn_id)?;
            Ok((turn_id, status))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(closed
        .into_iter()
        .filter_map(|(close_pk, unit_seq)| {
            let rows = rows_of.remove(&unit_seq)?;
            // A closed unit's turn is completed or aborted (the closure is written with it).
            let ended = rows[0]
                .turn_id
                .as_ref()
                .map(|t| statuses.get(t).copied().unwrap_or(TurnStatus::Completed));
            Some(Unit {
                close_pk,
                unit_seq,
                ended,
                rows,
            })
        })
        .collect())
}

/// Turns of a conversation still open.
pub(crate) fn open_turns(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
) -> Result<Vec<i64>> {
    Ok(tx
        .prepare_cached(
            "SELECT unit_seq FROM turns WHERE hard_key = ?1 AND conversation_id = ?2 \
             AND status = 'open'",
        )?
        .query_map(params![hard_key, conversation_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// `(raw_floor, compactions, rollups)` of a conversation.
pub(crate) fn floor_of(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
) -> Result<(i64, i64, i64)> {
    Ok(tx
        .prepare_cached(
            "SELECT raw_floor, compactions, rollups FROM compaction \
             WHERE hard_key = ?1 AND conversation_id = ?2",
        )?
        .query_row(params![hard_key, conversation_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?
        .unwrap_or((0, 0, 0)))
}

/// How many of the oldest units hold at least `ratio` of the raw tokens, leaving `keep` units
/// raw. 0 when nothing can be summarised.
pub(crate) fn pick_batch(units: &[Unit], raw_tokens: u64, ratio: f64, keep: usize) -> usize {
    let limit = units.len().saturating_sub(keep);
    let goal = (raw_tokens as f64 * ratio).ceil() as u64;
    let mut sum = 0;
    for (i, unit) in units[..limit].iter().enumerate() {
        sum += unit.tokens();
        if sum >= goal {
            return i + 1;
        }
    }
    limit
}

//! One stored entry as the read paths see it (`Row`, its selects), the unanswered-call rule,
//! and the lookups of a unit's rows, an entry by id and a turn's status.

use std::borrow::Cow;

use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction};

use crate::entry::{Origin, TurnRole};
use crate::error::{Result, unknown_value};
use crate::settle::{Classification, card_in_zone};
use crate::turn::TurnStatus;

/// One stored entry, as the read paths see it.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub conversation_id: String,
    pub seq_no: i64,
    pub unit_seq: i64,
    pub unit_ts: f64,
    pub source_id: String,
    pub kind: String,
    pub origin: Origin,
    pub turn_role: TurnRole,
    pub actor: Option<String>,
    pub turn_id: Option<String>,
    pub correlation_id: Option<String>,
    pub tool_name: Option<String>,
    pub status: Option<String>,
    pub ts: f64,
    pub text: String,
    pub payload: Option<String>,
    pub chars: i64,
    pub bytes: i64,
    pub tokens: i64,
    pub sha256: String,
    pub settlement: Option<Classification>,
    pub card: Option<String>,
    pub card_tokens: Option<i64>,
    /// Its body was forgotten: `text` is [`crate::forget::FORGOTTEN_TEXT`] (or, for a call,
    /// its arguments' stand-in).
    pub forgotten: bool,
}

/// The select [`Row::from_sql`] reads: an entry (`e`) with its settlement (`s`), if any, and
/// whether its body was forgotten. Every statement built on it adds a `WHERE e.hard_key = ?`.
pub(crate) const ROW_SELECT: &str = "SELECT e.conversation_id, e.seq_no, e.unit_seq, \
     e.unit_ts, e.source_id, e.kind, e.origin, e.turn_role, e.actor, e.turn_id, \
     e.correlation_id, e.tool_name, e.status, e.ts, e.text, e.payload, e.chars, e.bytes, \
     e.tokens, e.sha256, s.classification, s.card, s.card_tokens, EXISTS (SELECT 1 FROM \
     forgotten_entries f WHERE f.hard_key = e.hard_key AND f.source_id = e.source_id) \
     FROM entries e \
     LEFT JOIN settlements s ON s.hard_key = e.hard_key AND s.source_id = e.source_id";

/// [`ROW_SELECT`] without the bodies the conversation shows as cards (their `text` is empty)
/// and without payloads: for rendering and token counts.
pub(crate) const LIGHT_ROW_SELECT: &str = "SELECT e.conversation_id, e.seq_no, e.unit_seq, \
     e.unit_ts, e.source_id, e.kind, e.origin, e.turn_role, e.actor, e.turn_id, \
     e.correlation_id, e.tool_name, e.status, e.ts, \
     CASE WHEN s.classification = 'compact_reloadable' AND s.card IS NOT NULL THEN '' \
     ELSE e.text END, NULL, e.chars, e.bytes, e.tokens, e.sha256, s.classification, s.card, \
     s.card_tokens, EXISTS (SELECT 1 FROM forgotten_entries f WHERE f.hard_key = e.hard_key \
     AND f.source_id = e.source_id) FROM entries e \
     LEFT JOIN settlements s ON s.hard_key = e.hard_key AND s.source_id = e.source_id";

impl Row {
    /// A row of [`ROW_SELECT`] or [`LIGHT_ROW_SELECT`]; an origin, role or settlement class
    /// this build does not know is an error naming the entry, never read as another one.
    pub(crate) fn from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        let source_id: String = r.get(4)?;
        let stored = r.get_ref(6)?.as_str()?;
        let origin = Origin::parse(stored)
            .map_err(|_| unknown_value(6, format!("entry {source_id:?} origin"), stored))?;
        let stored = r.get_ref(7)?.as_str()?;
        let turn_role = TurnRole::parse(stored)
            .ok_or_else(|| unknown_value(7, format!("entry {source_id:?} turn role"), stored))?;
        let settlement = Classification::column(r, 20, &source_id)?;
        Ok(Row {
            conversation_id: r.get(0)?,
            seq_no: r.get(1)?,
            unit_seq: r.get(2)?,
            unit_ts: r.get(3)?,
            source_id,
            kind: r.get(5)?,
            origin,
            turn_role,
            actor: r.get(8)?,
            turn_id: r.get(9)?,
            correlation_id: r.get(10)?,
            tool_name: r.get(11)?,
            status: r.get(12)?,
            ts: r.get(13)?,
            text: r.get(14)?,
            payload: r.get(15)?,
            chars: r.get(16)?,
            bytes: r.get(17)?,
            tokens: r.get(18)?,
            sha256: r.get(19)?,
            settlement,
            card: r.get(21)?,
            card_tokens: r.get(22)?,
            forgotten: r.get(23)?,
        })
    }

    /// Whether the model-visible form of this entry is its reload card.
    pub(crate) fn folded(&self) -> bool {
        self.settlement == Some(Classification::CompactReloadable) && self.card.is_some()
    }

    /// The model-visible text: the card when folded, else the body.
    pub(crate) fn visible_text(&self) -> &str {
        match (&self.card, self.folded()) {
            (Some(card), true) => card,
            _ => &self.text,
        }
    }

    /// [`Row::visible_text`] with a card's time in `zone`: what a reply in `zone` shows.
    pub(crate) fn visible_text_in(&self, zone: Tz) -> Cow<'_, str> {
        match (&self.card, self.folded()) {
            (Some(card), true) => card_in_zone(card, self.ts, zone),
            _ => Cow::Borrowed(&self.text),
        }
    }

    /// Estimated tokens of [`Row::visible_text`].
    pub(crate) fn visible_tokens(&self) -> u64 {
        if self.folded() {
            self.card_tokens.unwrap_or(self.tokens) as u64
        } else {
            self.tokens as u64
        }
    }
}

/// Which calls of a unit the conversation leaves out: in an aborted turn, a call that never got
/// its result (providers reject an unanswered call). One rule for the provider history, the
/// context and retrieval.
pub(crate) struct Unanswered<'a> {
    aborted: bool,
    answered: std::collections::BTreeSet<&'a str>,
}

impl<'a> Unanswered<'a> {
    /// The rule for the rows of one unit; `aborted` says whether its turn was aborted.
    pub(crate) fn of(rows: &'a [Row], aborted: bool) -> Unanswered<'a> {
        let answered = if aborted {
            rows.iter()
                .filter(|r| r.turn_role == TurnRole::Observation)
                .filter_map(|r| r.correlation_id.as_deref())
                .collect()
        } else {
            Default::default()
        };
        Unanswered { aborted, answered }
    }

    /// Whether `row` is left out.
    pub(crate) fn hides(&self, row: &Row) -> bool {
        self.aborted
            && row.turn_role == TurnRole::Action
            && !self
                .answered
                .contains(row.correlation_id.as_deref().unwrap_or(""))
    }
}

/// Every entry of one unit (a turn, or a standalone entry), in order.
pub(crate) fn unit_rows(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
    unit_seq: i64,
) -> Result<Vec<Row>> {
    let mut stmt = tx.prepare_cached(&format!(
        "{ROW_SELECT} WHERE e.hard_key = ?1 AND e.conversation_id = ?2 AND e.unit_seq = ?3 \
         ORDER BY e.seq_no"
    ))?;
    let rows = stmt
        .query_map(
            rusqlite::params![hard_key, conversation_id, unit_seq],
            Row::from_sql,
        )?
        .collect::<rusqlite::Result<Vec<Row>>>()?;
    Ok(rows)
}

/// One entry by source id within the hard key (and the conversation, when given).
pub(crate) fn find_row(
    tx: &Transaction<'_>,
    hard_key: &str,
    source_id: &str,
    conversation_id: Option<&str>,
) -> Result<Option<Row>> {
    let mut stmt = tx.prepare_cached(&format!(
        "{ROW_SELECT} WHERE e.hard_key = ?1 AND e.source_id = ?2 \
         AND (?3 IS NULL OR e.conversation_id = ?3)"
    ))?;
    Ok(stmt
        .query_row(
            rusqlite::params![hard_key, source_id, conversation_id],
            Row::from_sql,
        )
        .optional()?)
}

/// The status of a turn within the hard key.
pub(crate) fn turn_status(
    tx: &Transaction<'_>,
    hard_key: &str,
    turn_id: &str,
) -> Result<Option<TurnStatus>> {
    let mut stmt =
        tx.prepare_cached("SELECT status FROM turns WHERE hard_key = ?1 AND turn_id = ?2")?;
    Ok(stmt
        .query_row(rusqlite::params![hard_key, turn_id], |r| {
            TurnStatus::column(r, 0, turn_id)
        })
        .optional()?)
}

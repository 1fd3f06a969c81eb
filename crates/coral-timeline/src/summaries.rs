//! Stored summaries and semantic memories: `SUMMARY_SELECT` and its row mapper, the pending,
//! newest and visible ones of a conversation, and inserting a card.

use rusqlite::{Transaction, params};

use crate::error::{Result, unknown_value};
use crate::layers::{LayerSettings, SummaryCard, SummaryLayer};

/// The select [`card_from_sql`] reads: a summary (`s`) with its source count. Every statement
/// built on it adds a `WHERE s.hard_key = ?`.
pub(crate) const SUMMARY_SELECT: &str = "SELECT summary_id, layer, conversation_id, title, \
     hint, body, facet, entity_anchors, topic_terms, period_start, period_end, created_at, \
     tokens, rolled_into, (SELECT count(*) FROM summary_sources ss \
     WHERE ss.hard_key = s.hard_key AND ss.summary_id = s.summary_id), s.summary_pk, \
     s.superseded_by, s.stale_at IS NOT NULL FROM summaries s";

/// A row of [`SUMMARY_SELECT`]; a layer this build does not know is an error naming the summary.
pub(crate) fn card_from_sql(r: &rusqlite::Row<'_>) -> rusqlite::Result<SummaryCard> {
    let memory_id: String = r.get(0)?;
    let stored = r.get_ref(1)?.as_str()?;
    let layer = SummaryLayer::parse(stored)
        .ok_or_else(|| unknown_value(1, format!("summary {memory_id:?} layer"), stored))?;
    let terms = |i: usize| -> rusqlite::Result<Vec<String>> {
        let raw: String = r.get(i)?;
        Ok(serde_json::from_str(&raw).unwrap_or_default())
    };
    Ok(SummaryCard {
        memory_id,
        layer,
        conversation_id: r.get(2)?,
        title: r.get(3)?,
        hint: r.get(4)?,
        body: r.get(5)?,
        facet: r.get(6)?,
        entity_anchors: terms(7)?,
        topic_terms: terms(8)?,
        period_start: r.get(9)?,
        period_end: r.get(10)?,
        created_at: r.get(11)?,
        tokens: r.get::<_, i64>(12)? as u64,
        rolled_into: r.get(13)?,
        source_count: r.get::<_, i64>(14)? as usize,
        pk: r.get(15)?,
        superseded_by: r.get(16)?,
        stale: r.get(17)?,
    })
}

/// Episodic summaries of a conversation not yet rolled up, oldest first (a stale one, made
/// from something since forgotten, is left out: it is never rolled up or shown).
pub(crate) fn pending_episodic(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
) -> Result<Vec<SummaryCard>> {
    Ok(tx
        .prepare_cached(&format!(
            "{SUMMARY_SELECT} WHERE s.hard_key = ?1 AND s.conversation_id = ?2 \
             AND s.layer = 'episodic' AND s.rolled_into IS NULL AND s.stale_at IS NULL \
             ORDER BY s.summary_pk"
        ))?
        .query_map(params![hard_key, conversation_id], card_from_sql)?
        .collect::<rusqlite::Result<_>>()?)
}

/// The newest `limit` semantic memories of a conversation, oldest of them first.
pub(crate) fn newest_semantic(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
    limit: usize,
) -> Result<Vec<SummaryCard>> {
    let mut cards: Vec<SummaryCard> = tx
        .prepare_cached(&format!(
            "{SUMMARY_SELECT} WHERE s.hard_key = ?1 AND s.conversation_id = ?2 \
             AND s.layer = 'semantic' AND s.superseded_by IS NULL AND s.stale_at IS NULL \
             ORDER BY s.summary_pk DESC LIMIT ?3"
        ))?
        .query_map(
            params![hard_key, conversation_id, limit as i64],
            card_from_sql,
        )?
        .collect::<rusqlite::Result<_>>()?;
    cards.reverse();
    Ok(cards)
}

/// The summaries the context shows: the newest semantic memories and the newest episodic
/// summaries not rolled up, each oldest first; and how many summaries wait for a roll-up.
pub(crate) struct Visible {
    pub semantic: Vec<SummaryCard>,
    pub episodic: Vec<SummaryCard>,
    pub pending: usize,
}

/// What the context of a conversation shows of its summaries under `settings`.
pub(crate) fn visible_summaries(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
    settings: &LayerSettings,
) -> Result<Visible> {
    let semantic = newest_semantic(
        tx,
        hard_key,
        conversation_id,
        settings.semantic_visible_limit,
    )?;
    let mut episodic = pending_episodic(tx, hard_key, conversation_id)?;
    let pending = episodic.len();
    episodic.drain(..pending.saturating_sub(settings.episodic_visible_max));
    Ok(Visible {
        semantic,
        episodic,
        pending,
    })
}

/// Semantic memories of a conversation still current (not reinforced by a newer one).
pub(crate) fn count_semantic(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
) -> Result<usize> {
    let n: i64 = tx
        .prepare_cached(
            "SELECT count(*) FROM summaries WHERE hard_key = ?1 AND conversation_id = ?2 \
             AND layer = 'semantic' AND superseded_by IS NULL AND stale_at IS NULL",
        )?
        .query_row(params![hard_key, conversation_id], |r| r.get(0))?;
    Ok(n as usize)
}

/// Insert `card` (an episodic summary covers the units `units`, first and last).
pub(crate) fn insert_card(
    tx: &Transaction<'_>,
    hard_key: &str,
    card: &SummaryCard,
    units: Option<(i64, i64)>,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO summaries (hard_key, conversation_id, summary_id, layer, title, hint, body, \
         facet, entity_anchors, topic_terms, period_start, period_end, created_at, tokens, \
         first_unit_seq, last_unit_seq) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?
    .execute(params![
        hard_key,
        card.conversation_id,
        card.memory_id,
        card.layer.as_str(),
        card.title,
        card.hint,
        card.body,
        card.facet,
        serde_json::to_string(&card.entity_anchors).unwrap_or_default(),
        serde_json::to_string(&card.topic_terms).unwrap_or_default(),
        card.period_start,
        card.period_end,
        card.created_at,
        card.tokens as i64,
        units.map(|u| u.0),
        units.map(|u| u.1),
    ])?;
    Ok(())
}

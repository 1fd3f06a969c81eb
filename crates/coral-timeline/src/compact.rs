//! `Timeline::compact` and `layer_status`: raw turns into an episodic summary, summaries into
//! semantic memories, each step one transaction that commits only if nobody moved first.
//!
//! The language model is called with no lock held; its answer is validated before anything is
//! written, and any failure (endpoint down, timeout, malformed JSON, another process compacting
//! first) leaves every row as it was, so the next call simply tries again (`docs/timeline.md`,
//! "Layers").

use chrono_tz::Tz;
use rusqlite::{Transaction, params};

use crate::answers::{MAX_TERMS, parse_episodic, parse_semantic};
use crate::error::{Error, Result};
use crate::layers::{CompactReport, LayerSettings, LayerStatus, SummaryCard, SummaryLayer};
use crate::namespace::Namespace;
use crate::prompts::PromptOverrides;
use crate::raw_window::{Unit, floor_of, pick_batch, raw_units};
use crate::render::with_tokens;
use crate::summaries::{count_semantic, insert_card, newest_semantic, pending_episodic};
use crate::summariser::{
    EPISODIC_SYSTEM, SEMANTIC_SYSTEM, SummaryLlm, ask, episodic_prompt, rollup_prompt,
};
use crate::terms::{normalize_terms, reinforcement_overlap};
use crate::timeline::Timeline;

/// Where the conversation's layers stand, and its raw window's units.
fn status_of(
    tx: &Transaction<'_>,
    hard_key: &str,
    conversation_id: &str,
    settings: &LayerSettings,
) -> Result<(LayerStatus, Vec<Unit>)> {
    let (floor, compactions, rollups) = floor_of(tx, hard_key, conversation_id)?;
    let units = raw_units(tx, hard_key, conversation_id, floor)?;
    let raw_tokens: u64 = units.iter().map(Unit::tokens).sum();
    let pending = pending_episodic(tx, hard_key, conversation_id)?.len();
    let batch = pick_batch(
        &units,
        raw_tokens,
        settings.raw_token_batch_ratio,
        settings.min_recent_turns,
    );
    let status = LayerStatus {
        raw_floor: floor,
        raw_units: units.len(),
        raw_tokens,
        episodic_pending: pending,
        semantic: count_semantic(tx, hard_key, conversation_id)?,
        compactions,
        rollups,
        compaction_due: raw_tokens >= settings.raw_token_trigger && batch > 0,
        rollup_due: pending >= settings.episodic_compact_trigger_count,
    };
    Ok((status, units))
}

impl Timeline {
    /// Where `ns`'s conversation stands: raw tokens, pending summaries, what is due.
    pub fn layer_status(&self, ns: &Namespace, settings: &LayerSettings) -> Result<LayerStatus> {
        ns.validate()?;
        settings.validate()?;
        let hk = ns.hard_key();
        self.read(|tx| Ok(status_of(tx, &hk, &ns.conversation_id, settings)?.0))
    }

    /// Summarise what is due in `ns`'s conversation: at most one raw compaction, then at most
    /// one roll-up, each in its own transaction. Times are shown to the model in `zone`.
    /// Nothing due is not an error (the report says what was done). When the first step that
    /// is due fails (an LLM failure is [`Error::Llm`], a concurrent compaction by another
    /// process [`Error::Conflict`]) nothing is written and that error is returned; when the
    /// compaction succeeds and the roll-up after it fails, the report carries the compaction
    /// and `rollup_error`.
    pub fn compact(
        &self,
        ns: &Namespace,
        settings: &LayerSettings,
        llm: &dyn SummaryLlm,
        zone: Tz,
        now: f64,
    ) -> Result<CompactReport> {
        self.compact_with(ns, settings, llm, zone, now, &PromptOverrides::default())
    }

    /// [`Timeline::compact`] with the operator's `prompts` (persona, domain notes, the
    /// summaries' language) put into the summariser's system prompts.
    pub fn compact_with(
        &self,
        ns: &Namespace,
        settings: &LayerSettings,
        llm: &dyn SummaryLlm,
        zone: Tz,
        now: f64,
        prompts: &PromptOverrides,
    ) -> Result<CompactReport> {
        ns.validate()?;
        settings.validate()?;
        prompts.validate()?;
        let hk = ns.hard_key();
        let conv = ns.conversation_id.as_str();
        // Raw -> episodic.
        let (status, units) = self.read(|tx| status_of(tx, &hk, conv, settings))?;
        let mut report = CompactReport {
            episodic: None,
            summarised_units: 0,
            semantic: Vec::new(),
            rolled_up: 0,
            rollup_error: None,
            reinforced: Vec::new(),
            status: status.clone(),
        };
        if status.compaction_due {
            let n = pick_batch(
                &units,
                status.raw_tokens,
                settings.raw_token_batch_ratio,
                settings.min_recent_turns,
            );
            let (prompt, n) = episodic_prompt(&units[..n], zone);
            let batch = &units[..n];
            let answer = ask(llm, &prompts.system(EPISODIC_SYSTEM, &prompt), &prompt)?;
            let draft = parse_episodic(&answer)?;
            let first = batch[0].unit_seq;
            let last = batch[n - 1].unit_seq;
            let period_start = batch.iter().map(Unit::first_ts).fold(f64::MAX, f64::min);
            let period_end = batch.iter().map(Unit::last_ts).fold(f64::MIN, f64::max);
            let id = self.make_id("sum", &[&hk, conv, &first.to_string(), &last.to_string()]);
            let card = SummaryCard {
                memory_id: id,
                layer: SummaryLayer::Episodic,
                conversation_id: conv.to_string(),
                tokens: 0,
                pk: 0,
                superseded_by: None,
                stale: false,
                title: draft.title,
                hint: draft.hint,
                body: draft.body,
                facet: None,
                entity_anchors: draft.entity_anchors,
                topic_terms: draft.topic_terms,
                period_start,
                period_end,
                created_at: now,
                source_count: n,
                rolled_into: None,
            };
            let card = with_tokens(card, zone);
            let next_floor = batch[n - 1].close_pk;
            self.write(|tx| {
                let (floor, _, _) = floor_of(tx, &hk, conv)?;
                if floor != status.raw_floor {
                    return Err(Error::Conflict(
                        "another process compacted this conversation first; nothing written".into(),
                    ));
                }
                insert_card(tx, &hk, &card, Some((first, last)))?;
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO summary_sources (hard_key, summary_id, position, unit_seq) \
                     VALUES (?1, ?2, ?3, ?4)",
                )?;
                for (i, unit) in batch.iter().enumerate() {
                    stmt.execute(params![hk, card.memory_id, i as i64, unit.unit_seq])?;
                }
                tx.execute(
                    "INSERT INTO compaction (hard_key, conversation_id, raw_floor, compactions, \
                     rollups, last_at) VALUES (?1, ?2, ?3, 1, 0, ?4) \
                     ON CONFLICT (hard_key, conversation_id) DO UPDATE SET \
                     raw_floor = excluded.raw_floor, compactions = compactions + 1, \
                     last_at = excluded.last_at",
                    params![hk, conv, next_floor, now],
                )?;
                Ok(())
            })?;
            report.summarised_units = n;
            report.episodic = Some(card);
        }

        // Episodic -> semantic.
        let pending = self.read(|tx| pending_episodic(tx, &hk, conv))?;
        if pending.len() >= settings.episodic_compact_trigger_count {
            let rollup = || -> Result<(Vec<SummaryCard>, usize, Vec<String>)> {
                let batch = &pending[..settings.episodic_compact_batch_size];
                let existing = self.read(|tx| {
                    newest_semantic(tx, &hk, conv, settings.semantic_reinforcement_lookback)
                })?;
                let prompt = rollup_prompt(batch, &existing, zone);
                let answer = ask(llm, &prompts.system(SEMANTIC_SYSTEM, &prompt), &prompt)?;
                let drafts = parse_semantic(&answer)?;
                let rollup_id = self.make_id("rollup", &[&hk, conv, &batch[0].memory_id]);
                let period_start = batch
                    .iter()
                    .map(|c| c.period_start)
                    .fold(f64::MAX, f64::min);
                let period_end = batch.iter().map(|c| c.period_end).fold(f64::MIN, f64::max);
                // Each new memory, and the old one it reinforces when the model says so and
                // they share enough (same facet, a shared entity, enough shared terms).
                let mut claimed: Vec<&str> = Vec::new();
                let mut cards: Vec<(SummaryCard, Option<&SummaryCard>)> = Vec::new();
                for (i, d) in drafts.into_iter().enumerate() {
                    let old = d.updates.as_deref().and_then(|id| {
                        existing.iter().find(|c| {
                            c.memory_id == id
                                && !claimed.contains(&id)
                                && reinforcement_overlap(
                                    (d.facet.as_deref(), &d.entity_anchors, &d.topic_terms),
                                    (c.facet.as_deref(), &c.entity_anchors, &c.topic_terms),
                                ) >= settings.semantic_reinforcement_min_overlap
                        })
                    });
                    let mut card = SummaryCard {
                        memory_id: self
                            .make_id("sem", &[&hk, conv, &batch[0].memory_id, &i.to_string()]),
                        layer: SummaryLayer::Semantic,
                        conversation_id: conv.to_string(),
                        title: d.title,
                        hint: d.hint,
                        body: d.body,
                        facet: d.facet,
                        entity_anchors: d.entity_anchors,
                        topic_terms: d.topic_terms,
                        period_start,
                        period_end,
                        created_at: now,
                        source_count: batch.len(),
                        rolled_into: None,
                        tokens: 0,
                        pk: 0,
                        superseded_by: None,
                        stale: false,
                    };
                    if let Some(old) = old {
                        claimed.push(&old.memory_id);
                        card.period_start = card.period_start.min(old.period_start);
                        card.period_end = card.period_end.max(old.period_end);
                        let mut anchors = card.entity_anchors.clone();
                        anchors.extend(old.entity_anchors.iter().cloned());
                        card.entity_anchors = normalize_terms(&anchors);
                        card.entity_anchors.truncate(MAX_TERMS);
                        let mut topics = card.topic_terms.clone();
                        topics.extend(old.topic_terms.iter().cloned());
                        card.topic_terms = normalize_terms(&topics);
                        card.topic_terms.truncate(MAX_TERMS);
                        card.source_count += old.source_count;
                    }
                    cards.push((with_tokens(card, zone), old));
                }
                self.write(|tx| {
                    let mut mark = tx.prepare_cached(
                        "UPDATE summaries SET rolled_into = ?3 WHERE hard_key = ?1 \
                         AND summary_id = ?2 AND rolled_into IS NULL",
                    )?;
                    for source in batch {
                        if mark.execute(params![hk, source.memory_id, rollup_id])? != 1 {
                            return Err(Error::Conflict(
                                "another process rolled these summaries up first; nothing written"
                                    .into(),
                            ));
                        }
                    }
                    let mut src = tx.prepare_cached(
                        "INSERT INTO summary_sources (hard_key, summary_id, position, \
                         source_summary_id) VALUES (?1, ?2, ?3, ?4)",
                    )?;
                    for (card, old) in &cards {
                        insert_card(tx, &hk, card, None)?;
                        // Lineage: the reinforced memory's sources first, then this batch.
                        let mut sources: Vec<String> = match old {
                            Some(old) => tx
                                .prepare_cached(
                                    "SELECT source_summary_id FROM summary_sources \
                                     WHERE hard_key = ?1 AND summary_id = ?2 \
                                     AND source_summary_id IS NOT NULL ORDER BY position",
                                )?
                                .query_map(params![hk, old.memory_id], |r| r.get(0))?
                                .collect::<rusqlite::Result<_>>()?,
                            None => Vec::new(),
                        };
                        sources.extend(batch.iter().map(|b| b.memory_id.clone()));
                        for (i, source) in sources.iter().enumerate() {
                            src.execute(params![hk, card.memory_id, i as i64, source])?;
                        }
                        if let Some(old) = old {
                            let replaced = tx
                                .prepare_cached(
                                    "UPDATE summaries SET superseded_by = ?3 WHERE hard_key = ?1 \
                                     AND summary_id = ?2 AND superseded_by IS NULL",
                                )?
                                .execute(params![hk, old.memory_id, card.memory_id])?;
                            if replaced != 1 {
                                return Err(Error::Conflict(
                                    "another process reinforced this memory first; nothing \
                                     written"
                                        .into(),
                                ));
                            }
                        }
                    }
                    tx.execute(
                        "INSERT INTO compaction (hard_key, conversation_id, raw_floor, compactions, \
                         rollups, last_at) VALUES (?1, ?2, 0, 0, 1, ?3) \
                         ON CONFLICT (hard_key, conversation_id) DO UPDATE SET \
                         rollups = rollups + 1, last_at = excluded.last_at",
                        params![hk, conv, now],
                    )?;
                    Ok(())
                })?;
                let reinforced = cards
                    .iter()
                    .filter_map(|(_, old)| old.map(|o| o.memory_id.clone()))
                    .collect();
                Ok((
                    cards.into_iter().map(|(c, _)| c).collect(),
                    batch.len(),
                    reinforced,
                ))
            };
            match rollup() {
                Ok((cards, n, reinforced)) => {
                    report.rolled_up = n;
                    report.semantic = cards;
                    report.reinforced = reinforced;
                }
                // The summary above is written; say what failed instead of hiding it.
                Err(e) if report.episodic.is_some() => {
                    report.rollup_error = Some(format!("{}: {e}", e.code()));
                }
                Err(e) => return Err(e),
            }
        }
        report.status = self.read(|tx| Ok(status_of(tx, &hk, conv, settings)?.0))?;
        Ok(report)
    }
}

//! Totals of settlement: how many tokens the folded results no longer cost.

use rusqlite::params;
use serde::Serialize;

use crate::error::Result;
use crate::namespace::Namespace;
use crate::timeline::Timeline;

/// Counts and token totals of a conversation (or of every conversation of a hard key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Entries stored.
    pub entries: u64,
    /// Turns still open.
    pub open_turns: u64,
    /// Completed turns.
    pub completed_turns: u64,
    /// Aborted turns.
    pub aborted_turns: u64,
    /// Results settled when their turn ended (turns under `compact_after_terminal`).
    pub results: u64,
    /// Results now shown as reload cards.
    pub folded_results: u64,
    /// Estimated tokens of the ended turns' result bodies.
    pub full_tokens: u64,
    /// Estimated tokens of what is shown instead.
    pub settled_tokens: u64,
    /// `full_tokens - settled_tokens`: what every later request no longer pays for.
    pub saved_tokens: u64,
}

impl Timeline {
    /// Settlement totals for `ns`'s conversation, or for its whole hard key when
    /// `cross_conversation`.
    pub fn metrics(&self, ns: &Namespace, cross_conversation: bool) -> Result<Metrics> {
        ns.validate()?;
        let hk = ns.hard_key();
        let scope = (!cross_conversation).then_some(ns.conversation_id.as_str());
        self.read(|tx| {
            let mut m = Metrics::default();
            let (open, completed, aborted, full, settled): (i64, i64, i64, i64, i64) = tx
                .prepare_cached(
                    "SELECT COALESCE(SUM(status = 'open'), 0), \
                     COALESCE(SUM(status = 'completed'), 0), \
                     COALESCE(SUM(status = 'aborted'), 0), COALESCE(SUM(full_tokens), 0), \
                     COALESCE(SUM(settled_tokens), 0) FROM turns WHERE hard_key = ?1 \
                     AND (?2 IS NULL OR conversation_id = ?2)",
                )?
                .query_row(params![hk, scope], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })?;
            let entries: i64 = tx
                .prepare_cached(
                    "SELECT COUNT(*) FROM entries WHERE hard_key = ?1 \
                     AND (?2 IS NULL OR conversation_id = ?2)",
                )?
                .query_row(params![hk, scope], |r| r.get(0))?;
            let (results, folded): (i64, i64) = tx
                .prepare_cached(
                    "SELECT COUNT(*), COALESCE(SUM(classification = 'compact_reloadable'), 0) \
                     FROM settlements WHERE hard_key = ?1 \
                     AND (?2 IS NULL OR conversation_id = ?2)",
                )?
                .query_row(params![hk, scope], |r| Ok((r.get(0)?, r.get(1)?)))?;
            m.entries = entries as u64;
            m.open_turns = open as u64;
            m.completed_turns = completed as u64;
            m.aborted_turns = aborted as u64;
            m.results = results as u64;
            m.folded_results = folded as u64;
            m.full_tokens = full as u64;
            m.settled_tokens = settled as u64;
            m.saved_tokens = m.full_tokens.saturating_sub(m.settled_tokens);
            Ok(m)
        })
    }
}

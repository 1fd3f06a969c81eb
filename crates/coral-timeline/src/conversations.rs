//! `conversations`: the conversations of one hard key with their counts and times, for a person
//! choosing one to look at (the dashboard's timeline view, docs/dashboard.md).

use std::collections::BTreeMap;

use rusqlite::params;
use serde::Serialize;

use crate::error::Result;
use crate::namespace::Namespace;
use crate::timeline::Timeline;

/// One conversation of a hard key.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Conversation {
    /// Its id.
    pub conversation_id: String,
    /// Entries stored (turn entries and standalone ones).
    pub entries: u64,
    /// Turns still open.
    pub open_turns: u64,
    /// Completed turns.
    pub completed_turns: u64,
    /// Aborted turns.
    pub aborted_turns: u64,
    /// Episodic summaries stored.
    pub episodic: u64,
    /// Semantic memories stored.
    pub semantic: u64,
    /// Times raw turns were summarised (each one changes the context's start).
    pub compactions: i64,
    /// Times summaries were rolled up into semantic memories (likewise).
    pub rollups: i64,
    /// The first entry's time, Unix seconds.
    pub first_at: Option<f64>,
    /// The last entry's time, Unix seconds.
    pub last_at: Option<f64>,
}

impl Timeline {
    /// Every conversation of `ns`'s hard key (its `conversation_id` is ignored), the most
    /// recently active first.
    pub fn conversations(&self, ns: &Namespace) -> Result<Vec<Conversation>> {
        ns.validate()?;
        let hk = ns.hard_key();
        self.read(|tx| {
            let mut all: BTreeMap<String, Conversation> = BTreeMap::new();
            let mut rows = tx.prepare_cached(
                "SELECT conversation_id, COUNT(*), MIN(unit_ts), MAX(unit_ts) FROM entries \
                 WHERE hard_key = ?1 GROUP BY conversation_id",
            )?;
            let mut q = rows.query(params![hk])?;
            while let Some(r) = q.next()? {
                let c = entry(&mut all, r.get(0)?);
                c.entries = r.get::<_, i64>(1)? as u64;
                c.first_at = r.get(2)?;
                c.last_at = r.get(3)?;
            }
            let mut rows = tx.prepare_cached(
                "SELECT conversation_id, COALESCE(SUM(status = 'open'), 0), \
                 COALESCE(SUM(status = 'completed'), 0), COALESCE(SUM(status = 'aborted'), 0) \
                 FROM turns WHERE hard_key = ?1 GROUP BY conversation_id",
            )?;
            let mut q = rows.query(params![hk])?;
            while let Some(r) = q.next()? {
                let c = entry(&mut all, r.get(0)?);
                c.open_turns = r.get::<_, i64>(1)? as u64;
                c.completed_turns = r.get::<_, i64>(2)? as u64;
                c.aborted_turns = r.get::<_, i64>(3)? as u64;
            }
            let mut rows = tx.prepare_cached(
                "SELECT conversation_id, COALESCE(SUM(layer = 'episodic'), 0), \
                 COALESCE(SUM(layer = 'semantic'), 0) FROM summaries WHERE hard_key = ?1 \
                 GROUP BY conversation_id",
            )?;
            let mut q = rows.query(params![hk])?;
            while let Some(r) = q.next()? {
                let c = entry(&mut all, r.get(0)?);
                c.episodic = r.get::<_, i64>(1)? as u64;
                c.semantic = r.get::<_, i64>(2)? as u64;
            }
            let mut rows = tx.prepare_cached(
                "SELECT conversation_id, compactions, rollups FROM compaction WHERE hard_key = ?1",
            )?;
            let mut q = rows.query(params![hk])?;
            while let Some(r) = q.next()? {
                let c = entry(&mut all, r.get(0)?);
                c.compactions = r.get(1)?;
                c.rollups = r.get(2)?;
            }
            let mut out: Vec<Conversation> = all.into_values().collect();
            out.sort_by(|a, b| {
                b.last_at
                    .unwrap_or(0.0)
                    .total_cmp(&a.last_at.unwrap_or(0.0))
                    .then_with(|| a.conversation_id.cmp(&b.conversation_id))
            });
            Ok(out)
        })
    }
}

/// The conversation called `id` in `all`, added empty when new.
fn entry(all: &mut BTreeMap<String, Conversation>, id: String) -> &mut Conversation {
    all.entry(id.clone()).or_insert_with(|| Conversation {
        conversation_id: id,
        ..Conversation::default()
    })
}

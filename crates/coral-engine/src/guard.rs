//! The bulk-removal guard: a changed setting that would remove more than a small share of the
//! memories at once waits for an explicit confirmation, and every removal is logged.
//!
//! Governance removes memories for three kinds of reasons: growth (the pool passes its limits
//! one insert at a time, and each pass removes about one headroom's worth), an import, and a
//! changed limit (`memory.capacity_threshold 0` removes everything at once). Only the last can
//! be triggered by one call, from a tool a model was talked into calling or from an edit of
//! the config file that a running server picks up, so only changed limits are guarded:
//!
//! - The limits governance last ran under are recorded in `coral_governance.json` (the
//!   *accepted* limits), with a log of what was removed, when and why.
//! - When the config's limits differ from the accepted ones, governance first previews what
//!   the new ones would remove now. Up to [`bulk_limit`] memories, the new limits are accepted.
//!   Beyond it, governance keeps running under the accepted limits (or, with none recorded,
//!   removes nothing) and reports the hold, until the change is confirmed: `coral govern
//!   --confirm`, a tool call with `confirm: true`, or a Rust caller's
//!   [`crate::Coral::set_config`].
//!
//! The record is shared by every process using the directory: a confirmation in one applies
//! in all.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use coral_heat::{
    Candidate, ColdItem, QuotaLimits, evict_lowest_heat, excess_over_capacity, headroom,
    lru_overflow, plan_quota, ttl_expired,
};
use coral_store::{Pool, Store, Tier};
use serde::{Deserialize, Serialize};

use crate::candidates::{self, candidate};
use crate::error::Result;
use crate::quota::{archive_bytes, item_bytes, quota_bytes};
use coral_config::Config;

/// The record's file name, in the data directory.
pub const GOVERNANCE_FILE: &str = "coral_governance.json";

/// Removal log entries kept in the record.
pub(crate) const LOG_ENTRIES: usize = 200;

/// The most memories a changed setting may remove without a confirmation: 1 % of the pool, at
/// least 10. (A growing pool's normal passes remove a headroom's worth, up to 200 at a time,
/// but those follow unchanged limits and are never held.)
pub fn bulk_limit(total: usize) -> usize {
    (total / 100).max(10)
}

/// The settings that decide how much governance removes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemovalLimits {
    /// `memory.hot_ttl_hours`
    pub hot_ttl_hours: f64,
    /// `memory.max_hot_entries`
    pub max_hot_entries: usize,
    /// `memory.max_warm_entries`
    pub max_warm_entries: usize,
    /// `memory.max_cold_entries`
    pub max_cold_entries: usize,
    /// `memory.capacity_threshold`
    pub capacity_threshold: usize,
    /// `memory.governance_headroom`
    pub governance_headroom: usize,
    /// `memory.project_quota`
    pub project_quota: usize,
    /// `storage.max_bytes`
    pub max_bytes: u64,
    /// `storage.warn_ratio`
    pub warn_ratio: f64,
    /// `storage.hard_ratio`
    pub hard_ratio: f64,
}

impl RemovalLimits {
    /// The limits of `config`.
    pub fn of(config: &Config) -> RemovalLimits {
        let (m, s) = (&config.memory, &config.storage);
        RemovalLimits {
            hot_ttl_hours: m.hot_ttl_hours,
            max_hot_entries: m.max_hot_entries,
            max_warm_entries: m.max_warm_entries,
            max_cold_entries: m.max_cold_entries,
            capacity_threshold: m.capacity_threshold,
            governance_headroom: m.governance_headroom,
            project_quota: m.project_quota,
            max_bytes: s.max_bytes,
            warn_ratio: s.warn_ratio,
            hard_ratio: s.hard_ratio,
        }
    }

    /// Limits under which governance moves tiers but removes nothing.
    pub(crate) fn removing_nothing(config: &Config) -> RemovalLimits {
        RemovalLimits {
            max_cold_entries: usize::MAX / 2,
            capacity_threshold: usize::MAX / 2,
            project_quota: 0,
            max_bytes: 0,
            ..RemovalLimits::of(config)
        }
    }

    /// `config` with these limits.
    pub(crate) fn applied_to(&self, config: &Config) -> Config {
        let mut c = config.clone();
        let (m, s) = (&mut c.memory, &mut c.storage);
        m.hot_ttl_hours = self.hot_ttl_hours;
        m.max_hot_entries = self.max_hot_entries;
        m.max_warm_entries = self.max_warm_entries;
        m.max_cold_entries = self.max_cold_entries;
        m.capacity_threshold = self.capacity_threshold;
        m.governance_headroom = self.governance_headroom;
        m.project_quota = self.project_quota;
        s.max_bytes = self.max_bytes;
        s.warn_ratio = self.warn_ratio;
        s.hard_ratio = self.hard_ratio;
        c
    }

    /// `"key old → new"` for every setting that differs from `old`'s.
    pub(crate) fn changes_from(&self, old: Option<&RemovalLimits>) -> Vec<String> {
        let pairs = |l: &RemovalLimits| -> Vec<(&'static str, String)> {
            vec![
                ("memory.hot_ttl_hours", l.hot_ttl_hours.to_string()),
                ("memory.max_hot_entries", l.max_hot_entries.to_string()),
                ("memory.max_warm_entries", l.max_warm_entries.to_string()),
                ("memory.max_cold_entries", l.max_cold_entries.to_string()),
                (
                    "memory.capacity_threshold",
                    l.capacity_threshold.to_string(),
                ),
                (
                    "memory.governance_headroom",
                    l.governance_headroom.to_string(),
                ),
                ("memory.project_quota", l.project_quota.to_string()),
                ("storage.max_bytes", l.max_bytes.to_string()),
                ("storage.warn_ratio", l.warn_ratio.to_string()),
                ("storage.hard_ratio", l.hard_ratio.to_string()),
            ]
        };
        let new = pairs(self);
        match old {
            None => new.into_iter().map(|(k, v)| format!("{k} {v}")).collect(),
            Some(old) => new
                .into_iter()
                .zip(pairs(old))
                .filter(|((_, n), (_, o))| n != o)
                .map(|((k, n), (_, o))| format!("{k} {o} → {n}"))
                .collect(),
        }
    }
}

/// What a configuration would remove right now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RemovalPreview {
    /// Memories in the pool.
    pub memories: usize,
    /// How many would be removed at once.
    pub would_remove: usize,
    /// The most allowed without a confirmation ([`bulk_limit`]).
    pub limit: usize,
    /// By reason: `trimmed` (cold tier limit), `evicted` (capacity), `project_quota`,
    /// `disk_quota` (deleted, not archived).
    pub by_reason: BTreeMap<String, usize>,
    /// By the tier they are in now.
    pub by_tier: BTreeMap<String, usize>,
    /// The settings that differ from the accepted ones, `"key old → new"`.
    pub changes: Vec<String>,
}

impl RemovalPreview {
    /// Whether this needs a confirmation.
    pub fn in_bulk(&self) -> bool {
        self.would_remove > self.limit
    }
}

/// One governance removal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Removal {
    /// When, Unix seconds.
    pub at: f64,
    /// `evicted`, `trimmed`, `distilled`, `project_quota` (these are in the archive) or
    /// `disk_quota` (deleted to free space).
    pub reason: String,
    /// How many memories.
    pub count: usize,
    /// How many came from each tier.
    pub tiers: BTreeMap<String, usize>,
}

/// A change waiting for confirmation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Held {
    /// Since when, Unix seconds.
    pub since: f64,
    /// What it would remove.
    pub preview: RemovalPreview,
    /// How to confirm it.
    pub confirm: String,
}

/// `coral_governance.json` (and, with the postgres backend, a tenant's row of
/// `coral_governance`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The limits governance last ran under.
    #[serde(default)]
    pub(crate) accepted: Option<RemovalLimits>,
    /// When they were accepted.
    #[serde(default)]
    pub(crate) accepted_at: Option<f64>,
    /// Recent removals, oldest first.
    #[serde(default)]
    pub(crate) removed: Vec<Removal>,
}

impl Record {
    /// Logs a removal (counted by tier), keeping the newest [`LOG_ENTRIES`].
    pub(crate) fn log(&mut self, reason: &str, tiers: BTreeMap<String, usize>, now: f64) {
        let count = tiers.values().sum();
        if count == 0 {
            return;
        }
        self.removed.push(Removal {
            at: now,
            reason: reason.to_string(),
            count,
            tiers,
        });
        let extra = self.removed.len().saturating_sub(LOG_ENTRIES);
        self.removed.drain(..extra);
    }
}

/// The confirmation a held change asks for.
pub(crate) fn confirm_text(preview: &RemovalPreview) -> String {
    format!(
        "run `coral govern --confirm`, or repeat the change with confirm: true, to \
         remove {} of {} memories; or change the setting back",
        preview.would_remove, preview.memories
    )
}

/// One line for `stats().governance.held`.
pub(crate) fn held_line(h: &Held) -> String {
    format!(
        "{}: would remove {} of {} memories ({}); {}",
        h.preview.changes.join(", "),
        h.preview.would_remove,
        h.preview.memories,
        h.preview
            .by_reason
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        h.confirm
    )
}

/// The guard's state in this process: the record as this process last read or wrote it, and
/// the change held back. The record's path and whether it may be written come from the store
/// passed in.
#[derive(Default)]
pub(crate) struct RemovalGuard {
    record: Record,
    fingerprint: Option<(std::time::SystemTime, u64)>,
    /// Why the file could not be read, if it could not (governance then holds everything a
    /// changed limit would remove in bulk, as with no record).
    problem: Option<String>,
    held: Option<Held>,
}

fn fingerprint(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl RemovalGuard {
    /// Re-read the record when another process changed it.
    fn refresh(&mut self, store: &Store) {
        let path = &store.paths().governance;
        let now = fingerprint(path);
        if now.is_some() && now == self.fingerprint {
            return;
        }
        self.fingerprint = now;
        self.problem = None;
        self.record = match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(r) => r,
                Err(e) => {
                    self.problem = Some(format!(
                        "{} is not readable ({e}); it is rewritten at the next accepted change",
                        path.display()
                    ));
                    Record::default()
                }
            },
            Err(_) => Record::default(),
        };
    }

    fn write(&mut self, store: &Store) -> Result<()> {
        if store.read_only().is_some() {
            return Ok(());
        }
        let path = &store.paths().governance;
        let mut bytes = serde_json::to_vec_pretty(&self.record).unwrap_or_default();
        bytes.push(b'\n');
        coral_store::write_atomic(path, &bytes, true)?;
        self.fingerprint = fingerprint(path);
        self.problem = None;
        Ok(())
    }

    /// Log a removal of `rows` (counted by their tier now) for `reason`.
    pub(crate) fn log_removal(
        &mut self,
        store: &Store,
        reason: &str,
        tiers: BTreeMap<String, usize>,
        now: f64,
    ) {
        if tiers.values().sum::<usize>() == 0 {
            return;
        }
        self.refresh(store);
        self.record.log(reason, tiers, now);
        // The log is a report: failing to write it must not fail the removal, which is done.
        let _ = self.write(store);
    }

    /// The configuration governance may run under now: `None` means `config` itself (its
    /// limits are the accepted ones, or remove at most [`bulk_limit`] memories and so become
    /// the accepted ones); `Some` is `config` with the accepted limits, and the change is held.
    pub(crate) fn guarded(&mut self, store: &Store, config: &Config, now: f64) -> Option<Config> {
        self.refresh(store);
        let limits = RemovalLimits::of(config);
        let accepted = self.record.accepted.clone();
        if accepted.as_ref() == Some(&limits) {
            self.held = None;
            return None;
        }
        let mut preview = preview_removals(store, config, now);
        preview.changes = limits.changes_from(accepted.as_ref());
        if !preview.in_bulk() {
            self.accept(store, limits, now);
            return None;
        }
        let since = match &self.held {
            Some(h) if h.preview.changes == preview.changes => h.since,
            _ => now,
        };
        self.held = Some(Held {
            since,
            confirm: confirm_text(&preview),
            preview,
        });
        let keep = accepted.unwrap_or_else(|| RemovalLimits::removing_nothing(config));
        Some(keep.applied_to(config))
    }

    /// What `config` would remove now, with the settings that differ from the accepted ones.
    pub(crate) fn preview_change(
        &mut self,
        store: &Store,
        config: &Config,
        now: f64,
    ) -> RemovalPreview {
        self.refresh(store);
        let mut preview = preview_removals(store, config, now);
        preview.changes = RemovalLimits::of(config).changes_from(self.record.accepted.as_ref());
        preview
    }

    /// Make `limits` the accepted ones and lift any hold.
    pub(crate) fn accept(&mut self, store: &Store, limits: RemovalLimits, now: f64) {
        self.held = None;
        if self.record.accepted.as_ref() == Some(&limits) && self.problem.is_none() {
            return;
        }
        self.record.accepted = Some(limits);
        self.record.accepted_at = Some(now);
        // Not fatal: an unwritten acceptance is previewed again by the next process.
        let _ = self.write(store);
    }

    /// The change waiting for confirmation, if any.
    pub(crate) fn held(&self) -> Option<&Held> {
        self.held.as_ref()
    }

    /// Recent removals, oldest first.
    pub(crate) fn removals(&mut self, store: &Store) -> Vec<Removal> {
        self.refresh(store);
        self.record.removed.clone()
    }
}

/// The tiers of `rows`, counted.
pub(crate) fn tiers_of(pool: &Pool, rows: &[u32]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for &r in rows {
        *out.entry(pool.tier(r).to_string()).or_insert(0) += 1;
    }
    out
}

/// What `config` would remove now if governance ran: the same policy functions
/// governance uses, on the pool as it is, nothing changed.
pub(crate) fn preview_removals(store: &Store, config: &Config, now: f64) -> RemovalPreview {
    let pool = store.pool();
    let m = &config.memory;
    let params = config.heat.params();
    let candidate = |row: u32| candidate(pool, row);
    let tier_rows = |t: Tier| -> Vec<Candidate> { candidates::of_tier(pool, t) };
    // Tier moves first, as `maintain` does: only the count moved to cold matters here.
    let mut hot = tier_rows(Tier::Hot);
    let expired = ttl_expired(&hot, now, m.hot_ttl_hours * 3600.0);
    let mut warm = tier_rows(Tier::Warm);
    hot.retain(|c| !expired.contains(&c.key));
    warm.extend(expired.iter().map(|&r| candidate(r)));
    let mut to_cold = lru_overflow(&hot, m.max_hot_entries);
    to_cold.extend(lru_overflow(&warm, m.max_warm_entries));
    let mut cold = tier_rows(Tier::Cold);
    cold.extend(to_cold.iter().map(|&r| candidate(r)));
    let mut removed: HashSet<u32> = HashSet::new();
    let mut by_reason = BTreeMap::new();
    let mut note = |reason: &str, rows: Vec<u32>, removed: &mut HashSet<u32>| {
        if !rows.is_empty() {
            by_reason.insert(reason.to_string(), rows.len());
            removed.extend(rows);
        }
    };
    let limit = m.max_cold_entries;
    if excess_over_capacity(cold.len(), limit, headroom(limit, 0)) > 0 {
        let rows = evict_lowest_heat(&cold, cold.len() - limit, now, &params);
        note("trimmed", rows, &mut removed);
    }
    let rest: Vec<Candidate> = (0..pool.len() as u32)
        .filter(|r| !removed.contains(r))
        .map(candidate)
        .collect();
    let capacity = m.capacity_threshold;
    let excess = excess_over_capacity(
        rest.len(),
        capacity,
        headroom(capacity, m.governance_headroom),
    );
    if excess > 0 {
        note(
            "evicted",
            evict_lowest_heat(&rest, excess, now, &params),
            &mut removed,
        );
    }
    if m.project_quota > 0 {
        let mut by_project: BTreeMap<&str, Vec<Candidate>> = BTreeMap::new();
        for r in 0..pool.len() as u32 {
            if let Some(p) = pool.item(r).project.as_deref()
                && !removed.contains(&r)
            {
                by_project.entry(p).or_default().push(candidate(r));
            }
        }
        let quota = m.project_quota;
        let mut rows = Vec::new();
        for members in by_project.values() {
            let excess = excess_over_capacity(members.len(), quota, headroom(quota, 0));
            rows.extend(evict_lowest_heat(members, excess, now, &params));
        }
        note("project_quota", rows, &mut removed);
    }
    let s = &config.storage;
    if s.max_bytes > 0 {
        let limits = QuotaLimits {
            max_bytes: s.max_bytes,
            warn_ratio: s.warn_ratio,
            hard_ratio: s.hard_ratio,
        };
        let cold_items: Vec<ColdItem> = pool
            .tier_rows(Tier::Cold)
            .iter()
            .filter(|r| !removed.contains(r))
            .map(|row| ColdItem {
                item: candidate(row),
                bytes: item_bytes(pool.item(row), Tier::Cold, pool.dim()),
            })
            .collect();
        let archive = archive_bytes(store);
        let plan = plan_quota(
            quota_bytes(store),
            archive,
            &cold_items,
            &limits,
            true,
            now,
            &params,
        );
        note("disk_quota", plan.evict, &mut removed);
    }
    let removed: Vec<u32> = removed.into_iter().collect();
    RemovalPreview {
        memories: pool.len(),
        would_remove: removed.len(),
        limit: bulk_limit(pool.len()),
        by_reason,
        by_tier: tiers_of(pool, &removed),
        changes: Vec::new(),
    }
}

/// What confirming a held change did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Confirmed {
    /// What was waiting (nothing when no change was held).
    pub preview: Option<RemovalPreview>,
    /// Memories before and after governance ran.
    pub before: usize,
    /// After.
    pub after: usize,
}

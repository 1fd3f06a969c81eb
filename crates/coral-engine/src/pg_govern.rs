//! Tiers and governance of the postgres backend (docs/postgres.md, "Tiers and governance"):
//! the local engine's policies (coral-heat's `ttl_expired`, `lru_overflow`,
//! `evict_lowest_heat`, `plan_quota`, in the order `engine/lifecycle.rs`, `govern.rs` and
//! `guard.rs` apply them) decided in Coral over the tenant's rows, and applied by
//! `coral_pg::PgStore::govern` in one transaction under the tenant's governance lock.
//!
//! Amortised as locally: every pass reads the hot and warm tiers (small) and the tenant's
//! document count (16 rows); the whole tenant is read only when a limit is passed by its
//! headroom, a changed limit must be previewed, or a config change checks every project. The
//! disk quota reads the tenant's byte totals (one aggregate) when `storage.max_bytes` is set.

use std::collections::{BTreeMap, HashSet};

use coral_heat::{
    Candidate, ColdItem, QuotaLimits, QuotaPlan, evict_lowest_heat, excess_over_capacity, headroom,
    lru_overflow, plan_quota, ttl_expired,
};
use coral_pg::{Governing, HeatRow, Removed, Usage};
use coral_store::{Item, Tier, to_python_line};

use crate::guard::{Held, Record, RemovalLimits, RemovalPreview, bulk_limit, confirm_text};
use crate::quota::bytes_for;
use coral_config::Config;

/// Which projects a pass checks against `memory.project_quota`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Projects<'a> {
    /// After an insert: only its project can have grown past the quota.
    One(&'a str),
    /// After a config change: every project.
    All,
    /// None (an insert merged, or had no project).
    Neither,
}

/// What one pass did, for the counters and the hold.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pass {
    /// The change held back, when the config's limits would remove in bulk.
    pub(crate) held: Option<Held>,
    /// The disk quota's plan, when `storage.max_bytes` is set.
    pub(crate) quota: Option<QuotaPlan>,
    /// The bytes the quota counted.
    pub(crate) counted: u64,
    /// Memories the disk quota deleted.
    pub(crate) quota_removed: u64,
    /// Archive bytes the disk quota trimmed.
    pub(crate) archive_trimmed: u64,
}

fn candidate(index: usize, row: &HeatRow) -> Candidate {
    Candidate {
        key: index as u32,
        timestamp: row.created,
        last_access: row.last_access,
        access_count: row.access_count,
        importance: row.importance,
    }
}

fn of_tier(rows: &[HeatRow], tier: Tier) -> Vec<Candidate> {
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.tier == tier)
        .map(|(i, r)| candidate(i, r))
        .collect()
}

/// The TTL and overflow moves of `lifecycle.rs`'s first step over `rows` (the hot and warm
/// ones count): indices to warm, and to cold.
pub(crate) fn tier_moves(rows: &[HeatRow], config: &Config, now: f64) -> (Vec<u32>, Vec<u32>) {
    let m = &config.memory;
    let mut hot = of_tier(rows, Tier::Hot);
    let expired = ttl_expired(&hot, now, m.hot_ttl_hours * 3600.0);
    let mut warm = of_tier(rows, Tier::Warm);
    hot.retain(|c| !expired.contains(&c.key));
    warm.extend(
        expired
            .iter()
            .map(|&i| candidate(i as usize, &rows[i as usize])),
    );
    let mut to_cold = lru_overflow(&hot, m.max_hot_entries);
    to_cold.extend(lru_overflow(&warm, m.max_warm_entries));
    // Locally the TTL's moves to warm are committed first and an overflow then moves some of
    // them on to cold: the last move wins.
    let to_warm = expired
        .into_iter()
        .filter(|i| !to_cold.contains(i))
        .collect();
    (to_warm, to_cold)
}

/// `rows` with the moves applied.
fn moved(rows: &[HeatRow], to_warm: &[u32], to_cold: &[u32]) -> Vec<HeatRow> {
    let mut out = rows.to_vec();
    for &i in to_warm {
        out[i as usize].tier = Tier::Warm;
    }
    for &i in to_cold {
        out[i as usize].tier = Tier::Cold;
    }
    out
}

/// The archive's removals of `rows` (the whole tenant, tiers as they are after the moves),
/// in `maintain`'s order: the cold trim (`trimmed`), capacity (`evicted`, over what is
/// left), the project quota (`project_quota`). Indices into `rows` by reason, in that order.
pub(crate) fn removals(
    rows: &[HeatRow],
    config: &Config,
    now: f64,
    projects: Projects<'_>,
) -> Vec<(&'static str, Vec<u32>)> {
    let m = &config.memory;
    let params = config.heat.params();
    let mut gone: HashSet<u32> = HashSet::new();
    let mut out = Vec::new();
    let cold = of_tier(rows, Tier::Cold);
    let limit = m.max_cold_entries;
    if excess_over_capacity(cold.len(), limit, headroom(limit, 0)) > 0 {
        let picked = evict_lowest_heat(&cold, cold.len() - limit, now, &params);
        gone.extend(&picked);
        out.push(("trimmed", picked));
    }
    let rest: Vec<Candidate> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| !gone.contains(&(*i as u32)))
        .map(|(i, r)| candidate(i, r))
        .collect();
    let capacity = m.capacity_threshold;
    let excess = excess_over_capacity(
        rest.len(),
        capacity,
        headroom(capacity, m.governance_headroom),
    );
    if excess > 0 {
        let picked = evict_lowest_heat(&rest, excess, now, &params);
        gone.extend(&picked);
        out.push(("evicted", picked));
    }
    let quota = m.project_quota;
    if quota > 0 && !matches!(projects, Projects::Neither) {
        let mut by_project: BTreeMap<&str, Vec<Candidate>> = BTreeMap::new();
        for (i, r) in rows.iter().enumerate() {
            let Some(p) = r.project.as_deref() else {
                continue;
            };
            let wanted = match projects {
                Projects::One(one) => one == p,
                _ => true,
            };
            if wanted && !gone.contains(&(i as u32)) {
                by_project.entry(p).or_default().push(candidate(i, r));
            }
        }
        let mut picked = Vec::new();
        for members in by_project.values() {
            let excess = excess_over_capacity(members.len(), quota, headroom(quota, 0));
            picked.extend(evict_lowest_heat(members, excess, now, &params));
        }
        if !picked.is_empty() {
            out.push(("project_quota", picked));
        }
    }
    out
}

/// The bytes `storage.max_bytes` counts for a tenant: each memory as a data directory's
/// checkpoint would write it (`quota.rs`'s `item_bytes`: its JSON, vector row and index
/// entries) plus the archive's entries.
pub(crate) fn counted_bytes(usage: &Usage, dim: usize) -> u64 {
    let items: u64 = Tier::ALL
        .iter()
        .map(|&tier| {
            let u = usage.tiers[tier.index()];
            u.content_bytes + u.project_bytes + u.items * bytes_for(0, 0, tier, dim)
        })
        .sum();
    items + usage.archive_bytes
}

/// What an item counts against the quota in the archive: its line as the data directory's
/// archive holds it.
pub(crate) fn archive_entry_bytes(item: &Item) -> u64 {
    let mut line = Vec::new();
    to_python_line(item, &mut line);
    line.len() as u64 + 1
}

fn row_bytes(row: &HeatRow, dim: usize) -> u64 {
    let project = row.project.as_ref().map_or(0, |p| p.len() as u64 + 16);
    bytes_for(row.content_bytes, project, row.tier, dim)
}

fn limits_of(config: &Config) -> QuotaLimits {
    let s = &config.storage;
    QuotaLimits {
        max_bytes: s.max_bytes,
        warn_ratio: s.warn_ratio,
        hard_ratio: s.hard_ratio,
    }
}

/// The disk quota's plan over the cold `rows` (indices into them).
fn quota_plan(
    rows: &[HeatRow],
    counted: u64,
    usage: &Usage,
    config: &Config,
    dim: usize,
    warned: bool,
    now: f64,
) -> QuotaPlan {
    let cold: Vec<ColdItem> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.tier == Tier::Cold)
        .map(|(i, r)| ColdItem {
            item: candidate(i, r),
            bytes: row_bytes(r, dim),
        })
        .collect();
    plan_quota(
        counted,
        usage.archive_bytes,
        &cold,
        &limits_of(config),
        warned,
        now,
        &config.heat.params(),
    )
}

fn tiers_of(rows: &[HeatRow], picked: &[u32]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for &i in picked {
        *out.entry(rows[i as usize].tier.to_string()).or_insert(0) += 1;
    }
    out
}

fn removed_tiers(removed: &[Removed]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for r in removed {
        *out.entry(r.tier.to_string()).or_insert(0) += 1;
    }
    out
}

/// What `config` would remove now from the tenant (`rows` whole, `usage` its totals): the
/// same policies, nothing changed (as `guard.rs`'s `preview_removals`).
pub(crate) fn preview(
    rows: &[HeatRow],
    usage: &Usage,
    config: &Config,
    dim: usize,
    now: f64,
) -> RemovalPreview {
    let (to_warm, to_cold) = tier_moves(rows, config, now);
    let after = moved(rows, &to_warm, &to_cold);
    let mut by_reason = BTreeMap::new();
    let mut gone: HashSet<u32> = HashSet::new();
    for (reason, picked) in removals(&after, config, now, Projects::All) {
        by_reason.insert(reason.to_string(), picked.len());
        gone.extend(picked);
    }
    if config.storage.max_bytes > 0 {
        let left: Vec<HeatRow> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut r = r.clone();
                if gone.contains(&(i as u32)) {
                    // Out of the disk quota's reach: already removed by another reason.
                    r.tier = Tier::Hot;
                }
                r
            })
            .collect();
        let plan = quota_plan(
            &left,
            counted_bytes(usage, dim),
            usage,
            config,
            dim,
            true,
            now,
        );
        if !plan.evict.is_empty() {
            by_reason.insert("disk_quota".into(), plan.evict.len());
            gone.extend(plan.evict);
        }
    }
    let gone: Vec<u32> = gone.into_iter().collect();
    RemovalPreview {
        memories: rows.len(),
        would_remove: gone.len(),
        limit: bulk_limit(rows.len()),
        by_reason,
        by_tier: tiers_of(rows, &gone),
        changes: Vec::new(),
    }
}

/// The tenant's guard record (a damaged one reads as none: everything a changed limit would
/// remove in bulk is then held, as locally).
pub(crate) fn read_record(g: &mut Governing<'_, '_>) -> coral_pg::Result<Record> {
    Ok(g.record()?
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default())
}

/// Writes it.
pub(crate) fn write_record(g: &mut Governing<'_, '_>, record: &Record) -> coral_pg::Result<()> {
    let value = serde_json::to_value(record).unwrap_or_default();
    g.set_record(&value)
}

/// One governance pass inside `g` (the tenant locked): the guard, the tier moves, the
/// archive's removals, the disk quota. `held_before` is this process's hold (its `since` is
/// kept while the same change waits); `warned` whether the disk warning is up.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pass(
    g: &mut Governing<'_, '_>,
    config: &Config,
    dim: usize,
    now: f64,
    projects: Projects<'_>,
    held_before: Option<&Held>,
    warned: bool,
) -> coral_pg::Result<Pass> {
    let mut out = Pass::default();
    let mut record = read_record(g)?;
    let mut record_changed = false;

    // The removal guard (`guard.rs`): a changed limit that removes in bulk waits.
    let limits = RemovalLimits::of(config);
    let mut whole: Option<Vec<HeatRow>> = None;
    let kept;
    let config = if record.accepted.as_ref() == Some(&limits) {
        config
    } else {
        let rows = g.rows(&Tier::ALL)?;
        let usage = g.usage()?;
        let mut p = preview(&rows, &usage, config, dim, now);
        p.changes = limits.changes_from(record.accepted.as_ref());
        whole = Some(rows);
        if p.in_bulk() {
            let since = match held_before {
                Some(h) if h.preview.changes == p.changes => h.since,
                _ => now,
            };
            out.held = Some(Held {
                since,
                confirm: confirm_text(&p),
                preview: p,
            });
            kept = record
                .accepted
                .clone()
                .unwrap_or_else(|| RemovalLimits::removing_nothing(config))
                .applied_to(config);
            &kept
        } else {
            record.accepted = Some(limits);
            record.accepted_at = Some(now);
            record_changed = true;
            config
        }
    };
    let m = &config.memory;

    // 1. TTL and overflow of the small tiers.
    let small = match &whole {
        Some(rows) => rows
            .iter()
            .filter(|r| r.tier != Tier::Cold)
            .cloned()
            .collect(),
        None => g.rows(&[Tier::Hot, Tier::Warm])?,
    };
    let (to_warm, to_cold) = tier_moves(&small, config, now);
    let keys = |picked: &[u32], rows: &[HeatRow]| -> Vec<i64> {
        picked.iter().map(|&i| rows[i as usize].key).collect()
    };
    g.move_to(&keys(&to_warm, &small), Tier::Warm)?;
    g.move_to(&keys(&to_cold, &small), Tier::Cold)?;
    if let Some(rows) = &mut whole {
        let moved_keys: HashSet<i64> = keys(&to_cold, &small).into_iter().collect();
        let warm_keys: HashSet<i64> = keys(&to_warm, &small).into_iter().collect();
        for r in rows.iter_mut() {
            if moved_keys.contains(&r.key) {
                r.tier = Tier::Cold;
            } else if warm_keys.contains(&r.key) {
                r.tier = Tier::Warm;
            }
        }
    }

    // 2. The archive's removals, when a limit is passed by its headroom.
    let total = g.total()? as usize;
    let hot_warm = small.len() - to_cold.len();
    let cold = total.saturating_sub(hot_warm);
    let capacity = m.capacity_threshold;
    let mut due = excess_over_capacity(cold, m.max_cold_entries, headroom(m.max_cold_entries, 0))
        > 0
        || excess_over_capacity(total, capacity, headroom(capacity, m.governance_headroom)) > 0;
    if m.project_quota > 0 {
        due |= match projects {
            Projects::One(p) => {
                let n = g.project_count(p)? as usize;
                excess_over_capacity(n, m.project_quota, headroom(m.project_quota, 0)) > 0
            }
            Projects::All => true,
            Projects::Neither => false,
        };
    }
    if due {
        let rows = match whole.take() {
            Some(rows) => rows,
            None => g.rows(&Tier::ALL)?,
        };
        for (reason, picked) in removals(&rows, config, now, projects) {
            let archived = g.archive(
                &keys(&picked, &rows),
                reason,
                None,
                now,
                &archive_entry_bytes,
            )?;
            record.log(reason, removed_tiers(&archived), now);
            record_changed |= !archived.is_empty();
        }
    }

    // 3. The disk quota: warn above `warn_ratio`; above the budget trim the archive, then
    // delete the coolest cold memories, down to `hard_ratio`.
    if config.storage.max_bytes > 0 {
        let usage = g.usage()?;
        let counted = counted_bytes(&usage, dim);
        let cold_rows = if counted > config.storage.max_bytes {
            g.rows(&[Tier::Cold])?
        } else {
            Vec::new()
        };
        let plan = quota_plan(&cold_rows, counted, &usage, config, dim, warned, now);
        if let Some(target) = plan.archive_target_bytes {
            out.archive_trimmed = g.trim_archive(target)?;
        }
        let removed = g.remove(&keys(&plan.evict, &cold_rows))?;
        out.quota_removed = removed.len() as u64;
        record.log("disk_quota", removed_tiers(&removed), now);
        record_changed |= !removed.is_empty();
        out.counted = counted;
        out.quota = Some(plan);
    }
    if record_changed {
        write_record(g, &record)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: i64, tier: Tier, created: f64, last_access: f64) -> HeatRow {
        HeatRow {
            key,
            tier,
            project: None,
            created,
            last_access,
            access_count: 1,
            importance: 0.5,
            content_bytes: 10,
        }
    }

    #[test]
    fn a_ttl_move_that_overflows_warm_goes_on_to_cold() {
        let mut config = Config::default();
        config.memory.hot_ttl_hours = 1.0;
        config.memory.max_warm_entries = 1;
        let now = 100_000.0;
        // Both hot items are past their TTL; warm keeps one, the less recently used goes cold.
        let rows = [row(1, Tier::Hot, 0.0, 50.0), row(2, Tier::Hot, 0.0, 60.0)];
        let (to_warm, to_cold) = tier_moves(&rows, &config, now);
        assert_eq!(to_warm, vec![1]);
        assert_eq!(to_cold, vec![0]);
    }

    #[test]
    fn counted_bytes_match_item_bytes() {
        let item = Item {
            project: Some("proj".into()),
            ..Item::new("0123456789abcdef", "twelve bytes", 2, 1.0, 0.5)
        };
        let mut usage = Usage::default();
        usage.tiers[Tier::Cold.index()] = coral_pg::TierUsage {
            items: 1,
            content_bytes: item.content.len() as u64,
            project_bytes: 4 + 16,
        };
        usage.archive_bytes = 7;
        assert_eq!(
            counted_bytes(&usage, 64),
            crate::quota::item_bytes(&item, Tier::Cold, 64) + 7
        );
    }
}

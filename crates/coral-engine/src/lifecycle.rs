//! Tier movement, cold trim and capacity governance after each mutation (docs/storage.md,
//! "Tiers and governance").
//!
//! Every step is amortised: the hot and warm tiers are small and scanned in full; the cold trim
//! and governance passes, which are O(pool), only run once their tier has grown a headroom past
//! its limit, and then bring it back down to the limit in one batch.

use coral_heat::{
    Candidate, evict_lowest_heat, excess_over_capacity, headroom, lru_overflow, ttl_expired,
};
use coral_store::{Pool, Record, Tier};

use crate::candidates::{self, candidate};
use crate::engine::State;
use crate::error::Result;
use coral_config::Config;

fn ids(pool: &Pool, rows: &[u32]) -> Vec<String> {
    rows.iter().map(|&r| pool.item(r).item_id.clone()).collect()
}

impl State {
    /// Bring the tiers back within their limits.
    pub(crate) fn maintain(&mut self, config: &Config, now: f64) -> Result<()> {
        let m = &config.memory;
        // 1. TTL and overflow of the small tiers.
        let pool = self.door.view().pool();
        let mut records = Vec::new();
        let mut hot = candidates::of_tier(pool, Tier::Hot);
        let expired = ttl_expired(&hot, now, m.hot_ttl_hours * 3600.0);
        let mut warm = candidates::of_tier(pool, Tier::Warm);
        if !expired.is_empty() {
            hot.retain(|c| !expired.contains(&c.key));
            warm.extend(expired.iter().map(|&r| candidate(pool, r)));
            for id in ids(pool, &expired) {
                records.push(Record::Move {
                    id,
                    tier: Tier::Warm,
                });
            }
        }
        let mut to_cold = lru_overflow(&hot, m.max_hot_entries);
        to_cold.extend(lru_overflow(&warm, m.max_warm_entries));
        for id in ids(pool, &to_cold) {
            records.push(Record::Move {
                id,
                tier: Tier::Cold,
            });
        }
        self.door.commit(records)?;

        let params = config.heat.params();
        // 2. Cold trim by heat, to the archive.
        let cold = self.door.view().counts().cold;
        let limit = m.max_cold_entries;
        if excess_over_capacity(cold, limit, headroom(limit, 0)) > 0 {
            let pool = self.door.view().pool();
            let rows = evict_lowest_heat(
                &candidates::of_tier(pool, Tier::Cold),
                cold - limit,
                now,
                &params,
            );
            self.archive(&rows, "trimmed", now)?;
        }
        // 3. Capacity governance over the whole pool.
        let total = self.door.view().pool().len();
        let capacity = m.capacity_threshold;
        let excess =
            excess_over_capacity(total, capacity, headroom(capacity, m.governance_headroom));
        if excess > 0 {
            let all = candidates::all(self.door.view().pool());
            let rows = evict_lowest_heat(&all, excess, now, &params);
            self.archive(&rows, "evicted", now)?;
        }
        self.door.trim_tokens();
        Ok(())
    }

    /// Keep `project` within `memory.project_quota` items (docs/configuration.md, "Projects"):
    /// once it exceeds the quota by its headroom, its coolest items go to the archive until it
    /// is back at the quota. Shared items (no project) are never counted against a project.
    pub(crate) fn enforce_project_quota(
        &mut self,
        config: &Config,
        project: &str,
        now: f64,
    ) -> Result<()> {
        let quota = config.memory.project_quota;
        if quota == 0 {
            return Ok(());
        }
        let pool = self.door.view().pool();
        let members: Vec<Candidate> = (0..pool.len() as u32)
            .filter(|&r| pool.item(r).project.as_deref() == Some(project))
            .map(|r| candidate(pool, r))
            .collect();
        let excess = excess_over_capacity(members.len(), quota, headroom(quota, 0));
        if excess == 0 {
            return Ok(());
        }
        let rows = evict_lowest_heat(&members, excess, now, &config.heat.params());
        self.archive(&rows, "project_quota", now)
    }

    /// Move `rows` to the archive for `reason`, and log the removal.
    pub(crate) fn archive(&mut self, rows: &[u32], reason: &str, now: f64) -> Result<()> {
        let tiers = self.tiers_of(rows);
        let records = ids(self.door.view().pool(), rows)
            .into_iter()
            .map(|id| Record::Archive {
                id,
                reason: reason.to_string(),
                summary_id: None,
                at: now,
            })
            .collect();
        self.door.commit(records)?;
        self.log_removal(reason, tiers, now);
        Ok(())
    }
}

//! Pool rows as the lifecycle policy sees them: `coral_heat::Candidate`, keyed by row, built in
//! one place for tier moves, governance, the removal preview, distillation and the report.

use coral_heat::Candidate;
use coral_store::{Pool, Tier};

/// The heat inputs of one row.
pub(crate) fn candidate(pool: &Pool, row: u32) -> Candidate {
    let item = pool.item(row);
    Candidate {
        key: row,
        timestamp: item.timestamp,
        last_access: item.last_access,
        access_count: item.access_count,
        importance: item.importance,
    }
}

/// Every row of one tier.
pub(crate) fn of_tier(pool: &Pool, tier: Tier) -> Vec<Candidate> {
    pool.tier_rows(tier)
        .iter()
        .map(|r| candidate(pool, r))
        .collect()
}

/// Every row of the pool.
pub(crate) fn all(pool: &Pool) -> Vec<Candidate> {
    (0..pool.len() as u32).map(|r| candidate(pool, r)).collect()
}

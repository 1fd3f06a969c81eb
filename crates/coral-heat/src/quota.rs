//! The disk quota policy (docs/heat.md, "Disk budget"): when to warn, how far to trim the archive,
//! which cold items to drop.
//!
//! # Estimate model
//!
//! The caller measures and this module only adds and subtracts:
//!
//! - `usage_bytes` is the directory's usage as docs/heat.md defines it: the sizes of the data files
//!   on disk (archive included) plus the projected vector bytes, `items × dim × 4`.
//! - Trimming the archive to `n` bytes frees `archive_bytes − n` (the caller drops the oldest
//!   archive lines until the file is at most `n` bytes, which may free a little more).
//! - Dropping a cold item frees its [`ColdItem::bytes`]: the caller's estimate of its line in the
//!   cold file plus its vector row (`dim × 4`). Dropped items are deleted, not archived:
//!   archiving would move their bytes rather than free them.
//!
//! Hot and warm items are never dropped for space; when the cold tier and the archive together
//! cannot bring usage down, the plan drops all of them and reports the shortfall in
//! [`QuotaPlan::projected_bytes`].

use crate::governance::coolest_first;
use crate::{Candidate, HeatParams};

/// `storage.max_bytes`, `storage.warn_ratio` and `storage.hard_ratio`; the defaults are
/// docs/configuration.md's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuotaLimits {
    /// The budget in bytes; 0 means no quota.
    pub max_bytes: u64,
    /// Usage above `warn_ratio × max_bytes` warns. Non-finite values act as 1, others are
    /// clamped to 0..=1.
    pub warn_ratio: f64,
    /// Usage above `max_bytes` is brought down to `hard_ratio × max_bytes`. Non-finite values act
    /// as 1, others are clamped to 0..=1.
    pub hard_ratio: f64,
}

impl Default for QuotaLimits {
    fn default() -> Self {
        QuotaLimits {
            max_bytes: 0,
            warn_ratio: 0.8,
            hard_ratio: 0.85,
        }
    }
}

/// One cold item the quota may drop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColdItem {
    /// The item's heat inputs and key.
    pub item: Candidate,
    /// Bytes freed by dropping it (see the module's estimate model).
    pub bytes: u64,
}

/// What the quota asks of the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaPlan {
    /// `usage_bytes / max_bytes`, 0 without a quota.
    pub ratio: f64,
    /// Usage is above the warning band; the caller keeps this as the next call's `warned`.
    pub above_warn: bool,
    /// Emit the warning now: usage entered the warning band since the last warning.
    pub warn: bool,
    /// Trim the archive to at most this many bytes, when set.
    pub archive_target_bytes: Option<u64>,
    /// Cold items to drop, coolest first.
    pub evict: Vec<u32>,
    /// The usage the plan should leave, by the estimates.
    pub projected_bytes: u64,
    /// What the plan aims at: `hard_ratio × max_bytes` when usage is above `max_bytes`,
    /// otherwise the usage itself (nothing to do).
    pub target_bytes: u64,
}

impl QuotaPlan {
    /// Whether the plan asks for anything to be removed.
    pub fn removes_anything(&self) -> bool {
        self.archive_target_bytes.is_some() || !self.evict.is_empty()
    }
}

/// The quota plan for the current usage.
///
/// `warned` is the previous plan's [`QuotaPlan::above_warn`] (false at start), so a directory
/// that stays above the band warns once, and warns again only after dropping below it. Above
/// `max_bytes` the archive is trimmed first, by as much as is needed, then the coolest cold items
/// (heat normalised over the cold tier, ties as in [`crate::evict_lowest_heat`]) are dropped
/// until the projected usage is at most `hard_ratio × max_bytes`.
pub fn plan_quota(
    usage_bytes: u64,
    archive_bytes: u64,
    cold: &[ColdItem],
    limits: &QuotaLimits,
    warned: bool,
    now: f64,
    heat: &HeatParams,
) -> QuotaPlan {
    let mut plan = QuotaPlan {
        ratio: 0.0,
        above_warn: false,
        warn: false,
        archive_target_bytes: None,
        evict: Vec::new(),
        projected_bytes: usage_bytes,
        target_bytes: usage_bytes,
    };
    if limits.max_bytes == 0 {
        return plan;
    }
    let max = limits.max_bytes as f64;
    plan.ratio = usage_bytes as f64 / max;
    plan.above_warn = usage_bytes as f64 > ratio(limits.warn_ratio) * max;
    plan.warn = plan.above_warn && !warned;
    if usage_bytes <= limits.max_bytes {
        return plan;
    }
    // The target is rounded down, so the result is never above the ratio asked for.
    plan.target_bytes = (ratio(limits.hard_ratio) * max).floor() as u64;
    let mut need = usage_bytes.saturating_sub(plan.target_bytes);

    let from_archive = need.min(archive_bytes);
    if from_archive > 0 {
        plan.archive_target_bytes = Some(archive_bytes - from_archive);
        need -= from_archive;
        plan.projected_bytes -= from_archive;
    }
    if need > 0 {
        let items: Vec<Candidate> = cold.iter().map(|c| c.item).collect();
        for index in coolest_first(&items, items.len(), now, heat) {
            if need == 0 {
                break;
            }
            let freed = cold[index].bytes.min(plan.projected_bytes);
            plan.evict.push(cold[index].item.key);
            plan.projected_bytes -= freed;
            need = need.saturating_sub(freed);
        }
    }
    plan
}

fn ratio(value: f64) -> f64 {
    if value.is_finite() {
        value.clamp(0.0, 1.0)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1_700_000_000.0;

    fn limits(max_bytes: u64) -> QuotaLimits {
        QuotaLimits {
            max_bytes,
            ..QuotaLimits::default()
        }
    }

    /// A cold item of `bytes` accessed `age_days` ago: older is cooler.
    fn cold(key: u32, age_days: f64, bytes: u64) -> ColdItem {
        ColdItem {
            item: Candidate {
                key,
                timestamp: 0.0,
                last_access: NOW - age_days * 86_400.0,
                access_count: 1,
                importance: 0.0,
            },
            bytes,
        }
    }

    fn plan(
        usage: u64,
        archive: u64,
        cold: &[ColdItem],
        limits: QuotaLimits,
        warned: bool,
    ) -> QuotaPlan {
        plan_quota(
            usage,
            archive,
            cold,
            &limits,
            warned,
            NOW,
            &HeatParams::default(),
        )
    }

    #[test]
    fn no_quota_means_no_plan() {
        let p = plan(u64::MAX, 10, &[cold(1, 1.0, 5)], limits(0), false);
        assert!(!p.warn && !p.above_warn && !p.removes_anything());
        assert_eq!(p.ratio, 0.0);
        assert_eq!(p.projected_bytes, u64::MAX);
    }

    #[test]
    fn the_warning_band_warns_once_until_usage_drops() {
        let l = limits(1_000);
        let below = plan(800, 0, &[], l, false);
        assert!(!below.above_warn && !below.warn);
        assert!(!below.removes_anything());

        let entered = plan(801, 0, &[], l, below.above_warn);
        assert!(entered.above_warn && entered.warn);
        assert!(!entered.removes_anything(), "under max: warn only");
        assert!((entered.ratio - 0.801).abs() < 1e-12);

        let stayed = plan(950, 0, &[], l, entered.above_warn);
        assert!(stayed.above_warn && !stayed.warn);

        let dropped = plan(500, 0, &[], l, stayed.above_warn);
        let again = plan(900, 0, &[], l, dropped.above_warn);
        assert!(again.warn);
    }

    #[test]
    fn the_archive_is_trimmed_first_and_only_as_far_as_needed() {
        // 1,100 used of 1,000; target 850: 250 must go, the archive holds 400.
        let items = [cold(1, 9.0, 100)];
        let p = plan(1_100, 400, &items, limits(1_000), false);
        assert_eq!(p.target_bytes, 850);
        assert_eq!(p.archive_target_bytes, Some(150));
        assert!(p.evict.is_empty());
        assert_eq!(p.projected_bytes, 850);
        assert!(p.warn);
    }

    #[test]
    fn then_the_coolest_cold_items_go_until_the_hard_ratio() {
        // 1,200 used; 350 must go; the archive gives 100, the cold items the other 250.
        let items = [
            cold(1, 1.0, 100), // warmest: kept
            cold(2, 5.0, 100),
            cold(3, 9.0, 100), // coolest: first to go
            cold(4, 3.0, 100),
        ];
        let p = plan(1_200, 100, &items, limits(1_000), true);
        assert_eq!(p.archive_target_bytes, Some(0));
        assert_eq!(p.evict, vec![3, 2, 4]);
        assert_eq!(p.projected_bytes, 800);
        assert!(p.projected_bytes <= p.target_bytes);
        assert!(!p.warn, "already warned");
    }

    #[test]
    fn exactly_at_max_is_not_over() {
        let p = plan(1_000, 500, &[cold(1, 9.0, 100)], limits(1_000), true);
        assert!(!p.removes_anything());
        assert_eq!(p.projected_bytes, 1_000);
    }

    #[test]
    fn a_shortfall_drops_every_cold_item_and_says_so() {
        let items = [cold(1, 2.0, 10), cold(2, 1.0, 10)];
        let p = plan(2_000, 0, &items, limits(1_000), false);
        assert_eq!(p.archive_target_bytes, None);
        assert_eq!(p.evict, vec![1, 2]);
        assert_eq!(p.projected_bytes, 1_980);
        assert!(p.projected_bytes > p.target_bytes);
    }

    #[test]
    fn odd_ratios_and_estimates_stay_safe() {
        let odd = QuotaLimits {
            max_bytes: 1_000,
            warn_ratio: f64::NAN,
            hard_ratio: 7.0,
        };
        assert!(
            !plan(999, 0, &[], odd, false).above_warn,
            "a NaN warn ratio acts as 1"
        );
        let p = plan(1_001, 0, &[cold(1, 1.0, u64::MAX)], odd, false);
        assert_eq!(p.target_bytes, 1_000, "hard ratio clamped to 1");
        assert_eq!(p.evict, vec![1]);
        assert_eq!(
            p.projected_bytes, 0,
            "an over-large estimate cannot underflow"
        );

        let zero = QuotaLimits {
            hard_ratio: 0.0,
            ..limits(1_000)
        };
        let p = plan(1_500, 2_000, &[cold(1, 1.0, 1)], zero, false);
        assert_eq!(p.archive_target_bytes, Some(500));
        assert_eq!(p.evict, Vec::<u32>::new());
        assert_eq!(p.projected_bytes, 0);
    }
}

//! `report()` and `fuse_check()`: what a user asks when deciding whether Coral is healthy, built
//! from the pool as it is.

use std::path::Path;

use coral_heat::{evict_lowest_heat, heat};
use coral_store::{Pool, StorePaths, Tier};
use serde::Serialize;

use crate::candidates;
use crate::engine::Engine;
use crate::guard::{Held, Removal};
use crate::types::{DiskUsage, Stats};
use coral_config::Config;

/// Memories created on one UTC day.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DayCount {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Memories created that day (among those still stored).
    pub count: usize,
}

/// A memory close to eviction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvictionCandidate {
    /// Memory id.
    pub id: String,
    /// Its heat, pool-normalised (lower goes first).
    pub heat: f64,
    /// Its tier.
    pub tier: Tier,
    /// Importance.
    pub importance: f64,
    /// Accesses.
    pub access_count: u64,
    /// Last access, Unix seconds.
    pub last_access: f64,
    /// Created, Unix seconds.
    pub timestamp: f64,
    /// The first 60 characters, on one line (controls escaped).
    pub content: String,
}

/// Absolute paths of everything Coral reads and writes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Paths {
    /// The config file (empty when opened without one).
    pub config: String,
    /// The data directory.
    pub data_dir: String,
    /// Warm tier.
    pub warm: String,
    /// Cold tier.
    pub cold: String,
    /// Vectors.
    pub vectors: String,
    /// Vector ids.
    pub vector_index: String,
    /// Hot tier.
    pub hot: String,
    /// Journal.
    pub journal: String,
    /// Archive.
    pub archive: String,
    /// Threads file.
    pub threads: String,
}

/// Everything `coral report` shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Counters.
    pub stats: Stats,
    /// Disk usage.
    pub disk_usage: DiskUsage,
    /// Memories created per day over the last 14 days, oldest first.
    pub day_histogram: Vec<DayCount>,
    /// The five memories closest to eviction, coolest first.
    pub eviction_preview: Vec<EvictionCandidate>,
    /// Absolute paths.
    pub paths: Paths,
    /// A changed limit waiting for confirmation because it would remove many memories at
    /// once, with its preview.
    pub held_change: Option<Held>,
    /// What governance and the quotas removed recently (the last 20 passes), newest last.
    pub removed: Vec<Removal>,
}

/// What `fuse_check` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FuseCheck {
    /// Sum of the texts' token counts.
    pub tokens: u64,
    /// `memory.token_fuse_threshold`.
    pub threshold: u64,
    /// `tokens >= threshold`: too much to put in a prompt at once.
    pub blown: bool,
}

/// `YYYY-MM-DD` of a day number counted from 1970-01-01 (proleptic Gregorian).
pub fn civil_date(days: i64) -> String {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of each 400-year era.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// Memories created per UTC day over the 14 days up to `now`, oldest first.
pub(crate) fn day_histogram(pool: &Pool, now: f64) -> Vec<DayCount> {
    let today = (now / 86_400.0).floor() as i64;
    let mut counts = [0usize; 14];
    for &ts in pool.timestamps() {
        let day = (ts / 86_400.0).floor() as i64;
        let back = today - day;
        if (0..14).contains(&back) {
            counts[13 - back as usize] += 1;
        }
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &count)| DayCount {
            date: civil_date(today - 13 + i as i64),
            count,
        })
        .collect()
}

/// The five memories closest to eviction at `now`, coolest first.
pub(crate) fn eviction_preview(pool: &Pool, config: &Config, now: f64) -> Vec<EvictionCandidate> {
    let candidates = candidates::all(pool);
    let params = config.heat.params();
    let pool_max = candidates.iter().map(|c| c.access_count).max();
    evict_lowest_heat(&candidates, 5, now, &params)
        .into_iter()
        .map(|row| {
            let item = pool.item(row);
            EvictionCandidate {
                id: item.item_id.clone(),
                heat: heat(
                    item.access_count,
                    item.last_access,
                    item.importance,
                    now,
                    &params,
                    pool_max,
                ),
                tier: pool.tier(row),
                importance: item.importance,
                access_count: item.access_count,
                last_access: item.last_access,
                timestamp: item.timestamp,
                content: coral_base::preview(&item.content, 60).0,
            }
        })
        .collect()
}

/// Absolute paths of the config file (when there is one), the store's files and the threads
/// file.
pub(crate) fn paths(store: &StorePaths, config: Option<&Path>, threads: &Path) -> Paths {
    let p = store;
    Paths {
        config: config.map(absolute).unwrap_or_default(),
        data_dir: absolute(&p.dir),
        warm: absolute(&p.warm),
        cold: absolute(&p.cold),
        vectors: absolute(&p.vectors),
        vector_index: absolute(&p.index),
        hot: absolute(&p.hot),
        journal: absolute(&p.wal),
        archive: absolute(&p.archive),
        threads: absolute(threads),
    }
}

impl Engine {
    /// `coral report` of the data directory as of `now`: `stats` and `disk_usage` as the
    /// caller took them, the 14-day histogram, the five memories closest to eviction, the
    /// absolute paths (`config_path`: the file the caller opened), the held change and the
    /// last 20 removals.
    pub fn report(
        &self,
        stats: Stats,
        disk_usage: DiskUsage,
        config_path: Option<&Path>,
        now: f64,
    ) -> Report {
        let config = self.config();
        let mut engine = self.lock();
        let engine = &mut *engine;
        let mut removed = engine.guard.removals(engine.door.view());
        removed.drain(..removed.len().saturating_sub(20));
        let held_change = engine.guard.held().cloned();
        let store = engine.door.view();
        Report {
            stats,
            disk_usage,
            day_histogram: day_histogram(store.pool(), now),
            eviction_preview: eviction_preview(store.pool(), &config, now),
            paths: paths(store.paths(), config_path, &config.threads_path()),
            held_change,
            removed,
        }
    }
}

/// Whether texts totalling `tokens` tokens blow a fuse of `threshold`.
pub fn fuse_check(tokens: u64, threshold: u64) -> FuseCheck {
    FuseCheck {
        tokens,
        threshold,
        blown: tokens >= threshold,
    }
}

#[cfg(test)]
mod tests {
    use super::civil_date;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_553), "2026-04-10");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(-1), "1969-12-31");
    }
}

//! Capacity governance (docs/heat.md): headroom and heat-ordered eviction.

use crate::{Candidate, HeatParams, heat};

/// Slack above the capacity before governance runs: the configured value when positive,
/// otherwise `max(10, min(capacity / 10, 200))`.
pub fn headroom(capacity: usize, configured: usize) -> usize {
    if configured > 0 {
        configured
    } else {
        (capacity / 10).clamp(10, 200)
    }
}

/// How many items governance must evict: none while `total <= capacity + headroom`, otherwise
/// enough to come back down to exactly `capacity`.
pub fn excess_over_capacity(total: usize, capacity: usize, headroom: usize) -> usize {
    if total > capacity.saturating_add(headroom) {
        total - capacity
    } else {
        0
    }
}

/// Keys of the `n` coolest candidates, coolest first.
///
/// Heat is pool-normalised: the frequency scale is raised to the largest access count among
/// the candidates. Ties go to the item accessed longest ago, then to the smaller key.
pub fn evict_lowest_heat(
    candidates: &[Candidate],
    n: usize,
    now: f64,
    params: &HeatParams,
) -> Vec<u32> {
    coolest_first(candidates, n, now, params)
        .into_iter()
        .map(|i| candidates[i].key)
        .collect()
}

/// Indices into `candidates` of the `n` coolest, coolest first, under the ordering documented
/// on [`evict_lowest_heat`]. Shared by every policy that picks "the coolest" so they agree.
pub(crate) fn coolest_first(
    candidates: &[Candidate],
    n: usize,
    now: f64,
    params: &HeatParams,
) -> Vec<usize> {
    if n == 0 || candidates.is_empty() {
        return Vec::new();
    }
    let pool_max = candidates.iter().map(|c| c.access_count).max();
    let mut scored: Vec<(f64, usize)> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let h = heat(
                c.access_count,
                c.last_access,
                c.importance,
                now,
                params,
                pool_max,
            );
            (h, i)
        })
        .collect();
    let order = |a: &(f64, usize), b: &(f64, usize)| {
        let (ca, cb) = (&candidates[a.1], &candidates[b.1]);
        a.0.total_cmp(&b.0)
            .then(ca.last_access.total_cmp(&cb.last_access))
            .then(ca.key.cmp(&cb.key))
            .then(a.1.cmp(&b.1))
    };
    if n < scored.len() {
        scored.select_nth_unstable_by(n - 1, order);
        scored.truncate(n);
    }
    scored.sort_by(order);
    scored.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_headroom_table() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/coral_test_vectors.json"
        );
        let data: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let table = data["governance_headroom"].as_object().unwrap();
        assert!(table.len() >= 10);
        for (capacity, expected) in table {
            let capacity: usize = capacity.parse().unwrap();
            assert_eq!(
                headroom(capacity, 0) as u64,
                expected.as_u64().unwrap(),
                "capacity {capacity}"
            );
        }
        assert_eq!(headroom(10_000, 7), 7);
    }

    #[test]
    fn excess_waits_for_the_headroom_then_returns_to_capacity() {
        assert_eq!(excess_over_capacity(1_100, 1_000, 100), 0);
        assert_eq!(excess_over_capacity(1_101, 1_000, 100), 101);
        assert_eq!(excess_over_capacity(5, 0, 0), 5);
    }

    #[test]
    fn eviction_takes_the_coolest_and_is_pool_normalised() {
        let now = 1_000_000.0;
        let c = |key, access_count, importance, age: f64| Candidate {
            key,
            timestamp: 0.0,
            last_access: now - age,
            access_count,
            importance,
        };
        let pool = [
            c(1, 1, 0.0, 86_400.0 * 30.0), // old, unimportant: coolest
            c(2, 50, 0.0, 0.0),            // hot by use
            c(3, 1, 1.0, 0.0),             // pinned by importance
            c(4, 2, 0.0, 86_400.0),
        ];
        let params = HeatParams::default();
        assert_eq!(evict_lowest_heat(&pool, 2, now, &params), vec![1, 4]);
        assert_eq!(evict_lowest_heat(&pool, 9, now, &params).len(), 4);
        assert!(evict_lowest_heat(&pool, 0, now, &params).is_empty());
    }
}

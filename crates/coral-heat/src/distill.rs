//! Distillation planning (docs/heat.md, "Distillation"): which cool, similar items to merge, and
//! the counters of the summary that replaces them.

use crate::governance::coolest_first;
use crate::union_find::UnionFind;
use crate::{Candidate, HeatParams};
use coral_base::set_jaccard_sorted;

/// One warm or cold item as distillation sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DistillCandidate<'a> {
    /// The caller's handle for the item; returned in clusters and plans.
    pub key: u32,
    /// Number of accesses.
    pub access_count: u64,
    /// Importance in 0..1.
    pub importance: f64,
    /// Last hit or merge, Unix seconds.
    pub last_access: f64,
    /// The item's token-hash set, sorted and de-duplicated.
    pub tokens: &'a [u64],
}

/// Distillation knobs; the defaults are docs/configuration.md's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DistillParams {
    /// Two items link when their set-Jaccard is at least this (`memory.distill_sim_threshold`).
    pub sim_threshold: f64,
    /// Smallest cluster worth summarising (`memory.distill_min_cluster`); values below 2 act as 2.
    pub min_cluster: usize,
    /// How many of the coolest candidates are considered at all.
    pub pool_limit: usize,
}

impl Default for DistillParams {
    fn default() -> Self {
        DistillParams {
            sim_threshold: 0.6,
            min_cluster: 3,
            pool_limit: 200,
        }
    }
}

/// What to create for one cluster: the members it replaces and the summary item's counters.
#[derive(Clone, Debug, PartialEq)]
pub struct DistillPlan {
    /// The members' keys, coolest first: the lineage of the summary, to be archived.
    pub members: Vec<u32>,
    /// The summary's access count: the sum of the members' (saturating).
    pub access_count: u64,
    /// The summary's importance: the largest of the members' (NaN counts as 0).
    pub importance: f64,
}

/// Clusters of similar cool items, as indices into `candidates`.
///
/// Takes the `params.pool_limit` coolest candidates (heat normalised over all of `candidates`,
/// ties as in [`crate::evict_lowest_heat`]), links every pair whose set-Jaccard is at least
/// `params.sim_threshold` and joins linked items transitively (union-find, so a chain
/// A–B–C is one cluster even when A and C are not similar). Returns the clusters of at least
/// `params.min_cluster` members (at least 2). Members are listed coolest first and clusters are
/// ordered by their coolest member, so the result does not depend on the input order.
///
/// An item with an empty token set never links: there is nothing to compare. A NaN threshold
/// links nothing.
pub fn find_clusters(
    candidates: &[DistillCandidate<'_>],
    now: f64,
    heat: &HeatParams,
    params: &DistillParams,
) -> Vec<Vec<usize>> {
    let as_heat: Vec<Candidate> = candidates
        .iter()
        .map(|c| Candidate {
            key: c.key,
            timestamp: 0.0,
            last_access: c.last_access,
            access_count: c.access_count,
            importance: c.importance,
        })
        .collect();
    // `pool` is coolest first, so a position in it is also a rank by heat.
    let pool = coolest_first(&as_heat, params.pool_limit, now, heat);
    let mut sets = UnionFind::new(pool.len());
    for (a, &ia) in pool.iter().enumerate() {
        let ta = candidates[ia].tokens;
        if ta.is_empty() {
            continue;
        }
        for (b, &ib) in pool.iter().enumerate().skip(a + 1) {
            let tb = candidates[ib].tokens;
            if !tb.is_empty() && set_jaccard_sorted(ta, tb) >= params.sim_threshold {
                sets.union(a, b);
            }
        }
    }
    // Walking ranks in order fills each cluster coolest first and meets clusters in the order
    // of their coolest member.
    let mut slot_of_root: Vec<Option<usize>> = vec![None; pool.len()];
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for (rank, &index) in pool.iter().enumerate() {
        let root = sets.find(rank);
        let slot = *slot_of_root[root].get_or_insert_with(|| {
            clusters.push(Vec::new());
            clusters.len() - 1
        });
        clusters[slot].push(index);
    }
    let min = params.min_cluster.max(2);
    clusters.retain(|c| c.len() >= min);
    clusters
}

/// One [`DistillPlan`] per cluster found by [`find_clusters`], in the same order.
///
/// The caller asks the LLM to summarise each plan's members; on success it creates the summary
/// item with the plan's counters and archives the members with the summary's id as lineage, and
/// on any failure it skips that plan and changes nothing.
pub fn plan_distillation(
    candidates: &[DistillCandidate<'_>],
    now: f64,
    heat: &HeatParams,
    params: &DistillParams,
) -> Vec<DistillPlan> {
    find_clusters(candidates, now, heat, params)
        .into_iter()
        .map(|cluster| {
            let members: Vec<&DistillCandidate> = cluster.iter().map(|&i| &candidates[i]).collect();
            DistillPlan {
                members: members.iter().map(|c| c.key).collect(),
                access_count: members
                    .iter()
                    .fold(0u64, |sum, c| sum.saturating_add(c.access_count)),
                importance: members
                    .iter()
                    .map(|c| {
                        if c.importance.is_nan() {
                            0.0
                        } else {
                            c.importance
                        }
                    })
                    .fold(0.0, f64::max),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1_700_000_000.0;
    const DAY: f64 = 86_400.0;

    /// A candidate accessed `age_days` ago, otherwise equal to the rest: older is cooler.
    fn cand(key: u32, age_days: f64, tokens: &[u64]) -> DistillCandidate<'_> {
        DistillCandidate {
            key,
            access_count: 1,
            importance: 0.0,
            last_access: NOW - age_days * DAY,
            tokens,
        }
    }

    fn params(sim_threshold: f64, min_cluster: usize) -> DistillParams {
        DistillParams {
            sim_threshold,
            min_cluster,
            ..DistillParams::default()
        }
    }

    /// Clusters as keys, to compare against expectations written by hand.
    fn check(candidates: &[DistillCandidate<'_>], params: DistillParams, expected: &[&[u32]]) {
        let got: Vec<Vec<u32>> = find_clusters(candidates, NOW, &HeatParams::default(), &params)
            .into_iter()
            .map(|c| c.into_iter().map(|i| candidates[i].key).collect())
            .collect();
        let expected: Vec<Vec<u32>> = expected.iter().map(|c| c.to_vec()).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn chains_join_even_when_the_ends_differ() {
        // 10~20 is 4/6 similar, 20~30 is 4/10, and 10~30 only 2/10.
        let (a, b, c) = ([1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [3, 4, 5, 6, 7, 8, 9, 10]);
        let pool = [cand(10, 3.0, &a), cand(20, 2.0, &b), cand(30, 1.0, &c)];
        // At 0.6 the chain breaks between 20 and 30 ...
        check(&pool, params(0.6, 2), &[&[10, 20]]);
        // ... and holds at 0.4, where a and c (2 / 10) still are not linked directly.
        check(&pool, params(0.4, 3), &[&[10, 20, 30]]);
        assert!(set_jaccard_sorted(&a, &c) < 0.4);
    }

    #[test]
    fn threshold_is_inclusive() {
        // Jaccard exactly 0.6: 3 shared of 5.
        let (a, b) = ([1, 2, 3, 4], [1, 2, 3, 5]);
        assert_eq!(set_jaccard_sorted(&a, &b), 0.6);
        let pool = [cand(1, 2.0, &a), cand(2, 1.0, &b)];
        check(&pool, params(0.6, 2), &[&[1, 2]]);
        check(&pool, params(0.600_000_1, 2), &[]);
        check(&pool, params(f64::NAN, 2), &[]);
    }

    #[test]
    fn small_clusters_and_empty_token_sets_are_left_alone() {
        let same = [7, 8, 9];
        let other = [100, 200];
        let pool = [
            cand(1, 5.0, &same),
            cand(2, 4.0, &same),
            cand(3, 3.0, &other),
            cand(4, 2.0, &other),
            cand(5, 1.0, &other),
            cand(6, 9.0, &[]),
            cand(7, 9.0, &[]),
        ];
        check(&pool, params(0.6, 3), &[&[3, 4, 5]]);
        // Clusters are ordered by their coolest member (1 is older than 3).
        check(&pool, params(0.6, 2), &[&[1, 2], &[3, 4, 5]]);
        // A minimum below 2 acts as 2: a summary of one item is not a distillation.
        check(&pool, params(0.6, 0), &[&[1, 2], &[3, 4, 5]]);
        // Everything links at threshold 0, except the items without tokens.
        check(&pool, params(0.0, 2), &[&[1, 2, 3, 4, 5]]);
    }

    #[test]
    fn only_the_coolest_pool_limit_items_are_considered() {
        let tokens = [1, 2, 3];
        // 250 identical items; key k was accessed k hours ago, so high keys are the coolest.
        let pool: Vec<DistillCandidate> = (0..250)
            .map(|k| cand(k, f64::from(k) / 24.0, &tokens))
            .collect();
        let clusters = find_clusters(&pool, NOW, &HeatParams::default(), &params(0.6, 3));
        assert_eq!(clusters.len(), 1);
        let keys: Vec<u32> = clusters[0].iter().map(|&i| pool[i].key).collect();
        let expected: Vec<u32> = (50..250).rev().collect();
        assert_eq!(keys, expected);

        let small = DistillParams {
            pool_limit: 2,
            ..params(0.6, 3)
        };
        assert!(find_clusters(&pool, NOW, &HeatParams::default(), &small).is_empty());
    }

    #[test]
    fn heat_decides_who_is_cool_not_only_age() {
        // Key 1 is the oldest but pinned by importance and use; with a pool of 3 it is left out.
        let tokens = [4, 5, 6];
        let mut pinned = cand(1, 30.0, &tokens);
        pinned.importance = 1.0;
        pinned.access_count = 40;
        let pool = [
            pinned,
            cand(2, 3.0, &tokens),
            cand(3, 2.0, &tokens),
            cand(4, 1.0, &tokens),
        ];
        let p = DistillParams {
            pool_limit: 3,
            ..params(0.6, 3)
        };
        check(&pool, p, &[&[2, 3, 4]]);
    }

    #[test]
    fn result_does_not_depend_on_input_order() {
        let sets: Vec<Vec<u64>> = (0..40u64)
            .map(|i| {
                let base = (i % 4) * 100;
                (base..base + 5).chain([1_000 + i]).collect()
            })
            .collect();
        let pool: Vec<DistillCandidate> = sets
            .iter()
            .enumerate()
            .map(|(k, s)| cand(k as u32, (k % 7) as f64, s))
            .collect();
        let as_keys = |pool: &[DistillCandidate]| -> Vec<Vec<u32>> {
            find_clusters(pool, NOW, &HeatParams::default(), &params(0.6, 3))
                .into_iter()
                .map(|c| c.into_iter().map(|i| pool[i].key).collect())
                .collect()
        };
        let forward = as_keys(&pool);
        assert_eq!(forward.len(), 4, "{forward:?}");
        let mut reversed = pool.clone();
        reversed.reverse();
        assert_eq!(as_keys(&reversed), forward);
        let mut rotated = pool.clone();
        rotated.rotate_left(17);
        assert_eq!(as_keys(&rotated), forward);
    }

    #[test]
    fn plan_sums_access_counts_and_keeps_the_highest_importance() {
        let tokens = [1, 2, 3];
        let member = |key, access_count, importance, age_days| DistillCandidate {
            access_count,
            importance,
            ..cand(key, age_days, &tokens)
        };
        let pool = [
            member(1, 3, 0.2, 5.0),
            member(2, 4, 0.7, 6.0),
            member(3, u64::MAX, f64::NAN, 7.0),
        ];
        let plans = plan_distillation(&pool, NOW, &HeatParams::default(), &params(0.6, 3));
        assert_eq!(plans.len(), 1);
        let plan = &plans[0];
        let mut members = plan.members.clone();
        members.sort_unstable();
        assert_eq!(members, vec![1, 2, 3]);
        assert_eq!(plan.access_count, u64::MAX);
        assert_eq!(plan.importance, 0.7);

        let plans = plan_distillation(&pool[..2], NOW, &HeatParams::default(), &params(0.6, 2));
        assert_eq!(plans[0].access_count, 7);
        assert_eq!(plans[0].members, vec![1, 2]);
    }
}

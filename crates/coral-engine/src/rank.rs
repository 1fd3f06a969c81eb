//! The last step of `"hybrid"` ranking, shared by both backends (docs/ranking.md,
//! docs/postgres.md "Search"): fused relevance times the project boost, plus the bounded prior
//! of recency and heat, plus a time window's fit; `retrieval.min_score` applied; the best `k`
//! kept with ties ranked the newer item first, then by tie-break key.

use coral_heat::{HeatParams, heat};
use coral_score::{HybridParams, Scored, TimeWindow, TopK, time_decay};
use coral_store::Item;

/// What the priors of one search need.
pub(crate) struct Priors<'a> {
    pub(crate) params: &'a HybridParams,
    /// The query's project and its boost: its items and shared ones are boosted.
    pub(crate) boost: Option<(&'a str, f64)>,
    pub(crate) window: Option<&'a TimeWindow>,
    pub(crate) heat: &'a HeatParams,
    pub(crate) now: f64,
    pub(crate) tau_days: f64,
    pub(crate) min_score: f64,
    pub(crate) k: usize,
}

/// One candidate as the priors see it.
pub(crate) struct Candidate<'a> {
    pub(crate) item: &'a Item,
    /// Its creation time.
    pub(crate) timestamp: f64,
    /// `coral_store::tiebreak_key` of its id.
    pub(crate) tiebreak: u64,
}

/// The best `priors.k` of `fused` (candidate number, relevance) by score, best first; `row`
/// gives a candidate's item and keys (a pool row locally, a candidate of the database's
/// search otherwise). The hits' `row` is the candidate number.
pub(crate) fn rank<'a>(
    fused: impl IntoIterator<Item = (u32, f64)>,
    row: impl Fn(u32) -> Candidate<'a>,
    priors: &Priors<'_>,
) -> Vec<Scored> {
    let mut top = TopK::new(priors.k);
    for (number, relevance) in fused {
        let c = row(number);
        let boosted = match priors.boost {
            Some((project, amount)) if in_project(c.item, project) => relevance * (1.0 + amount),
            _ => relevance,
        };
        let recency = time_decay(priors.now - c.timestamp, priors.tau_days);
        let warmth = heat(
            c.item.access_count,
            c.item.last_access,
            c.item.importance,
            priors.now,
            priors.heat,
            None,
        );
        let prior = 0.5 * (recency + warmth.clamp(0.0, 1.0));
        let fit = priors.window.map_or(0.0, |w| w.preference(c.timestamp));
        let score = priors.params.score(boosted, prior, fit);
        if score >= priors.min_score {
            let hit = Scored {
                row: number,
                score,
                vector: 0.0,
                jaccard: 0.0,
                time: 0.0,
            };
            top.push_keyed(hit, c.timestamp, c.tiebreak);
        }
    }
    top.into_sorted_vec()
}

/// Whether a search of `project` boosts `item`: the project's own items and shared ones.
pub(crate) fn in_project(item: &Item, project: &str) -> bool {
    item.project.as_deref().is_none_or(|p| p == project)
}

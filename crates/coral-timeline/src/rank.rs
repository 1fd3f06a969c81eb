//! How `retrieve_for_turn` orders its candidates once both rankings are made: MemCore's
//! reciprocal-rank fusion, or the memory pool's hybrid fusion (`coral_score::fuse_hybrid`,
//! neighbouring turns, a time-shaped query's window; docs/ranking.md).

use coral_score::{HybridParams, Spread, TimeWindow, fuse_hybrid, rrf, with_neighbours};

use crate::index::{Doc, Layer};

/// Reciprocal-rank constant (`docs/timeline.md`, "Retrieval": MemCore's k = 60).
pub const RRF_K: f64 = 60.0;

/// Candidates each ranking contributes to hybrid fusion (at least the request's limit).
const DEPTH: usize = 100;

/// How `retrieve_for_turn` fuses its two rankings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fusion {
    /// MemCore's reciprocal-rank fusion (k = 60) of the BM25 and cosine rankings.
    Rrf,
    /// The pool's default: z-score fusion with neighbouring turns, and a time-shaped query's
    /// window as a soft preference (when no `time_hint` is given).
    Hybrid(HybridParams),
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Hybrid(HybridParams::default())
    }
}

impl Fusion {
    /// Whether this fusion uses the vector ranking at all.
    pub(crate) fn wants_vectors(&self) -> bool {
        match self {
            Fusion::Rrf => true,
            Fusion::Hybrid(p) => p.vector > 0.0,
        }
    }
}

/// The rankings of one request over its candidates.
pub(crate) struct Rankings<'a> {
    /// Every document (by number).
    pub(crate) docs: &'a [Doc],
    /// The candidates, in document order.
    pub(crate) candidates: &'a [u32],
    /// BM25 scores, best first, positive only.
    pub(crate) by_words: &'a [(u32, f64)],
    /// The share of the query's term weight a document matches.
    pub(crate) coverage: &'a dyn Fn(u32) -> f64,
    /// Cosines, best first, positive only.
    pub(crate) by_vector: &'a [(u32, f64)],
    /// Spread of the cosines of every candidate with a vector.
    pub(crate) vector_spread: Spread,
    /// A time-shaped query's window.
    pub(crate) window: Option<&'a TimeWindow>,
    /// Hits asked for.
    pub(crate) limit: usize,
}

/// The candidates in fused order with their scores, best first.
pub(crate) fn fuse(fusion: &Fusion, r: &Rankings) -> Vec<(u32, f64)> {
    let p = match fusion {
        Fusion::Rrf => {
            let dense: Vec<u32> = r.by_vector.iter().map(|h| h.0).collect();
            let words: Vec<u32> = r.by_words.iter().map(|h| h.0).collect();
            return rrf(&[&dense, &words], RRF_K);
        }
        Fusion::Hybrid(p) => p,
    };
    let depth = DEPTH.max(r.limit);
    let words = with_neighbours(r.by_words, p.neighbours, 4 * depth, |d| {
        neighbours(r.docs, r.candidates, d, p.neighbour_gap)
    });
    let spread = Spread::of(words.iter().map(|h| h.1), r.candidates.len() as u64);
    let mut fused: Vec<(u32, f64)> = fuse_hybrid(
        &words,
        &spread,
        r.coverage,
        r.by_vector,
        &r.vector_spread,
        p,
        depth,
    )
    .into_iter()
    .map(|f| (f.id, f.relevance))
    .collect();
    if let Some(w) = r.window {
        // What happened in the window is a candidate even when nothing else matched it.
        let known: std::collections::HashSet<u32> = fused.iter().map(|f| f.0).collect();
        let mut inside: Vec<u32> = r
            .candidates
            .iter()
            .copied()
            .filter(|d| !known.contains(d) && w.contains(r.docs[*d as usize].start))
            .collect();
        inside.reverse();
        fused.extend(inside.into_iter().take(depth).map(|d| (d, 0.0)));
    }
    let mut scored: Vec<(u32, f64)> = fused
        .into_iter()
        .map(|(d, relevance)| {
            let fit = r
                .window
                .map_or(0.0, |w| w.preference(r.docs[d as usize].start));
            (d, p.score(relevance, 0.0, fit))
        })
        .collect();
    // Ties: the later document first, like the pool's newer-first rule.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    scored
}

/// A raw candidate's neighbours: the raw candidates just before and after it in the same
/// conversation, when at most `gap` seconds apart. `candidates` is in document (write) order,
/// so they are found by bisection and a short walk (at most [`NEIGHBOUR_WALK`] steps each way:
/// other conversations' entries only interleave with `cross_conversation`).
fn neighbours(docs: &[Doc], candidates: &[u32], d: u32, gap: f64) -> [Option<u32>; 2] {
    let here = &docs[d as usize];
    let Ok(i) = candidates.binary_search(&d) else {
        return [None, None];
    };
    if here.layer != Layer::Raw {
        return [None, None];
    }
    let fits = |&c: &u32| {
        let doc = &docs[c as usize];
        doc.layer == Layer::Raw
            && doc.conversation_id == here.conversation_id
            && (doc.start - here.start).abs() <= gap
    };
    let before = candidates[..i]
        .iter()
        .rev()
        .take(NEIGHBOUR_WALK)
        .find(|c| fits(c));
    let after = candidates[i + 1..]
        .iter()
        .take(NEIGHBOUR_WALK)
        .find(|c| fits(c));
    [before.copied(), after.copied()]
}

/// Candidates looked at on each side for a neighbour.
const NEIGHBOUR_WALK: usize = 8;

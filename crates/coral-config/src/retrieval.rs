//! `retrieval.*`: how search scores and fuses (docs/configuration.md, "Retrieval modes").

use serde::{Deserialize, Serialize};

use super::modes::EmbedderKind;
use super::ranking::{HybridConfig, RetrievalMode};

/// Largest `top_k` a search accepts (also the bound of `hooks.recall_top_k`).
pub const MAX_TOP_K: usize = 1_000;

/// `retrieval.weights`
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalWeights {
    /// Vector cosine weight.
    pub vector: f64,
    /// Bitmap Jaccard weight.
    pub jaccard: f64,
    /// Recency weight.
    pub time: f64,
}

impl Default for RetrievalWeights {
    fn default() -> Self {
        RetrievalWeights {
            vector: 0.6,
            jaccard: 0.2,
            time: 0.2,
        }
    }
}

/// `retrieval.rrf_weights`: each ranking's weight in `retrieval.mode = "rrf"`.
///
/// The defaults follow `cargo xtask eval` (docs/configuration.md, "Retrieval modes"): a model's
/// vectors are evidence BM25 does not have and vote fully; hash vectors and bitmap Jaccard are
/// hashed word overlap, which BM25 already scores better (it weighs rare words up and long
/// texts down), so by default they do not vote: with the hash embedder, rrf ranks by BM25.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RrfWeights {
    /// The vector ranking, when a model made the vectors.
    pub vector: f64,
    /// The vector ranking, when the hash embedder made them.
    pub hash_vector: f64,
    /// The bitmap-Jaccard ranking.
    pub jaccard: f64,
    /// The BM25 ranking.
    pub bm25: f64,
}

impl Default for RrfWeights {
    fn default() -> Self {
        RrfWeights {
            vector: 1.0,
            hash_vector: 0.0,
            jaccard: 0.0,
            bm25: 1.0,
        }
    }
}

impl RrfWeights {
    /// The weights of the three rankings (vector, Jaccard, BM25) for vectors made by the
    /// embedder called `embedder` (the hash embedder is `"hash"`).
    pub fn for_embedder(&self, embedder: &str) -> [f64; 3] {
        let vector = match EmbedderKind::from_name(embedder) {
            EmbedderKind::Hash => self.hash_vector,
            EmbedderKind::Model => self.vector,
        };
        [vector, self.jaccard, self.bm25]
    }
}

/// `retrieval.*`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalConfig {
    /// Fusion weights.
    pub weights: RetrievalWeights,
    /// Hits returned by default.
    pub top_k: usize,
    /// Recency decay constant in days.
    pub tau_days: f64,
    /// Hits below this score are dropped.
    pub min_score: f64,
    /// Search the cold tier too.
    pub include_cold: bool,
    /// How the pool ranks: `"hybrid"` (the default), `"weighted"` or `"rrf"`. A config without
    /// the key (the original's) ranks with the default.
    pub mode: RetrievalMode,
    /// Score added to items of the searched project and to shared items.
    pub project_boost: f64,
    /// Ranking weights of the rrf mode.
    pub rrf_weights: RrfWeights,
    /// Weight added to the BM25 terms of a multi-line query's last line (rrf and hybrid).
    pub bm25_last_line_boost: f64,
    /// Weights and bounds of the hybrid mode (and the timeline's retrieval).
    pub hybrid: HybridConfig,
    /// Searchable items from which the vector ranking of `"hybrid"` and `"rrf"` uses the
    /// approximate index instead of one exact pass (docs/ann.md); 0 never uses it.
    pub ann_threshold: usize,
    /// Candidates the approximate index keeps per search, re-ranked by their exact cosine
    /// (at least the ranking's depth, 100).
    pub ann_ef: usize,
}

/// The default `retrieval.ann_threshold` (docs/ann.md, "Threshold": the measured crossover).
pub const ANN_THRESHOLD: usize = 50_000;

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            weights: RetrievalWeights::default(),
            top_k: 5,
            tau_days: 7.0,
            min_score: 0.0,
            include_cold: true,
            mode: RetrievalMode::default(),
            project_boost: 0.15,
            rrf_weights: RrfWeights::default(),
            bm25_last_line_boost: 1.0,
            hybrid: HybridConfig::default(),
            ann_threshold: ANN_THRESHOLD,
            ann_ef: 160,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, RETRIEVAL_MODES};

    #[test]
    fn rrf_weights_and_last_line_boost_are_validated() {
        let (c, warnings) = Config::from_json(
            r#"{"retrieval": {"rrf_weights": {"jaccard": 0.5}, "bm25_last_line_boost": 0}}"#,
        )
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        // Keys left out keep their defaults.
        let w = c.retrieval.rrf_weights;
        assert_eq!(
            (w.vector, w.hash_vector, w.jaccard, w.bm25),
            (1.0, 0.0, 0.5, 1.0)
        );
        assert_eq!(c.retrieval.bm25_last_line_boost, 0.0);
        assert_eq!(w.for_embedder("hash"), [0.0, 0.5, 1.0]);
        assert_eq!(w.for_embedder("all-MiniLM-L6-v2"), [1.0, 0.5, 1.0]);

        let check = |text: &str, needles: &[&str]| {
            let err = Config::from_json(text).unwrap_err();
            for n in needles {
                assert!(err.contains(n), "{err:?} should contain {n:?}");
            }
        };
        check(
            r#"{"retrieval": {"rrf_weights": {"bm25": -1}}}"#,
            &["retrieval.rrf_weights.bm25", "-1", "0..=1000"],
        );
        check(
            r#"{"retrieval": {"rrf_weights": {"hash_vector": "high"}}}"#,
            &["retrieval.rrf_weights.hash_vector", "high"],
        );
        check(
            r#"{"retrieval": {"bm25_last_line_boost": 1e9}}"#,
            &["retrieval.bm25_last_line_boost", "1000000000"],
        );
        // Every ranking off for one kind of vectors.
        check(
            r#"{"retrieval": {"rrf_weights": {"bm25": 0}}}"#,
            &["retrieval.rrf_weights", "hash_vector", "hash vectors"],
        );
        let err = Config::from_json(
            r#"{"retrieval": {"rrf_weights": {"vector": 0, "hash_vector": 1, "bm25": 0}}}"#,
        )
        .unwrap_err();
        assert!(
            err.contains("model vectors") && !err.contains("hash vectors"),
            "{err}"
        );
        // A misspelt weight is a warning, not silently a default.
        let (_, w) = Config::from_json(r#"{"retrieval": {"rrf_weights": {"bm52": 2}}}"#).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("retrieval.rrf_weights.bm52"), "{w:?}");
    }

    #[test]
    fn every_listed_retrieval_mode_is_accepted() {
        assert!(RETRIEVAL_MODES.contains(&RetrievalConfig::default().mode.as_str()));
        for mode in RETRIEVAL_MODES {
            let text = format!(r#"{{"retrieval": {{"mode": "{mode}"}}}}"#);
            let (config, warnings) = Config::from_json(&text).unwrap();
            assert_eq!(config.retrieval.mode.as_str(), *mode);
            assert!(warnings.is_empty());
        }
        // The original's configs have no retrieval.mode: they rank with the default.
        let (config, _) = Config::from_json(r#"{"retrieval": {"top_k": 3}}"#).unwrap();
        assert_eq!(config.retrieval.mode, RetrievalMode::Hybrid);
    }
}

//! The ranking settings: `retrieval.mode` as a type ([`RetrievalMode`]) and `retrieval.hybrid`
//! ([`HybridConfig`]), the default mode's weights and bounds (docs/ranking.md).

use std::fmt;

use coral_score::HybridParams;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How the memory pool ranks (`retrieval.mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetrievalMode {
    /// Relevance first: BM25 and vectors fused by z-score, recency / heat / importance a
    /// bounded prior, time-shaped queries a window (docs/ranking.md). The default.
    #[default]
    Hybrid,
    /// The original's formula: `0.6·cosine + 0.2·Jaccard + 0.2·recency` (`retrieval.weights`).
    Weighted,
    /// Vector, Jaccard and BM25 rankings fused by weighted reciprocal rank
    /// (`retrieval.rrf_weights`).
    Rrf,
}

/// Every value `retrieval.mode` accepts, in the order `cargo xtask eval` measures them
/// (docs/eval.md): the names of [`RetrievalMode::ALL`].
pub const RETRIEVAL_MODES: &[&str] = &["hybrid", "weighted", "rrf"];

impl RetrievalMode {
    /// Every mode, in [`RETRIEVAL_MODES`] order.
    pub const ALL: [RetrievalMode; 3] = [
        RetrievalMode::Hybrid,
        RetrievalMode::Weighted,
        RetrievalMode::Rrf,
    ];

    /// Its name in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            RetrievalMode::Hybrid => "hybrid",
            RetrievalMode::Weighted => "weighted",
            RetrievalMode::Rrf => "rrf",
        }
    }

    /// The mode called `name`, or an error listing the accepted names.
    pub fn parse(name: &str) -> Result<RetrievalMode, String> {
        RetrievalMode::ALL
            .into_iter()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<String> = RETRIEVAL_MODES.iter().map(|m| format!("{m:?}")).collect();
                format!(
                    "retrieval.mode = {} must be {} (docs/ranking.md)",
                    coral_base::echo(name),
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for RetrievalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RetrievalMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RetrievalMode::parse(s)
    }
}

impl Serialize for RetrievalMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RetrievalMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        RetrievalMode::parse(&name).map_err(serde::de::Error::custom)
    }
}

/// `retrieval.hybrid`: the weights and bounds of `retrieval.mode = "hybrid"`, also used by the
/// timeline's `retrieve_for_turn` (docs/ranking.md has the measurements behind each default).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HybridConfig {
    /// Weight of the BM25 ranking.
    pub bm25: f64,
    /// Weight of the vector ranking when a model made the vectors (0 for a query in a
    /// language the model does not know: Chinese for an English-only model).
    pub vector: f64,
    /// Weight of the vector ranking when the hash embedder made them: hashed words, which
    /// BM25 already scores better, so they do not vote by default.
    pub hash_vector: f64,
    /// Share of the better neighbour's BM25 a memory gains (memories written within
    /// `neighbour_gap_seconds` of each other are one conversation).
    pub neighbours: f64,
    /// Neighbouring memories are at most this many seconds apart.
    pub neighbour_gap_seconds: f64,
    /// Exponent of the coordination factor: a memory's BM25 part times the share of the
    /// query's term weight it matches, to this power (0: off).
    pub coordination: f64,
    /// The most recency, heat and importance add to a memory's relevance (z-score units):
    /// a memory more relevant by more than this always ranks above.
    pub prior: f64,
    /// What a time-shaped query's window ("yesterday", "上周") adds to a memory inside it.
    pub time: f64,
}

impl Default for HybridConfig {
    fn default() -> Self {
        let p = HybridParams::default();
        HybridConfig {
            bm25: p.bm25,
            vector: p.vector,
            hash_vector: 0.0,
            neighbours: p.neighbours,
            neighbour_gap_seconds: p.neighbour_gap,
            coordination: p.coordination,
            prior: p.prior,
            time: p.time,
        }
    }
}

impl HybridConfig {
    /// The fusion settings for a query, with the vector weight for vectors made by `embedder`
    /// (its [`Embedder::name`](coral_embed::Embedder::name); the hash embedder is `"hash"`).
    /// A model whose table entry lists its languages gets weight 0 for a query in another
    /// script (MiniLM on Chinese: recall@5 on MADial zh 56.3 with BM25 alone, 50.5 fused).
    pub fn params_for(&self, embedder: &str, query: &str) -> HybridParams {
        let vector = if embedder == "hash" {
            self.hash_vector
        } else {
            let language = if coral_score::is_mostly_cjk(query) {
                "zh"
            } else {
                "en"
            };
            match coral_embed::model_spec(embedder) {
                Some(spec) if !spec.languages.contains(&language) => 0.0,
                _ => self.vector,
            }
        };
        HybridParams {
            bm25: self.bm25,
            vector,
            neighbours: self.neighbours,
            neighbour_gap: self.neighbour_gap_seconds,
            coordination: self.coordination,
            prior: self.prior,
            time: self.time,
        }
    }

    /// Every problem with the values, each naming its key and value.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        let keys = [
            ("bm25", self.bm25, 1000.0),
            ("vector", self.vector, 1000.0),
            ("hash_vector", self.hash_vector, 1000.0),
            ("neighbours", self.neighbours, 10.0),
            ("neighbour_gap_seconds", self.neighbour_gap_seconds, 1e9),
            ("coordination", self.coordination, 10.0),
            ("prior", self.prior, 1000.0),
            ("time", self.time, 1000.0),
        ];
        for (key, v, max) in keys {
            if !v.is_finite() || !(0.0..=max).contains(&v) {
                p.push(format!(
                    "retrieval.hybrid.{key} = {v} must be a number in 0..={max}"
                ));
            }
        }
        if self.bm25 == 0.0 && self.vector == 0.0 && self.hash_vector == 0.0 {
            p.push(
                "retrieval.hybrid: bm25, vector and hash_vector are all 0, so hybrid would rank \
                 nothing; give bm25 a positive weight"
                    .into(),
            );
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_names_are_the_modes() {
        let names: Vec<&str> = RetrievalMode::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(names, RETRIEVAL_MODES);
        for m in RetrievalMode::ALL {
            assert_eq!(m.as_str().parse::<RetrievalMode>(), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        assert_eq!(RetrievalMode::default(), RetrievalMode::Hybrid);
        let err = RetrievalMode::parse("Hybrid").unwrap_err();
        for part in [
            "retrieval.mode",
            "Hybrid",
            "\"hybrid\"",
            "\"weighted\"",
            "\"rrf\"",
        ] {
            assert!(err.contains(part), "{err}");
        }
    }

    #[test]
    fn vectors_vote_by_embedder_and_language() {
        let c = HybridConfig::default();
        assert_eq!(c.params_for("hash", "coffee").vector, 0.0);
        assert_eq!(c.params_for("use-multilingual-v3", "咖啡").vector, 1.0);
        assert_eq!(c.params_for("use-multilingual-v3", "coffee").vector, 1.0);
        let minilm = "sentence-transformers/all-MiniLM-L6-v2";
        assert_eq!(c.params_for(minilm, "coffee").vector, 1.0);
        assert_eq!(c.params_for(minilm, "我最喜欢的咖啡").vector, 0.0);
        // A model Coral does not know: trusted as configured.
        assert_eq!(c.params_for("org/some-model", "咖啡").vector, 1.0);
    }

    #[test]
    fn bad_values_are_named() {
        let c = HybridConfig {
            prior: -1.0,
            time: f64::NAN,
            ..HybridConfig::default()
        };
        let p = c.problems().join("; ");
        assert!(
            p.contains("retrieval.hybrid.prior = -1") && p.contains("retrieval.hybrid.time"),
            "{p}"
        );
        let off = HybridConfig {
            bm25: 0.0,
            vector: 0.0,
            ..HybridConfig::default()
        };
        assert!(off.problems().join(" ").contains("rank nothing"));
        assert!(HybridConfig::default().problems().is_empty());
    }
}

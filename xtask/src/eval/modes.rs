//! The retrieval modes measured, per path.
//!
//! The pool's modes are every value `retrieval.mode` accepts ([`coral::RETRIEVAL_MODES`], with
//! its default settings: a mode added to the facade is measured with no change here), then the
//! named variants in [`VARIANTS`] (one line each). Rows without model vectors (embedder
//! `none`) have their own modes: the BM25 kernel alone and bitmap Jaccard alone.

use coral::{Config, RETRIEVAL_MODES, RrfWeights};

/// A change to the default configuration.
pub type Edit = fn(&mut Config);

/// How a row ranks.
#[derive(Clone, Copy)]
pub enum Ranker {
    /// Through the facade with `retrieval.mode = base`, then `edit`.
    Facade {
        /// `retrieval.mode`.
        base: &'static str,
        /// Further changes, if any.
        edit: Option<Edit>,
    },
    /// The `coral-score` BM25 kernel alone over the group's documents (pool only): no store,
    /// no merging, distinct query terms (the reference points' method).
    Bm25Kernel,
}

/// One mode: its name in the table and how it ranks.
#[derive(Clone, Copy)]
pub struct Mode {
    /// Column value `mode` in the table and the JSON.
    pub name: &'static str,
    /// How it ranks.
    pub ranker: Ranker,
}

/// Variants of the facade's modes, measured for every embedder after the plain modes.
pub const VARIANTS: &[Mode] = &[
    Mode {
        name: "hybrid-no-neighbours",
        ranker: Ranker::Facade {
            base: "hybrid",
            edit: Some(|c| c.retrieval.hybrid.neighbours = 0.0),
        },
    },
    Mode {
        name: "hybrid-no-coordination",
        ranker: Ranker::Facade {
            base: "hybrid",
            edit: Some(|c| c.retrieval.hybrid.coordination = 0.0),
        },
    },
    Mode {
        name: "hybrid-no-priors",
        ranker: Ranker::Facade {
            base: "hybrid",
            edit: Some(|c| c.retrieval.hybrid.prior = 0.0),
        },
    },
    Mode {
        name: "hybrid-no-time",
        ranker: Ranker::Facade {
            base: "hybrid",
            edit: Some(|c| c.retrieval.hybrid.time = 0.0),
        },
    },
    Mode {
        name: "hybrid-min-0.35",
        ranker: Ranker::Facade {
            base: "hybrid",
            // The original's default config sets retrieval.min_score = 0.35.
            edit: Some(|c| c.retrieval.min_score = 0.35),
        },
    },
    Mode {
        name: "rrf-equal",
        ranker: Ranker::Facade {
            base: "rrf",
            // Every list votes fully and the last line is not boosted: the first rrf.
            edit: Some(|c| {
                c.retrieval.rrf_weights = RrfWeights {
                    vector: 1.0,
                    hash_vector: 1.0,
                    jaccard: 1.0,
                    bm25: 1.0,
                };
                c.retrieval.bm25_last_line_boost = 0.0;
            }),
        },
    },
    Mode {
        name: "vector",
        ranker: Ranker::Facade {
            base: "weighted",
            edit: Some(|c| {
                c.retrieval.weights.vector = 1.0;
                c.retrieval.weights.jaccard = 0.0;
                c.retrieval.weights.time = 0.0;
            }),
        },
    },
];

/// The pool's modes for an embedder with vectors.
pub fn pool_modes() -> Vec<Mode> {
    RETRIEVAL_MODES
        .iter()
        .map(|&name| Mode {
            name,
            ranker: Ranker::Facade {
                base: name,
                edit: None,
            },
        })
        .chain(VARIANTS.iter().copied())
        .collect()
}

/// The pool's rows without model vectors.
pub fn pool_modes_without_vectors() -> Vec<Mode> {
    vec![
        Mode {
            name: "bm25",
            ranker: Ranker::Bm25Kernel,
        },
        Mode {
            name: "jaccard",
            ranker: Ranker::Facade {
                base: "weighted",
                edit: Some(|c| {
                    c.retrieval.weights.vector = 0.0;
                    c.retrieval.weights.jaccard = 1.0;
                    c.retrieval.weights.time = 0.0;
                }),
            },
        },
    ]
}

/// The timeline's modes: every `retrieval.mode` ([`coral::Coral::timeline_retrieve`] fuses
/// by hybrid fusion in `"hybrid"` and by MemCore's RRF in the others, so `"weighted"` would
/// repeat `"rrf"` and is left out).
pub fn timeline_modes() -> Vec<Mode> {
    RETRIEVAL_MODES
        .iter()
        .filter(|&&name| name != "weighted")
        .map(|&name| Mode {
            name,
            ranker: Ranker::Facade {
                base: name,
                edit: None,
            },
        })
        .collect()
}

impl Mode {
    /// Apply this mode to `config` (nothing for the kernel).
    pub fn apply(&self, config: &mut Config) {
        if let Ranker::Facade { base, edit } = self.ranker {
            config.retrieval.mode = base
                .parse()
                .unwrap_or_else(|e| panic!("mode {}: {e}", self.name));
            if let Some(edit) = edit {
                edit(config);
            }
        }
    }
}

/// Every mode name `--mode` accepts.
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = pool_modes()
        .into_iter()
        .chain(pool_modes_without_vectors())
        .chain(timeline_modes())
        .map(|m| m.name)
        .collect();
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(*n));
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_facade_mode_is_measured_and_every_mode_is_a_valid_config() {
        let pool: Vec<&str> = pool_modes().iter().map(|m| m.name).collect();
        for mode in RETRIEVAL_MODES {
            assert!(pool.contains(mode), "{mode} is not measured");
        }
        let all = pool_modes()
            .into_iter()
            .chain(pool_modes_without_vectors())
            .chain(timeline_modes());
        for mode in all {
            let mut config = Config::default();
            mode.apply(&mut config);
            let json = serde_json::to_string(&config).unwrap();
            if let Err(e) = Config::from_json(&json) {
                panic!("mode {} makes an invalid config: {e}", mode.name);
            }
        }
        let names = names();
        let distinct: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
    }
}

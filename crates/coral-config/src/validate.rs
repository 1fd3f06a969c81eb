//! [`Config::validate`]: every problem with the values, each naming its key and value.

use super::Config;
use super::modes::SyncMode;

impl Config {
    /// Every problem with the values, each naming its key and value.
    pub fn validate(&self) -> Vec<String> {
        let mut p = Vec::new();
        let mut finite = |key: &str, v: f64, min: f64, max: f64| {
            if !v.is_finite() || v < min || v > max {
                p.push(format!("{key} = {v} must be a number in {min}..={max}"));
            }
        };
        let m = &self.memory;
        finite("memory.sim_threshold_hot", m.sim_threshold_hot, 0.0, 1.0);
        finite("memory.hot_ttl_hours", m.hot_ttl_hours, 0.0, 1e9);
        finite(
            "memory.distill_sim_threshold",
            m.distill_sim_threshold,
            0.0,
            1.0,
        );
        let r = &self.retrieval;
        finite("retrieval.weights.vector", r.weights.vector, -1e6, 1e6);
        finite("retrieval.weights.jaccard", r.weights.jaccard, -1e6, 1e6);
        finite("retrieval.weights.time", r.weights.time, -1e6, 1e6);
        finite("retrieval.tau_days", r.tau_days, 0.0, 1e9);
        finite("retrieval.min_score", r.min_score, -1e6, 1e6);
        finite("retrieval.project_boost", r.project_boost, -1e6, 1e6);
        let w = &r.rrf_weights;
        finite("retrieval.rrf_weights.vector", w.vector, 0.0, 1000.0);
        finite(
            "retrieval.rrf_weights.hash_vector",
            w.hash_vector,
            0.0,
            1000.0,
        );
        finite("retrieval.rrf_weights.jaccard", w.jaccard, 0.0, 1000.0);
        finite("retrieval.rrf_weights.bm25", w.bm25, 0.0, 1000.0);
        finite(
            "retrieval.bm25_last_line_boost",
            r.bm25_last_line_boost,
            0.0,
            1000.0,
        );
        finite("retrieval.ann_ef", r.ann_ef as f64, 1.0, 4096.0);
        let h = &self.heat;
        finite("heat.weights.frequency", h.weights.frequency, -1e6, 1e6);
        finite("heat.weights.recency", h.weights.recency, -1e6, 1e6);
        finite("heat.weights.importance", h.weights.importance, -1e6, 1e6);
        finite("heat.tau_days", h.tau_days, 0.0, 1e9);
        finite("heat.freq_scale", h.freq_scale, 0.0, 1e12);
        finite(
            "heat.cold_fold_interval_seconds",
            h.cold_fold_interval_seconds,
            0.0,
            1e9,
        );
        finite(
            "reload.check_interval_seconds",
            self.reload.check_interval_seconds,
            0.0,
            1e9,
        );
        let s = &self.storage;
        finite(
            "storage.vector_save_interval_seconds",
            s.vector_save_interval_seconds,
            0.0,
            1e9,
        );
        finite("storage.warn_ratio", s.warn_ratio, 0.0, 1.0);
        finite("storage.hard_ratio", s.hard_ratio, 0.0, 1.0);
        if r.top_k == 0 {
            p.push("retrieval.top_k = 0 must be at least 1".into());
        }
        for (vectors, key) in [("model", "vector"), ("hash", "hash_vector")] {
            let [v, j, b] = w.for_embedder(vectors);
            // Written so that NaN (reported above) does not count as a zero.
            if v == 0.0 && j == 0.0 && b == 0.0 {
                p.push(format!(
                    "retrieval.rrf_weights: {key}, jaccard and bm25 are all 0, so rrf would rank \
                     nothing with {vectors} vectors; give one of them a positive weight"
                ));
            }
        }
        p.extend(r.hybrid.problems());
        s.backend_problems(&mut p);
        if SyncMode::parse(&s.sync).is_none() {
            p.push(format!(
                "storage.sync = {:?} must be \"always\", \"interval\" or \"never\"",
                s.sync
            ));
        }
        if let Err(e) = self.timeline.layers.validate() {
            p.push(format!("timeline.{e}"));
        }
        if self.timeline.retrieval_limit == 0
            || self.timeline.retrieval_limit > coral_timeline::MAX_LIMIT
        {
            p.push(format!(
                "timeline.retrieval_limit = {} must be in 1..={}",
                self.timeline.retrieval_limit,
                coral_timeline::MAX_LIMIT
            ));
        }
        if let Err(e) = self.timeline.policy.dispatch().validate() {
            p.push(format!("timeline.policy.{e}"));
        }
        if let Err(e) = self.timeline.prompt.validate() {
            p.push(format!("timeline.prompt.{e}"));
        }
        if let Err(e) = coral_timeline::parse_zone(&self.timeline.timezone) {
            p.push(format!("timeline.timezone: {e}"));
        }
        self.hooks.problems(&mut p);
        let project = self.memory.project.trim();
        if self.memory.project.len() > 256
            || self.memory.project.chars().any(char::is_control)
            || project != self.memory.project
        {
            p.push(format!(
                "memory.project = {} must be \"\", \"auto\" or a project name of at most 256 \
                 bytes without control characters or surrounding spaces",
                coral_base::echo(&self.memory.project)
            ));
        }
        if s.wal_max_bytes < 4096 {
            p.push(format!(
                "storage.wal_max_bytes = {} must be at least 4096",
                s.wal_max_bytes
            ));
        }
        if self.embedding.choice().is_none() {
            p.push(format!(
                "embedding.embedder = {:?} must be \"auto\", \"hash\", \"model\" (also \
                 written \"onnx\") or \"sentence-transformers\"",
                self.embedding.embedder
            ));
        }
        if !matches!(self.embedding.pooling.as_str(), "" | "mean" | "cls") {
            p.push(format!(
                "embedding.pooling = {:?} must be \"mean\", \"cls\" or \"\" (from the model)",
                self.embedding.pooling
            ));
        }
        if self.embedding.dim == 0 || self.embedding.dim > 65_536 {
            p.push(format!(
                "embedding.dim = {} must be in 1..=65536",
                self.embedding.dim
            ));
        }
        for (key, v) in [
            ("paths.warm_cache", &self.paths.warm_cache),
            ("paths.cold_archive", &self.paths.cold_archive),
            ("paths.vector_store", &self.paths.vector_store),
            ("paths.vector_index", &self.paths.vector_index),
            ("threads.path", &self.threads.path),
        ] {
            if v.trim().is_empty() {
                p.push(format!("{key} is empty"));
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;

    #[test]
    fn errors_name_the_key_and_value() {
        let check = |text: &str, needles: &[&str]| {
            let err = Config::from_json(text).unwrap_err();
            for n in needles {
                assert!(err.contains(n), "{err:?} should contain {n:?}");
            }
        };
        check(
            r#"{"memory": {"capacity_threshold": "lots"}}"#,
            &["memory.capacity_threshold", "lots"],
        );
        check(
            r#"{"memory": {"capacity_threshold": -5}}"#,
            &["memory.capacity_threshold", "-5"],
        );
        check(
            r#"{"storage": {"hard_ratio": 1.5}}"#,
            &["storage.hard_ratio", "1.5"],
        );
        check(
            r#"{"retrieval": {"mode": "magic"}}"#,
            &["retrieval.mode", "magic", "\"rrf\"", "\"hybrid\""],
        );
        check(r#"{"memory": {"#, &["line 1"]);
        check("[1]", &["object"]);
        check(
            r#"{"storage": {"warn_ratio": 2, "sync": "sometimes"}}"#,
            &["storage.warn_ratio", "storage.sync"],
        );
    }
}

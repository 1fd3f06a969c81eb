//! The memory-pool path: one fresh store per group, every document inserted through the
//! facade, every question a `search_with` as of the group's clock.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use coral::{Config, Coral, Embedder, InsertOptions, SearchOptions};
use coral_score::{Bm25Index, Bm25Params, Bm25Query};

use super::corpus::Group;
use super::metrics::{DEPTH, Ranked};
use super::modes::{Mode, Ranker};

/// Tier and capacity limits far above any group's size, so nothing moves to the archive or is
/// evicted, and near-duplicates are looked for among every earlier document (the protocols).
const NO_LIMIT: usize = 1_000_000;

/// What one group gave.
pub struct GroupRun {
    /// Per question, in order.
    pub ranked: Vec<Ranked>,
    /// Document ids that share one memory (near-duplicates merged on insert), each list in
    /// insertion order; only lists of two or more.
    pub merged: Vec<Vec<String>>,
}

/// The configuration of a fresh store in `dir` for `mode`.
pub fn store_config(dir: &Path, dim: usize, merge_threshold: Option<f64>, mode: &Mode) -> Config {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.embedding.dim = dim;
    // A temporary store: durability costs time and measures nothing here.
    config.storage.sync = "never".into();
    let m = &mut config.memory;
    m.max_hot_entries = NO_LIMIT;
    m.max_warm_entries = NO_LIMIT;
    m.max_cold_entries = NO_LIMIT;
    m.capacity_threshold = NO_LIMIT;
    if let Some(t) = merge_threshold {
        m.sim_threshold_hot = t;
    }
    mode.apply(&mut config);
    config
}

/// Run `group` on the pool with `embedder` and `mode`.
pub fn run_group(
    group: &Group,
    embedder: &Arc<dyn Embedder>,
    mode: &Mode,
    merge_threshold: Option<f64>,
) -> Result<GroupRun> {
    if let Ranker::Bm25Kernel = mode.ranker {
        return Ok(bm25_kernel(group));
    }
    let dir = tempfile::tempdir()?;
    let config = store_config(dir.path(), embedder.dim(), merge_threshold, mode);
    let coral = Coral::open_with(config, Arc::clone(embedder))
        .with_context(|| format!("opening a store for {}", group.name))?;
    // Coral item id -> the document ids stored as it, in insertion order.
    let mut ids: HashMap<String, Vec<String>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for doc in &group.docs {
        let options = InsertOptions {
            timestamp: Some(doc.time),
            // Recorded as it happened: tier checks run on the document's own clock.
            now: Some(doc.time),
            ..InsertOptions::default()
        };
        let stored = coral
            .insert_with(&doc.text, options)
            .with_context(|| format!("{}: inserting {}", group.name, doc.id))?;
        let slot = ids.entry(stored.id().to_string()).or_default();
        if slot.is_empty() {
            order.push(stored.id().to_string());
        }
        slot.push(doc.id.clone());
    }
    let mut ranked = Vec::with_capacity(group.questions.len());
    // Sequential: each search adds heat to its hits, so the order of questions is fixed.
    for q in &group.questions {
        let options = SearchOptions {
            top_k: Some(DEPTH),
            now: Some(group.now),
            ..SearchOptions::default()
        };
        let hits = coral
            .search_with(&q.text, options)
            .with_context(|| format!("{}: searching {:?}", group.name, q.text))?;
        ranked.push(
            hits.into_iter()
                .map(|h| ids.get(&h.item.item_id).cloned().unwrap_or_default())
                .collect(),
        );
    }
    coral.close()?;
    let merged = order
        .iter()
        .filter_map(|id| ids.get(id).filter(|d| d.len() > 1).cloned())
        .collect();
    Ok(GroupRun { ranked, merged })
}

/// The `coral-score` BM25 kernel alone over the group's documents (none merged).
fn bm25_kernel(group: &Group) -> GroupRun {
    let mut index = Bm25Index::new();
    for (doc, d) in group.docs.iter().enumerate() {
        index.insert_text(doc as u32, &d.text);
    }
    let ranked = group
        .questions
        .iter()
        .map(|q| {
            index
                .search(
                    &Bm25Query::from_text(&q.text),
                    Bm25Params::default(),
                    DEPTH,
                    |_| true,
                )
                .iter()
                .map(|&(doc, _)| vec![group.docs[doc as usize].id.clone()])
                .collect()
        })
        .collect();
    GroupRun {
        ranked,
        merged: Vec::new(),
    }
}

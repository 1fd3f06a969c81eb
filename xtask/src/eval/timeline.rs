//! The timeline path: one fresh data directory per group, every document recorded as a
//! standalone timeline entry at its time, every question a `retrieve_for_turn`.
//!
//! A LoCoMo turn is a message between two people with no model call, which is what the
//! timeline's standalone entries are for (`Timeline::record_entry`): kind `message.user`
//! (neither speaker is the model), the speaker as the actor tag, the document id as the source
//! id (so a hit's `memory_id` is the turn's `dia_id`), the turn's time as both timestamp and
//! clock. Questions ask with the question as the query, no time hint, at most 10 hits, and
//! `include_visible`: nothing is compacted, so the whole conversation is the context's raw
//! window, which retrieval would otherwise leave out.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use coral::timeline::{EntryInput, Namespace, ReadStatus, RetrieveRequest, RetrieveResult};
use coral::{Coral, Embedder};

use super::corpus::Group;
use super::metrics::DEPTH;
use super::modes::Mode;
use super::pool::{GroupRun, store_config};

/// The user id of every evaluated conversation (each group has its own data directory).
const USER: &str = "eval";

/// Run `group` on the timeline, ranking by `embedder`'s vectors too when `vectors` is set.
pub fn run_group(
    group: &Group,
    embedder: &Arc<dyn Embedder>,
    vectors: bool,
    mode: &Mode,
) -> Result<GroupRun> {
    let dir = tempfile::tempdir()?;
    let config = store_config(dir.path(), embedder.dim(), None, mode);
    let coral = Coral::open_with(config, Arc::clone(embedder))
        .with_context(|| format!("opening a data directory for {}", group.name))?;
    let timeline = coral.timeline()?;
    let ns = Namespace::new(USER, group.name.as_str());
    for doc in &group.docs {
        let mut entry = EntryInput::user(doc.text.as_str())
            .source_id(doc.id.as_str())
            .at(doc.time);
        entry.actor = doc.speaker.clone();
        timeline
            .record_entry(&ns, &entry, doc.time)
            .with_context(|| format!("{}: recording {}", group.name, doc.id))?;
    }
    let mut ranked = Vec::with_capacity(group.questions.len());
    for q in &group.questions {
        let req = RetrieveRequest {
            query: q.text.clone(),
            limit: DEPTH,
            include_visible: true,
            now: Some(group.now),
            ..RetrieveRequest::default()
        };
        // Words only: the fusion the configuration gives, without an embedder.
        let result = if vectors {
            coral.timeline_retrieve(&ns, &req)?
        } else {
            let fusion = match mode_of(&coral) {
                coral::RetrievalMode::Hybrid => coral::timeline::Fusion::Hybrid(
                    coral
                        .config()
                        .retrieval
                        .hybrid
                        .params_for("hash", &req.query),
                ),
                _ => coral::timeline::Fusion::Rrf,
            };
            timeline.retrieve_for_turn(&ns, &RetrieveRequest { fusion, ..req }, None)
        };
        check(&result, &q.text).with_context(|| group.name.clone())?;
        ranked.push(
            result
                .into_payload()
                .hits
                .into_iter()
                .map(|h| std::iter::once(h.memory_id).chain(h.also_matched).collect())
                .collect(),
        );
    }
    drop(timeline);
    coral.close()?;
    Ok(GroupRun {
        ranked,
        merged: Vec::new(),
    })
}

fn mode_of(coral: &Coral) -> coral::RetrievalMode {
    coral.config().retrieval.mode
}

/// A retrieval that failed or warned is an error: the figures would not mean what they say.
fn check(result: &RetrieveResult, query: &str) -> Result<()> {
    let short: String = query.chars().take(60).collect();
    if !matches!(result.status, ReadStatus::Ok | ReadStatus::Empty) {
        bail!(
            "retrieve_for_turn {short:?}: {:?}: {}",
            result.status,
            result.message.as_deref().unwrap_or_default()
        );
    }
    if !result.warnings.is_empty() {
        bail!(
            "retrieve_for_turn {short:?} warned: {}",
            result.warnings.join("; ")
        );
    }
    Ok(())
}

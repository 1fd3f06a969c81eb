//! What the facade does for an insert or a search before any backend sees it, the same for the
//! data directory and the database (docs/postgres.md, "The storage interface"): argument checks,
//! secrets replaced by markers, the text's features and its vector (outside any lock or
//! transaction), the ranking's parameters and a time-shaped query's window.

use std::borrow::Cow;

use coral_embed::{Embedder, TextFeatures, text_features};
use coral_score::{Bm25Query, HybridParams, TimeWindow};

use crate::error::{Error, Result};
use crate::limits::{MAX_TOP_K, check_importance, check_text, check_unix_time, unix_now};
use crate::types::{InsertOptions, SearchOptions};
use coral_config::LiveConfig;
use coral_config::{Config, RetrievalMode};

/// A checked memory with its features and vector, ready for a backend.
pub(crate) struct NewText<'a> {
    /// The text with its secrets replaced.
    pub(crate) content: Cow<'a, str>,
    /// The kinds of secret replaced.
    pub(crate) redacted: Vec<&'static str>,
    pub(crate) features: TextFeatures,
    pub(crate) vector: Vec<f32>,
    pub(crate) importance: f64,
    pub(crate) project: Option<String>,
    /// The call's clock.
    pub(crate) now: f64,
    /// The memory's creation time (`timestamp`, else `now`).
    pub(crate) at: f64,
}

/// `Coral::insert_with`'s checks, secrets and embedding: everything before the store.
pub(crate) fn new_text<'a>(
    live: &LiveConfig,
    embedder: &dyn Embedder,
    content: &'a str,
    options: &InsertOptions,
) -> Result<NewText<'a>> {
    check_text("content", content)?;
    // Before anything is embedded, hashed into an id or written (docs/configuration.md,
    // "Secrets"). The switch follows `privacy.redact_secrets` through hot reload.
    let (content, redacted) = live.redaction().apply(content);
    if !redacted.is_empty() {
        // Markers can be longer than what they replace.
        check_text("content with its secrets replaced", &content)?;
    }
    check_importance(options.importance)?;
    for (what, t) in [("timestamp", options.timestamp), ("now", options.now)] {
        if let Some(t) = t {
            check_unix_time(what, t)?;
        }
    }
    let project = match options.project.as_deref().map(str::trim) {
        Some("") | None => None,
        Some(p) if p.len() > 256 => {
            return Err(Error::InvalidInput(format!(
                "project name is {} bytes; the limit is 256",
                p.len()
            )));
        }
        Some(p) => Some(p.to_string()),
    };
    let now = options.now.unwrap_or_else(unix_now);
    let at = options.timestamp.unwrap_or(now);
    let features = text_features(&content);
    let vector = embedder
        .embed(&[content.as_ref()])?
        .pop()
        .ok_or_else(|| Error::InvalidInput("the embedder returned no vector".into()))?;
    Ok(NewText {
        content,
        redacted,
        features,
        vector,
        importance: options.importance,
        project,
        now,
        at,
    })
}

/// A checked search: its features, vector and ranking parameters.
pub(crate) struct Question {
    pub(crate) k: usize,
    pub(crate) min_score: f64,
    pub(crate) now: f64,
    pub(crate) features: TextFeatures,
    pub(crate) mode: RetrievalMode,
    /// The BM25 query (every mode but `"weighted"`).
    pub(crate) keywords: Option<Bm25Query>,
    pub(crate) hybrid: HybridParams,
    /// The query's vector (embedded even when the vector ranking has no weight: hits report
    /// their cosine).
    pub(crate) vector: Vec<f32>,
    pub(crate) project: Option<String>,
    /// One line, not a conversation (`Bm25Index::coverage`).
    pub(crate) question: bool,
    /// A time-shaped query's window (hybrid mode only).
    pub(crate) window: Option<TimeWindow>,
}

/// `Coral::search_with`'s checks and the query's features, outside any lock.
pub(crate) fn question(
    config: &Config,
    embedder: &dyn Embedder,
    query: &str,
    options: &SearchOptions,
) -> Result<Question> {
    check_text("query", query)?;
    let k = options.top_k.unwrap_or(config.retrieval.top_k);
    if k == 0 || k > MAX_TOP_K {
        return Err(Error::InvalidInput(format!(
            "top_k must be from 1 to {MAX_TOP_K}, got {k}"
        )));
    }
    let min_score = options.min_score.unwrap_or(config.retrieval.min_score);
    if min_score.is_nan() {
        return Err(Error::InvalidInput("min_score is not a number".into()));
    }
    let now = options.now.unwrap_or_else(unix_now);
    check_unix_time("now", now)?;
    let zone = coral_timeline::parse_zone(
        options
            .timezone
            .as_deref()
            .unwrap_or(&config.timeline.timezone),
    )
    .map_err(Error::InvalidInput)?;
    let features = text_features(query);
    let mode = config.retrieval.mode;
    let keywords = (mode != RetrievalMode::Weighted)
        .then(|| coral_score::search_query(query, config.retrieval.bm25_last_line_boost));
    let hybrid = config.retrieval.hybrid.params_for(embedder.name(), query);
    let vector = embedder.embed(&[query])?.pop().unwrap_or_default();
    let project = options
        .project
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from);
    Ok(Question {
        k,
        min_score,
        now,
        features,
        mode,
        keywords,
        hybrid,
        vector,
        project,
        question: coral_score::content_lines(query).nth(1).is_none(),
        window: (mode == RetrievalMode::Hybrid)
            .then(|| coral_score::time_window(query, now, zone))
            .flatten(),
    })
}

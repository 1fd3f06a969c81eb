//! `retrieve_for_turn`: hybrid retrieval over a namespace's raw entries, episodic summaries and
//! semantic memories (`docs/timeline.md`, "Retrieval").
//!
//! Hard filters (hard key, conversation, time window, layers, kinds, facets, a summary's
//! sources, what the context already shows) pick the candidates first. Then two rankings are
//! made over exactly those candidates: BM25 (k1 1.5, b 0.75, corpus statistics of the
//! candidates; `coral_score::search_terms`: NFKC, words with English inflections folded, CJK
//! unigrams and bigrams; the query without function words; entity anchors weighted 3×) and,
//! when an embedder is given and the fusion weighs vectors, vector cosine. The request's
//! [`Fusion`] merges them (`rank.rs`): by default the memory pool's hybrid fusion, in which a
//! time-shaped query without a `time_hint` ("yesterday", "上周") prefers its window; or
//! MemCore's reciprocal-rank fusion (k = 60). The best hits are returned raw first, each raw
//! hit with its whole turn.
//!
//! Every hard key has an in-memory index (`index.rs`) that follows the database, reading only
//! rows added since the last call. Vectors are computed the first time a candidate needs one
//! and kept in the `vectors` table, tagged with the embedder's model id.

use std::collections::{HashMap, HashSet};

use chrono_tz::Tz;
use coral_score::{Bm25Params, Spread, cosine, search_query, time_window};
use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;

use crate::entry::Origin;
use crate::error::Error;
use crate::index::{Doc, Layer, encode};
use crate::layers::{FACETS, LayerSettings, SummaryCard};
use crate::namespace::Namespace;
use crate::policy::DispatchPolicy;
use crate::rank::{Fusion, Rankings, fuse};
use crate::raw_window::{floor_of, open_turns};
use crate::read::{Projection, UnitView, unit_view_of};
use crate::reply::{Failure, ReadStatus, Reply, zone_of};
use crate::retrieve_filter::{TimeHint, kind_matches, parse_window, sources_of};
use crate::rows::{Unanswered, turn_status, unit_rows};
use crate::settle::estimate_tokens;
use crate::summaries::{SUMMARY_SELECT, card_from_sql, visible_summaries};
use crate::timeline::Timeline;
use crate::turn::TurnStatus;
use crate::tz::{self, Period};

/// Weight of entity anchors in the BM25 query.
pub const ANCHOR_WEIGHT: f64 = 3.0;
/// Hits returned when no limit is given (MemCore's `retrieval_limit`).
pub const DEFAULT_LIMIT: usize = 6;
/// The most hits one call returns.
pub const MAX_LIMIT: usize = 50;
/// Characters of a query (with its anchors and topics) accepted.
const MAX_QUERY_CHARS: usize = 4_096;
/// Texts one call embeds at most (about 1.3 s with the int8 MiniLM on 2 cores).
pub const MAX_EMBED_PER_CALL: usize = 1_024;

/// An embedder for retrieval: texts in, one vector each out.
pub trait TextEmbedder: Send + Sync {
    /// Identifies the model; vectors made by another model are recomputed.
    fn model_id(&self) -> String;
    /// One vector per text, all of one dimension.
    fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, String>;
}

/// A `retrieve_for_turn` request.
#[derive(Clone, Debug, Default)]
pub struct RetrieveRequest {
    /// What the model is looking for.
    pub query: String,
    /// Names that must weigh most (3× in BM25).
    pub entity_anchors: Vec<String>,
    /// Topic words (1×).
    pub topic_terms: Vec<String>,
    /// Only what happened in this window.
    pub time_hint: Option<TimeHint>,
    /// `raw`, `summary`, `semantic_summary`; empty means all.
    pub source_layers: Vec<String>,
    /// Semantic memories with these facets only (other layers are unaffected).
    pub memory_facets: Vec<String>,
    /// Only what matches one of these kinds: raw entries by their kind (`tool.shell.result`,
    /// `tool.*`, `message.*`), summaries as `memory.episodic` / `memory.semantic`
    /// (`memory.*`).
    pub kind_patterns: Vec<String>,
    /// Raw entries by who produced them: `user`, `assistant`, `external` (the environment:
    /// tool results, events); `third_party` matches nothing stored yet. Summaries are
    /// unaffected.
    pub about_roles: Vec<String>,
    /// Only the sources of this summary (its raw entries, or a semantic memory's summaries).
    pub within_memory_id: Option<String>,
    /// Also return what the context already shows (default: excluded).
    pub include_visible: bool,
    /// Search every conversation of the hard key, not just this one.
    pub cross_conversation: bool,
    /// Hits to return, 1–50 (0 means [`DEFAULT_LIMIT`]).
    pub limit: usize,
    /// Stop adding hits past this many tokens (0: no limit; the first hit always comes).
    pub token_budget: u64,
    /// IANA zone of the time hint and the labels (default UTC).
    pub timezone: Option<String>,
    /// Which summaries the context shows (to leave them out).
    pub settings: LayerSettings,
    /// How the rankings are fused (default: hybrid, docs/ranking.md).
    pub fusion: Fusion,
    /// The clock of a time-shaped query ("yesterday"), Unix seconds (default: the system
    /// clock). Only read when there is no `time_hint`.
    pub now: Option<f64>,
    /// The operator's policy: kinds it does not allow are never candidates (and withheld in a
    /// hit's turn), `kind_patterns` may not reach past it, and under its explicit-trace rule
    /// tool calls, results and events are candidates only when `kind_patterns` name them.
    pub policy: DispatchPolicy,
}

/// One hit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetrieveHit {
    /// 1-based, in the order returned.
    pub rank: usize,
    /// Entry source id or summary id: `open_memory` takes it.
    pub memory_id: String,
    /// `raw`, `summary` or `semantic_summary`.
    pub layer: &'static str,
    /// The entry's kind (`memory.episodic` / `memory.semantic` for summaries).
    pub kind: String,
    /// Its conversation.
    pub conversation_id: String,
    /// When (a summary: its period start), Unix seconds.
    pub timestamp: f64,
    /// Local `2026-04-10 08:00`.
    pub time: String,
    /// `[日期 2026-04-10 周五]`.
    pub date: String,
    /// Part of the day.
    pub time_of_day: Period,
    /// Fused score.
    pub score: f64,
    /// BM25 score, if it matched by words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f64>,
    /// Cosine, if it ranked by vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<f64>,
    /// Found by both rankings.
    pub dual_hit: bool,
    /// The entry as the conversation shows it (a card for a folded result), or the summary.
    pub text: String,
    /// Summaries: the card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<SummaryCard>,
    /// Summaries: local period start and end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_start_at: Option<String>,
    /// Summaries: local period end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_end_at: Option<String>,
    /// Raw hits: the whole turn (or standalone entry) it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<UnitView>,
    /// Raw hits: other hits of the same turn, merged into this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_matched: Vec<String>,
}

/// What `retrieve_for_turn` found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Retrieved {
    /// The BM25 query terms with their weights.
    pub query_terms: Vec<(String, f64)>,
    /// The embedder's model id, or none (words only).
    pub dense_model: Option<String>,
    /// Candidates after the hard filters.
    pub candidates: usize,
    /// Candidates left out because the context already shows them.
    pub excluded_visible: usize,
    /// Estimated tokens of the hits' texts and turns.
    pub tokens: u64,
    /// What went wrong without stopping the search (an embedder failure: words only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Entries of the hits' turns the server's dispatch policy withholds.
    #[serde(skip_serializing_if = "crate::read::is_zero")]
    pub withheld: usize,
    /// The hits: raw first, then summaries, each group best first.
    pub hits: Vec<RetrieveHit>,
}

/// A `retrieve_for_turn` answer: `ok`, `empty`, `invalid_filter` or `unavailable`.
pub type RetrieveResult = Reply<Retrieved>;

impl Timeline {
    /// Hybrid retrieval for the current turn. Never fails: problems come back as a status with
    /// a message. `embedder` adds the vector ranking; without it only words rank.
    pub fn retrieve_for_turn(
        &self,
        ns: &Namespace,
        req: &RetrieveRequest,
        embedder: Option<&dyn TextEmbedder>,
    ) -> RetrieveResult {
        let zone_name = req.timezone.as_deref().unwrap_or("UTC");
        Reply::or_failed(self.try_retrieve(ns, req, embedder), Some(zone_name))
    }

    fn try_retrieve(
        &self,
        ns: &Namespace,
        req: &RetrieveRequest,
        embedder: Option<&dyn TextEmbedder>,
    ) -> Result<RetrieveResult, Failure> {
        ns.validate()?;
        req.settings.validate()?;
        let (zone, zone_name) = zone_of(req.timezone.as_deref())?;
        let invalid = |m: String| Failure::Invalid(m);
        let total_chars = req.query.chars().count()
            + req
                .entity_anchors
                .iter()
                .chain(&req.topic_terms)
                .map(|t| t.chars().count())
                .sum::<usize>();
        if total_chars > MAX_QUERY_CHARS {
            return Err(invalid(format!(
                "the query with its anchors and topics is {total_chars} characters; at most \
                 {MAX_QUERY_CHARS}"
            )));
        }
        // A model's query is one line; a pasted conversation gets its last line weighted.
        let mut query = search_query(&req.query, 1.0);
        for anchor in &req.entity_anchors {
            query.add_search_text(anchor, ANCHOR_WEIGHT);
        }
        for topic in &req.topic_terms {
            query.add_search_text(topic, 1.0);
        }
        if query.is_empty() {
            return Err(invalid(
                "query (or entity_anchors / topic_terms) has no words to search for".into(),
            ));
        }
        let limit = match req.limit {
            0 => DEFAULT_LIMIT,
            n if n > MAX_LIMIT => {
                return Err(invalid(format!("limit is {n}; at most {MAX_LIMIT}")));
            }
            n => n,
        };
        let layers: Vec<Layer> = if req.source_layers.is_empty() {
            vec![Layer::Raw, Layer::Episodic, Layer::Semantic]
        } else {
            req.source_layers
                .iter()
                .map(|l| Layer::parse(l))
                .collect::<Result<_, _>>()
                .map_err(invalid)?
        };
        for facet in &req.memory_facets {
            if !FACETS.contains(&facet.as_str()) {
                return Err(invalid(format!(
                    "memory facet {facet:?} is not one of {}",
                    FACETS.join(", ")
                )));
            }
        }
        for p in &req.kind_patterns {
            let bare = p.strip_suffix('*').unwrap_or(p);
            if bare.contains('*') || p.is_empty() {
                return Err(invalid(format!(
                    "kind pattern {p:?}: give a kind, or a prefix ending in * (tool.*)"
                )));
            }
        }
        req.policy
            .check_patterns(&req.kind_patterns)
            .map_err(invalid)?;
        // Raw entries whose origin is one of these; `third_party` names no stored origin, so
        // a filter of it alone keeps nothing.
        let mut origins: Vec<Origin> = Vec::new();
        for role in &req.about_roles {
            match role.as_str() {
                "user" => origins.push(Origin::User),
                "assistant" => origins.push(Origin::Assistant),
                "external" => origins.push(Origin::Environment),
                "third_party" => {}
                other => {
                    return Err(invalid(format!(
                        "about role {other:?} is not user, assistant, third_party or external"
                    )));
                }
            }
        }
        let by_origin = !req.about_roles.is_empty();
        let window = match &req.time_hint {
            Some(h) => parse_window(h, zone).map_err(invalid)?,
            None => None,
        };
        let hk = ns.hard_key();
        let conv = ns.conversation_id.as_str();
        // A time-shaped query prefers its window, unless a time hint sets one.
        let soft_window = match (&req.time_hint, &req.fusion) {
            (None, Fusion::Hybrid(_)) => {
                let now = req.now.unwrap_or_else(unix_now);
                if !now.is_finite() {
                    return Err(invalid(format!("now = {now} is not a time")));
                }
                time_window(&req.query, now, zone)
            }
            _ => None,
        };
        let embedder = embedder.filter(|_| req.fusion.wants_vectors());
        let model = embedder.map(|e| e.model_id());

        let slot = self.retrieval.slot(&hk);
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        let index = &mut *guard;

        // The index, what the context shows, and the sources asked for, in one snapshot.
        let (visible_units, visible_summaries, within, replaced) = self.read(|tx| {
            index.refresh(tx, &hk)?;
            if let Some(m) = &model {
                index.load_vectors(tx, &hk, m)?;
            }
            // The raw window (closed after the floor) and the open turns.
            let (floor, _, _) = floor_of(tx, &hk, conv)?;
            let mut units: HashSet<i64> = tx
                .prepare_cached(
                    "SELECT unit_seq FROM closures WHERE hard_key = ?1 AND conversation_id = ?2 \
                     AND close_pk > ?3",
                )?
                .query_map(params![hk, conv, floor], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            units.extend(open_turns(tx, &hk, conv)?);
            // Memories a newer one reinforced are history: the newer one answers. Summaries made
            // from something since forgotten are not found either.
            let replaced: HashSet<String> = tx
                .prepare_cached(
                    "SELECT summary_id FROM summaries WHERE hard_key = ?1 \
                     AND (superseded_by IS NOT NULL OR stale_at IS NOT NULL)",
                )?
                .query_map(params![hk], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let v = visible_summaries(tx, &hk, conv, &req.settings)?;
            let shown: HashSet<String> = v
                .semantic
                .into_iter()
                .chain(v.episodic)
                .map(|c| c.memory_id)
                .collect();
            let within = match &req.within_memory_id {
                Some(id) => Some(sources_of(tx, &hk, id)?),
                None => None,
            };
            Ok((units, shown, within, replaced))
        })?;
        let within = match within {
            Some(None) => {
                return Ok(Reply::failed(
                    ReadStatus::Empty,
                    format!(
                        "no summary {:?} in this namespace",
                        req.within_memory_id.as_deref().unwrap_or_default()
                    ),
                    Some(&zone_name),
                ));
            }
            Some(Some(set)) => Some(set),
            None => None,
        };

        // Hard filters.
        let mut candidates: Vec<u32> = Vec::new();
        let mut excluded_visible = 0;
        for (n, doc) in index.docs.iter().enumerate() {
            if !req.cross_conversation && doc.conversation_id != conv {
                continue;
            }
            if !layers.contains(&doc.layer) {
                continue;
            }
            if doc.layer != Layer::Raw && replaced.contains(&doc.id) {
                continue;
            }
            if !req.kind_patterns.is_empty() && !kind_matches(&req.kind_patterns, &doc.kind) {
                continue;
            }
            if doc.layer == Layer::Raw
                && (!req.policy.allows(&doc.kind)
                    || (req.policy.explicit_trace
                        && req.kind_patterns.is_empty()
                        && DispatchPolicy::is_trace(&doc.kind)))
            {
                continue;
            }
            if doc.layer == Layer::Raw
                && by_origin
                && !doc.origin.is_some_and(|o| origins.contains(&o))
            {
                continue;
            }
            if doc.layer == Layer::Semantic
                && !req.memory_facets.is_empty()
                && !doc
                    .facet
                    .as_ref()
                    .is_some_and(|f| req.memory_facets.contains(f))
            {
                continue;
            }
            if let Some(w) = &window
                && !w.admits(doc, zone)
            {
                continue;
            }
            if let Some(set) = &within
                && !set.admits(doc)
            {
                continue;
            }
            if !req.include_visible && doc.conversation_id == conv {
                let shown = match doc.layer {
                    Layer::Raw => visible_units.contains(&doc.unit_seq),
                    _ => visible_summaries.contains(&doc.id),
                };
                if shown {
                    excluded_visible += 1;
                    continue;
                }
            }
            candidates.push(n as u32);
        }

        // Rankings over the candidates.
        let params = Bm25Params::default();
        let mut by_words = index.bm25.scores_within(&query, params, &candidates);
        by_words.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut by_vector: Vec<(u32, f64)> = Vec::new();
        let mut vector_spread = Spread::default();
        let mut warnings = Vec::new();
        if let (Some(e), Some(m)) = (embedder, &model)
            && !candidates.is_empty()
        {
            // The newest candidates first; past the cap, the rest wait for later calls (a long
            // history is embedded over several calls instead of blocking one for seconds).
            let mut missing: Vec<u32> = candidates
                .iter()
                .rev()
                .copied()
                .filter(|d| !index.vectors.contains_key(d))
                .collect();
            if missing.len() > MAX_EMBED_PER_CALL {
                warnings.push(format!(
                    "{} candidates have no vector yet and rank by words only; later calls embed \
                     them ({MAX_EMBED_PER_CALL} per call)",
                    missing.len() - MAX_EMBED_PER_CALL
                ));
                missing.truncate(MAX_EMBED_PER_CALL);
            }
            let mut texts: Vec<&str> = missing
                .iter()
                .map(|&d| index.docs[d as usize].embed_text.as_str())
                .collect();
            let query_text = std::iter::once(req.query.as_str())
                .chain(req.entity_anchors.iter().map(String::as_str))
                .chain(req.topic_terms.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            texts.push(&query_text);
            let embedded = match e.embed(&texts) {
                Ok(v) if v.len() == texts.len() => Ok(v),
                Ok(v) => Err(format!(
                    "the embedder returned {} vectors for {} texts",
                    v.len(),
                    texts.len()
                )),
                Err(m) => Err(m),
            };
            let mut vectors = match embedded {
                Ok(v) => v,
                Err(m) => {
                    warnings.push(format!("embedding failed, ranked by words only: {m}"));
                    Vec::new()
                }
            };
            let query_vector = vectors.pop().unwrap_or_default();
            if !missing.is_empty() && !vectors.is_empty() {
                let stored: Vec<(String, Vec<u8>)> = missing
                    .iter()
                    .zip(&vectors)
                    .map(|(&d, v)| (index.docs[d as usize].id.clone(), encode(v)))
                    .collect();
                // The vectors are a cache: where nothing can be written (read-only, full
                // disk) they are kept in memory only, and the ranking is the same.
                let cached = self.write(|tx| {
                    let mut stmt = tx.prepare_cached(
                        "INSERT OR REPLACE INTO vectors (hard_key, item_id, model, vector) \
                         VALUES (?1, ?2, ?3, ?4)",
                    )?;
                    for (id, blob) in &stored {
                        stmt.execute(params![hk, id, m, blob])?;
                    }
                    Ok(())
                });
                match cached {
                    Err(Error::Unwritable { .. }) if self.read_only().is_some() => {}
                    Err(Error::Unwritable { reason, .. }) => warnings.push(format!(
                        "computed vectors are not saved ({reason}); this process keeps them in \
                         memory"
                    )),
                    other => other?,
                }
                for (d, v) in missing.into_iter().zip(vectors) {
                    index.vectors.insert(d, v);
                }
            }
            for &d in &candidates {
                if let Some(v) = index.vectors.get(&d)
                    && v.len() == query_vector.len()
                {
                    let c = f64::from(cosine(v, &query_vector));
                    vector_spread.add(c);
                    if c > 0.0 {
                        by_vector.push((d, c));
                    }
                }
            }
            by_vector.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let question = coral_score::content_lines(&req.query).nth(1).is_none();
        let coverage = index.bm25.coverage_of(&query, question);
        let fused = fuse(
            &req.fusion,
            &Rankings {
                docs: &index.docs,
                candidates: &candidates,
                by_words: &by_words,
                coverage: &coverage,
                by_vector: &by_vector,
                vector_spread,
                window: soft_window.as_ref(),
                limit,
            },
        );
        let bm25_of: HashMap<u32, f64> = by_words.iter().copied().collect();
        let dense_of: HashMap<u32, f64> = by_vector.iter().copied().collect();

        // The best hits; raw hits of one turn are merged into the first.
        struct Pick {
            doc: u32,
            score: f64,
            also: Vec<String>,
        }
        let mut picks: Vec<Pick> = Vec::new();
        let mut unit_pick: HashMap<(String, i64), usize> = HashMap::new();
        for (doc, score) in fused {
            let d = &index.docs[doc as usize];
            if d.layer == Layer::Raw {
                let key = (d.conversation_id.clone(), d.unit_seq);
                if let Some(&i) = unit_pick.get(&key) {
                    picks[i].also.push(d.id.clone());
                    continue;
                }
                if picks.len() < limit {
                    unit_pick.insert(key, picks.len());
                }
            }
            if picks.len() < limit {
                picks.push(Pick {
                    doc,
                    score,
                    also: Vec::new(),
                });
            }
        }
        // Raw first, each group in fused order (stable sort).
        picks.sort_by_key(|p| index.docs[p.doc as usize].layer != Layer::Raw);

        let docs = &index.docs;
        let mut hits = Vec::with_capacity(picks.len());
        let mut tokens = 0;
        let mut withheld = 0;
        self.read(|tx| {
            for p in &picks {
                let d = &docs[p.doc as usize];
                let hit = match d.layer {
                    Layer::Raw => raw_hit(tx, &hk, d, zone)?,
                    _ => summary_hit(tx, &hk, d, zone)?,
                };
                let Some(mut hit) = hit else { continue };
                if let Some(turn) = hit.turn.as_mut() {
                    withheld += turn.withhold(&req.policy);
                }
                let cost = hit
                    .turn
                    .as_ref()
                    .map_or_else(|| estimate_tokens(&hit.text), |t| t.tokens);
                if req.token_budget > 0 && !hits.is_empty() && tokens + cost > req.token_budget {
                    break;
                }
                tokens += cost;
                hit.rank = hits.len() + 1;
                hit.score = p.score;
                hit.bm25 = bm25_of.get(&p.doc).copied();
                hit.dense = dense_of.get(&p.doc).copied();
                hit.dual_hit = hit.bm25.is_some() && hit.dense.is_some();
                hit.also_matched = p.also.clone();
                hits.push(hit);
            }
            Ok(())
        })?;
        let status = if hits.is_empty() {
            ReadStatus::Empty
        } else {
            ReadStatus::Ok
        };
        let message = hits.is_empty().then(|| {
            if candidates.is_empty() {
                "nothing passes the filters (excluded what the context already shows)".into()
            } else {
                "no candidate matches the query".into()
            }
        });
        let found = Retrieved {
            query_terms: query.terms().to_vec(),
            dense_model: model,
            candidates: candidates.len(),
            excluded_visible,
            tokens,
            warnings,
            withheld,
            hits,
        };
        Ok(Reply::new(status, message, Some(&zone_name), found))
    }
}

fn blank_hit(d: &Doc, zone: Tz) -> RetrieveHit {
    RetrieveHit {
        rank: 0,
        memory_id: d.id.clone(),
        layer: d.layer.name(),
        kind: d.kind.clone(),
        conversation_id: d.conversation_id.clone(),
        timestamp: d.start,
        time: tz::minute_label(d.start, zone),
        date: tz::date_header(d.start, zone),
        time_of_day: Period::of(d.start, zone),
        score: 0.0,
        bm25: None,
        dense: None,
        dual_hit: false,
        text: String::new(),
        summary: None,
        period_start_at: None,
        period_end_at: None,
        turn: None,
        also_matched: Vec::new(),
    }
}

/// A raw hit with its whole unit as the conversation shows it; `None` when the entry is gone or
/// the conversation leaves it out (an unanswered call of an aborted turn).
fn raw_hit(
    tx: &Transaction<'_>,
    hk: &str,
    d: &Doc,
    zone: Tz,
) -> crate::Result<Option<RetrieveHit>> {
    let rows = unit_rows(tx, hk, &d.conversation_id, d.unit_seq)?;
    let Some(row) = rows.iter().find(|r| r.source_id == d.id) else {
        return Ok(None);
    };
    let status = match &rows[0].turn_id {
        Some(t) => turn_status(tx, hk, t)?,
        None => None,
    };
    // What the conversation leaves out is not a hit either.
    if Unanswered::of(&rows, status == Some(TurnStatus::Aborted)).hides(row) {
        return Ok(None);
    }
    let turn = unit_view_of(&rows, status, Projection::Conversation, zone, 0);
    let mut hit = blank_hit(d, zone);
    hit.text = row.visible_text_in(zone).into_owned();
    hit.turn = Some(turn);
    Ok(Some(hit))
}

fn summary_hit(
    tx: &Transaction<'_>,
    hk: &str,
    d: &Doc,
    zone: Tz,
) -> crate::Result<Option<RetrieveHit>> {
    let card = tx
        .prepare_cached(&format!(
            "{SUMMARY_SELECT} WHERE s.hard_key = ?1 AND s.summary_id = ?2"
        ))?
        .query_row(params![hk, d.id], card_from_sql)
        .optional()?;
    let Some(card) = card else { return Ok(None) };
    let mut hit = blank_hit(d, zone);
    hit.text = format!("{}\n{}", card.title, card.body);
    hit.period_start_at = Some(tz::minute_label(card.period_start, zone));
    hit.period_end_at = Some(tz::minute_label(card.period_end, zone));
    hit.summary = Some(card);
    Ok(Some(hit))
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

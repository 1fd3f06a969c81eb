//! `retrieve_for_turn` (SPEC 11): hybrid retrieval over a namespace's raw entries, episodic
//! summaries and semantic memories.
//!
//! Hard filters (hard key, conversation, time window, layers, kinds, facets, a summary's
//! sources, what the context already shows) pick the candidates first. Then two rankings are
//! made over exactly those candidates: BM25 (k1 1.5, b 0.75, corpus statistics of the
//! candidates; NFKC, ASCII words, CJK unigrams and bigrams; entity anchors weighted 3×) and,
//! when an embedder is given, vector cosine. Reciprocal-rank fusion (k = 60) merges them. The
//! best hits are returned raw first, each raw hit with its whole turn.
//!
//! Every hard key has an in-memory index that follows the database: entries and summaries are
//! never rewritten, so each call only reads rows added since the last one (by any process).
//! Vectors are computed the first time a candidate needs one and kept in the `vectors` table,
//! tagged with the embedder's model id.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono_tz::Tz;
use coral_score::{Bm25Index, Bm25Params, Bm25Query, cosine, keyword_terms, rrf};
use rusqlite::{Transaction, params};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::layers::{
    FACETS, LayerSettings, SUMMARY_SELECT, SummaryCard, card_from_sql, floor_of, open_turns,
    visible_summaries,
};
use crate::namespace::Namespace;
use crate::read::{Failure, ReadStatus, UnitView, unit_view, zone_of};
use crate::timeline::{Timeline, Unanswered, unit_rows};
use crate::tz::{self, Period};

/// Reciprocal-rank constant (SPEC 11).
pub const RRF_K: f64 = 60.0;
/// Weight of entity anchors in the BM25 query.
pub const ANCHOR_WEIGHT: f64 = 3.0;
/// Hits returned when no limit is given (MemCore's `retrieval_limit`).
pub const DEFAULT_LIMIT: usize = 6;
/// The most hits one call returns.
pub const MAX_LIMIT: usize = 50;
/// Characters of a query (with its anchors and topics) accepted.
const MAX_QUERY_CHARS: usize = 4_096;
/// Characters of an entry's text that are indexed and embedded.
const INDEXED_CHARS: i64 = 32_768;
const EMBEDDED_CHARS: usize = 2_000;
/// Texts one call embeds at most (about 1.3 s with the int8 MiniLM on 2 cores).
pub const MAX_EMBED_PER_CALL: usize = 1_024;

/// An embedder for retrieval: texts in, one vector each out.
pub trait TextEmbedder: Send + Sync {
    /// Identifies the model; vectors made by another model are recomputed.
    fn model_id(&self) -> String;
    /// One vector per text, all of one dimension.
    fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, String>;
}

/// A time window for retrieval. Give `start_at`/`end_at` (local wall times in the request's
/// zone, or RFC 3339), or `start_ts`/`end_ts` (Unix seconds), or `date_label` (a day) with an
/// optional `time_of_day` (midnight/morning/afternoon/night or 凌晨/上午/下午/晚上).
/// `time_of_day` alone keeps that part of any day.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeHint {
    /// Inclusive start.
    pub start_at: Option<String>,
    /// Exclusive end.
    pub end_at: Option<String>,
    /// `YYYY-MM-DD`.
    pub date_label: Option<String>,
    /// A part of the day.
    pub time_of_day: Option<String>,
    /// Inclusive start, Unix seconds.
    pub start_ts: Option<f64>,
    /// Exclusive end, Unix seconds.
    pub end_ts: Option<f64>,
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

/// A `retrieve_for_turn` answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetrieveResult {
    /// `ok`, `empty`, `invalid_filter` or `unavailable`.
    pub status: ReadStatus,
    /// Why, when not `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Zone of the labels.
    pub timezone: String,
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
    /// The hits: raw first, then summaries, each group best first.
    pub hits: Vec<RetrieveHit>,
}

impl RetrieveResult {
    fn failed(status: ReadStatus, message: String, timezone: &str) -> RetrieveResult {
        RetrieveResult {
            status,
            message: Some(message),
            timezone: timezone.to_string(),
            query_terms: Vec::new(),
            dense_model: None,
            candidates: 0,
            excluded_visible: 0,
            tokens: 0,
            warnings: Vec::new(),
            hits: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Raw,
    Episodic,
    Semantic,
}

impl Layer {
    fn name(self) -> &'static str {
        match self {
            Layer::Raw => "raw",
            Layer::Episodic => "summary",
            Layer::Semantic => "semantic_summary",
        }
    }

    fn parse(s: &str) -> Result<Layer, String> {
        match s {
            "raw" => Ok(Layer::Raw),
            "summary" | "episodic" => Ok(Layer::Episodic),
            "semantic_summary" | "semantic" => Ok(Layer::Semantic),
            other => Err(format!(
                "source layer {other:?} is not raw, summary or semantic_summary"
            )),
        }
    }
}

/// What the index keeps of an entry or a summary.
#[derive(Clone, Debug)]
struct Doc {
    layer: Layer,
    id: String,
    conversation_id: String,
    kind: String,
    /// Raw: its time; summaries: the period.
    start: f64,
    end: f64,
    unit_seq: i64,
    facet: Option<String>,
    /// Raw: `user`, `assistant` or `environment`.
    origin: String,
    /// What is embedded.
    embed_text: String,
}

/// The index of one hard key.
#[derive(Default)]
struct HardKeyIndex {
    docs: Vec<Doc>,
    by_id: HashMap<String, u32>,
    bm25: Bm25Index,
    last_entry_pk: i64,
    last_summary_pk: i64,
    /// Model id whose stored vectors are loaded.
    model: Option<String>,
    vectors: HashMap<u32, Vec<f32>>,
}

/// Hard keys whose indexes stay in memory; beyond it the least recently used one not in use
/// is dropped (and rebuilt from the file if that user comes back).
pub(crate) const CACHED_HARD_KEYS: usize = 64;

/// One hard key's index, locked on its own.
type SharedIndex = Arc<Mutex<HardKeyIndex>>;

/// The per-hard-key indexes of a [`Timeline`].
#[derive(Default)]
pub(crate) struct RetrievalCache {
    /// One lock per hard key, so one user's slow first call (embedding a long history) does
    /// not hold up the others; with the call counter value of its last use.
    indexes: Mutex<HashMap<String, (SharedIndex, u64)>>,
    uses: std::sync::atomic::AtomicU64,
}

impl RetrievalCache {
    /// The index of `hk`, created on first use; evicts the least recently used idle index when
    /// more than [`CACHED_HARD_KEYS`] are held.
    fn slot(&self, hk: &str) -> SharedIndex {
        let tick = self.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut indexes = self.indexes.lock().unwrap_or_else(|e| e.into_inner());
        if !indexes.contains_key(hk) && indexes.len() >= CACHED_HARD_KEYS {
            let idle = indexes
                .iter()
                .filter(|(_, (slot, _))| Arc::strong_count(slot) == 1)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = idle {
                indexes.remove(&k);
            }
        }
        let entry = indexes.entry(hk.to_string()).or_default();
        entry.1 = tick;
        Arc::clone(&entry.0)
    }

    /// Hard keys with an index in memory (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.indexes.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl HardKeyIndex {
    fn push(&mut self, doc: Doc, terms: Vec<String>) {
        let n = self.docs.len() as u32;
        self.by_id.insert(doc.id.clone(), n);
        self.bm25.insert(n, terms);
        self.docs.push(doc);
    }

    /// Read the rows added since the last call.
    fn refresh(&mut self, tx: &Transaction<'_>, hk: &str) -> crate::Result<()> {
        let mut stmt = tx.prepare_cached(
            "SELECT entry_pk, conversation_id, source_id, kind, unit_seq, ts, tool_name, \
             substr(text, 1, ?3), origin FROM entries WHERE hard_key = ?1 AND entry_pk > ?2 \
             ORDER BY entry_pk",
        )?;
        let mut rows = stmt.query(params![hk, self.last_entry_pk, INDEXED_CHARS])?;
        while let Some(r) = rows.next()? {
            let pk: i64 = r.get(0)?;
            let tool: Option<String> = r.get(6)?;
            let text: String = r.get(7)?;
            let mut terms = keyword_terms(&text);
            if let Some(tool) = &tool {
                terms.extend(keyword_terms(tool));
            }
            let ts: f64 = r.get(5)?;
            self.push(
                Doc {
                    layer: Layer::Raw,
                    id: r.get(2)?,
                    conversation_id: r.get(1)?,
                    kind: r.get(3)?,
                    start: ts,
                    end: ts,
                    unit_seq: r.get(4)?,
                    facet: None,
                    origin: r.get(8)?,
                    embed_text: text.chars().take(EMBEDDED_CHARS).collect(),
                },
                terms,
            );
            self.last_entry_pk = pk;
        }
        let mut stmt = tx.prepare_cached(
            "SELECT summary_pk, conversation_id, summary_id, layer, title, hint, body, facet, \
             entity_anchors, topic_terms, period_start, period_end FROM summaries \
             WHERE hard_key = ?1 AND summary_pk > ?2 ORDER BY summary_pk",
        )?;
        let mut rows = stmt.query(params![hk, self.last_summary_pk])?;
        while let Some(r) = rows.next()? {
            let pk: i64 = r.get(0)?;
            let layer: String = r.get(3)?;
            let (title, hint, body): (String, String, String) = (r.get(4)?, r.get(5)?, r.get(6)?);
            let anchors: Vec<String> =
                serde_json::from_str(&r.get::<_, String>(8)?).unwrap_or_default();
            let topics: Vec<String> =
                serde_json::from_str(&r.get::<_, String>(9)?).unwrap_or_default();
            let mut terms = keyword_terms(&title);
            terms.extend(keyword_terms(&body));
            terms.extend(keyword_terms(&hint));
            for t in anchors.iter().chain(&topics) {
                terms.extend(keyword_terms(t));
            }
            let semantic = layer == "semantic";
            self.push(
                Doc {
                    layer: if semantic {
                        Layer::Semantic
                    } else {
                        Layer::Episodic
                    },
                    id: r.get(2)?,
                    conversation_id: r.get(1)?,
                    kind: if semantic {
                        "memory.semantic".into()
                    } else {
                        "memory.episodic".into()
                    },
                    start: r.get(10)?,
                    end: r.get(11)?,
                    unit_seq: -1,
                    facet: r.get(7)?,
                    origin: String::new(),
                    embed_text: format!("{title}\n{body}")
                        .chars()
                        .take(EMBEDDED_CHARS)
                        .collect(),
                },
                terms,
            );
            self.last_summary_pk = pk;
        }
        Ok(())
    }

    /// Load the stored vectors of `model` (once per model).
    fn load_vectors(&mut self, tx: &Transaction<'_>, hk: &str, model: &str) -> crate::Result<()> {
        if self.model.as_deref() == Some(model) {
            return Ok(());
        }
        self.vectors.clear();
        let mut stmt = tx.prepare_cached(
            "SELECT item_id, vector FROM vectors WHERE hard_key = ?1 AND model = ?2",
        )?;
        let mut rows = stmt.query(params![hk, model])?;
        while let Some(r) = rows.next()? {
            let id: String = r.get(0)?;
            let blob: Vec<u8> = r.get(1)?;
            if let Some(&doc) = self.by_id.get(&id) {
                self.vectors.insert(doc, decode(&blob));
            }
        }
        self.model = Some(model.to_string());
        Ok(())
    }
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A parsed time window: `[start, end)` plus an optional part of the day.
struct Window {
    start: f64,
    end: f64,
    period: Option<Period>,
}

impl Window {
    fn admits(&self, doc: &Doc, zone: Tz) -> bool {
        let overlaps = doc.start < self.end && doc.end >= self.start;
        if !overlaps {
            return false;
        }
        match self.period {
            // A summary spans periods; a raw entry has one.
            Some(p) if doc.layer == Layer::Raw => Period::of(doc.start, zone) == p,
            _ => true,
        }
    }
}

fn parse_window(hint: &TimeHint, zone: Tz) -> Result<Option<Window>, String> {
    let period = match hint.time_of_day.as_deref().map(str::trim) {
        Some("") | None => None,
        Some(p) => Some(Period::parse(p)?),
    };
    let strings = hint.start_at.is_some() || hint.end_at.is_some();
    let numbers = hint.start_ts.is_some() || hint.end_ts.is_some();
    let day = hint.date_label.is_some();
    if [strings, numbers, day].iter().filter(|x| **x).count() > 1 {
        return Err("time_hint takes one of start_at/end_at, start_ts/end_ts or date_label".into());
    }
    let (start, end) = if strings {
        let start = match &hint.start_at {
            Some(s) => tz::parse_instant(s, zone)?,
            None => f64::MIN,
        };
        let end = match &hint.end_at {
            Some(s) => tz::parse_instant(s, zone)?,
            None => f64::MAX,
        };
        (start, end)
    } else if numbers {
        for v in [hint.start_ts, hint.end_ts].into_iter().flatten() {
            if !v.is_finite() {
                return Err("time_hint start_ts and end_ts must be finite numbers".into());
            }
        }
        (
            hint.start_ts.unwrap_or(f64::MIN),
            hint.end_ts.unwrap_or(f64::MAX),
        )
    } else if let Some(label) = &hint.date_label {
        let date = tz::parse_date(label)?;
        let next = date
            .succ_opt()
            .ok_or("date_label is past the last supported date")?;
        // The whole day; a part of the day filters raw entries by their local hour.
        (tz::day_start(date, zone), tz::day_start(next, zone))
    } else if period.is_some() {
        (f64::MIN, f64::MAX)
    } else {
        return Ok(None);
    };
    if end <= start {
        return Err("time_hint ends before it starts".into());
    }
    Ok(Some(Window { start, end, period }))
}

/// `tool.*` style patterns: exact, or a prefix ending in `*`.
fn kind_matches(patterns: &[String], kind: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => kind.starts_with(prefix),
        None => kind == p,
    })
}

impl Timeline {
    /// Hybrid retrieval for the current turn. Never fails: problems come back as a status with
    /// a message. `embedder` adds the vector ranking; without it only words rank.
    pub fn retrieve_for_turn(
        &self,
        ns: &Namespace,
        req: &RetrieveRequest,
        embedder: Option<&dyn TextEmbedder>,
    ) -> RetrieveResult {
        let zone_name = req.timezone.clone().unwrap_or_else(|| "UTC".into());
        match self.try_retrieve(ns, req, embedder) {
            Ok(r) => r,
            Err(Failure::Invalid(m)) => {
                RetrieveResult::failed(ReadStatus::InvalidFilter, m, &zone_name)
            }
            Err(Failure::Unavailable(m)) => {
                RetrieveResult::failed(ReadStatus::Unavailable, m, &zone_name)
            }
        }
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
        let mut query = Bm25Query::from_text(&req.query);
        for anchor in &req.entity_anchors {
            query.add_text(anchor, ANCHOR_WEIGHT);
        }
        for topic in &req.topic_terms {
            query.add_text(topic, 1.0);
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
        let mut origins: Vec<&str> = Vec::new();
        for role in &req.about_roles {
            origins.push(match role.as_str() {
                "user" => "user",
                "assistant" => "assistant",
                "external" => "environment",
                "third_party" => "third_party",
                other => {
                    return Err(invalid(format!(
                        "about role {other:?} is not user, assistant, third_party or external"
                    )));
                }
            });
        }
        let window = match &req.time_hint {
            Some(h) => parse_window(h, zone).map_err(invalid)?,
            None => None,
        };
        let hk = ns.hard_key();
        let conv = ns.conversation_id.as_str();
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
            // Memories a newer one reinforced are history: the newer one answers.
            let replaced: HashSet<String> = tx
                .prepare_cached(
                    "SELECT summary_id FROM summaries WHERE hard_key = ?1 \
                     AND superseded_by IS NOT NULL",
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
                return Ok(RetrieveResult::failed(
                    ReadStatus::Empty,
                    format!(
                        "no summary {:?} in this namespace",
                        req.within_memory_id.as_deref().unwrap_or_default()
                    ),
                    &zone_name,
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
                && !origins.is_empty()
                && !origins.contains(&doc.origin.as_str())
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
                    if c > 0.0 {
                        by_vector.push((d, c));
                    }
                }
            }
            by_vector.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let dense_rank: Vec<u32> = by_vector.iter().map(|h| h.0).collect();
        let word_rank: Vec<u32> = by_words.iter().map(|h| h.0).collect();
        let fused = rrf(&[&dense_rank, &word_rank], RRF_K);
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
        self.read(|tx| {
            for p in &picks {
                let d = &docs[p.doc as usize];
                let hit = match d.layer {
                    Layer::Raw => raw_hit(tx, &hk, d, zone)?,
                    _ => summary_hit(tx, &hk, d, zone)?,
                };
                let Some(mut hit) = hit else { continue };
                let cost = hit
                    .turn
                    .as_ref()
                    .map_or_else(|| crate::settle::estimate_tokens(&hit.text), |t| t.tokens);
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
        Ok(RetrieveResult {
            status: if hits.is_empty() {
                ReadStatus::Empty
            } else {
                ReadStatus::Ok
            },
            message: hits.is_empty().then(|| {
                if candidates.is_empty() {
                    "nothing passes the filters (excluded what the context already shows)".into()
                } else {
                    "no candidate matches the query".into()
                }
            }),
            timezone: zone_name,
            query_terms: query.terms().to_vec(),
            dense_model: model,
            candidates: candidates.len(),
            excluded_visible,
            tokens,
            warnings,
            hits,
        })
    }
}

/// The sources a `within_memory_id` admits.
enum Within {
    /// Units of a conversation.
    Units(String, HashSet<i64>),
    /// Summaries by id.
    Summaries(HashSet<String>),
}

impl Within {
    fn admits(&self, doc: &Doc) -> bool {
        match self {
            Within::Units(conv, units) => {
                doc.layer == Layer::Raw
                    && &doc.conversation_id == conv
                    && units.contains(&doc.unit_seq)
            }
            Within::Summaries(ids) => doc.layer != Layer::Raw && ids.contains(&doc.id),
        }
    }
}

fn sources_of(tx: &Transaction<'_>, hk: &str, summary_id: &str) -> crate::Result<Option<Within>> {
    let found: Option<(String, String)> = rusqlite::OptionalExtension::optional(
        tx.prepare_cached(
            "SELECT conversation_id, layer FROM summaries WHERE hard_key = ?1 AND summary_id = ?2",
        )?
        .query_row(params![hk, summary_id], |r| Ok((r.get(0)?, r.get(1)?))),
    )?;
    let Some((conv, layer)) = found else {
        return Ok(None);
    };
    let mut stmt = tx.prepare_cached(
        "SELECT unit_seq, source_summary_id FROM summary_sources WHERE hard_key = ?1 \
         AND summary_id = ?2",
    )?;
    let rows: Vec<(Option<i64>, Option<String>)> = stmt
        .query_map(params![hk, summary_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Some(if layer == "semantic" {
        Within::Summaries(rows.into_iter().filter_map(|r| r.1).collect())
    } else {
        Within::Units(conv, rows.into_iter().filter_map(|r| r.0).collect())
    }))
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
    let turn = unit_view(
        tx,
        hk,
        &rows,
        crate::read::Projection::Conversation,
        zone,
        0,
    )?;
    // What the conversation leaves out is not a hit either.
    if Unanswered::of(&rows, turn.turn_status.as_deref() == Some("aborted")).hides(row) {
        return Ok(None);
    }
    let mut hit = blank_hit(d, zone);
    hit.text = row.visible_text().to_string();
    hit.turn = Some(turn);
    Ok(Some(hit))
}

fn summary_hit(
    tx: &Transaction<'_>,
    hk: &str,
    d: &Doc,
    zone: Tz,
) -> crate::Result<Option<RetrieveHit>> {
    let card = rusqlite::OptionalExtension::optional(
        tx.prepare_cached(&format!(
            "{SUMMARY_SELECT} WHERE s.hard_key = ?1 AND s.summary_id = ?2"
        ))?
        .query_row(params![hk, d.id], card_from_sql),
    )?;
    let Some(card) = card else { return Ok(None) };
    let mut hit = blank_hit(d, zone);
    hit.text = format!("{}\n{}", card.title, card.body);
    hit.period_start_at = Some(tz::minute_label(card.period_start, zone));
    hit.period_end_at = Some(tz::minute_label(card.period_end, zone));
    hit.summary = Some(card);
    Ok(Some(hit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_a_bounded_number_of_users() {
        let cache = RetrievalCache::default();
        let held = cache.slot("in-use");
        for i in 0..(CACHED_HARD_KEYS * 2) {
            cache.slot(&format!("user-{i}"));
            cache.slot("hot");
        }
        assert_eq!(cache.len(), CACHED_HARD_KEYS);
        // The index in use and the one used all the time stayed.
        let indexes = cache.indexes.lock().unwrap();
        assert!(indexes.contains_key("in-use") && indexes.contains_key("hot"));
        assert!(!indexes.contains_key("user-0"));
        drop(indexes);
        drop(held);
    }
}

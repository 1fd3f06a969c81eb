//! `browse_memory` and opening summaries (SPEC 11): the catalogue of episodic summaries and
//! semantic memories in time order, filtered by time and by keywords, and `open_memory` on a
//! summary (`card`, `content`, or `sources`: the turns or summaries it was made from).
//!
//! Keywords match one way: a stored term must contain the keyword (after NFKC and case
//! folding), never the reverse, so `文旅` finds the tag `文旅答辩项目` while
//! `文旅答辩项目延期` finds nothing. The stored term that matched is returned as evidence.

use std::collections::HashMap;

use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;
use serde_json::json;

use crate::cursor;
use crate::layers::{
    SUMMARY_SELECT, SummaryCard, card_from_sql, fold_term, normalize_terms, render_card,
};
use crate::namespace::Namespace;
use crate::read::{
    Failure, OpenRequest, Projection, ReadStatus, TimeRange, UnitView, View, unit_view, window_of,
    zone_of,
};
use crate::timeline::{Timeline, unit_rows};
use crate::tz;

/// Cards per page when none is asked for.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The most cards per page.
pub const MAX_PAGE_SIZE: usize = 200;
/// Sources per page of `open_memory(view = sources)` when none is asked for.
pub const DEFAULT_SOURCES_PAGE: usize = 5;
/// Keywords per request.
const MAX_KEYWORDS: usize = 32;

/// `any` keyword or `all` of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeywordMatch {
    /// At least one keyword matches.
    #[default]
    Any,
    /// Every keyword matches.
    All,
}

impl KeywordMatch {
    /// Parse `any` or `all`.
    pub fn parse(s: &str) -> Result<KeywordMatch, String> {
        match s {
            "any" => Ok(KeywordMatch::Any),
            "all" => Ok(KeywordMatch::All),
            other => Err(format!("keyword_match {other:?} is not any or all")),
        }
    }
}

/// A `browse_memory` request. Give a time (`time_range`, or `date_from` with an optional
/// `date_to`), keywords, or both; with neither, the whole catalogue pages by.
#[derive(Clone, Debug, Default)]
pub struct BrowseRequest {
    /// Keywords a stored term must contain.
    pub keywords: Vec<String>,
    /// Any or all keywords.
    pub keyword_match: KeywordMatch,
    /// A window of local or RFC 3339 times.
    pub time_range: Option<TimeRange>,
    /// First day, `YYYY-MM-DD`.
    pub date_from: Option<String>,
    /// Last day (inclusive).
    pub date_to: Option<String>,
    /// `episodic`, `semantic`; empty means both.
    pub node_types: Vec<String>,
    /// Every conversation of the hard key.
    pub cross_conversation: bool,
    /// Cards per page, 1–200 (0: 20).
    pub page_size: usize,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// IANA zone (default UTC).
    pub timezone: Option<String>,
}

/// Which stored term a keyword matched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeywordHit {
    /// The keyword as given.
    pub query: String,
    /// The stored term containing it.
    pub term: String,
}

/// One catalogue card.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BrowseCard {
    /// `open_memory` takes it.
    pub memory_id: String,
    /// `episodic` or `semantic`.
    pub node_type: &'static str,
    /// Its conversation.
    pub conversation_id: String,
    /// Title.
    pub title: String,
    /// When it helps.
    pub hint: String,
    /// Semantic memories: facet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facet: Option<String>,
    /// Local start of the period it covers.
    pub period_start_at: String,
    /// Local end.
    pub period_end_at: String,
    /// Unix seconds.
    pub period_start_ts: f64,
    /// Unix seconds.
    pub period_end_ts: f64,
    /// Its catalogue terms: its own anchors and topics, and a semantic memory's sources' terms.
    pub terms: Vec<String>,
    /// Evidence: which term each keyword matched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keyword_hits: Vec<KeywordHit>,
    /// Sources it was made from.
    pub source_count: usize,
    /// Episodic: already rolled up into semantic memories.
    pub rolled_up: bool,
    /// The call that reads it.
    pub open: String,
}

/// How much of the requested time the catalogue covers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Coverage {
    /// Requested start (local), if a time was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_start_at: Option<String>,
    /// Requested end (local, exclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_end_at: Option<String>,
    /// Earliest period start among all matching cards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_period_start_at: Option<String>,
    /// Latest period end among them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_period_end_at: Option<String>,
    /// Local days of the request (or of the cards) that some card covers, and how many days.
    pub days_covered: usize,
    /// Days in the requested window (0 without one).
    pub days_requested: usize,
}

/// A `browse_memory` answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BrowseResult {
    /// `ok`, `partial` (more pages), `empty`, `invalid_filter` or `unavailable`.
    pub status: ReadStatus,
    /// Why, when not `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Zone of the labels.
    pub timezone: String,
    /// This page, oldest first.
    pub cards: Vec<BrowseCard>,
    /// Matching cards in all pages.
    pub total: usize,
    /// After this page.
    pub remaining: usize,
    /// Time coverage.
    pub coverage: Coverage,
    /// Pass it back for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl BrowseResult {
    fn failed(status: ReadStatus, message: String, timezone: &str) -> BrowseResult {
        BrowseResult {
            status,
            message: Some(message),
            timezone: timezone.to_string(),
            cards: Vec::new(),
            total: 0,
            remaining: 0,
            coverage: Coverage::default(),
            next_cursor: None,
        }
    }
}

/// For each keyword, the first term of `pool` (in order) that contains it: MemCore's one-way
/// substring match. Keywords that match nothing are left out.
pub fn keyword_hits<S: AsRef<str>, K: AsRef<str>>(pool: &[S], keywords: &[K]) -> Vec<KeywordHit> {
    let folded_pool: Vec<String> = pool.iter().map(|t| fold_term(t.as_ref())).collect();
    keywords
        .iter()
        .filter_map(|k| {
            let needle = fold_term(k.as_ref());
            if needle.is_empty() {
                return None;
            }
            folded_pool
                .iter()
                .position(|t| t.contains(&needle))
                .map(|i| KeywordHit {
                    query: k.as_ref().to_string(),
                    term: pool[i].as_ref().to_string(),
                })
        })
        .collect()
}

/// The sources of a summary, one page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourcesPage {
    /// An episodic summary's turns, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<UnitView>,
    /// A semantic memory's episodic summaries, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<SummaryCard>,
    /// Sources in all pages.
    pub total: usize,
    /// After this page.
    pub remaining: usize,
    /// Pass it back (with the same memory_id) for the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A summary opened by id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpenedSummary {
    /// The view returned.
    pub view: View,
    /// The summary (`content` keeps the body; `card` and `sources` shorten it to a preview).
    pub summary: SummaryCard,
    /// Local period.
    pub period_start_at: String,
    /// Local period end.
    pub period_end_at: String,
    /// The rendered line the context shows (view `content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rendered: Option<String>,
    /// View `sources`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources: Option<SourcesPage>,
}

/// Catalogue terms of every summary of a hard key: own terms, and for semantic memories the
/// terms of the summaries they came from.
fn union_pools(
    tx: &Transaction<'_>,
    hk: &str,
    cards: &[SummaryCard],
) -> crate::Result<HashMap<String, Vec<String>>> {
    let own: HashMap<&str, Vec<String>> = cards
        .iter()
        .map(|c| {
            let mut t = c.entity_anchors.clone();
            t.extend(c.topic_terms.iter().cloned());
            (c.memory_id.as_str(), t)
        })
        .collect();
    let mut stmt = tx.prepare_cached(
        "SELECT summary_id, source_summary_id FROM summary_sources WHERE hard_key = ?1 \
         AND source_summary_id IS NOT NULL ORDER BY summary_id, position",
    )?;
    let mut lineage: HashMap<String, Vec<String>> = HashMap::new();
    for row in stmt.query_map(params![hk], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })? {
        let (summary, source) = row?;
        lineage.entry(summary).or_default().push(source);
    }
    Ok(cards
        .iter()
        .map(|c| {
            let mut terms = own[c.memory_id.as_str()].clone();
            for source in lineage.get(&c.memory_id).into_iter().flatten() {
                if let Some(t) = own.get(source.as_str()) {
                    terms.extend(t.iter().cloned());
                }
            }
            (c.memory_id.clone(), normalize_terms(&terms))
        })
        .collect())
}

impl Timeline {
    /// The catalogue of summaries, oldest first. Never fails: problems come back as a status.
    pub fn browse_memory(&self, ns: &Namespace, req: &BrowseRequest) -> BrowseResult {
        let zone_name = req.timezone.clone().unwrap_or_else(|| "UTC".into());
        match self.try_browse(ns, req) {
            Ok(r) => r,
            Err(Failure::Invalid(m)) => {
                BrowseResult::failed(ReadStatus::InvalidFilter, m, &zone_name)
            }
            Err(Failure::Unavailable(m)) => {
                BrowseResult::failed(ReadStatus::Unavailable, m, &zone_name)
            }
        }
    }

    fn try_browse(&self, ns: &Namespace, req: &BrowseRequest) -> Result<BrowseResult, Failure> {
        ns.validate()?;
        let (zone, zone_name) = zone_of(req.timezone.as_deref())?;
        let invalid = |m: &str| Failure::Invalid(m.to_string());
        let page_size = match req.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n if n > MAX_PAGE_SIZE => return Err(invalid("page_size is at most 200")),
            n => n,
        };
        if req.keywords.len() > MAX_KEYWORDS {
            return Err(invalid("at most 32 keywords"));
        }
        if req.keywords.iter().any(|k| fold_term(k).is_empty()) {
            return Err(invalid("a keyword is empty"));
        }
        let mut layers = Vec::new();
        for t in &req.node_types {
            match t.as_str() {
                "episodic" | "semantic" => layers.push(t.as_str()),
                other => {
                    return Err(Failure::Invalid(format!(
                        "node type {other:?} is not episodic or semantic"
                    )));
                }
            }
        }
        if req.time_range.is_some() && req.date_from.is_some() {
            return Err(invalid("give time_range or date_from / date_to, not both"));
        }
        if req.date_to.is_some() && req.date_from.is_none() {
            return Err(invalid("date_to needs date_from"));
        }
        let window = window_of(
            req.time_range.as_ref(),
            req.date_from.as_deref(),
            req.date_to.as_deref(),
            zone,
        )?;
        let hk = ns.hard_key();
        let scope = (!req.cross_conversation).then_some(ns.conversation_id.as_str());
        let selector = json!({
            "hk": hk, "conversation": scope, "window": window, "layers": layers,
            "keywords": req.keywords, "match": req.keyword_match, "tz": zone_name,
            "page": page_size,
        });
        let digest = cursor::keyed_digest(&self.secret, &selector.to_string());
        // A cursor resumes after the last card shown, by (period start, row), so cards written
        // between pages neither repeat nor push others out.
        let after: Option<(f64, i64)> = match &req.cursor {
            None => None,
            Some(c) => {
                let pos = cursor::open(&self.secret, c).map_err(Failure::Invalid)?;
                if pos["q"].as_str() != Some(digest.as_str()) {
                    return Err(invalid(
                        "cursor belongs to a different query or namespace: repeat the request \
                         that returned it, changing only the cursor",
                    ));
                }
                Some((
                    pos["after"][0].as_f64().unwrap_or(f64::MIN),
                    pos["after"][1].as_i64().unwrap_or(i64::MIN),
                ))
            }
        };
        let (cards, pools) = self.read(|tx| {
            let cards: Vec<SummaryCard> = tx
                .prepare_cached(&format!(
                    "{SUMMARY_SELECT} WHERE s.hard_key = ?1 \
                     AND (?2 IS NULL OR s.conversation_id = ?2) \
                     ORDER BY s.period_start, s.summary_pk"
                ))?
                .query_map(params![hk, scope], card_from_sql)?
                .collect::<rusqlite::Result<_>>()?;
            let pools = union_pools(tx, &hk, &cards)?;
            Ok((cards, pools))
        })?;
        let mut matched: Vec<BrowseCard> = Vec::new();
        let mut keys: Vec<(f64, i64)> = Vec::new();
        for card in cards {
            if !layers.is_empty() && !layers.contains(&card.layer) {
                continue;
            }
            // A memory a newer one reinforced is listed through the newer one.
            if card.superseded_by.is_some() {
                continue;
            }
            if let Some((s, e)) = window
                && !(card.period_start < e && card.period_end >= s)
            {
                continue;
            }
            let terms = pools.get(&card.memory_id).cloned().unwrap_or_default();
            let hits = keyword_hits(&terms, &req.keywords);
            let pass = match req.keyword_match {
                _ if req.keywords.is_empty() => true,
                KeywordMatch::Any => !hits.is_empty(),
                KeywordMatch::All => hits.len() == req.keywords.len(),
            };
            if !pass {
                continue;
            }
            keys.push((card.period_start, card.pk));
            matched.push(BrowseCard {
                open: format!(
                    "open_memory(memory_id=\"{}\", view=\"content\")",
                    card.memory_id
                ),
                node_type: card.layer,
                conversation_id: card.conversation_id,
                title: card.title,
                hint: card.hint,
                facet: card.facet,
                period_start_at: tz::minute_label(card.period_start, zone),
                period_end_at: tz::minute_label(card.period_end, zone),
                period_start_ts: card.period_start,
                period_end_ts: card.period_end,
                terms,
                keyword_hits: hits,
                source_count: card.source_count,
                rolled_up: card.rolled_into.is_some(),
                memory_id: card.memory_id,
            });
        }
        let coverage = coverage(&matched, window, zone);
        let total = matched.len();
        let start = match after {
            None => 0,
            Some((t, pk)) => keys
                .iter()
                .position(|&(kt, kp)| kt.total_cmp(&t).then(kp.cmp(&pk)).is_gt())
                .unwrap_or(keys.len()),
        };
        let page: Vec<BrowseCard> = matched.into_iter().skip(start).take(page_size).collect();
        let shown = start + page.len();
        let remaining = total.saturating_sub(shown);
        let next_cursor = (remaining > 0 && shown > 0).then(|| {
            let (t, pk) = keys[shown - 1];
            cursor::seal(
                &self.secret,
                &json!({"v": 1, "q": digest, "after": [t, pk]}),
            )
        });
        let status = if total == 0 {
            ReadStatus::Empty
        } else if next_cursor.is_some() {
            ReadStatus::Partial
        } else {
            ReadStatus::Ok
        };
        let message = match status {
            ReadStatus::Empty => Some(
                "no summary matches; recent turns may not be summarised yet (read_timeline \
                 reads raw turns by time)"
                    .to_string(),
            ),
            ReadStatus::Partial => Some(format!(
                "{remaining} more card(s); call again with cursor = next_cursor"
            )),
            _ => None,
        };
        Ok(BrowseResult {
            status,
            message,
            timezone: zone_name,
            cards: page,
            total,
            remaining,
            coverage,
            next_cursor,
        })
    }

    /// `open_memory` on a summary id, if it is one in scope (`None`: not a summary here).
    pub(crate) fn open_summary(
        &self,
        ns: &Namespace,
        memory_id: &str,
        req: &OpenRequest,
        zone: Tz,
    ) -> Result<Option<OpenedSummary>, Failure> {
        let hk = ns.hard_key();
        let scope = (!req.cross_conversation).then_some(ns.conversation_id.as_str());
        let page_size = match req.page_size {
            0 => DEFAULT_SOURCES_PAGE,
            n if n > 50 => {
                return Err(Failure::Invalid(
                    "page_size of sources is at most 50".into(),
                ));
            }
            n => n,
        };
        let digest = cursor::keyed_digest(
            &self.secret,
            &json!({"hk": hk, "sources": memory_id, "page": page_size}).to_string(),
        );
        let offset = match (&req.cursor, req.view) {
            (None, _) => 0,
            (Some(c), View::Sources) => {
                let pos = cursor::open(&self.secret, c).map_err(Failure::Invalid)?;
                if pos["q"].as_str() != Some(digest.as_str()) {
                    return Err(Failure::Invalid(
                        "cursor belongs to another memory or namespace".into(),
                    ));
                }
                pos["offset"].as_u64().unwrap_or(0) as usize
            }
            (Some(_), _) => {
                return Err(Failure::Invalid("cursor goes with view=sources".into()));
            }
        };
        Ok(self.read(|tx| {
            let card = tx
                .prepare_cached(&format!(
                    "{SUMMARY_SELECT} WHERE s.hard_key = ?1 AND s.summary_id = ?2 \
                     AND (?3 IS NULL OR s.conversation_id = ?3)"
                ))?
                .query_row(params![hk, memory_id, scope], card_from_sql)
                .optional()?;
            let Some(mut card) = card else {
                return Ok(None);
            };
            let mut opened = OpenedSummary {
                view: req.view,
                period_start_at: tz::minute_label(card.period_start, zone),
                period_end_at: tz::minute_label(card.period_end, zone),
                rendered: None,
                sources: None,
                summary: card.clone(),
            };
            match req.view {
                View::Content => opened.rendered = Some(render_card(&card, zone)),
                View::Card | View::Sources => {
                    card.body = crate::read::preview(&card.body);
                    opened.summary = card.clone();
                }
            }
            if req.view == View::Sources {
                let rows: Vec<(Option<i64>, Option<String>)> = tx
                    .prepare_cached(
                        "SELECT unit_seq, source_summary_id FROM summary_sources \
                         WHERE hard_key = ?1 AND summary_id = ?2 ORDER BY position",
                    )?
                    .query_map(params![hk, memory_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let total = rows.len();
                let mut page = SourcesPage {
                    units: Vec::new(),
                    summaries: Vec::new(),
                    total,
                    remaining: 0,
                    next_cursor: None,
                };
                for (unit, source) in rows.iter().skip(offset).take(page_size) {
                    if let Some(unit) = unit {
                        let rows = unit_rows(tx, &hk, &card.conversation_id, *unit)?;
                        if !rows.is_empty() {
                            page.units.push(unit_view(
                                tx,
                                &hk,
                                &rows,
                                Projection::Conversation,
                                zone,
                                0,
                            )?);
                        }
                    }
                    if let Some(source) = source
                        && let Some(c) = tx
                            .prepare_cached(&format!(
                                "{SUMMARY_SELECT} WHERE s.hard_key = ?1 AND s.summary_id = ?2"
                            ))?
                            .query_row(params![hk, source], card_from_sql)
                            .optional()?
                    {
                        page.summaries.push(c);
                    }
                }
                let shown = total.saturating_sub(offset).min(page_size);
                page.remaining = total.saturating_sub(offset + shown);
                if page.remaining > 0 {
                    page.next_cursor = Some(cursor::seal(
                        &self.secret,
                        &json!({"v": 1, "q": digest, "offset": offset + shown}),
                    ));
                }
                opened.sources = Some(page);
            }
            Ok(Some(opened))
        })?)
    }
}

fn coverage(cards: &[BrowseCard], window: Option<(f64, f64)>, zone: Tz) -> Coverage {
    let mut c = Coverage::default();
    if let Some((s, e)) = window {
        c.requested_start_at = Some(tz::minute_label(s, zone));
        c.requested_end_at = Some(tz::minute_label(e, zone));
    }
    let first = cards
        .iter()
        .map(|c| c.period_start_ts)
        .fold(f64::MAX, f64::min);
    let last = cards
        .iter()
        .map(|c| c.period_end_ts)
        .fold(f64::MIN, f64::max);
    if !cards.is_empty() {
        c.first_period_start_at = Some(tz::minute_label(first, zone));
        c.last_period_end_at = Some(tz::minute_label(last, zone));
    }
    // Days are counted by local date; at most ten years of them.
    let (from, to) = match window {
        Some((s, e)) => (s, e - 1e-3),
        None if !cards.is_empty() => (first, last),
        None => return c,
    };
    let (Ok(d0), Ok(d1)) = (
        tz::parse_date(&tz::date_label(from, zone)),
        tz::parse_date(&tz::date_label(to, zone)),
    ) else {
        return c;
    };
    let days = (d1 - d0).num_days().clamp(0, 3_660) as usize + 1;
    if window.is_some() {
        c.days_requested = days;
    }
    let mut covered = vec![false; days];
    for card in cards {
        let (Ok(a), Ok(b)) = (
            tz::parse_date(&tz::date_label(card.period_start_ts.max(from), zone)),
            tz::parse_date(&tz::date_label(card.period_end_ts.min(to), zone)),
        ) else {
            continue;
        };
        let lo = (a - d0).num_days().max(0) as usize;
        let hi = ((b - d0).num_days().max(-1) + 1) as usize;
        for slot in covered.iter_mut().take(hi.min(days)).skip(lo) {
            *slot = true;
        }
    }
    c.days_covered = covered.iter().filter(|d| **d).count();
    c
}

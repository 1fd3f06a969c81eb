//! `browse_memory`: the catalogue of episodic summaries and semantic memories in time order,
//! filtered by time and by keywords, with how much of the asked time it covers.
//!
//! Keywords match one way: a stored term must contain the keyword (after NFKC and case
//! folding), never the reverse, so `文旅` finds the tag `文旅答辩项目` while
//! `文旅答辩项目延期` finds nothing. The stored term that matched is returned as evidence.

use std::collections::HashMap;

use chrono_tz::Tz;
use rusqlite::{Transaction, params};
use serde::Serialize;
use serde_json::json;

use crate::cursor;
use crate::layers::{SummaryCard, SummaryLayer};
use crate::namespace::Namespace;
use crate::read::{TimeRange, window_of};
use crate::reply::{Failure, ReadStatus, Reply, zone_of};
use crate::summaries::{SUMMARY_SELECT, card_from_sql};
use crate::terms::{KeywordHit, fold_term, keyword_hits, normalize_terms};
use crate::timeline::Timeline;
use crate::tz;

/// Cards per page when none is asked for.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The most cards per page.
pub const MAX_PAGE_SIZE: usize = 200;
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

/// One page of `browse_memory`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BrowsePage {
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

/// A `browse_memory` answer: `ok`, `partial` (more pages), `empty`, `invalid_filter` or
/// `unavailable`.
pub type BrowseResult = Reply<BrowsePage>;

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
        let zone_name = req.timezone.as_deref().unwrap_or("UTC");
        Reply::or_failed(self.try_browse(ns, req), Some(zone_name))
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
            match SummaryLayer::parse(t) {
                Some(layer) => layers.push(layer),
                None => {
                    return Err(Failure::Invalid(format!(
                        "node type {t:?} is not episodic or semantic"
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
            // A memory a newer one reinforced is listed through the newer one; one made from
            // something since forgotten is not listed.
            if card.superseded_by.is_some() || card.stale {
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
                node_type: card.layer.as_str(),
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
        let page = BrowsePage {
            cards: page,
            total,
            remaining,
            coverage,
            next_cursor,
        };
        Ok(Reply::new(status, message, Some(&zone_name), page))
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

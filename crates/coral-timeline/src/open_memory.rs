//! `open_memory`: one entry or summary by id, as its card, its exact content, or (summaries)
//! its sources page by page.

use chrono_tz::Tz;
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cursor;
use crate::layers::SummaryCard;
use crate::namespace::{Namespace, check_id};
use crate::policy::DispatchPolicy;
use crate::read::{Projection, UnitView, unit_view};
use crate::render::render_card;
use crate::reply::{Failure, ReadStatus, Reply, zone_of};
use crate::rows::{find_row, turn_status, unit_rows};
use crate::summaries::{SUMMARY_SELECT, card_from_sql};
use crate::timeline::Timeline;
use crate::tz;

/// Which view `open_memory` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    /// What it is: kind, time, sizes, hash, and its reload card or a preview.
    #[default]
    Card,
    /// The stored text.
    Content,
    /// A summary's sources: the turns (episodic) or summaries (semantic) it was made from,
    /// paged.
    Sources,
}

impl View {
    /// Parse `card`, `content` or `sources`.
    pub fn parse(s: &str) -> Result<View, String> {
        match s {
            "card" => Ok(View::Card),
            "content" => Ok(View::Content),
            "sources" => Ok(View::Sources),
            other => Err(format!("view {other:?} is not card, content or sources")),
        }
    }
}

/// How much content `open_memory` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// The exact stored body.
    #[default]
    Full,
    /// What the conversation shows (the card of a folded result).
    Compact,
}

/// How to open a memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpenRequest {
    /// Card or content.
    pub view: View,
    /// Full or compact content.
    pub detail: Detail,
    /// Allow ids from other conversations of the same hard key.
    pub cross_conversation: bool,
    /// IANA time zone of the `time` label (default `UTC`).
    pub timezone: Option<String>,
    /// View `sources`: sources per page (0: 5, at most 50).
    pub page_size: usize,
    /// View `sources`: `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// The operator's policy: an entry of a kind it does not allow is `denied`, and withheld
    /// in a summary's sources.
    pub policy: DispatchPolicy,
}

/// One entry opened by id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpenedMemory {
    /// The id asked for.
    pub memory_id: String,
    /// The view returned.
    pub view: View,
    /// Its conversation.
    pub conversation_id: String,
    /// Its turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The turn's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_status: Option<String>,
    /// Kind.
    pub kind: String,
    /// Origin.
    pub origin: String,
    /// Turn role.
    pub turn_role: String,
    /// Correlation id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// Tool name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Result status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Unix seconds.
    pub timestamp: f64,
    /// Local time.
    pub time: String,
    /// Characters stored.
    pub stored_chars: i64,
    /// UTF-8 bytes stored.
    pub stored_utf8_bytes: i64,
    /// `sha256:<hex>` of the stored text.
    pub result_hash: String,
    /// Settlement class, once settled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settlement: Option<String>,
    /// Whether the conversation shows its card instead of the body.
    pub folded: bool,
    /// Its body was forgotten: what is shown is the tombstone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forgotten: bool,
    /// The structured payload stored with the entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// The reload card (view `card`, folded results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
    /// The first 200 characters (view `card`, anything not folded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// The text (view `content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// Sources per page of `open_memory(view = sources)` when none is asked for.
pub const DEFAULT_SOURCES_PAGE: usize = 5;

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

/// What `open_memory` found: a timeline entry or a summary (at most one of them).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Opened {
    /// The memory, when it is a timeline entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<OpenedMemory>,
    /// The memory, when it is a summary or semantic memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<OpenedSummary>,
}

/// The answer of `open_memory`: `ok`, `empty` (no such id here), `invalid_filter` or
/// `unavailable`.
pub type OpenResult = Reply<Opened>;

impl Timeline {
    /// Open one entry by id (`memory_id` is its source id). Never fails: problems come back
    /// as a status with a message.
    pub fn open_memory(&self, ns: &Namespace, memory_id: &str, req: &OpenRequest) -> OpenResult {
        let zone_name = req.timezone.as_deref().unwrap_or("UTC");
        Reply::or_failed(self.try_open(ns, memory_id, req), Some(zone_name))
    }

    fn try_open(
        &self,
        ns: &Namespace,
        memory_id: &str,
        req: &OpenRequest,
    ) -> Result<OpenResult, Failure> {
        ns.validate()
            .and_then(|_| check_id("memory_id", memory_id))
            .map_err(|e| Failure::Invalid(e.to_string()))?;
        let (zone, zone_name) = zone_of(req.timezone.as_deref())?;
        let zone_name = Some(zone_name.as_str());
        if let Some(summary) = self.open_summary(ns, memory_id, req, zone)? {
            let opened = Opened {
                memory: None,
                summary: Some(summary),
            };
            return Ok(Reply::new(ReadStatus::Ok, None, zone_name, opened));
        }
        if req.view == View::Sources {
            return Err(Failure::Invalid(format!(
                "{memory_id:?} is not a summary here; view=sources opens the sources of a \
                 summary (browse_memory lists them), and an entry's text is view=content"
            )));
        }
        let hk = ns.hard_key();
        let scope = (!req.cross_conversation).then_some(ns.conversation_id.as_str());
        let found = self
            .read(|tx| {
                let Some(row) = find_row(tx, &hk, memory_id, scope)? else {
                    return Ok(None);
                };
                let status = match &row.turn_id {
                    Some(t) => turn_status(tx, &hk, t)?,
                    None => None,
                };
                Ok(Some((row, status)))
            })
            .map_err(|e| Failure::Unavailable(e.to_string()))?;
        let Some((row, turn_status)) = found else {
            let message = format!(
                "no memory {memory_id:?} in {}; ids of other namespaces are never visible",
                if scope.is_some() {
                    "this conversation (cross_conversation=true widens to the namespace)"
                } else {
                    "this namespace"
                }
            );
            return Ok(Reply::failed(ReadStatus::Empty, message, zone_name));
        };
        if !req.policy.allows(&row.kind) {
            let message = format!(
                "{memory_id:?} is a {} entry, which this server's dispatch policy withholds",
                row.kind
            );
            return Ok(Reply::failed(ReadStatus::Denied, message, zone_name));
        }
        let folded = row.folded();
        let (card, preview, content) = match req.view {
            View::Card if folded => (Some(row.visible_text_in(zone).into_owned()), None, None),
            View::Card => (None, Some(preview(&row.text)), None),
            View::Sources => (None, None, None),
            View::Content => {
                let text = match req.detail {
                    Detail::Full => row.text.clone(),
                    Detail::Compact => row.visible_text_in(zone).into_owned(),
                };
                (None, None, Some(text))
            }
        };
        let memory = OpenedMemory {
            memory_id: memory_id.to_string(),
            view: req.view,
            conversation_id: row.conversation_id,
            turn_id: row.turn_id,
            turn_status: turn_status.map(|s| s.as_str().to_string()),
            kind: row.kind,
            origin: row.origin.as_str().to_string(),
            turn_role: row.turn_role.as_str().to_string(),
            correlation_id: row.correlation_id,
            tool_name: row.tool_name,
            status: row.status,
            timestamp: row.ts,
            time: tz::minute_label(row.ts, zone),
            stored_chars: row.chars,
            stored_utf8_bytes: row.bytes,
            result_hash: format!("sha256:{}", row.sha256),
            settlement: row.settlement.map(|c| c.as_str().to_string()),
            folded,
            forgotten: row.forgotten,
            payload: row
                .payload
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok()),
            card,
            preview,
            content,
        };
        let opened = Opened {
            memory: Some(memory),
            summary: None,
        };
        Ok(Reply::new(ReadStatus::Ok, None, zone_name, opened))
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
                    card.body = preview(&card.body);
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
                            let mut unit =
                                unit_view(tx, &hk, &rows, Projection::Conversation, zone, 0)?;
                            unit.withhold(&req.policy);
                            page.units.push(unit);
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

/// The first 200 characters of `text` on one line (`coral_base::preview`).
pub(crate) fn preview(text: &str) -> String {
    coral_base::preview(text, 200).0
}

//! `read_timeline`: whole turns back by time range, by dates with time-of-day periods, or
//! around an anchor, paged within a token budget behind signed cursors.

use std::cmp::Ordering;

use chrono_tz::Tz;
use rusqlite::{Transaction, params};
use serde::Serialize;
use serde_json::json;

use crate::cursor;
use crate::namespace::{Namespace, check_id};
use crate::policy::{DispatchPolicy, WITHHELD_TEXT};
use crate::reply::{Failure, ReadStatus, Reply, zone_of};
use crate::rows::{Row, find_row, turn_status, unit_rows};
use crate::timeline::Timeline;
use crate::turn::TurnStatus;
use crate::tz::{self, Period};

/// Most turns `before_turns` / `after_turns` may ask for.
pub const MAX_ANCHOR_TURNS: u32 = 50;

/// Turns on each side of an anchor when not given.
pub const DEFAULT_ANCHOR_TURNS: u32 = 2;

/// Which text of a tool result to show.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Projection {
    /// As the model sees the conversation: settled long results as their reload cards.
    #[default]
    Conversation,
    /// Every body in full.
    Full,
}

impl Projection {
    /// Parse `conversation` or `full`.
    pub fn parse(s: &str) -> Result<Projection, String> {
        match s {
            "conversation" => Ok(Projection::Conversation),
            "full" => Ok(Projection::Full),
            other => Err(format!("projection {other:?} is not conversation or full")),
        }
    }
}

/// A range of time, as RFC 3339 instants or local wall times in the request's zone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeRange {
    /// Start, inclusive.
    pub start_at: String,
    /// End, exclusive.
    pub end_at: String,
}

/// What to read. Give exactly one of `time_range`, `date_from` (with optional `date_to` and
/// `time_periods`) or `anchor_source_id` (with optional `before_turns` / `after_turns`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadRequest {
    /// Exact time range.
    pub time_range: Option<TimeRange>,
    /// First local date, `YYYY-MM-DD`.
    pub date_from: Option<String>,
    /// Last local date, inclusive (default `date_from`).
    pub date_to: Option<String>,
    /// Parts of the day: morning/上午, afternoon/下午, night/晚上, midnight/凌晨.
    pub time_periods: Vec<String>,
    /// An entry id: read the turns around it.
    pub anchor_source_id: Option<String>,
    /// Turns before the anchor's (default 2).
    pub before_turns: Option<u32>,
    /// Turns after the anchor's (default 2).
    pub after_turns: Option<u32>,
    /// Read every conversation of the namespace's hard key, not just its conversation.
    pub cross_conversation: bool,
    /// Cards or full bodies.
    pub projection: Projection,
    /// Most estimated tokens per page (0: no limit). A page always holds whole turns, and at
    /// least one even when that one is larger.
    pub page_token_budget: u64,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// IANA time zone for dates, periods, local times and labels (default `UTC`).
    pub timezone: Option<String>,
    /// The operator's policy: entries of kinds it does not allow are withheld.
    pub policy: DispatchPolicy,
}

/// One entry as read back.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EntryView {
    /// Its id (for `open_memory`).
    pub source_id: String,
    /// Position in its conversation.
    pub seq_no: i64,
    /// Kind.
    pub kind: String,
    /// user / assistant / environment.
    pub origin: String,
    /// stimulus / action / observation / final / none.
    pub turn_role: String,
    /// Local time, `2026-04-10 08:00`.
    pub time: String,
    /// Unix seconds.
    pub timestamp: f64,
    /// Actor tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Correlation id of a call or result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// Tool of a call or result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Status of a result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// True when `text` is the reload card, not the body.
    pub folded: bool,
    /// True when the body was forgotten (`text` is the tombstone).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forgotten: bool,
    /// True when the server's dispatch policy withholds it (`text` says so).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub withheld: bool,
    /// The text shown.
    pub text: String,
}

/// One turn (or standalone entry) as read back: always whole.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnitView {
    /// Its conversation.
    pub conversation_id: String,
    /// The turn, or none for a standalone entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// open / completed / aborted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_status: Option<String>,
    /// `[日期 2026-04-10 周五]` of its start.
    pub date: String,
    /// Local start time.
    pub started_at: String,
    /// Part of the day it started in.
    pub time_of_day: Period,
    /// The same in Chinese.
    pub time_of_day_zh: &'static str,
    /// Estimated tokens of its shown texts.
    pub tokens: u64,
    /// True when this unit alone is larger than the page budget (it is still whole).
    pub over_budget: bool,
    /// Its entries in order.
    pub entries: Vec<EntryView>,
}

/// One page of `read_timeline`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TimelinePage {
    /// This page.
    pub units: Vec<UnitView>,
    /// Estimated tokens of this page.
    pub page_tokens: u64,
    /// Units matching the request in total.
    pub total_units: usize,
    /// Units after this page.
    pub remaining_units: usize,
    /// Pass as `cursor` for the next page (same request otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Entries on this page the server's dispatch policy withholds.
    #[serde(skip_serializing_if = "is_zero")]
    pub withheld: usize,
}

pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl UnitView {
    /// Withhold the entries `policy` does not allow; how many there were.
    pub(crate) fn withhold(&mut self, policy: &DispatchPolicy) -> usize {
        let mut n = 0;
        for e in &mut self.entries {
            if !policy.allows(&e.kind) {
                e.text = WITHHELD_TEXT.to_string();
                e.folded = false;
                e.withheld = true;
                n += 1;
            }
        }
        n
    }
}

/// The answer of `read_timeline`.
pub type ReadResult = Reply<TimelinePage>;

enum Mode {
    Range {
        start: f64,
        end: f64,
        periods: Option<Vec<Period>>,
    },
    Anchor {
        source_id: String,
        before: u32,
        after: u32,
    },
}

/// A unit's place in the reading order: start time (0 in anchor mode, which orders by
/// position), conversation, first sequence number.
#[derive(Clone, Debug, PartialEq)]
struct Key {
    ts: f64,
    conversation_id: String,
    unit_seq: i64,
}

impl Key {
    fn cmp(&self, other: &Key) -> Ordering {
        self.ts
            .total_cmp(&other.ts)
            .then_with(|| self.conversation_id.cmp(&other.conversation_id))
            .then_with(|| self.unit_seq.cmp(&other.unit_seq))
    }
}

/// The window `[start, end)` of an exact `time_range` (local or RFC 3339 times in `zone`), or
/// of whole local days `date_from` to `date_to` (inclusive; `date_to` defaults to `date_from`);
/// `None` when neither is given. Giving both is the caller's to refuse.
pub(crate) fn window_of(
    time_range: Option<&TimeRange>,
    date_from: Option<&str>,
    date_to: Option<&str>,
    zone: Tz,
) -> Result<Option<(f64, f64)>, Failure> {
    if let Some(range) = time_range {
        let start = tz::parse_instant(&range.start_at, zone).map_err(Failure::Invalid)?;
        let end = tz::parse_instant(&range.end_at, zone).map_err(Failure::Invalid)?;
        if end <= start {
            return Err(Failure::Invalid(
                "time_range.end_at must be after start_at".into(),
            ));
        }
        return Ok(Some((start, end)));
    }
    let Some(from) = date_from else {
        return Ok(None);
    };
    let from = tz::parse_date(from).map_err(Failure::Invalid)?;
    let to = match date_to {
        Some(to) => tz::parse_date(to).map_err(Failure::Invalid)?,
        None => from,
    };
    if to < from {
        return Err(Failure::Invalid("date_to is before date_from".into()));
    }
    let end = to.succ_opt().ok_or(Failure::Invalid(
        "date_to is past the last supported date".into(),
    ))?;
    Ok(Some((tz::day_start(from, zone), tz::day_start(end, zone))))
}

fn parse_mode(req: &ReadRequest, zone: Tz) -> Result<Mode, Failure> {
    let modes = [
        req.time_range.is_some(),
        req.date_from.is_some(),
        req.anchor_source_id.is_some(),
    ]
    .iter()
    .filter(|m| **m)
    .count();
    let invalid = |m: &str| Err(Failure::Invalid(m.to_string()));
    if req.date_to.is_some() && req.date_from.is_none() {
        return invalid("date_to needs date_from");
    }
    if !req.time_periods.is_empty() && req.date_from.is_none() {
        return invalid("time_periods go with date_from / date_to");
    }
    if (req.before_turns.is_some() || req.after_turns.is_some()) && req.anchor_source_id.is_none() {
        return invalid("before_turns and after_turns go with anchor_source_id");
    }
    if modes == 0 {
        return invalid(
            "give one of time_range {start_at, end_at}, date_from (with date_to and \
             time_periods), or anchor_source_id (with before_turns / after_turns)",
        );
    }
    if modes > 1 {
        return invalid(
            "time_range, date_from and anchor_source_id are separate ways to read; give only one",
        );
    }
    if req.time_range.is_some() {
        let (start, end) =
            window_of(req.time_range.as_ref(), None, None, zone)?.unwrap_or_default();
        return Ok(Mode::Range {
            start,
            end,
            periods: None,
        });
    }
    if req.date_from.is_some() {
        let (start, end) = window_of(None, req.date_from.as_deref(), req.date_to.as_deref(), zone)?
            .unwrap_or_default();
        let periods = if req.time_periods.is_empty() {
            None
        } else {
            let mut ps = req
                .time_periods
                .iter()
                .map(|p| Period::parse(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(Failure::Invalid)?;
            ps.sort_by_key(|p| *p as u8);
            ps.dedup();
            Some(ps)
        };
        return Ok(Mode::Range {
            start,
            end,
            periods,
        });
    }
    let source_id = req.anchor_source_id.clone().unwrap_or_default();
    check_id("anchor_source_id", &source_id).map_err(Failure::from)?;
    let before = req.before_turns.unwrap_or(DEFAULT_ANCHOR_TURNS);
    let after = req.after_turns.unwrap_or(DEFAULT_ANCHOR_TURNS);
    if before > MAX_ANCHOR_TURNS || after > MAX_ANCHOR_TURNS {
        return invalid("before_turns and after_turns are at most 50");
    }
    Ok(Mode::Anchor {
        source_id,
        before,
        after,
    })
}

impl Timeline {
    /// Read whole turns back by time or around an anchor. Never fails: problems come back as
    /// a status with a message.
    pub fn read_timeline(&self, ns: &Namespace, req: &ReadRequest) -> ReadResult {
        let zone_name = req.timezone.as_deref().unwrap_or("UTC");
        Reply::or_failed(self.try_read(ns, req), Some(zone_name))
    }

    fn try_read(&self, ns: &Namespace, req: &ReadRequest) -> Result<ReadResult, Failure> {
        ns.validate()?;
        let (zone, zone_name) = zone_of(req.timezone.as_deref())?;
        let mode = parse_mode(req, zone)?;
        let hk = ns.hard_key();
        let scope = (!req.cross_conversation).then_some(ns.conversation_id.as_str());
        // Binds a cursor to everything that shapes the pages, the namespace included.
        let selector = json!({
            "hk": hk,
            "conversation": scope,
            "mode": match &mode {
                Mode::Range { start, end, periods } => json!({
                    "start": start, "end": end,
                    "periods": periods.as_ref().map(|p| p.iter().map(|x| x.as_str()).collect::<Vec<_>>()),
                }),
                Mode::Anchor { source_id, before, after } => json!({
                    "anchor": source_id, "before": before, "after": after,
                }),
            },
            "tz": zone_name,
            "projection": req.projection,
            "budget": req.page_token_budget,
        });
        let query_digest = cursor::keyed_digest(&self.secret, &selector.to_string());
        let after = match &req.cursor {
            None => None,
            Some(c) => {
                let pos = cursor::open(&self.secret, c).map_err(Failure::Invalid)?;
                if pos["q"].as_str() != Some(query_digest.as_str()) {
                    return Err(Failure::Invalid(
                        "cursor belongs to a different query or namespace: repeat the request \
                         that returned it, changing only the cursor"
                            .into(),
                    ));
                }
                Some(Key {
                    ts: pos["after"][0].as_f64().unwrap_or(0.0),
                    conversation_id: pos["after"][1].as_str().unwrap_or("").to_string(),
                    unit_seq: pos["after"][2].as_i64().unwrap_or(0),
                })
            }
        };
        let budget = req.page_token_budget;
        self.read(|tx| {
            let keys = match &mode {
                Mode::Range {
                    start,
                    end,
                    periods,
                } => range_keys(tx, &hk, scope, *start, *end, periods.as_deref(), zone)?,
                Mode::Anchor {
                    source_id,
                    before,
                    after,
                } => match anchor_keys(tx, &hk, scope, source_id, *before, *after)? {
                    Some(keys) => keys,
                    None => {
                        return Ok(Err(format!(
                            "no entry {source_id:?} in {}; ids of other namespaces are never \
                             visible",
                            if scope.is_some() {
                                "this conversation (cross_conversation=true widens to the \
                                 namespace)"
                            } else {
                                "this namespace"
                            }
                        )));
                    }
                },
            };
            Ok(Ok(self.page(
                tx,
                &hk,
                keys,
                after,
                budget,
                req.projection,
                zone,
                &zone_name,
                &query_digest,
                &req.policy,
            )?))
        })
        .map_err(Failure::from)?
        .or_else(|message| Ok(Reply::failed(ReadStatus::Empty, message, Some(&zone_name))))
    }

    #[allow(clippy::too_many_arguments)]
    fn page(
        &self,
        tx: &Transaction<'_>,
        hk: &str,
        keys: Vec<Key>,
        after: Option<Key>,
        budget: u64,
        projection: Projection,
        zone: Tz,
        zone_name: &str,
        query_digest: &str,
        policy: &DispatchPolicy,
    ) -> crate::error::Result<ReadResult> {
        let total = keys.len();
        let pending: Vec<Key> = match &after {
            Some(a) => keys
                .into_iter()
                .filter(|k| k.cmp(a) == Ordering::Greater)
                .collect(),
            None => keys,
        };
        let mut units = Vec::new();
        let mut withheld = 0;
        let mut page_tokens = 0u64;
        let mut last: Option<&Key> = None;
        for key in &pending {
            let rows = unit_rows(tx, hk, &key.conversation_id, key.unit_seq)?;
            if rows.is_empty() {
                continue;
            }
            let mut unit = unit_view(tx, hk, &rows, projection, zone, budget)?;
            if budget > 0 && !units.is_empty() && page_tokens + unit.tokens > budget {
                break;
            }
            withheld += unit.withhold(policy);
            page_tokens += unit.tokens;
            units.push(unit);
            last = Some(key);
        }
        let consumed = last.map_or(0, |l| pending.iter().take_while(|k| *k != l).count() + 1);
        let remaining = pending.len() - consumed;
        let next_cursor = match (remaining, last) {
            (0, _) | (_, None) => None,
            (_, Some(l)) => Some(cursor::seal(
                &self.secret,
                &json!({"v": 1, "q": query_digest, "after": [l.ts, l.conversation_id, l.unit_seq]}),
            )),
        };
        let status = if total == 0 {
            ReadStatus::Empty
        } else if next_cursor.is_some() {
            ReadStatus::Partial
        } else {
            ReadStatus::Ok
        };
        let message = match status {
            ReadStatus::Empty => Some("nothing was recorded in that time or scope".into()),
            ReadStatus::Partial => Some(format!(
                "{remaining} more turn(s) match; call again with cursor = next_cursor"
            )),
            _ => None,
        };
        Ok(Reply::new(
            status,
            message,
            Some(zone_name),
            TimelinePage {
                units,
                page_tokens,
                total_units: total,
                remaining_units: remaining,
                next_cursor,
                withheld,
            },
        ))
    }
}

fn range_keys(
    tx: &Transaction<'_>,
    hk: &str,
    scope: Option<&str>,
    start: f64,
    end: f64,
    periods: Option<&[Period]>,
    zone: Tz,
) -> crate::error::Result<Vec<Key>> {
    let mut stmt = tx.prepare_cached(
        "SELECT unit_ts, conversation_id, unit_seq, ts FROM entries WHERE hard_key = ?1 \
         AND ts >= ?2 AND ts < ?3 AND (?4 IS NULL OR conversation_id = ?4)",
    )?;
    let mut keys: Vec<Key> = stmt
        .query_map(params![hk, start, end, scope], |r| {
            Ok((
                Key {
                    ts: r.get(0)?,
                    conversation_id: r.get(1)?,
                    unit_seq: r.get(2)?,
                },
                r.get::<_, f64>(3)?,
            ))
        })?
        .filter_map(|row| match row {
            Ok((key, ts)) => match periods {
                Some(ps) if !ps.contains(&Period::of(ts, zone)) => None,
                _ => Some(Ok(key)),
            },
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<_>>()?;
    keys.sort_by(Key::cmp);
    keys.dedup();
    Ok(keys)
}

/// The anchor's unit with up to `before` units before and `after` after it, in conversation
/// order; `None` when the anchor is not in scope.
fn anchor_keys(
    tx: &Transaction<'_>,
    hk: &str,
    scope: Option<&str>,
    source_id: &str,
    before: u32,
    after: u32,
) -> crate::error::Result<Option<Vec<Key>>> {
    let Some(anchor) = find_row(tx, hk, source_id, scope)? else {
        return Ok(None);
    };
    let conv = anchor.conversation_id.clone();
    let seqs = |sql: &str, limit: u32| -> crate::error::Result<Vec<i64>> {
        let mut stmt = tx.prepare_cached(sql)?;
        let v = stmt
            .query_map(params![hk, conv, anchor.unit_seq, limit], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        Ok(v)
    };
    let mut units = seqs(
        "SELECT DISTINCT unit_seq FROM entries WHERE hard_key = ?1 AND conversation_id = ?2 \
         AND unit_seq < ?3 ORDER BY unit_seq DESC LIMIT ?4",
        before,
    )?;
    units.reverse();
    units.push(anchor.unit_seq);
    units.extend(seqs(
        "SELECT DISTINCT unit_seq FROM entries WHERE hard_key = ?1 AND conversation_id = ?2 \
         AND unit_seq > ?3 ORDER BY unit_seq LIMIT ?4",
        after,
    )?);
    Ok(Some(
        units
            .into_iter()
            .map(|unit_seq| Key {
                ts: 0.0,
                conversation_id: conv.clone(),
                unit_seq,
            })
            .collect(),
    ))
}

/// The unit of `rows` (one unit's entries, in order, at least one) as read back, with its
/// turn's status looked up.
pub(crate) fn unit_view(
    tx: &Transaction<'_>,
    hk: &str,
    rows: &[Row],
    projection: Projection,
    zone: Tz,
    budget: u64,
) -> crate::error::Result<UnitView> {
    let status = match &rows[0].turn_id {
        Some(t) => turn_status(tx, hk, t)?,
        None => None,
    };
    Ok(unit_view_of(rows, status, projection, zone, budget))
}

/// The unit of `rows` as read back, its turn's `status` given (`None`: a standalone entry).
pub(crate) fn unit_view_of(
    rows: &[Row],
    status: Option<TurnStatus>,
    projection: Projection,
    zone: Tz,
    budget: u64,
) -> UnitView {
    let first = &rows[0];
    let mut tokens = 0;
    let entries: Vec<EntryView> = rows
        .iter()
        .map(|r| {
            let folded = projection == Projection::Conversation && r.folded();
            tokens += if folded {
                r.visible_tokens()
            } else {
                r.tokens as u64
            };
            EntryView {
                source_id: r.source_id.clone(),
                seq_no: r.seq_no,
                kind: r.kind.clone(),
                origin: r.origin.as_str().to_string(),
                turn_role: r.turn_role.as_str().to_string(),
                time: tz::minute_label(r.ts, zone),
                timestamp: r.ts,
                actor: r.actor.clone(),
                correlation_id: r.correlation_id.clone(),
                tool_name: r.tool_name.clone(),
                status: r.status.clone(),
                folded,
                forgotten: r.forgotten,
                withheld: false,
                text: if folded {
                    r.visible_text_in(zone).into_owned()
                } else {
                    r.text.clone()
                },
            }
        })
        .collect();
    let period = Period::of(first.unit_ts, zone);
    UnitView {
        conversation_id: first.conversation_id.clone(),
        turn_id: first.turn_id.clone(),
        turn_status: status.map(|s| s.as_str().to_string()),
        date: tz::date_header(first.unit_ts, zone),
        started_at: tz::minute_label(first.unit_ts, zone),
        time_of_day: period,
        time_of_day_zh: period.zh(),
        tokens,
        over_budget: budget > 0 && tokens > budget,
        entries,
    }
}

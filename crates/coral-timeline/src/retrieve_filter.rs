//! `retrieve_for_turn`'s hard filters that need parsing: the time hint (`TimeHint`, a window
//! with an optional part of the day), kind patterns, and the sources of one summary.

use std::collections::HashSet;

use chrono_tz::Tz;
use rusqlite::{OptionalExtension, Transaction, params};
use serde::{Deserialize, Serialize};

use crate::error::{Result, unknown_value};
use crate::index::{Doc, Layer};
use crate::layers::SummaryLayer;
use crate::tz::{self, Period};

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

/// A parsed time window: `[start, end)` plus an optional part of the day.
pub(crate) struct Window {
    start: f64,
    end: f64,
    period: Option<Period>,
}

impl Window {
    /// Whether `doc` falls in the window (a raw entry) or overlaps it (a summary).
    pub(crate) fn admits(&self, doc: &Doc, zone: Tz) -> bool {
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

/// The window of a time hint in `zone`; `None` when the hint sets nothing.
pub(crate) fn parse_window(hint: &TimeHint, zone: Tz) -> Result<Option<Window>, String> {
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
pub(crate) fn kind_matches(patterns: &[String], kind: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => kind.starts_with(prefix),
        None => kind == p,
    })
}

/// The sources a `within_memory_id` admits.
pub(crate) enum Within {
    /// Units of a conversation.
    Units(String, HashSet<i64>),
    /// Summaries by id.
    Summaries(HashSet<String>),
}

impl Within {
    /// Whether `doc` is one of the sources.
    pub(crate) fn admits(&self, doc: &Doc) -> bool {
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

/// The sources of summary `summary_id` in the hard key; `None` when there is no such summary.
pub(crate) fn sources_of(
    tx: &Transaction<'_>,
    hk: &str,
    summary_id: &str,
) -> Result<Option<Within>> {
    let found: Option<(String, SummaryLayer)> = tx
        .prepare_cached(
            "SELECT conversation_id, layer FROM summaries WHERE hard_key = ?1 AND summary_id = ?2",
        )?
        .query_row(params![hk, summary_id], |r| {
            let stored = r.get_ref(1)?.as_str()?;
            let layer = SummaryLayer::parse(stored)
                .ok_or_else(|| unknown_value(1, format!("summary {summary_id:?} layer"), stored))?;
            Ok((r.get(0)?, layer))
        })
        .optional()?;
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
    Ok(Some(if layer == SummaryLayer::Semantic {
        Within::Summaries(rows.into_iter().filter_map(|r| r.1).collect())
    } else {
        Within::Units(conv, rows.into_iter().filter_map(|r| r.0).collect())
    }))
}

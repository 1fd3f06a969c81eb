//! The calendar arithmetic of time-shaped queries: local spans (days, parts of days, weeks from
//! Monday, calendar months and years) and the clock they are reckoned from, in a zone.

use chrono::{Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;

/// A local span `[start, end)`.
pub(crate) type Span = (NaiveDateTime, NaiveDateTime);

/// A match: byte offset in the text, the phrase, the span, and whether it names a date (a
/// calendar date, month or year) rather than a time relative to now.
pub(crate) type Found = (usize, String, Span, bool);

/// `now` in the zone, and conversions back.
pub(crate) struct Clock {
    zone: Tz,
    pub(crate) now: NaiveDateTime,
}

impl Clock {
    pub(crate) fn new(now: f64, zone: Tz) -> Option<Clock> {
        let secs = now.floor();
        // Years 1970..=9999, with room on both sides for the spans reached from there (at
        // most a few hundred years back, a week ahead), so no date arithmetic can overflow.
        if !(0.0..=253_402_300_799.0).contains(&secs) {
            return None;
        }
        let utc = chrono::DateTime::from_timestamp(secs as i64, 0)?;
        Some(Clock {
            zone,
            now: utc.with_timezone(&zone).naive_local(),
        })
    }

    pub(crate) fn today(&self) -> NaiveDate {
        self.now.date()
    }

    /// A local time as Unix seconds: the earlier of two in a repeated hour, the first valid
    /// minute after a skipped one.
    pub(crate) fn unix(&self, local: NaiveDateTime) -> Option<f64> {
        let mut t = local;
        for _ in 0..4 {
            match self.zone.from_local_datetime(&t) {
                LocalResult::Single(d) | LocalResult::Ambiguous(d, _) => {
                    return Some(d.timestamp() as f64);
                }
                LocalResult::None => t += Duration::minutes(30),
            }
        }
        None
    }
}

pub(crate) fn at(date: NaiveDate, hour: u32) -> NaiveDateTime {
    date.and_hms_opt(0, 0, 0).unwrap_or_default() + Duration::hours(i64::from(hour))
}

/// A whole local day, or its part `hours` when given.
pub(crate) fn day_span(date: NaiveDate, hours: Option<(u32, u32)>) -> Span {
    let (a, b) = hours.unwrap_or((0, 24));
    (at(date, a), at(date, b))
}

pub(crate) fn days_span(first: NaiveDate, days: i64) -> Span {
    (at(first, 0), at(first + Duration::days(days), 0))
}

pub(crate) fn month_start(year: i32, month: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(year, month, 1)
}

/// The calendar month `back` months before `date`'s.
pub(crate) fn month_span(date: NaiveDate, back: i32) -> Option<Span> {
    let index = date.year() * 12 + date.month0() as i32 - back;
    let start = month_start(index.div_euclid(12), index.rem_euclid(12) as u32 + 1)?;
    let next = index + 1;
    let end = month_start(next.div_euclid(12), next.rem_euclid(12) as u32 + 1)?;
    Some((at(start, 0), at(end, 0)))
}

pub(crate) fn year_span(year: i32) -> Option<Span> {
    Some((
        at(month_start(year, 1)?, 0),
        at(month_start(year + 1, 1)?, 0),
    ))
}

/// Monday of `date`'s week.
pub(crate) fn week_start(date: NaiveDate) -> NaiveDate {
    date - Duration::days(i64::from(date.weekday().num_days_from_monday()))
}

/// The latest `weekday` (0 = Monday) strictly before `date`.
pub(crate) fn last_weekday(date: NaiveDate, weekday: u32) -> NaiveDate {
    let today = date.weekday().num_days_from_monday();
    let back = (today + 7 - weekday - 1) % 7 + 1;
    date - Duration::days(i64::from(back))
}

/// The latest `month`/`day` not after `today` (this year's, else last year's).
pub(crate) fn latest_date(today: NaiveDate, month: u32, day: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(today.year(), month, day)
        .filter(|d| *d <= today)
        .or_else(|| NaiveDate::from_ymd_opt(today.year() - 1, month, day))
}

/// The span `n` units before today (a range of counts widens it).
pub(crate) fn ago(clock: &Clock, (lo, hi): (i64, i64), unit: usize) -> Option<Span> {
    let today = clock.today();
    match unit {
        0 => Some(days_span(today - Duration::days(hi), hi - lo + 1)),
        1 => {
            let first = week_start(today) - Duration::weeks(hi);
            Some(days_span(first, 7 * (hi - lo + 1)))
        }
        2 => {
            let (start, _) = month_span(today, i32::try_from(hi).ok()?)?;
            let (_, end) = month_span(today, i32::try_from(lo).ok()?)?;
            Some((start, end))
        }
        _ => {
            let (start, _) = year_span(today.year() - i32::try_from(hi).ok()?)?;
            let (_, end) = year_span(today.year() - i32::try_from(lo).ok()?)?;
            Some((start, end))
        }
    }
}

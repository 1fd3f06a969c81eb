//! Time-shaped queries: the window a search text asks about ("yesterday afternoon", "last
//! week", "three days ago", "on 3 June, 2023", "上周", "昨天下午", "前天", "2023年6月"), for the
//! memory pool and the timeline alike (docs/ranking.md, "Time-shaped queries").
//!
//! The clock and the zone are parameters; nothing here reads either. Calendar words are local:
//! "yesterday" is the local day before `now`'s, "last week" the Monday-to-Sunday week before
//! this one, "last month" the calendar month before this one, "N days ago" that local day,
//! "recently" / "最近" the last seven days. A date without a year is its latest occurrence not
//! after today. Parts of the day follow the timeline's: 凌晨 / midnight 0–5 h, morning 5–12 h,
//! afternoon 12–18 h, evening / night 18–24 h (中午 11–13 h, 傍晚 17–19 h).
//!
//! Only a query with at most one line that has words is read: in a conversation-shaped query
//! (a transcript, one turn a line) "yesterday" is narration, relative to when that line was
//! said, which the query does not know. MADial-Bench's dialogues say 昨天 / 上周 / 今天 about
//! the events they tell in 90 of 160 Chinese queries; their evidence is older memories.

use chrono::{Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use unicode_normalization::UnicodeNormalization;

use crate::analysis::content_lines;

/// A half-open window `[start, end)` in Unix seconds, and the words that asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeWindow {
    /// Inclusive start.
    pub start: f64,
    /// Exclusive end.
    pub end: f64,
    /// The expression found, as normalised (lower-case) text: `"yesterday afternoon"`, `"上周"`.
    pub phrase: String,
}

impl TimeWindow {
    /// Whether `t` falls in the window.
    pub fn contains(&self, t: f64) -> bool {
        t >= self.start && t < self.end
    }

    /// How well `t` fits: 1 inside the window, and outside `exp(−distance / scale)` with the
    /// scale the window's length but at most a day, so the edges are soft ("yesterday" still
    /// leans towards late the day before) without "last week" reaching far into this one.
    ///
    /// ```
    /// use coral_score::TimeWindow;
    /// let w = TimeWindow { start: 100.0, end: 200.0, phrase: "x".into() };
    /// assert_eq!(w.preference(150.0), 1.0);
    /// assert!((w.preference(300.0) - (-1.0f64).exp()).abs() < 1e-12);
    /// assert!(w.preference(0.0) < w.preference(50.0));
    /// let week = TimeWindow { start: 0.0, end: 7.0 * 86_400.0, phrase: "last week".into() };
    /// assert!((week.preference(9.0 * 86_400.0) - (-2.0f64).exp()).abs() < 1e-12);
    /// ```
    pub fn preference(&self, t: f64) -> f64 {
        if self.contains(t) {
            return 1.0;
        }
        let scale = (self.end - self.start).clamp(1.0, 86_400.0);
        let distance = if t < self.start {
            self.start - t
        } else {
            t - self.end
        };
        if distance.is_nan() {
            0.0
        } else {
            (-distance / scale).exp()
        }
    }
}

/// The time window `query` asks about, as of `now` (Unix seconds) in `zone`; `None` when it
/// names no time, or is conversation-shaped (see the module notes).
///
/// ```
/// use coral_score::time_window;
/// // 2026-04-15 is a Wednesday; 10:00 in Shanghai.
/// let now = 1_776_218_400.0;
/// let zone: chrono_tz::Tz = "Asia/Shanghai".parse().unwrap();
/// let w = time_window("what did I eat yesterday afternoon?", now, zone).unwrap();
/// assert_eq!(w.phrase, "yesterday afternoon");
/// assert_eq!(w.end - w.start, 6.0 * 3600.0);
/// let w = time_window("上周我们讨论了什么", now, zone).unwrap();
/// assert_eq!((w.phrase.as_str(), w.end - w.start), ("上周", 7.0 * 86_400.0));
/// assert!(time_window("what is my favourite drink", now, zone).is_none());
/// ```
pub fn time_window(query: &str, now: f64, zone: Tz) -> Option<TimeWindow> {
    if !now.is_finite() {
        return None;
    }
    let mut lines = content_lines(query);
    lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    let text: String = query.nfkc().flat_map(char::to_lowercase).collect();
    let clock = Clock::new(now, zone)?;
    let mut found = english(&text, &clock);
    found.extend(chinese(&text, &clock));
    // A date wins over a relative time ("last weekend before April 10, 2023" is about April),
    // then the expression that comes first.
    found.sort_by_key(|f| (!f.3, f.0));
    let (_, phrase, span, _) = found.into_iter().next()?;
    let start = clock.unix(span.0)?;
    let end = clock.unix(span.1)?;
    (end > start).then_some(TimeWindow { start, end, phrase })
}

/// A local span `[start, end)`.
type Span = (NaiveDateTime, NaiveDateTime);

/// A match: byte offset in the text, the phrase, the span, and whether it names a date (a
/// calendar date, month or year) rather than a time relative to now.
type Found = (usize, String, Span, bool);

/// `now` in the zone, and conversions back.
struct Clock {
    zone: Tz,
    now: NaiveDateTime,
}

impl Clock {
    fn new(now: f64, zone: Tz) -> Option<Clock> {
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

    fn today(&self) -> NaiveDate {
        self.now.date()
    }

    /// A local time as Unix seconds: the earlier of two in a repeated hour, the first valid
    /// minute after a skipped one.
    fn unix(&self, local: NaiveDateTime) -> Option<f64> {
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

fn at(date: NaiveDate, hour: u32) -> NaiveDateTime {
    date.and_hms_opt(0, 0, 0).unwrap_or_default() + Duration::hours(i64::from(hour))
}

/// A whole local day, or its part `hours` when given.
fn day_span(date: NaiveDate, hours: Option<(u32, u32)>) -> Span {
    let (a, b) = hours.unwrap_or((0, 24));
    (at(date, a), at(date, b))
}

fn days_span(first: NaiveDate, days: i64) -> Span {
    (at(first, 0), at(first + Duration::days(days), 0))
}

fn month_start(year: i32, month: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(year, month, 1)
}

/// The calendar month `back` months before `date`'s.
fn month_span(date: NaiveDate, back: i32) -> Option<Span> {
    let index = date.year() * 12 + date.month0() as i32 - back;
    let start = month_start(index.div_euclid(12), index.rem_euclid(12) as u32 + 1)?;
    let next = index + 1;
    let end = month_start(next.div_euclid(12), next.rem_euclid(12) as u32 + 1)?;
    Some((at(start, 0), at(end, 0)))
}

fn year_span(year: i32) -> Option<Span> {
    Some((
        at(month_start(year, 1)?, 0),
        at(month_start(year + 1, 1)?, 0),
    ))
}

/// Monday of `date`'s week.
fn week_start(date: NaiveDate) -> NaiveDate {
    date - Duration::days(i64::from(date.weekday().num_days_from_monday()))
}

/// The latest `weekday` (0 = Monday) strictly before `date`.
fn last_weekday(date: NaiveDate, weekday: u32) -> NaiveDate {
    let today = date.weekday().num_days_from_monday();
    let back = (today + 7 - weekday - 1) % 7 + 1;
    date - Duration::days(i64::from(back))
}

/// The latest `month`/`day` not after `today` (this year's, else last year's).
fn latest_date(today: NaiveDate, month: u32, day: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(today.year(), month, day)
        .filter(|d| *d <= today)
        .or_else(|| NaiveDate::from_ymd_opt(today.year() - 1, month, day))
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const NUMBERS: [&str; 12] = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve",
];

/// A month by name or by an abbreviation of three or four letters (`jan`, `sept`).
fn month_of(word: &str) -> Option<u32> {
    if word.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| m.starts_with(word) && (word.len() == m.len() || word.len() <= 4))
        .map(|i| i as u32 + 1)
}

fn weekday_of(word: &str) -> Option<u32> {
    WEEKDAYS.iter().position(|d| *d == word).map(|i| i as u32)
}

/// English parts of the day.
fn english_part(word: &str) -> Option<(u32, u32)> {
    match word {
        "morning" => Some((5, 12)),
        "afternoon" => Some((12, 18)),
        "evening" | "night" | "tonight" => Some((18, 24)),
        _ => None,
    }
}

/// A count: digits, `one`..`twelve`, `a`/`an`; `a few`, `a couple of`, `several` as 2..=4.
fn count_at(words: &[(usize, &str)], i: usize) -> Option<((i64, i64), usize)> {
    let w = words.get(i)?.1;
    if let Ok(n) = w.parse::<i64>() {
        return (1..=400).contains(&n).then_some(((n, n), 1));
    }
    if let Some(n) = NUMBERS.iter().position(|x| *x == w) {
        let n = n as i64 + 1;
        return Some(((n, n), 1));
    }
    let next = words.get(i + 1).map(|x| x.1);
    match (w, next) {
        ("a", Some("few")) => Some(((2, 4), 2)),
        ("a", Some("couple")) => {
            let of = words.get(i + 2).is_some_and(|x| x.1 == "of");
            Some(((2, 2), 2 + usize::from(of)))
        }
        ("a" | "an", _) => Some(((1, 1), 1)),
        ("few" | "several", _) => Some(((2, 4), 1)),
        _ => None,
    }
}

/// `day`, `days`, `week`, ...: the unit's index (0 day, 1 week, 2 month, 3 year).
fn unit_of(word: &str) -> Option<usize> {
    match word.strip_suffix('s').unwrap_or(word) {
        "day" => Some(0),
        "week" => Some(1),
        "month" => Some(2),
        "year" => Some(3),
        _ => None,
    }
}

/// The span `n` units before today (a range of counts widens it).
fn ago(clock: &Clock, (lo, hi): (i64, i64), unit: usize) -> Option<Span> {
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

/// Lower-case ASCII words and numbers with their byte offsets.
fn words_of(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let word = c.is_ascii_alphanumeric();
        match (start, word) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// A day of the month: `3`, `3rd`, `21st`.
fn day_number(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    digits.parse::<u32>().ok().filter(|d| (1..=31).contains(d))
}

fn year_number(word: &str) -> Option<i32> {
    (word.len() == 4)
        .then(|| word.parse::<i32>().ok())
        .flatten()
        .filter(|y| (1900..=2200).contains(y))
}

/// The English time expressions of `text`, in order.
fn english(text: &str, clock: &Clock) -> Vec<Found> {
    let words = words_of(text);
    let today = clock.today();
    let phrase = |from: usize, to: usize| -> String {
        let end = words[to - 1].0 + words[to - 1].1.len();
        text[words[from].0..end].to_string()
    };
    let word = |i: usize| words.get(i).map_or("", |w| w.1);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = word(i);
        // (span, words used, names a date)
        let found: Option<(Span, usize, bool)> = (|| {
            // ISO dates: 2023-06-03 (the separators are not words).
            if let (Some(y), Ok(m), Ok(d)) =
                (year_number(w), word(i + 1).parse(), word(i + 2).parse())
                && text[words[i].0 + 4..].starts_with('-')
            {
                let date = NaiveDate::from_ymd_opt(y, m, d)?;
                return Some((day_span(date, None), 3, true));
            }
            // 3 June 2023, 3rd of June, June 3, June 3rd 2023, June 2023.
            if let Some(d) = day_number(w) {
                let of = usize::from(word(i + 1) == "of");
                if let Some(m) = month_of(word(i + 1 + of)) {
                    let used = 2 + of;
                    return Some(match year_number(word(i + used)) {
                        Some(y) => (
                            day_span(NaiveDate::from_ymd_opt(y, m, d)?, None),
                            used + 1,
                            true,
                        ),
                        None => (day_span(latest_date(today, m, d)?, None), used, true),
                    });
                }
            }
            if let Some(m) = month_of(w) {
                if let Some(d) = day_number(word(i + 1)) {
                    return Some(match year_number(word(i + 2)) {
                        Some(y) => (day_span(NaiveDate::from_ymd_opt(y, m, d)?, None), 3, true),
                        None => (day_span(latest_date(today, m, d)?, None), 2, true),
                    });
                }
                if let Some(y) = year_number(word(i + 1)) {
                    return Some((month_span(NaiveDate::from_ymd_opt(y, m, 1)?, 0)?, 2, true));
                }
                if matches!(word(i.wrapping_sub(1)), "in" | "during") && i > 0 {
                    let year = if m <= today.month() {
                        today.year()
                    } else {
                        today.year() - 1
                    };
                    return Some((
                        month_span(NaiveDate::from_ymd_opt(year, m, 1)?, 0)?,
                        1,
                        true,
                    ));
                }
            }
            if matches!(w, "in" | "during")
                && let Some(y) = year_number(word(i + 1))
            {
                return Some((year_span(y)?, 2, true));
            }
            match w {
                "today" => return Some((day_span(today, None), 1, false)),
                "tonight" => return Some((day_span(today, Some((18, 24))), 1, false)),
                "yesterday" => {
                    let part = english_part(word(i + 1));
                    let used = 1 + usize::from(part.is_some());
                    return Some((day_span(today - Duration::days(1), part), used, false));
                }
                "recently" | "lately" | "latest" => {
                    return Some(((clock.now - Duration::days(7), clock.now), 1, false));
                }
                _ => {}
            }
            if w == "day" && word(i + 1) == "before" && word(i + 2) == "yesterday" {
                return Some((day_span(today - Duration::days(2), None), 3, false));
            }
            if w == "earlier" && word(i + 1) == "today" {
                return Some((day_span(today, None), 2, false));
            }
            if w == "this" {
                let next = word(i + 1);
                if let Some(part) = english_part(next) {
                    return Some((day_span(today, Some(part)), 2, false));
                }
                return match next {
                    "week" => Some((days_span(week_start(today), 7), 2, false)),
                    "weekend" => Some((
                        days_span(week_start(today) + Duration::days(5), 2),
                        2,
                        false,
                    )),
                    "month" => Some((month_span(today, 0)?, 2, false)),
                    "year" => Some((year_span(today.year())?, 2, false)),
                    _ => None,
                };
            }
            if matches!(w, "last" | "past" | "previous") {
                let next = word(i + 1);
                if w == "last" && next == "night" {
                    // The evening before and the small hours of today.
                    let start = at(today - Duration::days(1), 18);
                    return Some(((start, at(today, 5)), 2, false));
                }
                if let Some(d) = weekday_of(next) {
                    return Some((day_span(last_weekday(today, d), None), 2, false));
                }
                // the past 3 days, the last two weeks: up to now.
                if let Some((n, used)) = count_at(&words, i + 1)
                    && let Some(unit) = unit_of(word(i + 1 + used))
                {
                    let days = [1, 7, 30, 365][unit] * n.1;
                    return Some((
                        (clock.now - Duration::days(days), clock.now),
                        2 + used,
                        false,
                    ));
                }
                return match next {
                    "week" => Some((
                        days_span(week_start(today) - Duration::weeks(1), 7),
                        2,
                        false,
                    )),
                    "weekend" => {
                        let saturday = week_start(today) - Duration::days(2);
                        Some((days_span(saturday, 2), 2, false))
                    }
                    "month" => Some((month_span(today, 1)?, 2, false)),
                    "year" => Some((year_span(today.year() - 1)?, 2, false)),
                    _ => None,
                };
            }
            if w == "on"
                && let Some(d) = weekday_of(word(i + 1))
            {
                return Some((
                    day_span(last_weekday(today + Duration::days(1), d), None),
                    2,
                    false,
                ));
            }
            // three days ago, a few weeks ago, a couple of months ago
            if let Some((n, used)) = count_at(&words, i)
                && let Some(unit) = unit_of(word(i + used))
                && word(i + used + 1) == "ago"
            {
                return Some((ago(clock, n, unit)?, used + 2, false));
            }
            None
        })();
        match found {
            Some((span, used, date)) => {
                let used = used.clamp(1, words.len() - i);
                out.push((words[i].0, phrase(i, i + used), span, date));
                i += used;
            }
            None => i += 1,
        }
    }
    out
}

/// Chinese parts of the day, longest names first.
const CHINESE_PARTS: [(&str, (u32, u32)); 10] = [
    ("凌晨", (0, 5)),
    ("早上", (5, 12)),
    ("早晨", (5, 12)),
    ("上午", (5, 12)),
    ("中午", (11, 13)),
    ("下午", (12, 18)),
    ("傍晚", (17, 19)),
    ("晚上", (18, 24)),
    ("夜里", (18, 24)),
    ("晚", (18, 24)),
];

fn chinese_part(rest: &str) -> Option<(&'static str, (u32, u32))> {
    CHINESE_PARTS
        .iter()
        .find(|(name, _)| rest.starts_with(name))
        .copied()
}

/// A Chinese or Arabic number 1–99 at the start of `s`: (value, bytes used).
fn chinese_number(s: &str) -> Option<(i64, usize)> {
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.len() > 6 {
        return None;
    }
    if !digits.is_empty() {
        return digits.parse().ok().map(|n| (n, digits.len()));
    }
    let value = |c: char| {
        "零一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .map(|v| v as i64)
            .or((c == '两').then_some(2))
    };
    let mut chars = s.char_indices().peekable();
    let (_, first) = *chars.peek()?;
    let mut used = 0;
    let mut n = 0;
    if first == '十' {
        chars.next();
        used += first.len_utf8();
        n = 10;
        if let Some(&(_, c)) = chars.peek()
            && let Some(v) = value(c)
        {
            n += v;
            used += c.len_utf8();
        }
        return Some((n, used));
    }
    let v = value(first)?;
    chars.next();
    used += first.len_utf8();
    n += v;
    if let Some(&(_, '十')) = chars.peek() {
        chars.next();
        used += '十'.len_utf8();
        n *= 10;
        if let Some(&(_, c)) = chars.peek()
            && let Some(v) = value(c)
        {
            n += v;
            used += c.len_utf8();
        }
    }
    (n > 0).then_some((n, used))
}

/// 一..日 / 天 as a weekday (0 = Monday).
fn chinese_weekday(c: char) -> Option<u32> {
    "一二三四五六日"
        .chars()
        .position(|d| d == c)
        .map(|v| v as u32)
        .or((c == '天').then_some(6))
}

/// The Chinese time expressions of `text`, in order.
fn chinese(text: &str, clock: &Clock) -> Vec<Found> {
    let today = clock.today();
    let mut out = Vec::new();
    let mut next = 0;
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        // A number starts at its first digit.
        let inside_number = c.is_ascii_digit() && previous.is_ascii_digit();
        previous = c;
        if i < next || inside_number {
            continue;
        }
        let rest = &text[i..];
        if let Some((span, used, date)) = chinese_at(rest, clock, today) {
            out.push((i, rest[..used].to_string(), span, date));
            next = i + used;
        }
    }
    out
}

/// A day word (今天, 昨天, 前天, ...) followed by an optional part of the day.
fn with_part(date: NaiveDate, rest: &str, used: usize) -> (Span, usize) {
    match chinese_part(&rest[used..]) {
        Some((name, hours)) => (day_span(date, Some(hours)), used + name.len()),
        None => (day_span(date, None), used),
    }
}

/// The Chinese time expression at the start of `rest`: (span, bytes used, names a date).
fn chinese_at(rest: &str, clock: &Clock, today: NaiveDate) -> Option<(Span, usize, bool)> {
    let day = |back: i64| today - Duration::days(back);
    let relative = |(span, used): (Span, usize)| Some((span, used, false));
    let days = [
        ("大前天", 3),
        ("前天", 2),
        ("昨天", 1),
        ("昨日", 1),
        ("今天", 0),
        ("今日", 0),
    ];
    for (word, back) in days {
        if rest.starts_with(word) {
            return relative(with_part(day(back), rest, word.len()));
        }
    }
    let parts = [
        ("昨晚", 1, (18, 24)),
        ("昨夜", 1, (18, 24)),
        ("今早", 0, (5, 12)),
        ("今晚", 0, (18, 24)),
    ];
    for (word, back, hours) in parts {
        if rest.starts_with(word) {
            return relative((day_span(day(back), Some(hours)), word.len()));
        }
    }
    for word in ["最近", "近来", "近期"] {
        if rest.starts_with(word) {
            return relative(((clock.now - Duration::days(7), clock.now), word.len()));
        }
    }
    for word in ["前几天", "前些天", "几天前"] {
        if rest.starts_with(word) {
            return relative((days_span(day(4), 3), word.len()));
        }
    }
    // 上上周, 上周 / 上(个)星期 / 上(个)礼拜 with an optional day (上周五); 这周, 本周; 上(个)月,
    // 上上个月, 这个月, 本月.
    for (prefix, back) in [("上上", 2), ("上", 1), ("这", 0), ("本", 0)] {
        let Some(after) = rest.strip_prefix(prefix) else {
            continue;
        };
        let counted = after.strip_prefix('个');
        let (after, used) = match counted {
            Some(a) => (a, prefix.len() + '个'.len_utf8()),
            None => (after, prefix.len()),
        };
        for week in ["星期", "礼拜", "周"] {
            let Some(tail) = after.strip_prefix(week) else {
                continue;
            };
            let first = week_start(today) - Duration::weeks(back);
            let used = used + week.len();
            if let Some(c) = tail.chars().next()
                && let Some(d) = chinese_weekday(c)
            {
                let date = first + Duration::days(i64::from(d));
                return relative((day_span(date, None), used + c.len_utf8()));
            }
            return relative((days_span(first, 7), used));
        }
        if after.starts_with('月') {
            let span = month_span(today, back as i32)?;
            return relative((span, used + '月'.len_utf8()));
        }
    }
    for (word, back) in [("前年", 2), ("去年", 1), ("今年", 0)] {
        if rest.starts_with(word) {
            return relative((year_span(today.year() - back)?, word.len()));
        }
    }
    let (n, used) = chinese_number(rest)?;
    // Counts and dates past this are not times anyone asks about (and keep spans in range).
    if !(1..=9_999).contains(&n) {
        return None;
    }
    let tail = &rest[used..];
    // N天前, N周前, N个星期前, N个月前, N年前.
    let units = [
        ("天前", 0),
        ("周前", 1),
        ("个星期前", 1),
        ("星期前", 1),
        ("个月前", 2),
        ("年前", 3),
    ];
    for (unit, index) in units {
        if tail.starts_with(unit) {
            return relative((ago(clock, (n, n), index)?, used + unit.len()));
        }
    }
    // Dates: 2023年6月3日, 2023年6月, 2023年, 6月3日 / 6月3号.
    let day_of = |s: &str| -> Option<(u32, usize)> {
        let (d, du) = chinese_number(s)?;
        let marked = s[du..].starts_with('日') || s[du..].starts_with('号');
        let d = u32::try_from(d).ok().filter(|d| (1..=31).contains(d))?;
        marked.then_some((d, du + '日'.len_utf8()))
    };
    let month_of = |s: &str| -> Option<(u32, usize)> {
        let (m, mu) = chinese_number(s)?;
        let m = u32::try_from(m).ok().filter(|m| (1..=12).contains(m))?;
        s[mu..]
            .starts_with('月')
            .then_some((m, mu + '月'.len_utf8()))
    };
    if let Some(after_year) = tail.strip_prefix('年')
        && (1900..=2200).contains(&n)
    {
        let year = n as i32;
        let used = used + '年'.len_utf8();
        if let Some((m, mu)) = month_of(after_year) {
            let used = used + mu;
            if let Some((d, du)) = day_of(&after_year[mu..]) {
                let date = NaiveDate::from_ymd_opt(year, m, d)?;
                let (span, used) = with_part(date, rest, used + du);
                return Some((span, used, true));
            }
            let span = month_span(NaiveDate::from_ymd_opt(year, m, 1)?, 0)?;
            return Some((span, used, true));
        }
        return Some((year_span(year)?, used, true));
    }
    if let Some((m, mu)) = month_of(rest)
        && let Some((d, du)) = day_of(&rest[mu..])
    {
        let date = latest_date(today, m, d)?;
        let (span, used) = with_part(date, rest, mu + du);
        return Some((span, used, true));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wednesday 2026-04-15 10:00 in Shanghai (02:00 UTC).
    const NOW: f64 = 1_776_218_400.0;

    fn zone() -> Tz {
        "Asia/Shanghai".parse().unwrap()
    }

    /// `query` gives the local window `[start, end)` (`YYYY-MM-DD HH`) and the phrase.
    fn check(query: &str, phrase: &str, start: &str, end: &str) {
        let w = time_window(query, NOW, zone()).unwrap_or_else(|| panic!("no window in {query:?}"));
        let local = |t: f64| {
            chrono::DateTime::from_timestamp(t as i64, 0)
                .unwrap()
                .with_timezone(&zone())
                .format("%Y-%m-%d %H")
                .to_string()
        };
        assert_eq!(
            (
                w.phrase.as_str(),
                local(w.start).as_str(),
                local(w.end).as_str()
            ),
            (phrase, start, end),
            "{query:?}"
        );
    }

    #[test]
    fn english_relative_days_and_parts() {
        check(
            "what did I eat today",
            "today",
            "2026-04-15 00",
            "2026-04-16 00",
        );
        check(
            "notes from this morning",
            "this morning",
            "2026-04-15 05",
            "2026-04-15 12",
        );
        check(
            "Yesterday afternoon's call",
            "yesterday afternoon",
            "2026-04-14 12",
            "2026-04-14 18",
        );
        check(
            "what happened yesterday?",
            "yesterday",
            "2026-04-14 00",
            "2026-04-15 00",
        );
        check(
            "the day before yesterday",
            "day before yesterday",
            "2026-04-13 00",
            "2026-04-14 00",
        );
        check(
            "what did we watch last night",
            "last night",
            "2026-04-14 18",
            "2026-04-15 05",
        );
        check(
            "tonight's plan",
            "tonight",
            "2026-04-15 18",
            "2026-04-16 00",
        );
        check(
            "three days ago we met",
            "three days ago",
            "2026-04-12 00",
            "2026-04-13 00",
        );
        check("3 days ago", "3 days ago", "2026-04-12 00", "2026-04-13 00");
        check(
            "a few days ago",
            "a few days ago",
            "2026-04-11 00",
            "2026-04-14 00",
        );
        check(
            "a couple of weeks ago",
            "a couple of weeks ago",
            "2026-03-30 00",
            "2026-04-06 00",
        );
        check(
            "two months ago",
            "two months ago",
            "2026-02-01 00",
            "2026-03-01 00",
        );
        check("a year ago", "a year ago", "2025-01-01 00", "2026-01-01 00");
    }

    #[test]
    fn english_weeks_months_and_weekdays() {
        check(
            "last week's meeting",
            "last week",
            "2026-04-06 00",
            "2026-04-13 00",
        );
        check("this week", "this week", "2026-04-13 00", "2026-04-20 00");
        check(
            "last weekend",
            "last weekend",
            "2026-04-11 00",
            "2026-04-13 00",
        );
        check("last month", "last month", "2026-03-01 00", "2026-04-01 00");
        check("last year", "last year", "2025-01-01 00", "2026-01-01 00");
        check("this year", "this year", "2026-01-01 00", "2027-01-01 00");
        check(
            "the past 3 days",
            "past 3 days",
            "2026-04-12 10",
            "2026-04-15 10",
        );
        check(
            "last Friday",
            "last friday",
            "2026-04-10 00",
            "2026-04-11 00",
        );
        check(
            "last wednesday",
            "last wednesday",
            "2026-04-08 00",
            "2026-04-09 00",
        );
        check(
            "on Wednesday",
            "on wednesday",
            "2026-04-15 00",
            "2026-04-16 00",
        );
        check(
            "what did I read recently",
            "recently",
            "2026-04-08 10",
            "2026-04-15 10",
        );
    }

    #[test]
    fn english_dates() {
        check(
            "as mentioned on 3 June, 2023",
            "3 june, 2023",
            "2023-06-03 00",
            "2023-06-04 00",
        );
        check(
            "on October 6, 2022?",
            "october 6, 2022",
            "2022-10-06 00",
            "2022-10-07 00",
        );
        check(
            "the 21st of March",
            "21st of march",
            "2026-03-21 00",
            "2026-03-22 00",
        );
        check(
            "cake in May 2022",
            "may 2022",
            "2022-05-01 00",
            "2022-06-01 00",
        );
        check("in December", "december", "2025-12-01 00", "2026-01-01 00");
        check("in 2024", "in 2024", "2024-01-01 00", "2025-01-01 00");
        check(
            "2023-06-03 standup",
            "2023-06-03",
            "2023-06-03 00",
            "2023-06-04 00",
        );
        check("Sept 9", "sept 9", "2025-09-09 00", "2025-09-10 00");
        // "may" is a month only next to a day or a year.
        assert!(time_window("may I ask about the deploy", NOW, zone()).is_none());
        check("may 9", "may 9", "2025-05-09 00", "2025-05-10 00");
    }

    #[test]
    fn chinese_expressions() {
        check(
            "昨天下午我们聊了什么",
            "昨天下午",
            "2026-04-14 12",
            "2026-04-14 18",
        );
        check("我昨天吃了什么", "昨天", "2026-04-14 00", "2026-04-15 00");
        check("前天", "前天", "2026-04-13 00", "2026-04-14 00");
        check("大前天晚上", "大前天晚上", "2026-04-12 18", "2026-04-13 00");
        check("今早的会议", "今早", "2026-04-15 05", "2026-04-15 12");
        check("昨晚看的电影", "昨晚", "2026-04-14 18", "2026-04-15 00");
        check(
            "上周我们讨论了什么",
            "上周",
            "2026-04-06 00",
            "2026-04-13 00",
        );
        check("上个星期", "上个星期", "2026-04-06 00", "2026-04-13 00");
        check("上周五的会", "上周五", "2026-04-10 00", "2026-04-11 00");
        check("这周", "这周", "2026-04-13 00", "2026-04-20 00");
        check("上上周", "上上周", "2026-03-30 00", "2026-04-06 00");
        check("上个月的账单", "上个月", "2026-03-01 00", "2026-04-01 00");
        check("本月", "本月", "2026-04-01 00", "2026-05-01 00");
        check("去年", "去年", "2025-01-01 00", "2026-01-01 00");
        check("三天前", "三天前", "2026-04-12 00", "2026-04-13 00");
        check("两周前", "两周前", "2026-03-30 00", "2026-04-06 00");
        check("十二个月前", "十二个月前", "2025-04-01 00", "2025-05-01 00");
        check("前几天说的", "前几天", "2026-04-11 00", "2026-04-14 00");
        check("最近读的书", "最近", "2026-04-08 10", "2026-04-15 10");
        check(
            "2023年6月3日的记录",
            "2023年6月3日",
            "2023-06-03 00",
            "2023-06-04 00",
        );
        check("2023年6月", "2023年6月", "2023-06-01 00", "2023-07-01 00");
        check("6月3号下午", "6月3号下午", "2025-06-03 12", "2025-06-03 18");
        check("2024年", "2024年", "2024-01-01 00", "2025-01-01 00");
    }

    #[test]
    fn no_time_no_window() {
        for q in [
            "what is my favourite drink",
            "我最喜欢喝什么",
            "the last line of the poem",
            "上海的天气",
            "a day at the beach",
            "",
            "99999999999999999999天前",
            "5000000年前",
            "9999 days ago",
        ] {
            assert_eq!(time_window(q, NOW, zone()), None, "{q:?}");
        }
        // A conversation: narration, not a request.
        assert_eq!(
            time_window("Bart: 昨天老师表扬我了\nAssistant: 真棒", NOW, zone()),
            None
        );
        assert_eq!(time_window("yesterday", f64::NAN, zone()), None);
        // The first expression wins.
        check(
            "yesterday, or maybe last week",
            "yesterday",
            "2026-04-14 00",
            "2026-04-15 00",
        );
        check("上周还是昨天", "上周", "2026-04-06 00", "2026-04-13 00");
    }

    proptest::proptest! {
        /// Any text at any clock: a window that starts before it ends, or none; no panic.
        #[test]
        fn any_text_gives_a_sane_window_or_none(
            text in "(yesterday|last|ago|days|week|3|2023|june|on|friday|前天|上周|昨天|年|月|日|号|天前|个|十|两|9|\\PC){0,8}",
            now in -1e12f64..3e11,
        ) {
            if let Some(w) = time_window(&text, now, zone()) {
                proptest::prop_assert!(w.start < w.end, "{w:?}");
                proptest::prop_assert!(w.start.is_finite() && w.end.is_finite());
            }
        }
    }

    #[test]
    fn windows_follow_the_zone_across_a_dst_change() {
        // 2026-03-09 12:00 in New York (EDT since 2026-03-08 02:00): yesterday is 23 hours long.
        let ny: Tz = "America/New_York".parse().unwrap();
        let now = 1_773_072_000.0;
        let w = time_window("yesterday", now, ny).unwrap();
        assert_eq!(w.end - w.start, 23.0 * 3600.0);
    }
}

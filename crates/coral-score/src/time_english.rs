//! English time expressions ("yesterday afternoon", "three days ago", "last Friday",
//! "on 3 June, 2023") as local spans, for [`crate::time_window`].

use chrono::{Datelike, Duration, NaiveDate};

use crate::time_calendar::{
    Clock, Found, Span, ago, at, day_span, days_span, last_weekday, latest_date, month_span,
    week_start, year_span,
};

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
pub(crate) fn english(text: &str, clock: &Clock) -> Vec<Found> {
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

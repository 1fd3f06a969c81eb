//! Chinese time expressions (昨天下午, 前天, 上周五, 三天前, 2023年6月3日) as local spans, for
//! [`crate::time_window`].

use chrono::{Datelike, Duration, NaiveDate};

use crate::time_calendar::{
    Clock, Found, Span, ago, day_span, days_span, latest_date, month_span, week_start, year_span,
};

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
pub(crate) fn chinese(text: &str, clock: &Clock) -> Vec<Found> {
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

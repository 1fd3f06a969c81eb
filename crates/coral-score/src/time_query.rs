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

use chrono_tz::Tz;
use unicode_normalization::UnicodeNormalization;

use crate::analysis::content_lines;
use crate::time_calendar::Clock;
use crate::time_chinese::chinese;
use crate::time_english::english;

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
            // Parsed whole, this count of days is past chrono's range (it panicked).
            "9999999999999天前",
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

//! Local time: IANA time zones, time-of-day periods (with their Chinese names), date headers,
//! and parsing the local wall times and dates a reader asks for.

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use chrono_tz::Tz;
use serde::Serialize;

/// A time zone by IANA name (`Asia/Shanghai`, `UTC`).
pub fn parse_zone(name: &str) -> Result<Tz, String> {
    name.trim().parse::<Tz>().map_err(|_| {
        format!("time zone {name:?} is not an IANA name such as \"Asia/Shanghai\" or \"UTC\"")
    })
}

/// A part of the day, by local hour: midnight 0–4, morning 5–11, afternoon 12–17, night 18–23.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    /// 00:00–04:59 (凌晨).
    Midnight,
    /// 05:00–11:59 (上午).
    Morning,
    /// 12:00–17:59 (下午).
    Afternoon,
    /// 18:00–23:59 (晚上).
    Night,
}

impl Period {
    /// The period of a local hour (0–23).
    pub fn of_hour(hour: u32) -> Period {
        match hour {
            0..=4 => Period::Midnight,
            5..=11 => Period::Morning,
            12..=17 => Period::Afternoon,
            _ => Period::Night,
        }
    }

    /// The period of a moment in a zone.
    pub fn of(ts: f64, zone: Tz) -> Period {
        Period::of_hour(local(ts, zone).hour())
    }

    /// English name.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Midnight => "midnight",
            Period::Morning => "morning",
            Period::Afternoon => "afternoon",
            Period::Night => "night",
        }
    }

    /// Chinese name.
    pub fn zh(self) -> &'static str {
        match self {
            Period::Midnight => "凌晨",
            Period::Morning => "上午",
            Period::Afternoon => "下午",
            Period::Night => "晚上",
        }
    }

    /// Parse an English name (any case) or a Chinese alias (上午, 下午, 晚上, 凌晨).
    pub fn parse(s: &str) -> Result<Period, String> {
        let t = s.trim();
        [
            Period::Midnight,
            Period::Morning,
            Period::Afternoon,
            Period::Night,
        ]
        .into_iter()
        .find(|p| t.eq_ignore_ascii_case(p.as_str()) || t == p.zh())
        .ok_or_else(|| {
            format!(
                "time period {s:?} is not one of morning/上午, afternoon/下午, night/晚上, \
                 midnight/凌晨"
            )
        })
    }
}

/// The local date and time of Unix seconds `ts` in `zone`.
pub fn local(ts: f64, zone: Tz) -> DateTime<Tz> {
    let secs = ts.floor();
    let nanos = ((ts - secs) * 1e9) as u32;
    let utc = DateTime::from_timestamp(secs as i64, nanos.min(999_999_999)).unwrap_or_default();
    utc.with_timezone(&zone)
}

/// `2026-04-10 08:00`.
pub fn minute_label(ts: f64, zone: Tz) -> String {
    local(ts, zone).format("%Y-%m-%d %H:%M").to_string()
}

/// `2026-04-10`.
pub fn date_label(ts: f64, zone: Tz) -> String {
    local(ts, zone).format("%Y-%m-%d").to_string()
}

/// `[日期 2026-04-10 周五]`: the header a day's entries are rendered under.
pub fn date_header(ts: f64, zone: Tz) -> String {
    const DAYS: [&str; 7] = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"];
    let t = local(ts, zone);
    format!(
        "[日期 {} {}]",
        t.format("%Y-%m-%d"),
        DAYS[t.weekday().num_days_from_monday() as usize]
    )
}

/// A calendar date `YYYY-MM-DD`.
pub fn parse_date(s: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .map_err(|_| format!("date {s:?} is not a calendar date YYYY-MM-DD"))
}

/// Unix seconds of the first moment of local `date` in `zone` (the earliest, if a DST change
/// makes midnight ambiguous; the first existing minute, if it skips midnight).
pub fn day_start(date: NaiveDate, zone: Tz) -> f64 {
    let mut t = date.and_hms_opt(0, 0, 0).unwrap_or_default();
    for _ in 0..=180 {
        if let Some(dt) = zone.from_local_datetime(&t).earliest() {
            return dt.timestamp() as f64;
        }
        t += chrono::Duration::minutes(1);
    }
    // No zone skips three hours; fall back to UTC midnight rather than fail.
    date.and_hms_opt(0, 0, 0)
        .unwrap_or_default()
        .and_utc()
        .timestamp() as f64
}

/// Unix seconds of a time a reader gives: RFC 3339 with an offset (`2026-04-10T08:00:00+08:00`,
/// `...Z`), or a local wall time in `zone` (`2026-04-10 08:00`, `2026-04-10T08:00:30`) that must
/// name exactly one moment: a time repeated or skipped by a DST change is refused with a hint to
/// add an offset.
pub fn parse_instant(s: &str, zone: Tz) -> Result<f64, String> {
    let t = s.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp() as f64 + f64::from(dt.timestamp_subsec_nanos()) / 1e9);
    }
    let naive = [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(t, f).ok())
    .ok_or_else(|| {
        format!(
            "time {s:?} is not a local time like \"2026-04-10 08:00\" or an RFC 3339 time like \
             \"2026-04-10T08:00:00+08:00\""
        )
    })?;
    match zone.from_local_datetime(&naive) {
        LocalResult::Single(dt) => Ok(dt.timestamp() as f64),
        LocalResult::Ambiguous(a, b) => Err(format!(
            "local time {s:?} happens twice in {zone} (clocks go back): add the offset, \
             {} or {}",
            a.format("%Y-%m-%dT%H:%M:%S%:z"),
            b.format("%Y-%m-%dT%H:%M:%S%:z")
        )),
        LocalResult::None => Err(format!(
            "local time {s:?} does not exist in {zone} (clocks go forward); give a time \
             outside the gap or add an offset"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_parse_with_aliases() {
        assert_eq!(Period::parse("下午").unwrap(), Period::Afternoon);
        assert_eq!(Period::parse(" Morning ").unwrap(), Period::Morning);
        assert_eq!(Period::parse("凌晨").unwrap(), Period::Midnight);
        assert_eq!(Period::parse("晚上").unwrap(), Period::Night);
        assert!(Period::parse("noon").is_err());
    }

    #[test]
    fn headers_and_labels() {
        let zone = parse_zone("Asia/Shanghai").unwrap();
        assert_eq!(date_header(1_775_750_400.0, zone), "[日期 2026-04-10 周五]");
        assert_eq!(minute_label(1_775_779_200.0, zone), "2026-04-10 08:00");
        assert!(parse_zone("Mars/Base").is_err());
    }

    #[test]
    fn instants_and_dst() {
        let ny = parse_zone("America/New_York").unwrap();
        // 2025-11-02 01:30 happens twice in New York; 2025-03-09 02:30 never happens.
        assert!(
            parse_instant("2025-11-02 01:30", ny)
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            parse_instant("2025-03-09 02:30", ny)
                .unwrap_err()
                .contains("does not exist")
        );
        assert_eq!(
            parse_instant("2025-11-02T01:30:00-04:00", ny).unwrap(),
            1_762_061_400.0
        );
        let sh = parse_zone("Asia/Shanghai").unwrap();
        assert_eq!(
            parse_instant("2026-04-10 08:00", sh).unwrap(),
            1_775_779_200.0
        );
        assert!(parse_instant("yesterday", sh).is_err());
        let date = parse_date("2026-04-10").unwrap();
        assert_eq!(day_start(date, sh), 1_775_750_400.0);
        assert!(parse_date("2026-13-01").is_err());
    }
}

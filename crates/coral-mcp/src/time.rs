//! Parsing times given on the command line.

/// Parse an RFC 3339 time (`2026-04-10T09:30:00Z`, `2026-04-10 09:30:00+08:00`) or Unix seconds.
pub fn parse_time(text: &str) -> Result<f64, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(secs);
        }
        return Err(format!("time {text:?} must be a non-negative Unix time"));
    }
    t.parse::<jiff::Timestamp>()
        .map(|ts| ts.as_nanosecond() as f64 / 1e9)
        .map_err(|e| format!("time {text:?} is neither RFC 3339 nor Unix seconds: {e}"))
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn accepts_rfc3339_and_unix_seconds() {
        assert_eq!(parse_time("1700000000.5"), Ok(1_700_000_000.5));
        assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000.0));
        assert_eq!(parse_time("2023-11-15T06:13:20+08:00"), Ok(1_700_000_000.0));
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("-5").is_err());
        assert!(parse_time("NaN").is_err());
    }
}

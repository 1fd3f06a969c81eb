//! Parsing times given on the command line.

/// Parse an RFC 3339 time (`2026-04-10T09:30:00Z`, `2026-04-10 09:30:00+08:00`) or Unix seconds,
/// from 1970 to the end of 9999 (0..=[`coral::MAX_UNIX_TIME`], the range the facade accepts).
pub fn parse_time(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let secs = match t.parse::<f64>() {
        Ok(secs) => secs,
        Err(_) => t
            .parse::<jiff::Timestamp>()
            .map(|ts| ts.as_nanosecond() as f64 / 1e9)
            .map_err(|e| {
                format!(
                    "time {} is neither RFC 3339 nor Unix seconds: {e}",
                    coral::echo(text)
                )
            })?,
    };
    if secs.is_finite() && (0.0..=coral::MAX_UNIX_TIME).contains(&secs) {
        return Ok(secs);
    }
    Err(format!(
        "time {} is outside 1970-01-01T00:00:00Z..=9999-12-31T23:59:59Z (Unix seconds 0 to {}); \
         give seconds, not milliseconds",
        coral::echo(text),
        coral::MAX_UNIX_TIME
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn accepts_rfc3339_and_unix_seconds() {
        assert_eq!(parse_time("1700000000.5"), Ok(1_700_000_000.5));
        assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000.0));
        assert_eq!(parse_time("2023-11-15T06:13:20+08:00"), Ok(1_700_000_000.0));
        assert_eq!(parse_time("0"), Ok(0.0));
        assert_eq!(parse_time("253402300799"), Ok(253_402_300_799.0));
        // jiff stops a day early (it keeps room for offsets), so the last date it reads is
        // before the last second the facade accepts.
        assert_eq!(parse_time("9999-12-30T00:00:00Z"), Ok(253_402_128_000.0));
    }

    #[test]
    fn refuses_garbage_and_times_outside_1970_to_9999() {
        for bad in [
            "yesterday",
            "-5",
            "NaN",
            "inf",
            "1e20",
            "1e300",
            "253402300800",
        ] {
            let e = parse_time(bad).expect_err(bad);
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        // Milliseconds by mistake: refused, with the hint.
        let e = parse_time("1700000000000").unwrap_err();
        assert!(e.contains("not milliseconds"), "{e}");
        // Before 1970 as a date.
        assert!(parse_time("1969-12-31T23:59:59Z").is_err());
        let long = "9".repeat(10_000);
        assert!(parse_time(&long).unwrap_err().len() < 400);
    }
}

//! Exponential recency decay.

const SECONDS_PER_DAY: f64 = 86_400.0;

/// Recency factor `exp(-age / (tau_days · 86400))`, in `[0, 1]`.
///
/// Edge cases never produce NaN:
/// - a negative age (a timestamp in the future) counts as age 0 and gives `1.0`;
/// - a NaN or infinite age gives `0.0` (a NaN age means "unknown", which earns no recency);
/// - `tau_days <= 0` or NaN means "only the present counts": `1.0` at age 0, else `0.0`;
/// - `tau_days = +∞` means no decay: `1.0` for every finite age.
///
/// ```
/// use coral_score::time_decay;
/// assert_eq!(time_decay(0.0, 7.0), 1.0);
/// assert!((time_decay(7.0 * 86400.0, 7.0) - (-1.0f64).exp()).abs() < 1e-12);
/// assert_eq!(time_decay(-5.0, 7.0), 1.0);
/// assert_eq!(time_decay(10.0, 0.0), 0.0);
/// ```
pub fn time_decay(age_seconds: f64, tau_days: f64) -> f64 {
    if age_seconds.is_nan() || age_seconds == f64::INFINITY {
        return 0.0;
    }
    if age_seconds <= 0.0 {
        return 1.0;
    }
    if tau_days.is_nan() || tau_days <= 0.0 {
        return 0.0;
    }
    (-age_seconds / (tau_days * SECONDS_PER_DAY)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(age: f64, tau: f64, expected: f64) {
        let got = time_decay(age, tau);
        assert!(
            (got - expected).abs() < 1e-12,
            "time_decay({age}, {tau}) = {got}, want {expected}"
        );
    }

    #[test]
    fn cases() {
        check(0.0, 7.0, 1.0);
        check(-1e9, 7.0, 1.0);
        check(86_400.0, 1.0, (-1.0f64).exp());
        check(3.0 * 86_400.0, 7.0, (-3.0f64 / 7.0).exp());
        check(1.0, 0.0, 0.0);
        check(0.0, 0.0, 1.0);
        check(1.0, -3.0, 0.0);
        check(1.0, f64::NAN, 0.0);
        check(0.0, f64::NAN, 1.0);
        check(1e12, f64::INFINITY, 1.0);
        check(f64::INFINITY, f64::INFINITY, 0.0);
        check(f64::NAN, 7.0, 0.0);
        check(f64::NEG_INFINITY, 7.0, 1.0);
    }

    proptest! {
        #[test]
        fn in_unit_range_and_monotone(
            a in any::<f64>(),
            b in any::<f64>(),
            tau in prop_oneof![any::<f64>(), 0.01f64..365.0],
        ) {
            let (da, db) = (time_decay(a, tau), time_decay(b, tau));
            prop_assert!((0.0..=1.0).contains(&da));
            if a <= b {
                prop_assert!(da >= db, "older must not score higher: {a} -> {da}, {b} -> {db}");
            }
        }
    }
}

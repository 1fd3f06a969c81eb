//! The heat formula (docs/heat.md): frequency, recency and importance, weighted.

/// Weights of the three heat terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeatWeights {
    /// Weight of the access-frequency term.
    pub frequency: f64,
    /// Weight of the recency-of-access term.
    pub recency: f64,
    /// Weight of the importance term.
    pub importance: f64,
}

impl Default for HeatWeights {
    fn default() -> Self {
        HeatWeights {
            frequency: 0.4,
            recency: 0.3,
            importance: 0.3,
        }
    }
}

/// Parameters of the heat formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeatParams {
    /// Term weights.
    pub weights: HeatWeights,
    /// Recency decay constant in days.
    pub tau_days: f64,
    /// The access count that saturates the frequency term (at least 1).
    pub freq_scale: f64,
}

impl Default for HeatParams {
    fn default() -> Self {
        HeatParams {
            weights: HeatWeights::default(),
            tau_days: 7.0,
            freq_scale: 10.0,
        }
    }
}

/// Heat of one item at time `now` (seconds).
///
/// `H = w_f·log2(1+count)/log2(1+scale) + w_r·exp(−(now−last_access)/(tau·86400)) + w_i·clamp(importance)`
/// with `scale = max(freq_scale, 1)`, raised to `pool_max` (the pool's largest access count)
/// when one is given, so that eviction compares items relative to their pool.
///
/// An access in the future counts as "now" (recency 1). A non-positive `tau_days` makes the
/// recency term 1 at age zero and 0 otherwise. NaN importance counts as 0.
pub fn heat(
    access_count: u64,
    last_access: f64,
    importance: f64,
    now: f64,
    params: &HeatParams,
    pool_max: Option<u64>,
) -> f64 {
    let mut scale = if params.freq_scale.is_finite() {
        params.freq_scale.max(1.0)
    } else {
        1.0
    };
    if let Some(max) = pool_max {
        scale = scale.max(max as f64);
    }
    let frequency = (1.0 + access_count as f64).log2() / (1.0 + scale).log2();
    let age = (now - last_access).max(0.0);
    let recency = if params.tau_days > 0.0 && params.tau_days.is_finite() {
        (-age / (params.tau_days * 86_400.0)).exp()
    } else if age == 0.0 {
        1.0
    } else {
        0.0
    };
    let importance = if importance.is_nan() {
        0.0
    } else {
        importance.clamp(0.0, 1.0)
    };
    let w = &params.weights;
    w.frequency * frequency + w.recency * recency + w.importance * importance
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_heat_examples() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/coral_test_vectors.json"
        );
        let data: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let examples = data["heat_examples"].as_array().unwrap();
        assert!(examples.len() >= 5);
        let params = HeatParams::default();
        for ex in examples {
            let now = 1_700_000_000.0;
            let count = ex["access_count"].as_u64().unwrap();
            let age = ex["age_seconds"].as_f64().unwrap();
            let importance = ex["importance"].as_f64().unwrap();
            let pool_max = ex["pool_max"].as_u64();
            let expected = ex["heat"].as_f64().unwrap();
            let got = heat(count, now - age, importance, now, &params, pool_max);
            assert!(
                (got - expected).abs() < 1e-12,
                "heat({ex}) = {got}, expected {expected}"
            );
        }
    }

    #[test]
    fn odd_inputs_stay_finite() {
        let p = HeatParams {
            tau_days: 0.0,
            freq_scale: f64::NAN,
            ..HeatParams::default()
        };
        let h = heat(u64::MAX, 10.0, f64::NAN, 5.0, &p, Some(u64::MAX));
        assert!(h.is_finite());
        assert_eq!(heat(0, 0.0, 2.0, 10.0, &p, None), 0.3);
    }

    proptest::proptest! {
        #[test]
        fn heat_cools_with_time(count in 0u64..10_000, imp in 0.0f64..1.0, a in 0.0f64..1e7, b in 0.0f64..1e7) {
            let p = HeatParams::default();
            let (early, late) = if a < b { (a, b) } else { (b, a) };
            let h_early = heat(count, 0.0, imp, early, &p, None);
            let h_late = heat(count, 0.0, imp, late, &p, None);
            proptest::prop_assert!(h_late <= h_early);
        }

        #[test]
        fn heat_grows_with_hits(count in 0u64..10_000, imp in 0.0f64..1.0, age in 0.0f64..1e7) {
            let p = HeatParams::default();
            proptest::prop_assert!(heat(count + 1, 0.0, imp, age, &p, None) > heat(count, 0.0, imp, age, &p, None));
        }
    }
}

//! Tier movement policies: TTL demotion and least-recently-used overflow.

/// One item as the lifecycle policies see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The caller's handle for the item (a row number); returned in decisions.
    pub key: u32,
    /// Creation time, Unix seconds.
    pub timestamp: f64,
    /// Last hit or merge, Unix seconds.
    pub last_access: f64,
    /// Number of accesses (1 at insert).
    pub access_count: u64,
    /// Importance in 0..1.
    pub importance: f64,
}

/// Keys of the candidates created more than `ttl_seconds` before `now`, oldest first.
pub fn ttl_expired(tier: &[Candidate], now: f64, ttl_seconds: f64) -> Vec<u32> {
    let mut expired: Vec<&Candidate> = tier
        .iter()
        .filter(|c| now - c.timestamp > ttl_seconds)
        .collect();
    expired.sort_by(|a, b| a.timestamp.total_cmp(&b.timestamp).then(a.key.cmp(&b.key)));
    expired.into_iter().map(|c| c.key).collect()
}

/// Keys of the least recently accessed candidates beyond the first `max`, so that the tier
/// keeps exactly `max` items. Ties go by older creation time, then smaller key.
pub fn lru_overflow(tier: &[Candidate], max: usize) -> Vec<u32> {
    let excess = tier.len().saturating_sub(max);
    if excess == 0 {
        return Vec::new();
    }
    let mut order: Vec<&Candidate> = tier.iter().collect();
    let by_age = |a: &&Candidate, b: &&Candidate| {
        a.last_access
            .total_cmp(&b.last_access)
            .then(a.timestamp.total_cmp(&b.timestamp))
            .then(a.key.cmp(&b.key))
    };
    if excess < order.len() {
        order.select_nth_unstable_by(excess - 1, by_age);
        order.truncate(excess);
    }
    order.sort_by(by_age);
    order.into_iter().map(|c| c.key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(key: u32, timestamp: f64, last_access: f64) -> Candidate {
        Candidate {
            key,
            timestamp,
            last_access,
            access_count: 1,
            importance: 0.5,
        }
    }

    #[test]
    fn ttl_picks_only_items_past_their_ttl() {
        let tier = [
            cand(1, 100.0, 100.0),
            cand(2, 10.0, 500.0),
            cand(3, 50.0, 50.0),
        ];
        assert_eq!(ttl_expired(&tier, 200.0, 100.0), vec![2, 3]);
        assert_eq!(ttl_expired(&tier, 200.0, 1_000.0), Vec::<u32>::new());
    }

    #[test]
    fn lru_overflow_keeps_the_most_recently_used() {
        let tier = [
            cand(1, 0.0, 40.0),
            cand(2, 0.0, 10.0),
            cand(3, 0.0, 30.0),
            cand(4, 0.0, 20.0),
        ];
        assert_eq!(lru_overflow(&tier, 2), vec![2, 4]);
        assert_eq!(lru_overflow(&tier, 0), vec![2, 4, 3, 1]);
        assert!(lru_overflow(&tier, 4).is_empty());
        assert!(lru_overflow(&tier, 10).is_empty());
    }
}

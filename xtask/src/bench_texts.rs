//! The fixed English sentences both embedding benches time (`embed_bench.rs` for ONNX,
//! `use_bench.rs` for USE), so their figures compare.

/// Deterministic short English sentences (10–16 tokens), all different.
pub(crate) fn sentences(n: usize) -> Vec<String> {
    const WHO: [&str; 6] = [
        "The user",
        "Alice",
        "The team",
        "Our client",
        "Bob",
        "The agent",
    ];
    const DID: [&str; 8] = [
        "booked a flight to",
        "prefers the hotel near",
        "asked about the weather in",
        "sent the quarterly report from",
        "wants vegetarian food in",
        "scheduled a meeting in",
        "lost a suitcase in",
        "moved the project office to",
    ];
    const WHERE: [&str; 9] = [
        "Tokyo", "Lyon", "Nairobi", "Lima", "Oslo", "Hanoi", "Denver", "Porto", "Seoul",
    ];
    const WHEN: [&str; 7] = [
        "last Monday",
        "on Friday morning",
        "next spring",
        "before the holidays",
        "after the conference",
        "this weekend",
        "yesterday evening",
    ];
    (0..n)
        .map(|i| {
            format!(
                "{} {} {} {} (note {i}).",
                WHO[i % WHO.len()],
                DID[(i / 6) % DID.len()],
                WHERE[(i / 48) % WHERE.len()],
                WHEN[(i * 5) % WHEN.len()]
            )
        })
        .collect()
}

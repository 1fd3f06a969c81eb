//! A rough load figure for docs/postgres.md ("Cost"): `W` writer threads, each with its own
//! store (its own pool, as separate processes would have), insert `N` memories in total into
//! one fresh tenant, then `Q` keyword + vector searches run one after another; prints the
//! insert rate and the search latency's median and range.
//!
//! `CORAL_POSTGRES_URL=... cargo run -p coral-pg --example pg_load -- [N] [W] [Q]`
//! (defaults 4000, 4, 200; `CORAL_PG_LOAD_TENANT` names an earlier run's tenant to search).
//! Not a test: nothing is asserted but that the calls succeed.

use std::time::{Duration, Instant};

use coral_embed::{HashEmbedder, item_id, text_features, token_count};
use coral_pg::{NewMemory, PgOptions, PgStore, SearchQuery};
use coral_score::{HybridParams, search_query};
use coral_store::{Item, Tier};

const DIM: usize = 384;

fn words(seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A Zipf-ish vocabulary: small numbers (common words) far more often.
            let r = (x % 1_000_000) as f64 / 1_000_000.0;
            format!("w{}", (r * r * r * 20_000.0) as u64)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(4_000);
    let w = args.get(1).copied().unwrap_or(4).max(1);
    let q = args.get(2).copied().unwrap_or(200);
    let url = std::env::var(coral_pg::URL_ENV).expect("set CORAL_POSTGRES_URL");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // CORAL_PG_LOAD_TENANT searches (and adds to) an earlier run's tenant.
    let tenant = std::env::var("CORAL_PG_LOAD_TENANT").unwrap_or_else(|_| format!("load-{nanos}"));
    let embedder = HashEmbedder::new(DIM).expect("embedder");

    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..w {
            let (url, tenant, embedder) = (&url, &tenant, &embedder);
            s.spawn(move || {
                let store =
                    PgStore::connect(PgOptions::new(url.as_str()), tenant, DIM).expect("connect");
                for i in (t..n).step_by(w) {
                    let text = words(i as u64, 24);
                    let item = Item::new(
                        item_id(&text),
                        text.as_str(),
                        token_count(&text),
                        1_000.0 + i as f64,
                        0.5,
                    );
                    let vector = embedder.embed_text(&text);
                    let tokens = text_features(&text).token_set;
                    let new = NewMemory {
                        item: &item,
                        tier: Tier::Hot,
                        vector: &vector,
                        embedder: "hash",
                        token_set: &tokens,
                    };
                    store.insert(&new, 0.7).expect("insert");
                }
            });
        }
    });
    let elapsed = started.elapsed();
    println!(
        "inserts: {n} by {w} writers in {:.2} s = {:.0}/s",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64()
    );

    let store = PgStore::connect(PgOptions::new(url.as_str()), &tenant, DIM).expect("connect");
    println!("rows: {}", store.count().expect("count").total());
    let mut times: Vec<Duration> = Vec::with_capacity(q);
    for i in 0..q {
        let text = words(10_000_000 + i as u64, 6);
        let keywords = search_query(&text, 0.0);
        let vector = embedder.embed_text(&text);
        let query = SearchQuery {
            vector: Some(&vector),
            keywords: &keywords,
            question: true,
            params: HybridParams::default(),
            depth: 100,
            project: None,
            ef_search: 100,
            embedder: None,
            window: None,
            cold: coral_pg::ColdFilter::All,
        };
        let t = Instant::now();
        let hits = store.search(&query, 10).expect("search");
        times.push(t.elapsed());
        assert!(hits.len() <= 10);
    }
    times.sort();
    if !times.is_empty() {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "search (hybrid, k 10, depth 100): p50 {:.2} ms, p90 {:.2} ms, range {:.2}..{:.2} ms over {q}",
            ms(times[times.len() / 2]),
            ms(times[times.len() * 9 / 10]),
            ms(times[0]),
            ms(times[times.len() - 1])
        );
    }
}

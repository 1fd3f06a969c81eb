//! The cost of one call through `Coral` on each backend (docs/postgres.md, "Cost"): N generated
//! memories inserted one by one, then Q hybrid searches (top 10; counted, so each also writes
//! its hits' counters), on the data directory and on a fresh tenant of `CORAL_POSTGRES_URL`.
//!
//! `cargo run --release -p coral --example backend_cost -- N Q [NEIGHBOURS]` (defaults 2000 200
//! and `retrieval.hybrid.neighbours`' default); prints one line per backend with the insert rate
//! and the latency percentiles of counted searches (which write their hits' counters) and of
//! uncounted ones.

use std::sync::Arc;
use std::time::Instant;

use coral::{Config, Coral, HashEmbedder, InsertOptions, SearchOptions};

const WORDS: &[&str] = &[
    "deploy",
    "staging",
    "database",
    "latency",
    "invoice",
    "customer",
    "refund",
    "budget",
    "meeting",
    "roadmap",
    "release",
    "migration",
    "backup",
    "kernel",
    "printer",
    "coffee",
    "lunch",
    "flight",
    "hotel",
    "visa",
    "passport",
    "doctor",
    "dentist",
    "garden",
    "tomato",
    "bicycle",
    "marathon",
    "guitar",
    "piano",
    "novel",
    "poem",
    "museum",
    "concert",
    "ticket",
    "birthday",
    "wedding",
    "recipe",
    "noodle",
    "dumpling",
    "sushi",
    "server",
    "cluster",
    "index",
    "query",
    "cache",
    "token",
    "vector",
    "search",
    "ranking",
    "memory",
    "thread",
    "agent",
    "prompt",
    "model",
    "tenant",
    "schema",
    "column",
    "table",
    "report",
    "chart",
    "咖啡",
    "会议",
    "数据库",
    "发布",
    "预算",
    "客户",
    "旅行",
    "医生",
    "花园",
    "音乐",
];

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| {
                let u = self.next();
                WORDS[((u * u) * WORDS.len() as f64) as usize % WORDS.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn run(name: &str, coral: &Coral, n: usize, q: usize) {
    let mut g = Lcg(7);
    let t0 = 1_775_433_600.0;
    let start = Instant::now();
    for i in 0..n {
        let len = 6 + (g.next() * 14.0) as usize;
        let text = format!("{} note {i}", g.words(len));
        let at = t0 + i as f64 * 60.0;
        coral
            .insert_with(
                &text,
                InsertOptions {
                    timestamp: Some(at),
                    now: Some(at),
                    ..InsertOptions::default()
                },
            )
            .expect("insert");
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    let mut timed = |counted: bool| {
        let mut ms: Vec<f64> = (0..q)
            .map(|_| {
                let len = 2 + (g.next() * 3.0) as usize;
                let query = g.words(len);
                let options = SearchOptions {
                    top_k: Some(10),
                    ..SearchOptions::default()
                };
                let t = Instant::now();
                match counted {
                    true => coral.search_with(&query, options),
                    false => coral.search_uncounted(&query, options),
                }
                .expect("search");
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        ms.sort_by(f64::total_cmp);
        ms
    };
    let counted = timed(true);
    let uncounted = timed(false);
    println!(
        "{name}: {n} memories, insert {rate:.0}/s; search (k 10) p50 {:.2} ms, p90 {:.2} ms, \
         range {:.2}-{:.2} ms over {q}; uncounted p50 {:.2} ms, p90 {:.2} ms",
        percentile(&counted, 0.5),
        percentile(&counted, 0.9),
        counted[0],
        counted[counted.len() - 1],
        percentile(&uncounted, 0.5),
        percentile(&uncounted, 0.9),
    );
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (n, q) = (
        args.first().copied().unwrap_or(2000),
        args.get(1).copied().unwrap_or(200),
    );
    let neighbours: Option<f64> = std::env::args().nth(3).and_then(|a| a.parse().ok());
    let config = |dir: &std::path::Path| {
        let mut c = Config {
            base_dir: dir.to_path_buf(),
            ..Config::default()
        };
        // Hash vectors vote, so that both backends run both rankings.
        c.retrieval.hybrid.hash_vector = 1.0;
        if let Some(w) = neighbours {
            c.retrieval.hybrid.neighbours = w;
        }
        c
    };
    let embedder = || Arc::new(HashEmbedder::new(384).expect("hash embedder"));
    let local_dir = tempfile::tempdir().expect("temp dir");
    let local = Coral::open_with(config(local_dir.path()), embedder()).expect("open local");
    run("local", &local, n, q);
    drop(local);
    let Ok(url) = std::env::var("CORAL_POSTGRES_URL") else {
        eprintln!("CORAL_POSTGRES_URL is not set: the postgres line is missing");
        return;
    };
    let pg_dir = tempfile::tempdir().expect("temp dir");
    let mut c = config(pg_dir.path());
    c.storage.backend = "postgres".into();
    c.storage.postgres_url = url;
    c.storage.postgres_tenant = format!("cost-{}-{n}", std::process::id());
    let pg = Coral::open_with(c, embedder()).expect("open postgres");
    run("postgres", &pg, n, q);
}

//! Ranking parity (docs/postgres.md, "Search"): the same generated corpus in both backends,
//! the same queries (keywords, vectors, projects, neighbouring context, time windows, counted
//! hits), the same top 10 with the same scores.

use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions, SearchHit, SearchOptions};

use super::common::{DIM, postgres_url, tenant};

/// Start of the corpus, a Monday 00:00 UTC.
const T0: f64 = 1_775_433_600.0;

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

/// A small deterministic generator (64-bit LCG), so that both backends get the same corpus.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A word, the first ones more often (roughly Zipf).
    fn word(&mut self) -> &'static str {
        let u = self.next();
        WORDS[((u * u) * WORDS.len() as f64) as usize % WORDS.len()]
    }

    fn words(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

fn config(dir: &std::path::Path) -> Config {
    let mut c = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    c.storage.sync = "never".into();
    // No tier moves or governance: parity is about ranking (tiers and governance on both
    // backends are `governance.rs`'s).
    c.memory.max_hot_entries = 100_000;
    c.memory.max_warm_entries = 100_000;
    c.memory.hot_ttl_hours = 1e7;
    c.memory.capacity_threshold = 100_000;
    // Hash vectors vote too, so that the vector ranking and its spread are compared.
    c.retrieval.hybrid.hash_vector = 1.0;
    c
}

fn open_both(dirs: &[tempfile::TempDir; 2], url: &str) -> [Coral; 2] {
    let local = Coral::open_with(
        config(dirs[0].path()),
        Arc::new(HashEmbedder::new(DIM).unwrap()),
    )
    .unwrap();
    let mut pg = config(dirs[1].path());
    pg.storage.backend = "postgres".into();
    pg.storage.postgres_url = url.into();
    pg.storage.postgres_tenant = tenant("parity");
    let pg = Coral::open_with(pg, Arc::new(HashEmbedder::new(DIM).unwrap())).unwrap();
    [local, pg]
}

/// The corpus: 600 memories, five minutes apart in sessions of 12 (so neighbours count; every
/// fifth session's last four at one instant), sessions a day apart, a third in project alpha, a sixth in beta, a few exact repeats.
fn corpus() -> Vec<(String, InsertOptions)> {
    let mut g = Lcg(0x5eed);
    let mut out = Vec::new();
    for i in 0..600u32 {
        let session = f64::from(i / 12);
        // Every fifth session ends with four memories at one instant: ties in time, which the
        // neighbouring context breaks by id (and which the database's short walk cannot
        // settle, so it walks again).
        let slot = match (i / 12) % 5 {
            0 => (i % 12).min(8),
            _ => i % 12,
        };
        let at = T0 + session * 86_400.0 + f64::from(slot) * 300.0;
        let n = 6 + (g.next() * 10.0) as usize;
        let text = if i % 97 == 96 {
            out.last()
                .map(|(t, _): &(String, InsertOptions)| t.clone())
                .unwrap_or_default()
        } else {
            format!("{} note {i}", g.words(n))
        };
        let project = match i % 6 {
            0 | 3 => Some("alpha".to_string()),
            1 => Some("beta".to_string()),
            _ => None,
        };
        out.push((
            text,
            InsertOptions {
                importance: (g.next() * 10.0).floor() / 10.0,
                project,
                timestamp: Some(at),
                now: Some(at),
            },
        ));
    }
    out
}

fn queries() -> Vec<(String, Option<&'static str>)> {
    let mut g = Lcg(0xfeed);
    let mut q: Vec<(String, Option<&'static str>)> = (0..24)
        .map(|i| {
            let n = 1 + (g.next() * 3.0) as usize;
            let project = match i % 4 {
                1 => Some("alpha"),
                3 => Some("beta"),
                _ => None,
            };
            (g.words(n), project)
        })
        .collect();
    for extra in [
        "what did we say about the deploy yesterday",
        "coffee meeting last week",
        "上周的会议",
        "数据库 发布",
        "ranking vector search memory",
        "the staging database latency report",
        "what happened yesterday",
        "昨天",
        "上周发生了什么",
    ] {
        q.push((extra.to_string(), None));
    }
    q
}

/// The clock of the searches: noon of the day after the last session (day 49), so that
/// "yesterday" holds a session.
const NOW: f64 = T0 + 50.5 * 86_400.0;

fn top(c: &Coral, query: &str, project: Option<&str>, counted: bool) -> Vec<SearchHit> {
    let options = SearchOptions {
        top_k: Some(10),
        project: project.map(String::from),
        now: Some(NOW),
        timezone: Some("UTC".into()),
        ..SearchOptions::default()
    };
    match counted {
        true => c.search_with(query, options).unwrap(),
        false => c.search_uncounted(query, options).unwrap(),
    }
}

fn same(local: &[SearchHit], pg: &[SearchHit], what: &str) {
    let ids = |h: &[SearchHit]| h.iter().map(|h| h.item.item_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(local), ids(pg), "{what}: top 10 differ");
    for (l, p) in local.iter().zip(pg) {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * (1.0 + a.abs());
        assert!(
            close(l.score, p.score),
            "{what}: score {} vs {}",
            l.score,
            p.score
        );
        assert!(
            close(l.scores.vector, p.scores.vector),
            "{what}: {:?} vs {:?}",
            l.scores,
            p.scores
        );
        assert!(
            close(l.scores.jaccard, p.scores.jaccard),
            "{what}: {:?} vs {:?}",
            l.scores,
            p.scores
        );
        assert!(
            close(l.scores.time, p.scores.time),
            "{what}: {:?} vs {:?}",
            l.scores,
            p.scores
        );
        let (lb, pb) = (l.scores.bm25.unwrap_or(0.0), p.scores.bm25.unwrap_or(0.0));
        assert!(close(lb, pb), "{what}: {:?} vs {:?}", l.scores, p.scores);
        assert_eq!(l.item.access_count, p.item.access_count, "{what}");
        assert_eq!(l.tier, p.tier, "{what}");
    }
}

#[test]
fn the_same_queries_give_the_same_top_ten_on_both_backends() {
    let Some(url) = postgres_url() else {
        return;
    };
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let both = open_both(&dirs, &url);
    for (text, options) in corpus() {
        let a = both[0].insert_with(&text, options.clone()).unwrap();
        let b = both[1].insert_with(&text, options).unwrap();
        assert_eq!(a.outcome, b.outcome, "{text}");
    }
    assert_eq!(both[0].stats().total, both[1].stats().total);
    let mut nonempty = 0;
    for (query, project) in queries() {
        let what = format!("{query:?} in {project:?}");
        let local = top(&both[0], &query, project, false);
        let pg = top(&both[1], &query, project, false);
        same(&local, &pg, &what);
        nonempty += usize::from(!local.is_empty());
    }
    assert!(nonempty >= 28, "{nonempty} queries found something");
    // Counted searches touch the same hits; the heat they add ranks alike afterwards.
    for (query, project) in queries().into_iter().take(10) {
        let local = top(&both[0], &query, project, true);
        let pg = top(&both[1], &query, project, true);
        same(&local, &pg, &format!("counted {query:?}"));
    }
    for (query, project) in queries() {
        let local = top(&both[0], &query, project, false);
        let pg = top(&both[1], &query, project, false);
        same(
            &local,
            &pg,
            &format!("after the touches, {query:?} in {project:?}"),
        );
    }
}

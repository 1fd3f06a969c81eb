//! The approximate vector index through the public API (docs/ann.md): the same results as the
//! exact pass where it can see everything, recall against the exact pass at scale, and a
//! process killed while saving the index never leaves one that is trusted and wrong.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use coral::{Config, Coral, HashEmbedder, InsertOptions, SearchHit, SearchOptions};

const NOW: f64 = 1_775_822_400.0;

fn config(dir: &Path, ann_threshold: usize) -> Config {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.sim_threshold_hot = 1.0;
    config.memory.capacity_threshold = 1_000_000;
    config.memory.max_cold_entries = 1_000_000;
    config.retrieval.ann_threshold = ann_threshold;
    // The hash vectors vote (they weigh 0 by default, and then no vector ranking runs).
    config.retrieval.hybrid.hash_vector = 1.0;
    config
}

fn open(dir: &Path, ann_threshold: usize, dim: usize) -> Coral {
    Coral::open_with(
        config(dir, ann_threshold),
        Arc::new(HashEmbedder::new(dim).unwrap()),
    )
    .unwrap()
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Texts of 6 to 11 words from a skewed vocabulary of 5,000.
fn texts(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let words: Vec<String> = (0..6 + rng.next() % 6)
                .map(|_| {
                    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                    format!("w{}", 5000f64.powf(u) as u64)
                })
                .collect();
            format!("entry{i} {}", words.join(" "))
        })
        .collect()
}

fn insert_all(coral: &Coral, texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let options = InsertOptions {
                timestamp: Some(NOW - 1e5 + i as f64),
                now: Some(NOW),
                project: Some(format!("p{}", i % 3)),
                ..InsertOptions::default()
            };
            coral.insert_with(t, options).unwrap().id().to_string()
        })
        .collect()
}

/// A search boosting project p1 (`boost`) or none.
fn search_as(coral: &Coral, query: &str, k: usize, boost: bool) -> Vec<SearchHit> {
    let options = SearchOptions {
        top_k: Some(k),
        now: Some(NOW),
        project: boost.then(|| "p1".to_string()),
        ..SearchOptions::default()
    };
    coral.search_with(query, options).unwrap()
}

/// A search with no project: hits in order of relevance alone.
fn search(coral: &Coral, query: &str, k: usize) -> Vec<SearchHit> {
    search_as(coral, query, k, false)
}

fn queries(texts: &[String], n: usize) -> Vec<String> {
    let mut rng = Rng(99);
    (0..n)
        .map(|_| {
            let of = &texts[(rng.next() % texts.len() as u64) as usize];
            let words: Vec<&str> = of.split_whitespace().skip(1).collect();
            words[..words.len().div_ceil(2)].join(" ")
        })
        .collect()
}

/// Where the graph's candidates cover the whole pool (150 items, `ann_ef` 160), the index
/// path must give what the exact pass gives, score for score: rows, ties, spread, fusion,
/// priors and the project boost all agree. Run side by side on two identical directories
/// (searches count their hits, so one store cannot serve both).
#[test]
fn forced_index_gives_the_exact_results_where_it_sees_everything() {
    let texts = texts(150, 5);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let exact = open(a.path(), 0, 48);
    let approx = open(b.path(), 1, 48);
    let ids = insert_all(&exact, &texts);
    assert_eq!(insert_all(&approx, &texts), ids);
    for (round, q) in queries(&texts, 30).iter().enumerate() {
        if round == 10 {
            // Deletes and moved rows in between.
            for id in ids.iter().step_by(9) {
                assert!(exact.delete(id).unwrap());
                assert!(approx.delete(id).unwrap());
            }
        }
        let want = search_as(&exact, q, 8, true);
        let got = search_as(&approx, q, 8, true);
        assert!(!want.is_empty());
        assert_eq!(got, want, "query {q:?}");
    }
    let report = approx.prepare_vector_index(|_, _| {}).unwrap();
    assert_eq!(report.vectors, approx.stats().total);
    // 48 dims and ~18 non-zero components a vector: dense enough for the graph.
    assert!(!report.sparse, "{report:?}");
}

/// Hash vectors of 384 dims are sparse (about 18 of 384 components non-zero here), so the
/// pool gets the sparse index, whose ranking is exact: forced on at 400 items, with deletes
/// (rows moved), a late insert and a project boost, the results equal the exact path's,
/// score for score.
#[test]
fn sparse_index_gives_the_exact_results() {
    let texts = texts(400, 8);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let exact = open(a.path(), 0, 384);
    let sparse = open(b.path(), 1, 384);
    let ids = insert_all(&exact, &texts);
    assert_eq!(insert_all(&sparse, &texts), ids);
    let report = sparse.prepare_vector_index(|_, _| {}).unwrap();
    assert!(report.sparse, "{report:?}");
    for (round, q) in queries(&texts, 40).iter().enumerate() {
        if round == 15 {
            for id in ids.iter().step_by(7) {
                assert!(exact.delete(id).unwrap());
                assert!(sparse.delete(id).unwrap());
            }
            let late = "entry-late w1 w2 w3 w17 w400";
            let x = exact
                .insert_with(
                    late,
                    InsertOptions {
                        timestamp: Some(NOW),
                        now: Some(NOW),
                        ..InsertOptions::default()
                    },
                )
                .unwrap();
            let y = sparse
                .insert_with(
                    late,
                    InsertOptions {
                        timestamp: Some(NOW),
                        now: Some(NOW),
                        ..InsertOptions::default()
                    },
                )
                .unwrap();
            assert_eq!(x.id(), y.id());
        }
        for boost in [false, true] {
            let want = search_as(&exact, q, 8, boost);
            let got = search_as(&sparse, q, 8, boost);
            assert!(!want.is_empty(), "query {q:?}");
            assert_eq!(got, want, "query {q:?}, boost {boost}");
        }
    }
    let report = sparse.prepare_vector_index(|_, _| {}).unwrap();
    assert!(report.sparse && !report.loaded);
    assert_eq!(report.vectors, sparse.stats().total);
}

/// The CI run of stress-1m's recall check: 10,000 memories (about 20 s in a debug
/// build; the index itself is built optimised), the index forced on, vectors alone ranking
/// (BM25 and priors off, so that hits counted by one search cannot move the next), 40
/// queries: recall@10 of the index path against the exact path on the same store.
#[test]
fn recall_against_the_exact_path_with_the_index_forced_on() {
    let texts = texts(10_000, 6);
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), 1);
    c.retrieval.hybrid.bm25 = 0.0;
    c.retrieval.hybrid.prior = 0.0;
    let coral = Coral::open_with(c.clone(), Arc::new(HashEmbedder::new(128).unwrap())).unwrap();
    insert_all(&coral, &texts);
    let report = coral.prepare_vector_index(|_, _| {}).unwrap();
    assert_eq!(report.vectors, 10_000);
    let qs = queries(&texts, 40);
    let approximate: Vec<Vec<SearchHit>> = qs.iter().map(|q| search(&coral, q, 10)).collect();
    let mut exact_config = c;
    exact_config.retrieval.ann_threshold = 0;
    coral.set_config(exact_config).unwrap();
    let mut found = 0usize;
    let mut wanted = 0usize;
    for (q, got) in qs.iter().zip(&approximate) {
        let want = search(&coral, q, 10);
        let Some(kth) = want.last().map(|h| h.scores.vector) else {
            continue;
        };
        wanted += want.len();
        // A hit tying the exact 10th cosine counts (hash vectors tie often).
        found += got
            .iter()
            .filter(|h| h.scores.vector >= kth - 1e-6)
            .count()
            .min(want.len());
    }
    let recall = found as f64 / wanted as f64;
    assert!(wanted >= 300, "too few exact hits to measure ({wanted})");
    assert!(recall >= 0.95, "recall@10 {recall}");
}

/// A process that saves the index over and over (checkpoints after inserts and deletes) is
/// killed with SIGKILL at random moments; each time the directory is opened again, the index
/// it loads must hold exactly the pool's vectors (a stale file is caught up, a torn one
/// rebuilt) and find what the exact pass finds.
#[test]
fn a_kill_during_an_index_save_never_leaves_a_trusted_wrong_index() {
    if let Ok(dir) = std::env::var("CORAL_ANN_KILL_CHILD") {
        child(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(3);
    let (mut loaded, mut found, mut wanted) = (0, 0usize, 0usize);
    for round in 0..8 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "a_kill_during_an_index_save_never_leaves_a_trusted_wrong_index",
                "--nocapture",
            ])
            .env("CORAL_ANN_KILL_CHILD", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300 + rng.next() % 900));
        child.kill().unwrap();
        child.wait().unwrap();

        // Vectors alone rank (no BM25, no priors), so that the two handles' hits, counted by
        // each search, cannot move the other's order.
        let mut c = config(dir.path(), 1);
        c.retrieval.hybrid.bm25 = 0.0;
        c.retrieval.hybrid.prior = 0.0;
        let embedder = Arc::new(HashEmbedder::new(32).unwrap());
        let coral = Coral::open_with(c.clone(), embedder.clone()).unwrap();
        let report = coral.prepare_vector_index(|_, _| {}).unwrap();
        loaded += usize::from(report.loaded);
        assert_eq!(
            report.vectors,
            coral.stats().total,
            "round {round}: {report:?}"
        );
        c.retrieval.ann_threshold = 0;
        let exact = Coral::open_with(c, embedder).unwrap();
        for q in ["w1 w2", "w10 w300", "w4 w5 w6", "w2000 w3"] {
            let want = search(&exact, q, 5);
            let got = search(&coral, q, 5);
            let Some(kth) = want.last().map(|h| h.scores.vector) else {
                continue;
            };
            wanted += want.len();
            found += got
                .iter()
                .filter(|h| h.scores.vector >= kth - 1e-6)
                .count()
                .min(want.len());
        }
        drop(exact);
        coral.close().unwrap();
    }
    let recall = found as f64 / wanted.max(1) as f64;
    assert!(
        wanted >= 40 && recall >= 0.95,
        "recall {recall} over {wanted}"
    );
    // Most kills land after a first save: the file was loaded and caught up, not rebuilt.
    assert!(loaded > 0, "no round loaded a saved index");
}

/// The child: inserts, deletes and checkpoints (each saving the index) until killed.
fn child(dir: &Path) -> ! {
    let coral = open(dir, 1, 32);
    let mut rng = Rng(std::process::id() as u64);
    let mut n = 0u64;
    loop {
        let batch = texts(40, rng.next());
        let ids: Vec<String> = batch
            .iter()
            .map(|t| {
                n += 1;
                let text = format!("{t} pid{} n{n}", std::process::id());
                coral.insert(&text, 0.5).unwrap().id().to_string()
            })
            .collect();
        for id in ids.iter().step_by(5) {
            coral.delete(id).unwrap();
        }
        coral.prepare_vector_index(|_, _| {}).unwrap();
        coral.flush().unwrap();
    }
}

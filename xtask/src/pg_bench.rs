//! `cargo xtask pg-bench`: the PostgreSQL backend beside the local one at 100,000 memories
//! (docs/postgres.md, "Cost"; the targets of issue 21: search p50 ≤ 15 ms over loopback,
//! 4 writers ≥ 2,000 inserts/s).
//!
//! The same generated corpus (the stress run's synthetic vocabulary, sessions of 12 memories
//! five minutes apart, so neighbouring context counts; ten projects) goes through `Coral` into
//! a fresh tenant of a PostgreSQL server and into a fresh data directory, each loaded by `W`
//! writer threads sharing one `Coral`; then `Q` searches (top 10, hash vectors voting), first
//! uncounted, then counted, on each. Recall@10 is the share of the local exact top 10 (the
//! vector ranking by one exact pass, `retrieval.ann_threshold = 0`) that a backend's top 10
//! holds, over the uncounted queries. Progress goes to stderr during the loads; the table to
//! stdout; JSON to `target/coral-bench/pg-bench.json`. Not run in CI (minutes of load); the
//! smoke mode (`--smoke`: 2,000 memories, 30 queries) checks that it runs.
//!
//! The server: `CORAL_POSTGRES_URL`, else one started for the run with
//! `scripts/pg-test-server.sh` in `target/coral-bench/pg-server` (stopped and removed at the
//! end). Options: `--items N` (100,000), `--writers W` (4), `--queries Q` (300), `--smoke`,
//! `--tenant T` and `--dir D` (reuse an earlier run's tenant and data directory when they hold
//! N memories: the load is skipped and only the searches run), `--skip-local`, `--near`
//! (near duplicates merge at the default `memory.sim_threshold_hot` 0.7; without it only
//! exact repeats merge, as `search-1m` loads).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use coral::{Config, Coral, HashEmbedder, InsertOptions, SearchOptions};
use serde_json::{Value, json};

use crate::stress_1m::{Rng, percentile, query_text, text};

const DIM: usize = 384;
const K: usize = 10;
/// The corpus's clock: memories end a day before it.
const NOW: f64 = 1.9e9;

struct Options {
    items: usize,
    writers: usize,
    queries: usize,
    tenant: Option<String>,
    dir: Option<PathBuf>,
    skip_local: bool,
    near: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut o = Options {
        items: 100_000,
        writers: 4,
        queries: 300,
        tenant: None,
        dir: None,
        skip_local: false,
        near: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--smoke" => {
                o.items = 2_000;
                o.queries = 30;
                continue;
            }
            "--skip-local" => {
                o.skip_local = true;
                continue;
            }
            "--near" => {
                o.near = true;
                continue;
            }
            _ => {}
        }
        let value = it.next().with_context(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--items" => o.items = value.parse().with_context(|| format!("--items {value}"))?,
            "--writers" => {
                o.writers = value
                    .parse()
                    .with_context(|| format!("--writers {value}"))?
            }
            "--queries" => {
                o.queries = value
                    .parse()
                    .with_context(|| format!("--queries {value}"))?
            }
            "--tenant" => o.tenant = Some(value.clone()),
            "--dir" => o.dir = Some(value.into()),
            other => bail!(
                "unknown option {other:?} (--items N, --writers W, --queries Q, --smoke, \
                 --tenant T, --dir D, --skip-local, --near)"
            ),
        }
    }
    if o.items == 0 || o.writers == 0 || o.queries == 0 {
        bail!("--items, --writers and --queries must be at least 1");
    }
    Ok(o)
}

/// The corpus: text, project and creation time of memory `i`.
struct Memory {
    text: String,
    project: String,
    at: f64,
}

fn corpus(items: usize) -> Vec<Memory> {
    let mut rng = Rng(0x9b_be4c);
    let sessions = items.div_ceil(12);
    (0..items)
        .map(|i| {
            // Sessions of 12 five minutes apart, four hours between sessions.
            let session = (i / 12) as f64;
            let at =
                NOW - 86_400.0 - (sessions as f64 - session) * 14_400.0 + (i % 12) as f64 * 300.0;
            Memory {
                text: text(i, &mut rng),
                project: format!("p{}", i % 10),
                at,
            }
        })
        .collect()
}

fn queries(corpus: &[Memory], n: usize) -> Vec<(String, Option<String>)> {
    let mut rng = Rng(0x51_7e);
    (0..n)
        .map(|i| {
            let of = (rng.next() as usize) % corpus.len();
            let project = (i % 3 == 0).then(|| format!("p{}", rng.next() % 10));
            (query_text(&corpus[of].text, &mut rng), project)
        })
        .collect()
}

fn config(dir: &Path, items: usize, near: bool) -> Config {
    let mut c = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    c.storage.sync = "never".into();
    // No tier moves or governance (the database does not move tiers yet): both backends keep
    // every memory hot, so the corpora stay the same.
    let room = 10 * items.max(1000);
    c.memory.max_hot_entries = room;
    c.memory.max_warm_entries = room;
    c.memory.capacity_threshold = room;
    c.memory.max_cold_entries = room;
    c.memory.hot_ttl_hours = 1e7;
    // Exact repeats merge, near duplicates do not (as `search-1m` loads): the local pool's
    // near-duplicate check slowed its load to 56/s by 7,500 memories of this corpus, whose
    // every text holds "note" (docs/postgres.md, "Cost"). `--near` keeps the default 0.7.
    if !near {
        c.memory.sim_threshold_hot = 1.0;
    }
    // Hash vectors vote, so that both rankings run on both backends.
    c.retrieval.hybrid.hash_vector = 1.0;
    c
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Inserts the corpus with `writers` threads on one `Coral`; progress on stderr every 5 s.
/// Returns inserts per second.
fn load(name: &str, coral: &Coral, corpus: &[Memory], writers: usize) -> Result<f64> {
    let done = AtomicUsize::new(0);
    let finished = AtomicBool::new(false);
    let started = Instant::now();
    let failed: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for w in 0..writers {
            let (done, failed) = (&done, &failed);
            s.spawn(move || {
                for m in corpus.iter().skip(w).step_by(writers) {
                    let options = InsertOptions {
                        project: Some(m.project.clone()),
                        timestamp: Some(m.at),
                        now: Some(m.at),
                        ..InsertOptions::default()
                    };
                    if let Err(e) = coral.insert_with(&m.text, options) {
                        *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                        return;
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let (done, finished) = (&done, &finished);
        s.spawn(move || {
            let mut last = (Instant::now(), 0usize);
            while !finished.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if last.0.elapsed() < Duration::from_secs(5) {
                    continue;
                }
                let n = done.load(Ordering::Relaxed);
                let rate = (n - last.1) as f64 / last.0.elapsed().as_secs_f64();
                eprintln!(
                    "  {name}: {n} / {} inserted, {rate:.0}/s over the last 5 s ({:.0} s, load average {})",
                    corpus.len(),
                    started.elapsed().as_secs_f64(),
                    loadavg()
                );
                last = (Instant::now(), n);
            }
        });
        // The writers are joined when the scope ends; the reporter needs to be told.
        while done.load(Ordering::Relaxed) < corpus.len()
            && failed.lock().unwrap_or_else(|e| e.into_inner()).is_none()
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        finished.store(true, Ordering::Relaxed);
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        bail!("{name}: an insert failed: {e}");
    }
    Ok(corpus.len() as f64 / started.elapsed().as_secs_f64())
}

/// One search phase: latencies in ms (sorted) and each query's top ids.
fn searches(
    coral: &Coral,
    queries: &[(String, Option<String>)],
    counted: bool,
) -> Result<(Vec<f64>, Vec<Vec<String>>)> {
    let mut ms = Vec::with_capacity(queries.len());
    let mut tops = Vec::with_capacity(queries.len());
    for (q, project) in queries {
        let options = SearchOptions {
            top_k: Some(K),
            project: project.clone(),
            now: Some(NOW),
            ..SearchOptions::default()
        };
        let t = Instant::now();
        let hits = match counted {
            true => coral.search_with(q, options)?,
            false => coral.search_uncounted(q, options)?,
        };
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        tops.push(hits.into_iter().map(|h| h.item.item_id).collect());
    }
    ms.sort_by(f64::total_cmp);
    Ok((ms, tops))
}

fn latency(ms: &[f64]) -> Value {
    json!({
        "p50_ms": percentile(ms, 0.5),
        "p90_ms": percentile(ms, 0.9),
        "p99_ms": percentile(ms, 0.99),
        "min_ms": ms.first().copied().unwrap_or(0.0),
        "max_ms": ms.last().copied().unwrap_or(0.0),
    })
}

/// The mean share of `exact`'s ids each of `got` holds.
fn recall(got: &[Vec<String>], exact: &[Vec<String>]) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for (g, e) in got.iter().zip(exact) {
        if e.is_empty() {
            continue;
        }
        sum += e.iter().filter(|id| g.contains(id)).count() as f64 / e.len() as f64;
        n += 1;
    }
    if n == 0 { 1.0 } else { sum / n as f64 }
}

/// One backend's run: load (unless the store already holds the corpus), uncounted searches,
/// counted searches.
struct Run {
    inserts_per_s: Option<f64>,
    uncounted: Vec<f64>,
    counted: Vec<f64>,
    tops: Vec<Vec<String>>,
    /// The local exact tops (`retrieval.ann_threshold = 0`), on the state of the uncounted
    /// phase: taken between it and the counted one.
    exact_tops: Option<Vec<Vec<String>>>,
    /// Seconds the local vector index took to build after the load.
    index_s: Option<f64>,
    load_avg: [String; 2],
}

fn run_backend(
    name: &str,
    coral: &Coral,
    corpus: &[Memory],
    queries: &[(String, Option<String>)],
    writers: usize,
    exact: Option<Config>,
) -> Result<Run> {
    let before = loadavg();
    let have = coral.stats().total;
    let inserts_per_s = if have == corpus.len() {
        eprintln!("{name}: holds the {have} memories already; the load is skipped");
        None
    } else if have != 0 {
        bail!(
            "{name}: holds {have} memories, not 0 or {}: use a fresh tenant or directory",
            corpus.len()
        );
    } else {
        eprintln!(
            "{name}: loading {} memories with {writers} writers",
            corpus.len()
        );
        let rate = load(name, coral, corpus, writers)?;
        eprintln!("{name}: {rate:.0} inserts/s");
        Some(rate)
    };
    let mut index_s = None;
    if exact.is_some() {
        // The local index is built before the searches (as `search-1m` does), timed apart.
        let t = Instant::now();
        coral.prepare_vector_index(|_, _| {})?;
        index_s = Some(t.elapsed().as_secs_f64());
        eprintln!(
            "{name}: vector index ready in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    // A few searches first: connections, prepared statements, caches.
    for (q, _) in queries.iter().take(10) {
        coral.search_uncounted(q, SearchOptions::default())?;
    }
    eprintln!("{name}: {} uncounted searches", queries.len());
    let (uncounted, tops) = searches(coral, queries, false)?;
    let exact_tops = match exact {
        Some(config) => {
            let mut exact = config.clone();
            exact.retrieval.ann_threshold = 0;
            coral.set_config(exact)?;
            eprintln!(
                "{name}: {} exact searches (the reference of recall)",
                queries.len()
            );
            let (_, tops) = searches(coral, queries, false)?;
            coral.set_config(config)?;
            Some(tops)
        }
        None => None,
    };
    eprintln!("{name}: {} counted searches", queries.len());
    let (counted, _) = searches(coral, queries, true)?;
    Ok(Run {
        inserts_per_s,
        uncounted,
        counted,
        tops,
        exact_tops,
        index_s,
        load_avg: [before, loadavg()],
    })
}

/// A server for the run: `CORAL_POSTGRES_URL`, else the wheel's server started here (and
/// stopped by [`Server::drop`]).
struct Server {
    url: String,
    started: Option<(PathBuf, PathBuf)>,
}

impl Server {
    fn get(root: &Path) -> Result<Server> {
        if let Ok(url) = std::env::var("CORAL_POSTGRES_URL")
            && !url.trim().is_empty()
        {
            return Ok(Server { url, started: None });
        }
        let script = root.join("scripts/pg-test-server.sh");
        let state = crate::target_dir(root).join("coral-bench/pg-server");
        eprintln!(
            "CORAL_POSTGRES_URL is not set: starting a server in {}",
            state.display()
        );
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .env("CORAL_PG_STATE", &state)
            .output()
            .with_context(|| format!("running {}", script.display()))?;
        if !out.status.success() {
            bail!(
                "{} start failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Server {
            url,
            started: Some((script, state)),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((script, state)) = &self.started {
            let _ = Command::new("bash")
                .arg(script)
                .arg("stop")
                .env("CORAL_PG_STATE", state)
                .status();
        }
    }
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask", "--"])
            .arg("pg-bench")
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("pg-bench failed ({status})");
        }
        return Ok(());
    }
    let o = parse(args)?;
    let corpus = corpus(o.items);
    let queries = queries(&corpus, o.queries);
    let embedder = || Arc::new(HashEmbedder::new(DIM).expect("hash embedder"));
    let bench = crate::target_dir(root).join("coral-bench");
    std::fs::create_dir_all(&bench)?;

    // Postgres first: the local run's data directory is not needed meanwhile.
    let server = Server::get(root)?;
    let tenant = o.tenant.clone().unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("pg-bench-{}-{nanos}", o.items)
    });
    let pg_dir = tempfile::tempdir()?;
    let mut c = config(pg_dir.path(), o.items, o.near);
    c.storage.backend = "postgres".into();
    c.storage.postgres_url = server.url.clone();
    c.storage.postgres_tenant = tenant.clone();
    c.storage.postgres_pool_size = o.writers + 2;
    let pg = Coral::open_with(c, embedder()).context("opening the postgres backend")?;
    let pg_run = run_backend("postgres", &pg, &corpus, &queries, o.writers, None)?;
    drop(pg);
    drop(server);

    let local_run = if o.skip_local {
        None
    } else {
        let tmp;
        let dir = match &o.dir {
            Some(d) => {
                std::fs::create_dir_all(d)?;
                d.clone()
            }
            None => {
                tmp = tempfile::tempdir()?;
                tmp.path().to_path_buf()
            }
        };
        let c = config(&dir, o.items, o.near);
        let local = Coral::open_with(c.clone(), embedder())?;
        let run = run_backend("local", &local, &corpus, &queries, o.writers, Some(c))?;
        local.close()?;
        Some(run)
    };
    let exact_tops = local_run.as_ref().and_then(|l| l.exact_tops.as_ref());
    let ann_recall = local_run
        .as_ref()
        .zip(exact_tops)
        .map(|(l, e)| recall(&l.tops, e));
    let pg_recall = exact_tops.map(|e| recall(&pg_run.tops, e));
    let same_top = local_run.as_ref().map(|l| {
        l.tops
            .iter()
            .zip(&pg_run.tops)
            .filter(|(a, b)| a == b)
            .count() as f64
            / pg_run.tops.len().max(1) as f64
    });
    let figures = |r: &Run| {
        json!({
            "inserts_per_s": r.inserts_per_s,
            "vector_index_s": r.index_s,
            "search_uncounted": latency(&r.uncounted),
            "search_counted": latency(&r.counted),
            "loadavg_before": r.load_avg[0],
            "loadavg_after": r.load_avg[1],
        })
    };
    let report = json!({
        "items": o.items,
        "writers": o.writers,
        "queries": o.queries,
        "dim": DIM,
        "near_duplicates_merge": o.near,
        "tenant": tenant,
        "postgres": figures(&pg_run),
        "local": local_run.as_ref().map(figures),
        "recall_at_10_vs_local_exact": {
            "postgres": pg_recall,
            "local_ann": ann_recall,
        },
        "same_top_10_as_local": same_top,
    });
    let path = bench.join("pg-bench.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;

    let cell =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let row = |what: &str, pg: String, local: String| println!("| {what} | {local} | {pg} |");
    println!(
        "\n{} memories, {} writers, {} queries (top {K}, hash vectors of {DIM} dims voting)\n",
        o.items, o.writers, o.queries
    );
    println!("| what | local | postgres |\n| --- | --- | --- |");
    row(
        "inserts/s",
        cell(pg_run.inserts_per_s, 0),
        cell(local_run.as_ref().and_then(|l| l.inserts_per_s), 0),
    );
    for (what, pick) in [("search uncounted", 0usize), ("search counted", 1)] {
        let p = |r: &Run| {
            let ms = if pick == 0 { &r.uncounted } else { &r.counted };
            format!(
                "p50 {:.2} / p90 {:.2} / p99 {:.2} ms",
                percentile(ms, 0.5),
                percentile(ms, 0.9),
                percentile(ms, 0.99)
            )
        };
        row(what, p(&pg_run), local_run.as_ref().map_or("-".into(), p));
    }
    row(
        "recall@10 vs local exact",
        cell(pg_recall, 3),
        cell(ann_recall, 3),
    );
    row("same top 10 as local", cell(same_top, 3), "1.000".into());
    row(
        "load average (before, after)",
        format!("{}; {}", pg_run.load_avg[0], pg_run.load_avg[1]),
        local_run.as_ref().map_or("-".into(), |l| {
            format!("{}; {}", l.load_avg[0], l.load_avg[1])
        }),
    );
    println!("\nwritten to {}", path.display());
    Ok(())
}

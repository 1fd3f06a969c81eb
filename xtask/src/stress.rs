//! `cargo xtask stress-20k`: the 20,000-item stress run (README, "Speed"), re-created from the original's benchmark.
//!
//! Capacity 20,000; 20,000 generated inserts (the original's template and word list); integrity;
//! 500 searches; 20 × stats; capacity lowered to 15,000 (governed at once) and 300 more inserts;
//! integrity; close and reopen with identical state; one search after reopen; disk bytes.
//! The scan floor is one streaming pass over the same vectors and bitmaps, in the same run.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use coral::{Config, Coral, HashEmbedder};
use rayon::prelude::*;
use serde_json::json;

const SEED: u64 = 7;
const INSERTS: usize = 20_000;
const SEARCHES: usize = 500;
const GOVERNED: usize = 300;

/// splitmix64: deterministic and dependency-free.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub(crate) fn words(root: &Path) -> Result<Vec<String>> {
    let path = root.join("../shared/upstream-data/coral_bench_corpora.json");
    let fallback = || {
        [
            "接口",
            "缓存",
            "令牌",
            "部署",
            "日志",
            "压测",
            "连接池",
            "超时",
            "鉴权",
            "回滚",
            "说明书",
            "按钮",
            "指示灯",
            "保修",
            "配对",
            "蓝牙",
            "锂电池",
            "参数",
            "包装",
            "故障",
            "招牌",
            "麻辣",
            "甜品",
            "火锅",
            "烤串",
            "寿司",
            "奶茶",
            "早茶",
            "咖啡",
            "面馆",
        ]
        .map(String::from)
        .to_vec()
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(fallback());
    };
    let data: serde_json::Value = serde_json::from_str(&text)?;
    let list: Vec<String> = data["stress_20k"]["WORDS"]
        .as_array()
        .context("stress_20k.WORDS missing from the corpora file")?
        .iter()
        .filter_map(|w| w.as_str().map(String::from))
        .collect();
    Ok(list)
}

pub(crate) fn text(i: usize, words: &[String], rng: &mut Rng) -> String {
    let w1 = &words[rng.below(words.len())];
    let w3 = &words[rng.below(words.len())];
    let r1 = rng.below(10_000);
    let r2 = rng.below(1_000_000);
    format!("压测记忆第 {i} 号：{w1} 的 {r1} 号细节，参数 {r2}，关键词{w3}相关")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx]
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

struct Checks {
    failed: Vec<String>,
    passed: usize,
}

impl Checks {
    fn check(&mut self, ok: bool, what: impl Into<String>) {
        if ok {
            self.passed += 1;
        } else {
            let what = what.into();
            eprintln!("CHECK FAILED: {what}");
            self.failed.push(what);
        }
    }
}

fn integrity(coral: &Coral, data_dir: &Path, checks: &mut Checks, phase: &str) -> Result<()> {
    coral.flush()?;
    let stats = coral.stats();
    let config = coral.config();
    let cap = config.memory.capacity_threshold;
    let headroom = if config.memory.governance_headroom > 0 {
        config.memory.governance_headroom
    } else {
        (cap / 10).clamp(10, 200)
    };
    checks.check(
        stats.total <= cap + headroom,
        format!(
            "{phase}: total {} ≤ capacity {cap} + headroom {headroom}",
            stats.total
        ),
    );
    checks.check(
        stats.vectors == stats.total,
        format!(
            "{phase}: one vector per live id ({} vectors, {} items)",
            stats.vectors, stats.total
        ),
    );
    // The hot and warm tiers share coral_warm.json, as the original reads them (docs/storage.md).
    let read = |name: &str| {
        std::fs::read(data_dir.join(name)).with_context(|| format!("{phase}: reading {name}"))
    };
    let live: Vec<serde_json::Value> = serde_json::from_slice(&read("coral_warm.json")?)?;
    let cold = String::from_utf8(read("coral_cold.jsonl")?)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let index: Vec<String> = serde_json::from_slice(&read("coral_vector_index.json")?)?;
    checks.check(
        (live.len(), cold, index.len()) == (stats.hot + stats.warm, stats.cold, stats.total),
        format!(
            "{phase}: counters match files (files hot+warm {} cold {} index {}; stats {}+{} {} {})",
            live.len(),
            cold,
            index.len(),
            stats.hot,
            stats.warm,
            stats.cold,
            stats.total
        ),
    );
    let empty = coral
        .export()?
        .iter()
        .filter(|m| m.item.content.trim().is_empty())
        .count();
    checks.check(
        empty == 0,
        format!("{phase}: no empty content ({empty} found)"),
    );
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// One streaming pass over the pool's vectors and bitmaps: a dot product and a popcount per
/// row, split over the same threads as search. Search can only be slower than this.
fn scan_floor_ms(coral: &Coral, query: &str) -> Result<f64> {
    let embedder = HashEmbedder::new(coral.embedder().dim())?;
    let dim = embedder.dim_value();
    let items = coral.export()?;
    let texts: Vec<&str> = items.iter().map(|m| m.item.content.as_str()).collect();
    let vectors: Vec<f32> = embedder.embed_flat(&texts)?;
    let bitmaps: Vec<[u64; 32]> = texts
        .par_iter()
        .map(|t| coral_embed::text_features(t).bitmap)
        .collect();
    let q = embedder.embed_flat(&[query])?;
    let qb = coral_embed::text_features(query).bitmap;
    let chunk = 2048;
    let mut times = Vec::new();
    let mut checksum = 0.0f64;
    for _ in 0..60 {
        let start = Instant::now();
        let total: f64 = vectors
            .par_chunks(chunk * dim)
            .zip(bitmaps.par_chunks(chunk))
            .map(|(vs, bs)| {
                let mut acc = 0.0f64;
                for (v, b) in vs.chunks_exact(dim).zip(bs) {
                    let d = coral_score::dot(&q, v);
                    let (mut inter, mut union) = (0u32, 0u32);
                    for (x, y) in b.iter().zip(&qb) {
                        inter += (x & y).count_ones();
                        union += (x | y).count_ones();
                    }
                    acc += f64::from(d) + f64::from(inter) / f64::from(union.max(1));
                }
                acc
            })
            .sum();
        times.push(start.elapsed().as_secs_f64() * 1e3);
        checksum += total;
    }
    // Keep the work observable so it cannot be optimised away.
    if checksum.is_nan() {
        bail!("scan floor produced NaN");
    }
    times.sort_by(f64::total_cmp);
    Ok(percentile(&times, 0.5))
}

trait EmbedFlat {
    fn dim_value(&self) -> usize;
    fn embed_flat(&self, texts: &[&str]) -> Result<Vec<f32>>;
}

impl EmbedFlat for HashEmbedder {
    fn dim_value(&self) -> usize {
        coral::Embedder::dim(self)
    }

    fn embed_flat(&self, texts: &[&str]) -> Result<Vec<f32>> {
        let rows = coral::Embedder::embed(self, texts)?;
        Ok(rows.into_iter().flatten().collect())
    }
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        // Benchmarks mean nothing in a debug build: re-run this command optimised.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "run",
                "--quiet",
                "--release",
                "--package",
                "xtask",
                "--",
                "stress-20k",
            ])
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("stress-20k failed ({status})");
        }
        return Ok(());
    }
    let words = words(root)?;
    let mut rng = Rng(SEED);
    let dir = tempfile::tempdir()?;
    let config_path = dir.path().join("coral_config.json");
    // The generated texts share a ~30-token template; two with the same two keywords have a
    // set-Jaccard of about 0.8, so at the default merge threshold (0.7) a quarter of them would
    // merge. Raise it so the run holds 20,000 distinct items; the dedup scan still runs.
    std::fs::write(
        &config_path,
        json!({
            "embedding": {"embedder": "hash", "dim": 384},
            "memory": {"capacity_threshold": 20_000, "max_cold_entries": 20_000,
                       "sim_threshold_hot": 0.9},
        })
        .to_string(),
    )?;
    let texts: Vec<String> = (1..=INSERTS).map(|i| text(i, &words, &mut rng)).collect();
    let mut checks = Checks {
        failed: Vec::new(),
        passed: 0,
    };

    let coral = Coral::open(&config_path)?;
    let data_dir = coral.config().store_paths().dir;
    let start = Instant::now();
    let mut inserted = 0;
    for t in &texts {
        if coral.insert(t, 0.5)?.inserted() {
            inserted += 1;
        }
    }
    let insert_total_s = start.elapsed().as_secs_f64();
    checks.check(
        inserted == INSERTS,
        format!("{inserted} of {INSERTS} inserts stored as new items"),
    );
    integrity(&coral, &data_dir, &mut checks, "after inserts")?;

    let queries: Vec<String> = (0..SEARCHES)
        .map(|_| {
            let a = &words[rng.below(words.len())];
            let b = &words[rng.below(words.len())];
            format!("{a} {b} 细节")
        })
        .collect();
    let mut latencies = Vec::with_capacity(SEARCHES);
    let mut empty_results = 0;
    for q in &queries {
        let t = Instant::now();
        let hits = coral.search(q, 5)?;
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        if hits.len() != 5 {
            empty_results += 1;
        }
    }
    latencies.sort_by(f64::total_cmp);
    checks.check(
        empty_results == 0,
        format!("{empty_results} searches returned fewer than 5 hits"),
    );
    let search_p50_ms = percentile(&latencies, 0.5);
    let search_p99_ms = percentile(&latencies, 0.99);
    let scan_floor = scan_floor_ms(&coral, &queries[0])?;

    let t = Instant::now();
    for _ in 0..20 {
        std::hint::black_box(coral.stats());
    }
    let stats_20_ms = t.elapsed().as_secs_f64() * 1e3;

    let mut config: Config = (*coral.config()).clone();
    config.memory.capacity_threshold = 15_000;
    let t = Instant::now();
    coral.set_config(config)?;
    let governance_s = t.elapsed().as_secs_f64();
    let after_governance = coral.stats().total;
    checks.check(
        after_governance == 15_000,
        format!("lowering capacity governs at once to 15000 (got {after_governance})"),
    );
    let extra: Vec<String> = (INSERTS + 1..=INSERTS + GOVERNED)
        .map(|i| text(i, &words, &mut rng))
        .collect();
    let t = Instant::now();
    for e in &extra {
        coral.insert(e, 0.5)?;
    }
    let governed_inserts_s = t.elapsed().as_secs_f64();
    integrity(&coral, &data_dir, &mut checks, "after governance")?;

    let before = coral.export()?;
    let before_stats = coral.stats();
    coral.close()?;
    let t = Instant::now();
    let coral = Coral::open(&config_path)?;
    let reopen_s = t.elapsed().as_secs_f64();
    let after = coral.export()?;
    checks.check(before == after, "reopen gives an identical state");
    checks.check(
        coral.stats().total == before_stats.total,
        "reopen keeps the same counters",
    );
    let hits = coral.search(&queries[1], 5)?;
    checks.check(hits.len() == 5, "a search after reopen returns 5 hits");
    coral.close()?;
    let disk_bytes = dir_bytes(&data_dir);

    let report = json!({
        "inserts": INSERTS,
        "inserted_new": inserted,
        "insert_total_s": insert_total_s,
        "inserts_per_s": INSERTS as f64 / insert_total_s,
        "searches": SEARCHES,
        "search_p50_ms": search_p50_ms,
        "search_p99_ms": search_p99_ms,
        "scan_floor_ms": scan_floor,
        "search_p50_over_floor": search_p50_ms / scan_floor.max(1e-9),
        "stats_20_calls_ms": stats_20_ms,
        "governance_s": governance_s,
        "governed_inserts": GOVERNED,
        "governed_inserts_s": governed_inserts_s,
        "reopen_s": reopen_s,
        "items_after": before_stats.total,
        "disk_bytes": disk_bytes,
        "peak_rss_mb": peak_rss_mb(),
        "threads": rayon::current_num_threads(),
        "checks_passed": checks.failed.is_empty(),
        "checks_run": checks.passed + checks.failed.len(),
        "failed_checks": checks.failed,
    });
    let out_dir = root.join("target/coral-bench");
    std::fs::create_dir_all(&out_dir)?;
    let out = out_dir.join("stress-20k.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report)? + "\n")?;

    println!(
        "stress-20k (hash embedder, 384 dims, {} threads)",
        rayon::current_num_threads()
    );
    println!(
        "  {INSERTS} inserts            {insert_total_s:>9.3} s   ({:.0}/s; target ≤ 1 s)",
        INSERTS as f64 / insert_total_s
    );
    println!(
        "  search p50               {search_p50_ms:>9.3} ms  (target ≤ 2 ms and ≤ 1.5 × floor)"
    );
    println!("  search p99               {search_p99_ms:>9.3} ms");
    println!(
        "  scan floor               {scan_floor:>9.3} ms  (p50 / floor = {:.2})",
        search_p50_ms / scan_floor.max(1e-9)
    );
    println!("  20 × stats               {stats_20_ms:>9.3} ms");
    println!("  governance 20k -> 15k    {governance_s:>9.3} s");
    println!("  {GOVERNED} governed inserts     {governed_inserts_s:>9.3} s   (target ≤ 0.05 s)");
    println!("  reopen                   {reopen_s:>9.3} s   (target ≤ 0.2 s)");
    println!(
        "  disk                     {:>9.1} MB",
        disk_bytes as f64 / 1e6
    );
    println!("  peak RSS                 {:>9.1} MB", peak_rss_mb());
    println!(
        "  checks                   {}",
        if checks.failed.is_empty() {
            "all passed".to_string()
        } else {
            format!("FAILED: {:?}", checks.failed)
        }
    );
    println!("  written to {}", out.display());
    if !checks.failed.is_empty() {
        bail!("{} check(s) failed", checks.failed.len());
    }
    Ok(())
}

//! `cargo xtask search-1m`: the latency of one search at a million memories, repeatable. The
//! pool is built once into a directory (`--dir`, kept between runs; the stress corpus's
//! generator) and every run reopens it, builds the vector index and times `--queries`
//! searches: hybrid with the hash vectors voting (the stress run's search) and with the
//! defaults (BM25 alone for hash vectors). Wall time and the process's CPU time per search
//! (the CPU time moves less on a shared machine). JSON in `target/coral-bench/search-1m.json`.
//! Options: `--dir D` (default `target/coral-bench/search-1m-data`), `--items N`,
//! `--queries Q`, `--only vectors_voting|defaults` (one of the two configurations),
//! `--reopens R` (only time R reopens: `Coral::open`, the vector index, the first search, each
//! in a fresh handle; JSON in `target/coral-bench/reopen-1m.json`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use coral::{Coral, InsertOptions, SearchOptions};
use serde_json::json;

use crate::stress_1m::{Rng, percentile, query_text, text};

/// Process CPU time in seconds (user + system of every thread).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn config(dim: usize, items: usize, voting: bool) -> serde_json::Value {
    let mut retrieval = json!({"top_k": 10});
    if voting {
        retrieval["hybrid"] = json!({"hash_vector": 1.0});
    }
    json!({
        "embedding": {"embedder": "hash", "dim": dim},
        "memory": {"capacity_threshold": 10 * items, "max_cold_entries": 10 * items,
                   "sim_threshold_hot": 1.0},
        "storage": {"sync": "never", "wal_max_bytes": 1u64 << 40},
        "retrieval": retrieval,
    })
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask", "--"])
            .arg("search-1m")
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("search-1m failed ({status})");
        }
        return Ok(());
    }
    let mut dir: PathBuf = root.join("target/coral-bench/search-1m-data");
    let (mut items, mut queries, mut reopens) = (1_000_000usize, 300usize, 0usize);
    let mut only: Option<String> = None;
    let dim = 384;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().with_context(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--dir" => dir = value.into(),
            "--items" => items = value.parse()?,
            "--queries" => queries = value.parse()?,
            "--only" => only = Some(value.clone()),
            "--reopens" => reopens = value.parse()?,
            other => bail!(
                "unknown option {other:?} (--dir D, --items N, --queries Q, --only \
                 vectors_voting|defaults, --reopens R)"
            ),
        }
    }
    std::fs::create_dir_all(&dir)?;
    let config_path = dir.join("coral_config.json");
    let mut rng = Rng(0x5ea4c4 ^ dim as u64);
    let texts: Vec<String> = (0..items).map(|i| text(i, &mut rng)).collect();
    let now = 1.9e9;
    std::fs::write(&config_path, config(dim, items, true).to_string())?;
    {
        let coral = Coral::open(&config_path)?;
        let have = coral.stats().total;
        if have != items {
            if have != 0 {
                bail!(
                    "{} holds {have} memories, not {items}: remove it or pass another --dir",
                    dir.display()
                );
            }
            let t = Instant::now();
            for (i, text) in texts.iter().enumerate() {
                let options = InsertOptions {
                    project: Some(format!("p{}", i % 10)),
                    timestamp: Some(now - (items - i) as f64),
                    now: Some(now),
                    ..InsertOptions::default()
                };
                coral.insert_with(text, options)?;
                if (i + 1) % 100_000 == 0 {
                    println!("  inserted {} ({:.0} s)", i + 1, t.elapsed().as_secs_f64());
                }
            }
        }
        coral.close()?;
    }
    let query_texts: Vec<String> = (0..queries)
        .map(|_| {
            let of = (rng.next() as usize) % texts.len();
            query_text(&texts[of], &mut rng)
        })
        .collect();
    if reopens > 0 {
        return time_reopens(root, &config_path, reopens, &query_texts, now);
    }
    let mut report = serde_json::Map::new();
    report.insert("items".into(), json!(items));
    report.insert("queries".into(), json!(queries));
    for (name, voting) in [("vectors_voting", true), ("defaults", false)] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        std::fs::write(&config_path, config(dim, items, voting).to_string())?;
        let t = Instant::now();
        let coral = Coral::open(&config_path)?;
        coral.prepare_vector_index(|_, _| {})?;
        let open_s = t.elapsed().as_secs_f64();
        let search = |q: &str| -> Result<usize> {
            let options = SearchOptions {
                top_k: Some(10),
                now: Some(now),
                ..SearchOptions::default()
            };
            Ok(coral.search_with(q, options)?.len())
        };
        for q in query_texts.iter().take(20) {
            search(q)?;
        }
        // A mark for profilers to attach at (`perf record -p`).
        eprintln!(
            "{name}: opened in {open_s:.1} s and warmed up; timing {} searches",
            query_texts.len()
        );
        let (mut wall, mut cpu) = (Vec::new(), Vec::new());
        for q in &query_texts {
            let (t, c) = (Instant::now(), cpu_seconds());
            search(q)?;
            wall.push(t.elapsed().as_secs_f64() * 1e3);
            cpu.push((cpu_seconds() - c) * 1e3);
        }
        wall.sort_by(f64::total_cmp);
        let cpu_mean = cpu.iter().sum::<f64>() / cpu.len().max(1) as f64;
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let figures = json!({
            "open_and_index_s": open_s,
            "p50_ms": percentile(&wall, 0.5),
            "p90_ms": percentile(&wall, 0.9),
            "p99_ms": percentile(&wall, 0.99),
            "cpu_mean_ms": cpu_mean,
            "loadavg": load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        });
        println!("{name}: {figures}");
        report.insert(name.into(), figures);
        // Without a checkpoint: the runs change only heat counters, which the next open
        // replays from the journal.
        drop(coral);
    }
    let out = root.join("target/coral-bench");
    std::fs::create_dir_all(&out)?;
    let path = out.join("search-1m.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    println!("written to {}", path.display());
    Ok(())
}

/// `--reopens R`: R times, a fresh handle's `Coral::open`, its vector index and its first
/// search (which builds or loads the keyword index), each timed; medians and ranges printed.
fn time_reopens(
    root: &Path,
    config_path: &Path,
    reopens: usize,
    query_texts: &[String],
    now: f64,
) -> Result<()> {
    let (mut open, mut index, mut first) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..reopens {
        let t = Instant::now();
        let coral = Coral::open(config_path)?;
        open.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        coral.prepare_vector_index(|_, _| {})?;
        index.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let options = SearchOptions {
            top_k: Some(10),
            now: Some(now),
            ..SearchOptions::default()
        };
        let q = &query_texts[round % query_texts.len().max(1)];
        coral.search_with(q, options)?;
        first.push(t.elapsed().as_secs_f64());
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "reopen {round}: open {:.2} s, vector index {:.2} s, first search {:.2} s (load {})",
            open[round],
            index[round],
            first[round],
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        if round == 0 {
            // The first round closes (a checkpoint), which saves the derived files it made
            // (the keyword index of its first search); the others drop without one, as below:
            // their searches changed only heat counters, which the next open replays.
            let t = Instant::now();
            coral.close()?;
            println!("  close {:.2} s", t.elapsed().as_secs_f64());
        } else {
            drop(coral);
        }
    }
    let summary = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        json!({"median_s": percentile(v, 0.5), "min_s": v[0], "max_s": v[v.len() - 1]})
    };
    let report = json!({
        "reopens": reopens,
        "open": summary(&mut open),
        "vector_index": summary(&mut index),
        "first_search": summary(&mut first),
    });
    println!("{report}");
    let out = root.join("target/coral-bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(
        out.join("reopen-1m.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    Ok(())
}

//! `cargo xtask bench-embed`: speed of USE multilingual v3 (`use_bench.rs`) and of the ONNX
//! embedder (docs/embeddings.md, issue 6 targets).
//!
//! ONNX (with `--features onnx`, which the release re-run turns on):
//! - one query at a time with 1 intra-op thread: p50 / p99 latency (target p50 ≤ 5 ms);
//! - batches of 32 with 1 and 2 intra-op threads: sentences per second (target ≥ 500 with 2);
//! - 8 concurrent searchers on a 1,000-memory store, batching window 0 vs 8 ms: searches per
//!   second and latency, and the same for bare embedding calls (2 ms shown too).
//!
//! Needs the USE files, the runtime and all-MiniLM-L6-v2 (`eval
//! "$(scripts/fetch-test-models.sh)"`, or installed copies); writes
//! `target/coral-bench/embed.json`.

use std::path::Path;
use std::process::Command;
#[cfg(feature = "onnx")]
use std::sync::{Arc, Barrier};
#[cfg(feature = "onnx")]
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
#[cfg(feature = "onnx")]
use serde_json::json;

#[cfg(feature = "onnx")]
use crate::bench_texts::sentences;

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        // Timings mean nothing unoptimised: re-run optimised, with ONNX support.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask"])
            .args(["--features", "onnx", "--", "bench-embed"])
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("bench-embed failed ({status})");
        }
        return Ok(());
    }
    let only_use = match args.first().map(String::as_str) {
        None => false,
        Some("--use-only") => true,
        Some(extra) => bail!("bench-embed takes only --use-only, got {extra:?}"),
    };
    let use_report = crate::use_bench::measure(root)?;
    if only_use {
        return write(root, serde_json::json!({ "use": use_report }));
    }
    measure(root, use_report)
}

fn write(root: &Path, report: serde_json::Value) -> Result<()> {
    let out = root.join("target/coral-bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(
        out.join("embed.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    println!("wrote {}", out.join("embed.json").display());
    Ok(())
}

#[cfg(not(feature = "onnx"))]
fn measure(_: &Path, _: serde_json::Value) -> Result<()> {
    bail!("xtask was built without the onnx feature: run `cargo xtask bench-embed`")
}

#[cfg(feature = "onnx")]
fn load(threads: usize) -> Result<coral_embed::OnnxEmbedder> {
    use coral_embed::{
        ModelFiles, ModelSearch, OnnxEmbedder, OnnxOptions, RuntimeSearch, find_model,
    };
    let name = "sentence-transformers/all-MiniLM-L6-v2";
    let files = match std::env::var_os("CORAL_TEST_MINILM_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => ModelFiles::in_dir(Path::new(&dir), "CORAL_TEST_MINILM_DIR")
            .ok_or_else(|| anyhow::anyhow!("no model in {}", Path::new(&dir).display()))?,
        None => find_model(name, &ModelSearch::from_env(None))?,
    };
    let options = OnnxOptions {
        intra_threads: threads,
        ..OnnxOptions::default()
    };
    Ok(OnnxEmbedder::load(
        name,
        &files,
        &RuntimeSearch::from_env(None),
        &options,
    )?)
}

#[cfg(feature = "onnx")]
fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[cfg(feature = "onnx")]
fn millis(mut samples: Vec<Duration>) -> (f64, f64) {
    let mut ms: Vec<f64> = samples.drain(..).map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    (percentile(&ms, 0.5), percentile(&ms, 0.99))
}

#[cfg(feature = "onnx")]
fn measure(root: &Path, use_report: serde_json::Value) -> Result<()> {
    use coral::{Config, Coral, Embedder};
    use coral_embed::BatchingEmbedder;

    let texts = sentences(1_000);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();

    // One query at a time, 1 intra-op thread.
    let one = load(1)?;
    for t in &refs[..20] {
        one.embed(&[t])?;
    }
    let samples = refs[..300]
        .iter()
        .map(|t| {
            let start = Instant::now();
            one.embed(&[t]).map(|_| start.elapsed())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (single_p50, single_p99) = millis(samples);
    drop(one);

    // Batches of 32.
    let mut throughput = Vec::new();
    for threads in [1, 2] {
        let model = load(threads)?;
        model.embed(&refs[..32])?;
        let start = Instant::now();
        for chunk in refs[..512].chunks(32) {
            model.embed(chunk)?;
        }
        throughput.push((threads, 512.0 / start.elapsed().as_secs_f64()));
    }

    // 8 concurrent callers, batching window 0 vs 8 ms, on one model (runtime's thread default).
    let model: Arc<dyn Embedder> = Arc::new(load(0)?);
    let dir = tempfile::tempdir()?;
    let mut config = Config {
        base_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.sim_threshold_hot = 1.0;
    {
        let coral = Coral::open_with(config.clone(), model.clone())?;
        for t in &refs {
            coral.insert(t, 0.5)?;
        }
        coral.close()?;
    }
    let queries: Vec<String> = sentences(1_400)[1_000..]
        .iter()
        .map(|s| s.replace("(note", "(query"))
        .collect();
    const CALLERS: usize = 8;
    const PER_CALLER: usize = 40;
    let mut concurrency = Vec::new();
    for window_ms in [0u64, 2, 8] {
        let batcher = Arc::new(BatchingEmbedder::new(
            model.clone(),
            Duration::from_millis(window_ms),
        ));
        let embedder: Arc<dyn Embedder> = batcher.clone();
        // Bare embedding calls.
        let embed_rate = concurrent(CALLERS, PER_CALLER, &queries, |q| {
            embedder
                .embed(&[q])
                .map(|_| ())
                .map_err(anyhow::Error::from)
        })?;
        let embed_calls = batcher.stats();
        // Whole searches (embedding outside the engine lock, scoring and heat inside it).
        let coral = Arc::new(Coral::open_with(config.clone(), embedder.clone())?);
        let before = batcher.stats();
        let search_rate = concurrent(CALLERS, PER_CALLER, &queries, |q| {
            coral.search(q, 5).map(|_| ()).map_err(anyhow::Error::from)
        })?;
        let after = batcher.stats();
        concurrency.push(json!({
            "window_ms": window_ms,
            "embed": {"per_second": embed_rate.0, "p50_ms": embed_rate.1, "p99_ms": embed_rate.2,
                      "model_calls": embed_calls.calls, "requests": embed_calls.requests},
            "search": {"per_second": search_rate.0, "p50_ms": search_rate.1,
                       "p99_ms": search_rate.2, "model_calls": after.calls - before.calls,
                       "requests": after.requests - before.requests},
        }));
        match Arc::try_unwrap(coral) {
            Ok(c) => {
                c.close()?;
            }
            Err(_) => bail!("a searcher kept the store open"),
        }
    }

    // Window 8 ms (the default) against no batching.
    let rate = |i: usize, what: &str| concurrency[i][what]["per_second"].as_f64().unwrap_or(0.0);
    let report = json!({
        "use": use_report,
        "model": "sentence-transformers/all-MiniLM-L6-v2 (int8 ONNX)",
        "single_query_1_thread": {"p50_ms": single_p50, "p99_ms": single_p99, "target_p50_ms": 5.0},
        "batch_32_sentences_per_second": throughput.iter()
            .map(|(t, r)| (format!("{t}_threads"), json!(r))).collect::<serde_json::Map<_, _>>(),
        "batch_target_2_threads": 500.0,
        "concurrent_8_callers": concurrency,
        "batching_speedup": {"embed": rate(2, "embed") / rate(0, "embed"),
                             "search": rate(2, "search") / rate(0, "search")},
    });
    println!("ONNX embedder, all-MiniLM-L6-v2 int8");
    println!(
        "  one query, 1 thread        p50 {single_p50:.2} ms   p99 {single_p99:.2} ms   (target p50 <= 5)"
    );
    for (t, r) in &throughput {
        println!(
            "  batches of 32, {t} thread(s)  {r:.0} sentences/s{}",
            if *t == 2 { "   (target >= 500)" } else { "" }
        );
    }
    for c in &concurrency {
        println!(
            "  8 callers, window {:>2} ms   embed {:>6.0}/s (p50 {:.1} ms, {} model calls)   search {:>6.0}/s (p50 {:.1} ms, {} model calls)",
            c["window_ms"],
            c["embed"]["per_second"].as_f64().unwrap_or(0.0),
            c["embed"]["p50_ms"].as_f64().unwrap_or(0.0),
            c["embed"]["model_calls"],
            c["search"]["per_second"].as_f64().unwrap_or(0.0),
            c["search"]["p50_ms"].as_f64().unwrap_or(0.0),
            c["search"]["model_calls"],
        );
    }
    println!(
        "  batching speed-up (8 ms vs 0): embed {:.2}x, search {:.2}x",
        report["batching_speedup"]["embed"].as_f64().unwrap_or(0.0),
        report["batching_speedup"]["search"].as_f64().unwrap_or(0.0)
    );
    write(root, report)
}

/// `callers` threads each run `per_caller` calls of `f` on their own queries, started
/// together. Returns calls per second and p50 / p99 latency in ms.
#[cfg(feature = "onnx")]
fn concurrent(
    callers: usize,
    per_caller: usize,
    queries: &[String],
    f: impl Fn(&str) -> Result<()> + Sync,
) -> Result<(f64, f64, f64)> {
    let barrier = Barrier::new(callers);
    let start = Instant::now();
    let samples: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..callers)
            .map(|c| {
                let (f, barrier) = (&f, &barrier);
                s.spawn(move || -> Result<Vec<Duration>> {
                    barrier.wait();
                    (0..per_caller)
                        .map(|i| {
                            let q = &queries[(c * per_caller + i) % queries.len()];
                            let t = Instant::now();
                            f(q).map(|()| t.elapsed())
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow::anyhow!("a caller panicked"))?)
            .collect::<Result<Vec<_>>>()
            .map(|v| v.into_iter().flatten().collect())
    })?;
    let rate = samples.len() as f64 / start.elapsed().as_secs_f64();
    let (p50, p99) = millis(samples);
    Ok((rate, p50, p99))
}

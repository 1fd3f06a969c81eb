//! `cargo xtask sparse-walk`: the micro-measurement behind the sparse vector path
//! (docs/ann.md, "Which path"): the density of hash vectors on the stress corpus's generator
//! (another seed), and the cost of an exact top-k through `coral_ann::SparseIndex` at 1M
//! against a full f32 scan of the same vectors, with the answers compared. JSON in
//! `target/coral-bench/sparse-walk.json`. Options: `--items N`, `--dim D`, `--queries Q`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use coral::HashEmbedder;
use coral_ann::SparseIndex;
use rayon::prelude::*;
use serde_json::json;

use crate::stress_1m::{Rng, percentile, query_text, status_kb, text};

/// The engine's vector ranking depth (`RRF_DEPTH`).
const DEPTH: usize = 100;
/// Queries also answered by a full scan (each reads every vector).
const SCANNED: usize = 50;

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask", "--"])
            .arg("sparse-walk")
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("sparse-walk failed ({status})");
        }
        return Ok(());
    }
    let (mut items, mut dim, mut queries) = (1_000_000usize, 384usize, 1_000usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().with_context(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--items" => items = value.parse()?,
            "--dim" => dim = value.parse()?,
            "--queries" => queries = value.parse()?,
            other => bail!("unknown option {other:?} (--items N, --dim D, --queries Q)"),
        }
    }
    let mut rng = Rng(0x005b_a75e ^ dim as u64);
    let texts: Vec<String> = (0..items).map(|i| text(i, &mut rng)).collect();
    let embedder = HashEmbedder::new(dim)?;
    let t = Instant::now();
    let flat: Vec<f32> = texts
        .par_iter()
        .flat_map_iter(|t| embedder.embed_text(t))
        .collect();
    let embed_s = t.elapsed().as_secs_f64();
    let nonzero = flat.par_iter().filter(|x| **x != 0.0).count();
    let density = nonzero as f64 / flat.len() as f64;
    let rss_before = status_kb("VmRSS:");
    let t = Instant::now();
    let mut index = SparseIndex::new(dim)?;
    for (label, v) in flat.chunks_exact(dim).enumerate() {
        index.insert(label as u32, v)?;
    }
    let build_s = t.elapsed().as_secs_f64();
    let rss_after = status_kb("VmRSS:");
    let vector = |l: u32| &flat[l as usize * dim..(l as usize + 1) * dim];
    let q_vectors: Vec<Vec<f32>> = (0..queries)
        .map(|_| {
            let of = (rng.next() as usize) % texts.len();
            embedder.embed_text(&query_text(&texts[of], &mut rng))
        })
        .collect();
    let q_density = q_vectors
        .iter()
        .map(|q| q.iter().filter(|x| **x != 0.0).count())
        .sum::<usize>() as f64
        / (queries * dim) as f64;
    let mut walk_ms = Vec::new();
    let mut filtered_ms = Vec::new();
    let mut found = Vec::new();
    for q in &q_vectors {
        let exact = |l: u32| coral_score::dot(q, vector(l));
        let t = Instant::now();
        let hits = index.search(q, DEPTH, None, &exact);
        walk_ms.push(t.elapsed().as_secs_f64() * 1e3);
        // A filter admitting half the labels (the cold tier excluded, say).
        let half = |l: u32| l.is_multiple_of(2);
        let t = Instant::now();
        let _ = index.search(q, DEPTH, Some(&half), &exact);
        filtered_ms.push(t.elapsed().as_secs_f64() * 1e3);
        if found.len() < SCANNED {
            found.push(hits);
        }
    }
    let mut scan_ms = Vec::new();
    let mut mismatches = 0usize;
    for (q, hits) in q_vectors.iter().zip(&found) {
        let t = Instant::now();
        let mut all: Vec<(f32, u32)> = (0..items as u32)
            .map(|l| (coral_score::dot(q, vector(l)), l))
            .filter(|s| s.0 > 0.0)
            .collect();
        all.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        all.truncate(DEPTH);
        scan_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let got: Vec<(f32, u32)> = hits
            .iter()
            .filter(|h| h.score > 0.0)
            .take(DEPTH)
            .map(|h| (h.score, h.label))
            .collect();
        if got != all {
            mismatches += 1;
        }
    }
    for v in [&mut walk_ms, &mut filtered_ms, &mut scan_ms] {
        v.sort_by(f64::total_cmp);
    }
    let result = json!({
        "items": items,
        "dim": dim,
        "queries": queries,
        "depth": DEPTH,
        "embed_s": embed_s,
        "vector_density": density,
        "nonzero_per_vector": nonzero as f64 / items as f64,
        "query_density": q_density,
        "build_s": build_s,
        "index_memory_mb": index.memory_bytes() as f64 / 1e6,
        "rss_growth_mb": (rss_after - rss_before) / 1024.0,
        "walk_p50_ms": percentile(&walk_ms, 0.5),
        "walk_p99_ms": percentile(&walk_ms, 0.99),
        "walk_half_filter_p50_ms": percentile(&filtered_ms, 0.5),
        "walk_half_filter_p99_ms": percentile(&filtered_ms, 0.99),
        "scan_p50_ms": percentile(&scan_ms, 0.5),
        "scan_queries": scan_ms.len(),
        "scan_mismatches": mismatches,
    });
    println!("{}", serde_json::to_string_pretty(&result)?);
    let out_dir = root.join("target/coral-bench");
    std::fs::create_dir_all(&out_dir)?;
    let out = out_dir.join("sparse-walk.json");
    std::fs::write(&out, serde_json::to_string_pretty(&result)? + "\n")?;
    println!("written to {}", out.display());
    Ok(())
}

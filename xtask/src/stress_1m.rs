//! `cargo xtask stress-1m`: one million generated memories in one process with the
//! approximate vector index (docs/ann.md), per dimension (384, the hash default, and 512, the
//! multilingual model's).
//!
//! Per dimension: N memories inserted through `Coral::insert_with` (1 % of them in one small
//! project), the index built (`Coral::prepare_vector_index`, timed), 10,000 more inserts and
//! 1,000 deletes with the index live (inserts/s), 1,000 hybrid searches with the vectors
//! voting (p50 / p99), the first 100 of them again on the exact path (agreement of the top 10),
//! close (checkpoint + index save), reopen with the saved index (timed), peak RSS. Then the
//! saved index file is read back and its recall@10 measured against exact brute force over the
//! same vectors in the same run, overall and for the 1 % project filter (walked during the
//! traversal, and through the engine's exact rule for small filters); when the pool got the
//! sparse index (not saved), the same measurement runs on a sparse index built over the live
//! items' vectors, as the engine builds it. After each phase the process's resident set now
//! and at its peak is printed and kept in the JSON (`phases`); with `CORAL_PROBE=1` the store
//! also prints the steps of the checkpoint and of the reopen (docs/ann.md, "Memory"). Options:
//! `--items N`, `--dims 384,512`, `--queries Q`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use coral::{Config, Coral, HashEmbedder, InsertOptions, SearchOptions};
use coral_ann::{AnnIndex, Filter, Query, SparseIndex};
use rayon::prelude::*;
use roaring::RoaringBitmap;
use serde_json::json;

const SEED: u64 = 11;
const LIVE_INSERTS: usize = 10_000;
const DELETES: usize = 1_000;
const AGREEMENT_QUERIES: usize = 100;
const K: usize = 10;
/// One item in this many is in the small project.
const SMALL_PROJECT_EVERY: usize = 100;

/// splitmix64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A word of a 40,000-word synthetic vocabulary, drawn log-uniformly (a few words common, most
/// rare, as in chat text).
fn word(rng: &mut Rng) -> String {
    const SYLLABLES: [&str; 20] = [
        "ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "zu", "ba", "de", "fi", "go", "hu",
        "ja", "ke", "lu", "mo", "ny",
    ];
    let rank = (40_000f64.powf(rng.unit()) as usize).min(39_999);
    let (a, b, c) = (rank % 20, rank / 20 % 20, rank / 400 % 100);
    format!("{}{}{c}", SYLLABLES[a], SYLLABLES[b])
}

pub(crate) fn text(i: usize, rng: &mut Rng) -> String {
    let n = 8 + (rng.next() % 9) as usize;
    let words: Vec<String> = (0..n).map(|_| word(rng)).collect();
    format!("note {i}: {}", words.join(" "))
}

/// A query near memory `of`: some of its words and a few others.
pub(crate) fn query_text(of: &str, rng: &mut Rng) -> String {
    let words: Vec<&str> = of.split_whitespace().skip(2).collect();
    let mut q: Vec<String> = words
        .iter()
        .filter(|_| rng.next().is_multiple_of(2))
        .map(|w| w.to_string())
        .collect();
    q.push(word(rng));
    q.push(word(rng));
    q.join(" ")
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The resident set now and at its peak so far, in MB, printed after a phase and kept for the
/// report (docs/ann.md, "Measured": where the bytes go).
struct Phases(Vec<serde_json::Value>);

impl Phases {
    fn mark(&mut self, label: &str, seconds: f64) {
        let (rss, peak) = (status_kb("VmRSS:") / 1024.0, status_kb("VmHWM:") / 1024.0);
        println!("  phase {label}: {seconds:.1} s, rss {rss:.0} MB, peak {peak:.0} MB");
        self.0
            .push(json!({"phase": label, "s": seconds, "rss_mb": rss, "peak_mb": peak}));
    }
}

pub(crate) fn status_kb(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
}

/// The engine's slot table in the index file's payload (docs/ann.md, "File"): per slot an id
/// (u16 length, 0xFFFF for a free slot), then a u32 vector checksum.
fn slot_ids(payload: &[u8]) -> Result<Vec<Option<String>>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < payload.len() {
        let len = u16::from_le_bytes([payload[at], payload[at + 1]]);
        at += 2;
        if len == u16::MAX {
            out.push(None);
            continue;
        }
        let id = std::str::from_utf8(&payload[at..at + len as usize])?.to_string();
        at += len as usize + 4;
        out.push(Some(id));
    }
    Ok(out)
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask", "--"])
            .arg("stress-1m")
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("stress-1m failed ({status})");
        }
        return Ok(());
    }
    let mut items = 1_000_000usize;
    let mut dims = vec![384usize, 512];
    let mut queries = 1_000usize;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().with_context(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--items" => items = value.parse()?,
            "--queries" => queries = value.parse()?,
            "--dims" => dims = value.split(',').map(str::parse).collect::<Result<_, _>>()?,
            other => bail!("unknown option {other:?} (--items N, --dims 384,512, --queries Q)"),
        }
    }
    let mut runs = Vec::new();
    for &dim in &dims {
        runs.push(run_dim(items, dim, queries)?);
    }
    let report = json!({ "items": items, "queries": queries, "runs": runs });
    let out_dir = root.join("target/coral-bench");
    std::fs::create_dir_all(&out_dir)?;
    let out = out_dir.join("stress-1m.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report)? + "\n")?;
    println!("written to {}", out.display());
    Ok(())
}

fn run_dim(items: usize, dim: usize, queries: usize) -> Result<serde_json::Value> {
    println!("stress-1m: {items} items, hash vectors of {dim} dims");
    let mut rng = Rng(SEED ^ dim as u64);
    let mut phases = Phases(Vec::new());
    let t = Instant::now();
    let texts: Vec<String> = (0..items + LIVE_INSERTS)
        .map(|i| text(i, &mut rng))
        .collect();
    phases.mark(
        "texts generated (the harness's own copy)",
        t.elapsed().as_secs_f64(),
    );
    let dir = tempfile::tempdir()?;
    let config_path = dir.path().join("coral_config.json");
    std::fs::write(
        &config_path,
        json!({
            "embedding": {"embedder": "hash", "dim": dim},
            "memory": {"capacity_threshold": 10 * items, "max_cold_entries": 10 * items,
                       "sim_threshold_hot": 1.0},
            "storage": {"sync": "never", "wal_max_bytes": 1u64 << 40},
            // The hash vectors vote, so that searches rank by them (they weigh 0 by default).
            "retrieval": {"hybrid": {"hash_vector": 1.0}, "top_k": K},
        })
        .to_string(),
    )?;
    let coral = Coral::open(&config_path)?;
    let now = coral::unix_now();
    let project = |i: usize| {
        if i % SMALL_PROJECT_EVERY == 7 {
            "small".to_string()
        } else {
            format!("p{}", i % 10)
        }
    };
    let insert = |i: usize| -> Result<String> {
        let options = InsertOptions {
            project: Some(project(i)),
            timestamp: Some(now - (items + LIVE_INSERTS - i) as f64),
            now: Some(now),
            ..InsertOptions::default()
        };
        Ok(coral.insert_with(&texts[i], options)?.id().to_string())
    };
    let t = Instant::now();
    let mut ids: Vec<String> = Vec::with_capacity(items + LIVE_INSERTS);
    for i in 0..items {
        ids.push(insert(i)?);
        if (i + 1) % 100_000 == 0 {
            println!(
                "  inserted {} ({:.0}/s)",
                i + 1,
                (i + 1) as f64 / t.elapsed().as_secs_f64()
            );
        }
    }
    let bulk_s = t.elapsed().as_secs_f64();
    phases.mark("bulk inserts", bulk_s);

    let t = Instant::now();
    let mut last = 0;
    let build = coral.prepare_vector_index(|done, total| {
        if done >= last + total / 10 || done == total {
            last = done;
            println!("  index build {done} / {total}");
        }
    })?;
    let build_s = t.elapsed().as_secs_f64();
    phases.mark("index build", build_s);

    let t = Instant::now();
    for i in items..items + LIVE_INSERTS {
        ids.push(insert(i)?);
    }
    let live_insert_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut deleted = 0;
    let mut gone = std::collections::HashSet::new();
    for _ in 0..DELETES {
        let victim = (rng.next() as usize) % items;
        if coral.delete(&ids[victim])? {
            deleted += 1;
            gone.insert(victim);
        }
    }
    let delete_s = t.elapsed().as_secs_f64();
    phases.mark("live inserts and deletes", live_insert_s + delete_s);

    let query_texts: Vec<String> = (0..queries)
        .map(|_| {
            let of = (rng.next() as usize) % texts.len();
            query_text(&texts[of], &mut rng)
        })
        .collect();
    let search = |q: &str| -> Result<Vec<String>> {
        let options = SearchOptions {
            top_k: Some(K),
            now: Some(now),
            ..SearchOptions::default()
        };
        Ok(coral
            .search_with(q, options)?
            .into_iter()
            .map(|h| h.item.item_id)
            .collect())
    };
    let mut latencies = Vec::with_capacity(queries);
    let mut approximate: Vec<Vec<String>> = Vec::new();
    for q in &query_texts {
        let t = Instant::now();
        let hits = search(q)?;
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        if approximate.len() < AGREEMENT_QUERIES {
            approximate.push(hits);
        }
    }
    latencies.sort_by(f64::total_cmp);
    phases.mark("searches", latencies.iter().sum::<f64>() / 1e3);
    // The same queries on the exact path (searches touch their hits, which moves the heat
    // prior a little: agreement is a floor on what the index alone changes).
    let mut exact_config: Config = (*coral.config()).clone();
    exact_config.retrieval.ann_threshold = 0;
    coral.set_config(exact_config)?;
    let mut agree = 0usize;
    let mut exact_ms = Vec::new();
    for (q, got) in query_texts.iter().zip(&approximate) {
        let t = Instant::now();
        let want = search(q)?;
        exact_ms.push(t.elapsed().as_secs_f64() * 1e3);
        agree += got.iter().filter(|id| want.contains(id)).count();
    }
    exact_ms.sort_by(f64::total_cmp);
    let agreement = agree as f64 / (AGREEMENT_QUERIES.min(queries) * K) as f64;
    let mut ann_config: Config = (*coral.config()).clone();
    ann_config.retrieval.ann_threshold = coral::ANN_THRESHOLD;
    coral.set_config(ann_config)?;

    let t = Instant::now();
    coral.close()?;
    let close_s = t.elapsed().as_secs_f64();
    phases.mark("close (checkpoint + index save)", close_s);
    let t = Instant::now();
    let coral = Coral::open(&config_path)?;
    let open_s = t.elapsed().as_secs_f64();
    phases.mark("reopen: Coral::open", open_s);
    let reloaded = coral.prepare_vector_index(|_, _| {})?;
    let reopen_s = t.elapsed().as_secs_f64();
    phases.mark("reopen: vector index ready", reopen_s - open_s);
    let after_reopen = coral
        .search_with(
            &query_texts[0],
            SearchOptions {
                top_k: Some(K),
                now: Some(now),
                ..Default::default()
            },
        )?
        .len();
    phases.mark(
        "first search after reopen (keyword index built)",
        t.elapsed().as_secs_f64() - reopen_s,
    );
    let peak_rss_mb = status_kb("VmHWM:") / 1024.0;
    let data_dir = coral.config().store_paths().dir;
    let total_items = coral.stats().total;
    drop(coral);

    // Recall of the index against brute force over the same vectors: the saved graph file,
    // or for the sparse path (not saved) a sparse index built here over the live items, as
    // the engine builds it, labelled by text number.
    let (graph, slot_text) = if reloaded.sparse {
        let live: Vec<Option<usize>> = (0..ids.len())
            .map(|i| (!gone.contains(&i)).then_some(i))
            .collect();
        (None, live)
    } else {
        let (index, _, payload) = AnnIndex::load(&data_dir.join("coral_ann.idx"))?;
        let by_id: HashMap<&str, usize> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let slots = slot_ids(&payload)?;
        // Per slot, the text number (None for free slots).
        let slot_text: Vec<Option<usize>> = slots
            .iter()
            .map(|s| s.as_deref().and_then(|id| by_id.get(id).copied()))
            .collect();
        (Some(index), slot_text)
    };
    let embedder = HashEmbedder::new(dim)?;
    let vectors: Vec<Vec<f32>> = slot_text
        .par_iter()
        .map(|t| match t {
            Some(i) => embedder.embed_text(&texts[*i]),
            None => Vec::new(),
        })
        .collect();
    let sparse = match &graph {
        Some(_) => None,
        None => {
            let mut index = SparseIndex::new(dim)?;
            for (s, v) in vectors.iter().enumerate() {
                if !v.is_empty() {
                    index.insert(s as u32, v)?;
                }
            }
            Some(index)
        }
    };
    let index_bytes = graph
        .as_ref()
        .map_or(0, AnnIndex::memory_bytes)
        .max(sparse.as_ref().map_or(0, SparseIndex::memory_bytes));
    let live: Vec<u32> = (0..slot_text.len() as u32)
        .filter(|&s| {
            graph.as_ref().is_none_or(|g| g.contains(s)) && !vectors[s as usize].is_empty()
        })
        .collect();
    let small: RoaringBitmap = live
        .iter()
        .copied()
        .filter(|&s| slot_text[s as usize].is_some_and(|i| i % SMALL_PROJECT_EVERY == 7))
        .collect();
    let q_vectors: Vec<Vec<f32>> = query_texts.iter().map(|q| embedder.embed_text(q)).collect();
    let truth = |q: &[f32], filter: Option<&RoaringBitmap>| -> f32 {
        // The 10th best exact product among the admitted slots.
        let mut scores: Vec<f32> = live
            .par_iter()
            .filter(|&&s| filter.is_none_or(|f| f.contains(s)))
            .map(|&s| coral_score::dot(q, &vectors[s as usize]))
            .collect();
        let k = K.min(scores.len());
        if k == 0 {
            return f32::NEG_INFINITY;
        }
        scores.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        scores[k - 1]
    };
    let ef = Config::default().retrieval.ann_ef;
    let mut recall = [0.0f64; 3];
    let mut filtered_ms = Vec::new();
    for q in &q_vectors {
        let exact = |s: u32| {
            vectors
                .get(s as usize)
                .filter(|v| !v.is_empty())
                .map_or(f32::NEG_INFINITY, |v| coral_score::dot(q, v))
        };
        let kth_all = truth(q, None);
        let kth_small = truth(q, Some(&small));
        for (i, (filter, exact_below, kth)) in [
            (Filter::All, 0, kth_all),
            (Filter::Labels(&small), 0, kth_small),
            (Filter::Labels(&small), u64::MAX, kth_small),
        ]
        .into_iter()
        .enumerate()
        {
            let t = Instant::now();
            let hits = match (&graph, &sparse) {
                (Some(index), _) => index.search(
                    &Query {
                        vector: q,
                        k: K,
                        ef,
                        filter,
                        exact_below,
                    },
                    &exact,
                ),
                (None, Some(index)) => {
                    let admit = |s: u32| small.contains(s);
                    let accept = match filter {
                        Filter::All => None,
                        _ => Some(&admit as &dyn Fn(u32) -> bool),
                    };
                    index.search(q, K, accept, &exact)
                }
                (None, None) => Vec::new(),
            };
            if i == 1 {
                filtered_ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let found = hits.iter().filter(|h| h.score >= kth - 1e-6).count().min(K);
            recall[i] += found as f64 / K as f64;
        }
    }
    filtered_ms.sort_by(f64::total_cmp);
    let n = q_vectors.len().max(1) as f64;
    let result = json!({
        "dim": dim,
        "items_after": total_items,
        "bulk_insert_s": bulk_s,
        "bulk_inserts_per_s": items as f64 / bulk_s,
        "index_build_s": build_s,
        "index_vectors": build.vectors,
        "live_inserts": LIVE_INSERTS,
        "inserts_per_s": LIVE_INSERTS as f64 / live_insert_s,
        "deletes": deleted,
        "deletes_per_s": deleted as f64 / delete_s,
        "search_p50_ms": percentile(&latencies, 0.5),
        "search_p99_ms": percentile(&latencies, 0.99),
        "exact_search_p50_ms": percentile(&exact_ms, 0.5),
        "agreement_top10_vs_exact": agreement,
        "recall_at_10": recall[0] / n,
        "recall_at_10_small_project_traversal": recall[1] / n,
        "recall_at_10_small_project_exact_rule": recall[2] / n,
        "small_project_items": small.len(),
        "small_project_traversal_p50_ms": percentile(&filtered_ms, 0.5),
        "close_s": close_s,
        "open_s": open_s,
        "reopen_s": reopen_s,
        "reopen_loaded_index": reloaded.loaded,
        "sparse_path": reloaded.sparse,
        "reopen_repaired": reloaded.repaired,
        "search_after_reopen_hits": after_reopen,
        "peak_rss_mb": peak_rss_mb,
        "phases": phases.0,
        "index_memory_mb": index_bytes as f64 / 1e6,
        "rss_bytes_per_item": peak_rss_mb * 1024.0 * 1024.0 / items as f64,
    });
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(result)
}

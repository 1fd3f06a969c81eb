//! `cargo xtask eval`: retrieval quality on public data, per dataset × path × embedder × mode.
//!
//! Datasets (`../shared/eval-data/`, protocols in its README and in docs/eval.md): MADial-Bench
//! zh and en ([`madial`]) and the LoCoMo development split ([`locomo`]), each loaded into a
//! [`corpus::Corpus`] of groups (one fresh store each). Paths: the memory pool
//! (`Coral::search_with`, [`pool`]) and the timeline (`retrieve_for_turn`, [`timeline`]).
//! Embedders: [`embedders::EMBEDDERS`] plus `none`. Modes: [`modes`]. Groups run in parallel
//! (rayon), questions of a group in order, so every figure is the same on every run.
//! Writes `target/coral-bench/eval.json` ([`report`]), prints Markdown tables, and with
//! `--docs` regenerates docs/eval.md ([`docs`]).

mod corpus;
mod docs;
mod embedders;
mod locomo;
mod madial;
mod metrics;
mod modes;
mod options;
mod pool;
mod report;
mod timeline;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use coral::Embedder;
use rayon::prelude::*;
use serde_json::{Value, json};

use corpus::Corpus;
use embedders::{Memo, NONE};
use metrics::Tally;
use modes::Mode;
use options::Options;
use report::{Cell, PathKind};

/// Published and computed reference points (eval-data README), recall in percent.
const REFERENCE: &str = "MADial (160 dialogues): plain BM25 recall@5 52.7 zh / 40.0 en, \
     recall@10 63.8 / 51.6; BGE-M3 (zh) 58.6 / 71.4; OpenAI embeddings (zh) 69.4 / 82.4. \
     LoCoMo, all 10 conversations (1,536 questions): plain BM25 (k1 1.2) recall@5 44.0, \
     recall@10 52.0; with a 0.2 x exp(-age / 30 days) recency prior 42.0 / 49.5";

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let options = Options::parse(args)?;
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        // Models are slow unoptimised: re-run this command optimised, with ONNX support.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask"])
            .args(["--features", "onnx", "--", "eval"])
            .args(args)
            // Cargo sets this for the program it runs; passed on, it changes the fingerprint of
            // build scripts that watch it (ring's), so every switch between `cargo xtask eval`
            // and a plain `cargo build --release` rebuilt ring, rustls, ureq and coral (2.5 min).
            .env_remove("CARGO_MANIFEST_DIR")
            .env_remove("CARGO_MANIFEST_PATH")
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("eval failed ({status})");
        }
        return Ok(());
    }
    let started = Instant::now();
    let data = root.join("../shared/eval-data");
    let mut corpora: Vec<Corpus> = Vec::new();
    if options.datasets.iter().any(|d| d.starts_with("madial")) {
        let (zh, en) = madial::load(&data.join("madial-bench"))?;
        corpora.extend([zh, en]);
    }
    if options.datasets.contains(&"locomo_dev") {
        corpora.push(locomo::load(&data.join("locomo-dev/locomo_dev.json"))?);
    }
    corpora.retain(|c| options.datasets.contains(&c.key));

    let mut loaded: Vec<(&'static str, Arc<Memo>, bool)> = Vec::new();
    let mut skipped = serde_json::Map::new();
    for label in embedders::labels() {
        let asked = options
            .embedders
            .as_ref()
            .is_some_and(|e| e.contains(&label));
        if options.embedders.is_some() && !asked {
            continue;
        }
        match embedders::load(label) {
            Ok(e) => loaded.push((label, Arc::new(Memo::new(e)), label != NONE)),
            // Asked for by name: a missing model is an error, not a quiet gap in the table.
            Err(why) if asked => bail!("eval: the {label} embedder is not available: {why}"),
            Err(why) => {
                eprintln!("eval: skipping the {label} embedder: {why}");
                skipped.insert(label.to_string(), json!(why));
            }
        }
    }

    let mut cells = Vec::new();
    let mut embedding_seconds: std::collections::BTreeMap<&str, f64> = Default::default();
    for corpus in &corpora {
        for (label, memo, vectors) in &loaded {
            if *vectors {
                let t = Instant::now();
                memo.prefill(&corpus.texts())
                    .with_context(|| format!("embedding {} with {label}", corpus.key))?;
                *embedding_seconds.entry(label).or_default() += t.elapsed().as_secs_f64();
                eprintln!(
                    "eval: {} embedded with {label} in {:.1} s",
                    corpus.key,
                    t.elapsed().as_secs_f64()
                );
            }
            let embedder: Arc<dyn Embedder> = Arc::clone(memo) as Arc<dyn Embedder>;
            for &path in &options.paths {
                for mode in modes_of(path, *vectors) {
                    if !options.wants_mode(mode.name) {
                        continue;
                    }
                    let cell = run_cell(corpus, path, label, &embedder, *vectors, &mode)?;
                    eprintln!(
                        "eval: {} {} {label}/{} in {:.1} s: recall@5 {:.1}",
                        corpus.key,
                        path.name(),
                        mode.name,
                        cell.seconds,
                        cell.tally.to_json()["overall"]["recall_at_5"]
                            .as_f64()
                            .unwrap_or(f64::NAN)
                            * 100.0
                    );
                    cells.push(cell);
                }
            }
        }
    }
    if cells.is_empty() {
        bail!(
            "eval: the options select no cell (a mode of another path?); usage: {}",
            options::USAGE
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    let meta = json!({
        "seconds": (seconds * 10.0).round() / 10.0,
        "threads": rayon::current_num_threads(),
        "args": args,
        "embedding_seconds": embedding_seconds
            .iter()
            .map(|(k, v)| (k.to_string(), json!((v * 10.0).round() / 10.0)))
            .collect::<serde_json::Map<_, _>>(),
        "skipped_embedders": skipped,
        "protocol": "shared/eval-data/README.md and docs/eval.md; metrics are fractions averaged over questions",
        "modes": "pool: every retrieval.mode (coral::RETRIEVAL_MODES) with its defaults; hybrid-no-* = hybrid with one part off; hybrid-min-0.35 = the original's min_score; rrf-equal = rrf with every list weighted 1 and no last-line boost; vector = weighted 1/0/0; none/bm25 = the coral-score BM25 kernel alone (k1 1.5, b 0.75, MemCore's terms, distinct query terms, no merging); none/jaccard = bitmap Jaccard alone. timeline: hybrid (the pool's fusion) and rrf (MemCore's k 60) of BM25 and cosine; none = words only",
        "reference": REFERENCE,
    });
    let table = report::to_json(&corpora, &cells, meta);
    let baseline = match &options.baseline {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading the baseline {}", p.display()))?;
            Some(
                serde_json::from_str::<Value>(&text)
                    .with_context(|| format!("the baseline {} is not an eval.json", p.display()))?,
            )
        }
        None => None,
    };
    let tables = report::markdown(&table, baseline.as_ref());
    println!("{tables}");
    println!("reference: {REFERENCE}");
    for (label, why) in &skipped {
        println!("skipped {label}: {}", why.as_str().unwrap_or_default());
    }
    let path = match &options.out {
        Some(p) => p.clone(),
        None => crate::target_dir(root).join("coral-bench/eval.json"),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, serde_json::to_string_pretty(&table)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {} in {seconds:.1} s", path.display());
    if options.docs {
        let doc = root.join("docs/eval.md");
        std::fs::write(&doc, docs::render(root, &table, &tables)?)
            .with_context(|| format!("writing {}", doc.display()))?;
        println!("wrote {}", doc.display());
    }
    Ok(())
}

/// The modes of `path` for an embedder with or without model vectors.
fn modes_of(path: PathKind, vectors: bool) -> Vec<Mode> {
    match (path, vectors) {
        (PathKind::Pool, true) => modes::pool_modes(),
        (PathKind::Pool, false) => modes::pool_modes_without_vectors(),
        (PathKind::Timeline, _) => modes::timeline_modes(),
    }
}

/// One cell: every group of `corpus` (in parallel), tallied in group order.
fn run_cell(
    corpus: &Corpus,
    path: PathKind,
    label: &'static str,
    embedder: &Arc<dyn Embedder>,
    vectors: bool,
    mode: &Mode,
) -> Result<Cell> {
    let started = Instant::now();
    let runs: Vec<pool::GroupRun> = corpus
        .groups
        .par_iter()
        .map(|g| match path {
            PathKind::Pool => pool::run_group(g, embedder, mode, corpus.merge_threshold),
            PathKind::Timeline => timeline::run_group(g, embedder, vectors, mode),
        })
        .collect::<Result<_>>()
        .with_context(|| format!("{} {} {label}/{}", corpus.key, path.name(), mode.name))?;
    let mut tally = Tally::new(corpus.categories);
    let mut merged = Vec::new();
    for (group, run) in corpus.groups.iter().zip(runs) {
        for (q, ranked) in group.questions.iter().zip(&run.ranked) {
            tally.add(q.category, ranked, &q.gold);
        }
        merged.extend(run.merged.into_iter().map(|ids| (group.name.clone(), ids)));
    }
    Ok(Cell {
        dataset: corpus.key,
        path,
        embedder: label,
        mode: mode.name,
        tally,
        merged,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written conversation of the loader's tests, run on both paths with the hash
    /// embedder: the figures are known, and two runs give the same table to the last bit.
    #[test]
    fn a_tiny_conversation_gives_known_and_repeatable_figures() {
        let corpus = locomo::from_json("tiny", &locomo::tests::tiny()).unwrap();
        let hash: Arc<dyn Embedder> = Arc::new(Memo::new(embedders::load("hash").unwrap()));
        let rrf = modes::pool_modes()
            .into_iter()
            .find(|m| m.name == "rrf")
            .unwrap();
        let bm25 = modes::pool_modes_without_vectors()[0];
        let tl = modes::timeline_modes()[0];
        let cells = || {
            [
                run_cell(&corpus, PathKind::Pool, "hash", &hash, true, &rrf).unwrap(),
                run_cell(&corpus, PathKind::Pool, "none", &hash, false, &bm25).unwrap(),
                run_cell(&corpus, PathKind::Timeline, "none", &hash, false, &tl).unwrap(),
                run_cell(&corpus, PathKind::Timeline, "hash", &hash, true, &tl).unwrap(),
            ]
        };
        let first = cells();
        for cell in &first {
            let j = cell.tally.to_json();
            let what = format!("{} {}/{}", cell.path.name(), cell.embedder, cell.mode);
            assert_eq!(j["overall"]["questions"], 5, "{what}");
            let merged = if cell.path == PathKind::Pool && cell.mode == "rrf" {
                // The near-duplicate D2:3 is stored as D2:2's memory, which stands for both.
                vec![(
                    "conv-x".to_string(),
                    vec!["D2:2".to_string(), "D2:3".to_string()],
                )]
            } else {
                Vec::new()
            };
            assert_eq!(cell.merged, merged, "{what}");
            if cell.path == PathKind::Timeline && cell.embedder == "hash" {
                // Hash-vector cosines rank turns that share no word: only repeatability holds.
                continue;
            }
            // The other three rank by BM25 alone (rrf gives hash vectors no vote by default):
            // each question shares a rare word with its evidence, except the open-domain one,
            // whose evidence (Lisbon) shares none with "Portugal".
            assert_eq!(j["single_hop"]["recall_at_1"], 1.0, "{what}: {j}");
            assert_eq!(j["temporal"]["recall_at_1"], 1.0, "{what}: {j}");
            assert_eq!(j["multi_hop"]["recall_at_5"], 1.0, "{what}: {j}");
            assert_eq!(j["open_domain"]["hit_at_10"], 0.0, "{what}: {j}");
            assert_eq!(j["overall"]["recall_at_5"], 0.8, "{what}: {j}");
            assert_eq!(j["overall"]["hit_at_10"], 0.8, "{what}: {j}");
        }
        let second = cells();
        for (a, b) in first.iter().zip(&second) {
            assert_eq!(a.tally, b.tally, "{} {}", a.path.name(), a.embedder);
        }
    }
}

//! `cargo xtask eval`: retrieval quality on public data (SPEC 12), MADial-Bench zh and en.
//!
//! Protocol (`../shared/eval-data/README.md`): per dialogue, the memories of its user are in the
//! store (text = `event`, timestamp = `time` at 00:00 UTC), the query is the concatenation of
//! `dialogue[..test-turn[0]]`, and the gold set is `relevant-id`; recall@k = |gold ∩ top-k| /
//! |gold| and hit@k, for k = 1, 3, 5, 10, averaged over the 160 dialogues. The English memory
//! file has no user ids: they are taken from the Chinese file by memory id (same ids, same
//! users). Choices of ours, all stated in the JSON:
//! - one store per user and row (every dialogue of a user sees the same pool; searches only
//!   add heat, which no ranking here reads);
//! - `memory.sim_threshold_hot = 1.0`, so only identical texts merge on insert (three Chinese
//!   events are exact duplicates: their ids share one item, which counts for both);
//! - the clock is one day after the newest memory, so the weighted mode's time term favours the
//!   most recent weeks, as it would in a live conversation.
//!
//! Rows are `<embedder>/<mode>`: every available embedder with `weighted` (SPEC 5.1 defaults),
//! `rrf` (the default `retrieval.rrf_weights` and `bm25_last_line_boost`), `rrf-equal` (every
//! list weighted 1, no last-line boost: the first rrf) and `vector` (weights 1/0/0); then `none/bm25` (the `coral-score` BM25 kernel alone,
//! the reference point's method) and `none/jaccard` (bitmap Jaccard alone). An embedder is one
//! entry of [`embedders`]; all-MiniLM-L6-v2 is there when xtask is built with `--features onnx`
//! (the release re-run does that) and the runtime and model are found (`ORT_DYLIB_PATH`,
//! `CORAL_TEST_MINILM_DIR` or the usual model search), and USE multilingual v3 when its files
//! are found (`CORAL_TEST_USE_DIR`, an installed copy, the fetch script's cache); a missing
//! one is listed as skipped.
//! Writes `target/coral-bench/eval.json` and prints a table.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use coral::{Config, Coral, Embedder, HashEmbedder, InsertOptions, SearchOptions};
use coral_score::{Bm25Index, Bm25Params, Bm25Query};
use serde_json::{Value, json};

const KS: [usize; 4] = [1, 3, 5, 10];
const DEPTH: usize = 10;
const DAY: f64 = 86_400.0;

/// Published figures on this protocol (eval-data README), recall in percent.
const REFERENCE: &str = "plain BM25 (ASCII words + CJK unigrams and bigrams): recall@5 52.7 zh / \
     40.0 en, recall@10 63.8 / 51.6; BGE-M3 dense (zh): recall@5 58.6, recall@10 71.4; OpenAI \
     embeddings (zh): 69.4 / 82.4";

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        // Models are slow unoptimised: re-run this command optimised, with ONNX support.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask"])
            .args(["--features", "onnx", "--", "eval"])
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("eval failed ({status})");
        }
        return Ok(());
    }
    if let Some(extra) = args.first() {
        bail!("eval takes no arguments, got {extra:?}");
    }
    let data_dir = root.join("../shared/eval-data/madial-bench");
    let zh = Dataset::load(&data_dir, "zh", None)?;
    let users: HashMap<String, u64> = zh.memories.iter().map(|m| (m.id.clone(), m.user)).collect();
    let en = Dataset::load(&data_dir, "en", Some(&users))?;

    let mut embedders = Vec::new();
    let mut skipped = BTreeMap::new();
    for (label, load) in embedders_list() {
        match load() {
            Ok(e) => embedders.push((label, e)),
            Err(why) => {
                eprintln!("eval: skipping the {label} embedder: {why}");
                skipped.insert(label.to_string(), why);
            }
        }
    }

    let mut out = serde_json::Map::new();
    for ds in [&zh, &en] {
        let mut rows = serde_json::Map::new();
        for (label, embedder) in &embedders {
            let embedder: Arc<dyn Embedder> = Arc::new(Memo::new(Arc::clone(embedder)));
            for (mode, edit) in MODES {
                let started = Instant::now();
                let metrics = coral_row(ds, Arc::clone(&embedder), edit)?;
                eprintln!(
                    "eval: {} {label}/{mode} in {:.1} s",
                    ds.key,
                    started.elapsed().as_secs_f64()
                );
                rows.insert(format!("{label}/{mode}"), metrics.to_json());
            }
        }
        rows.insert("none/bm25".into(), bm25_row(ds).to_json());
        let hash: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(384)?);
        let jaccard = coral_row(ds, hash, |c| {
            c.retrieval.mode = "weighted".into();
            c.retrieval.weights.vector = 0.0;
            c.retrieval.weights.jaccard = 1.0;
            c.retrieval.weights.time = 0.0;
        })?;
        rows.insert("none/jaccard".into(), jaccard.to_json());
        out.insert(ds.key.to_string(), Value::Object(rows));
    }
    out.insert(
        "meta".into(),
        json!({
            "protocol": "shared/eval-data/README.md: per dialogue, the user's memories; query = dialogue[..test-turn[0]] joined; gold = relevant-id; metrics averaged over dialogues (fractions, not percent)",
            "en_users": "taken from the zh memory file by memory id",
            "store": "one per user and row; memory.sim_threshold_hot = 1.0 (identical texts share one item); now = newest memory + 1 day",
            "modes": "weighted = SPEC 5.1 defaults 0.6/0.2/0.2; rrf = vector, Jaccard and BM25 rankings, weighted RRF k = 60 with the default retrieval.rrf_weights (vector 1, hash_vector 0, jaccard 0, bm25 1) and bm25_last_line_boost 1; rrf-equal = every list weighted 1, no last-line boost; vector = weights 1/0/0; none/bm25 = coral-score BM25 alone (k1 1.5, b 0.75), distinct query terms, no last-line boost; none/jaccard = bitmap Jaccard alone",
            "dialogues": {"madial_zh": zh.dialogues.len(), "madial_en": en.dialogues.len()},
            "memories": {"madial_zh": zh.memories.len(), "madial_en": en.memories.len()},
            "skipped_embedders": skipped,
            "reference": REFERENCE,
        }),
    );
    let out = Value::Object(out);
    print_table(&out);
    let out_dir = root.join("target/coral-bench");
    std::fs::create_dir_all(&out_dir)?;
    let path = out_dir.join("eval.json");
    std::fs::write(&path, serde_json::to_string_pretty(&out)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// A loader of one embedder under test: the embedder, or why it is not available.
type Loader = fn() -> Result<Arc<dyn Embedder>, String>;

/// The embedders under test, in table order. Adding a model is one entry here.
fn embedders_list() -> Vec<(&'static str, Loader)> {
    vec![
        ("hash", hash_embedder),
        ("minilm", minilm),
        ("use", use_embedder),
    ]
}

/// USE multilingual v3 (no runtime needed): `CORAL_TEST_USE_DIR`, an installed copy, or the
/// fetch script's cache.
fn use_embedder() -> Result<Arc<dyn Embedder>, String> {
    let dir = crate::use_bench::model_dir().map_err(|e| e.to_string())?;
    let e = coral_embed::UseEmbedder::load(&dir).map_err(|e| e.to_string())?;
    Ok(Arc::new(e))
}

fn hash_embedder() -> Result<Arc<dyn Embedder>, String> {
    let e = HashEmbedder::new(384).map_err(|e| e.to_string())?;
    Ok(Arc::new(e))
}

#[cfg(feature = "onnx")]
fn minilm() -> Result<Arc<dyn Embedder>, String> {
    use coral_embed::{
        ModelFiles, ModelSearch, OnnxEmbedder, OnnxOptions, RuntimeSearch, find_model,
    };
    let name = "sentence-transformers/all-MiniLM-L6-v2";
    let files = match std::env::var_os("CORAL_TEST_MINILM_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => {
            ModelFiles::in_dir(Path::new(&dir), "CORAL_TEST_MINILM_DIR").ok_or_else(|| {
                format!(
                    "no model.onnx + tokenizer.json in {}",
                    Path::new(&dir).display()
                )
            })?
        }
        None => find_model(name, &ModelSearch::from_env(None)).map_err(|e| e.to_string())?,
    };
    let embedder = OnnxEmbedder::load(
        name,
        &files,
        &RuntimeSearch::from_env(None),
        &OnnxOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    Ok(Arc::new(embedder))
}

#[cfg(not(feature = "onnx"))]
fn minilm() -> Result<Arc<dyn Embedder>, String> {
    Err("xtask was built without the onnx feature".into())
}

/// A row's change to the default configuration.
type Edit = fn(&mut Config);

/// The facade modes measured for every embedder: the row's name and its config change.
const MODES: [(&str, Edit); 4] = [
    ("weighted", |c| c.retrieval.mode = "weighted".into()),
    ("rrf", |c| c.retrieval.mode = "rrf".into()),
    ("rrf-equal", |c| {
        c.retrieval.mode = "rrf".into();
        c.retrieval.rrf_weights = coral::RrfWeights {
            vector: 1.0,
            hash_vector: 1.0,
            jaccard: 1.0,
            bm25: 1.0,
        };
        c.retrieval.bm25_last_line_boost = 0.0;
    }),
    ("vector", |c| {
        c.retrieval.mode = "weighted".into();
        c.retrieval.weights.vector = 1.0;
        c.retrieval.weights.jaccard = 0.0;
        c.retrieval.weights.time = 0.0;
    }),
];

struct Memory {
    id: String,
    user: u64,
    text: String,
    time: f64,
}

struct Dialogue {
    user: u64,
    query: String,
    gold: Vec<String>,
}

struct Dataset {
    key: &'static str,
    memories: Vec<Memory>,
    dialogues: Vec<Dialogue>,
}

impl Dataset {
    /// Reads `MADial-Bench-<lang>-{memory,dialogue}.json` (JSON Lines). Memories without a
    /// `user-id` take theirs from `users` by memory id.
    fn load(dir: &Path, lang: &str, users: Option<&HashMap<String, u64>>) -> Result<Dataset> {
        let lines = |what: &str| -> Result<Vec<(usize, Value)>> {
            let path = dir.join(format!("MADial-Bench-{lang}-{what}.json"));
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {} (SPEC 12 eval data)", path.display()))?;
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| {
                    let v = serde_json::from_str(l)
                        .with_context(|| format!("{} line {}", path.display(), i + 1))?;
                    Ok((i + 1, v))
                })
                .collect()
        };
        let mut memories = Vec::new();
        for (line, entry) in lines("memory")? {
            let Some((id, m)) = entry.as_object().and_then(|o| o.iter().next()) else {
                bail!("{lang} memory line {line}: not an object with one entry");
            };
            let user = match m.get("user-id").and_then(Value::as_u64) {
                Some(u) => u,
                None => *users.and_then(|u| u.get(id)).with_context(|| {
                    format!("{lang} memory {id}: no user-id, and none known by its id")
                })?,
            };
            let field = |k: &str| {
                m.get(k)
                    .and_then(Value::as_str)
                    .with_context(|| format!("{lang} memory {id}: no {k}"))
            };
            memories.push(Memory {
                id: id.clone(),
                user,
                text: field("event")?.to_string(),
                time: unix_date(field("time")?)
                    .with_context(|| format!("{lang} memory {id}: bad time"))?,
            });
        }
        let mut dialogues = Vec::new();
        for (line, d) in lines("dialogue")? {
            let context = || format!("{lang} dialogue line {line}");
            let turns: Vec<&str> = d["dialogue"]
                .as_array()
                .with_context(context)?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let test_turn = d["test-turn"][0].as_u64().with_context(context)? as usize;
            let gold: Vec<String> = d["relevant-id"]
                .as_array()
                .with_context(context)?
                .iter()
                .map(|g| match g {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            if gold.is_empty() || test_turn > turns.len() {
                bail!("{}: no gold ids or test turn out of range", context());
            }
            dialogues.push(Dialogue {
                user: d["user-id"].as_u64().with_context(context)?,
                query: turns[..test_turn].concat(),
                gold,
            });
        }
        Ok(Dataset {
            key: if lang == "zh" {
                "madial_zh"
            } else {
                "madial_en"
            },
            memories,
            dialogues,
        })
    }

    /// The memories of `user`, in file order.
    fn memories_of(&self, user: u64) -> Vec<&Memory> {
        self.memories.iter().filter(|m| m.user == user).collect()
    }

    fn users(&self) -> Vec<u64> {
        let mut users: Vec<u64> = self.dialogues.iter().map(|d| d.user).collect();
        users.sort_unstable();
        users.dedup();
        users
    }

    /// One day after the newest memory.
    fn now(&self) -> f64 {
        self.memories.iter().map(|m| m.time).fold(0.0, f64::max) + DAY
    }
}

/// `YYYY-MM-DD` as Unix seconds at 00:00 UTC.
fn unix_date(date: &str) -> Option<f64> {
    let mut parts = date.trim().splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    // Days from 1970-01-01 in the proleptic Gregorian calendar (Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146_097 + doe - 719_468) as f64 * DAY)
}

/// Sums of per-dialogue recall and hit at each k.
#[derive(Default)]
struct Metrics {
    recall: [f64; 4],
    hit: [f64; 4],
    dialogues: usize,
}

impl Metrics {
    /// Scores one ranking: each position lists the memory ids it stands for.
    fn add(&mut self, ranked: &[Vec<String>], gold: &[String]) {
        for (i, &k) in KS.iter().enumerate() {
            let found = gold
                .iter()
                .filter(|g| ranked.iter().take(k).any(|ids| ids.contains(g)))
                .count();
            self.recall[i] += found as f64 / gold.len() as f64;
            self.hit[i] += f64::from(u8::from(found > 0));
        }
        self.dialogues += 1;
    }

    fn to_json(&self) -> Value {
        let n = self.dialogues.max(1) as f64;
        let round = |x: f64| (x / n * 10_000.0).round() / 10_000.0;
        let mut m = serde_json::Map::new();
        for (i, k) in KS.iter().enumerate() {
            m.insert(format!("recall_at_{k}"), json!(round(self.recall[i])));
        }
        for (i, k) in KS.iter().enumerate() {
            m.insert(format!("hit_at_{k}"), json!(round(self.hit[i])));
        }
        m.insert("dialogues".into(), json!(self.dialogues));
        Value::Object(m)
    }
}

/// One row through the facade: a store per user with `edit` applied to the config.
fn coral_row(ds: &Dataset, embedder: Arc<dyn Embedder>, edit: Edit) -> Result<Metrics> {
    let now = ds.now();
    let mut metrics = Metrics::default();
    for user in ds.users() {
        let dir = tempfile::tempdir()?;
        let mut config = Config {
            base_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        config.embedding.dim = embedder.dim();
        config.storage.sync = "never".into();
        config.memory.sim_threshold_hot = 1.0;
        edit(&mut config);
        let coral = Coral::open_with(config, Arc::clone(&embedder))?;
        // Coral item id -> the memory ids stored as it.
        let mut ids: HashMap<String, Vec<String>> = HashMap::new();
        for m in ds.memories_of(user) {
            let options = InsertOptions {
                timestamp: Some(m.time),
                now: Some(now),
                ..InsertOptions::default()
            };
            let stored = coral.insert_with(&m.text, options)?;
            ids.entry(stored.id().to_string())
                .or_default()
                .push(m.id.clone());
        }
        for d in ds.dialogues.iter().filter(|d| d.user == user) {
            let options = SearchOptions {
                top_k: Some(DEPTH),
                now: Some(now),
                ..SearchOptions::default()
            };
            let ranked: Vec<Vec<String>> = coral
                .search_with(&d.query, options)?
                .into_iter()
                .map(|h| ids.get(&h.item.item_id).cloned().unwrap_or_default())
                .collect();
            metrics.add(&ranked, &d.gold);
        }
        coral.close()?;
    }
    Ok(metrics)
}

/// BM25 alone: the `coral-score` kernel over each user's memories, distinct query terms.
fn bm25_row(ds: &Dataset) -> Metrics {
    let mut metrics = Metrics::default();
    for user in ds.users() {
        let memories = ds.memories_of(user);
        let mut index = Bm25Index::new();
        for (doc, m) in memories.iter().enumerate() {
            index.insert_text(doc as u32, &m.text);
        }
        for d in ds.dialogues.iter().filter(|d| d.user == user) {
            let hits = index.search(
                &Bm25Query::from_text(&d.query),
                Bm25Params::default(),
                DEPTH,
                |_| true,
            );
            let ranked: Vec<Vec<String>> = hits
                .iter()
                .map(|&(doc, _)| vec![memories[doc as usize].id.clone()])
                .collect();
            metrics.add(&ranked, &d.gold);
        }
    }
    metrics
}

/// Remembers every vector it computed, so the rows of one embedder embed each text once.
struct Memo {
    inner: Arc<dyn Embedder>,
    memo: Mutex<HashMap<String, Vec<f32>>>,
}

impl Memo {
    fn new(inner: Arc<dyn Embedder>) -> Memo {
        Memo {
            inner,
            memo: Mutex::new(HashMap::new()),
        }
    }
}

impl Embedder for Memo {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str]) -> coral_embed::Result<Vec<Vec<f32>>> {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        let missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !memo.contains_key(*t))
            .collect();
        if !missing.is_empty() {
            for (text, v) in missing.iter().zip(self.inner.embed(&missing)?) {
                memo.insert((*text).to_string(), v);
            }
        }
        Ok(texts.iter().map(|t| memo[*t].clone()).collect())
    }
}

fn print_table(out: &Value) {
    for key in ["madial_zh", "madial_en"] {
        let Some(rows) = out[key].as_object() else {
            continue;
        };
        println!(
            "\n{key} (percent; {} dialogues)",
            out["meta"]["dialogues"][key]
        );
        println!(
            "  {:<18} {:>6} {:>6} {:>6} {:>6} {:>6}",
            "row", "R@1", "R@3", "R@5", "R@10", "hit@5"
        );
        for (row, m) in rows {
            let p = |k: &str| m[k].as_f64().unwrap_or(f64::NAN) * 100.0;
            println!(
                "  {row:<18} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1}",
                p("recall_at_1"),
                p("recall_at_3"),
                p("recall_at_5"),
                p("recall_at_10"),
                p("hit_at_5")
            );
        }
    }
    println!("\nreference: {REFERENCE}");
    if let Some(skipped) = out["meta"]["skipped_embedders"].as_object() {
        for (label, why) in skipped {
            println!("skipped {label}: {}", why.as_str().unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_midnights() {
        assert_eq!(unix_date("1970-01-01"), Some(0.0));
        assert_eq!(unix_date("2023-12-25"), Some(1_703_462_400.0));
        assert_eq!(unix_date("2024-02-29"), Some(1_709_164_800.0));
        assert_eq!(unix_date("2024-13-01"), None);
        assert_eq!(unix_date("soon"), None);
    }

    #[test]
    fn recall_and_hit_count_gold_ids_in_the_top_k() {
        let mut m = Metrics::default();
        let ranked: Vec<Vec<String>> = [vec!["9"], vec!["1", "2"], vec!["3"]]
            .iter()
            .map(|p| p.iter().map(|s| s.to_string()).collect())
            .collect();
        m.add(
            &ranked,
            &[
                "1".to_string(),
                "3".to_string(),
                "7".to_string(),
                "2".to_string(),
            ],
        );
        let json = m.to_json();
        assert_eq!(json["recall_at_1"], 0.0);
        assert_eq!(json["recall_at_3"], 0.75);
        assert_eq!(json["hit_at_1"], 0.0);
        assert_eq!(json["hit_at_5"], 1.0);
    }
}

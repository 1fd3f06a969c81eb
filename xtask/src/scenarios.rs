//! `cargo xtask scenarios`: the original Coral's scenario benchmarks, re-created from
//! the corpus definitions in `../shared/upstream-data/coral_bench_corpora.json` (data only; the
//! procedures below are ours). Writes `target/coral-bench/scenarios.json` and prints our figures
//! next to the original's. Deterministic: fixed seed, explicit timestamps, the hash embedder
//! (no model is available to this build; the JSON says `embedder: "hash"`).
//!
//! # Cross-project sharing (`cross_project`)
//!
//! Corpus: `bench_cross_project`. Projects A, B, C own 12 memories each (the `{n}`/`{t}`
//! placeholders are filled from a generator seeded with [`SEED`]: `{n}` in 1..=999, `{t}` in
//! 1..=120); S is 8 shared user preferences; every project has 8 queries; E is a project with
//! queries but no memories (cold start). All memories are inserted at one timestamp and searched
//! one hour later, so the recency term is the same for every item and only the vector and
//! bitmap-Jaccard terms rank; searches use Coral's defaults (`min_score` 0, weighted mode).
//!
//! Relevance: a memory is relevant to a query asked in project P when it belongs to P or is a
//! shared preference (no project), see [`cross_project::relevant`]. For A, B and C that is
//! 12 + 8 = 20 items per query.
//!
//! - `precision_at_5`: relevant items among the top 5 divided by 5 (a short list is not
//!   rewarded), averaged over the 24 queries of A, B and C.
//! - `recall_at_5`: relevant items among the top 5 divided by min(5, |relevant|), the capped
//!   recall of BEIR (`R_cap@5`). With 20 relevant items per query it can reach 1.0, which the
//!   original reports; plain recall cannot exceed 5 / 20 and is given as `recall_at_5_full`.
//!
//! Modes:
//! - `isolated`: one Coral per project holding only that project's memories. The shared
//!   preferences are in none of them: in isolation, what the user said elsewhere never reaches a
//!   project. E gets an empty Coral of its own.
//! - `shared`: one pool with A, B, C (each item tagged with its project) and S (untagged),
//!   searched with no project.
//! - `shared_affinity`: the same pool, searched with `project` = the query's project, so
//!   Coral's `retrieval.project_boost` (default 0.15, equal to the original's `AFFINITY_BOOST`)
//!   lifts that project's items and the shared ones.
//!
//! Cold start: each E query is a hit when its top 5 holds at least one relevant item, i.e. a
//! shared preference. `isolated` searches E's empty Coral; `shared` the pool with no project;
//! `shared_affinity` the pool with project "E" (which boosts only the shared items).
//!
//! # The 200-turn translation assistant (`turns_200`)
//!
//! Corpus: `test_200_turns.materialized_turns_seed42`, replayed in order; turn i happens at
//! `T0 + 60 s × i`, given to Coral as both the item's timestamp and the clock. Each turn: first
//! the assistant recalls context (a top-5 search with the turn's `search_query`), then the
//! user's text is inserted with the turn's importance. A turn is a hook when its `meta.hook` is
//! set or its text contains one of `HOOK_PHRASES`; a hook turn runs a profile analysis when at
//! least `COOLDOWN_TURNS` (20) turns have passed since the last analysis, the conversation's
//! start counting as turn 0. With that reading the original's 9 analyses come out; the
//! original's code is not in the data, so the start-of-conversation rule is our reconstruction.
//! A profile analysis is a top-10 search with the turn's `search_query`; the preference texts
//! among its hits are mapped to their `STYLE_HOOKS` fields, and the profile is the union.
//!
//! Capacity 50 (the original's value is not in the data; 50 is small enough that governance runs
//! several times over 200 turns), governance headroom automatic (max(10, min(50 / 10, 200)) =
//! 10), so `capacity_bound` = 60. `memory.sim_threshold_hot` is 0.9: at the default 0.7 the
//! task requests of one template (differing only in a number or the target language) merge,
//! 177 of 200 turns collapse into 23 memories and governance never runs, while the original
//! counted only 18 dedups. The default-threshold replay is still run, reported under
//! `at_default_sim_threshold` and held to the same checks, except that governance must run.
//! Every other setting is Coral's default. `max_total` is the largest total seen after any turn;
//! each governance run must end at exactly the capacity. `important_survived`: every memory
//! inserted with importance > 0 (the preference turns) is still live at the end.
//! `reopen_consistent`: `export()` before close equals `export()` after reopening the directory.
//! Every item ever inserted must be live or in the archive.
//!
//! The original's third scenario (capacity vs precision vs disk) is not implemented: its corpus
//! gives materialised texts for seed 7 only and no relevance judgements for its queries.

mod cross_project;
mod turns;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use coral::{Config, Coral, HashEmbedder};
use serde_json::{Value, json};

/// Seed of every generated value.
pub(crate) const SEED: u64 = 42;
/// Hash-embedding dimension (Coral's default).
pub(crate) const DIM: usize = 384;
/// 2026-01-01T00:00:00Z: the scenarios' clock starts here.
pub(crate) const T0: f64 = 1_767_225_600.0;

/// xorshift64*: small, deterministic, no dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn seeded(seed: u64) -> Rng {
        // The state must never be zero; mixing the seed with an odd constant guarantees it for
        // every seed but one, which is then replaced.
        let s = seed ^ 0x9e37_79b9_7f4a_7c15;
        Rng(if s == 0 { 0x9e37_79b9_7f4a_7c15 } else { s })
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `lo..=hi`.
    pub(crate) fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// Fill the `{n}` (1..=999) and `{t}` (1..=120) placeholders of a corpus template. A text
/// without placeholders comes back unchanged and draws nothing; an unknown placeholder is an
/// error naming it. A `{` without a closing `}` is literal text.
pub(crate) fn materialise(template: &str, rng: &mut Rng) -> Result<String> {
    let mut out = String::with_capacity(template.len() + 8);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return Ok(out);
        };
        let value = match &after[..close] {
            "n" => rng.between(1, 999),
            "t" => rng.between(1, 120),
            other => bail!("unknown placeholder {{{other}}} in corpus template {template:?}"),
        };
        out.push_str(&value.to_string());
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A configuration for a scenario store in `dir`: hash embedder, Coral's defaults otherwise.
pub(crate) fn config_in(dir: &Path) -> Config {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.embedding.embedder = "hash".into();
    config.embedding.dim = DIM;
    config
}

pub(crate) fn open(config: &Config) -> Result<Coral> {
    let embedder = HashEmbedder::new(DIM).context("creating the hash embedder")?;
    Coral::open_with(config.clone(), Arc::new(embedder))
        .with_context(|| format!("opening a scenario store in {}", config.base_dir.display()))
}

fn corpora(root: &Path) -> Result<Value> {
    let path = root.join("../shared/upstream-data/coral_bench_corpora.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the scenario corpora {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// A JSON value as a list of strings, or an error naming `what`.
pub(crate) fn strings(value: &Value, what: &str) -> Result<Vec<String>> {
    value
        .as_array()
        .with_context(|| format!("{what} is not a list in the corpora file"))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(String::from)
                .with_context(|| format!("{what} holds a non-string: {v}"))
        })
        .collect()
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}"))
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        // Same figures in debug, but the run is meant to take seconds: re-run it optimised.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["run", "--quiet", "--release", "--package", "xtask", "--"])
            .arg("scenarios")
            .args(args)
            .current_dir(root)
            .status()
            .context("re-running xtask scenarios in release mode")?;
        if !status.success() {
            bail!("scenarios failed ({status})");
        }
        return Ok(());
    }
    let data = corpora(root)?;
    let work = tempfile::tempdir()?;
    let started = std::time::Instant::now();
    let cross = cross_project::run(&data["bench_cross_project"], work.path())?;
    let turns = turns::run(&data["test_200_turns"], &work.path().join("turns"))?;
    let elapsed = started.elapsed().as_secs_f64();

    let mut notes = vec![format!(
        "embedder: hash ({DIM} dims); no embedding model is available to this build. It scores \
         shared tokens (for this Chinese corpus mostly single characters), not meaning. The \
         original's published figures also came from hash embeddings on synthetic corpora."
    )];
    notes.extend(cross.notes.iter().cloned());
    notes.extend(turns.notes.iter().cloned());
    notes.push(
        "capacity vs precision vs disk (bench_disk_tradeoff) is not run: the corpus has \
         materialised texts for seed 7 only and no relevance judgements for its queries."
            .into(),
    );

    let report = json!({
        "embedder": "hash",
        "dim": DIM,
        "seed": SEED,
        "elapsed_s": elapsed,
        "cross_project": cross.json,
        "turns_200": turns.json,
        "checks_passed": turns.failed.is_empty(),
        "failed_checks": turns.failed,
        "notes": notes,
    });
    let out_dir = root.join("target/coral-bench");
    std::fs::create_dir_all(&out_dir)?;
    let out = out_dir.join("scenarios.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", out.display()))?;

    println!("scenarios (hash embedder, {DIM} dims, seed {SEED}, {elapsed:.2} s)\n");
    println!("cross-project                 ours            original");
    println!("                              P@5     R@5     P@5     R@5");
    for (mode, original_p, original_r) in [
        ("isolated", Some(1.0), None),
        ("shared", Some(0.77), None),
        ("shared_affinity", Some(1.0), Some(1.0)),
    ] {
        let m = &cross.json[mode];
        println!(
            "  {mode:<27} {:<7} {:<7} {:<7} {}",
            fmt_opt(m["precision_at_5"].as_f64()),
            fmt_opt(m["recall_at_5"].as_f64()),
            fmt_opt(original_p),
            fmt_opt(original_r),
        );
    }
    let cold = &cross.json["cold_start_hit_rate"];
    println!(
        "  cold start (E) isolated     {:<15} 0.00",
        fmt_opt(cold["isolated"].as_f64())
    );
    println!(
        "  cold start (E) shared       {:<15} 1.00",
        fmt_opt(cold["shared"].as_f64())
    );
    println!(
        "  cold start (E) shared+aff.  {:<15} -",
        fmt_opt(cold["shared_affinity"].as_f64())
    );
    let t = &turns.json;
    println!("\n200-turn translation assistant ours            original");
    println!(
        "  profile analyses            {:<15} 9",
        t["analyses"].as_u64().unwrap_or(0)
    );
    println!(
        "  min gap between analyses    {:<15} ≥ 20",
        t["min_gap"]
            .as_u64()
            .map_or_else(|| "-".into(), |g| g.to_string())
    );
    println!(
        "  max total / bound           {:<15} converges to capacity",
        format!("{} / {}", t["max_total"], t["capacity_bound"])
    );
    println!(
        "  governance runs             {:<15} -",
        format!(
            "{} (exact: {})",
            t["governance_runs"].as_u64().unwrap_or(0),
            t["governance_exact"]
        )
    );
    println!(
        "  dedup merges                {:<15} 18",
        t["dedup_merges"].as_u64().unwrap_or(0)
    );
    println!("  important survived          {}", t["important_survived"]);
    println!("  reopen consistent           {}", t["reopen_consistent"]);
    println!("\nnotes:");
    for n in &notes {
        println!("  - {n}");
    }
    println!("\nwritten to {}", out.display());
    if !turns.failed.is_empty() {
        bail!("{} check(s) failed: {:?}", turns.failed.len(), turns.failed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn materialise_fills_placeholders_deterministically() {
        let template = "A:接口 {n} 首次调用建立连接池，超时 {t} 秒";
        let a = materialise(template, &mut Rng::seeded(SEED)).unwrap();
        let b = materialise(template, &mut Rng::seeded(SEED)).unwrap();
        assert_eq!(a, b, "same seed, same text");
        assert!(!a.contains('{') && !a.contains('}'), "{a}");
        let numbers: Vec<u64> = a
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(numbers.len(), 2, "{a}");
        assert!((1..=999).contains(&numbers[0]) && (1..=120).contains(&numbers[1]));
        assert!(a.starts_with("A:接口 ") && a.ends_with(" 秒"), "{a}");
        let others: Vec<String> = (1..50)
            .map(|s| materialise(template, &mut Rng::seeded(s)).unwrap())
            .collect();
        assert!(others.iter().any(|o| o != &a), "the seed matters");
    }

    #[test]
    fn materialise_leaves_plain_text_and_rejects_unknown_placeholders() {
        let mut rng = Rng::seeded(SEED);
        let plain = "B:说明书里按键叫法要统一为按钮 {unclosed";
        assert_eq!(materialise(plain, &mut rng).unwrap(), plain);
        // Plain text draws nothing: the next draw equals a fresh generator's first.
        assert_eq!(
            rng.between(0, u64::MAX - 1),
            Rng::seeded(SEED).between(0, u64::MAX - 1)
        );
        let err = materialise("限时特惠第 {w} 期", &mut rng).unwrap_err();
        assert!(err.to_string().contains("{w}"), "{err}");
    }
}

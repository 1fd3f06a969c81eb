//! `cargo xtask bench-hook [--runs N] [--model minilm|use]`: the Claude Code prompt hook end to
//! end, process start included, at 20,000 memories (docs/hooks.md, "Speed"). Each run spawns
//! the release `coral hook claude-code UserPromptSubmit` with a recorded-shape payload on stdin
//! and waits for it to exit; the table gives the median, the range and p90, and
//! `target/coral-bench/hook.json` keeps every run.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::stress::{Rng, text, words};

const MEMORIES: usize = 20_000;

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut runs = 50;
    let mut model: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => {
                runs = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .context("--runs takes a positive number")?
            }
            "--model" => model = Some(it.next().context("--model takes minilm or use")?.clone()),
            other => bail!("unknown argument {other:?} (--runs N, --model minilm|use)"),
        }
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--quiet", "--release", "--package", "coral-mcp"])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("building the release coral failed ({status})");
    }
    let binary = root.join("target/release/coral");
    let embedding = match model.as_deref() {
        None => json!({"embedder": "hash", "dim": 384}),
        Some("minilm") => json!({"embedder": "model", "model_name": "all-MiniLM-L6-v2",
            "model_path": std::env::var("CORAL_TEST_MINILM_DIR")
                .context("CORAL_TEST_MINILM_DIR is not set: eval \"$(bash scripts/fetch-test-models.sh)\"")?}),
        Some("use") => json!({"embedder": "model", "model_name": "use-multilingual-v3", "dim": 512,
            "model_path": std::env::var("CORAL_TEST_USE_DIR")
                .context("CORAL_TEST_USE_DIR is not set: eval \"$(bash scripts/fetch-test-models.sh)\"")?}),
        Some(other) => bail!("--model {other:?}: minilm or use"),
    };
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("coral_config.json");
    std::fs::write(
        &config,
        json!({
            "embedding": embedding,
            "memory": {"capacity_threshold": MEMORIES, "max_cold_entries": MEMORIES,
                       "sim_threshold_hot": 0.9},
        })
        .to_string(),
    )?;
    let words = words(root)?;
    let mut rng = Rng(11);
    let texts: Vec<String> = (1..=MEMORIES).map(|i| text(i, &words, &mut rng)).collect();
    let started = Instant::now();
    {
        let coral = coral::Coral::open(&config)?;
        for t in &texts {
            coral.insert(t, 0.3)?;
        }
        let total = coral.stats().total;
        if total != MEMORIES {
            bail!("{total} memories stored, not {MEMORIES}");
        }
        for w in coral.close()? {
            eprintln!("xtask: {w}");
        }
    }
    eprintln!(
        "xtask: {MEMORIES} memories stored in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let prompt = format!(
        "Before we change the menu again, what do we know about {} and {}? 相关细节",
        words[rng.below(words.len())],
        words[rng.below(words.len())]
    );
    let payload = json!({
        "session_id": "8f3c2a64-1d5e-4b7a-9c0e-2f6d8b1a4e93",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/home/user/shop",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    })
    .to_string();
    let once = |payload: &str| -> Result<(f64, Value)> {
        let t = Instant::now();
        let mut child = Command::new(&binary)
            .arg("--config")
            .arg(&config)
            .args(["hook", "claude-code", "UserPromptSubmit"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        child
            .stdin
            .take()
            .context("no stdin")?
            .write_all(payload.as_bytes())?;
        let out = child.wait_with_output()?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if !out.status.success() {
            bail!("the hook exited {}", out.status);
        }
        Ok((ms, serde_json::from_slice(&out.stdout)?))
    };
    // Warm the page cache and check the answer once.
    for _ in 0..3 {
        once(&payload)?;
    }
    let (_, answer) = once(&payload)?;
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    if !context.contains("压测记忆") {
        bail!("the prompt hook recalled nothing at {MEMORIES} memories: {answer}");
    }
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        ms.push(once(&payload)?.0);
    }
    let mut sorted = ms.clone();
    sorted.sort_by(f64::total_cmp);
    let pick = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    let label = model.as_deref().unwrap_or("hash");
    println!(
        "prompt hook end to end, {MEMORIES} memories, {label} embedder, {runs} runs: \
         p50 {:.1} ms, p90 {:.1} ms, min {:.1} ms, max {:.1} ms",
        pick(0.5),
        pick(0.9),
        sorted[0],
        sorted[sorted.len() - 1]
    );
    let out = root.join("target/coral-bench");
    std::fs::create_dir_all(&out)?;
    let file = out.join(format!("hook-{label}.json"));
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&json!({
            "memories": MEMORIES, "embedder": label, "runs": runs,
            "p50_ms": pick(0.5), "p90_ms": pick(0.9),
            "min_ms": sorted[0], "max_ms": sorted[sorted.len() - 1], "ms": ms,
        }))?,
    )?;
    eprintln!("xtask: wrote {}", file.display());
    Ok(())
}

//! `cargo xtask bench-hook [--runs N] [--model minilm|use]`: the Claude Code prompt hook end to
//! end, process start included, at 20,000 memories (docs/hooks.md, "Speed"). Each run spawns
//! the release `coral hook claude-code UserPromptSubmit` with a recorded-shape payload on stdin
//! and waits for it to exit, on two paths: with no server running (the hook opens the store
//! itself) and with `coral mcp` running in the background (the hook asks its recall socket).
//! Both answers must be the same. The table gives each path's median, p90 and range, and
//! `target/coral-bench/hook-<embedder>.json` keeps every run.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
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
    let once = |payload: &str, verbose: bool| -> Result<(f64, Value, String)> {
        let t = Instant::now();
        let mut child = Command::new(&binary)
            .arg("--config")
            .arg(&config)
            .args(verbose.then_some("-v"))
            .args(["hook", "claude-code", "UserPromptSubmit"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if verbose {
                Stdio::piped()
            } else {
                Stdio::null()
            })
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
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        Ok((ms, serde_json::from_slice(&out.stdout)?, stderr))
    };
    // One path: warm the page cache, check the answer and how it was made, then time `runs`.
    let path = |name: &str, via: &str| -> Result<(Vec<f64>, Value)> {
        for _ in 0..3 {
            once(&payload, false)?;
        }
        let (_, answer, said) = once(&payload, true)?;
        if !said.contains(via) {
            bail!("the {name} path did not recall {via:?}: {said}");
        }
        let context = answer["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_default();
        if !context.contains("压测记忆") {
            bail!("the prompt hook recalled nothing at {MEMORIES} memories: {answer}");
        }
        for line in said.lines() {
            eprintln!("xtask: {name}: {line}");
        }
        let mut ms = Vec::with_capacity(runs);
        for _ in 0..runs {
            ms.push(once(&payload, false)?.0);
        }
        Ok((ms, answer))
    };
    let (direct, direct_answer) = path("no server", "from the store")?;
    let mut server = start_server(&binary, &config, dir.path())?;
    let socket = path("server", "through the server");
    let _ = server.stdin.take();
    let stopped = server.wait();
    let (socket, socket_answer) = socket?;
    stopped?;
    if socket_answer != direct_answer {
        bail!("the socket's answer differs from the store's:\n{socket_answer}\n{direct_answer}");
    }
    let label = model.as_deref().unwrap_or("hash");
    let mut report = json!({"memories": MEMORIES, "embedder": label, "runs": runs});
    for (name, ms) in [("no_server", &direct), ("server", &socket)] {
        let stats = Stats::of(ms);
        println!(
            "prompt hook end to end, {MEMORIES} memories, {label} embedder, {runs} runs, {}: \
             p50 {:.1} ms, p90 {:.1} ms, min {:.1} ms, max {:.1} ms",
            name.replace('_', " "),
            stats.p50,
            stats.p90,
            stats.min,
            stats.max
        );
        report[name] = json!({
            "p50_ms": stats.p50, "p90_ms": stats.p90, "min_ms": stats.min,
            "max_ms": stats.max, "ms": ms,
        });
    }
    let out = root.join("target/coral-bench");
    std::fs::create_dir_all(&out)?;
    let file = out.join(format!("hook-{label}.json"));
    std::fs::write(&file, serde_json::to_string_pretty(&report)?)?;
    eprintln!("xtask: wrote {}", file.display());
    Ok(())
}

/// The median, p90 and range of some timings.
struct Stats {
    p50: f64,
    p90: f64,
    min: f64,
    max: f64,
}

impl Stats {
    fn of(ms: &[f64]) -> Stats {
        let mut sorted = ms.to_vec();
        sorted.sort_by(f64::total_cmp);
        let pick = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
        Stats {
            p50: pick(0.5),
            p90: pick(0.9),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        }
    }
}

/// `coral mcp` in the background as Claude Code runs it (stdin kept open), once it owns the
/// data directory's recall socket.
fn start_server(binary: &Path, config: &Path, dir: &Path) -> Result<Child> {
    let mut child = Command::new(binary)
        .arg("--config")
        .arg(config)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let socket = dir.join("memory_data/.coral.sock");
    let started = Instant::now();
    while !socket.exists() {
        if let Some(status) = child.try_wait()? {
            bail!(
                "coral mcp exited {status} before listening on {}",
                socket.display()
            );
        }
        if started.elapsed().as_secs() > 120 {
            let _ = child.kill();
            bail!(
                "coral mcp did not listen on {} within 120 s",
                socket.display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(child)
}

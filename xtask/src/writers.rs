//! `cargo xtask bench-writers`: insert throughput of one `coral insert --stdin` process against
//! two (and four) processes writing one data directory at once (docs/storage.md, "Several processes on one directory"; issue target:
//! two writers together ≥ 50 % of one writer's rate).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Result, bail};
use serde_json::json;

const LINES: usize = 5_000;

fn lines(writer: usize) -> String {
    (0..LINES)
        .map(|i| {
            format!(
                "writer {writer} memory {i} 写入者 k{:x} m{:x}\n",
                i * 7919 + writer,
                i * 104_729
            )
        })
        .collect()
}

/// Start `n` writers on one fresh directory, feed each LINES lines, wait for all; seconds.
fn run_writers(coral: &Path, n: usize) -> Result<f64> {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("coral_config.json");
    std::fs::write(
        &config,
        json!({"embedding": {"embedder": "hash"},
               // Throughput, not dedup: generated texts from different writers can be
               // near-duplicates and would merge (acknowledged as such) at the default 0.7.
               "memory": {"capacity_threshold": 100_000, "max_cold_entries": 100_000,
                          "sim_threshold_hot": 1.0}})
        .to_string(),
    )?;
    let inputs: Vec<String> = (0..n).map(lines).collect();
    let start = Instant::now();
    let children: Vec<_> = inputs
        .into_iter()
        .map(|input| -> Result<_> {
            let mut child = Command::new(coral)
                .args(["-q", "--config"])
                .arg(&config)
                .args(["insert", "--stdin"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            let mut stdin = child.stdin.take().expect("piped");
            let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
            Ok((child, feeder))
        })
        .collect::<Result<_>>()?;
    for (mut child, feeder) in children {
        let _ = feeder.join();
        if !child.wait()?.success() {
            bail!("a writer failed");
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let count = Command::new(coral)
        .args(["-q", "--json", "--config"])
        .arg(&config)
        .arg("stats")
        .output()?;
    let stats: serde_json::Value = serde_json::from_slice(&count.stdout)?;
    if stats["stats"]["total"] != n * LINES {
        bail!(
            "expected {} memories, found {}",
            n * LINES,
            stats["stats"]["total"]
        );
    }
    Ok(seconds)
}

pub fn run(root: &Path) -> Result<()> {
    crate::cargo(&["build", "--quiet", "--release", "-p", "coral-mcp"])?;
    let coral = crate::target_dir(root).join("release/coral");
    let one = LINES as f64 / run_writers(&coral, 1)?;
    let two = 2.0 * LINES as f64 / run_writers(&coral, 2)?;
    let four = 4.0 * LINES as f64 / run_writers(&coral, 4)?;
    let report = json!({
        "lines_per_writer": LINES,
        "one_writer_inserts_per_s": one,
        "two_writers_inserts_per_s": two,
        "four_writers_inserts_per_s": four,
        "two_over_one": two / one,
    });
    let out = root.join("target/coral-bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(
        out.join("writers.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    println!("writers on one data directory ({LINES} inserts each, release, whole processes)");
    println!("  1 writer    {one:>8.0} inserts/s");
    println!(
        "  2 writers   {two:>8.0} inserts/s together ({:.0} % of one; target ≥ 50 %)",
        100.0 * two / one
    );
    println!("  4 writers   {four:>8.0} inserts/s together");
    Ok(())
}

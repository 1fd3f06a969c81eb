//! `cargo xtask <command>`: the project's automation.
//!
//! - `ci`: what `.ci/run` runs: fmt check, the dependency rules, clippy with warnings denied,
//!   the MCP client checks, `cargo test --workspace`.
//! - `clients`: `coral mcp` checked by the official Python MCP client and the MCP Inspector.
//! - `deps`: check that the crate graph follows ARCHITECTURE.md (rules, HTTP client homes, and
//!   the doc's crate list and graph against `cargo metadata`).
//! - `stress-20k`: the 20,000-item stress run, written to
//!   `target/coral-bench/stress-20k.json`.
//! - `stress-1m`: a million memories with the approximate vector index (recall@10 against
//!   exact brute force, search p50 / p99, inserts/s, reopen, peak RSS, index build time),
//!   written to `target/coral-bench/stress-1m.json` (`--items`, `--dims`, `--queries`).
//! - `search-1m`: one search's latency at a million memories, the pool built once into a
//!   directory and reopened each run -> `target/coral-bench/search-1m.json` (`--dir`,
//!   `--items`, `--queries`).
//! - `pg-bench`: the PostgreSQL backend beside the local one at 100,000 memories (inserts/s
//!   with 4 writers, search p50 / p90 / p99 counted and uncounted, recall@10 against the local
//!   exact search) -> `target/coral-bench/pg-bench.json` (`--items`, `--writers`,
//!   `--queries`, `--smoke`; `CORAL_POSTGRES_URL` or a server started for the run).
//! - `sparse-walk`: density of hash vectors on the stress corpus's generator and the cost of
//!   the exact sparse top-k at 1M against a full scan, written to
//!   `target/coral-bench/sparse-walk.json` (`--items`, `--dim`, `--queries`).
//! - `stress-threads`: 300 threads × 20 advances in one process, then 3 OS processes × 30
//!   advances on one thread, written to `target/coral-bench/stress-threads.json`.
//! - `bench-servers`: MCP stdio round trip and HTTP throughput at 2,000 items.
//! - `bench`: the criterion benches (`cargo bench -p coral-benches`).
//! - `scenarios`: the original's cross-project and 200-turn scenario benchmarks,
//!   written to `target/coral-bench/scenarios.json`.
//! - `fuzz`: run every cargo-fuzz target in `fuzz/` (`--seconds N`, default 60).
//! - `eval`: retrieval quality on MADial-Bench zh and en and LoCoMo dev, for the memory pool
//!   and the timeline, per embedder and retrieval mode, written to
//!   `target/coral-bench/eval.json` (docs/eval.md; `--dataset`, `--path`, `--embedder`,
//!   `--mode` pick cells, `--docs` regenerates docs/eval.md).
//! - `bench-embed`: USE multilingual v3 load time, memory, latency and batch throughput, and the
//!   ONNX embedder's latency, batch throughput, and 8 concurrent searchers with batching window
//!   0 vs 8 ms (`--use-only` skips ONNX), written to `target/coral-bench/embed.json`.
//! - `fixtures`: refresh `fixtures/compat/` and `fixtures/models/` from
//!   `../shared/upstream-data/`.

mod architecture_doc;
mod bench_texts;
mod browser;
mod clients;
mod deps;
mod embed_bench;
mod eval;
mod fuzz;
mod hook_bench;
mod packages;
mod pg_bench;
mod scenarios;
mod search_1m;
mod servers;
mod sparse_walk;
mod stress;
mod stress_1m;
mod stress_threads;
mod test_models;
mod use_bench;
mod writers;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        print_help();
        bail!("no command given");
    };
    match cmd.as_str() {
        "ci" => ci(),
        "deps" => deps::check(&root()),
        "clients" => clients::check(&root()),
        "stress-20k" => stress::run(&root(), &args[1..]),
        "stress-1m" => stress_1m::run(&root(), &args[1..]),
        "sparse-walk" => sparse_walk::run(&root(), &args[1..]),
        "search-1m" => search_1m::run(&root(), &args[1..]),
        "pg-bench" => pg_bench::run(&root(), &args[1..]),
        "stress-threads" => stress_threads::run(&root(), &args[1..]),
        "bench" => {
            let mut a = vec!["bench", "-p", "coral-benches"];
            if args.len() > 1 {
                a.push("--");
                a.extend(args[1..].iter().map(String::as_str));
            }
            cargo(&a)
        }
        "bench-servers" => servers::run(&root()),
        "scenarios" => scenarios::run(&root(), &args[1..]),
        "eval" => eval::run(&root(), &args[1..]),
        "bench-embed" => embed_bench::run(&root(), &args[1..]),
        "fuzz" => fuzz::run(&root(), &args[1..]),
        "bench-writers" => writers::run(&root()),
        "bench-hook" => hook_bench::run(&root(), &args[1..]),
        "fixtures" => fixtures(),
        "help" | "--help" | "-h" => {
            print_help();
            Ok(())
        }
        other => {
            print_help();
            bail!("unknown command {other:?}")
        }
    }
}

fn print_help() {
    eprintln!(
        "usage: cargo xtask <command>\n\n\
         commands:\n  \
         ci           fmt check, clippy -D warnings, dependency rules, cargo test --workspace\n  \
         deps         check the crate dependency rules\n  \
         clients      check coral mcp with the Python MCP client and the MCP Inspector\n  \
         stress-20k   20,000-item stress run -> target/coral-bench/stress-20k.json\n  \
         stress-1m    1,000,000 items with the vector index -> target/coral-bench/stress-1m.json\n  \
         search-1m    one search's latency at 1M (pool kept in a directory) -> target/coral-bench/search-1m.json\n  \
         pg-bench     postgres beside local at 100k: inserts/s, search p50/p90/p99, recall@10 -> target/coral-bench/pg-bench.json\n  \
         sparse-walk  hash-vector density and the sparse exact top-k at 1M -> target/coral-bench/sparse-walk.json\n  \
         stress-threads  threads in one process and across 3 processes -> target/coral-bench/stress-threads.json\n  \
         bench-servers  MCP round trip and HTTP throughput -> target/coral-bench/servers.json\n  \
         bench        criterion benches: kernels and end-to-end search at 2k/20k/200k\n  \
         scenarios    cross-project and 200-turn scenarios -> target/coral-bench/scenarios.json\n  \
         eval         recall on MADial-Bench and LoCoMo dev, pool and timeline, per embedder and mode -> target/coral-bench/eval.json\n  \
         bench-writers  1 vs 2 vs 4 processes inserting into one directory\n  \
         bench-hook   the Claude Code prompt hook end to end at 20,000 memories (--runs N, --model minilm|use) -> target/coral-bench/hook-*.json\n  \
         fuzz         run every cargo-fuzz target (--seconds N, default 60)\n  \
         bench-embed  USE and ONNX embedder speed, batching window 0 vs 8 ms -> target/coral-bench/embed.json\n  \
         fixtures     refresh fixtures/compat and fixtures/models from ../shared/upstream-data"
    );
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Where cargo puts build output: `$CARGO_TARGET_DIR` (relative to the root) or `target/`.
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"))
}

fn cargo(args: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(args)
        .current_dir(root())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn ci() -> Result<()> {
    cargo(&["fmt", "--all", "--check"])?;
    deps::check(&root())?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    // xtask's ONNX build (the MiniLM rows of `eval`, `bench-embed`) is outside the workspace
    // build, and once stopped compiling unnoticed.
    cargo(&[
        "clippy",
        "--package",
        "xtask",
        "--features",
        "onnx",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    // `coral mcp` checked by the official Python MCP client and the MCP Inspector --strict.
    clients::check(&root())?;
    // The dashboard's browser test drives Chromium with these npm packages.
    browser::ensure_packages(&root())?;
    // With the ONNX runtime and test model (fetched when the environment lacks them).
    test_models::test_workspace(&root())?;
    // A short smoke run of every fuzz target (`cargo xtask fuzz` runs them for a minute each).
    fuzz::run(&root(), &["--seconds".to_string(), "5".to_string()])?;
    eprintln!("xtask ci: all checks passed");
    Ok(())
}

fn fixtures() -> Result<()> {
    for name in [
        "coral_test_vectors.json",
        "memcore_test_vectors.json",
        "coral_thread_done.json",
        "coral_default_config.json",
        "coral_mcp_transcript.json",
        "coral_plugin.js",
    ] {
        let src = root().join("../shared/upstream-data").join(name);
        let dst = root().join("fixtures/compat").join(name);
        std::fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
        eprintln!("refreshed {}; review the diff like code", dst.display());
    }
    let src = root().join("../shared/upstream-data/minilm-reference.json");
    let dst = root().join("fixtures/models/minilm-reference.json");
    std::fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
    eprintln!("refreshed {}; review the diff like code", dst.display());
    Ok(())
}

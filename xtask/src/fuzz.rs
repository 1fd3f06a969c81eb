//! `cargo xtask fuzz [--seconds N]`: run every cargo-fuzz target in `fuzz/` for N seconds
//! (default 60), starting from the small seed corpus in `fuzz/corpus/<target>/`. Installs
//! cargo-fuzz from crates.io when missing; on the stable toolchain it needs
//! `RUSTC_BOOTSTRAP=1`, which this sets for its own runs.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The fuzz targets, one per parser of untrusted bytes.
pub const TARGETS: [&str; 5] = ["journal", "npy", "items", "threads", "config"];

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.env("RUSTC_BOOTSTRAP", "1");
    c
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut seconds = 60u64;
    let mut only: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                seconds = it
                    .next()
                    .context("--seconds needs a number")?
                    .parse()
                    .context("--seconds needs a whole number")?;
            }
            t if TARGETS.contains(&t) => only.push(t.to_string()),
            other => bail!(
                "unknown fuzz argument {other:?} (targets: {})",
                TARGETS.join(", ")
            ),
        }
    }
    let have = cargo()
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("xtask fuzz: installing cargo-fuzz from crates.io");
        let status = cargo()
            .args(["install", "cargo-fuzz", "--locked"])
            .status()?;
        if !status.success() {
            bail!("cargo install cargo-fuzz failed ({status})");
        }
    }
    let fuzz_dir = root.join("fuzz");
    eprintln!("$ cargo fuzz build");
    let status = cargo()
        .args(["fuzz", "build"])
        .current_dir(&fuzz_dir)
        .status()?;
    if !status.success() {
        bail!("cargo fuzz build failed ({status})");
    }
    let targets: Vec<&str> = if only.is_empty() {
        TARGETS.to_vec()
    } else {
        only.iter().map(String::as_str).collect()
    };
    let mut failed = Vec::new();
    for target in targets {
        // Work on a copy of the seeds so the repository keeps only the small ones.
        let corpus = root.join("target/fuzz-corpus").join(target);
        std::fs::create_dir_all(&corpus)?;
        for seed in std::fs::read_dir(fuzz_dir.join("corpus").join(target))?.flatten() {
            std::fs::copy(seed.path(), corpus.join(seed.file_name()))?;
        }
        eprintln!("$ cargo fuzz run {target} ({seconds} s)");
        let status = cargo()
            .args(["fuzz", "run", target])
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg("-rss_limit_mb=2048")
            .arg("-print_final_stats=1")
            .current_dir(&fuzz_dir)
            .status()?;
        if !status.success() {
            failed.push(target);
        }
    }
    if !failed.is_empty() {
        bail!(
            "fuzz targets found problems: {} (reproducers in fuzz/artifacts/)",
            failed.join(", ")
        );
    }
    eprintln!("xtask fuzz: every target ran clean for {seconds} s");
    Ok(())
}

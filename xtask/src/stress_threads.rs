//! `cargo xtask stress-threads`: the thread stress run (README, "Speed").
//!
//! One process: 300 threads × 20 advances with interrupts, resumes, archives and parent links,
//! every change journaled before it returns (docs/storage.md), timed with the final flush;
//! close, reopen, compare. Five runs with `storage.sync = "interval"` (the default; the target
//! is ≤ 20 ms) and five with `"always"` (an fsync per change), reported as medians and
//! ranges. Then real OS processes on one thread:
//! three `coral thread advance --stdin` processes × 30 notes (coalesced writes, merges), and
//! three concurrent loops of 30 single `coral thread advance` invocations; both must end with
//! exactly 90 steps, each writer's in its order.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use coral::{Config, ThreadStatus, ThreadView, open_threads};
use serde_json::{Value, json};

const THREADS: usize = 300;
const ROUNDS: usize = 20;
const PROCESSES: usize = 3;
const PER_PROCESS: usize = 30;
/// Runs of the single-process part per sync policy.
const RUNS: usize = 5;

struct Checks {
    failed: Vec<String>,
    run: usize,
}

impl Checks {
    fn check(&mut self, ok: bool, what: impl Into<String>) {
        self.run += 1;
        if !ok {
            let what = what.into();
            eprintln!("CHECK FAILED: {what}");
            self.failed.push(what);
        }
    }
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        // Timings mean nothing in a debug build: re-run this command optimised.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "run",
                "--quiet",
                "--release",
                "--package",
                "xtask",
                "--",
                "stress-threads",
            ])
            .args(args)
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("stress-threads failed ({status})");
        }
        return Ok(());
    }
    let mut checks = Checks {
        failed: Vec::new(),
        run: 0,
    };
    let mut runs = RUNS;
    let mut quick = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => {
                runs = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .context("--runs takes a whole number above 0")?
            }
            // Only the single-process runs with the default policy: for profiling.
            "--quick" => quick = true,
            other => bail!("unknown argument {other:?}: stress-threads [--runs N] [--quick]"),
        }
    }
    let mut interval = Vec::new();
    let mut always = Vec::new();
    for _ in 0..runs {
        interval.push(single_process(&mut checks, "interval")?);
        if !quick {
            always.push(single_process(&mut checks, "always")?);
        }
    }
    let seconds = |runs: &[Value], key: &str| -> Vec<f64> {
        runs.iter()
            .map(|r| r[key].as_f64().unwrap_or(f64::NAN))
            .collect()
    };
    if quick {
        println!(
            "  {THREADS} threads × {ROUNDS} advances, sync interval  {}  (on-CPU {})",
            spread(&seconds(&interval, "single_process_s")),
            spread(&seconds(&interval, "single_process_cpu_s"))
        );
        if !checks.failed.is_empty() {
            bail!("{} check(s) failed", checks.failed.len());
        }
        return Ok(());
    }
    let (i_total, i_flush) = (
        seconds(&interval, "single_process_s"),
        seconds(&interval, "final_flush_s"),
    );
    let (a_total, a_flush) = (
        seconds(&always, "single_process_s"),
        seconds(&always, "final_flush_s"),
    );
    let i_cpu = seconds(&interval, "single_process_cpu_s");
    let mut single = interval[median_index(&i_total)].clone();
    let coral = coral_binary(root)?;
    let (stdin_steps, stdin_s) = multi_process_stdin(&coral, &mut checks)?;
    let (single_steps, single_s) = multi_process_invocations(&coral, &mut checks)?;

    single["single_process_s"] = json!(median(&i_total));
    single["final_flush_s"] = json!(median(&i_flush));
    single["advances_per_s"] = json!((THREADS * ROUNDS) as f64 / median(&i_total));
    let mut report = single;
    let extra = json!({
        "runs": runs,
        "interval_single_process_s": i_total,
        "interval_single_process_cpu_s": i_cpu,
        "interval_final_flush_s": i_flush,
        "always_single_process_s": a_total,
        "always_final_flush_s": a_flush,
        "multi_process_processes": PROCESSES,
        "multi_process_advances_each": PER_PROCESS,
        "multi_process_steps": stdin_steps,
        "multi_process_s": stdin_s,
        "multi_invocation_steps": single_steps,
        "multi_invocation_s": single_s,
        "checks_passed": checks.failed.is_empty(),
        "checks_run": checks.run,
        "failed_checks": checks.failed,
    });
    if let (Value::Object(r), Value::Object(e)) = (&mut report, extra) {
        r.extend(e);
    }
    let out_dir = root.join("target/coral-bench");
    std::fs::create_dir_all(&out_dir)?;
    let out = out_dir.join("stress-threads.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report)? + "\n")?;

    let f = |k: &str| report[k].as_f64().unwrap_or(f64::NAN);
    println!("stress-threads");
    println!(
        "  {THREADS} threads × {ROUNDS} advances, sync interval  {}  ({:.0} advances/s; target ≤ 20 ms)",
        spread(&i_total),
        f("advances_per_s")
    );
    println!("    on-CPU time of the calling thread  {}", spread(&i_cpu));
    println!(
        "    of which final flush               {}  ({} bytes)",
        spread(&i_flush),
        report["file_bytes"]
    );
    println!(
        "  {THREADS} threads × {ROUNDS} advances, sync always    {}",
        spread(&a_total)
    );
    println!(
        "    of which final flush               {}",
        spread(&a_flush)
    );
    println!(
        "  reopen                     {:>9.2} ms  (equal: {})",
        f("reopen_s") * 1e3,
        report["reopen_equal"]
    );
    println!(
        "  {PROCESSES} processes × {PER_PROCESS} (--stdin)   {:>9.2} ms  ({stdin_steps} steps; expected 90)",
        stdin_s * 1e3
    );
    println!(
        "  {PROCESSES} × {PER_PROCESS} single invocations {:>9.2} ms  ({single_steps} steps; expected 90)",
        single_s * 1e3
    );
    println!(
        "  checks                     {}",
        if checks.failed.is_empty() {
            format!("all {} passed", checks.run)
        } else {
            format!("FAILED: {:?}", checks.failed)
        }
    );
    println!("  written to {}", out.display());
    if !checks.failed.is_empty() {
        bail!("{} check(s) failed", checks.failed.len());
    }
    Ok(())
}

/// Seconds the calling thread has spent on a CPU (Linux: `/proc/thread-self/schedstat`; NaN
/// elsewhere). On a busy machine the wall time also counts waiting for a CPU; this does not
/// (nor does it count waiting for the disk).
fn thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// The position of the median of `v` (the lower one for an even count).
fn median_index(v: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    idx[(v.len() - 1) / 2]
}

fn median(v: &[f64]) -> f64 {
    v[median_index(v)]
}

/// "median ms (min–max)".
fn spread(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{:>8.2} ms ({:.2}–{:.2})",
        median(v) * 1e3,
        min * 1e3,
        max * 1e3
    )
}

/// 300 threads × 20 advances in one process, with interrupts, resumes, archives and links,
/// journaled with `storage.sync = sync`.
fn single_process(checks: &mut Checks, sync: &str) -> Result<Value> {
    let dir = tempfile::tempdir()?;
    let mut config = Config {
        base_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = sync.into();
    let threads = open_threads(&config)?;
    let (mut interrupts, mut resumes, mut archives, mut links) = (0, 0, 0, 0);
    let start = Instant::now();
    let cpu_start = thread_cpu_s();
    let mut ids: Vec<String> = Vec::with_capacity(THREADS);
    for i in 0..THREADS {
        // Groups of ten: the first is the parent, eight are created under it, the last is
        // linked afterwards.
        let parent = (i % 10 != 0 && i % 10 != 9).then(|| ids[i - i % 10].as_str());
        let t = threads.create(
            &format!("压测链路 {i}"),
            Some(&format!("thread {i} of the stress run")),
            parent,
            Some("stress"),
        )?;
        ids.push(t.thread_id);
        if i % 10 == 9 {
            threads.link(&ids[i], &ids[i - 9])?;
            links += 1;
        }
    }
    for round in 0..ROUNDS {
        for (i, id) in ids.iter().enumerate() {
            if round == 10 && i % 7 == 0 {
                threads.interrupt(id, Some("等上游依赖"))?;
                interrupts += 1;
            }
            if round == 12 && i % 7 == 0 {
                threads.resume(id)?;
                resumes += 1;
            }
            let note = if round == ROUNDS - 1 {
                format!("第 {round} 步完成")
            } else {
                format!("第 {round} 步 by chat {}", i % 5)
            };
            threads.advance(id, &note, None, Some(&format!("chat {}", i % 5)))?;
        }
    }
    for (i, id) in ids.iter().enumerate() {
        if i % 13 == 0 {
            threads.archive(id)?;
            archives += 1;
        }
    }
    let flush_start = Instant::now();
    threads.flush()?;
    let final_flush_s = flush_start.elapsed().as_secs_f64();
    let single_s = start.elapsed().as_secs_f64();
    let single_cpu_s = thread_cpu_s() - cpu_start;

    let before = threads.all()?;
    let steps: usize = before.iter().map(|t| t.step_count).sum();
    checks.check(before.len() == THREADS, format!("{} threads", before.len()));
    checks.check(
        steps == THREADS * ROUNDS + interrupts,
        format!("{steps} steps, expected {}", THREADS * ROUNDS + interrupts),
    );
    let archived = before
        .iter()
        .filter(|t| t.status == ThreadStatus::Archived)
        .count();
    checks.check(archived == archives, format!("{archived} archived"));
    let linked = before
        .iter()
        .filter(|t| t.parent_thread_id.is_some())
        .count();
    checks.check(
        linked == THREADS / 10 * 9,
        format!("{linked} threads have a parent"),
    );
    checks.check(
        before
            .iter()
            .all(|t| t.steps.last().is_some_and(|s| s.done)),
        "every thread's last step reads as done (完成)",
    );
    let overview = threads.status(None, false, None)?;
    checks.check(
        overview.count() == THREADS - archives,
        format!("overview lists {} open threads", overview.count()),
    );
    let file = threads.path().to_path_buf();
    drop(threads);
    let journals = std::fs::read_dir(file.parent().context("threads file has a directory")?)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".journal-"))
        .count();
    checks.check(
        journals == 0,
        format!("{sync}: {journals} journal(s) left after a clean close"),
    );

    let t = Instant::now();
    let reopened = open_threads(&config)?;
    let after = reopened.all()?;
    let reopen_s = t.elapsed().as_secs_f64();
    let reopen_equal = before == after;
    checks.check(reopen_equal, "reopen gives identical threads");
    checks.check(
        reopened.status(None, false, None)? == overview,
        "reopen gives the same overview",
    );
    Ok(json!({
        "threads": THREADS,
        "advances": THREADS * ROUNDS,
        "interrupts": interrupts,
        "resumes": resumes,
        "archives": archives,
        "links": links,
        "steps": steps,
        "single_process_s": single_s,
        "single_process_cpu_s": single_cpu_s,
        "final_flush_s": final_flush_s,
        "advances_per_s": (THREADS * ROUNDS) as f64 / single_s,
        "file_bytes": std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0),
        "reopen_s": reopen_s,
        "reopen_equal": reopen_equal,
    }))
}

/// The release `coral` binary, built if needed.
fn coral_binary(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "--package", "coral-mcp"])
        .current_dir(root)
        .status()
        .context("building the coral binary")?;
    if !status.success() {
        bail!("cargo build --release -p coral-mcp failed ({status})");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"));
    let bin = target.join("release/coral");
    if !bin.exists() {
        bail!("built coral-mcp but found no binary at {}", bin.display());
    }
    Ok(bin)
}

fn coral(bin: &Path, config: &Path) -> Command {
    let mut c = Command::new(bin);
    c.arg("--config")
        .arg(config)
        .arg("-q")
        .env_remove("CORAL_DATA_DIR")
        .env_remove("CORAL_CONFIG_PATH");
    c
}

/// Create a thread with the binary; returns the config path and the thread id.
fn shared_thread(bin: &Path, dir: &Path) -> Result<(PathBuf, String)> {
    let config = dir.join("coral_config.json");
    let out = coral(bin, &config)
        .args(["thread", "create", "shared by three processes", "--json"])
        .output()?;
    if !out.status.success() {
        bail!(
            "coral thread create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    let id = v["thread"]["thread_id"]
        .as_str()
        .context("no thread id in the create output")?
        .to_string();
    Ok((config, id))
}

/// Read the thread back (in-process, like any other reader) and check the 90 steps.
fn check_steps(config: &Path, id: &str, checks: &mut Checks, what: &str) -> Result<usize> {
    let loaded = Config::load(config)?;
    let threads = open_threads(&loaded.config)?;
    let t: ThreadView = threads
        .all()?
        .into_iter()
        .find(|t| t.thread_id == id)
        .context("the shared thread is gone")?;
    let n = t.step_count;
    checks.check(
        n == PROCESSES * PER_PROCESS,
        format!("{what}: {n} steps, expected 90"),
    );
    let seqs: Vec<u64> = t.steps.iter().map(|s| s.seq).collect();
    checks.check(
        seqs == (1..=n as u64).collect::<Vec<_>>(),
        format!("{what}: seq is 1..n"),
    );
    for w in 0..PROCESSES {
        let mine: Vec<usize> = t
            .steps
            .iter()
            .filter_map(|s| s.text.strip_prefix(&format!("w{w} ")))
            .filter_map(|k| k.parse().ok())
            .collect();
        checks.check(
            mine == (0..PER_PROCESS).collect::<Vec<_>>(),
            format!("{what}: writer {w}'s steps complete and in order"),
        );
    }
    Ok(n)
}

/// Three long-lived processes × 30 notes on stdin each.
fn multi_process_stdin(bin: &Path, checks: &mut Checks) -> Result<(usize, f64)> {
    let dir = tempfile::tempdir()?;
    let (config, id) = shared_thread(bin, dir.path())?;
    let inputs: Vec<String> = (0..PROCESSES)
        .map(|w| (0..PER_PROCESS).map(|i| format!("w{w} {i}\n")).collect())
        .collect();
    let start = Instant::now();
    let mut children = Vec::new();
    for _ in 0..PROCESSES {
        children.push(
            coral(bin, &config)
                .args(["thread", "advance", &id, "--stdin", "--not-done"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()?,
        );
    }
    for (child, input) in children.iter_mut().zip(&inputs) {
        let mut stdin = child.stdin.take().context("child stdin")?;
        stdin.write_all(input.as_bytes())?;
    }
    for mut c in children {
        let status = c.wait()?;
        checks.check(status.success(), format!("advance --stdin exited {status}"));
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok((
        check_steps(&config, &id, checks, "3 × 30 --stdin")?,
        elapsed,
    ))
}

/// Three concurrent loops of 30 single-advance processes.
fn multi_process_invocations(bin: &Path, checks: &mut Checks) -> Result<(usize, f64)> {
    let dir = tempfile::tempdir()?;
    let (config, id) = shared_thread(bin, dir.path())?;
    let start = Instant::now();
    let failures: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..PROCESSES)
            .map(|w| {
                let (config, id) = (&config, &id);
                scope.spawn(move || {
                    (0..PER_PROCESS)
                        .filter(|i| {
                            !coral(bin, config)
                                .args(["thread", "advance", id, &format!("w{w} {i}")])
                                .stdout(Stdio::null())
                                .status()
                                .is_ok_and(|s| s.success())
                        })
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(1)).sum()
    });
    let elapsed = start.elapsed().as_secs_f64();
    checks.check(failures == 0, format!("{failures} single advances failed"));
    Ok((
        check_steps(&config, &id, checks, "3 × 30 invocations")?,
        elapsed,
    ))
}

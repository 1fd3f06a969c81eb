//! `coral migrate` through the real binary and a real PostgreSQL server (docs/postgres.md,
//! "Migrating"): a data directory with memories of every tier, projects, counters and threads
//! goes into a tenant and back out into a new directory, and `coral export` of the copy is
//! byte for byte the original's; a migration SIGKILLed midway and run again ends with the
//! same export and no duplicates; a tenant or a directory holding other data, an unreachable
//! server and an empty source are refused without writing anything. Needs
//! `CORAL_POSTGRES_URL` (`scripts/pg-test-server.sh start`); without it the tests say so and
//! pass, unless `CORAL_REQUIRE_POSTGRES=1`, where they fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use coral::{Coral, InsertOptions, SearchOptions};
use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

fn url() -> Option<String> {
    match std::env::var("CORAL_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CORAL_REQUIRE_POSTGRES").as_deref() == Ok("1") => {
            panic!("CORAL_REQUIRE_POSTGRES=1 but CORAL_POSTGRES_URL is not set")
        }
        _ => {
            eprintln!("CORAL_POSTGRES_URL is not set: this PostgreSQL test did not run");
            None
        }
    }
}

fn tenant(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("migrate-{name}-{}-{nanos}", std::process::id())
}

/// A local config in `dir` whose governance leaves memories in all three tiers: hot for a
/// day after their last access, then warm, the oldest warm ones beyond 40 cold.
fn local_config(dir: &Path) -> PathBuf {
    let path = dir.join("coral_config.json");
    let config = json!({
        "embedding": {"embedder": "hash"},
        "memory": {"hot_ttl_hours": 24.0, "max_warm_entries": 40, "max_cold_entries": 100000,
                   "capacity_threshold": 100000},
    });
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// A config of the postgres backend for `tenant`.
fn pg_config(dir: &Path, url: &str, tenant: &str) -> PathBuf {
    let path = dir.join("coral_pg_config.json");
    let config = json!({
        "embedding": {"embedder": "hash"},
        "storage": {"backend": "postgres", "postgres_url": url, "postgres_tenant": tenant},
    });
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

fn coral(config: &Path, args: &[&str]) -> Output {
    Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout {}\nstderr {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `coral export` of a config (and data directory), checked to succeed.
fn export(config: &Path, data_dir: Option<&Path>) -> Vec<u8> {
    let mut args: Vec<String> = Vec::new();
    if let Some(d) = data_dir {
        args.push("--data-dir".into());
        args.push(d.display().to_string());
    }
    args.push("export".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = coral(config, &args);
    assert!(out.status.success(), "{}", text(&out));
    out.stdout
}

/// Every thread with its steps, as JSON, by id.
fn threads(config: &Path, data_dir: Option<&Path>) -> Vec<Value> {
    let mut args: Vec<String> = vec!["--json".into()];
    if let Some(d) = data_dir {
        args.push("--data-dir".into());
        args.push(d.display().to_string());
    }
    args.extend(["thread".into(), "status".into(), "--all".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = coral(config, &args);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut all: Vec<Value> = v["threads"].as_array().cloned().unwrap_or_default();
    all.sort_by(|a, b| a["thread_id"].as_str().cmp(&b["thread_id"].as_str()));
    all
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const WORDS: [&str; 16] = [
    "latte", "manual", "deploy", "咖啡", "翻译", "接口", "超时", "weekly", "metric", "项目",
    "review", "发布", "schema", "vector", "tenant", "quote\"d",
];

/// `n` memories with distinct words, created over the last 60 days, some with projects and
/// importance, a few searched (counters), and two threads with steps; returns the source's
/// data directory.
fn fill(config: &Path, n: usize, seed: u64) -> PathBuf {
    let c = Coral::open(config).unwrap();
    let mut rng = Rng(seed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for i in 0..n {
        let mut words: Vec<String> = (0..10).map(|_| format!("w{}", rng.next() % 5000)).collect();
        words.push(WORDS[(rng.next() % 16) as usize].to_string());
        let content = format!("note {i}: {}", words.join(" "));
        let project = match i % 5 {
            0 => Some("alpha".to_string()),
            1 => Some("beta".to_string()),
            _ => None,
        };
        c.insert_with(
            &content,
            InsertOptions {
                importance: (i % 4) as f64 / 4.0,
                project,
                timestamp: Some(now - (n - i) as f64 * 60.0 * 60.0 * 24.0 * 60.0 / n as f64),
                now: None,
            },
        )
        .unwrap();
    }
    for q in ["latte deploy", "咖啡 翻译", "weekly metric"] {
        c.search_with(q, SearchOptions::default()).unwrap();
    }
    let t = c
        .thread_create(
            "migrate the memory",
            Some("there and back"),
            None,
            Some("test"),
        )
        .unwrap();
    c.thread_advance(&t.thread_id, "copied the memories", None, Some("a"))
        .unwrap();
    c.thread_advance(&t.thread_id, "verified, done", Some(true), Some("b"))
        .unwrap();
    let child = c.thread_create("child thread", None, None, None).unwrap();
    c.thread_link(&child.thread_id, &t.thread_id).unwrap();
    c.thread_interrupt(&child.thread_id, Some("paused"))
        .unwrap();
    c.thread_archive(&child.thread_id).unwrap();
    // Two timeline entries, which stay behind (the database has no timeline yet).
    let timeline = c.timeline().unwrap();
    let ns = coral::timeline::Namespace::new("u1", "c1");
    timeline
        .record_user_turn(&ns, "where were we?", now)
        .unwrap();
    timeline
        .record_assistant_turn(&ns, "at the migration", now + 1.0)
        .unwrap();
    drop(timeline);
    let dir = c.config().store_paths().dir;
    c.close().unwrap();
    dir
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

#[test]
fn there_and_back_gives_the_same_export() {
    let Some(url) = url() else { return };
    let tenant = tenant("roundtrip");
    let work = tempfile::tempdir().unwrap();
    let config = local_config(work.path());
    fill(&config, 300, 7);
    let before = export(&config, None);
    let lines: Vec<Value> = before
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    // The source has every tier, projects, counters and importance to carry.
    for tier in ["hot", "warm", "cold"] {
        assert!(lines.iter().any(|m| m["tier"] == tier), "no {tier} memory");
    }
    assert!(lines.iter().any(|m| m["access_count"].as_u64() > Some(0)));
    assert!(lines.iter().any(|m| m["project"] == "alpha"));
    let threads_before = threads(&config, None);
    assert_eq!(threads_before.len(), 2);

    let out = coral(
        &config,
        &[
            "--json", "migrate", "--to", "postgres", &url, "--tenant", &tenant, "--batch", "64",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = report(&out);
    assert_eq!(r["memories"]["found"], 300, "{r}");
    assert_eq!(r["memories"]["copied"], 300, "{r}");
    assert_eq!(r["vectors_copied"], 300, "{r}");
    assert_eq!(r["threads"]["copied"], 2, "{r}");
    assert_eq!(r["steps_copied"], 3, "{r}");
    assert_eq!(r["verification"]["ok"], true, "{r}");
    assert_eq!(
        r["verification"]["searches"].as_array().map(Vec::len),
        Some(5)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("coral: migrate: memories 300/300"),
        "{stderr}"
    );

    // The tenant itself exports the same records.
    let pg = pg_config(work.path(), &url, &tenant);
    assert_eq!(
        String::from_utf8_lossy(&export(&pg, None)),
        String::from_utf8_lossy(&before)
    );

    // Cold memories stay out of a search that leaves cold out, through the vector side too
    // (each vector carries its memory's tier).
    let cold_out = work.path().join("coral_pg_no_cold.json");
    let no_cold = json!({
        "embedding": {"embedder": "hash"},
        "storage": {"backend": "postgres", "postgres_url": &url, "postgres_tenant": &tenant},
        "retrieval": {"include_cold": false, "hybrid": {"hash_vector": 1.0}},
    });
    std::fs::write(&cold_out, no_cold.to_string()).unwrap();
    {
        let c = Coral::open(&cold_out).unwrap();
        let cold: Vec<&Value> = lines
            .iter()
            .filter(|m| m["tier"] == "cold")
            .take(5)
            .collect();
        assert!(!cold.is_empty());
        for m in cold {
            let hits = c
                .search_uncounted(m["content"].as_str().unwrap(), SearchOptions::default())
                .unwrap();
            assert!(!hits.is_empty());
            assert!(
                hits.iter().all(|h| h.tier != coral::Tier::Cold),
                "a cold memory found: {:?}",
                hits.iter()
                    .map(|h| (&h.item.item_id, h.tier))
                    .collect::<Vec<_>>()
            );
        }
    }

    // Out again into a new directory: the same export, byte for byte, and the same threads.
    let back = work.path().join("back");
    let out = coral(
        &config,
        &[
            "--json",
            "migrate",
            "--to",
            "dir",
            back.to_str().unwrap(),
            "--url",
            &url,
            "--tenant",
            &tenant,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = report(&out);
    assert_eq!(r["memories"]["copied"], 300, "{r}");
    assert_eq!(r["vectors_copied"], 300, "{r}");
    assert_eq!(r["threads"]["copied"], 2, "{r}");
    assert_eq!(r["verification"]["ok"], true, "{r}");
    assert!(back.join("coral_warm.json").exists());
    assert_eq!(
        String::from_utf8_lossy(&export(&config, Some(&back))),
        String::from_utf8_lossy(&before)
    );
    assert_eq!(threads(&config, Some(&back)), threads_before);
    // And the original directory is unchanged by all of it (the searches were uncounted).
    assert_eq!(export(&config, None), before);

    // Run again: nothing to copy either way, still verified.
    let out = coral(
        &config,
        &[
            "--json", "migrate", "--to", "postgres", &url, "--tenant", &tenant,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = report(&out);
    assert_eq!(r["memories"]["copied"], 0, "{r}");
    assert_eq!(r["memories"]["already_there"], 300, "{r}");
    assert_eq!(r["threads"]["copied"], 0, "{r}");
}

#[test]
fn a_killed_migration_resumes_without_duplicates() {
    let Some(url) = url() else { return };
    let tenant = tenant("killed");
    let work = tempfile::tempdir().unwrap();
    let config = local_config(work.path());
    let total = 3000;
    fill(&config, total, 11);
    let before = export(&config, None);
    let pg = pg_config(work.path(), &url, &tenant);

    kill_after_first_batch(
        &config,
        &[
            "migrate", "--to", "postgres", &url, "--tenant", &tenant, "--batch", "25",
        ],
        total,
    );

    let stats = coral(&pg, &["--json", "stats"]);
    assert!(stats.status.success(), "{}", text(&stats));
    let at_kill = report(&stats)["stats"]["total"].as_u64().unwrap() as usize;
    assert!(
        at_kill > 0 && at_kill < total,
        "{at_kill} memories at the kill"
    );
    // Whole batches only: each is one transaction.
    assert_eq!(at_kill % 25, 0, "{at_kill}");

    let out = coral(
        &config,
        &[
            "--json", "migrate", "--to", "postgres", &url, "--tenant", &tenant,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = report(&out);
    assert_eq!(r["memories"]["already_there"], at_kill, "{r}");
    assert_eq!(r["memories"]["copied"], total - at_kill, "{r}");
    assert_eq!(r["verification"]["ok"], true, "{r}");
    assert_eq!(
        String::from_utf8_lossy(&export(&pg, None)),
        String::from_utf8_lossy(&before)
    );

    // Out again, killed the same way and run again: the same export.
    let back = work.path().join("back");
    let back_arg = back.to_str().unwrap();
    kill_after_first_batch(
        &config,
        &[
            "migrate", "--to", "dir", back_arg, "--url", &url, "--tenant", &tenant, "--batch", "25",
        ],
        total,
    );
    let partial = export(&config, Some(&back));
    let at_kill = partial
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert!(
        at_kill > 0 && at_kill < total,
        "{at_kill} memories at the kill"
    );
    let out = coral(
        &config,
        &[
            "--json", "migrate", "--to", "dir", back_arg, "--url", &url, "--tenant", &tenant,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = report(&out);
    assert_eq!(r["memories"]["already_there"], at_kill, "{r}");
    assert_eq!(r["verification"]["ok"], true, "{r}");
    assert_eq!(
        String::from_utf8_lossy(&export(&config, Some(&back))),
        String::from_utf8_lossy(&before)
    );
}

#[test]
fn targets_holding_other_data_and_unreachable_servers_are_refused() {
    let Some(url) = url() else { return };
    let tenant = tenant("refused");
    let work = tempfile::tempdir().unwrap();
    let config = local_config(work.path());
    fill(&config, 20, 3);
    let pg = pg_config(work.path(), &url, &tenant);

    // A tenant holding a memory the directory does not: refused, nothing written.
    let out = coral(&pg, &["insert", "a memory of the tenant's own"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = coral(
        &config,
        &["migrate", "--to", "postgres", &url, "--tenant", &tenant],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("already holds 1 memories that the source does not")
            && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert_eq!(
        export(&pg, None)
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        1
    );

    // A directory holding memories the tenant does not: refused, unchanged.
    let other = work.path().join("other");
    let out = coral(
        &config,
        &[
            "--data-dir",
            other.to_str().unwrap(),
            "insert",
            "mine alone",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let other_before = export(&config, Some(&other));
    let out = coral(
        &config,
        &[
            "migrate",
            "--to",
            "dir",
            other.to_str().unwrap(),
            "--url",
            &url,
            "--tenant",
            &tenant,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already holds 1 memories"),
        "{}",
        text(&out)
    );
    assert_eq!(export(&config, Some(&other)), other_before);

    // A closed port: a clear error naming it, within the connect timeout.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = format!("postgres://coral@127.0.0.1:{closed}/coral");
    let out = coral(
        &config,
        &["migrate", "--to", "postgres", &dead, "--tenant", &tenant],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("cannot reach postgres at 127.0.0.1:{closed}")),
        "{}",
        text(&out)
    );

    // An empty source, and a tenant with nothing in it.
    let empty = work.path().join("empty");
    let out = coral(
        &config,
        &[
            "--data-dir",
            empty.to_str().unwrap(),
            "migrate",
            "--to",
            "postgres",
            &url,
            "--tenant",
            &tenant,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing to migrate"),
        "{}",
        text(&out)
    );
    let nobody = format!("{tenant}-nobody");
    let out = coral(
        &config,
        &[
            "migrate",
            "--to",
            "dir",
            work.path().join("x").to_str().unwrap(),
            "--url",
            &url,
            "--tenant",
            &nobody,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing to migrate"),
        "{}",
        text(&out)
    );
}

/// Runs `coral args` and SIGKILLs it as soon as its progress says a batch is committed and
/// more are to come.
fn kill_after_first_batch(config: &Path, args: &[&str], total: usize) {
    let mut child = Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = stderr.read_line(&mut line).unwrap();
        assert!(
            n > 0,
            "the migration ended before a batch was reported: {seen}"
        );
        seen.push_str(&line);
        let Some(rest) = line.trim().strip_prefix("coral: migrate: memories ") else {
            continue;
        };
        let done: usize = rest.split('/').next().unwrap().parse().unwrap();
        if done > 0 {
            assert!(done < total, "{seen}");
            break;
        }
    }
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    assert!(killed.success());
    child.wait().unwrap();
}

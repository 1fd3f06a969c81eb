//! Crash safety with real processes: `coral insert --stdin` is killed with SIGKILL at random
//! moments, many times, and every acknowledged memory must be there afterwards.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// xorshift64*: deterministic, seeded, good enough to pick kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: [&str; 12] = [
    "latte", "manual", "deploy", "咖啡", "翻译", "接口", "超时", "weekly", "metric", "项目",
    "review", "发布",
];

fn write_config(dir: &Path) -> std::path::PathBuf {
    let config = dir.join("coral_config.json");
    // A small journal limit makes checkpoints frequent, so kills also land inside them.
    std::fs::write(
        &config,
        r#"{"storage": {"wal_max_bytes": 65536, "sync": "interval"},
            "embedding": {"embedder": "hash"}}"#,
    )
    .unwrap();
    config
}

/// Run one writer, kill it after `kill_after` acknowledgements (or at once when 0), and return
/// the ids it acknowledged.
fn run_and_kill(
    config: &Path,
    round: u64,
    lines: usize,
    kill_after: usize,
    rng: &mut Rng,
) -> Vec<String> {
    let mut child = Command::new(CORAL)
        .args(["-q", "--config"])
        .arg(config)
        .args(["insert", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start coral");
    let mut stdin = child.stdin.take().unwrap();
    let input: String = (0..lines)
        .map(|i| {
            let a = WORDS[rng.below(WORDS.len() as u64) as usize];
            let b = WORDS[rng.below(WORDS.len() as u64) as usize];
            format!("round {round} line {i} {a} {b} 第{i}条记忆\n")
        })
        .collect();
    let feeder = std::thread::spawn(move || {
        // The pipe breaks when the child is killed; that is expected.
        let _ = stdin.write_all(input.as_bytes());
        // Keep stdin open so the child never reaches its clean shutdown.
        std::thread::sleep(Duration::from_secs(30));
    });
    let mut acked = Vec::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    if kill_after == 0 {
        std::thread::sleep(Duration::from_millis(rng.below(30)));
    } else {
        let mut line = String::new();
        while acked.len() < kill_after {
            line.clear();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            let ack: serde_json::Value = serde_json::from_str(&line).expect("ack is JSON");
            acked.push(ack["item_id"].as_str().expect("ack has an id").to_string());
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Acks already written to the pipe before the kill were acknowledged too.
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        if let Ok(ack) = serde_json::from_str::<serde_json::Value>(&line)
            && let Some(id) = ack["item_id"].as_str()
        {
            acked.push(id.to_string());
        }
        line.clear();
    }
    drop(feeder);
    acked
}

fn coral(config: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(CORAL)
        .args(["-q", "--config"])
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "coral {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn exported_ids(config: &Path) -> BTreeSet<String> {
    let out = coral(config, &["export"]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["item_id"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn every_acknowledged_insert_survives_sigkill() {
    let seed = 0x00c0_ffee_u64;
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let mut acked = BTreeSet::new();
    let rounds = 36;
    for round in 0..rounds {
        let kill_after = match rng.below(4) {
            0 => 0,                           // during start-up or the first inserts
            _ => 1 + rng.below(120) as usize, // mid-stream, often inside a checkpoint
        };
        let ids = run_and_kill(&config, round, 150, kill_after, &mut rng);
        acked.extend(ids);
        if round % 12 == 11 {
            let present = exported_ids(&config);
            let lost: Vec<_> = acked.difference(&present).collect();
            assert!(
                lost.is_empty(),
                "seed {seed:#x} round {round}: lost {lost:?}"
            );
        }
    }
    assert!(
        acked.len() > 500,
        "too few acknowledgements to mean anything: {}",
        acked.len()
    );
    let present = exported_ids(&config);
    let lost: Vec<_> = acked.difference(&present).collect();
    assert!(
        lost.is_empty(),
        "seed {seed:#x}: lost {} acknowledged inserts: {lost:?}",
        lost.len()
    );

    eprintln!(
        "insert --stdin kill loop: {rounds} rounds, {} inserts acknowledged, 0 lost",
        acked.len()
    );
    // No damage was ever reported: a kill can only tear the last journal line.
    let stats = coral(&config, &["--json", "stats"]);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["stats"]["repairs"], serde_json::json!([]));
    assert_eq!(
        stats["stats"]["total"].as_u64().unwrap() as usize,
        present.len()
    );
    // Reopening again changes nothing.
    assert_eq!(exported_ids(&config), present);
}

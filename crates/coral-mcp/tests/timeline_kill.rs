//! Crash safety of the timeline's writes over HTTP: a host writes turns through `coral http`
//! (`timeline_begin_turn`, `timeline_record_tool`, `timeline_complete_turn`) as fast as it can,
//! the server is killed with SIGKILL at a random moment, restarted, and the host retries the
//! call that was in flight with the same ids. Every acknowledged entry must be readable with
//! its exact text (none lost), every entry must appear once (none duplicated), the retries must
//! find what the killed server committed, and no damage may ever be reported.

mod sidecar;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use sidecar::{Sidecar, config_in, coral, read_all};

/// xorshift64*: deterministic, seeded kill points.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

const ROUNDS: u64 = 32;
const SCOPE: [&str; 4] = ["--user", "host", "--conversation", "kill-loop"];

fn args(extra: Value) -> Value {
    let mut v = json!({"user_id": "host", "conversation_id": "kill-loop"});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

/// One host call of turn `t` (three per turn), with the entries it writes and their texts.
fn call(t: u64, step: u64) -> (&'static str, Value, Vec<(String, String)>) {
    let turn = format!("turn-{t}");
    match step {
        0 => {
            let text = format!("question {t}: 查一下第{t}个构建的日志");
            (
                "timeline_begin_turn",
                args(json!({"turn_id": turn, "text": text, "source_id": format!("q{t}")})),
                vec![(format!("q{t}"), text)],
            )
        }
        1 => {
            // Long enough to be folded into a reload card when the turn ends.
            let result = format!("build {t} log line\n").repeat(40 + (t % 7) as usize);
            (
                "timeline_record_tool",
                args(
                    json!({"turn_id": turn, "tool_name": "shell", "call_id": format!("call{t}"),
                            "input": {"cmd": format!("cat build-{t}.log")}, "result": result,
                            "call_source_id": format!("c{t}"),
                            "result_source_id": format!("r{t}")}),
                ),
                vec![
                    (
                        format!("c{t}"),
                        json!({"cmd": format!("cat build-{t}.log")}).to_string(),
                    ),
                    (format!("r{t}"), result),
                ],
            )
        }
        _ => {
            let text = format!("answer {t}: 第{t}个构建通过了");
            (
                "timeline_complete_turn",
                args(json!({"turn_id": turn, "final_text": text, "source_id": format!("a{t}")})),
                vec![(format!("a{t}"), text)],
            )
        }
    }
}

#[derive(Default)]
struct Tally {
    calls_acked: u64,
    retried_found: u64,
    retried_refused: u64,
}

/// Retry the call a killed server was answering, with the same ids: it either finds what the
/// server committed or writes it now. Recovery has aborted the turn the dead server began, so
/// a later call of that turn is refused (`turn_closed`) and the host starts the next turn.
/// Returns the next call.
fn retry(
    http: &Sidecar,
    (t, step): (u64, u64),
    tally: &mut Tally,
    acked: &mut BTreeMap<String, String>,
) -> (u64, u64) {
    let (tool, a, entries) = call(t, step);
    let (status, body) = http.try_call(tool, &a).expect("a fresh server answers");
    match status {
        200 => {
            tally.retried_found += 1;
            tally.calls_acked += 1;
            acked.extend(entries);
            // Only a turn this server began (the begin never reached the dead one) goes on.
            if step == 0 && body["result"]["created"] == true {
                return (t, 1);
            }
        }
        400 if body["error"]
            .as_str()
            .unwrap_or("")
            .starts_with("turn_closed:") =>
        {
            tally.retried_refused += 1;
        }
        _ => panic!("retry of {tool} answered {status}: {body}"),
    }
    (t + 1, 0)
}

#[test]
fn every_acknowledged_timeline_write_survives_sigkill() {
    let seed = 0x7173_e11e_u64;
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    // source id -> exact text, for every entry a 200 answer acknowledged.
    let mut acked: BTreeMap<String, String> = BTreeMap::new();
    let mut tally = Tally::default();
    let mut in_flight: Option<(u64, u64)> = None;
    // Every id a call carried, answered or not.
    let mut attempted: BTreeSet<String> = BTreeSet::new();
    let (mut t, mut step) = (0u64, 0u64);
    let started = Instant::now();
    for round in 0..ROUNDS {
        let http = Sidecar::start(&config);
        if let Some(pending) = in_flight.take() {
            (t, step) = retry(&http, pending, &mut tally, &mut acked);
        }
        let pid = http.child.id();
        let delay = match rng.below(5) {
            0 => rng.below(3),       // during the timeline's first open and recovery
            _ => 5 + rng.below(150), // mid-stream
        };
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(delay));
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        });
        loop {
            let (tool, a, entries) = call(t, step);
            attempted.extend(entries.iter().map(|(id, _)| id.clone()));
            match http.try_call(tool, &a) {
                Ok((200, _)) => {
                    tally.calls_acked += 1;
                    acked.extend(entries);
                    (t, step) = if step == 2 { (t + 1, 0) } else { (t, step + 1) };
                }
                Ok((status, body)) => panic!("round {round}: {tool} answered {status}: {body}"),
                Err(_) => {
                    in_flight = Some((t, step));
                    break;
                }
            }
        }
        killer.join().unwrap();
        http.kill();
    }

    // After the last kill: a clean server, the last retry, then every acknowledged entry
    // must be there exactly.
    let http = Sidecar::start(&config);
    if let Some(pending) = in_flight.take() {
        (t, step) = retry(&http, pending, &mut tally, &mut acked);
        // A turn the retry began is finished, so none is left open.
        while step != 0 {
            let (tool, a, entries) = call(t, step);
            attempted.extend(entries.iter().map(|(id, _)| id.clone()));
            http.ok(tool, a);
            tally.calls_acked += 1;
            acked.extend(entries);
            step = (step + 1) % 3;
        }
    }
    let mut lost = Vec::new();
    for (id, text) in &acked {
        let opened = http.ok(
            "open_memory",
            args(json!({"memory_id": id, "view": "content"})),
        );
        if opened["memory"]["content"].as_str() != Some(text.as_str()) {
            lost.push(id.clone());
        }
    }
    let metrics = http.ok("timeline_metrics", args(json!({})));
    http.stop();
    let (read, said) = read_all(&config, &SCOPE);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &read {
        *seen.entry(id.as_str()).or_default() += 1;
    }
    let duplicated: Vec<&&str> = seen
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .collect();
    let missing_from_read: Vec<&String> = acked
        .keys()
        .filter(|id| !seen.contains_key(id.as_str()))
        .collect();
    eprintln!(
        "timeline over HTTP, SIGKILL loop (seed {seed:#x}): {ROUNDS} rounds, {} calls \
         and {} entries acknowledged, {} lost, {} duplicated; in-flight retries: {} found or \
         written, {} refused on an aborted turn; {} entries stored; {:.1} s",
        tally.calls_acked,
        acked.len(),
        lost.len(),
        duplicated.len(),
        tally.retried_found,
        tally.retried_refused,
        read.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(lost.is_empty(), "seed {seed:#x}: lost {lost:?}");
    assert!(
        missing_from_read.is_empty(),
        "not read back: {missing_from_read:?}"
    );
    assert!(duplicated.is_empty(), "duplicated: {duplicated:?}");
    // What was stored beyond the acknowledgements is what cut-off calls committed.
    let strangers: Vec<&String> = read.iter().filter(|id| !attempted.contains(*id)).collect();
    assert!(strangers.is_empty(), "entries nobody wrote: {strangers:?}");
    assert_eq!(metrics["metrics"]["entries"], read.len(), "{metrics}");
    assert_eq!(
        metrics["metrics"]["open_turns"], 0,
        "recovery closed every turn: {metrics}"
    );
    assert!(
        metrics["metrics"]["folded_results"].as_u64().unwrap() > 0,
        "{metrics}"
    );
    assert!(
        acked.len() > 200,
        "too few acknowledgements to mean anything: {}",
        acked.len()
    );
    // Every round ends with a call cut off by the kill, and each was retried.
    assert_eq!(tally.retried_found + tally.retried_refused, ROUNDS);
    // A kill never damages the log: nothing was ever repaired, and the file checks clean.
    assert_eq!(metrics["repairs"], json!([]));
    assert!(!said.contains("repaired"), "{said}");
    let copies = std::fs::read_dir(dir.path().join("memory_data"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with(".corrupt")
        })
        .count();
    assert_eq!(copies, 0);
    let (code, _, err) = coral(
        &config,
        &[
            "timeline",
            "context",
            "--user",
            "host",
            "--conversation",
            "kill-loop",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
}

/// Recovery at open aborts the open turns of processes that are gone, and never the turn of a
/// process it cannot judge: here the opener runs in its own mount namespace where the live
/// owner's `/proc/<pid>/stat` is `/dev/null` (as where `/proc` is masked or restricted), so
/// it cannot tell whether that owner lives. The owner must then count as alive.
#[test]
fn recovery_never_aborts_a_turn_whose_owner_it_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path());
    let begin = |server: &Sidecar, turn: &str| {
        server.ok(
            "timeline_begin_turn",
            args(json!({"turn_id": turn, "text": format!("{turn}: 还在进行中")})),
        );
    };
    // A turn whose process was killed: recovery must abort it ...
    let dead = Sidecar::start(&config);
    begin(&dead, "of-a-dead-process");
    dead.kill();
    // ... and one whose process lives on.
    let live = Sidecar::start(&config);
    begin(&live, "of-a-live-process");
    let pid = live.child.id().to_string();
    // The opener: `coral timeline context` opens the timeline for writing, which recovers.
    let out = std::process::Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            r#"mount --bind /dev/null "/proc/$1/stat" && shift && exec "$@""#,
        ])
        .args(["sh", &pid, sidecar::CORAL, "--config"])
        .arg(&config)
        .args(["-q", "timeline", "context", "--json"])
        .args(SCOPE)
        .output()
        .expect("this test needs unshare (util-linux) and root");
    assert!(
        out.status.success(),
        "the opener failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, body) = live
        .try_call(
            "timeline_complete_turn",
            &args(json!({"turn_id": "of-a-live-process", "final_text": "完成了"})),
        )
        .unwrap();
    assert_eq!(
        code, 200,
        "the live process's turn was aborted under it: {body}"
    );
    // The dead process's turn was aborted by that same open (so recovery did run).
    let (code, body) = live
        .try_call(
            "timeline_complete_turn",
            &args(json!({"turn_id": "of-a-dead-process", "final_text": "too late"})),
        )
        .unwrap();
    assert_eq!(code, 400, "the dead process's turn was still open: {body}");
    assert!(
        body["error"].as_str().unwrap().contains("is aborted"),
        "{body}"
    );
}

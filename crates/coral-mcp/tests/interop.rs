//! Coral against the real original Python Coral (`../shared/upstream/coral-memory-py`, run by
//! python3 with numpy through our `tests/interop/driver.py`), both on one `coral_config.json`
//! in the original's format with hash vectors and the original's ranking: (a) the original
//! writes a `memory_data/` and Coral reads it, (b) Coral writes one and the original reads
//! it, each compared on the same queries, (c) both advance one thread in one
//! `coral_threads.json` from five processes at once, (d) both serve MCP over stdio and answer
//! the same tool calls with the same shapes, (e) one directory goes from Coral to the
//! original and back. Each prints one `interop (x) summary:` line with its figures
//! (docs/interop.md). A missing original or numpy fails the tests.

mod interop {
    pub mod mcp;
    pub mod round_trip;
    pub mod shape;
    pub mod support;
}

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Stdio};
use std::time::Duration;

use interop::support::{
    Holdings, Memory, Workspace, coral_holdings, json_lines, memories, original_holdings, queries,
    shared_config,
};
use serde_json::{Value, json};

/// Memories each writer stores: enough that the original's tier limits (50 hot, 200 warm)
/// put some in every tier, and few enough that every cold item is within its 500-line scan.
const N: usize = 480;

/// A `memory.cold_scan_lines` below the cold memories of both corpora (about 220), so that
/// the window decides which cold memories are searched.
const NARROW_SCAN: usize = 100;

/// How far two implementations' scores for one hit may differ (f32 vectors, clocks a few
/// microseconds apart).
const SCORE_TOLERANCE: f64 = 1e-4;

/// The agreement of two rankings of the same queries.
#[derive(Default)]
struct Agreement {
    queries: usize,
    top1: usize,
    overlap: f64,
    identical: usize,
    max_score_diff: f64,
    differences: Vec<String>,
    /// Each query's top 10 ids: (the original's, Coral's).
    hits: Vec<(Vec<String>, Vec<String>)>,
}

impl Agreement {
    fn agreement_at_1(&self) -> f64 {
        self.top1 as f64 / self.queries as f64
    }

    fn overlap_at_10(&self) -> f64 {
        self.overlap / self.queries as f64
    }

    fn summary(&self) -> String {
        format!(
            "{} queries: top-1 agreement {:.3}, top-10 overlap {:.3}, identical top-10 {}/{}, \
             max score difference {:.2e}",
            self.queries,
            self.agreement_at_1(),
            self.overlap_at_10(),
            self.identical,
            self.queries,
            self.max_score_diff
        )
    }

    fn assert_identical(&self, what: &str) {
        assert!(
            self.identical == self.queries && self.max_score_diff <= SCORE_TOLERANCE,
            "{what}: {}\n{}",
            self.summary(),
            self.differences.join("\n")
        );
    }
}

/// Run `queries` through the original in `theirs` and through Coral in `ours`, Coral scoring
/// at the instant the original did (`search --now`), and compare the top 10s.
fn compare_rankings(theirs: &Workspace, ours: &Workspace, queries: &[String]) -> Agreement {
    let input: String = queries
        .iter()
        .map(|q| json!({"query": q, "top_k": 10}).to_string() + "\n")
        .collect();
    let original = theirs.python_lines(&["search"], &input);
    assert_eq!(original.len(), queries.len());
    let mut a = Agreement::default();
    for (query, o) in queries.iter().zip(&original) {
        let now = o["now"].as_f64().unwrap().to_string();
        let c = ours.coral_json(&["search", "-k", "10", "--now", &now, "--", query]);
        let want: Vec<(&str, f64)> = o["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h["id"].as_str().unwrap(), h["score"].as_f64().unwrap()))
            .collect();
        let got: Vec<(&str, f64)> = c["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["item"]["item_id"].as_str().unwrap(),
                    h["score"].as_f64().unwrap(),
                )
            })
            .collect();
        a.queries += 1;
        if want.first().map(|h| h.0) == got.first().map(|h| h.0) {
            a.top1 += 1;
        }
        let want_ids: BTreeSet<&str> = want.iter().map(|h| h.0).collect();
        let got_ids: BTreeSet<&str> = got.iter().map(|h| h.0).collect();
        let denominator = want.len().max(got.len()).max(1);
        a.overlap += want_ids.intersection(&got_ids).count() as f64 / denominator as f64;
        let same_ids = want.iter().map(|h| h.0).eq(got.iter().map(|h| h.0));
        if same_ids {
            a.identical += 1;
        }
        for (w, g) in want.iter().zip(&got) {
            if w.0 == g.0 {
                a.max_score_diff = a.max_score_diff.max((w.1 - g.1).abs());
            }
        }
        if !same_ids && a.differences.len() < 5 {
            let show = |hits: &[(&str, f64)]| {
                hits.iter()
                    .map(|(id, s)| format!("{id} {s:.5}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            a.differences.push(format!(
                "query {query:?}:\n  original: {}\n  coral:    {}",
                show(&want),
                show(&got)
            ));
        }
        let ids = |hits: &[(&str, f64)]| hits.iter().map(|h| h.0.to_string()).collect();
        a.hits.push((ids(&want), ids(&got)));
    }
    a
}

/// The one line of figures a direction prints: what each side holds and how the rankings
/// agree.
fn summary(label: &str, sides: [(&str, &Holdings); 2], a: &Agreement) {
    eprintln!(
        "interop {label} summary: {} {}; {} {}; {}",
        sides[0].0,
        sides[0].1.describe(),
        sides[1].0,
        sides[1].1.describe(),
        a.summary()
    );
}

/// Both sides hold the same memories, each in the same tier.
fn assert_same_memories(theirs: &Holdings, ours: &Holdings, what: &str) {
    let only_original: Vec<&String> = theirs.ids.keys().filter(|k| !ours.has(k)).collect();
    let only_coral: Vec<&String> = ours.ids.keys().filter(|k| !theirs.has(k)).collect();
    assert!(
        only_original.is_empty() && only_coral.is_empty(),
        "{what}: memories only the original sees: {only_original:?}; only Coral sees: \
         {only_coral:?}"
    );
    assert_eq!(
        theirs.vectors as usize,
        theirs.ids.len(),
        "{what}: the original's vectors"
    );
    assert_eq!(
        ours.vectors as usize,
        ours.ids.len(),
        "{what}: Coral's vectors"
    );
}

/// The original writes `N` memories in a directory with `config`, then Coral reads it: the
/// same memories in the same tiers. Returns Coral's directory, the original's copy of it
/// (searched by the original) before any search, both sides' holdings and the rankings'
/// agreement.
fn original_writes_coral_reads(
    config: &Value,
    label: &str,
) -> (Workspace, Workspace, Holdings, Holdings, Agreement) {
    let ws = Workspace::new(config);
    let corpus = memories(0xC0_2A1A, N);
    let input: String = corpus
        .iter()
        .map(|m: &Memory| {
            json!({"content": m.content, "importance": m.importance, "age_seconds": m.age_seconds,
                   "idle_seconds": m.idle_seconds, "access_count": m.access_count})
            .to_string()
                + "\n"
        })
        .collect();
    let written = ws.python_lines(&["write"], &input).remove(0);
    let before = &written["before_flush"];
    // The premise: the original's own tier rules spread the memories over its tiers.
    assert!(
        before["warm"].as_u64().unwrap() > 0 && before["cold"].as_u64().unwrap() > 0,
        "{written}"
    );
    let theirs = ws.copy();
    let searched = ws.copy();
    let original = original_holdings(&theirs);
    let ours = coral_holdings(&ws);
    let a = compare_rankings(&searched, &ws, &queries(&corpus));
    eprintln!(
        "interop {label}: the original stored {} of {N} ({} merged as near-duplicates; hot {}, \
         warm {}, cold {} before its memory_flush, which persisted {} hot)",
        written["inserted"],
        written["merged"],
        before["hot"],
        before["warm"],
        before["cold"],
        written["hot_persisted"]
    );
    summary(
        label,
        [("the original holds", &original), ("Coral reads", &ours)],
        &a,
    );
    assert_eq!(
        original.ids.len() as u64,
        written["inserted"].as_u64().unwrap(),
        "the original reads back what it wrote"
    );
    assert_same_memories(&original, &ours, label);
    assert_eq!(
        original.ids, ours.ids,
        "{label}: the same tier for each memory"
    );
    (ws, theirs, original, ours, a)
}

#[test]
fn the_original_writes_and_coral_reads_the_same_memories_and_rankings() {
    let (_, _, original, _, a) = original_writes_coral_reads(&shared_config(), "(a)");
    assert!(
        original.count("cold") <= 500,
        "every cold memory within the original's 500-line scan"
    );
    a.assert_identical("(a): the original's directory read by Coral");
}

/// With more cold memories than `memory.cold_scan_lines`, the two search different cold
/// memories of a directory the original wrote: the original the last N lines of its cold file
/// (the order memories went cold), Coral the N newest by creation time (docs/interop.md,
/// "Known limits"). Each side is checked against its own rule, and the agreement is measured.
#[test]
fn a_narrow_cold_scan_on_the_original_directory_searches_the_newest_cold_memories() {
    let mut config = shared_config();
    config["memory"]["cold_scan_lines"] = json!(NARROW_SCAN);
    let label = "(a, cold_scan_lines 100)";
    let (ws, theirs, original, ours, a) = original_writes_coral_reads(&config, label);
    assert!(
        original.count("cold") > NARROW_SCAN,
        "the premise: more cold memories"
    );
    // The original's window: the last lines of its cold file, as it left them.
    let cold_file =
        std::fs::read_to_string(theirs.path().join("memory_data/coral_cold.jsonl")).unwrap();
    let lines: Vec<&str> = cold_file.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail: BTreeSet<String> = lines[lines.len() - NARROW_SCAN..]
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["item_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    // Coral's window: the newest cold memories by creation time.
    let mut cold: Vec<(f64, String)> = json_lines(&ws.coral_out(&["export"], ""))
        .iter()
        .filter(|m| m["tier"] == "cold")
        .map(|m| {
            (
                m["timestamp"].as_f64().unwrap(),
                m["item_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    cold.sort_by(|x, y| y.0.total_cmp(&x.0));
    let newest: BTreeSet<String> = cold.into_iter().take(NARROW_SCAN).map(|c| c.1).collect();
    let shared = tail.intersection(&newest).count();
    let searchable = |holdings: &Holdings, window: &BTreeSet<String>, id: &String| {
        holdings.ids.get(id).is_some_and(|t| t != "cold") || window.contains(id)
    };
    for (i, (theirs_hits, our_hits)) in a.hits.iter().enumerate() {
        for id in theirs_hits {
            assert!(
                searchable(&original, &tail, id),
                "query {i}: the original returned {id}, outside its last {NARROW_SCAN} lines"
            );
        }
        for id in our_hits {
            assert!(
                searchable(&ours, &newest, id),
                "query {i}: Coral returned {id}, outside its {NARROW_SCAN} newest cold memories"
            );
        }
    }
    eprintln!(
        "interop {label} windows: the original's last {NARROW_SCAN} cold lines and Coral's \
         {NARROW_SCAN} newest cold memories share {shared}"
    );
}

/// Coral writes `N` memories with `config` (searching as it goes, so that access counts and
/// last accesses differ), then the original reads a copy: every memory, one vector each, the
/// same top 10s.
fn coral_writes_the_original_reads(config: &Value, label: &str) -> (Holdings, Holdings) {
    let ws = Workspace::new(config);
    let corpus = memories(0xB0_0C0A, N);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // Coral's insert takes a creation time but no access history: searches between the
    // inserts give the memories different access counts and last accesses.
    let search_terms = queries(&corpus);
    let mut input = String::new();
    for (i, m) in corpus.iter().enumerate() {
        input += &json!({"content": m.content, "importance": m.importance,
                         "timestamp": now - m.age_seconds})
        .to_string();
        input.push('\n');
        if i % 6 == 5 {
            let q = &search_terms[i % search_terms.len()];
            input += &json!({"op": "search", "query": q, "top_k": 3}).to_string();
            input.push('\n');
        }
    }
    let acks = json_lines(&ws.coral_out(&["insert", "--stdin", "--jsonl"], &input));
    assert!(acks.iter().all(|a| a["ok"] == true), "refused lines");
    let stored = acks.iter().filter(|a| a["inserted"] == true).count();
    ws.coral_out(&["flush"], "");
    let ours = coral_holdings(&ws);
    // The premise: Coral's tier rules put memories in every tier, the hot one included (which
    // the original reads from the warm file).
    for tier in ["hot", "warm", "cold"] {
        assert!(
            ours.count(tier) > 0,
            "{label}: no {tier} memory: {}",
            ours.describe()
        );
    }
    let theirs = ws.copy();
    let original = original_holdings(&theirs);
    let a = compare_rankings(&theirs, &ws, &search_terms);
    eprintln!("interop {label}: Coral stored {stored} of {N}, then `coral flush`");
    summary(
        label,
        [("Coral holds", &ours), ("the original reads", &original)],
        &a,
    );
    assert_same_memories(&original, &ours, label);
    assert_eq!(
        original.count("warm"),
        ours.count("hot") + ours.count("warm"),
        "{label}: the original reads Coral's hot and warm tiers as its warm one"
    );
    assert_eq!(original.count("cold"), ours.count("cold"), "{label}");
    a.assert_identical(&format!("{label}: Coral's directory read by the original"));
    (ours, original)
}

#[test]
fn coral_writes_and_the_original_reads_the_same_memories_and_rankings() {
    coral_writes_the_original_reads(&shared_config(), "(b)");
}

/// Coral writes its cold file oldest first, so the original's last N lines are Coral's N
/// newest cold memories: on a directory Coral wrote, a narrow scan searches the same ones.
#[test]
fn a_narrow_cold_scan_on_a_directory_coral_wrote_searches_the_same_cold_memories() {
    let mut config = shared_config();
    config["memory"]["cold_scan_lines"] = json!(NARROW_SCAN);
    let (ours, _) = coral_writes_the_original_reads(&config, "(b, cold_scan_lines 100)");
    assert!(
        ours.count("cold") > NARROW_SCAN,
        "the premise: more cold memories"
    );
}

#[test]
fn a_directory_goes_from_coral_to_the_original_and_back_whole() {
    interop::round_trip::run();
}

/// A thread's steps as the file holds them: (step_id, text) in file order.
fn steps_in_file(ws: &Workspace, thread_id: &str) -> Vec<(String, String)> {
    let path = ws.path().join("memory_data/coral_threads.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let threads: Vec<&Value> = match &file {
        Value::Array(a) => a.iter().collect(),
        Value::Object(m) => m.values().collect(),
        _ => panic!("{} is neither a list nor a map", path.display()),
    };
    let thread = threads
        .iter()
        .find(|t| t["thread_id"] == thread_id)
        .unwrap_or_else(|| panic!("thread {thread_id} is not in {}", path.display()));
    thread["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap_or("").to_string(),
                s["text"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Acknowledged steps missing from `steps`, and step ids or texts that appear more than once.
fn check_steps(
    acked: &[(String, String)],
    steps: &[(String, String)],
) -> (Vec<String>, Vec<String>) {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, text) in steps {
        *count.entry(id).or_default() += 1;
        *count.entry(text).or_default() += 1;
    }
    let missing = acked
        .iter()
        .filter(|(id, text)| !count.contains_key(id.as_str()) || !count.contains_key(text.as_str()))
        .map(|(id, text)| format!("{text} ({id})"))
        .collect();
    let duplicated = count
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, n)| format!("{k} x{n}"))
        .collect();
    (missing, duplicated)
}

#[test]
fn the_original_and_coral_advance_one_thread_at_once_and_lose_nothing() {
    const CORAL_WRITERS: usize = 3;
    const PYTHON_WRITERS: usize = 2;
    const STEPS: usize = 40;
    let ws = Workspace::new(&shared_config());
    let created = ws.coral_json(&["thread", "create", "shared by both", "--by", "setup"]);
    let id = created["thread"]["thread_id"].as_str().unwrap().to_string();
    // The original's two processes first; once each has written its first step (Python and
    // numpy take a while to start), Coral's three long-lived processes are fed their notes a
    // few milliseconds apart while the original keeps advancing, so all five write the file
    // in between each other.
    let mut pythons: Vec<(Child, BufReader<ChildStdout>)> = (0..PYTHON_WRITERS)
        .map(|w| {
            let mut child = ws
                .python(&[
                    "advance",
                    &id,
                    &STEPS.to_string(),
                    &format!("original-{w}"),
                    "10",
                ])
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            (child, stdout)
        })
        .collect();
    let mut acked: Vec<(String, String)> = Vec::new();
    let python_ack = |line: &str, acked: &mut Vec<(String, String)>| {
        let ack: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("driver.py wrote {line:?}: {e}"));
        acked.push((
            ack["step_id"].as_str().unwrap().to_string(),
            ack["text"].as_str().unwrap().to_string(),
        ));
    };
    for (_, stdout) in &mut pythons {
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        if !first.trim().is_empty() {
            python_ack(&first, &mut acked);
        }
    }
    let first_python_acks = acked.len();
    let mut corals: Vec<Child> = (0..CORAL_WRITERS)
        .map(|w| {
            ws.coral(&[
                "thread",
                "advance",
                &id,
                "--stdin",
                "--not-done",
                "--by",
                &format!("coral-{w}"),
            ])
            .spawn()
            .unwrap()
        })
        .collect();
    let mut inputs: Vec<_> = corals.iter_mut().map(|c| c.stdin.take().unwrap()).collect();
    for i in 0..STEPS {
        for (w, input) in inputs.iter_mut().enumerate() {
            writeln!(input, "coral-{w} step {i}").unwrap();
            input.flush().unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(inputs);
    for (w, c) in corals.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        interop::support::check(&out, &format!("coral thread advance (writer {w})"));
        for (i, ack) in json_lines(&out.stdout).iter().enumerate() {
            assert_eq!(ack["ok"], true, "{ack}");
            acked.push((
                ack["step_id"].as_str().unwrap().to_string(),
                format!("coral-{w} step {i}"),
            ));
        }
    }
    let coral_acks = acked.len() - first_python_acks;
    for (w, (mut child, mut stdout)) in pythons.into_iter().enumerate() {
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(
            status.success(),
            "driver.py advance (writer {w}): {status}\n{stderr}"
        );
        for line in rest.lines().filter(|l| !l.trim().is_empty()) {
            python_ack(line, &mut acked);
        }
    }
    let python_acks = acked.len() - coral_acks;
    let in_file = steps_in_file(&ws, &id);
    let (missing, duplicated) = check_steps(&acked, &in_file);
    // What each implementation reads back from the file.
    let coral_view = ws.coral_json(&["thread", "status", &id]);
    let coral_steps: Vec<(String, String)> = coral_view["thread"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap().to_string(),
                s["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let (coral_missing, coral_duplicated) = check_steps(&acked, &coral_steps);
    let original_view = ws.python_lines(&["thread", &id], "").remove(0);
    let original_steps: Vec<(String, String)> = original_view["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap_or("").to_string(),
                s["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let (original_missing, original_duplicated) = check_steps(&acked, &original_steps);
    // How often the file's step order passes from one implementation to the other: the
    // writes did interleave.
    let switches = in_file
        .windows(2)
        .filter(|p| p[0].1.starts_with("coral-") != p[1].1.starts_with("coral-"))
        .count();
    eprintln!(
        "interop (c) summary: steps acknowledged by Coral {coral_acks} ({CORAL_WRITERS} \
         processes), by the original {python_acks} ({PYTHON_WRITERS} processes); present in the \
         file {}, read by Coral {}, read by the original {}; missing {} / {} / {}; duplicated \
         {} / {} / {}; {switches} switches between Coral's and the original's steps in file \
         order",
        in_file.len(),
        coral_steps.len(),
        original_steps.len(),
        missing.len(),
        coral_missing.len(),
        original_missing.len(),
        duplicated.len(),
        coral_duplicated.len(),
        original_duplicated.len()
    );
    assert_eq!(coral_acks, CORAL_WRITERS * STEPS);
    assert_eq!(python_acks, PYTHON_WRITERS * STEPS);
    for (who, missing, duplicated, steps) in [
        ("the file", &missing, &duplicated, &in_file),
        ("Coral", &coral_missing, &coral_duplicated, &coral_steps),
        (
            "the original",
            &original_missing,
            &original_duplicated,
            &original_steps,
        ),
    ] {
        assert!(
            missing.is_empty() && duplicated.is_empty() && steps.len() == acked.len(),
            "{who}: {} steps for {} acknowledged; missing {missing:?}; duplicated {duplicated:?}",
            steps.len(),
            acked.len()
        );
    }
}

#[test]
fn both_serve_mcp_and_answer_the_original_tools_alike() {
    interop::mcp::compare_live_servers();
}

#[test]
fn thread_errors_answer_ok_false_with_the_original_keys() {
    interop::mcp::compare_thread_errors();
}

//! (e) One directory from Coral to the original and back: Coral writes memories (hot ones,
//! project tags) and threads; the real original opens the directory, inserts, flushes with
//! its `memory_flush` and advances a thread; Coral reopens it and finds every memory of both,
//! its hot marks and projects where the original left the memories in place, and the
//! original's steps; then Coral writes again and the original still finds everything.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::support::{Workspace, json_lines, memories, original_holdings, shared_config};

/// Memories Coral writes first: a third of them younger than a day, so the hot tier holds
/// some, and all within the original's limits (50 hot, 200 warm), so its own tier rules move
/// none of them.
const CORAL_MEMORIES: usize = 60;

/// Memories the original inserts into Coral's directory.
const ORIGINAL_MEMORIES: usize = 20;

/// Projects Coral tags its memories with, in turn (`None`: no project).
const PROJECTS: [Option<&str>; 3] = [Some("alpha"), Some("beta"), None];

/// One memory as `coral export` shows it.
#[derive(Clone, Debug, PartialEq)]
struct Exported {
    tier: String,
    project: Option<String>,
    content: String,
}

fn coral_export(ws: &Workspace) -> BTreeMap<String, Exported> {
    json_lines(&ws.coral_out(&["export"], ""))
        .iter()
        .map(|m| {
            (
                m["item_id"].as_str().unwrap().to_string(),
                Exported {
                    tier: m["tier"].as_str().unwrap().to_string(),
                    project: m["project"].as_str().map(str::to_string),
                    content: m["content"].as_str().unwrap().to_string(),
                },
            )
        })
        .collect()
}

/// A thread's steps as Coral reads them: (step_id, text, by).
fn coral_steps(ws: &Workspace, thread_id: &str) -> Vec<(String, String, String)> {
    let status = ws.coral_json(&["thread", "status", thread_id]);
    status["thread"]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in {status}"))
        .iter()
        .map(|s| {
            let field = |k: &str| s[k].as_str().unwrap_or("").to_string();
            (field("step_id"), field("text"), field("by"))
        })
        .collect()
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

pub fn run() {
    let ws = Workspace::new(&shared_config());

    // Coral writes: memories with projects, two threads, two steps on the first.
    let at = now();
    let input: String = memories(0xE0_7E7E, CORAL_MEMORIES)
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut line = json!({"content": m.content, "importance": m.importance,
                                  "timestamp": at - m.age_seconds});
            if let Some(p) = PROJECTS[i % PROJECTS.len()] {
                line["project"] = json!(p);
            }
            line.to_string() + "\n"
        })
        .collect();
    let acks = json_lines(&ws.coral_out(&["insert", "--stdin", "--jsonl"], &input));
    assert!(
        acks.iter().all(|a| a["ok"] == true),
        "refused lines: {acks:?}"
    );
    let thread_id = |v: Value| v["thread"]["thread_id"].as_str().unwrap().to_string();
    let advanced = thread_id(ws.coral_json(&["thread", "create", "发布 v2.0", "--by", "chatA"]));
    let untouched = thread_id(ws.coral_json(&["thread", "create", "子任务", "--by", "chatA"]));
    let mut coral_step_ids = Vec::new();
    for note in ["向量重建完成", "还需测试后完成"] {
        let ack = ws.coral_json(&["thread", "advance", &advanced, note, "--by", "chatB"]);
        let steps = ack["thread"]["steps"].as_array().unwrap();
        coral_step_ids.push(
            steps.last().unwrap()["step_id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    ws.coral_out(&["flush"], "");
    let before = coral_export(&ws);
    let hot: BTreeSet<&String> = before
        .iter()
        .filter(|(_, m)| m.tier == "hot")
        .map(|(id, _)| id)
        .collect();
    let tagged = before.values().filter(|m| m.project.is_some()).count();
    // The premise: hot memories (which the original reads as warm), warm ones, projects on
    // hot ones.
    assert!(
        !hot.is_empty() && hot.len() < before.len(),
        "hot {} of {}",
        hot.len(),
        before.len()
    );
    assert!(hot.iter().any(|id| before[*id].project.is_some()));

    // The original opens the directory, inserts, flushes, advances the first thread.
    let input: String = memories(0x0D_C0DE, ORIGINAL_MEMORIES)
        .iter()
        .map(|m| json!({"content": m.content, "importance": 0.3}).to_string() + "\n")
        .collect();
    let written = ws.python_lines(&["write"], &input).remove(0);
    let theirs: Vec<String> = written["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(
        !theirs.is_empty(),
        "the original inserted nothing: {written}"
    );
    let their_steps = ws.python_lines(&["advance", &advanced, "3", "original", "0"], "");
    assert_eq!(their_steps.len(), 3);
    // Coral's hot memories the original left in its warm file (the only place Coral's hot
    // marks apply).
    let warm_file: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(ws.path().join("memory_data/coral_warm.json")).unwrap(),
    )
    .unwrap();
    let in_warm: BTreeSet<&str> = warm_file
        .iter()
        .map(|m| m["item_id"].as_str().unwrap())
        .collect();
    let kept_hot: Vec<&String> = hot
        .iter()
        .copied()
        .filter(|id| in_warm.contains(id.as_str()))
        .collect();
    assert!(!kept_hot.is_empty(), "the original moved every hot memory");

    // Coral reopens.
    let after = coral_export(&ws);
    let lost: Vec<&String> = before
        .keys()
        .filter(|id| !after.contains_key(*id))
        .collect();
    let lost_theirs: Vec<&String> = theirs
        .iter()
        .filter(|id| !after.contains_key(*id))
        .collect();
    assert!(
        lost.is_empty() && lost_theirs.is_empty(),
        "Coral lost its own {lost:?} and the original's {lost_theirs:?}"
    );
    assert_eq!(after.len(), before.len() + theirs.len());
    let cooled: Vec<&&String> = kept_hot
        .iter()
        .filter(|id| after[**id].tier != "hot")
        .collect();
    assert!(cooled.is_empty(), "hot marks lost: {cooled:?}");
    let retagged: Vec<(&String, &Option<String>, &Option<String>)> = before
        .iter()
        .filter(|(id, m)| after[*id].project != m.project)
        .map(|(id, m)| (id, &m.project, &after[id].project))
        .collect();
    assert!(retagged.is_empty(), "projects changed: {retagged:?}");
    for id in &theirs {
        assert_eq!(
            (after[id].tier.as_str(), &after[id].project),
            ("warm", &None),
            "the original's {id}: in its warm file, without a project"
        );
    }
    // Its vectors and token bitmaps too: a memory of the original's is found by its text.
    let probe = &theirs[theirs.len() / 2];
    let found = ws.coral_json(&["search", "-k", "1", "--", &after[probe].content]);
    assert_eq!(
        found["hits"][0]["item"]["item_id"],
        probe.as_str(),
        "{found}"
    );
    // The thread: Coral's two steps, then the original's three, in order; the other thread
    // untouched.
    let steps = coral_steps(&ws, &advanced);
    let mut expected: Vec<(String, String, String)> = coral_step_ids
        .iter()
        .zip(["向量重建完成", "还需测试后完成"])
        .map(|(id, text)| (id.clone(), text.to_string(), "chatB".to_string()))
        .collect();
    expected.extend(their_steps.iter().map(|s| {
        (
            s["step_id"].as_str().unwrap().to_string(),
            s["text"].as_str().unwrap().to_string(),
            "original".to_string(),
        )
    }));
    assert_eq!(steps, expected);
    assert!(coral_steps(&ws, &untouched).is_empty());

    // And back once more: Coral writes, the original finds every memory.
    ws.coral_out(
        &["insert", "after the round trip, Coral wrote once more"],
        "",
    );
    ws.coral_out(&["flush"], "");
    let last = ws.copy();
    let original = original_holdings(&last);
    let missing = after.keys().filter(|id| !original.has(id)).count();
    assert_eq!(missing, 0, "the original lost memories");
    assert_eq!(original.ids.len(), after.len() + 1);
    assert_eq!(original.vectors as usize, original.ids.len());

    eprintln!(
        "interop (e) summary: Coral wrote {} memories ({} hot, {tagged} with a project) and 2 \
         threads (2 steps); the original inserted {} ({} merged), flushed and advanced 3 \
         steps, leaving {} of Coral's hot memories in its warm file; Coral reopened with {} of \
         {} memories, {} of {} hot marks and {} of {tagged} projects kept, {} of 5 steps in \
         order; after Coral wrote again the original reads {} of {} memories with {} vectors",
        before.len(),
        hot.len(),
        theirs.len(),
        written["merged"],
        kept_hot.len(),
        after.len(),
        before.len() + theirs.len(),
        kept_hot.len() - cooled.len(),
        kept_hot.len(),
        tagged - retagged.len(),
        steps.len(),
        original.ids.len(),
        after.len() + 1,
        original.vectors
    );
}

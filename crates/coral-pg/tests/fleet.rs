//! Many processes, one database (docs/postgres.md, "Fleet test"): real child processes (this
//! test binary run again with a role) write into one tenant at once.
//!
//! Memories: four writers insert their own memories, near-duplicate variants of shared facts
//! (different ids, the same token set) and delete some of their own; each prints an
//! acknowledgement only after the call returned. One writer is SIGKILLed mid-run. The final
//! state must be exactly the acknowledged inserts minus the acknowledged deletes, one row per
//! shared fact with one access per acknowledged insert of it, give or take the one operation
//! the killed writer had in flight.
//!
//! Threads: three processes advance one thread; every step is there once, numbered 1..=n.
//!
//! `harness = false`: `main` is the parent unless the first argument names a role.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use coral_pg::InsertOutcome;

use common::Memory;

const WRITERS: usize = 4;
const OPS: usize = 60;
/// Acknowledgements of writer 0 after which it is killed.
const KILL_AFTER: usize = 15;
const THREAD_WRITERS: usize = 3;
const STEPS_EACH: usize = 30;

/// One operation of a writer's fixed script.
#[derive(Clone, Debug, PartialEq)]
enum Op {
    /// Insert one of this writer's own texts.
    Own(String),
    /// Insert this writer's variant of shared fact `j`.
    Shared(usize, String),
    /// Delete the own text inserted by operation `i`.
    Delete(usize),
}

fn script(w: usize) -> Vec<Op> {
    (0..OPS)
        .map(|i| {
            if i % 5 == 4 {
                // An earlier own insert (never a shared one, never a delete).
                Op::Delete(if (i - 3) % 3 != 0 { i - 3 } else { i - 2 })
            } else if i % 3 == 0 {
                let j = i % 7;
                // The same words, a different id: a near duplicate of the other writers'.
                let mark = ["", "!", ".", "?"][w % 4];
                Op::Shared(j, format!("shared fact {}{mark}", words(1_000 + j as u64)))
            } else {
                Op::Own(format!("writer {w} notes {}", words((w * OPS + i) as u64)))
            }
        })
        .collect()
}

/// Eight made-up words for `seed`: texts of different seeds share (almost) no token, so only
/// a shared fact's variants are near duplicates of each other.
fn words(seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
    (0..8)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("w{:x}", x % 1_000_000)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn id_of(text: &str) -> String {
    coral_embed::item_id(text)
}

/// A child: runs its script, printing `ack <op> <what> <id>` after each call returns.
fn memory_writer(url: &str, tenant: &str, w: usize) -> Result<(), String> {
    let store = common::store_for(url, tenant);
    let ops = script(w);
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Own(text) | Op::Shared(_, text) => {
                let m = Memory::new(text, 1_000.0 + i as f64);
                let outcome = store
                    .insert(&m.new_memory(), 0.7)
                    .map_err(|e| e.to_string())?;
                let (what, id) = match outcome {
                    InsertOutcome::Inserted(id) => ("ins", id),
                    InsertOutcome::Merged { id, .. } => ("merged", id),
                };
                println!("ack {i} {what} {id}");
                if let Op::Own(text) = op {
                    // Read what was just written, by keywords.
                    let hits = store.search_text(text, 3).map_err(|e| e.to_string())?;
                    if !common::ids(&hits).contains(&id) {
                        return Err(format!("own insert {id} not found by search"));
                    }
                }
            }
            Op::Delete(target) => {
                let Op::Own(text) = &ops[*target] else {
                    return Err("a delete must target an own insert".into());
                };
                let id = id_of(text);
                let gone = store.delete(&[&id]).map_err(|e| e.to_string())?;
                println!("ack {i} del {id} {}", gone.len());
            }
        }
    }
    Ok(())
}

fn thread_writer(url: &str, tenant: &str, thread: &str, w: usize) -> Result<(), String> {
    let store = common::store_for(url, tenant);
    for i in 0..STEPS_EACH {
        store
            .thread_advance(
                thread,
                &format!("p{w} step {i}"),
                Some(false),
                Some(&format!("p{w}")),
                5.0,
            )
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn spawn(args: &[&str]) -> Child {
    Command::new(std::env::current_exe().expect("own path"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn a writer")
}

/// What one group of ids (an own memory, or all variants of a shared fact) must hold.
#[derive(Clone, Debug, Default, PartialEq)]
struct Group {
    present: bool,
    accesses: u64,
}

fn expected(acked: &[Vec<usize>]) -> BTreeMap<String, Group> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for (w, ops) in acked.iter().enumerate() {
        let script = script(w);
        for &i in ops {
            match &script[i] {
                Op::Own(text) => {
                    let g = groups.entry(id_of(text)).or_default();
                    g.present = true;
                    g.accesses += 1;
                }
                Op::Shared(j, _) => {
                    let g = groups.entry(format!("shared-{j}")).or_default();
                    g.present = true;
                    g.accesses += 1;
                }
                Op::Delete(t) => {
                    let Op::Own(text) = &script[*t] else {
                        unreachable!()
                    };
                    groups.entry(id_of(text)).or_default().present = false;
                }
            }
        }
    }
    groups
}

fn memories(url: &str) -> Result<(), String> {
    let tenant = common::tenant("fleet");
    let observer = common::store_for(url, &tenant);
    let mut children: Vec<Child> = (0..WRITERS)
        .map(|w| spawn(&["memory-writer", url, &tenant, &w.to_string()]))
        .collect();
    let (tx, rx) = mpsc::channel::<(usize, usize)>();
    let readers: Vec<_> = children
        .iter_mut()
        .enumerate()
        .map(|(w, c)| {
            let out = c.stdout.take().expect("piped");
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let op = line.split(' ').nth(1).and_then(|n| n.parse().ok());
                    if let Some(op) = op {
                        let _ = tx.send((w, op));
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let mut acked: Vec<Vec<usize>> = vec![Vec::new(); WRITERS];
    let mut killed = false;
    for (w, op) in rx.iter() {
        acked[w].push(op);
        if w == 0 && !killed && acked[0].len() == KILL_AFTER {
            // SIGKILL: no destructor, no rollback by the client.
            children[0].kill().map_err(|e| e.to_string())?;
            killed = true;
        }
    }
    for r in readers {
        let _ = r.join();
    }
    for (w, c) in children.iter_mut().enumerate() {
        let status = c.wait().map_err(|e| e.to_string())?;
        if w > 0 && !status.success() {
            return Err(format!("writer {w} failed: {status}"));
        }
    }
    if !killed || acked[0].len() >= OPS {
        return Err(format!(
            "writer 0 was not killed mid-run ({} acks)",
            acked[0].len()
        ));
    }
    for (w, ops) in acked.iter().enumerate().skip(1) {
        if ops.len() != OPS {
            return Err(format!("writer {w} acknowledged {} of {OPS}", ops.len()));
        }
    }

    // The state in the database, by group.
    let mut all_ids: Vec<String> = Vec::new();
    let mut group_of: HashMap<String, String> = HashMap::new();
    for w in 0..WRITERS {
        for op in script(w) {
            if let Op::Own(text) | Op::Shared(_, text) = &op {
                let id = id_of(text);
                let group = match &op {
                    Op::Shared(j, _) => format!("shared-{j}"),
                    _ => id.clone(),
                };
                group_of.insert(id.clone(), group);
                all_ids.push(id);
            }
        }
    }
    all_ids.sort();
    all_ids.dedup();
    let refs: Vec<&str> = all_ids.iter().map(String::as_str).collect();
    let rows = observer.get(&refs).map_err(|e| e.to_string())?;
    let mut actual: BTreeMap<String, Group> = BTreeMap::new();
    for row in &rows {
        let group = &group_of[&row.item.item_id];
        let g = actual.entry(group.clone()).or_default();
        if g.present {
            return Err(format!(
                "group {group} has two rows: a duplicate was stored"
            ));
        }
        g.present = true;
        g.accesses = row.item.access_count;
    }
    let total = observer.count().map_err(|e| e.to_string())?.total();
    if total != rows.len() as u64 {
        return Err(format!("{total} rows in the tenant, {} known", rows.len()));
    }

    // Exactly the acknowledged state, with or without writer 0's one operation in flight.
    let without = expected(&acked);
    let mut with_in_flight = acked.clone();
    let next = acked[0].iter().max().map_or(0, |m| m + 1);
    with_in_flight[0].push(next);
    let with = expected(&with_in_flight);
    let present = |m: &BTreeMap<String, Group>| -> BTreeMap<String, Group> {
        m.iter()
            .filter(|(_, g)| g.present)
            .map(|(k, g)| (k.clone(), g.clone()))
            .collect()
    };
    let actual = present(&actual);
    if actual != present(&without) && actual != present(&with) {
        return Err(format!(
            "final state differs from the acknowledged one:\n actual {actual:?}\n expected {:?}\n or {:?}",
            present(&without),
            present(&with)
        ));
    }
    println!(
        "fleet memories: {} rows, {} acknowledged operations, writer 0 killed after {}",
        total,
        acked.iter().map(Vec::len).sum::<usize>(),
        acked[0].len()
    );
    Ok(())
}

fn threads(url: &str) -> Result<(), String> {
    let tenant = common::tenant("fleet-threads");
    let store = common::store_for(url, &tenant);
    let thread = store
        .thread_create("three processes, one thread", None, None, None, 1.0)
        .map_err(|e| e.to_string())?;
    let mut children: Vec<Child> = (0..THREAD_WRITERS)
        .map(|w| {
            spawn(&[
                "thread-writer",
                url,
                &tenant,
                &thread.thread_id,
                &w.to_string(),
            ])
        })
        .collect();
    for (w, c) in children.iter_mut().enumerate() {
        let status = c.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("thread writer {w} failed: {status}"));
        }
    }
    let v = store
        .thread_status(&thread.thread_id)
        .map_err(|e| e.to_string())?;
    let want = THREAD_WRITERS * STEPS_EACH;
    let seqs: Vec<u64> = v.steps.iter().map(|s| s.seq).collect();
    if v.step_count != want || seqs != (1..=want as u64).collect::<Vec<_>>() {
        return Err(format!(
            "{} steps, numbered {seqs:?}; want 1..={want}",
            v.step_count
        ));
    }
    let notes: HashSet<&str> = v.steps.iter().map(|s| &*s.text).collect();
    for w in 0..THREAD_WRITERS {
        for i in 0..STEPS_EACH {
            if !notes.contains(format!("p{w} step {i}").as_str()) {
                return Err(format!("step p{w} {i} is missing"));
            }
        }
    }
    println!("fleet threads: {want} steps from {THREAD_WRITERS} processes, each once");
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let role = args.get(1).map(String::as_str);
    let result = match role {
        Some("memory-writer") => memory_writer(&args[2], &args[3], args[4].parse().unwrap_or(0)),
        Some("thread-writer") => {
            thread_writer(&args[2], &args[3], &args[4], args[5].parse().unwrap_or(0))
        }
        _ => {
            let Some(url) = common::url() else {
                println!("fleet: 0 passed, 0 failed");
                return;
            };
            let mut failed = 0;
            for (name, run) in [
                ("memories", memories as fn(&str) -> Result<(), String>),
                ("threads", threads),
            ] {
                if let Err(e) = run(&url) {
                    eprintln!("fleet {name} FAILED: {e}");
                    failed += 1;
                }
            }
            println!("fleet: {} passed, {failed} failed", 2 - failed);
            if failed > 0 {
                std::process::exit(1);
            }
            return;
        }
    };
    if let Err(e) = result {
        eprintln!("writer failed: {e}");
        std::process::exit(1);
    }
}

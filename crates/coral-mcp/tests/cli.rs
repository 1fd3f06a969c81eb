//! The `coral` binary end to end: every command, its output, exit codes and errors.

use coral_mcp::tools::CallTool;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("coral_config.json")
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, None)
    }

    fn run_with_stdin(&self, args: &[&str], input: Option<&str>) -> Output {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(self.config())
            .args(args)
            .env_remove("CORAL_DATA_DIR")
            .env_remove("CORAL_CONFIG_PATH")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        if let Some(text) = input {
            stdin.write_all(text.as_bytes()).unwrap();
        }
        drop(stdin);
        child.wait_with_output().unwrap()
    }

    /// Run, expect `code`, return stdout.
    fn ok(&self, args: &[&str]) -> String {
        self.expect(args, 0)
    }

    fn expect(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "coral {args:?}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok(&all)).unwrap()
    }
}

fn data(env: &Env) -> &Path {
    env.dir.path()
}

#[test]
fn insert_search_get_mark_delete_round_trip() {
    let env = Env::new();
    let first = env.json(&["insert", "用户喜欢喝冰镇拿铁咖啡", "--importance", "0.8"]);
    assert_eq!(first["inserted"], true);
    let id = first["item_id"].as_str().unwrap().to_string();
    assert_eq!(id, "3fc954c05432b266");
    let dup = env.json(&["insert", "用户喜欢喝冰镇拿铁咖啡！"]);
    assert_eq!(dup["inserted"], false);
    assert_eq!(dup["item_id"], id.as_str());
    env.ok(&[
        "insert",
        "Translate product manuals in a formal register",
        "--project",
        "docs",
    ]);

    // Only the memory that matches comes back (the default mode ranks by evidence).
    let found = env.json(&["search", "拿铁", "-k", "2"]);
    assert_eq!(found["count"], 1);
    assert_eq!(found["hits"][0]["item"]["item_id"], id.as_str());
    let scores = &found["hits"][0]["scores"];
    assert!(scores["jaccard"].as_f64().unwrap() > 0.0);
    assert!(scores["vector"].as_f64().unwrap() > 0.0);

    let human = env.ok(&["search", "product manuals"]);
    assert!(human.contains("Translate product manuals"), "{human}");

    let got = env.json(&["get", &id]);
    // insert 1 + merge 1 + one search hit (the second search does not match it)
    assert_eq!(got["access_count"], 3);
    assert_eq!(got["tier"], "hot");

    let marked = env.json(&["mark", &id, "--importance", "0.2"]);
    assert_eq!(marked["importance"], 0.2);
    assert_eq!(env.json(&["get", &id])["importance"], 0.2);

    assert_eq!(env.json(&["delete", &id])["ok"], true);
    env.expect(&["get", &id], 1);
    env.expect(&["delete", &id], 1);

    let exported = env.ok(&["export"]);
    let lines: Vec<serde_json::Value> = exported
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["project"], "docs");

    let stats = env.json(&["stats"]);
    assert_eq!(stats["stats"]["total"], 1);
    assert_eq!(stats["stats"]["embedder"], "hash");
    assert!(stats["disk_usage"]["total_bytes"].as_u64().unwrap() > 0);
    assert_eq!(env.json(&["flush"])["flushed"], true);
}

#[test]
fn usage_errors_exit_2_and_runtime_errors_exit_1() {
    let env = Env::new();
    for args in [
        vec!["insert", "   "],
        vec!["insert", "x", "--importance", "1.5"],
        vec!["insert", "x", "--importance", "NaN"],
        vec!["insert"],
        vec!["search", "q", "-k", "0"],
        vec!["insert", "x", "--at", "yesterday"],
        vec!["frobnicate"],
    ] {
        let out = env.run(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty());
    }
    env.expect(&["mark", "0000000000000000"], 1);
    // Nothing was stored by the failures.
    assert_eq!(env.json(&["stats"])["stats"]["total"], 0);

    std::fs::write(
        env.config(),
        r#"{"memory": {"capacity_threshold": "many"}}"#,
    )
    .unwrap();
    let out = env.run(&["stats"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("memory.capacity_threshold") && err.contains("many"),
        "{err}"
    );
}

/// A client pairs the n-th ack with the n-th line: blank lines are answered too (as errors,
/// nothing stored), in both plain and JSONL mode.
#[test]
fn every_stdin_line_gets_exactly_one_ack_blank_ones_included() {
    let env = Env::new();
    for mode in [
        &["insert", "--stdin"][..],
        &["insert", "--stdin", "--jsonl"],
    ] {
        let jsonl = mode.len() == 3;
        let line = |text: &str| {
            if jsonl {
                serde_json::json!({ "content": text }).to_string()
            } else {
                text.to_string()
            }
        };
        let (first, fourth) = if jsonl {
            ("周五下午开周会", "the user prefers metric units")
        } else {
            (
                "项目 A 在四月上线",
                "translate manuals in a formal register",
            )
        };
        let input = format!("{}\n\n  \r\n{}\n", line(first), line(fourth));
        let out = env.run_with_stdin(mode, Some(&input));
        assert_eq!(
            out.status.code(),
            Some(1),
            "blank lines count as failed lines"
        );
        let acks: Vec<serde_json::Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(acks.len(), 4, "{acks:?}");
        for (i, ack) in acks.iter().enumerate() {
            if i == 1 || i == 2 {
                assert_eq!(ack["ok"], false, "{ack}");
                assert_eq!(ack["line"], i + 1, "{ack}");
                let error = ack["error"].as_str().unwrap();
                assert!(
                    error.contains("blank") && error.contains("nothing was stored"),
                    "{error}"
                );
            } else {
                assert_eq!(ack["ok"], true, "{ack}");
                assert_eq!(ack["inserted"], true, "{ack}");
            }
        }
    }
    let stats = env.json(&["stats"]);
    assert_eq!(
        stats["stats"]["total"], 4,
        "only the non-blank lines were stored"
    );
}

/// Times outside 1970..=9999 are refused on the command line and in JSONL, storing nothing.
#[test]
fn out_of_range_times_are_refused_everywhere() {
    let env = Env::new();
    for at in ["1e20", "-1", "NaN", "1700000000000"] {
        let out = env.run(&["insert", "a memory with a bad time", &format!("--at={at}")]);
        assert_eq!(out.status.code(), Some(2), "--at {at}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(at) && err.contains("9999"), "{err}");
    }
    let out = env.run(&["search", "memory", "--now", "1e20"]);
    assert_eq!(out.status.code(), Some(2));
    let out = env.run_with_stdin(
        &["insert", "--stdin", "--jsonl"],
        Some(concat!(
            r#"{"content": "a far future", "timestamp": 1e300}"#,
            "\n",
            r#"{"content": "in milliseconds", "timestamp": 1700000000000}"#,
            "\n",
            r#"{"content": "a far date", "timestamp": "10000-01-01T00:00:00Z"}"#,
            "\n"
        )),
    );
    assert_eq!(out.status.code(), Some(1));
    let acks: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(acks.len(), 3);
    for ack in &acks {
        assert_eq!(ack["ok"], false, "{ack}");
        assert!(
            ack["error"].as_str().unwrap().contains("timestamp")
                || ack["error"].as_str().unwrap().contains("time"),
            "{ack}"
        );
    }
    let stats = env.json(&["stats"]);
    assert_eq!(stats["stats"]["total"], 0, "nothing was stored");
}

#[test]
fn stdin_acknowledges_each_line_and_jsonl_sets_fields() {
    let env = Env::new();
    let out = env.run_with_stdin(
        &["insert", "--stdin"],
        Some("周五下午开周会\nthe user prefers metric units\n"),
    );
    assert!(out.status.success());
    let acks: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(acks.len(), 2);
    assert!(
        acks.iter()
            .all(|a| a["inserted"] == true && a["ok"] == true)
    );

    let out = env.run_with_stdin(
        &["insert", "--stdin", "--jsonl"],
        Some(concat!(
            r#"{"content": "旧笔记：项目 A 上线", "importance": 0.9, "project": "A", "timestamp": "2026-04-10T09:30:00+08:00"}"#,
            "\n",
            r#"{"content": ""}"#,
            "\n",
            "not json\n",
            r#"{"content": "ok", "timestamp": 1700000000}"#,
            "\n"
        )),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "failed lines make the exit code 1"
    );
    let acks: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(acks.len(), 4);
    assert_eq!(acks[1]["line"], 2);
    assert!(acks[1]["error"].as_str().unwrap().contains("empty"));
    assert_eq!(acks[2]["line"], 3);
    let id = acks[0]["item_id"].as_str().unwrap();
    let item = env.json(&["get", id]);
    assert_eq!(item["timestamp"], 1_775_784_600.0);
    assert_eq!(item["project"], "A");
    assert_eq!(item["importance"], 0.9);
    // Ten days old: the TTL moved it out of the hot tier.
    assert_eq!(item["tier"], "warm");

    // --now scores as of another time: at creation time the recency term is 1.
    let hits = env.json(&[
        "search",
        "项目 上线",
        "--now",
        "2026-04-10T01:30:00Z",
        "-k",
        "1",
    ]);
    assert_eq!(hits["hits"][0]["scores"]["time"], 1.0);
}

#[test]
fn a_second_process_shares_the_directory_while_the_first_runs() {
    let env = Env::new();
    env.ok(&["insert", "seed memory"]);
    let mut holder = Command::new(CORAL)
        .arg("--config")
        .arg(env.config())
        .args(["-q", "insert", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    let mut out = std::io::BufReader::new(holder.stdout.take().unwrap());
    writeln!(stdin, "held memory 持有者写入").unwrap();
    let mut ack = String::new();
    std::io::BufRead::read_line(&mut out, &mut ack).unwrap();
    assert!(ack.contains("item_id"));
    // Another process reads and writes the same directory meanwhile.
    assert_eq!(env.json(&["stats"])["stats"]["total"], 2);
    let other = env.json(&["insert", "written by the second process 第二个进程"]);
    assert_eq!(other["inserted"], true);
    // The first process sees it before its next write: a duplicate of it merges.
    writeln!(stdin, "written by the second process 第二个进程").unwrap();
    ack.clear();
    std::io::BufRead::read_line(&mut out, &mut ack).unwrap();
    let ack: serde_json::Value = serde_json::from_str(&ack).unwrap();
    assert_eq!(ack["inserted"], false);
    assert_eq!(ack["item_id"], other["item_id"]);
    drop(stdin);
    assert!(holder.wait().unwrap().success());
    assert_eq!(env.json(&["stats"])["stats"]["total"], 3);
}

#[test]
fn import_copies_a_python_directory() {
    let env = Env::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/python_dir");
    let source = data(&env).join("python_data");
    std::fs::create_dir(&source).unwrap();
    for f in [
        "coral_warm.json",
        "coral_cold.jsonl",
        "coral_vectors.npy",
        "coral_vector_index.json",
    ] {
        std::fs::copy(fixture.join(f), source.join(f)).unwrap();
    }
    // The original's threads file, in its shape, beside its memories.
    std::fs::write(
        source.join("coral_threads.json"),
        r#"[{"thread_id": "f4e99a3a478cce85", "title": "发布 v2.0", "summary": "升级嵌入模型",
             "status": "active", "parent_thread_id": null, "last_advance_by": "chatB",
             "created_at": 1796112161.666, "updated_at": 1796112161.666,
             "steps": [{"step_id": "fb9da074dcd3", "seq": 1, "text": "向量重建完成",
                        "done": true, "by": "chatB", "at": 1796112161.666}]}]"#,
    )
    .unwrap();
    let before: Vec<u8> = std::fs::read(source.join("coral_cold.jsonl")).unwrap();
    let report = env.json(&["import", source.to_str().unwrap()]);
    assert_eq!(report["imported"], 5);
    assert_eq!(report["threads"]["added"], 1, "{report}");
    assert_eq!(report["threads"]["steps_added"], 1, "{report}");
    let thread = env.json(&["thread", "status", "f4e99a3a478cce85"]);
    assert_eq!(
        thread["thread"]["steps"][0]["text"], "向量重建完成",
        "{thread}"
    );
    assert_eq!(report["skipped_lines"], 1);
    assert_eq!(report["found"]["warm"], 2);
    assert_eq!(report["found"]["cold"], 3);
    // The fixture's vectors are dim 8; the default embedder is 384: all recomputed.
    assert_eq!(report["vectors_recomputed"], 5);
    assert_eq!(
        std::fs::read(source.join("coral_cold.jsonl")).unwrap(),
        before,
        "source untouched"
    );
    let merged = env.json(&["get", "c22c61b6e7c02ed2"]);
    assert_eq!(merged["access_count"], 5);
    assert_eq!(merged["tier"], "cold");
    // Importing again adds nothing.
    let again = env.json(&["import", source.to_str().unwrap()]);
    assert_eq!(again["already_present"], 5);
    assert_eq!(again["threads"]["added"], 0);
    assert_eq!(again["threads"]["unchanged"], 1);
    assert_eq!(again["threads"]["steps_added"], 0);
    env.expect(&["import", data(&env).join("nope").to_str().unwrap()], 2);
}

#[test]
fn config_commands_edit_the_file_without_the_data_lock() {
    let env = Env::new();
    assert_eq!(
        env.ok(&["config", "get", "memory.capacity_threshold"])
            .trim(),
        "10000"
    );
    let set = env.json(&["config", "set", "retrieval.top_k", "8"]);
    assert_eq!(
        (set["old"].clone(), set["new"].clone()),
        (serde_json::json!(5), serde_json::json!(8))
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.config()).unwrap()).unwrap();
    assert_eq!(file["retrieval"]["top_k"], 8);
    let out = env.run(&["config", "set", "paths.warm_cache", "/tmp/elsewhere.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be changed"));
    let out = env.run(&["config", "set", "memory.capacity_threshold", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("whole number"));
    assert_eq!(
        env.json(&["config", "set", "llm.api_key", "sk-secret"])["new"],
        "****"
    );
    assert!(
        !env.ok(&["config", "get"]).contains("sk-secret"),
        "the key is never shown"
    );

    // Works while another process holds the data directory.
    let mut holder = Command::new(CORAL)
        .arg("--config")
        .arg(env.config())
        .args(["-q", "insert", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    writeln!(stdin, "holding the lock").unwrap();
    let mut ack = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut ack,
    )
    .unwrap();
    let reset = env.json(&["config", "reset", "retrieval"]);
    assert_eq!(reset["scope"], "section");
    assert_eq!(reset["changed"], serde_json::json!(["retrieval.top_k"]));
    drop(stdin);
    assert!(holder.wait().unwrap().success());

    let report = env.json(&["report"]);
    assert_eq!(report["day_histogram"].as_array().unwrap().len(), 14);
    assert_eq!(report["stats"]["total"], 1);
    assert!(env.ok(&["report"]).contains("closest to eviction"));
}

#[test]
fn timeline_commands_read_what_a_host_recorded() {
    let env = Env::new();
    // A host records two turns (through the library, as the HTTP sidecar would).
    {
        let coral = coral::Coral::open(env.config()).unwrap();
        let call = |tool: &str, args: serde_json::Value| coral.call_tool(tool, &args).unwrap();
        for (i, (question, answer)) in [
            ("杭州西湖的酒店订好了吗", "订好了湖滨的酒店"),
            ("deploy the billing service", "deployed at 14:05"),
        ]
        .iter()
        .enumerate()
        {
            let ts = 1_775_779_200.0 + i as f64 * 3_600.0; // 2026-04-10 08:00 in Shanghai
            let begun = call(
                "timeline_begin_turn",
                serde_json::json!({"text": question, "timestamp": ts, "source_id": format!("q{i}")}),
            );
            call(
                "timeline_complete_turn",
                serde_json::json!({"turn_id": begun["turn_id"], "final_text": answer,
                                   "timestamp": ts + 60.0}),
            );
        }
        coral.close().unwrap();
    }
    let context = env.ok(&["timeline", "context", "--timezone", "Asia/Shanghai"]);
    assert!(context.starts_with("[记忆 memory]"), "{context}");
    assert!(context.contains("[日期 2026-04-10 周五]") && context.contains("订好了湖滨的酒店"));
    let details = env.json(&["timeline", "context"]);
    assert_eq!(details["raw_units"], 2);
    assert_eq!(details["compaction_due"], false);

    let found: serde_json::Value = serde_json::from_str(&env.ok(&[
        "timeline",
        "retrieve",
        "西湖酒店",
        "--include-visible",
        "--timezone",
        "Asia/Shanghai",
    ]))
    .unwrap();
    assert_eq!(found["status"], "ok");
    assert_eq!(found["hits"][0]["turn"]["entries"][0]["source_id"], "q0");
    assert_eq!(
        found["hits"][0]["time"].as_str().unwrap(),
        "2026-04-10 08:00"
    );

    let opened: serde_json::Value =
        serde_json::from_str(&env.ok(&["timeline", "open", "q1"])).unwrap();
    assert_eq!(opened["memory"]["content"], "deploy the billing service");
    let read: serde_json::Value = serde_json::from_str(&env.ok(&[
        "timeline",
        "read",
        "--date",
        "2026-04-10",
        "--period",
        "上午",
        "--timezone",
        "Asia/Shanghai",
    ]))
    .unwrap();
    assert_eq!(read["units"].as_array().unwrap().len(), 2);
    let browse: serde_json::Value =
        serde_json::from_str(&env.ok(&["timeline", "browse", "--keyword", "西湖"])).unwrap();
    assert_eq!(browse["status"], "empty");

    // A filter the read refuses exits 1 with the status; a missing choice is a usage error;
    // compacting without a model says what to configure.
    let bad = env.expect(&["timeline", "retrieve", "西湖", "--date", "2026-02-30"], 1);
    assert!(bad.contains("invalid_filter"), "{bad}");
    env.expect(&["timeline", "read"], 2);
    let out = env.run(&["timeline", "compact"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("llm_failed") && stderr.contains("llm.base_url"),
        "{stderr}"
    );
}

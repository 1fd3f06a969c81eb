//! Distillation against a real loopback HTTP server standing in for the LLM, and the disk quota.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use coral::{Config, Coral, HashEmbedder, InsertOptions};
use coral_heat::{LlmSettings, OpenAiClient};

const NOW: f64 = 1_775_822_400.0;

/// Serves `answer` as the completion to every request until dropped; counts requests.
struct FakeLlm {
    url: String,
    served: Arc<AtomicUsize>,
}

impl FakeLlm {
    fn start(status: u16, answer: &'static str) -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let served = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&served);
        std::thread::spawn(move || {
            // Bounded: a test never needs more than a few requests.
            for stream in listener.incoming().take(16) {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                counter.fetch_add(1, Ordering::SeqCst);
                let payload = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": answer}}]}).to_string();
                let reply = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
                    payload.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        FakeLlm { url, served }
    }
}

fn open(dir: &std::path::Path, llm_url: &str) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.capacity_threshold = 25;
    config.memory.max_hot_entries = 2;
    config.memory.sim_threshold_hot = 0.97;
    config.llm.base_url = llm_url.into();
    config.llm.api_key = "sk-test".into();
    Coral::open_with(config, Arc::new(HashEmbedder::new(128).unwrap())).unwrap()
}

fn insert(coral: &Coral, text: &str, i: usize) {
    coral
        .insert_with(
            text,
            InsertOptions {
                timestamp: Some(NOW - 3600.0 + i as f64),
                now: Some(NOW - 3600.0 + i as f64),
                importance: 0.2,
                ..InsertOptions::default()
            },
        )
        .unwrap();
}

fn near_duplicates(coral: &Coral) {
    for i in 0..20 {
        insert(
            coral,
            &format!("用户每天上午喝一杯冰镇拿铁咖啡，第 {i} 次提到这个习惯"),
            i,
        );
    }
}

fn fillers(coral: &Coral, n: usize) {
    for i in 0..n {
        insert(
            coral,
            &format!(
                "unrelated fact {i} w{:x} q{:x} 事实{i}",
                i * 7919,
                i * 104_729
            ),
            100 + i,
        );
    }
}

#[test]
fn twenty_near_duplicates_collapse_into_one_summary_with_lineage() {
    let llm = FakeLlm::start(200, "用户每天上午喝冰镇拿铁咖啡");
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), &llm.url);
    near_duplicates(&coral);
    let members: Vec<String> = coral
        .export()
        .unwrap()
        .iter()
        .map(|m| m.item.item_id.clone())
        .collect();
    assert_eq!(members.len(), 20, "no insert-time merges at threshold 0.97");
    fillers(&coral, 16); // 36 > 25 + 10: governance distils before it evicts
    assert_eq!(
        llm.served.load(Ordering::SeqCst),
        1,
        "one cluster, one request"
    );
    let stats = coral.stats();
    assert_eq!(stats.governance.distilled_clusters, 1);
    assert_eq!(stats.governance.distilled_members, 20);
    assert_eq!(stats.total, 17, "20 members -> 1 summary; nothing evicted");
    let summary = coral
        .export()
        .unwrap()
        .into_iter()
        .find(|m| m.item.content == "用户每天上午喝冰镇拿铁咖啡")
        .expect("the summary is a memory");
    assert_eq!(
        summary.item.access_count, 20,
        "the sum of the members' counts"
    );
    assert_eq!(summary.item.importance, 0.2);
    for id in &members {
        assert!(coral.get(id).unwrap().is_none());
        let archived = coral.get_archived(id).unwrap().expect("member archived");
        assert_eq!(archived.extra["archive_reason"], "distilled");
        assert_eq!(archived.extra["summary_id"], summary.item.item_id.as_str());
    }
    // Searchable, and durable across a reopen.
    let hits = coral.search("拿铁 咖啡", 1).unwrap();
    assert_eq!(hits[0].item.item_id, summary.item.item_id);
    drop(coral);
    let again = open(dir.path(), &llm.url);
    assert_eq!(again.stats().total, 17);
}

#[test]
fn a_failing_endpoint_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A port with nothing listening.
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let coral = open(dir.path(), &dead);
    near_duplicates(&coral);
    let before = coral.export().unwrap();
    for client_url in [
        dead.clone(),
        FakeLlm::start(500, "x").url,
        FakeLlm::start(200, "").url,
    ] {
        let settings = LlmSettings::resolve(&client_url, "sk-test", "m", |_| None).unwrap();
        let client = OpenAiClient::new(settings).unwrap();
        assert_eq!(coral.distill_with(&client, NOW).unwrap(), 0);
        assert_eq!(
            coral.export().unwrap(),
            before,
            "{client_url}: nothing changed"
        );
    }
    let g = coral.stats().governance;
    assert_eq!(g.distill_failures, 3);
    assert!(
        !g.last_distill_error.unwrap_or_default().contains("sk-test"),
        "the key never shows"
    );
    // Over capacity with the endpoint down: eviction still keeps the pool bounded.
    fillers(&coral, 16);
    assert_eq!(coral.stats().total, 25);
}

#[test]
fn the_disk_quota_trims_to_the_hard_ratio_and_warns_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        base_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.max_hot_entries = 5;
    config.storage.max_bytes = 120_000;
    let coral = Coral::open_with(config, Arc::new(HashEmbedder::new(64).unwrap())).unwrap();
    let max = 120_000.0;
    let mut removed = 0;
    let mut in_band = 0;
    for i in 0..400 {
        insert(
            &coral,
            &format!(
                "quota memory {i} 配额 {} w{:x}",
                "填充".repeat(20),
                i * 7919
            ),
            i,
        );
        let g = coral.stats().governance;
        let usage = coral.disk_usage().quota_bytes as f64;
        if g.quota_removed > removed {
            // Right after an enforcement: at or below hard_ratio × max_bytes, counted and on disk
            // once checkpointed.
            assert!(
                usage <= 0.85 * max,
                "after trimming: {usage} > {}: {g:?}",
                0.85 * max
            );
            coral.flush().unwrap();
            let real = coral.disk_usage().total_bytes as f64;
            assert!(real <= 0.85 * max, "on disk after trimming: {real}");
            removed = g.quota_removed;
        }
        if removed == 0 && usage >= 0.8 * max {
            in_band += 1;
            assert_eq!(g.disk_warnings, 1, "one warning while in the warn band");
        }
    }
    assert!(
        in_band > 3,
        "several inserts happened inside the warn band ({in_band})"
    );
    assert!(removed > 0);
    coral.flush().unwrap();
    let usage = coral.disk_usage();
    assert!(
        usage.total_bytes <= 120_000,
        "within the budget after a checkpoint: {}",
        usage.total_bytes
    );
    assert!(coral.stats().total < 400);
    // After each enforcement usage was at most hard_ratio × max; it then grows again.
    let hot_and_warm = coral
        .export()
        .unwrap()
        .iter()
        .filter(|m| m.tier != coral::Tier::Cold)
        .count();
    assert!(
        hot_and_warm >= 5,
        "hot and warm are never removed by the quota"
    );
}

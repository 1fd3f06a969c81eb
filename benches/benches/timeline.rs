//! The timeline's targets (docs/timeline.md): `read_timeline` of ±2 turns around an
//! anchor in a 2,000-entry conversation (≤ 2 ms); settling a turn with 10 tool results (≤ 1 ms
//! plus the SQLite commit), measured as `complete_turn` in memory (no commit cost) and on a WAL
//! file with `synchronous = NORMAL` and `FULL`; and `retrieve_for_turn` over 2,000 raw entries
//! and 100 summaries (≤ 5 ms p50), with the hash embedder and with words only, by the default
//! hybrid fusion and by MemCore's RRF (`_rrf`).

use std::hint::black_box;

use coral_embed::{Embedder, HashEmbedder};
use coral_timeline::{
    BeginTurn, CompleteTurn, Durability, LayerSettings, Namespace, Options, ReadRequest,
    ReadStatus, RetrieveRequest, SummaryLlm, TextEmbedder, Timeline, ToolExchange,
};
use criterion::{BatchSize, BenchmarkId, Criterion};
use serde_json::json;

const T0: f64 = 1_775_779_200.0;

/// A tool output of `bytes` bytes.
fn output(i: usize, bytes: usize) -> String {
    let line = format!("line {i}: GET /api/items?page={i} 200 OK beijing 25C\n");
    line.repeat(bytes / line.len() + 1)[..bytes].to_string() // ASCII: any cut is a boundary
}

fn exchange(turn: usize, call: usize, bytes: usize) -> ToolExchange {
    ToolExchange {
        tool_name: "web_search".into(),
        call_id: format!("call_{turn}_{call}"),
        input: json!({"query": format!("q{turn}.{call}")}),
        result: output(turn * 10 + call, bytes),
        ..ToolExchange::default()
    }
}

/// 500 completed turns of 4 entries each (question, call, result, answer): 2,000 entries.
fn conversation(t: &Timeline, ns: &Namespace) -> Vec<String> {
    conversation_with(t, ns, |_| {})
}

/// The same, calling `after(i)` after each turn.
fn conversation_with(t: &Timeline, ns: &Namespace, mut after: impl FnMut(usize)) -> Vec<String> {
    let mut anchors = Vec::new();
    for i in 0..500 {
        let at = T0 + i as f64 * 60.0;
        let turn = t
            .begin_turn(ns, &BeginTurn::user(format!("问题 {i}")), at)
            .expect("begin");
        let refs = t
            .record_tool_exchange(
                ns,
                &turn.turn_id,
                &exchange(i, 0, 300 + (i * 37) % 4000),
                at,
            )
            .expect("record");
        t.complete_turn(
            ns,
            &turn.turn_id,
            &CompleteTurn::answer(format!("答案 {i}")),
            at,
        )
        .expect("complete");
        anchors.push(refs.result.source_id);
        after(i);
    }
    anchors
}

fn bench_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = Timeline::open(dir.path().join("timeline.sqlite3")).expect("open");
    let ns = Namespace::new("bench", "c");
    let anchors = conversation(&t, &ns);
    assert_eq!(t.metrics(&ns, false).expect("metrics").entries, 2_000);
    let request = |anchor: &str| ReadRequest {
        anchor_source_id: Some(anchor.to_string()),
        before_turns: Some(2),
        after_turns: Some(2),
        timezone: Some("Asia/Shanghai".into()),
        ..ReadRequest::default()
    };
    let once = t.read_timeline(&ns, &request(&anchors[250]));
    assert_eq!(once.status, ReadStatus::Ok);
    assert_eq!(once.units.len(), 5);
    assert!(once.units.iter().all(|u| u.entries.len() == 4));
    let mut group = c.benchmark_group("read_timeline");
    group.bench_function("anchor_pm2_of_2000_entries", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 97) % 500;
            black_box(t.read_timeline(&ns, &request(&anchors[i])))
        })
    });
    group.finish();
}

/// Summaries for the benchmark: a title and body made from the transcript's first user line.
struct Digest;

impl SummaryLlm for Digest {
    fn complete(&self, _system: &str, user: &str) -> Result<String, String> {
        let first = user
            .lines()
            .skip_while(|l| !l.ends_with("user:"))
            .nth(1)
            .unwrap_or("问题")
            .trim()
            .to_string();
        Ok(json!({
            "title": format!("关于{first}的讨论"),
            "summary": format!("用户询问了{first}，助手调用 web_search 查询了北京的天气和接口分页。"),
            "hint": "回顾搜索记录",
            "entity_anchors": [first, "web_search"],
            "topic_terms": ["天气", "接口"],
        })
        .to_string())
    }
}

struct Hash(HashEmbedder);

impl TextEmbedder for Hash {
    fn model_id(&self) -> String {
        format!("hash/{}", self.0.dim())
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.0.embed(texts).map_err(|e| e.to_string())
    }
}

fn bench_retrieve(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = Timeline::open(dir.path().join("timeline.sqlite3")).expect("open");
    let ns = Namespace::new("bench", "c");
    // No roll-ups: 100 episodic summaries stay episodic.
    let settings = LayerSettings {
        raw_token_trigger: 600,
        episodic_compact_trigger_count: 1_000,
        ..LayerSettings::default()
    };
    let utc = coral_timeline::parse_zone("UTC").expect("zone");
    conversation_with(&t, &ns, |i| {
        let status = t.layer_status(&ns, &settings).expect("status");
        let summaries = status.compactions;
        if status.compaction_due && summaries < 100 {
            t.compact(&ns, &settings, &Digest, utc, T0 + i as f64 * 60.0)
                .expect("compact");
        }
    });
    let status = t.layer_status(&ns, &settings).expect("status");
    assert_eq!(status.compactions, 100, "{status:?}");
    assert_eq!(t.metrics(&ns, false).expect("metrics").entries, 2_000);
    let embedder = Hash(HashEmbedder::new(384).expect("embedder"));
    let request = |i: usize| RetrieveRequest {
        query: format!("问题 {i} 的搜索结果 page={i}"),
        entity_anchors: vec!["web_search".into()],
        settings: settings.clone(),
        ..RetrieveRequest::default()
    };
    // The first calls compute every vector once (at most MAX_EMBED_PER_CALL a call, saying how
    // many wait); the benchmark measures the calls after them.
    let mut first = t.retrieve_for_turn(&ns, &request(123), Some(&embedder));
    for _ in 0..10 {
        if first.warnings.is_empty() {
            break;
        }
        first = t.retrieve_for_turn(&ns, &request(123), Some(&embedder));
    }
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);
    assert_eq!(first.status, ReadStatus::Ok, "{:?}", first.message);
    assert!(first.candidates >= 1_500, "{}", first.candidates);
    assert!(first.hits.iter().any(|h| h.layer == "raw"));
    let mut group = c.benchmark_group("retrieve_for_turn");
    group.bench_function("2000_raw_100_summaries_hash384", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 97) % 500;
            black_box(t.retrieve_for_turn(&ns, &request(i), Some(&embedder)))
        })
    });
    group.bench_function("2000_raw_100_summaries_hash384_rrf", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 97) % 500;
            let req = RetrieveRequest {
                fusion: coral_timeline::Fusion::Rrf,
                ..request(i)
            };
            black_box(t.retrieve_for_turn(&ns, &req, Some(&embedder)))
        })
    });
    group.bench_function("2000_raw_100_summaries_words_only_rrf", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 97) % 500;
            let req = RetrieveRequest {
                fusion: coral_timeline::Fusion::Rrf,
                ..request(i)
            };
            black_box(t.retrieve_for_turn(&ns, &req, None))
        })
    });
    group.bench_function("2000_raw_100_summaries_words_only", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 97) % 500;
            black_box(t.retrieve_for_turn(&ns, &request(i), None))
        })
    });
    group.finish();
}

fn bench_settle(c: &mut Criterion) {
    let mut group = c.benchmark_group("complete_turn_10_results");
    group.sample_size(50);
    let cases: [(&str, Option<Durability>); 3] = [
        ("memory", None),
        ("wal_normal", Some(Durability::Normal)),
        ("wal_full", Some(Durability::Full)),
    ];
    for (name, durability) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let t = match durability {
            None => Timeline::open_in_memory().expect("open"),
            Some(d) => Timeline::open_with(
                dir.path().join("timeline.sqlite3"),
                Options {
                    durability: d,
                    ..Options::default()
                },
            )
            .expect("open"),
        };
        let ns = Namespace::new("bench", name);
        let mut n = 0usize;
        // Ten results from 1 to 30 KB; all fold.
        let mut open_turn = || {
            n += 1;
            let turn = t
                .begin_turn(&ns, &BeginTurn::user(format!("任务 {n}")), T0)
                .expect("begin");
            for k in 0..10 {
                t.record_tool_exchange(&ns, &turn.turn_id, &exchange(n, k, 1_000 + k * 3_200), T0)
                    .expect("record");
            }
            turn.turn_id
        };
        let first = open_turn();
        let done = t
            .complete_turn(&ns, &first, &CompleteTurn::answer("完成"), T0)
            .expect("complete");
        assert_eq!(done.turn.settlement.expect("settled").folded, 10);
        group.bench_with_input(BenchmarkId::from_parameter(name), &name, |b, _| {
            b.iter_batched(
                &mut open_turn,
                |turn| {
                    black_box(
                        t.complete_turn(&ns, &turn, &CompleteTurn::answer("完成"), T0)
                            .expect("complete"),
                    )
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_read(&mut c);
    bench_retrieve(&mut c);
    bench_settle(&mut c);
    c.final_summary();
}

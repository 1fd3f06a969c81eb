//! The timeline's two targets (SPEC 11 / issue 8): `read_timeline` of ±2 turns around an
//! anchor in a 2,000-entry conversation (≤ 2 ms), and settling a turn with 10 tool results
//! (≤ 1 ms plus the SQLite commit), measured as `complete_turn` in memory (no commit cost) and
//! on a WAL file with `synchronous = NORMAL` and `FULL`.

use std::hint::black_box;

use coral_timeline::{
    BeginTurn, CompleteTurn, Durability, Namespace, Options, ReadRequest, ReadStatus, Timeline,
    ToolExchange,
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
    bench_settle(&mut c);
    c.final_summary();
}

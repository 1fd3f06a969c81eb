//! End-to-end search through `Coral` at 2k, 20k and 200k items (hash embedder, 384 dims).

use std::hint::black_box;
use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions};
use criterion::{BenchmarkId, Criterion};

const WORDS: [&str; 16] = [
    "接口",
    "缓存",
    "令牌",
    "部署",
    "日志",
    "latte",
    "manual",
    "deploy",
    "说明书",
    "蓝牙",
    "火锅",
    "coffee",
    "review",
    "weekly",
    "metric",
    "寿司",
];

/// A memory built from its number: distinct, mixed Chinese and English.
fn text(i: usize) -> String {
    let a = WORDS[i % 16];
    let b = WORDS[(i / 16) % 16];
    let c = WORDS[(i / 256) % 16];
    format!(
        "记忆 {i}：{a} {b} 相关的第 {} 号细节，{c} note {}",
        i * 7919 % 100_003,
        i % 977
    )
}

fn build(n: usize) -> (tempfile::TempDir, Coral) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = Config {
        base_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.capacity_threshold = n + 1_000;
    config.memory.max_cold_entries = n + 1_000;
    config.memory.sim_threshold_hot = 1.0;
    let coral =
        Coral::open_with(config, Arc::new(HashEmbedder::new(384).expect("dim"))).expect("open");
    for i in 0..n {
        let options = InsertOptions {
            timestamp: Some(1.7e9 + i as f64),
            now: Some(1.7e9 + n as f64),
            ..InsertOptions::default()
        };
        coral.insert_with(&text(i), options).expect("insert");
    }
    (dir, coral)
}

fn bench_search(c: &mut Criterion) {
    let mut group = c.benchmark_group("search_top5");
    group.sample_size(30);
    for n in [2_000, 20_000, 200_000] {
        let (_dir, coral) = build(n);
        assert_eq!(coral.stats().total, n, "every generated memory is distinct");
        let hits = coral.search("接口 缓存 细节", 5).expect("search");
        assert_eq!(hits.len(), 5);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                black_box(
                    coral
                        .search(black_box("部署 日志 note"), 5)
                        .expect("search"),
                )
            })
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_search(&mut c);
    c.final_summary();
}

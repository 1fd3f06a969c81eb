//! `report()` and `fuse_check()`.

use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions};

const DAY: f64 = 86_400.0;

fn open(dir: &std::path::Path) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.token_fuse_threshold = 20;
    Coral::open_with(config, Arc::new(HashEmbedder::new(64).unwrap())).unwrap()
}

#[test]
fn histogram_preview_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    // 2026-04-10T12:00:00Z
    let now = 1_775_822_400.0;
    let at = |days_ago: f64, text: &str, importance: f64| {
        coral
            .insert_with(
                text,
                InsertOptions {
                    importance,
                    timestamp: Some(now - days_ago * DAY),
                    now: Some(now),
                    ..InsertOptions::default()
                },
            )
            .unwrap();
    };
    at(0.0, "today one 今天", 0.9);
    at(0.1, "today two 今天第二条", 0.9);
    at(3.0, "three days ago 三天前", 0.5);
    at(13.0, "thirteen days ago 十三天前", 0.5);
    at(20.0, "too old for the histogram 太久了", 0.0);
    let report = coral.report_at(now).unwrap();
    let days: Vec<(&str, usize)> = report
        .day_histogram
        .iter()
        .map(|d| (d.date.as_str(), d.count))
        .collect();
    assert_eq!(days.len(), 14);
    assert_eq!(days[13], ("2026-04-10", 2));
    assert_eq!(days[10], ("2026-04-07", 1));
    assert_eq!(days[0], ("2026-03-28", 1));
    assert_eq!(days.iter().map(|d| d.1).sum::<usize>(), 4);
    // The old, unimportant memory is the first to go.
    assert_eq!(report.eviction_preview.len(), 5);
    assert_eq!(
        report.eviction_preview[0].content,
        "too old for the histogram 太久了"
    );
    let heats: Vec<f64> = report.eviction_preview.iter().map(|c| c.heat).collect();
    assert!(heats.windows(2).all(|w| w[0] <= w[1]), "{heats:?}");
    assert!(report.paths.data_dir.starts_with('/'));
    assert!(report.paths.journal.ends_with("coral_wal.jsonl"));
    assert_eq!(report.stats.total, 5);
}

#[test]
fn fuse_check_sums_token_counts() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    // 38 UTF-8 bytes -> 10 tokens each.
    let text = "abcdefghijklmnopqrstuvwxyz0123456789ab";
    let one = coral.fuse_check([text]);
    assert_eq!((one.tokens, one.threshold, one.blown), (10, 20, false));
    let two = coral.fuse_check([text, text]);
    assert_eq!((two.tokens, two.blown), (20, true));
}

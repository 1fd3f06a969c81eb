//! Projects (docs/configuration.md, "Projects"): affinity boost on search, per-project quota in
//! governance.

use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions, RetrievalMode, SearchOptions};

fn open(dir: &std::path::Path, quota: usize) -> Coral {
    open_in(dir, quota, RetrievalMode::default())
}

fn open_in(dir: &std::path::Path, quota: usize, mode: RetrievalMode) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.project_quota = quota;
    config.retrieval.mode = mode;
    Coral::open_with(config, Arc::new(HashEmbedder::new(256).unwrap())).unwrap()
}

fn insert(coral: &Coral, text: &str, project: Option<&str>) -> String {
    coral
        .insert_with(
            text,
            InsertOptions {
                project: project.map(String::from),
                ..InsertOptions::default()
            },
        )
        .unwrap()
        .id()
        .to_string()
}

/// The original's additive boost, in its weighted mode.
#[test]
fn the_searched_project_and_shared_items_are_boosted() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open_in(dir.path(), 0, RetrievalMode::Weighted);
    let a = insert(&coral, "deploy notes for the release 部署说明", Some("A"));
    let b = insert(&coral, "deploy notes for the launch 部署文档", Some("B"));
    let shared = insert(&coral, "deploy notes always in English 部署规范", None);
    let plain = coral.search("deploy notes 部署", 3).unwrap();
    let with_a = coral
        .search_with(
            "deploy notes 部署",
            SearchOptions {
                top_k: Some(3),
                project: Some("A".into()),
                ..SearchOptions::default()
            },
        )
        .unwrap();
    let score = |hits: &[coral::SearchHit], id: &str| {
        hits.iter().find(|h| h.item.item_id == id).unwrap().score
    };
    assert!((score(&with_a, &a) - score(&plain, &a) - 0.15).abs() < 1e-3);
    assert!((score(&with_a, &shared) - score(&plain, &shared) - 0.15).abs() < 1e-3);
    assert!(
        (score(&with_a, &b) - score(&plain, &b)).abs() < 1e-3,
        "another project is not boosted"
    );
    assert_ne!(with_a[2].item.item_id, a);
    assert_eq!(with_a.last().unwrap().item.item_id, b);
}

#[test]
fn a_project_over_its_quota_loses_its_coolest_items_only() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), 10);
    for i in 0..5 {
        insert(
            &coral,
            &format!("shared preference {i} 偏好 s{:x}", i * 7919),
            None,
        );
        insert(
            &coral,
            &format!("project B fact {i} 事实 b{:x}", i * 104_729),
            Some("B"),
        );
    }
    let mut a_ids = Vec::new();
    for i in 0..20 {
        a_ids.push(insert(
            &coral,
            &format!("project A fact {i} 事实 a{:x}", i * 1_299_709),
            Some("A"),
        ));
    }
    // 20 ≤ 10 + headroom 10: nothing yet.
    let count = |p: Option<&str>| {
        coral
            .export()
            .unwrap()
            .iter()
            .filter(|m| m.item.project.as_deref() == p)
            .count()
    };
    assert_eq!(count(Some("A")), 20);
    coral.mark_important(&a_ids[0], 1.0).unwrap();
    insert(&coral, "project A fact 20 事实 a-last", Some("A"));
    assert_eq!(count(Some("A")), 10, "back to the quota");
    assert_eq!(count(Some("B")), 5);
    assert_eq!(count(None), 5);
    assert!(
        coral.get(&a_ids[0]).unwrap().is_some(),
        "the important item survives"
    );
    let gone = a_ids
        .iter()
        .find(|id| coral.get(id).unwrap().is_none())
        .unwrap();
    let archived = coral.get_archived(gone).unwrap().unwrap();
    assert_eq!(archived.extra["archive_reason"], "project_quota");
}

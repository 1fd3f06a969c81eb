//! `Coral::list`: pages of the stored memories by tier, project, date and text, in a stable
//! order, without counting an access.

use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions, ListOrder, ListQuery};

fn open(dir: &std::path::Path) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.memory.capacity_threshold = 10_000;
    config.memory.max_hot_entries = 10_000;
    Coral::open_with(config, Arc::new(HashEmbedder::new(256).unwrap())).unwrap()
}

const DAY: f64 = 86_400.0;

/// 30 memories one day apart, projects A / B / none in turn, importance rising.
fn fill(coral: &Coral, now: f64) -> Vec<String> {
    (0..30)
        .map(|i| {
            let project = ["A", "B", ""][i % 3];
            coral
                .insert_with(
                    &format!("note{i} w{i}a w{i}b topic{i}"),
                    InsertOptions {
                        importance: i as f64 / 100.0,
                        project: (!project.is_empty()).then(|| project.to_string()),
                        timestamp: Some(now - (30 - i) as f64 * DAY),
                        now: Some(now),
                    },
                )
                .unwrap()
                .id()
                .to_string()
        })
        .collect()
}

fn ids(coral: &Coral, query: &ListQuery) -> Vec<String> {
    coral
        .list(query)
        .unwrap()
        .items
        .into_iter()
        .map(|m| m.item.item_id)
        .collect()
}

#[test]
fn pages_cover_every_match_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    let now = coral::unix_now();
    let inserted = fill(&coral, now);
    let mut seen = Vec::new();
    for offset in (0..30).step_by(7) {
        let page = coral
            .list(&ListQuery {
                offset,
                limit: 7,
                ..ListQuery::default()
            })
            .unwrap();
        assert_eq!((page.total, page.matched, page.offset), (30, 30, offset));
        seen.extend(page.items.into_iter().map(|m| m.item.item_id));
    }
    let past_the_end = coral
        .list(&ListQuery {
            offset: 40,
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!((past_the_end.matched, past_the_end.items.len()), (30, 0));
    let mut newest_first = inserted.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    let oldest = ids(
        &coral,
        &ListQuery {
            order: ListOrder::Oldest,
            limit: 3,
            ..ListQuery::default()
        },
    );
    assert_eq!(oldest, inserted[..3]);
    let important = ids(
        &coral,
        &ListQuery {
            order: ListOrder::Importance,
            limit: 1,
            ..ListQuery::default()
        },
    );
    assert_eq!(important, [inserted[29].clone()]);
    // Listing is not recalling: no access was counted.
    assert_eq!(
        coral.get(&inserted[0]).unwrap().unwrap().item.access_count,
        1
    );
}

#[test]
fn filters_combine_and_projects_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    let now = coral::unix_now();
    let inserted = fill(&coral, now);
    let page = coral
        .list(&ListQuery {
            project: Some("B".into()),
            from: Some(now - 10.5 * DAY),
            limit: 200,
            ..ListQuery::default()
        })
        .unwrap();
    // Days 20..=29 are within 10.5 days; of those, i % 3 == 1 is project B: 22, 25, 28.
    let got: Vec<&str> = page.items.iter().map(|m| m.item.item_id.as_str()).collect();
    assert_eq!(
        got,
        [
            inserted[28].as_str(),
            inserted[25].as_str(),
            inserted[22].as_str()
        ]
    );
    assert_eq!(page.matched, 3);
    assert_eq!(page.projects["A"], 10);
    assert_eq!(page.projects["B"], 10);
    assert_eq!(page.projects[""], 10);
    let none = ids(
        &coral,
        &ListQuery {
            project: Some(String::new()),
            to: Some(now - 27.5 * DAY),
            ..ListQuery::default()
        },
    );
    assert_eq!(none, [inserted[2].clone()]);
    let text = ids(
        &coral,
        &ListQuery {
            contains: Some("TOPIC17".into()),
            ..ListQuery::default()
        },
    );
    assert_eq!(text, [inserted[17].clone()]);
    let hot = coral
        .list(&ListQuery {
            tier: Some(coral::Tier::Cold),
            ..ListQuery::default()
        })
        .unwrap();
    assert_eq!(hot.matched, 0);
}

#[test]
fn bad_queries_are_refused_with_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    for (query, needle) in [
        (
            ListQuery {
                limit: 0,
                ..ListQuery::default()
            },
            "limit 0",
        ),
        (
            ListQuery {
                limit: 201,
                ..ListQuery::default()
            },
            "limit 201",
        ),
        (
            ListQuery {
                from: Some(10.0),
                to: Some(5.0),
                ..ListQuery::default()
            },
            "from 10 is after to 5",
        ),
    ] {
        let e = coral.list(&query).unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
    let e = ListOrder::parse("random").unwrap_err().to_string();
    assert!(e.contains("random") && e.contains("newest"), "{e}");
}

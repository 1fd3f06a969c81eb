//! The default `retrieval.mode = "hybrid"` through the public API, on a real data directory:
//! relevance first, recency / heat / importance bounded, time-shaped queries by their window
//! (docs/ranking.md).

use std::path::Path;
use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions, RetrievalMode, SearchHit, SearchOptions};

const DIM: usize = 256;
/// Wednesday 2026-04-15 10:00 in Shanghai.
const NOW: f64 = 1_776_218_400.0;
const DAY: f64 = 86_400.0;

fn open(dir: &Path, edit: impl FnOnce(&mut Config)) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.timeline.timezone = "Asia/Shanghai".into();
    edit(&mut config);
    assert_eq!(config.retrieval.mode, RetrievalMode::Hybrid, "the default");
    Coral::open_with(config, Arc::new(HashEmbedder::new(DIM).unwrap())).unwrap()
}

fn insert(coral: &Coral, text: &str, at: f64) -> String {
    let stored = coral
        .insert_with(
            text,
            InsertOptions {
                timestamp: Some(at),
                now: Some(at),
                ..InsertOptions::default()
            },
        )
        .unwrap();
    assert!(stored.inserted(), "{text} merged into another memory");
    stored.id().to_string()
}

fn search(coral: &Coral, query: &str) -> Vec<SearchHit> {
    coral
        .search_with(
            query,
            SearchOptions {
                top_k: Some(5),
                now: Some(NOW),
                ..SearchOptions::default()
            },
        )
        .unwrap()
}

fn ids(hits: &[SearchHit]) -> Vec<&str> {
    hits.iter().map(|h| h.item.item_id.as_str()).collect()
}

/// The same two memories in a fresh store with `edit` applied; returns (old, recent, store).
fn lunches(dir: &Path, edit: impl FnOnce(&mut Config)) -> (String, String, Coral) {
    let coral = open(dir, edit);
    // The old one says more about lunch: by words alone it is the better match.
    let old = insert(
        &coral,
        "lunch at the station: sushi, the best lunch in weeks",
        NOW - 30.0 * DAY,
    );
    let recent = insert(&coral, "lunch with the team: ramen", NOW - DAY);
    (old, recent, coral)
}

#[test]
fn a_recency_shaped_query_prefers_the_recent_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (old, recent, coral) = lunches(dir.path(), |_| {});
    for query in [
        "what did I have for lunch yesterday?",
        "lunch this week",
        "my lunch two days ago",
        "lunch recently",
    ] {
        let hits = search(&coral, query);
        assert_eq!(ids(&hits), [recent.as_str(), old.as_str()], "{query}");
    }
    // A query about another time prefers what happened then.
    let hits = search(&coral, "lunch last month");
    assert_eq!(ids(&hits)[0], old, "last month");
    coral.close().unwrap();

    // Without the window (retrieval.hybrid.time = 0) the better words win: the window is what
    // decided, not the bounded recency prior.
    let dir = tempfile::tempdir().unwrap();
    let (old, _, coral) = lunches(dir.path(), |c| c.retrieval.hybrid.time = 0.0);
    assert_eq!(
        ids(&search(&coral, "what did I have for lunch yesterday?"))[0],
        old
    );
}

#[test]
fn chinese_time_words_choose_their_window() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), |_| {});
    // 2026-04-14 15:00 and 2026-04-06 15:00 in Shanghai.
    let yesterday = insert(&coral, "下午开会讨论预算", NOW - DAY + 5.0 * 3600.0);
    let last_week = insert(
        &coral,
        "开会讨论预算和人员安排，预算会议很长",
        NOW - 9.0 * DAY + 5.0 * 3600.0,
    );
    assert_eq!(
        ids(&search(&coral, "昨天下午开会讨论了什么预算"))[0],
        yesterday
    );
    assert_eq!(ids(&search(&coral, "上周开会讨论预算"))[0], last_week);
    // A search's own zone must be an IANA name.
    let err = coral
        .search_with(
            "昨天",
            SearchOptions {
                timezone: Some("Mars/Olympus".into()),
                ..SearchOptions::default()
            },
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("Mars/Olympus"), "{err}");
}

#[test]
fn a_strongly_relevant_old_memory_beats_a_weakly_relevant_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), |_| {});
    let old = insert(
        &coral,
        "the passport is kept in the blue folder in the study, behind the tax papers",
        NOW - 200.0 * DAY,
    );
    let new = insert(&coral, "bought a new blue folder for the study", NOW - 60.0);
    // Everything the priors look at favours the new one: created a minute ago, important,
    // and hot (found by ten searches).
    coral.mark_important(&new, 1.0).unwrap();
    for _ in 0..10 {
        search(&coral, "new blue folder bought");
    }
    let query = "where is the passport kept? the blue folder?";
    let hits = search(&coral, query);
    assert_eq!(ids(&hits), [old.as_str(), new.as_str()]);
    // The priors add at most retrieval.hybrid.prior (0.25): the new memory's lead in them is
    // real but small next to the old one's lead in relevance.
    assert!(hits[0].score - hits[1].score > 0.25, "{hits:#?}");

    // The original's weighted formula ranks the other way: recency is 0.2 of its score.
    drop(coral);
    let mut config = Config {
        base_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.retrieval.mode = RetrievalMode::Weighted;
    let weighted = Coral::open_with(config, Arc::new(HashEmbedder::new(DIM).unwrap())).unwrap();
    assert_eq!(ids(&search(&weighted, query))[0], new);
}

#[test]
fn only_memories_with_evidence_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path(), |_| {});
    let tea = insert(&coral, "the user drinks green tea every morning", NOW - DAY);
    insert(
        &coral,
        "translate product manuals formally",
        NOW - 2.0 * DAY,
    );
    assert_eq!(ids(&search(&coral, "green tea")), [tea.as_str()]);
    assert!(search(&coral, "quantum chromodynamics").is_empty());
    // Hits report their parts: BM25 and the (unweighted) hash cosine.
    let hit = &search(&coral, "green tea")[0];
    assert!(hit.scores.bm25.unwrap() > 0.0 && hit.scores.vector > 0.0);
}

//! Memories on a real PostgreSQL: insert, get, delete and search round trips, the exact-id
//! and near-duplicate merges, refused input that changes nothing, Chinese keyword search, and
//! BM25 scores equal to the local index's.

mod common;

use coral_pg::{InsertOutcome, SearchQuery};
use coral_score::{Bm25Index, Bm25Params, HybridParams, search_query, search_terms};
use coral_store::Tier;

use common::{Memory, ids};

#[test]
fn insert_get_search_delete_round_trip() {
    let Some(store) = common::store("round-trip") else {
        return;
    };
    let texts = [
        "the user prefers iced oat lattes in the morning",
        "deploys go out on tuesdays after the standup",
        "the staging database lives on port 5433",
    ];
    let memories: Vec<Memory> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Memory::in_project(t, 1_700_000_000.0 + i as f64, Some("coral")))
        .collect();
    for m in &memories {
        let outcome = store.insert(&m.new_memory(), 0.7).unwrap();
        assert_eq!(outcome, InsertOutcome::Inserted(m.id().to_string()));
    }
    assert_eq!(store.count().unwrap().hot, 3);
    assert_eq!(store.projects().unwrap(), ["coral"]);

    let got = store.get(&[memories[1].id(), "0000000000000000"]).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].item, memories[1].item,
        "stored and read back unchanged"
    );
    assert_eq!(got[0].tier, Tier::Hot);

    let hits = store.search_text("which port does staging use", 5).unwrap();
    assert_eq!(ids(&hits)[0], memories[2].id(), "{hits:?}");
    assert!(hits[0].bm25 > 0.0 && hits[0].relevance > 0.0);

    // Vectors rank too: the query's own vector finds its memory first.
    let keywords = search_query("lattes", 0.0);
    let query = SearchQuery {
        vector: Some(&memories[0].vector),
        keywords: &keywords,
        question: true,
        params: HybridParams::default(),
        depth: 100,
        project: None,
        ef_search: 100,
        embedder: None,
        window: None,
        cold: coral_pg::ColdFilter::All,
    };
    let hits = store.search(&query, 3).unwrap();
    assert_eq!(ids(&hits)[0], memories[0].id());
    let cosine = hits[0].vector.expect("a vector candidate");
    assert!((cosine - 1.0).abs() < 1e-5, "{cosine}");

    assert_eq!(
        store.delete(&[memories[2].id(), "absent"]).unwrap(),
        [memories[2].id()]
    );
    assert!(store.get(&[memories[2].id()]).unwrap().is_empty());
    assert!(
        !ids(&store.search_text("staging port", 5).unwrap())
            .contains(&memories[2].id().to_string()),
        "a deleted memory is not found"
    );
    assert_eq!(store.count().unwrap().total(), 2);
    assert!(
        store.delete(&[memories[2].id()]).unwrap().is_empty(),
        "deleting twice is a no-op"
    );
}

#[test]
fn the_same_text_and_a_near_duplicate_merge_instead_of_storing_twice() {
    let Some(store) = common::store("merges") else {
        return;
    };
    let first = Memory::new(
        "the build uses cargo nextest with two threads on ci",
        1_000.0,
    );
    store.insert(&first.new_memory(), 0.7).unwrap();
    let again = Memory::new(
        "the build uses cargo nextest with two threads on ci",
        2_000.0,
    );
    assert_eq!(
        store.insert(&again.new_memory(), 0.7).unwrap(),
        InsertOutcome::Merged {
            id: first.id().to_string(),
            similarity: 1.0
        }
    );
    let near = Memory::new(
        "the build uses cargo nextest with two threads on ci!",
        3_000.0,
    );
    match store.insert(&near.new_memory(), 0.7).unwrap() {
        InsertOutcome::Merged { id, similarity } => {
            assert_eq!(id, first.id());
            assert!((0.7..=1.0).contains(&similarity), "{similarity}");
        }
        other => panic!("a near duplicate was stored: {other:?}"),
    }
    let other = Memory::new("lunch is at noon on fridays", 4_000.0);
    assert!(matches!(
        store.insert(&other.new_memory(), 0.7).unwrap(),
        InsertOutcome::Inserted(_)
    ));
    let got = store.get(&[first.id()]).unwrap();
    assert_eq!(got[0].item.access_count, 3, "two merges, one access each");
    assert_eq!(got[0].item.last_access, 3_000.0);
    assert_eq!(store.count().unwrap().total(), 2);
}

#[test]
fn refused_input_names_the_problem_and_changes_nothing() {
    let Some(store) = common::store("refused") else {
        return;
    };
    let mut m = Memory::new("a memory with a bad importance", 1.0);
    m.item.importance = 3.0;
    let e = store.insert(&m.new_memory(), 0.7).unwrap_err().to_string();
    assert!(e.contains("importance 3 outside 0..1"), "{e}");
    let mut m = Memory::new("a memory with a short vector", 1.0);
    m.vector.truncate(3);
    let e = store.insert(&m.new_memory(), 0.7).unwrap_err().to_string();
    assert!(
        e.contains("the vector has 3 dimensions; this store holds 64"),
        "{e}"
    );
    let m = Memory::new("a good memory", 1.0);
    let e = store.insert(&m.new_memory(), 1.5).unwrap_err().to_string();
    assert!(e.contains("threshold 1.5 is outside (0, 1]"), "{e}");
    assert_eq!(store.count().unwrap().total(), 0);
    assert!(store.search_text("memory", 5).unwrap().is_empty());
}

#[test]
fn chinese_memories_are_found_by_their_words() {
    let Some(store) = common::store("cjk") else {
        return;
    };
    let texts = [
        "我最喜欢喝冰美式咖啡",
        "下周三下午去北京出差",
        "女儿的生日是五月十二号",
        "the office closes at six",
    ];
    let ms: Vec<Memory> = texts.iter().map(|t| Memory::new(t, 10.0)).collect();
    for m in &ms {
        store.insert(&m.new_memory(), 0.7).unwrap();
    }
    for (query, want) in [("咖啡", 0), ("北京出差", 1), ("生日", 2), ("女儿", 2)] {
        let hits = store.search_text(query, 3).unwrap();
        assert_eq!(
            ids(&hits).first().map(String::as_str),
            Some(ms[want].id()),
            "{query}: {hits:?}"
        );
    }
    // A bigram that no memory has finds nothing by keywords.
    assert!(store.search_text("上海", 3).unwrap().is_empty());
}

#[test]
fn bm25_scores_equal_the_local_index() {
    let Some(store) = common::store("bm25") else {
        return;
    };
    let texts = [
        "painting landscapes with oil paints on weekends",
        "the user painted a lake and a boat",
        "paints and brushes are in the garage",
        "a weekend hike to the lake",
        "咖啡和茶都喜欢",
        "喜欢在湖边画画",
    ];
    let mut local = Bm25Index::new();
    let ms: Vec<Memory> = texts.iter().map(|t| Memory::new(t, 5.0)).collect();
    for (i, m) in ms.iter().enumerate() {
        store.insert(&m.new_memory(), 0.7).unwrap();
        local.insert(i as u32, search_terms(texts[i]));
    }
    for text in ["paint the lake", "weekend paints", "喜欢画画", "boat"] {
        let q = search_query(text, 0.0);
        let mut want = local.scores(&q, Bm25Params::default());
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let query = SearchQuery {
            vector: None,
            keywords: &q,
            question: true,
            params: HybridParams::default(),
            depth: 100,
            project: None,
            ef_search: 100,
            embedder: None,
            window: None,
            cold: coral_pg::ColdFilter::All,
        };
        let found = store.candidates(&query).unwrap();
        let got: Vec<(String, f64)> = found
            .bm25
            .iter()
            .map(|&(n, s)| (found.items[n as usize].item.item_id.clone(), s))
            .collect();
        assert_eq!(got.len(), want.len(), "{text}");
        for ((id, s), (doc, w)) in got.iter().zip(&want) {
            assert_eq!(id, ms[*doc as usize].id(), "{text}");
            assert!(
                (s - w).abs() <= 1e-12 * w.abs().max(1.0),
                "{text}: {s} vs {w}"
            );
        }
        // The coverage is the local index's too.
        for (&(n, _), (doc, _)) in found.bm25.iter().zip(&want) {
            let c = local.coverage(&q, *doc, true);
            assert!((found.coverage[n as usize] - c).abs() < 1e-12, "{text}");
        }
        assert_eq!(found.bm25_spread.count(), texts.len() as u64);
    }
}

/// The schema reaches the build's version: version 3 turned the token-set index's pending
/// list off (every insert's near-duplicate query read that list whole), version 4 made the
/// postings' key cover what BM25 reads.
#[test]
fn the_schema_is_current_with_the_indexes_searches_need() {
    let Some(store) = common::store("schema") else {
        return;
    };
    assert_eq!(store.schema_version().unwrap(), coral_pg::SCHEMA_VERSION);
    const { assert!(coral_pg::SCHEMA_VERSION >= 4) };
    let url = common::url().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options: String = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .query_one(
                "SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class \
                 WHERE relname = 'coral_items_token_set'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    });
    assert!(options.contains("fastupdate=off"), "{options:?}");
    // Version 3: the postings' key carries what BM25 reads, for index-only scans.
    let key: String = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .query_one(
                "SELECT pg_get_indexdef('coral_postings_pkey'::regclass)",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    });
    assert!(key.contains("INCLUDE (tf, len)"), "{key}");
}

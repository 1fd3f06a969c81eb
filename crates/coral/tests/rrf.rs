//! `retrieval.mode = "rrf"` (docs/configuration.md, "Retrieval modes"): vector, bitmap-Jaccard
//! and BM25 rankings fused by weighted reciprocal rank, through the public API.

use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions, SearchHit, SearchOptions};

const NOW: f64 = 1_775_822_400.0;
const DAY: f64 = 86_400.0;

fn open_with(dir: &std::path::Path, edit: impl FnOnce(&mut Config)) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.retrieval.mode = coral::RetrievalMode::Rrf;
    edit(&mut config);
    Coral::open_with(config, Arc::new(HashEmbedder::new(384).unwrap())).unwrap()
}

fn insert(coral: &Coral, text: &str, age_days: f64, project: Option<&str>) -> String {
    let options = InsertOptions {
        timestamp: Some(NOW - age_days * DAY),
        now: Some(NOW),
        project: project.map(String::from),
        ..InsertOptions::default()
    };
    coral.insert_with(text, options).unwrap().id().to_string()
}

fn search(coral: &Coral, query: &str, k: usize, project: Option<&str>) -> Vec<SearchHit> {
    let options = SearchOptions {
        top_k: Some(k),
        now: Some(NOW),
        project: project.map(String::from),
        ..SearchOptions::default()
    };
    coral.search_with(query, options).unwrap()
}

const MEMORIES: [&str; 8] = [
    "用户喜欢喝冰镇拿铁咖啡,不加糖",
    "用户上周和朋友去爬山看了日出",
    "the user prefers a formal register when translating product manuals",
    "周末常去吃麻辣火锅",
    "the user reviews rust code on Mondays",
    "用户对花生过敏",
    "translate manuals into German and French",
    "最近在学习弹吉他",
];

#[test]
fn ranks_by_fusion_and_reports_every_component() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open_with(dir.path(), |_| {});
    let ids: Vec<String> = MEMORIES
        .iter()
        .enumerate()
        .map(|(i, m)| insert(&coral, m, i as f64, None))
        .collect();

    let hits = search(&coral, "拿铁咖啡", 3, None);
    assert_eq!(hits[0].item.item_id, ids[0]);
    let s = hits[0].scores;
    // Vector and Jaccard are reported although their lists have weight 0 by default.
    assert!(
        s.bm25.unwrap() > 0.0 && s.jaccard > 0.0 && s.vector > 0.0,
        "{s:?}"
    );
    assert!(s.time > 0.0 && s.time <= 1.0);
    // By default only BM25 votes with hash vectors: first place, the largest possible score.
    assert!(
        (hits[0].score - 1.0 / 61.0).abs() < 1e-12,
        "{}",
        hits[0].score
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // Hits count for heat as in weighted mode.
    assert_eq!(coral.get(&ids[0]).unwrap().unwrap().item.access_count, 2);

    let manuals = search(&coral, "translating manuals", 2, None);
    let found: Vec<&str> = manuals.iter().map(|h| h.item.item_id.as_str()).collect();
    assert_eq!(found, [ids[2].as_str(), ids[6].as_str()]);

    // Nothing in common with any memory: no list votes, nothing is returned.
    assert!(search(&coral, "zzzz qqqq", 5, None).is_empty());

    // The JSON of a hit carries bm25 only in rrf mode.
    let json = serde_json::to_value(&hits[0]).unwrap();
    assert!(json["scores"]["bm25"].as_f64().unwrap() > 0.0);
    let mut weighted = coral.config().as_ref().clone();
    weighted.retrieval.mode = coral::RetrievalMode::Weighted;
    coral.set_config(weighted).unwrap();
    let hit = &search(&coral, "拿铁咖啡", 1, None)[0];
    assert_eq!(hit.item.item_id, ids[0]);
    assert_eq!(hit.scores.bm25, None);
    assert!(
        serde_json::to_value(hit).unwrap()["scores"]
            .get("bm25")
            .is_none()
    );
}

#[test]
fn honours_the_cold_filter_and_the_project_boost_and_large_top_k() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open_with(dir.path(), |c| {
        c.memory.max_hot_entries = 2;
        c.memory.max_warm_entries = 2;
        c.memory.sim_threshold_hot = 0.99;
    });
    // Equal texts apart from a number: equal keyword evidence, newest first by default.
    let old = insert(&coral, "咖啡偏好 coffee preference 1", 3.0, Some("alpha"));
    let new = insert(&coral, "咖啡偏好 coffee preference 2", 2.0, Some("beta"));
    for i in 0..6 {
        insert(&coral, &format!("unrelated filler {i} 填充"), 1.0, None);
    }

    // Four of the eight are cold now (the hot and warm tiers hold two each).
    let filler = |coral: &Coral| search(coral, "unrelated filler 填充", 10, None);
    assert_eq!(coral.stats().cold, 4);
    assert!(filler(&coral).iter().any(|h| h.tier == coral::Tier::Cold));
    let mut no_cold = coral.config().as_ref().clone();
    no_cold.retrieval.include_cold = false;
    coral.set_config(no_cold).unwrap();
    let hits = filler(&coral);
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.tier != coral::Tier::Cold), "{hits:?}");
    let mut with_cold = coral.config().as_ref().clone();
    with_cold.retrieval.include_cold = true;
    coral.set_config(with_cold).unwrap();

    let order = |project| -> Vec<String> {
        search(&coral, "咖啡偏好 coffee preference", 2, project)
            .into_iter()
            .map(|h| h.item.item_id)
            .collect()
    };
    assert_eq!(order(None), [new.clone(), old.clone()]);
    // ×1.15 for the project's items lifts the older one above the newer.
    assert_eq!(order(Some("alpha")), [old.clone(), new.clone()]);
    let boosted = search(&coral, "咖啡偏好 coffee preference", 1, Some("alpha"));
    let plain = search(&coral, "咖啡偏好 coffee preference", 2, None);
    let plain_old = plain.iter().find(|h| h.item.item_id == old).unwrap();
    assert!((boosted[0].score - plain_old.score * 1.15).abs() < 1e-12);

    // top_k above the fusion depth still returns every matching item.
    for i in 0..150 {
        insert(&coral, &format!("bulk memory {i} 批量"), 0.5, None);
    }
    assert_eq!(search(&coral, "bulk 批量", 140, None).len(), 140);
}

#[test]
fn survives_delete_and_reopen_with_identical_results() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open_with(dir.path(), |_| {});
    let ids: Vec<String> = MEMORIES
        .iter()
        .enumerate()
        .map(|(i, m)| insert(&coral, m, i as f64, None))
        .collect();
    assert!(coral.delete(&ids[3]).unwrap());
    assert!(
        search(&coral, "麻辣火锅", 5, None)
            .iter()
            .all(|h| h.item.item_id != ids[3])
    );
    let query = "用户 manuals 咖啡";
    let before: Vec<(String, f64)> = search(&coral, query, 5, None)
        .into_iter()
        .map(|h| (h.item.item_id, h.score))
        .collect();
    coral.close().unwrap();
    let coral = open_with(dir.path(), |_| {});
    let after: Vec<(String, f64)> = search(&coral, query, 5, None)
        .into_iter()
        .map(|h| (h.item.item_id, h.score))
        .collect();
    assert_eq!(before, after);
    assert!(!after.iter().any(|h| h.0 == ids[3]));
}

#[test]
fn every_list_counts_with_its_configured_weight() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open_with(dir.path(), |c| {
        c.retrieval.rrf_weights.hash_vector = 0.5;
        c.retrieval.rrf_weights.jaccard = 2.0;
        c.retrieval.rrf_weights.bm25 = 1.0;
    });
    let ids: Vec<String> = MEMORIES
        .iter()
        .enumerate()
        .map(|(i, m)| insert(&coral, m, i as f64, None))
        .collect();
    let top = &search(&coral, "拿铁咖啡", 1, None)[0];
    assert_eq!(top.item.item_id, ids[0]);
    assert!((top.score - 3.5 / 61.0).abs() < 1e-12, "{}", top.score);
    // The model-vector weight does not apply to hash vectors.
    let mut model_only = coral.config().as_ref().clone();
    model_only.retrieval.rrf_weights.vector = 7.0;
    coral.set_config(model_only).unwrap();
    let top = &search(&coral, "拿铁咖啡", 1, None)[0];
    assert!((top.score - 3.5 / 61.0).abs() < 1e-12, "{}", top.score);
}

/// BM25 weighs a rare word up, hash vectors count every shared word alike: the weights decide
/// which list leads.
#[test]
fn the_weights_decide_between_disagreeing_lists() {
    let mut memories = vec!["saffron rice".to_string()];
    for day in ["monday", "tuesday", "wednesday", "thursday", "friday"] {
        memories.push(format!(
            "the user went to the park with the family on {day}"
        ));
    }
    let query = "the user went to the park with the family saffron";
    let top = |edit: fn(&mut Config)| -> String {
        let dir = tempfile::tempdir().unwrap();
        let coral = open_with(dir.path(), |c| {
            c.memory.sim_threshold_hot = 1.0;
            edit(c);
        });
        for m in &memories {
            insert(&coral, m, 1.0, None);
        }
        search(&coral, query, 1, None).remove(0).item.content
    };
    let vector_led = top(|c| {
        c.retrieval.rrf_weights.hash_vector = 1.0;
        c.retrieval.rrf_weights.bm25 = 0.25;
    });
    assert!(vector_led.starts_with("the user went"), "{vector_led}");
    // The default: BM25 alone with hash vectors.
    assert_eq!(top(|_| {}), "saffron rice");
    assert_eq!(
        top(|c| {
            c.retrieval.rrf_weights.hash_vector = 0.25;
            c.retrieval.rrf_weights.bm25 = 1.0;
        }),
        "saffron rice"
    );
}

#[test]
fn the_last_line_of_a_conversation_weighs_more() {
    let order = |boost: f64| -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let coral = open_with(dir.path(), |c| {
            // BM25 alone (the default with hash vectors): the keyword query's order.
            c.retrieval.bm25_last_line_boost = boost;
        });
        insert(&coral, "用户喜欢火锅", 2.0, None);
        insert(&coral, "用户喜欢爬山", 1.0, None);
        let conversation = "<User>: 上周我们聊了爬山\n<Assistant>: 对\n\n<User>: 今晚吃火锅吗\n";
        search(&coral, conversation, 2, None)
            .into_iter()
            .map(|h| h.item.content)
            .collect()
    };
    // Equal keyword evidence without the boost: the newer memory first.
    assert_eq!(order(0.0), ["用户喜欢爬山", "用户喜欢火锅"]);
    // The last line with words in it (the empty line after it does not count) decides.
    assert_eq!(order(1.0), ["用户喜欢火锅", "用户喜欢爬山"]);
    // A one-line query is not boosted: its order is the plain one.
    let dir = tempfile::tempdir().unwrap();
    let coral = open_with(dir.path(), |_| {});
    insert(&coral, "用户喜欢火锅", 2.0, None);
    insert(&coral, "用户喜欢爬山", 1.0, None);
    let hits = search(&coral, "聊了爬山 吃火锅吗", 2, None);
    assert_eq!(hits[0].item.content, "用户喜欢爬山");
    assert_eq!(hits[0].scores.bm25, hits[1].scores.bm25);
}

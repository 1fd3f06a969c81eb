//! `Coral::search_with` against a naive reference scorer (docs/configuration.md, "Retrieval
//! modes"): score every stored memory independently, sort everything, take `top_k`.
//!
//! The corpora are small, mix English and Chinese words from short lists, and reuse a few
//! timestamps, so equal scores (and equal scores with equal timestamps) are common and the
//! tie-break order is exercised.

use std::collections::BTreeMap;
use std::sync::Arc;

use coral::{Config, Coral, HashEmbedder, InsertOptions, Memory, SearchHit, SearchOptions};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;

const DIM: usize = 16;
const NOW: f64 = 1_700_000_000.0;
const DAY: f64 = 86_400.0;

const WORDS: [&str; 14] = [
    "coffee", "latte", "iced", "tea", "user", "likes", "formal", "咖啡", "拿铁", "冰镇", "用户",
    "喜欢", "翻译", "手册",
];

/// Creation times relative to `NOW`: now, an hour ago, days ago, and one in the future (its age
/// is clamped to 0).
const AGES: [f64; 5] = [0.0, 3600.0, 3.0 * DAY, 30.0 * DAY, -600.0];

fn open(dir: &std::path::Path) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.embedding.embedder = "hash".into();
    config.embedding.dim = DIM;
    // The reference is the original's weighted formula (the default mode is hybrid).
    config.retrieval.mode = coral::RetrievalMode::Weighted;
    let embedder = HashEmbedder::new(DIM).expect("dim is positive");
    Coral::open_with(config, Arc::new(embedder)).expect("coral opens")
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

fn bitmap_jaccard(a: &[u64; 32], b: &[u64; 32]) -> f64 {
    let inter: u32 = a.iter().zip(b).map(|(x, y)| (x & y).count_ones()).sum();
    let union: u32 = a.iter().zip(b).map(|(x, y)| (x | y).count_ones()).sum();
    if union == 0 {
        0.0
    } else {
        f64::from(inter) / f64::from(union)
    }
}

/// One reference result: id, score, components, timestamp.
#[derive(Clone, Debug)]
struct Expected {
    id: String,
    score: f64,
    vector: f64,
    jaccard: f64,
    time: f64,
    timestamp: f64,
}

/// Score every memory and sort by score descending, then newer first, then id ascending. Not
/// truncated or filtered: see [`assert_hits`].
fn reference(memories: &[Memory], query: &str, now: f64) -> Vec<Expected> {
    let embedder = HashEmbedder::new(DIM).expect("dim is positive");
    let q = embedder.embed_text(query);
    let q_bits = coral_embed::text_features(query).bitmap;
    let mut all: Vec<Expected> = memories
        .iter()
        .map(|m| {
            let item = &m.item;
            // The engine carries the cosine as f32; round the same way.
            let vector = f64::from(dot(&q, &embedder.embed_text(&item.content)) as f32);
            let jaccard =
                bitmap_jaccard(&q_bits, &coral_embed::text_features(&item.content).bitmap);
            let age = (now - item.timestamp).max(0.0);
            let time = (-age / (7.0 * 86_400.0)).exp();
            Expected {
                id: item.item_id.clone(),
                score: 0.6 * vector + 0.2 * jaccard + 0.2 * time,
                vector,
                jaccard,
                time,
                timestamp: item.timestamp,
            }
        })
        .collect();
    all.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.timestamp.total_cmp(&a.timestamp))
            .then_with(|| a.id.cmp(&b.id))
    });
    all
}

fn by_id(memories: Vec<Memory>) -> BTreeMap<String, Memory> {
    memories
        .into_iter()
        .map(|m| (m.item.item_id.clone(), m))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6
}

/// Scores closer than this are equal up to rounding. The engine takes the dot product in f32
/// (simsimd), which can be off the exact value by about `DIM · f32::EPSILON` (times the vector
/// weight 0.6): two memories with equal exact scores can come out a few ulps apart, and then
/// rounding, not the tie-break rule, decides which ranks first.
const NOISE: f64 = 0.6 * DIM as f64 * f32::EPSILON as f64;

/// The hits are the reference's top `k`, in its order, with its scores, each counted once.
/// Where reference scores are equal up to [`NOISE`], the hits at those positions may be any
/// members of that group; everywhere else the id order must match exactly. The engine's own
/// order must follow its own scores and the tie-break rule exactly.
fn assert_hits(
    hits: &[SearchHit],
    reference: &[Expected],
    k: usize,
    before: &BTreeMap<String, Memory>,
    now: f64,
) {
    let shown = || format!("hits: {hits:#?}\nreference: {reference:#?}");
    // Hits below the default `retrieval.min_score` of 0 are dropped; near 0 rounding decides.
    let surely_kept = reference.iter().filter(|e| e.score > NOISE).count();
    let maybe_kept = reference.iter().filter(|e| e.score >= -NOISE).count();
    assert!(
        (k.min(surely_kept)..=k.min(maybe_kept)).contains(&hits.len()),
        "number of hits\n{}",
        shown()
    );
    for (i, hit) in hits.iter().enumerate() {
        let id = hit.item.item_id.as_str();
        // The run of reference entries equal to position i up to rounding.
        let mut start = i;
        while start > 0 && reference[start - 1].score - reference[start].score <= NOISE {
            start -= 1;
        }
        let mut end = i + 1;
        while end < reference.len() && reference[end - 1].score - reference[end].score <= NOISE {
            end += 1;
        }
        let group = &reference[start..end];
        assert!(
            group.iter().any(|e| e.id == id),
            "hit {i} is {id}, expected one of {:?}\n{}",
            group.iter().map(|e| &e.id).collect::<Vec<_>>(),
            shown()
        );
        assert!(
            hits[..i].iter().all(|h| h.item.item_id != id),
            "{id} returned twice\n{}",
            shown()
        );
        let e = reference
            .iter()
            .find(|e| e.id == id)
            .expect("found in group");
        assert!(
            close(hit.score, e.score),
            "score of {id}: {} vs {}",
            hit.score,
            e.score
        );
        assert!(
            close(hit.score, reference[i].score),
            "score at {i}\n{}",
            shown()
        );
        assert!(
            close(hit.scores.vector, e.vector),
            "vector of {id}: {hit:?} vs {e:?}"
        );
        assert!(
            close(hit.scores.jaccard, e.jaccard),
            "jaccard of {id}: {hit:?} vs {e:?}"
        );
        assert!(
            close(hit.scores.time, e.time),
            "time of {id}: {hit:?} vs {e:?}"
        );
        let old = &before[id].item;
        assert_eq!(
            hit.item.access_count,
            old.access_count + 1,
            "access count of {id}"
        );
        assert_eq!(
            hit.item.last_access,
            old.last_access.max(now),
            "last access of {id}"
        );
    }
    for pair in hits.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let order = b
            .score
            .total_cmp(&a.score)
            .then(b.item.timestamp.total_cmp(&a.item.timestamp))
            .then_with(|| a.item.item_id.cmp(&b.item.item_id));
        assert_eq!(
            order,
            std::cmp::Ordering::Less,
            "{a:?} must rank before {b:?}"
        );
    }
}

/// After a search: hit memories counted once more, every other memory untouched.
fn assert_counted(
    after: &BTreeMap<String, Memory>,
    before: &BTreeMap<String, Memory>,
    hits: &[SearchHit],
) {
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    for (id, old) in before {
        let new = &after[id];
        match hits.iter().find(|h| &h.item.item_id == id) {
            Some(hit) => {
                assert_eq!(&new.item, &hit.item, "stored copy of hit {id}");
                assert_eq!(new.tier, old.tier, "tier of hit {id}");
            }
            None => assert_eq!(new, old, "memory {id} changed without being hit"),
        }
    }
}

fn text(words: &[usize]) -> String {
    words
        .iter()
        .map(|&w| WORDS[w])
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Clone, Debug)]
struct Case {
    /// Texts with the index into `AGES` of their creation time.
    corpus: Vec<(String, usize)>,
    query: String,
    top_k: usize,
    /// Offset of the search clock from `NOW`.
    search_offset: f64,
}

fn case() -> impl Strategy<Value = Case> {
    let words = prop::collection::vec(0..WORDS.len(), 1..5);
    let corpus = prop::collection::vec((words.clone(), 0..AGES.len()), 0..16).prop_map(|docs| {
        let mut seen = std::collections::BTreeSet::new();
        docs.into_iter()
            .map(|(w, age)| (text(&w), age))
            .filter(|(t, _)| seen.insert(t.clone()))
            .collect()
    });
    let query = prop_oneof![
        6 => words.prop_map(|w| text(&w)),
        // No tokens at all: only the time term ranks, so ties are everywhere.
        1 => Just("?!".to_string()),
    ];
    (
        corpus,
        query,
        1usize..9,
        prop_oneof![Just(0.0), Just(2.0 * DAY)],
    )
        .prop_map(|(corpus, query, top_k, search_offset)| Case {
            corpus,
            query,
            top_k,
            search_offset,
        })
}

fn run(case: &Case) {
    let dir = tempfile::tempdir().expect("temp dir");
    let coral = open(dir.path());
    for (content, age) in &case.corpus {
        let options = InsertOptions {
            timestamp: Some(NOW - AGES[*age]),
            now: Some(NOW),
            ..InsertOptions::default()
        };
        coral.insert_with(content, options).expect("insert");
    }
    // Inserts may merge near-duplicates: the reference is what was stored, not what was sent.
    let stored = coral.export().unwrap();
    assert_eq!(
        coral.stats().vectors,
        stored.len(),
        "every memory has a vector"
    );
    let now = NOW + case.search_offset;
    let options = SearchOptions {
        top_k: Some(case.top_k),
        now: Some(now),
        ..SearchOptions::default()
    };
    let expected = reference(&stored, &case.query, now);
    let before = by_id(stored);

    let hits = coral
        .search_with(&case.query, options.clone())
        .expect("search");
    assert_hits(&hits, &expected, case.top_k, &before, now);
    let after = by_id(coral.export().unwrap());
    assert_counted(&after, &before, &hits);

    // Access counts and last access do not enter the score: the same search gives the same
    // hits, each counted once more.
    let again = coral
        .search_with(&case.query, options)
        .expect("second search");
    assert_hits(&again, &expected, case.top_k, &after, now);
    for (a, b) in again.iter().zip(&hits) {
        assert_eq!(
            a.item.item_id, b.item.item_id,
            "the second search ranked differently"
        );
        assert_eq!(
            a.score.to_bits(),
            b.score.to_bits(),
            "score of {} moved",
            a.item.item_id
        );
    }
    assert_counted(&by_id(coral.export().unwrap()), &after, &again);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn search_matches_the_reference_scorer(case in case()) {
        run(&case);
    }
}

#[test]
fn equal_scores_rank_newer_first_then_by_id() {
    // A query without tokens scores only recency: memories of the same age tie exactly.
    let corpus = [
        ("coffee latte", 1),
        ("formal 手册", 1),
        ("用户 喜欢 冰镇", 0),
        ("iced tea", 0),
        ("翻译", 2),
    ];
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    for (content, age) in corpus {
        let options = InsertOptions {
            timestamp: Some(NOW - AGES[age]),
            now: Some(NOW),
            ..InsertOptions::default()
        };
        assert!(
            coral.insert_with(content, options).unwrap().inserted(),
            "{content}"
        );
    }
    let options = SearchOptions {
        top_k: Some(4),
        now: Some(NOW),
        ..SearchOptions::default()
    };
    let hits = coral.search_with("?!", options).unwrap();
    let mut newest: Vec<String> = ["用户 喜欢 冰镇", "iced tea"]
        .map(coral_embed::item_id)
        .into();
    let mut hour_old: Vec<String> = ["coffee latte", "formal 手册"]
        .map(coral_embed::item_id)
        .into();
    newest.sort();
    hour_old.sort();
    let want: Vec<String> = newest.into_iter().chain(hour_old).collect();
    let got: Vec<String> = hits.iter().map(|h| h.item.item_id.clone()).collect();
    assert_eq!(got, want, "{hits:#?}");
    assert_eq!(hits[0].score.to_bits(), hits[1].score.to_bits());
    assert_eq!(hits[2].score.to_bits(), hits[3].score.to_bits());
    assert!(hits[1].score > hits[2].score);
    assert!(
        hits.iter()
            .all(|h| h.scores.vector == 0.0 && h.scores.jaccard == 0.0)
    );
}

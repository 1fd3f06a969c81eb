//! The bulk copies of `coral migrate` (`import.rs`, docs/postgres.md "Migrating"): a batch
//! copied in as it is reads back equal (tiers, counters, times, importance, projects, other
//! keys, vectors bit for bit); it searches exactly as the same memories inserted one by one
//! (postings and document statistics); a repeat or a present id adds nothing; threads keep
//! their ids, numbers and times; and a bad memory fails the whole batch.

mod common;

use std::collections::BTreeMap;

use common::{DIM, Memory, ids, store};
use coral_pg::NewMemory;
use coral_store::Tier;
use serde_json::json;

fn texts() -> Vec<String> {
    (0..120)
        .map(|i| {
            format!(
                "memory {i} about {} and {} with \"quotes\" and back\\slash {}",
                ["coffee", "deploys", "咖啡 翻译", "tenants"][i % 4],
                ["latency", "reviews", "接口 超时", "vectors"][i % 3],
                i * 7919 % 1000
            )
        })
        .collect()
}

/// The memories of `texts` with varied tiers, counters, importance, projects and keys.
fn memories(texts: &[String]) -> Vec<Memory> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let project = ["alpha", "beta", ""][i % 3];
            let mut m = Memory::in_project(
                t,
                1_775_000_000.0 + i as f64 * 61.5,
                (!project.is_empty()).then_some(project),
            );
            m.item.access_count = (i % 7) as u64;
            m.item.last_access = m.item.timestamp + (i % 5) as f64 * 3600.0;
            m.item.importance = (i % 4) as f64 / 4.0;
            if i % 10 == 0 {
                m.item
                    .extra
                    .insert("source".into(), json!({"n": i, "s": "x\"y"}));
            }
            m
        })
        .collect()
}

fn tier(i: usize) -> Tier {
    [Tier::Hot, Tier::Warm, Tier::Cold][i % 3]
}

fn batch(ms: &[Memory]) -> Vec<NewMemory<'_>> {
    ms.iter()
        .enumerate()
        .map(|(i, m)| NewMemory {
            tier: tier(i),
            ..m.new_memory()
        })
        .collect()
}

#[test]
fn a_bulk_copy_reads_back_as_it_was_and_searches_as_inserts_do() {
    let Some(bulk) = store("bulk") else { return };
    let Some(one_by_one) = store("one-by-one") else {
        return;
    };
    let texts = texts();
    let ms = memories(&texts);
    let all = batch(&ms);
    // Two batches, the second repeating part of the first and one id twice.
    assert_eq!(bulk.import_bulk(&all[..70]).unwrap(), 70);
    let mut second: Vec<NewMemory<'_>> = all[50..].to_vec();
    second.push(all[119]);
    assert_eq!(bulk.import_bulk(&second).unwrap(), 50);
    assert_eq!(bulk.import_bulk(&all).unwrap(), 0);
    assert_eq!(one_by_one.import(&all).unwrap(), 120);

    // Read back in pages by key: everything as it was, vectors bit for bit.
    let mut after = 0;
    let mut back = BTreeMap::new();
    loop {
        let page = bulk.export_page(after, 32).unwrap();
        if page.memories.is_empty() {
            break;
        }
        assert!(page.memories.len() <= 32);
        after = page.last_key;
        for m in page.memories {
            back.insert(m.stored.item.item_id.clone(), m);
        }
    }
    assert_eq!(back.len(), 120);
    for (i, m) in ms.iter().enumerate() {
        let got = &back[m.id()];
        assert_eq!(got.stored.item, m.item, "{i}");
        assert_eq!(got.stored.tier, tier(i), "{i}");
        assert_eq!(got.embedder, "hash");
        assert_eq!(got.vector.len(), DIM);
        let same = got
            .vector
            .iter()
            .zip(&m.vector)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "vector {i} changed");
    }
    let mut expected = BTreeMap::new();
    for (i, m) in ms.iter().enumerate() {
        *expected
            .entry((tier(i), m.item.project.clone()))
            .or_insert(0u64) += 1;
    }
    assert_eq!(bulk.tier_project_counts().unwrap(), expected);
    assert_eq!(bulk.projects().unwrap(), ["alpha", "beta"]);
    let mut listed = bulk.item_ids().unwrap();
    listed.sort();
    let mut want: Vec<String> = ms.iter().map(|m| m.id().to_string()).collect();
    want.sort();
    assert_eq!(listed, want);

    // The same postings and statistics as one statement per memory: equal scores.
    for q in [
        "coffee latency",
        "咖啡 超时",
        "quotes backslash 919",
        "tenants vectors",
    ] {
        let a = bulk.search_text(q, 10).unwrap();
        let b = one_by_one.search_text(q, 10).unwrap();
        assert!(!a.is_empty(), "{q}");
        assert_eq!(ids(&a), ids(&b), "{q}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x.bm25 - y.bm25).abs() < 1e-12,
                "{q}: {} {}",
                x.bm25,
                y.bm25
            );
        }
    }
    // Deletes find the bulk rows' postings and statistics.
    let gone = bulk.delete(&[ms[3].id()]).unwrap();
    assert_eq!(gone.len(), 1);
    assert!(!ids(&bulk.search_text(&texts[3], 5).unwrap()).contains(&ms[3].id().to_string()));
}

#[test]
fn a_bad_memory_fails_its_whole_batch() {
    let Some(s) = store("bulk-bad") else { return };
    let texts = texts();
    let ms = memories(&texts[..5]);
    let mut all = batch(&ms);
    let short = vec![0.5f32; DIM - 1];
    all[3].vector = &short;
    let e = s.import_bulk(&all).unwrap_err().to_string();
    assert!(e.contains("dimensions"), "{e}");
    assert_eq!(s.count().unwrap().total(), 0);
}

#[test]
fn threads_are_copied_with_their_ids_numbers_and_times() {
    let Some(from) = store("threads-from") else {
        return;
    };
    let Some(to) = store("threads-to") else {
        return;
    };
    let a = from
        .thread_create("plan", Some("the plan"), None, Some("me"), 1_775_000_000.0)
        .unwrap();
    from.thread_advance(&a.thread_id, "step one", None, Some("x"), 1_775_000_100.0)
        .unwrap();
    from.thread_advance(
        &a.thread_id,
        "done now",
        Some(true),
        Some("y"),
        1_775_000_200.0,
    )
    .unwrap();
    let b = from
        .thread_create("child", None, None, None, 1_775_000_300.0)
        .unwrap();
    from.thread_link(&b.thread_id, &a.thread_id, 1_775_000_400.0)
        .unwrap();
    from.thread_set_status(
        &b.thread_id,
        coral_thread::Status::Archived,
        1_775_000_500.0,
    )
    .unwrap();
    let views: Vec<_> = from
        .thread_overview(true, None)
        .unwrap()
        .into_iter()
        .map(|e| e.thread)
        .collect();
    assert_eq!(to.import_threads(&views).unwrap(), 2);
    assert_eq!(to.import_threads(&views).unwrap(), 0);
    assert_eq!(
        to.thread_overview(true, None).unwrap(),
        from.thread_overview(true, None).unwrap()
    );
    let mut ids = to.thread_ids().unwrap();
    ids.sort();
    let mut want = vec![a.thread_id.clone(), b.thread_id.clone()];
    want.sort();
    assert_eq!(ids, want);
    // The copy advances on from its last number.
    let next = to
        .thread_advance(&a.thread_id, "step three", None, None, 1_775_000_600.0)
        .unwrap();
    assert_eq!(
        next.steps.iter().map(|s| s.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
}

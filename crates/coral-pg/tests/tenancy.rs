//! A tenant never sees or changes another tenant's rows, over every operation of `PgStore`
//! (docs/postgres.md, "Tenancy"): two stores on one database, the second asked about
//! everything the first wrote.

mod common;

use coral_pg::{Error, InsertOutcome, SearchQuery};
use coral_score::{HybridParams, search_query};
use coral_store::Tier;

use common::{Memory, ids};

#[test]
fn a_tenant_never_sees_or_changes_another_tenants_rows() {
    let Some(url) = common::url() else {
        return;
    };
    let a = common::store_for(&url, &common::tenant("tenancy-a"));
    let b = common::store_for(&url, &common::tenant("tenancy-b"));
    let texts = [
        "tenant a keeps its api notes here",
        "a 的会议记录在周一",
        "the shared wording both tenants write",
    ];
    let ms: Vec<Memory> = texts
        .iter()
        .map(|t| Memory::in_project(t, 100.0, Some("alpha")))
        .collect();
    for m in &ms {
        a.insert(&m.new_memory(), 0.7).unwrap();
    }
    let thread = a
        .thread_create("tenant a's plan", None, None, Some("a"), 100.0)
        .unwrap();
    a.thread_advance(&thread.thread_id, "first step", None, Some("a"), 101.0)
        .unwrap();

    // Reads.
    let all: Vec<&str> = ms.iter().map(Memory::id).collect();
    assert!(b.get(&all).unwrap().is_empty());
    assert_eq!(b.count().unwrap().total(), 0);
    assert!(b.projects().unwrap().is_empty());
    for text in texts {
        assert!(b.search_text(text, 10).unwrap().is_empty(), "{text}");
    }
    let keywords = search_query(texts[0], 0.0);
    let query = SearchQuery {
        vector: Some(&ms[0].vector),
        keywords: &keywords,
        question: true,
        params: HybridParams::default(),
        depth: 100,
        project: Some("alpha"),
        ef_search: 100,
        embedder: None,
        window: None,
        cold: coral_pg::ColdFilter::All,
    };
    let seen = b.candidates(&query).unwrap();
    assert!(seen.items.is_empty() && seen.bm25.is_empty() && seen.vector.is_empty());
    assert!(b.search(&query, 10).unwrap().is_empty());
    assert!(matches!(
        b.thread_status(&thread.thread_id),
        Err(Error::NotFound { what: "thread", .. })
    ));

    // Writes.
    assert!(b.delete(&all).unwrap().is_empty());
    assert!(matches!(
        b.thread_advance(&thread.thread_id, "b's step", None, Some("b"), 102.0),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        b.thread_create("child", None, Some(&thread.thread_id), None, 102.0),
        Err(Error::NotFound { .. })
    ));
    // The same text is b's own memory, not a merge into a's.
    let same = Memory::new(texts[2], 200.0);
    assert_eq!(
        b.insert(&same.new_memory(), 0.7).unwrap(),
        InsertOutcome::Inserted(same.id().to_string())
    );
    let near = Memory::new("tenant a keeps its api notes here!", 200.0);
    assert!(matches!(
        b.insert(&near.new_memory(), 0.7).unwrap(),
        InsertOutcome::Inserted(_)
    ));
    let imported = Memory::new("imported into b only", 300.0);
    assert_eq!(b.import(&[imported.new_memory()]).unwrap(), 1);

    // Tenant a is as it was.
    assert_eq!(a.count().unwrap().total(), 3);
    assert_eq!(a.get(&all).unwrap().len(), 3);
    for m in a.get(&all).unwrap() {
        assert_eq!(m.item.access_count, 1, "b's inserts merged nothing of a's");
        assert_eq!(m.tier, Tier::Hot);
    }
    assert_eq!(a.thread_status(&thread.thread_id).unwrap().step_count, 1);
    assert_eq!(a.projects().unwrap(), ["alpha"]);
    assert!(a.search_text("imported into b only", 5).unwrap().is_empty());
    assert_eq!(ids(&a.search_text("api notes", 5).unwrap())[0], ms[0].id());
    // And b sees its own rows only.
    assert_eq!(b.count().unwrap().total(), 3);
    let mine = ids(&b
        .search_text("the shared wording both tenants write", 5)
        .unwrap());
    assert_eq!(mine[0], same.id());
    let own = [same.id(), near.id(), imported.id()];
    assert!(mine.iter().all(|id| own.contains(&id.as_str())), "{mine:?}");
    let got = b.get(&[same.id()]).unwrap();
    assert_eq!(
        got[0].item.project, None,
        "b's row, not a's (which is in alpha)"
    );
}

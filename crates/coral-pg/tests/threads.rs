//! Threads on a real PostgreSQL: create, advance and status, the checks of coral-thread, and
//! exact step numbers under concurrent advances from many connections.

mod common;

use std::collections::HashSet;

use coral_pg::Error;
use coral_thread::Status;

#[test]
fn create_advance_status_round_trip() {
    let Some(store) = common::store("threads") else {
        return;
    };
    let parent = store
        .thread_create(
            "ship the pg backend",
            Some("schema, then search"),
            None,
            Some("lead"),
            10.0,
        )
        .unwrap();
    assert_eq!(parent.status, Status::Active);
    assert_eq!(parent.thread_id.len(), 16);
    assert_eq!(
        (parent.step_count, parent.last_advance_by.as_str()),
        (0, "lead")
    );
    let child = store
        .thread_create("write the tests", None, Some(&parent.thread_id), None, 11.0)
        .unwrap();
    assert_eq!(
        child.parent_thread_id.as_deref(),
        Some(parent.thread_id.as_str())
    );

    let v = store
        .thread_advance(
            &parent.thread_id,
            "schema v1 is in",
            None,
            Some("dev"),
            12.0,
        )
        .unwrap();
    assert_eq!(v.step_count, 1);
    let v = store
        .thread_advance(
            &parent.thread_id,
            "检索验证通过，搜索完成",
            None,
            Some("dev"),
            13.0,
        )
        .unwrap();
    assert_eq!(v.step_count, 2);
    assert!(v.steps[1].done, "looks_completed of the note");
    assert!(!v.steps[0].done);
    assert_eq!(v.steps.iter().map(|s| s.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(v.last_advance_by, "dev");
    assert!(v.updated_at >= 13.0);
    assert_eq!(store.thread_status(&parent.thread_id).unwrap(), v);

    // Refused input names the problem and adds nothing.
    let e = store
        .thread_advance(&parent.thread_id, "  ", None, None, 14.0)
        .unwrap_err();
    assert!(e.to_string().contains("note is empty"), "{e}");
    let e = store
        .thread_create(&"t".repeat(81), None, None, None, 14.0)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("title is 81 characters; the limit is 80"),
        "{e}"
    );
    assert!(matches!(
        store.thread_advance("0000000000000000", "x", None, None, 14.0),
        Err(Error::NotFound { what: "thread", .. })
    ));
    assert_eq!(
        store.thread_status(&parent.thread_id).unwrap().step_count,
        2
    );
}

#[test]
fn concurrent_advances_get_every_number_once() {
    let Some(store) = common::store("threads-race") else {
        return;
    };
    let thread = store.thread_create("raced", None, None, None, 1.0).unwrap();
    let id = thread.thread_id.as_str();
    std::thread::scope(|s| {
        for w in 0..4 {
            let store = &store;
            s.spawn(move || {
                for i in 0..25 {
                    store
                        .thread_advance(
                            id,
                            &format!("writer {w} step {i}"),
                            Some(false),
                            Some(&format!("w{w}")),
                            2.0,
                        )
                        .unwrap();
                }
            });
        }
    });
    let v = store.thread_status(id).unwrap();
    assert_eq!(v.step_count, 100);
    assert_eq!(
        v.steps.iter().map(|s| s.seq).collect::<Vec<_>>(),
        (1..=100).collect::<Vec<_>>()
    );
    let texts: HashSet<&str> = v.steps.iter().map(|s| &*s.text).collect();
    assert_eq!(texts.len(), 100, "no step lost or repeated");
    let step_ids: HashSet<&str> = v.steps.iter().map(|s| &*s.step_id).collect();
    assert_eq!(step_ids.len(), 100);
}

/// Two connections linking two threads under each other at once: the tenant's links are
/// serialised, so one wins and the other is refused as a cycle, every time.
#[test]
fn concurrent_opposite_links_never_make_a_cycle() {
    let Some(url) = common::url() else {
        return;
    };
    let tenant = common::tenant("link-race");
    let (a, b) = (
        common::store_for(&url, &tenant),
        common::store_for(&url, &tenant),
    );
    for round in 0..20 {
        let x = a
            .thread_create(&format!("x{round}"), None, None, None, 1.0)
            .unwrap();
        let y = a
            .thread_create(&format!("y{round}"), None, None, None, 1.0)
            .unwrap();
        let barrier = std::sync::Barrier::new(2);
        let (rx, ry) = std::thread::scope(|s| {
            let one = s.spawn(|| {
                barrier.wait();
                a.thread_link(&x.thread_id, &y.thread_id, 2.0)
            });
            let two = s.spawn(|| {
                barrier.wait();
                b.thread_link(&y.thread_id, &x.thread_id, 2.0)
            });
            (one.join().unwrap(), two.join().unwrap())
        });
        let won = usize::from(rx.is_ok()) + usize::from(ry.is_ok());
        assert_eq!(won, 1, "round {round}: {rx:?} {ry:?}");
        let refused = rx.err().or(ry.err()).unwrap().to_string();
        assert!(refused.contains("would make a cycle"), "{refused}");
        let parents = (
            a.thread_status(&x.thread_id).unwrap().parent_thread_id,
            a.thread_status(&y.thread_id).unwrap().parent_thread_id,
        );
        assert!(
            parents.0.is_none() || parents.1.is_none(),
            "round {round}: a cycle {parents:?}"
        );
    }
}

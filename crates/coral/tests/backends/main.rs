//! The behavioural suite of the storage interface (docs/postgres.md, "The storage interface"):
//! every test runs the same calls through `Coral` against both backends, the data directory
//! and a tenant of a real PostgreSQL server (`CORAL_POSTGRES_URL`, which
//! `scripts/pg-test-server.sh start` prints). Without a URL only the local backend runs and the
//! test says so, unless `CORAL_REQUIRE_POSTGRES=1` (CI), where it fails.

mod common;
mod governance;
mod parity;

use coral::{
    Coral, Error, HashEmbedder, InsertOptions, InsertOutcome, ListQuery, SearchOptions, Tier,
};

use common::{backends, open_postgres, postgres_url, tenant};

const T0: f64 = 1_775_822_400.0;

fn at(offset: f64) -> InsertOptions {
    InsertOptions {
        timestamp: Some(T0 + offset),
        now: Some(T0 + offset),
        ..InsertOptions::default()
    }
}

fn search(coral: &Coral, query: &str, k: usize) -> Vec<coral::SearchHit> {
    coral
        .search_with(
            query,
            SearchOptions {
                top_k: Some(k),
                now: Some(T0 + 3_600.0),
                ..SearchOptions::default()
            },
        )
        .unwrap()
}

#[test]
fn an_insert_is_stored_hot_and_read_back() {
    for b in backends("insert") {
        let c = &b.coral;
        let stored = c
            .insert_with("the user likes iced oat lattes 冰拿铁", at(0.0))
            .unwrap();
        let id = stored.id().to_string();
        assert!(stored.inserted(), "{}", b.name);
        assert_eq!(id, coral::item_id("the user likes iced oat lattes 冰拿铁"));
        let m = c.get(&id).unwrap().expect("stored");
        assert_eq!(m.tier, Tier::Hot, "{}", b.name);
        assert_eq!(m.item.content, "the user likes iced oat lattes 冰拿铁");
        assert_eq!(m.item.timestamp, T0);
        assert_eq!(m.item.access_count, 1, "{}", b.name);
        let stats = c.stats();
        assert_eq!((stats.total, stats.hot), (1, 1), "{}", b.name);
        assert_eq!(stats.backend, b.name);
        assert_eq!(stats.backend_error, None);
        assert_eq!(c.export().unwrap(), vec![m], "{}", b.name);
    }
}

#[test]
fn the_same_text_again_merges_into_its_id() {
    for b in backends("exact-merge") {
        let c = &b.coral;
        let first = c.insert_with("deploys go out on fridays", at(0.0)).unwrap();
        let again = c
            .insert_with("deploys go out on fridays", at(60.0))
            .unwrap();
        assert_eq!(
            again.outcome,
            InsertOutcome::Merged(first.id().to_string()),
            "{}",
            b.name
        );
        let m = c.get(first.id()).unwrap().unwrap();
        assert_eq!(m.item.access_count, 2, "{}", b.name);
        assert_eq!(m.item.last_access, T0 + 60.0, "{}", b.name);
        assert_eq!(c.stats().total, 1, "{}", b.name);
    }
}

#[test]
fn a_near_duplicate_merges_into_the_original() {
    for b in backends("near-merge") {
        let c = &b.coral;
        let text = "the team prefers short standups every morning at nine in room four";
        let first = c.insert_with(text, at(0.0)).unwrap();
        let variant = c.insert_with(&format!("{text} today"), at(30.0)).unwrap();
        assert_eq!(
            variant.outcome,
            InsertOutcome::Merged(first.id().to_string()),
            "{}",
            b.name
        );
        // Below the threshold: a memory of its own.
        let other = c
            .insert_with("the team prefers long retrospectives", at(40.0))
            .unwrap();
        assert!(other.inserted(), "{}", b.name);
        assert_eq!(c.stats().total, 2, "{}", b.name);
        assert_eq!(c.get(first.id()).unwrap().unwrap().item.access_count, 2);
    }
}

#[test]
fn a_search_ranks_with_component_scores_and_counts_its_hits() {
    for b in backends("search") {
        let c = &b.coral;
        let coffee = c
            .insert_with("the user drinks iced oat lattes with no sugar", at(0.0))
            .unwrap();
        c.insert_with("quarterly report is due on the first monday", at(10.0))
            .unwrap();
        c.insert_with("the cat is called biscuit and hates baths", at(20.0))
            .unwrap();
        let hits = search(c, "which lattes does the user drink", 3);
        assert!(!hits.is_empty(), "{}", b.name);
        let top = &hits[0];
        assert_eq!(top.item.item_id, coffee.id(), "{}", b.name);
        assert!(
            top.scores.bm25.unwrap() > 0.0,
            "{}: {:?}",
            b.name,
            top.scores
        );
        assert!(top.scores.jaccard > 0.0, "{}: {:?}", b.name, top.scores);
        assert!(top.scores.vector > 0.0, "{}: {:?}", b.name, top.scores);
        assert!(top.scores.time > 0.0 && top.scores.time <= 1.0);
        assert!(top.score > 0.0);
        // The hit counted for heat, in the answer and in the store.
        assert_eq!(top.item.access_count, 2, "{}", b.name);
        let m = c.get(coffee.id()).unwrap().unwrap();
        assert_eq!(m.item.access_count, 2, "{}", b.name);
        assert_eq!(m.item.last_access, T0 + 3_600.0, "{}", b.name);
        // An uncounted search counts nothing.
        let quiet = c
            .search_uncounted(
                "lattes",
                SearchOptions {
                    top_k: Some(1),
                    now: Some(T0 + 7_200.0),
                    ..SearchOptions::default()
                },
            )
            .unwrap();
        assert_eq!(quiet[0].item.item_id, coffee.id());
        assert_eq!(c.get(coffee.id()).unwrap().unwrap().item.access_count, 2);
        // Bad input is refused the same way.
        let e = c
            .search_with(
                "lattes",
                SearchOptions {
                    top_k: Some(0),
                    ..SearchOptions::default()
                },
            )
            .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{}: {e}", b.name);
    }
}

#[test]
fn a_project_search_boosts_its_project_and_shared_memories() {
    for b in backends("project") {
        let c = &b.coral;
        let mine = InsertOptions {
            project: Some("alpha".into()),
            ..at(0.0)
        };
        let theirs = InsertOptions {
            project: Some("beta".into()),
            ..at(0.0)
        };
        let beta = c
            .insert_with("release notes: the build uses cargo nextest", theirs)
            .unwrap();
        let alpha = c
            .insert_with("our build runs on cargo nextest too", mine)
            .unwrap();
        let ask = |project: &str| {
            c.search_uncounted(
                "cargo nextest build",
                SearchOptions {
                    top_k: Some(5),
                    project: Some(project.into()),
                    now: Some(T0 + 10.0),
                    ..SearchOptions::default()
                },
            )
            .unwrap()
        };
        let ids = |hits: Vec<coral::SearchHit>| -> Vec<String> {
            hits.into_iter().map(|h| h.item.item_id).collect()
        };
        // Both are found whatever the project (a boost, not a filter); each project's own
        // memory first.
        assert_eq!(ids(ask("alpha")), [alpha.id(), beta.id()], "{}", b.name);
        assert_eq!(ids(ask("beta")), [beta.id(), alpha.id()], "{}", b.name);
    }
}

#[test]
fn delete_removes_and_unknown_ids_are_reported() {
    for b in backends("delete") {
        let c = &b.coral;
        let gone = c
            .insert_with("a memory to forget about zebras", at(0.0))
            .unwrap();
        let kept = c
            .insert_with("a memory to keep about horses", at(1.0))
            .unwrap();
        assert!(c.delete(gone.id()).unwrap(), "{}", b.name);
        assert!(!c.delete(gone.id()).unwrap(), "{}: a second delete", b.name);
        assert_eq!(c.get(gone.id()).unwrap(), None, "{}", b.name);
        assert!(search(c, "zebras", 5).is_empty(), "{}", b.name);
        assert_eq!(c.stats().total, 1);
        assert!(c.get(kept.id()).unwrap().is_some());
        // Unknown ids.
        assert_eq!(c.get("0123456789abcdef").unwrap(), None, "{}", b.name);
        assert!(!c.delete("0123456789abcdef").unwrap(), "{}", b.name);
        let e = c.mark_important("0123456789abcdef", 0.9).unwrap_err();
        assert!(matches!(e, Error::NotFound(_)), "{}: {e}", b.name);
        let e = c.mark_important(kept.id(), 1.5).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{}: {e}", b.name);
        let item = c.mark_important(kept.id(), 0.9).unwrap();
        assert_eq!(item.importance, 0.9, "{}", b.name);
        assert_eq!(c.get(kept.id()).unwrap().unwrap().item.importance, 0.9);
    }
}

#[test]
fn a_list_filters_orders_and_pages_alike() {
    for b in backends("list") {
        let c = &b.coral;
        for i in 0..7 {
            let project = (i % 2 == 0).then(|| "even".to_string());
            c.insert_with(
                &format!("listed memory number {i} about topic {}", i * 7),
                InsertOptions {
                    project,
                    importance: f64::from(i) / 10.0,
                    ..at(f64::from(i))
                },
            )
            .unwrap();
        }
        let page = c
            .list(&ListQuery {
                project: Some("even".into()),
                limit: 2,
                offset: 1,
                ..ListQuery::default()
            })
            .unwrap();
        assert_eq!((page.total, page.matched), (7, 4), "{}", b.name);
        let contents: Vec<&str> = page.items.iter().map(|m| m.item.content.as_str()).collect();
        assert_eq!(
            contents,
            [
                "listed memory number 4 about topic 28",
                "listed memory number 2 about topic 14"
            ],
            "{}",
            b.name
        );
        assert_eq!(page.projects.get("even"), Some(&4));
    }
}

#[test]
fn threads_advance_in_order_and_unknown_threads_are_named() {
    for b in backends("threads") {
        let c = &b.coral;
        let t = c
            .thread_create("ship the release", Some("plan"), None, Some("ci"))
            .unwrap();
        assert_eq!(t.step_count, 0, "{}", b.name);
        c.thread_advance(&t.thread_id, "tagged v1", Some(false), Some("ci"))
            .unwrap();
        let v = c
            .thread_advance(&t.thread_id, "版本已上线", None, None)
            .unwrap();
        assert_eq!(v.step_count, 2, "{}", b.name);
        let seqs: Vec<u64> = v.steps.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [1, 2], "{}", b.name);
        assert!(v.steps[1].done, "{}: 上线 reads as done", b.name);
        let status = c.thread_status(Some(&t.thread_id), false, None).unwrap();
        assert_eq!(status.views()[0], &v, "{}", b.name);
        assert_eq!(c.stats().threads, 1, "{}", b.name);
        let e = c
            .thread_advance("ffffffffffffffff", "a note", None, None)
            .unwrap_err();
        assert!(matches!(e, Error::ThreadNotFound(_)), "{}: {e}", b.name);
        let e = c
            .thread_status(Some("ffffffffffffffff"), false, None)
            .unwrap_err();
        assert!(matches!(e, Error::ThreadNotFound(_)), "{}: {e}", b.name);
        let e = c
            .thread_create("child", None, Some("ffffffffffffffff"), None)
            .unwrap_err();
        assert!(matches!(e, Error::ThreadNotFound(_)), "{}: {e}", b.name);
        let e = c.thread_advance(&t.thread_id, "", None, None).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{}: {e}", b.name);
    }
}

#[test]
fn threads_interrupt_archive_resume_and_link_alike() {
    for b in backends("thread-states") {
        let c = &b.coral;
        let parent = c.thread_create("parent", None, None, None).unwrap();
        let child = c.thread_create("child", None, None, None).unwrap();
        c.thread_advance(&child.thread_id, "first step", Some(false), Some("me"))
            .unwrap();
        let t = c
            .thread_interrupt(&child.thread_id, Some("  waiting on review  "))
            .unwrap();
        assert_eq!(t.status, coral::ThreadStatus::Interrupted, "{}", b.name);
        assert_eq!(t.step_count, 2, "{}", b.name);
        assert_eq!(&*t.steps[1].text, "[中断] waiting on review", "{}", b.name);
        assert_eq!((t.steps[1].seq, t.steps[1].done), (2, false), "{}", b.name);
        assert_eq!(&*t.steps[1].by, "", "{}", b.name);
        assert_eq!(
            t.last_advance_by, "me",
            "{}: an interrupt is no advance",
            b.name
        );
        let bare = c.thread_interrupt(&parent.thread_id, None).unwrap();
        assert_eq!(&*bare.steps[0].text, "[中断]", "{}", b.name);

        let archived = c.thread_archive(&child.thread_id).unwrap();
        assert_eq!(archived.status, coral::ThreadStatus::Archived, "{}", b.name);
        let again = c.thread_archive(&child.thread_id).unwrap();
        assert_eq!(again.updated_at, archived.updated_at, "{}: a no-op", b.name);
        let resumed = c.thread_resume(&child.thread_id).unwrap();
        assert_eq!(resumed.status, coral::ThreadStatus::Active, "{}", b.name);
        assert!(resumed.updated_at > archived.updated_at, "{}", b.name);

        c.thread_link(&child.thread_id, &parent.thread_id).unwrap();
        let linked = c
            .thread_status(Some(&child.thread_id), false, None)
            .unwrap();
        assert_eq!(
            linked.views()[0].parent_thread_id.as_deref(),
            Some(parent.thread_id.as_str()),
            "{}",
            b.name
        );
        let e = c
            .thread_link(&parent.thread_id, &child.thread_id)
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.contains("would make a cycle")),
            "{}: {e}",
            b.name
        );
        let e = c
            .thread_link(&parent.thread_id, &parent.thread_id)
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidInput(m) if m.contains("to itself")),
            "{}: {e}",
            b.name
        );
        for e in [
            c.thread_link("ffffffffffffffff", &parent.thread_id)
                .unwrap_err(),
            c.thread_link(&parent.thread_id, "ffffffffffffffff")
                .unwrap_err(),
            c.thread_archive("ffffffffffffffff").unwrap_err(),
            c.thread_resume("ffffffffffffffff").unwrap_err(),
            c.thread_interrupt("ffffffffffffffff", None).unwrap_err(),
        ] {
            assert!(
                matches!(&e, Error::ThreadNotFound(id) if id == "ffffffffffffffff"),
                "{}: {e}",
                b.name
            );
        }
        let long = "x".repeat(600);
        let e = c
            .thread_interrupt(&parent.thread_id, Some(&long))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{}: {e}", b.name);
    }
}

#[test]
fn the_thread_overview_lists_alike() {
    for b in backends("overview") {
        let c = &b.coral;
        let alpha = c
            .thread_create("Alpha launch", Some("the plan"), None, None)
            .unwrap();
        let beta = c.thread_create("beta fixes", None, None, None).unwrap();
        let gamma = c
            .thread_create("gamma cleanup", Some("ALPHA leftovers"), None, None)
            .unwrap();
        let delta = c
            .thread_create("delta docs", None, Some(&alpha.thread_id), None)
            .unwrap();
        c.thread_interrupt(&beta.thread_id, Some("blocked"))
            .unwrap();
        c.thread_archive(&gamma.thread_id).unwrap();
        c.thread_advance(&alpha.thread_id, "kick-off", None, None)
            .unwrap();
        let titles = |report: coral::ThreadStatusReport| -> Vec<(String, Vec<String>)> {
            let coral::ThreadStatusReport::Many(entries) = report else {
                panic!("{}: not an overview", b.name)
            };
            entries
                .into_iter()
                .map(|e| (e.thread.title, e.children))
                .collect()
        };
        let open = titles(c.thread_status(None, false, None).unwrap());
        assert_eq!(
            open,
            [
                ("Alpha launch".to_string(), vec![delta.thread_id.clone()]),
                ("delta docs".to_string(), vec![]),
                ("beta fixes".to_string(), vec![]),
            ],
            "{}",
            b.name
        );
        let all = titles(c.thread_status(None, true, Some("  alpha ")).unwrap());
        let names: Vec<&str> = all.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(names, ["Alpha launch", "gamma cleanup"], "{}", b.name);
        let one = c
            .thread_status(Some(&gamma.thread_id), false, None)
            .unwrap();
        assert_eq!(
            one.count(),
            1,
            "{}: an id answers whatever its status",
            b.name
        );
    }
}

#[test]
fn secrets_are_replaced_before_either_backend_stores_them() {
    for b in backends("secrets") {
        let c = &b.coral;
        let stored = c
            .insert_with(
                "the deploy key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
                at(0.0),
            )
            .unwrap();
        assert_eq!(stored.redacted.len(), 1, "{}", b.name);
        let m = c.get(stored.id()).unwrap().unwrap();
        assert!(
            !m.item.content.contains("sk-proj"),
            "{}: {}",
            b.name,
            m.item.content
        );
        let t = c
            .thread_create(
                "rotate sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
                None,
                None,
                None,
            )
            .unwrap();
        assert!(!t.title.contains("sk-proj"), "{}: {}", b.name, t.title);
    }
}

/// docs/postgres.md, "Tenancy": a tenant's calls never reach another tenant's rows, whatever
/// the call; the same text in two tenants is two memories.
#[test]
fn a_tenant_never_sees_another_tenants_rows() {
    let Some(url) = postgres_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (ta, tb) = (tenant("tenancy-a"), tenant("tenancy-b"));
    let a = open_postgres(&dir.path().join("a"), &url, &ta);
    let b = open_postgres(&dir.path().join("b"), &url, &tb);
    let secret = a
        .insert_with("tenant a's plan is to acquire the llama farm", at(0.0))
        .unwrap();
    let thread = a
        .thread_create("tenant a's thread", None, None, None)
        .unwrap();
    a.thread_advance(&thread.thread_id, "a step", None, None)
        .unwrap();

    assert!(search(&b, "llama farm plan", 10).is_empty());
    assert_eq!(b.get(secret.id()).unwrap(), None);
    assert!(!b.delete(secret.id()).unwrap());
    assert!(matches!(
        b.mark_important(secret.id(), 1.0),
        Err(Error::NotFound(_))
    ));
    assert!(b.export().unwrap().is_empty());
    assert_eq!(b.list(&ListQuery::default()).unwrap().total, 0);
    let stats = b.stats();
    assert_eq!((stats.total, stats.threads), (0, 0));
    assert_eq!(stats.tenant.as_deref(), Some(tb.as_str()));
    assert!(matches!(
        b.thread_status(Some(&thread.thread_id), false, None),
        Err(Error::ThreadNotFound(_))
    ));
    assert!(matches!(
        b.thread_advance(&thread.thread_id, "from b", None, None),
        Err(Error::ThreadNotFound(_))
    ));
    assert!(matches!(
        b.thread_create("child", None, Some(&thread.thread_id), None),
        Err(Error::ThreadNotFound(_))
    ));
    // The same text in b is b's own memory: inserted, not merged into a's.
    let own = b
        .insert_with("tenant a's plan is to acquire the llama farm", at(5.0))
        .unwrap();
    assert!(own.inserted());
    assert!(b.delete(own.id()).unwrap());
    // a is untouched by all of it.
    let m = a.get(secret.id()).unwrap().unwrap();
    assert_eq!(m.item.access_count, 1);
    assert_eq!(a.stats().total, 1);
    assert_eq!(
        a.thread_status(Some(&thread.thread_id), false, None)
            .unwrap()
            .views()[0]
            .step_count,
        1
    );
    // A config change by the operator cannot move a running Coral to another tenant.
    let mut moved = (*b.config()).clone();
    moved.storage.postgres_tenant = ta.clone();
    b.set_config(moved).unwrap();
    assert_eq!(b.config().storage.postgres_tenant, tb);
    assert!(b.get(secret.id()).unwrap().is_none());
}

/// An LLM that must never be asked (distillation is refused before it would be).
struct NoLlm;

impl coral_heat::Llm for NoLlm {
    fn summarize(&self, _texts: &[&str]) -> coral_heat::Result<String> {
        panic!("the postgres backend asked the LLM although it refuses distillation")
    }
}

/// What the database does not serve yet is refused by name, and nothing is written locally.
#[test]
fn unsupported_operations_say_so() {
    let Some(url) = postgres_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let c = open_postgres(dir.path(), &url, &tenant("unsupported"));
    let notice = c.notices().join("\n");
    assert!(
        notice.contains("applied per tenant") && notice.contains("distillation"),
        "{notice}"
    );
    let refusals: Vec<(&str, Error)> = vec![
        ("coral report", c.report().unwrap_err()),
        ("coral reembed", c.reembed(|_, _| {}).unwrap_err()),
        (
            "distillation",
            c.distill_with(&NoLlm, 1_775_000_000.0).unwrap_err(),
        ),
        ("the threads file", c.threads().unwrap_err()),
        (
            "coral import",
            c.import_python_dir(dir.path(), |_, _| {}).unwrap_err(),
        ),
    ];
    for (what, e) in refusals {
        let message = e.to_string();
        assert!(
            matches!(
                e,
                Error::Unsupported {
                    backend: "postgres",
                    ..
                }
            ),
            "{what}: {message}"
        );
        assert!(message.contains(what), "{what}: {message}");
        assert!(message.contains("postgres backend"), "{what}: {message}");
    }
    let e = c.timeline().unwrap_err().to_string();
    assert!(
        e.contains("the timeline") && e.contains("postgres backend"),
        "{e}"
    );
    let mut weighted = (*c.config()).clone();
    weighted.retrieval.mode = coral::RetrievalMode::Weighted;
    c.set_config(weighted).unwrap();
    let e = c.search("anything", 3).unwrap_err().to_string();
    assert!(e.contains("retrieval.mode = \"weighted\""), "{e}");
    // No memory files appeared in the data directory.
    let data = dir.path().join("memory_data");
    let files: Vec<String> = std::fs::read_dir(&data)
        .map(|rd| {
            rd.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        files
            .iter()
            .all(|f| !f.contains("warm") && !f.contains("wal")),
        "{files:?}"
    );
    assert_eq!(c.disk_usage().total_bytes, 0);
}

/// A server that is not there fails the open within the connect timeout, naming it.
#[test]
fn an_unreachable_server_fails_the_open_clearly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://coral:hunter2@127.0.0.1:{port}/coral");
    let e = match common::try_open_postgres(dir.path(), &url, "team-a") {
        Ok(_) => panic!("opened a closed port"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    assert!(e.contains("cannot reach postgres"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
}

/// Another model of the same dimension: the hash embedder's vectors under another name (a
/// stand-in for switching between two models of one size).
struct Renamed(HashEmbedder);

impl coral::Embedder for Renamed {
    fn name(&self) -> &str {
        "another-model"
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, coral_embed::Error> {
        self.0.embed(texts)
    }
}

/// Vectors another embedder made are never scored against a query (docs/embeddings.md,
/// "Changing models"): keywords still find the memory, its vector gives nothing.
#[test]
fn another_embedders_vectors_are_not_scored() {
    let Some(url) = postgres_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let shared = tenant("embedders");
    let hash = open_postgres(&dir.path().join("a"), &url, &shared);
    let stored = hash
        .insert_with("the lighthouse keeper logs the fog every night", at(0.0))
        .unwrap();
    let own = search(&hash, "lighthouse fog", 1);
    assert!(own[0].scores.vector > 0.0, "{:?}", own[0].scores);

    let mut config = (*hash.config()).clone();
    config.base_dir = dir.path().join("b");
    let other = Coral::open_with(
        config,
        std::sync::Arc::new(Renamed(HashEmbedder::new(common::DIM).unwrap())),
    )
    .unwrap();
    let hits = search(&other, "lighthouse fog", 1);
    assert_eq!(hits[0].item.item_id, stored.id());
    assert_eq!(hits[0].scores.vector, 0.0, "{:?}", hits[0].scores);
    assert!(hits[0].scores.bm25.unwrap() > 0.0);
}

//! Tiers and governance on both backends (docs/postgres.md, "Tiers and governance"): tier
//! moves by TTL and least-recent use, the cold filter of a search, capacity eviction to the
//! archive and its order, the project quota, the cold trim, the disk quota, and the guard
//! that holds a bulk removal until it is confirmed. Each expectation is written out, not
//! only compared between the backends.

use std::collections::BTreeSet;

use coral::{ConfigChange, Coral, InsertOptions, SearchOptions, Tier};
use serde_json::json;

use crate::T0;
use crate::common::{backends, postgres_url, tenant};

/// Distinct words, so that no two test memories are near duplicates.
const WORDS: &[&str] = &[
    "amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
    "kelp", "lagoon", "marble", "nectar", "onyx", "pepper", "quartz", "raven", "saffron", "tundra",
    "umber", "velvet", "willow", "xenon", "yarrow", "zephyr", "acorn", "basalt", "cedar", "dune",
    "eddy", "flint", "grove", "heath", "islet", "jasper", "knoll", "larch", "moss", "nook",
];

fn text(i: usize, common: &str) -> String {
    let w = |n: usize| WORDS[n % WORDS.len()];
    format!(
        "{common} note {i}: {} {} {} {}",
        w(i),
        w(i * 7 + 3),
        w(i * 13 + 5),
        w(i * 3 + 11)
    )
}

/// Changes the configuration in force (a Rust caller's change: applied whatever it removes).
fn configure(coral: &Coral, change: impl FnOnce(&mut coral::Config)) {
    let mut config = (*coral.config()).clone();
    change(&mut config);
    coral.set_config(config).unwrap();
}

/// Limits that never move or remove anything unless a test lowers them.
fn roomy(c: &mut coral::Config) {
    c.memory.hot_ttl_hours = 1e6;
    c.memory.max_hot_entries = 1_000;
    c.memory.max_warm_entries = 1_000;
    c.memory.max_cold_entries = 1_000;
    c.memory.capacity_threshold = 1_000;
}

/// Inserts memory `i` at `T0 + offset` (its creation time and governance's clock).
fn insert(
    coral: &Coral,
    content: &str,
    offset: f64,
    importance: f64,
    project: Option<&str>,
) -> String {
    let inserted = coral
        .insert_with(
            content,
            InsertOptions {
                importance,
                project: project.map(String::from),
                timestamp: Some(T0 + offset),
                now: Some(T0 + offset),
            },
        )
        .unwrap();
    match inserted.outcome {
        coral::InsertOutcome::Inserted(item) => item.item_id,
        other => panic!("{content}: expected a new memory, got {other:?}"),
    }
}

fn tier(coral: &Coral, id: &str) -> Option<Tier> {
    coral.get(id).unwrap().map(|m| m.tier)
}

fn ids_where(coral: &Coral, ids: &[String], want: Option<Tier>) -> Vec<usize> {
    ids.iter()
        .enumerate()
        .filter(|(_, id)| tier(coral, id) == want)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn tiers_move_by_ttl_and_least_recent_use_alike() {
    for b in backends("tiers") {
        let c = &b.coral;
        configure(c, |c| {
            roomy(c);
            c.memory.hot_ttl_hours = 1.0;
            c.memory.max_hot_entries = 3;
            c.memory.max_warm_entries = 2;
        });
        // Eight memories a minute apart: the newest three stay hot; the hot tier's overflow,
        // least recently used first, goes straight to cold (warm takes what the TTL moves).
        let mut ids: Vec<String> = (0..8)
            .map(|i| insert(c, &text(i, "tiers"), 60.0 * i as f64, 0.5, None))
            .collect();
        assert_eq!(ids_where(c, &ids, Some(Tier::Hot)), [5, 6, 7], "{}", b.name);
        assert!(
            ids_where(c, &ids, Some(Tier::Warm)).is_empty(),
            "{}",
            b.name
        );
        assert_eq!(
            ids_where(c, &ids, Some(Tier::Cold)),
            [0, 1, 2, 3, 4],
            "{}",
            b.name
        );
        // Two hours later every hot memory is past its TTL and goes warm; warm keeps its two
        // most recently used, the rest go cold.
        ids.push(insert(c, &text(8, "tiers"), 7_200.0, 0.5, None));
        assert_eq!(ids_where(c, &ids, Some(Tier::Hot)), [8], "{}", b.name);
        assert_eq!(ids_where(c, &ids, Some(Tier::Warm)), [6, 7], "{}", b.name);
        assert_eq!(
            ids_where(c, &ids, Some(Tier::Cold)),
            [0, 1, 2, 3, 4, 5],
            "{}",
            b.name
        );
        let stats = c.stats();
        assert_eq!((stats.hot, stats.warm, stats.cold), (1, 2, 6), "{}", b.name);
        // A near duplicate of a cold memory is not merged into it (only hot and warm are).
        let again = c
            .insert_with(
                &text(0, "tiers"),
                InsertOptions {
                    timestamp: Some(T0 + 7_300.0),
                    now: Some(T0 + 7_300.0),
                    ..InsertOptions::default()
                },
            )
            .unwrap();
        assert!(
            matches!(&again.outcome, coral::InsertOutcome::Merged(id) if *id == ids[0]),
            "{}: the same id merges whatever its tier: {:?}",
            b.name,
            again.outcome
        );
    }
}

fn uncounted(coral: &Coral, query: &str, k: usize) -> Vec<String> {
    coral
        .search_uncounted(
            query,
            SearchOptions {
                top_k: Some(k),
                now: Some(T0 + 3_600.0),
                ..SearchOptions::default()
            },
        )
        .unwrap()
        .into_iter()
        .map(|h| h.item.item_id)
        .collect()
}

fn positions(ids: &[String], found: &[String]) -> BTreeSet<usize> {
    found
        .iter()
        .map(|f| ids.iter().position(|i| i == f).expect("a known id"))
        .collect()
}

#[test]
fn the_cold_filter_is_applied_and_still_returns_k_rows() {
    for b in backends("cold-filter") {
        let c = &b.coral;
        configure(c, |c| {
            roomy(c);
            c.memory.max_hot_entries = 5;
        });
        let ids: Vec<String> = (0..12)
            .map(|i| insert(c, &text(i, "zebra"), 60.0 * i as f64, 0.5, None))
            .collect();
        assert_eq!(c.stats().cold, 7, "{}", b.name);
        let all: BTreeSet<usize> = (0..12).collect();
        assert_eq!(
            positions(&ids, &uncounted(c, "zebra", 12)),
            all,
            "{}",
            b.name
        );

        configure(c, |c| c.retrieval.include_cold = false);
        let warm_and_hot: BTreeSet<usize> = (7..12).collect();
        assert_eq!(
            positions(&ids, &uncounted(c, "zebra", 5)),
            warm_and_hot,
            "{}: k rows, none cold",
            b.name
        );
        assert_eq!(
            positions(&ids, &uncounted(c, "zebra", 10)),
            warm_and_hot,
            "{}",
            b.name
        );

        // Only the two newest cold memories are searched beside the others.
        configure(c, |c| {
            c.retrieval.include_cold = true;
            c.memory.cold_scan_lines = 2;
        });
        let newest: BTreeSet<usize> = (5..12).collect();
        assert_eq!(
            positions(&ids, &uncounted(c, "zebra", 10)),
            newest,
            "{}",
            b.name
        );
        // More lines than cold memories: every one.
        configure(c, |c| c.memory.cold_scan_lines = 50);
        assert_eq!(
            positions(&ids, &uncounted(c, "zebra", 12)),
            all,
            "{}",
            b.name
        );
    }
}

#[test]
fn capacity_evicts_the_coolest_to_the_archive_alike() {
    for b in backends("capacity") {
        let c = &b.coral;
        configure(c, |c| {
            roomy(c);
            c.memory.capacity_threshold = 10;
            c.memory.governance_headroom = 2;
        });
        let low = [2, 5, 8];
        let ids: Vec<String> = (0..13)
            .map(|i| {
                let importance = if low.contains(&i) { 0.0 } else { 0.9 };
                insert(c, &text(i, "capacity"), 60.0 * i as f64, importance, None)
            })
            .collect();
        // 13 passes 10 + 2: back to exactly 10, the three unimportant ones archived.
        assert_eq!(c.stats().total, 10, "{}", b.name);
        for (i, id) in ids.iter().enumerate() {
            let archived = c.get_archived(id).unwrap();
            if low.contains(&i) {
                assert!(c.get(id).unwrap().is_none(), "{}: {i} still there", b.name);
                let item = archived.unwrap_or_else(|| panic!("{}: {i} not archived", b.name));
                assert_eq!(item.content, text(i, "capacity"), "{}", b.name);
                assert_eq!(item.importance, 0.0, "{}", b.name);
            } else {
                assert!(c.get(id).unwrap().is_some(), "{}: {i} gone", b.name);
                assert!(archived.is_none(), "{}: {i} archived", b.name);
            }
        }
        // A lower capacity evicts at once, the least recently used first when all else is
        // equal.
        configure(c, |c| {
            c.memory.capacity_threshold = 8;
            c.memory.governance_headroom = 1;
        });
        assert_eq!(c.stats().total, 8, "{}", b.name);
        for i in [0, 1] {
            assert!(c.get(&ids[i]).unwrap().is_none(), "{}: {i}", b.name);
            assert!(
                c.get_archived(&ids[i]).unwrap().is_some(),
                "{}: {i}",
                b.name
            );
        }
        assert!(c.get(&ids[3]).unwrap().is_some(), "{}", b.name);
        assert!(c.get_archived("0123456789abcdef").unwrap().is_none());
    }
}

#[test]
fn a_project_quota_archives_its_coolest_and_spares_shared_memories() {
    for b in backends("project-quota") {
        let c = &b.coral;
        configure(c, |c| {
            roomy(c);
            c.memory.project_quota = 10;
        });
        let shared: Vec<String> = (0..3)
            .map(|i| insert(c, &text(100 + i, "shared"), i as f64, 0.0, None))
            .collect();
        // The quota's headroom is 10: the 21st memory of the project brings it back to 10.
        let ids: Vec<String> = (0..21)
            .map(|i| {
                insert(
                    c,
                    &text(i, "alpha"),
                    10.0 + 60.0 * i as f64,
                    0.5,
                    Some("alpha"),
                )
            })
            .collect();
        let gone: Vec<usize> = ids_where(c, &ids, None);
        assert_eq!(gone, (0..11).collect::<Vec<_>>(), "{}", b.name);
        for i in gone {
            assert!(
                c.get_archived(&ids[i]).unwrap().is_some(),
                "{}: {i}",
                b.name
            );
        }
        for id in &shared {
            assert!(c.get(id).unwrap().is_some(), "{}", b.name);
        }
        assert_eq!(c.stats().total, 13, "{}", b.name);
    }
}

#[test]
fn the_cold_tier_is_trimmed_to_its_limit_alike() {
    for b in backends("cold-trim") {
        let c = &b.coral;
        configure(c, |c| {
            roomy(c);
            c.memory.max_hot_entries = 1;
            c.memory.max_warm_entries = 1;
            c.memory.max_cold_entries = 10;
        });
        // Cold passes 10 + its headroom of 10 at the 22nd memory (21 cold): back to 10; the
        // 23rd sends one more cold.
        let ids: Vec<String> = (0..23)
            .map(|i| insert(c, &text(i, "trim"), 60.0 * i as f64, 0.5, None))
            .collect();
        assert_eq!(
            ids_where(c, &ids, None),
            (0..11).collect::<Vec<_>>(),
            "{}",
            b.name
        );
        assert_eq!(
            ids_where(c, &ids, Some(Tier::Cold)),
            (11..22).collect::<Vec<_>>(),
            "{}",
            b.name
        );
        assert!(c.get_archived(&ids[0]).unwrap().is_some(), "{}", b.name);
    }
}

#[test]
fn the_disk_quota_deletes_the_coolest_cold_memories_alike() {
    let mut usages = Vec::new();
    let mut removed_ids = Vec::new();
    for b in backends("disk-quota") {
        let c = &b.coral;
        configure(c, |c| {
            roomy(c);
            c.memory.max_hot_entries = 3;
        });
        let ids: Vec<String> = (0..12)
            .map(|i| insert(c, &text(i, "quota"), 60.0 * i as f64, 0.5, None))
            .collect();
        let before = c.disk_usage().quota_bytes;
        assert!(before > 12 * 64 * 4, "{}: {before}", b.name);
        usages.push(before);
        let cold_before = ids_where(c, &ids, Some(Tier::Cold));
        assert_eq!(cold_before, (0..9).collect::<Vec<_>>(), "{}", b.name);
        configure(c, |c| c.storage.max_bytes = before - 1);
        let after = c.disk_usage();
        let target = (0.85 * (before - 1) as f64).floor() as u64;
        assert!(
            after.quota_bytes <= target,
            "{}: {} above {target}",
            b.name,
            after.quota_bytes
        );
        let gone = ids_where(c, &ids, None);
        assert!(!gone.is_empty(), "{}", b.name);
        // The coolest cold ones (all else equal: the least recently used), deleted, not
        // archived; nothing hot or warm.
        assert_eq!(gone, (0..gone.len()).collect::<Vec<_>>(), "{}", b.name);
        for &i in &gone {
            assert!(
                c.get_archived(&ids[i]).unwrap().is_none(),
                "{}: {i}",
                b.name
            );
        }
        let stats = c.stats();
        assert_eq!(
            stats.governance.quota_removed,
            gone.len() as u64,
            "{}",
            b.name
        );
        assert!(stats.governance.disk_warning.is_some(), "{}", b.name);
        removed_ids.push(gone);
    }
    // The same bytes counted, the same memories removed, on both backends.
    if usages.len() == 2 {
        assert_eq!(usages[0], usages[1]);
        assert_eq!(removed_ids[0], removed_ids[1]);
    }
}

/// A config file for `backend` in `dir` (postgres: `tenant` at `url`).
fn config_file(dir: &std::path::Path, postgres: Option<(&str, &str)>) -> std::path::PathBuf {
    write_config_file(dir, postgres, json!({}))
}

/// [`config_file`] with `memory` as its memory section, read again at every call.
fn write_config_file(
    dir: &std::path::Path,
    postgres: Option<(&str, &str)>,
    memory: serde_json::Value,
) -> std::path::PathBuf {
    let path = dir.join("coral_config.json");
    let mut config = json!({
        "embedding": {"embedder": "hash"},
        "storage": {"sync": "never"},
        "reload": {"check_interval_seconds": 0.0},
        "memory": memory,
    });
    if let Some((url, tenant)) = postgres {
        config["storage"] = json!({"sync": "never", "backend": "postgres",
            "postgres_url": url, "postgres_tenant": tenant});
    }
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

#[test]
fn a_bulk_removal_waits_for_confirmation_alike() {
    let url = postgres_url();
    let mut setups: Vec<(&str, Option<(String, String)>)> = vec![("local", None)];
    if let Some(url) = &url {
        setups.push(("postgres", Some((url.clone(), tenant("guard")))));
    }
    for (name, pg) in setups {
        let dir = tempfile::tempdir().unwrap();
        let path = config_file(
            dir.path(),
            pg.as_ref().map(|(u, t)| (u.as_str(), t.as_str())),
        );
        let c = Coral::open(&path).unwrap();
        assert_eq!(c.backend(), name);
        let ids: Vec<String> = (0..30)
            .map(|i| insert(&c, &text(i, "guard"), 60.0 * i as f64, 0.5, None))
            .collect();
        // A tool's change that would remove every memory at once is not made.
        let change = c
            .config_set_by_tool("memory.capacity_threshold", json!(0), false)
            .unwrap();
        let ConfigChange::NeedsConfirmation(preview) = change else {
            panic!("{name}: a bulk removal was made without confirmation: {change:?}");
        };
        assert_eq!(preview.would_remove, 30, "{name}: {preview:?}");
        assert_eq!(preview.by_reason.get("evicted"), Some(&30), "{name}");
        assert!(preview.in_bulk(), "{name}");
        assert_eq!(c.stats().total, 30, "{name}");
        assert_ne!(c.config().memory.capacity_threshold, 0, "{name}");
        let (now, held) = c.removal_preview().unwrap();
        assert_eq!(now.would_remove, 0, "{name}: {now:?}");
        assert!(held.is_none(), "{name}");
        // Confirmed, it is.
        let change = c
            .config_set_by_tool("memory.capacity_threshold", json!(0), true)
            .unwrap();
        assert!(
            matches!(change, ConfigChange::Done(_)),
            "{name}: {change:?}"
        );
        assert_eq!(c.stats().total, 0, "{name}");
        for id in &ids {
            assert!(c.get_archived(id).unwrap().is_some(), "{name}");
        }
    }
}

/// A config file edited behind a running Coral that would remove every memory is held: the
/// removal preview and the stats say so, nothing is removed, and `confirm_removals` (`coral
/// govern --confirm`) applies it.
#[test]
fn an_edited_limit_is_held_until_confirmed_alike() {
    let url = postgres_url();
    let mut setups: Vec<(&str, Option<(String, String)>)> = vec![("local", None)];
    if let Some(url) = &url {
        setups.push(("postgres", Some((url.clone(), tenant("held")))));
    }
    for (name, pg) in setups {
        let dir = tempfile::tempdir().unwrap();
        let pg = pg.as_ref().map(|(u, t)| (u.as_str(), t.as_str()));
        let path = write_config_file(dir.path(), pg, json!({}));
        let c = Coral::open(&path).unwrap();
        let ids: Vec<String> = (0..30)
            .map(|i| insert(&c, &text(i, "held"), 60.0 * i as f64, 0.5, None))
            .collect();
        write_config_file(dir.path(), pg, json!({"capacity_threshold": 0}));
        let (preview, held) = c.removal_preview().unwrap();
        assert_eq!(preview.would_remove, 30, "{name}: {preview:?}");
        let held = held.unwrap_or_else(|| panic!("{name}: the edit was not held"));
        assert_eq!(held.preview.would_remove, 30, "{name}");
        assert!(
            held.preview
                .changes
                .iter()
                .any(|c| c.starts_with("memory.capacity_threshold")),
            "{name}: {:?}",
            held.preview.changes
        );
        assert_eq!(
            c.stats().total,
            30,
            "{name}: removed before the confirmation"
        );
        assert!(c.stats().governance.held.is_some(), "{name}");
        let done = c.confirm_removals().unwrap();
        assert_eq!((done.before, done.after), (30, 0), "{name}: {done:?}");
        assert_eq!(done.preview.map(|p| p.would_remove), Some(30), "{name}");
        assert_eq!(c.stats().total, 0, "{name}");
        assert!(c.stats().governance.held.is_none(), "{name}");
        assert!(c.get_archived(&ids[29]).unwrap().is_some(), "{name}");
    }
}

/// The guard's record is the tenant's: a process whose limits would remove in bulk is held by
/// the limits another process accepted, and its confirmation holds for every process.
#[test]
fn the_guard_is_shared_by_the_processes_of_a_tenant() {
    let Some(url) = postgres_url() else {
        return;
    };
    let shared = tenant("guard-shared");
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Some((url.as_str(), shared.as_str()));
    let a = Coral::open(write_config_file(a_dir.path(), pg, json!({}))).unwrap();
    let ids: Vec<String> = (0..30)
        .map(|i| insert(&a, &text(i, "shared guard"), 60.0 * i as f64, 0.5, None))
        .collect();
    // B starts with a capacity of 0: A's accepted limits hold it back.
    let b = Coral::open(write_config_file(
        b_dir.path(),
        pg,
        json!({"capacity_threshold": 0}),
    ))
    .unwrap();
    insert(&b, &text(30, "shared guard"), 1_800.0, 0.5, None);
    assert_eq!(b.stats().total, 31);
    let held = b.stats().governance.held.expect("b's limits are held");
    assert!(held.contains("memory.capacity_threshold"), "{held}");
    // Confirmed in B, the new limits are the tenant's: every memory goes to the archive.
    let done = b.confirm_removals().unwrap();
    assert_eq!((done.before, done.after), (31, 0), "{done:?}");
    assert_eq!(a.stats().total, 0);
    assert!(a.get_archived(&ids[0]).unwrap().is_some());
    let (preview, held) = a.removal_preview().unwrap();
    assert!(
        preview
            .changes
            .iter()
            .any(|c| c.starts_with("memory.capacity_threshold 0 →")),
        "a sees b's accepted limits: {preview:?}"
    );
    assert!(held.is_none());
}

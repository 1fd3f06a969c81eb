//! Model test of `Store` against a `BTreeMap` under random operations (in the manner of redb's
//! `fuzz_redb.rs`), plus journal-recovery tests for a torn tail and a damaged middle record.
//!
//! The model says what the store must hold after every step: the same ids, tiers, item fields
//! and vectors (bit for bit), the same archive, and the same state again after a reopen from the
//! journal alone, from a checkpoint, or from a checkpoint plus a journal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use coral_store::{
    Error, Item, Record, Store, StoreOptions, StorePaths, SyncPolicy, Tier, tiebreak_key,
};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{Map, Value};

const DIM: usize = 4;

/// Ids the operations draw from: few, so that upserts and operations on deleted ids are common.
/// Hex ids order by value; the others take the hashed tie-break path.
const IDS: [&str; 6] = [
    "00000000000000a1",
    "0123456789abcdef",
    "ffffffffffffffff",
    "id-not-hex",
    "记忆-2",
    "00000000000000a2",
];

/// A deterministic stand-in for the token bitmap: any function of the content will do, as long
/// as the test can recompute it.
fn features(text: &str) -> [u64; 32] {
    let mut map = [0u64; 32];
    for (i, b) in text.bytes().enumerate() {
        map[(usize::from(b) + i) % 32] ^= 1u64 << (u32::from(b) % 64);
    }
    map
}

fn options(wal_max_bytes: u64) -> StoreOptions {
    StoreOptions {
        dim: DIM,
        sync: SyncPolicy::Never,
        wal_max_bytes,
        features: Arc::new(features),
    }
}

fn open(dir: &Path, wal_max_bytes: u64) -> Store {
    Store::open(StorePaths::in_dir(dir), options(wal_max_bytes)).expect("store opens")
}

// ---------------------------------------------------------------------------------------------
// The model.

/// What a failed commit must have been rejected for.
#[derive(Debug, PartialEq)]
enum Rejection {
    Invalid,
    Unknown,
}

#[derive(Clone, Debug, Default)]
struct Model {
    /// Live items: tier, item, vector (empty = none).
    live: BTreeMap<String, (Tier, Item, Vec<f32>)>,
    /// What `Store::archived` must return for each archived id.
    archive: BTreeMap<String, Item>,
}

fn item_is_valid(item: &Item) -> bool {
    !item.item_id.is_empty()
        && !item.content.trim().is_empty()
        && item.timestamp.is_finite()
        && item.last_access.is_finite()
        && item.importance.is_finite()
        && (0.0..=1.0).contains(&item.importance)
        && item.project.as_deref().is_none_or(|p| !p.trim().is_empty())
}

impl Model {
    /// Validate a batch as a whole: every record well-formed, every id either live before the
    /// batch or put earlier in it.
    fn validate(&self, records: &[Record]) -> Result<(), Rejection> {
        let mut added: Vec<&str> = Vec::new();
        for (i, r) in records.iter().enumerate() {
            match r {
                Record::Begin { .. } => return Err(Rejection::Invalid),
                Record::Put { item, vector, .. } => {
                    let dim_ok = vector.is_empty() || vector.len() == DIM;
                    if !item_is_valid(item) || !dim_ok || vector.iter().any(|v| !v.is_finite()) {
                        return Err(Rejection::Invalid);
                    }
                    added.push(&item.item_id);
                }
                other => {
                    let id = other.id().expect("non-begin records name an id");
                    if !self.live.contains_key(id) && !added.contains(&id) {
                        return Err(Rejection::Unknown);
                    }
                    // An archive must be the first record about its id in a batch: its entry
                    // is written before the batch applies.
                    if matches!(other, Record::Archive { .. })
                        && records[..i].iter().any(|e| e.id() == Some(id))
                    {
                        return Err(Rejection::Invalid);
                    }
                    let ok = match other {
                        Record::Touch { last_access, .. } => last_access.is_finite(),
                        Record::Importance { importance, .. } => {
                            importance.is_finite() && (0.0..=1.0).contains(importance)
                        }
                        Record::Archive { at, .. } => at.is_finite(),
                        _ => true,
                    };
                    if !ok {
                        return Err(Rejection::Invalid);
                    }
                }
            }
        }
        Ok(())
    }

    /// Apply a valid batch in order; records about ids that are gone by then are no-ops.
    fn apply(&mut self, records: &[Record]) {
        for r in records {
            match r.clone() {
                Record::Begin { .. } => unreachable!("rejected by validate"),
                Record::Put { tier, item, vector } => {
                    self.live.insert(item.item_id.clone(), (tier, item, vector));
                }
                Record::Touch {
                    id,
                    access_count,
                    last_access,
                } => {
                    if let Some((_, item, _)) = self.live.get_mut(&id) {
                        item.access_count = access_count;
                        item.last_access = last_access;
                    }
                }
                Record::Importance { id, importance } => {
                    if let Some((_, item, _)) = self.live.get_mut(&id) {
                        item.importance = importance;
                    }
                }
                Record::Move { id, tier } => {
                    if let Some((t, _, _)) = self.live.get_mut(&id) {
                        *t = tier;
                    }
                }
                Record::Delete { id } => {
                    self.live.remove(&id);
                }
                Record::Archive {
                    id,
                    reason,
                    summary_id,
                    at,
                } => {
                    if let Some((_, mut item, _)) = self.live.remove(&id) {
                        item.extra.insert("archive_reason".into(), reason.into());
                        item.extra.insert("archived_at".into(), at.into());
                        if let Some(s) = summary_id {
                            item.extra.insert("summary_id".into(), s.into());
                        }
                        self.archive.insert(id, item);
                    }
                }
            }
        }
    }
}

/// Assert that the store holds exactly what the model says, down to the vector bits and the
/// alignment of the pool's parallel arrays.
fn assert_same(store: &Store, model: &Model, context: &str) {
    let pool = store.pool();
    assert_eq!(pool.len(), model.live.len(), "{context}: pool size");
    let mut per_tier = [0usize; 3];
    for (id, (tier, item, vector)) in &model.live {
        per_tier[tier.index()] += 1;
        let (got, got_tier) = store
            .get(id)
            .unwrap_or_else(|| panic!("{context}: {id} is missing"));
        assert_eq!(got, item, "{context}: item {id}");
        assert_eq!(got_tier, *tier, "{context}: tier of {id}");
        let row = pool.row(id).expect("get found it");
        let expected: Vec<u32> = if vector.is_empty() {
            vec![0f32.to_bits(); DIM]
        } else {
            vector.iter().map(|v| v.to_bits()).collect()
        };
        let got_bits: Vec<u32> = pool
            .vector(row)
            .to_dense(DIM)
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got_bits, expected, "{context}: vector of {id}");
        assert_eq!(
            pool.missing_vectors().contains(row),
            vector.is_empty(),
            "{context}: missing-vector flag of {id}"
        );
        let r = row as usize;
        assert_eq!(
            pool.timestamps()[r].to_bits(),
            item.timestamp.to_bits(),
            "{context}: {id}"
        );
        assert_eq!(
            pool.bitmaps()[r],
            features(&item.content),
            "{context}: bitmap of {id}"
        );
        assert_eq!(
            pool.tiebreaks()[r],
            tiebreak_key(id),
            "{context}: tiebreak of {id}"
        );
        assert!(
            pool.tier_rows(*tier).contains(row),
            "{context}: tier rows of {id}"
        );
    }
    let counts = store.counts();
    assert_eq!(
        [counts.hot, counts.warm, counts.cold],
        per_tier,
        "{context}: counts per tier"
    );
    match (pool.dense_vectors(), pool.sparse_vectors()) {
        (Some(m), None) => assert_eq!(m.len(), model.live.len() * DIM, "{context}: matrix size"),
        (None, Some(s)) => assert_eq!(s.len(), model.live.len(), "{context}: sparse rows"),
        _ => panic!("{context}: the vectors are held in exactly one form"),
    }
    for id in IDS {
        let archived = store.archived(id).expect("archive reads");
        assert_eq!(
            archived.as_ref(),
            model.archive.get(id),
            "{context}: archived {id}"
        );
    }
    let on_disk = std::fs::metadata(&store.paths().wal)
        .map(|m| m.len())
        .unwrap_or(0);
    assert_eq!(
        on_disk,
        store.journal_bytes(),
        "{context}: journal length on disk"
    );
}

// ---------------------------------------------------------------------------------------------
// Random operations.

#[derive(Clone, Copy, Debug)]
enum Reopen {
    /// Drop without a checkpoint: the journal alone restores everything.
    Drop,
    /// Checkpoint, then drop: the files alone (plus an empty journal).
    CheckpointThenDrop,
    /// `Store::close` (a checkpoint on the way out).
    Close,
}

#[derive(Clone, Debug)]
enum Step {
    Commit(Vec<Record>),
    Checkpoint,
    Reopen(Reopen),
    /// Hold the vectors sparse (`true`) or dense: nothing observable may change.
    Compact(bool),
}

fn id() -> impl Strategy<Value = String> {
    prop::sample::select(IDS.to_vec()).prop_map(String::from)
}

fn tier() -> impl Strategy<Value = Tier> {
    prop::sample::select(Tier::ALL.to_vec())
}

/// Finite floats with the awkward ones well represented.
fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(5e-324),
        Just(f64::MAX),
        Just(1.7e9),
        -1e10..1e10f64,
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
    ]
}

fn finite_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::MIN_POSITIVE / 2.0),
        -1.0..1.0f32,
        any::<f32>().prop_filter("finite", |f| f.is_finite()),
    ]
}

fn unit() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0f64]
}

fn extra() -> impl Strategy<Value = Map<String, Value>> {
    let value = prop_oneof![
        "(?s).{0,6}".prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        (-1e6..1e6f64).prop_map(Value::from),
    ];
    prop::collection::vec(
        (prop::sample::select(vec!["zz_note", "source"]), value),
        0..3,
    )
    .prop_map(|kv| kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn item() -> impl Strategy<Value = Item> {
    let content = ("[a-zA-Z0-9咖啡\"\\\\]", "(?s).{0,16}").prop_map(|(a, b)| a + &b);
    let project = prop_oneof![
        Just(None),
        Just(Some("alpha".to_string())),
        Just(Some("项目".into())),
        Just(Some(" ".into()))
    ];
    (
        (id(), content, finite_f64(), finite_f64()),
        (any::<u64>(), any::<u64>(), unit(), project, extra()),
    )
        .prop_map(
            |((item_id, content, timestamp, last_access), (tc, ac, importance, project, extra))| {
                Item {
                    item_id,
                    content,
                    timestamp,
                    last_access,
                    token_count: tc,
                    access_count: ac,
                    importance,
                    project,
                    extra,
                }
            },
        )
}

/// Ways to make a put invalid.
#[derive(Clone, Copy, Debug)]
enum Spoil {
    BlankContent,
    EmptyId,
    NanTimestamp,
    InfLastAccess,
    ImportanceAboveOne,
    NegativeImportance,
    NanImportance,
    ShortVector,
    NanVector,
}

fn spoil(item: &mut Item, vector: &mut Vec<f32>, how: Spoil) {
    match how {
        Spoil::BlankContent => item.content = " \n\t ".into(),
        Spoil::EmptyId => item.item_id = String::new(),
        Spoil::NanTimestamp => item.timestamp = f64::NAN,
        Spoil::InfLastAccess => item.last_access = f64::INFINITY,
        Spoil::ImportanceAboveOne => item.importance = 1.5,
        Spoil::NegativeImportance => item.importance = -0.1,
        Spoil::NanImportance => item.importance = f64::NAN,
        Spoil::ShortVector => *vector = vec![0.5; DIM - 1],
        Spoil::NanVector => *vector = vec![0.5, f32::NAN, 0.0, 0.0],
    }
}

fn put() -> impl Strategy<Value = Record> {
    let vector = prop_oneof![
        1 => Just(Vec::new()),
        4 => prop::collection::vec(finite_f32(), DIM),
    ];
    let spoiled = prop::option::weighted(
        0.1,
        prop::sample::select(vec![
            Spoil::BlankContent,
            Spoil::EmptyId,
            Spoil::NanTimestamp,
            Spoil::InfLastAccess,
            Spoil::ImportanceAboveOne,
            Spoil::NegativeImportance,
            Spoil::NanImportance,
            Spoil::ShortVector,
            Spoil::NanVector,
        ]),
    );
    (tier(), item(), vector, spoiled).prop_map(|(tier, mut item, mut vector, how)| {
        if let Some(how) = how {
            spoil(&mut item, &mut vector, how);
        }
        Record::Put { tier, item, vector }
    })
}

fn record() -> impl Strategy<Value = Record> {
    let bad_time = prop_oneof![
        9 => finite_f64(),
        1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY]),
    ];
    let importance = prop_oneof![
        9 => unit(),
        1 => prop::sample::select(vec![f64::NAN, 1.000_001, -0.5, f64::INFINITY]),
    ];
    let reason = prop::sample::select(vec!["evicted", "trimmed", "distilled"]);
    prop_oneof![
        6 => put(),
        3 => (id(), any::<u64>(), bad_time).prop_map(|(id, access_count, last_access)| {
            Record::Touch { id, access_count, last_access }
        }),
        2 => (id(), importance).prop_map(|(id, importance)| Record::Importance { id, importance }),
        2 => (id(), tier()).prop_map(|(id, tier)| Record::Move { id, tier }),
        2 => id().prop_map(|id| Record::Delete { id }),
        2 => (id(), reason, prop::option::of(id()), finite_f64()).prop_map(
            |(id, reason, summary_id, at)| Record::Archive {
                id,
                reason: reason.into(),
                summary_id,
                at,
            }
        ),
        1 => any::<u64>().prop_map(|generation| Record::Begin { generation }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        16 => prop::collection::vec(record(), 1..4)
            .prop_map(Step::Commit),
        1 => Just(Step::Checkpoint),
        1 => any::<bool>().prop_map(Step::Compact),
        1 => Just(Step::Reopen(Reopen::Drop)),
        1 => Just(Step::Reopen(Reopen::CheckpointThenDrop)),
        1 => Just(Step::Reopen(Reopen::Close)),
    ]
}

fn run(steps: &[Step], wal_max_bytes: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = open(dir.path(), wal_max_bytes);
    let mut model = Model::default();
    assert_same(&store, &model, "fresh store");
    for (i, step) in steps.iter().enumerate() {
        let context = format!("step {i} ({step:?})");
        match step {
            Step::Commit(records) => {
                let before = store.journal_bytes();
                let generation = store.generation();
                let expected = model.validate(records);
                let got = store.commit(records.clone());
                match (&expected, &got) {
                    (Ok(()), Ok(())) => model.apply(records),
                    (Err(Rejection::Invalid), Err(Error::InvalidInput(_)))
                    | (Err(Rejection::Unknown), Err(Error::UnknownId(_))) => {
                        assert_eq!(store.journal_bytes(), before, "{context}: journal grew");
                        assert_eq!(store.generation(), generation, "{context}: checkpointed");
                    }
                    _ => panic!("{context}: expected {expected:?}, got {got:?}"),
                }
            }
            Step::Compact(compact) => {
                store.set_compact_vectors(*compact);
                assert_eq!(store.pool().is_compact(), *compact, "{context}");
            }
            Step::Checkpoint => {
                let generation = store.generation();
                store.checkpoint().expect("checkpoint");
                assert_eq!(store.generation(), generation + 1, "{context}");
            }
            Step::Reopen(how) => {
                let generation = store.generation();
                let expected_generation = match how {
                    Reopen::Drop => {
                        drop(store);
                        generation
                    }
                    Reopen::CheckpointThenDrop => {
                        store.checkpoint().expect("checkpoint");
                        drop(store);
                        generation + 1
                    }
                    Reopen::Close => {
                        store.close().expect("close");
                        generation + 1
                    }
                };
                store = open(dir.path(), wal_max_bytes);
                assert!(
                    store.repairs().is_empty(),
                    "{context}: {:?}",
                    store.repairs()
                );
                assert_eq!(store.skipped_lines(), 0, "{context}");
                assert_eq!(
                    store.generation(),
                    expected_generation,
                    "{context}: generation"
                );
            }
        }
        assert_same(&store, &model, &context);
    }
    // Whatever the last step was, the journal alone must restore the final state.
    drop(store);
    let store = open(dir.path(), wal_max_bytes);
    assert_same(&store, &model, "final reopen");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn store_matches_the_model(
        steps in prop::collection::vec(step(), 1..80),
        // A small limit makes commits checkpoint by themselves every few records.
        wal_max_bytes in prop_oneof![Just(1u64 << 20), Just(2048u64)],
    ) {
        run(&steps, wal_max_bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// Deterministic cases.

fn sample_item(n: u32) -> Item {
    Item {
        item_id: format!("{n:016x}"),
        content: format!("memory number {n} 记忆"),
        timestamp: 1.7e9 + f64::from(n),
        last_access: 1.7e9 + f64::from(n) + 0.25,
        token_count: 4,
        access_count: 1,
        importance: 0.5,
        project: None,
        extra: Map::new(),
    }
}

fn sample_put(n: u32) -> Record {
    let x = n as f32;
    Record::Put {
        tier: Tier::ALL[n as usize % 3],
        item: sample_item(n),
        vector: vec![x, -x, 0.5, 1.0 / (x + 1.0)],
    }
}

fn model_of(records: &[Record]) -> Model {
    let mut model = Model::default();
    model.validate(records).expect("sample records are valid");
    model.apply(records);
    model
}

fn corrupt_files(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".corrupt"))
        .collect();
    found.sort();
    found
}

#[test]
fn unknown_ids_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open(dir.path(), 1 << 20);
    let puts: Vec<Record> = (1..=3).map(sample_put).collect();
    store.commit(puts.clone()).unwrap();
    let model = model_of(&puts);
    let journal = std::fs::read(&store.paths().wal).unwrap();
    let unknown = "00000000deadbeef".to_string();
    let cases = [
        vec![Record::Delete {
            id: unknown.clone(),
        }],
        vec![Record::Move {
            id: unknown.clone(),
            tier: Tier::Cold,
        }],
        vec![Record::Importance {
            id: unknown.clone(),
            importance: 0.5,
        }],
        vec![Record::Touch {
            id: unknown.clone(),
            access_count: 2,
            last_access: 1.0,
        }],
        vec![Record::Archive {
            id: unknown.clone(),
            reason: "evicted".into(),
            summary_id: None,
            at: 1.0,
        }],
        // A valid record before the bad one must not be applied either.
        vec![
            Record::Delete {
                id: sample_item(1).item_id,
            },
            Record::Delete {
                id: unknown.clone(),
            },
        ],
    ];
    for records in cases {
        let err = store.commit(records.clone()).unwrap_err();
        assert!(
            matches!(&err, Error::UnknownId(id) if *id == unknown),
            "{records:?}: {err}"
        );
        assert!(err.to_string().contains(&unknown), "{err}");
        assert_same(&store, &model, &format!("{records:?}"));
        assert_eq!(
            std::fs::read(&store.paths().wal).unwrap(),
            journal,
            "{records:?}"
        );
    }
    assert!(
        !store.paths().archive.exists(),
        "a refused archive record wrote the archive"
    );
}

#[test]
fn a_torn_final_line_is_dropped_silently() {
    let complete_line = {
        let dir = tempfile::tempdir().unwrap();
        let mut store = open(dir.path(), 1 << 20);
        store.commit(vec![sample_put(9)]).unwrap();
        let bytes = std::fs::read(&store.paths().wal).unwrap();
        let start = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        bytes[start..bytes.len() - 1].to_vec()
    };
    let tails: [(&str, Vec<u8>); 4] = [
        ("garbage", b"\x00\xffnot a record".to_vec()),
        ("open brace", b"{".to_vec()),
        (
            "half a record",
            complete_line[..complete_line.len() / 2].to_vec(),
        ),
        // A whole record without its newline was never acknowledged: it is dropped too.
        ("record without newline", complete_line.clone()),
    ];
    for (name, tail) in tails {
        let dir = tempfile::tempdir().unwrap();
        let puts: Vec<Record> = (1..=3).map(sample_put).collect();
        let mut model = model_of(&puts);
        let mut store = open(dir.path(), 1 << 20);
        for p in &puts {
            store.commit(vec![p.clone()]).unwrap();
        }
        let wal = store.paths().wal.clone();
        drop(store);
        let good = std::fs::read(&wal).unwrap();
        let mut torn = good.clone();
        torn.extend_from_slice(&tail);
        std::fs::write(&wal, &torn).unwrap();

        let mut store = open(dir.path(), 1 << 20);
        assert!(store.repairs().is_empty(), "{name}: {:?}", store.repairs());
        assert_same(&store, &model, name);
        assert!(
            corrupt_files(dir.path()).is_empty(),
            "{name}: quarantined a torn tail"
        );
        assert_eq!(
            std::fs::read(&wal).unwrap(),
            good,
            "{name}: tail not cut off"
        );

        let more = vec![
            sample_put(4),
            Record::Delete {
                id: sample_item(2).item_id,
            },
        ];
        store.commit(more.clone()).unwrap();
        model.apply(&more);
        drop(store);
        let store = open(dir.path(), 1 << 20);
        assert!(store.repairs().is_empty(), "{name}: {:?}", store.repairs());
        assert_same(&store, &model, &format!("{name}, after more commits"));
    }
}

/// Byte offsets where each line of `bytes` starts.
fn line_starts(bytes: &[u8]) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .filter(|&i| i < bytes.len())
        .collect()
}

/// A journal of a begin record and five puts, written and closed without a checkpoint.
fn five_puts(dir: &Path) -> (Vec<Record>, PathBuf) {
    let mut store = open(dir, 1 << 20);
    // Line 1 is the journal's begin record; lines 2..=6 are these puts.
    let puts: Vec<Record> = (1..=5).map(sample_put).collect();
    for p in &puts {
        store.commit(vec![p.clone()]).unwrap();
    }
    let wal = store.paths().wal.clone();
    drop(store);
    (puts, wal)
}

#[test]
fn a_damaged_middle_record_is_set_aside_alone_and_the_rest_applied() {
    let dir = tempfile::tempdir().unwrap();
    let (puts, wal) = five_puts(dir.path());
    let mut bytes = std::fs::read(&wal).unwrap();
    let starts = line_starts(&bytes);
    assert_eq!(starts.len(), 6, "journal should hold 6 lines");
    let (line3, line4) = (starts[2], starts[3]);
    // Inside the payload, in the item's JSON.
    bytes[line3 + 60] ^= 0x01;
    std::fs::write(&wal, &bytes).unwrap();
    let bad_line = bytes[line3..line4].to_vec();

    let mut store = open(dir.path(), 1 << 20);
    // Every record but the damaged one (the second put) is there: before, the damaged line
    // took every later valid record with it.
    let kept: Vec<Record> = puts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, p)| p.clone())
        .collect();
    let mut model = model_of(&kept);
    assert_same(&store, &model, "after repair");
    let repairs = store.repairs().to_vec();
    assert_eq!(repairs.len(), 1, "{repairs:?}");
    let repair = &repairs[0];
    assert_eq!(repair.path, wal);
    assert_eq!(repair.line, 3);
    assert_eq!(repair.lines, 1, "only line 3 is moved aside");
    assert_eq!(repair.missing, 1, "one record is lost");
    let shown = repair.to_string();
    assert!(
        shown.contains(&wal.display().to_string()) && shown.contains("line 3"),
        "{shown}"
    );
    assert!(
        store.notes().iter().any(|n| n.contains("line 3")),
        "{:?}",
        store.notes()
    );
    let quarantined = corrupt_files(dir.path());
    let q = repair.quarantine.clone().expect("a quarantine file");
    assert_eq!(quarantined, vec![q.clone()]);
    assert_eq!(
        std::fs::read(&q).unwrap(),
        bad_line,
        "line not kept verbatim"
    );

    // The repaired journal was folded into a checkpoint: new commits land cleanly and a reopen
    // reports nothing again.
    let more = vec![
        sample_put(6),
        Record::Move {
            id: sample_item(1).item_id,
            tier: Tier::Cold,
        },
    ];
    store.commit(more.clone()).unwrap();
    model.apply(&more);
    assert_same(&store, &model, "after a commit on the repaired journal");
    drop(store);
    let store = open(dir.path(), 1 << 20);
    assert!(store.repairs().is_empty(), "{:?}", store.repairs());
    assert_same(&store, &model, "clean reopen after repair");
    assert_eq!(corrupt_files(dir.path()), quarantined);
}

#[test]
fn a_line_deleted_from_the_middle_is_reported_as_missing_records() {
    let dir = tempfile::tempdir().unwrap();
    let (puts, wal) = five_puts(dir.path());
    let bytes = std::fs::read(&wal).unwrap();
    let starts = line_starts(&bytes);
    // Delete line 4 (the third put): before sequence numbers this went unnoticed.
    let mut cut = bytes[..starts[3]].to_vec();
    cut.extend_from_slice(&bytes[starts[4]..]);
    std::fs::write(&wal, &cut).unwrap();

    let store = open(dir.path(), 1 << 20);
    let kept: Vec<Record> = puts
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, p)| p.clone())
        .collect();
    assert_same(&store, &model_of(&kept), "the other records are applied");
    let repairs = store.repairs();
    assert_eq!(repairs.len(), 1, "{repairs:?}");
    assert_eq!(repairs[0].missing, 1);
    assert_eq!(repairs[0].lines, 0);
    assert!(repairs[0].quarantine.is_none());
    assert!(
        repairs[0].to_string().contains("record 3 is missing"),
        "{}",
        repairs[0]
    );
    assert!(corrupt_files(dir.path()).is_empty());
    drop(store);
    assert!(
        open(dir.path(), 1 << 20).repairs().is_empty(),
        "reported once"
    );
}

#[test]
fn damage_another_process_left_is_contained_while_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = open(dir.path(), 1 << 20);
    let (puts, wal) = {
        let mut writer = open(dir.path(), 1 << 20);
        let puts: Vec<Record> = (1..=4).map(sample_put).collect();
        for p in &puts {
            writer.commit(vec![p.clone()]).unwrap();
        }
        (puts, writer.paths().wal.clone())
    };
    let mut bytes = std::fs::read(&wal).unwrap();
    let starts = line_starts(&bytes);
    bytes[starts[2] + 60] ^= 0x01; // the second put
    std::fs::write(&wal, &bytes).unwrap();
    reader.acquire().unwrap();
    reader.release();
    let kept = [puts[0].clone(), puts[2].clone(), puts[3].clone()];
    assert_same(&reader, &model_of(&kept), "caught up around the damage");
    assert_eq!(reader.repairs().len(), 1, "{:?}", reader.repairs());
    assert_eq!(reader.repairs()[0].lines, 1);
}

#[test]
fn temp_files_of_killed_checkpoints_are_removed_at_open_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path(), 1 << 20));
    let left = [
        (".coral_warm.json.tmp-4242", 100usize),
        (".coral_vectors.npy.tmp-77", 4096),
        (".coral_vectors.meta.json.tmp-9", 10),
    ];
    let foreign = [
        ".notes.txt.tmp-1",
        ".coral_warm.json.tmp-x1",
        "coral_warm.json.tmp-5",
    ];
    for (name, len) in left {
        std::fs::write(dir.path().join(name), vec![b'x'; len]).unwrap();
    }
    for name in foreign {
        std::fs::write(dir.path().join(name), b"keep").unwrap();
    }
    let store = open(dir.path(), 1 << 20);
    assert_eq!(store.temp_files_removed(), (3, 4206));
    assert!(
        store.notes().iter().any(|n| n.contains("3 temp file(s)")),
        "{:?}",
        store.notes()
    );
    for (name, _) in left {
        assert!(!dir.path().join(name).exists(), "{name} left behind");
    }
    for name in foreign {
        assert!(
            dir.path().join(name).exists(),
            "{name} is not ours and must stay"
        );
    }
    assert_eq!(store.temp_file_usage(), (0, 0));
    // A temp file present while running (another process's checkpoint) is counted.
    std::fs::write(dir.path().join(".coral_cold.jsonl.tmp-5"), b"12345").unwrap();
    assert_eq!(store.temp_file_usage(), (1, 5));
}

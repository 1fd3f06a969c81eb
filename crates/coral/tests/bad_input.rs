//! Bad input gives a clear error and changes nothing: arguments, data files (docs/storage.md,
//! "Opening and repair"), config (docs/configuration.md).
//!
//! Argument cases go through one `check` helper: the call must fail with a message containing
//! the given fragments, and the memories, the counters and the journal must be exactly as before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use coral::{
    Config, Coral, HashEmbedder, InsertOptions, MAX_TEXT_BYTES, MAX_TOP_K, Memory, SearchOptions,
    Stats,
};
use coral_store::npy;

const DIM: usize = 8;
const NOW: f64 = 1_700_000_000.0;
const HOUR: f64 = 3600.0;

fn config(base: &Path) -> Config {
    let mut config = Config {
        base_dir: base.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config.embedding.embedder = "hash".into();
    config.embedding.dim = DIM;
    config
}

fn open(base: &Path) -> coral::Result<Coral> {
    Coral::open_with(config(base), Arc::new(HashEmbedder::new(DIM)?))
}

/// In the original's weighted mode, where the scores come from the vectors themselves and
/// not from access counts (the default mode's heat prior changes with every search).
fn open_weighted(base: &Path) -> coral::Result<Coral> {
    let mut config = config(base);
    config.retrieval.mode = coral::RetrievalMode::Weighted;
    Coral::open_with(config, Arc::new(HashEmbedder::new(DIM)?))
}

fn data_dir(base: &Path) -> PathBuf {
    base.join("memory_data")
}

/// A few memories: two hot ones and two old enough (two days) to have moved to warm.
const CORPUS: [(&str, f64); 4] = [
    ("the user likes iced coffee", 0.0),
    ("用户喜欢喝冰镇拿铁咖啡", HOUR),
    (
        "translate product manuals in a formal register",
        48.0 * HOUR,
    ),
    ("项目 coral 的数据目录在 memory_data", 50.0 * HOUR),
];

fn seed(coral: &Coral) -> Vec<String> {
    CORPUS
        .iter()
        .map(|(text, age)| {
            let options = InsertOptions {
                timestamp: Some(NOW - age),
                now: Some(NOW),
                ..InsertOptions::default()
            };
            let insert = coral.insert_with(text, options).expect("seed insert");
            assert!(insert.inserted(), "{text} was merged");
            insert.id().to_string()
        })
        .collect()
}

/// Everything a failed call must leave alone.
#[derive(Debug, PartialEq)]
struct State {
    memories: Vec<Memory>,
    stats: Stats,
    config: Config,
    journal: Vec<u8>,
}

fn state(coral: &Coral, base: &Path) -> State {
    State {
        memories: coral.export().unwrap(),
        stats: coral.stats(),
        config: (*coral.config()).clone(),
        journal: std::fs::read(data_dir(base).join("coral_wal.jsonl")).expect("journal"),
    }
}

/// Every file of a directory by name (the lock file excepted: it only holds the owner's PID).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file() && !p.ends_with(".coral.lock"))
        .map(|p| {
            let name = p
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&p).expect("read file"))
        })
        .collect()
}

fn assert_mentions(message: &str, needles: &[&str], what: &str) {
    for needle in needles {
        assert!(
            message.contains(needle),
            "{what}: error {message:?} should mention {needle:?}"
        );
    }
}

type Call = Box<dyn Fn(&Coral) -> coral::Result<()>>;

/// `call` fails with a message containing every needle and changes nothing.
fn check(coral: &Coral, base: &Path, what: &str, call: &Call, needles: &[&str]) {
    let before = state(coral, base);
    let result = call(coral);
    let after = state(coral, base);
    let err = match result {
        Ok(()) => panic!("{what}: accepted"),
        Err(e) => e.to_string(),
    };
    assert_mentions(&err, needles, what);
    assert!(
        err.chars().next().is_some_and(|c| !c.is_uppercase()),
        "{what}: {err:?} should start in lower case"
    );
    assert_eq!(before, after, "{what}: state changed");
}

fn insert(content: impl Into<String>, importance: f64) -> Call {
    let content = content.into();
    Box::new(move |c| c.insert(&content, importance).map(drop))
}

fn insert_with(content: &'static str, options: InsertOptions) -> Call {
    Box::new(move |c| c.insert_with(content, options.clone()).map(drop))
}

fn search(query: impl Into<String>, options: SearchOptions) -> Call {
    let query = query.into();
    Box::new(move |c| c.search_with(&query, options.clone()).map(drop))
}

fn top_k(k: usize) -> SearchOptions {
    SearchOptions {
        top_k: Some(k),
        now: Some(NOW),
        ..SearchOptions::default()
    }
}

#[test]
fn bad_arguments_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let coral = open(base).unwrap();
    let ids = seed(&coral);
    let id = ids[0].clone();
    let too_long = "x".repeat(MAX_TEXT_BYTES + 1);
    let too_long_cjk = "咖".repeat(MAX_TEXT_BYTES / 3 + 1);
    let limit = MAX_TEXT_BYTES.to_string();
    let mark = |id: &str, importance: f64| -> Call {
        let id = id.to_string();
        Box::new(move |c| c.mark_important(&id, importance).map(drop))
    };
    let cases: Vec<(&str, Call, Vec<&str>)> = vec![
        ("empty content", insert("", 0.5), vec!["content", "empty"]),
        (
            "whitespace content",
            insert(" \t\n\u{3000} ", 0.5),
            vec!["content", "empty"],
        ),
        (
            "content one byte over the limit",
            insert(too_long.clone(), 0.5),
            vec!["content", "65537 bytes", &limit],
        ),
        (
            "multi-byte content over the limit",
            insert(too_long_cjk, 0.5),
            vec!["content", "65538 bytes", &limit],
        ),
        (
            "NaN importance",
            insert("a new memory", f64::NAN),
            vec!["importance", "NaN"],
        ),
        (
            "infinite importance",
            insert("a new memory", f64::INFINITY),
            vec!["importance", "inf"],
        ),
        (
            "negative importance",
            insert("a new memory", -0.1),
            vec!["importance", "-0.1"],
        ),
        (
            "importance above one",
            insert("a new memory", 1.5),
            vec!["importance", "1.5"],
        ),
        // A duplicate would be merged: a bad importance must be refused before that.
        (
            "NaN importance on a duplicate",
            insert(CORPUS[0].0, f64::NAN),
            vec!["importance"],
        ),
        (
            "NaN creation time",
            insert_with(
                "a new memory",
                InsertOptions {
                    timestamp: Some(f64::NAN),
                    ..InsertOptions::default()
                },
            ),
            vec!["timestamp", "NaN"],
        ),
        (
            "negative creation time",
            insert_with(
                "a new memory",
                InsertOptions {
                    timestamp: Some(-1.0),
                    ..InsertOptions::default()
                },
            ),
            vec!["timestamp", "-1"],
        ),
        (
            "creation time after the year 9999",
            insert_with(
                "a new memory",
                InsertOptions {
                    timestamp: Some(1e300),
                    ..InsertOptions::default()
                },
            ),
            vec!["timestamp", "1e300", "253402300799", "milliseconds"],
        ),
        (
            "creation time in milliseconds",
            insert_with(
                "a new memory",
                InsertOptions {
                    timestamp: Some(1.7e12),
                    ..InsertOptions::default()
                },
            ),
            vec!["timestamp", "1700000000000", "milliseconds"],
        ),
        (
            "infinite insert clock",
            insert_with(
                "a new memory",
                InsertOptions {
                    now: Some(f64::INFINITY),
                    ..InsertOptions::default()
                },
            ),
            vec!["now", "inf"],
        ),
        (
            "project name over 256 bytes",
            Box::new(|c: &Coral| {
                let options = InsertOptions {
                    project: Some("p".repeat(257)),
                    ..InsertOptions::default()
                };
                c.insert_with("a new memory", options).map(drop)
            }),
            vec!["project", "257 bytes", "256"],
        ),
        ("mark NaN", mark(&id, f64::NAN), vec!["importance", "NaN"]),
        (
            "mark infinite",
            mark(&id, f64::NEG_INFINITY),
            vec!["importance", "-inf"],
        ),
        ("mark negative", mark(&id, -0.1), vec!["importance", "-0.1"]),
        ("mark above one", mark(&id, 1.5), vec!["importance", "1.5"]),
        (
            "mark unknown id",
            mark("00000000deadbeef", 0.5),
            vec!["no memory", "00000000deadbeef"],
        ),
        ("mark empty id", mark("", 0.5), vec!["no memory"]),
        ("top_k 0", search("coffee", top_k(0)), vec!["top_k", "0"]),
        (
            "top_k above the maximum",
            search("coffee", top_k(MAX_TOP_K + 1)),
            vec!["top_k", "1001", "1000"],
        ),
        ("empty query", search("", top_k(3)), vec!["query", "empty"]),
        (
            "whitespace query",
            search(" \n ", top_k(3)),
            vec!["query", "empty"],
        ),
        (
            "query over the limit",
            search(too_long, top_k(3)),
            vec!["query", "65537 bytes"],
        ),
        (
            "NaN clock",
            search(
                "coffee",
                SearchOptions {
                    now: Some(f64::NAN),
                    ..top_k(3)
                },
            ),
            vec!["now", "NaN"],
        ),
        (
            "search clock after the year 9999",
            search(
                "coffee",
                SearchOptions {
                    now: Some(1e20),
                    ..top_k(3)
                },
            ),
            vec!["now", "1e20", "253402300799"],
        ),
        (
            "NaN score floor",
            search(
                "coffee",
                SearchOptions {
                    min_score: Some(f64::NAN),
                    ..top_k(3)
                },
            ),
            vec!["min_score"],
        ),
        (
            "config with a bad value",
            Box::new(|c: &Coral| {
                let mut config = (*c.config()).clone();
                config.storage.sync = "sometimes".into();
                config.memory.capacity_threshold = 1;
                c.set_config(config)
            }),
            vec!["storage.sync", "sometimes"],
        ),
    ];
    for (what, call, needles) in &cases {
        check(&coral, base, what, call, needles);
    }
    // Deleting an unknown id is not an error by design: it reports `false` and changes nothing.
    let before = state(&coral, base);
    assert!(!coral.delete("00000000deadbeef").unwrap());
    assert_eq!(
        state(&coral, base),
        before,
        "deleting an unknown id changed something"
    );
}

#[test]
fn limits_are_inclusive() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path()).unwrap();
    let longest = "ab ".repeat(MAX_TEXT_BYTES / 3) + &"c".repeat(MAX_TEXT_BYTES % 3);
    assert_eq!(longest.len(), MAX_TEXT_BYTES);
    assert!(coral.insert(&longest, 1.0).unwrap().inserted());
    assert!(
        coral
            .insert("ab: importance zero is allowed", 0.0)
            .unwrap()
            .inserted()
    );
    let hits = coral.search_with("ab", top_k(MAX_TOP_K)).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].item.content, longest);
    let id = hits[1].item.item_id.clone();
    assert_eq!(coral.mark_important(&id, 1.0).unwrap().importance, 1.0);
    assert!(coral.delete(&id).unwrap());
    assert!(!coral.delete(&id).unwrap());
}

#[test]
fn a_warm_file_that_is_not_utf8_stops_open_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let coral = open(base).unwrap();
    seed(&coral);
    coral.close().unwrap();
    let warm = data_dir(base).join("coral_warm.json");
    let mut bytes = std::fs::read(&warm).unwrap();
    let at = bytes
        .windows(9)
        .position(|w| w == b"translate")
        .expect("the old memory is in the warm file");
    bytes[at] = 0xff;
    std::fs::write(&warm, &bytes).unwrap();
    let before = files(&data_dir(base));

    let err = open(base).err().expect("open must fail").to_string();
    assert_mentions(
        &err,
        &["coral_warm.json", "UTF-8"],
        "invalid UTF-8 warm file",
    );
    assert_eq!(
        files(&data_dir(base)),
        before,
        "open changed the data directory"
    );
    // Nothing was locked for good either: the next open fails the same way.
    let again = open(base).err().expect("open must fail again").to_string();
    assert_eq!(again, err);
}

#[test]
fn an_empty_or_truncated_tier_file_stops_open_instead_of_reading_as_no_memories() {
    for (what, file, cut) in [
        ("0-byte warm file", "coral_warm.json", 0usize),
        ("whitespace warm file", "coral_warm.json", 0),
        // An earlier Coral's hot file, still read when it exists.
        ("whitespace old hot file", "coral_hot.json", 0),
        ("truncated warm file", "coral_warm.json", 40),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        let coral = open(base).unwrap();
        seed(&coral);
        // Keep memories in the hot tier too (written into the warm file): flush checkpoints
        // without closing.
        coral.flush().unwrap();
        drop(coral);
        let path = data_dir(base).join(file);
        let good = if file == "coral_hot.json" {
            assert!(!path.exists(), "hot memories are in the warm file now");
            std::fs::read(data_dir(base).join("coral_warm.json")).unwrap()
        } else {
            std::fs::read(&path).unwrap()
        };
        assert!(good.len() > cut + 10, "{what}: {file} holds memories");
        let damaged = if what.starts_with("whitespace") {
            b"  \n".to_vec()
        } else {
            good[..cut].to_vec()
        };
        std::fs::write(&path, &damaged).unwrap();
        let before = files(&data_dir(base));
        let err = open(base)
            .err()
            .unwrap_or_else(|| panic!("{what}: opened as if the tier were empty"))
            .to_string();
        assert_mentions(&err, &[file], what);
        assert!(
            err.contains("empty") || err.contains("not a JSON array"),
            "{what}: {err}"
        );
        assert_eq!(files(&data_dir(base)), before, "{what}: open changed files");
    }
}

/// Turns a file's good bytes into damaged ones.
type Damage = fn(&[u8]) -> Vec<u8>;

/// A vector file (`coral_vectors.npy` or `coral_vector_index.json`) damaged by `damage` (given
/// its good bytes) is reported by name, the vectors are recomputed exactly, and the next
/// checkpoint writes a valid matrix and index again.
fn check_vectors(what: &str, file: &str, damage: Damage) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    let coral = open_weighted(base).unwrap();
    seed(&coral);
    coral.flush().unwrap();
    let query = "iced coffee 咖啡";
    let before_hits = coral.search_with(query, top_k(4)).unwrap();
    let before = coral.export().unwrap();
    drop(coral);

    let damaged = data_dir(base).join(file);
    let good = std::fs::read(&damaged).unwrap();
    std::fs::write(&damaged, damage(&good)).unwrap();

    let coral = open_weighted(base).unwrap_or_else(|e| panic!("{what}: open failed: {e}"));
    let notices = coral.notices().join("\n");
    assert!(
        coral
            .notices()
            .iter()
            .any(|n| n.contains(file) && n.contains("recomputed")),
        "{what}: no notice names the file: {notices}"
    );
    assert_eq!(coral.export().unwrap(), before, "{what}: memories changed");
    let stats = coral.stats();
    assert_eq!(stats.vectors, stats.total, "{what}: vectors missing");
    let hits = coral.search_with(query, top_k(4)).unwrap();
    let ranked = |h: &[coral::SearchHit]| -> Vec<(String, u64)> {
        h.iter()
            .map(|h| (h.item.item_id.clone(), h.score.to_bits()))
            .collect()
    };
    assert_eq!(
        ranked(&hits),
        ranked(&before_hits),
        "{what}: search changed"
    );

    coral.flush().unwrap();
    let matrix = npy::read(&data_dir(base).join("coral_vectors.npy"))
        .unwrap_or_else(|e| panic!("{what}: still damaged: {e}"));
    assert_eq!(
        (matrix.rows, matrix.cols),
        (before.len(), DIM),
        "{what}: shape"
    );
    let index: Vec<String> = serde_json::from_slice(
        &std::fs::read(data_dir(base).join("coral_vector_index.json")).unwrap(),
    )
    .unwrap();
    let embedder = HashEmbedder::new(DIM).unwrap();
    for (row, id) in index.iter().enumerate() {
        let memory = before
            .iter()
            .find(|m| &m.item.item_id == id)
            .expect("indexed id is stored");
        assert_eq!(
            matrix.row(row),
            embedder.embed_text(&memory.item.content),
            "{what}: {id}"
        );
    }
    drop(coral);
    let coral = open(base).unwrap();
    assert!(
        !coral.notices().iter().any(|n| n.contains(file)),
        "{what}: still reported after the rewrite: {:?}",
        coral.notices()
    );
}

#[test]
fn damaged_vector_files_are_reported_and_rebuilt() {
    let cases: [(&str, Damage); 6] = [
        ("truncated", |b| b[..b.len() - 5].to_vec()),
        ("header without data", |b| {
            b[..b.len() - 4 * DIM * 4].to_vec()
        }),
        ("empty file", |_| Vec::new()),
        ("not an npy file", |_| b"definitely not numpy".to_vec()),
        ("integer dtype", |b| {
            let mut out = b.to_vec();
            let at = out
                .windows(3)
                .position(|w| w == b"<f4")
                .expect("dtype in header");
            out[at + 1] = b'i';
            out
        }),
        // Four rows, as the index lists, but of another model's dimension.
        ("wrong dim", |_| {
            npy::encode(4, DIM + 3, &[0.25; 4 * (DIM + 3)])
        }),
    ];
    for (what, damage) in cases {
        check_vectors(what, "coral_vectors.npy", damage);
    }
    // Damage that keeps both files well-formed: before, these went unnoticed.
    check_vectors("a NaN row", "coral_vectors.npy", |b| {
        let mut m = npy::decode(b, std::path::Path::new("v.npy")).unwrap();
        let cols = m.cols;
        m.data[cols..2 * cols].fill(f32::NAN);
        npy::encode(m.rows, cols, &m.data)
    });
    check_vectors("an infinite value", "coral_vectors.npy", |b| {
        let mut m = npy::decode(b, std::path::Path::new("v.npy")).unwrap();
        m.data[0] = f32::INFINITY;
        npy::encode(m.rows, m.cols, &m.data)
    });
    check_vectors("two ids swapped", "coral_vector_index.json", |b| {
        let mut ids: Vec<String> = serde_json::from_slice(b).unwrap();
        ids.swap(0, 2);
        serde_json::to_vec(&ids).unwrap()
    });
    check_vectors("a row changed in place", "coral_vectors.npy", |b| {
        let mut m = npy::decode(b, std::path::Path::new("v.npy")).unwrap();
        m.data[3] += 0.5;
        npy::encode(m.rows, m.cols, &m.data)
    });
    let index_cases: [(&str, Damage); 3] = [
        ("index is not JSON", |b| b[..b.len() / 2].to_vec()),
        ("index is not a list of ids", |_| br#"{"ids": 4}"#.to_vec()),
        ("index shorter than the matrix", |_| {
            br#"["0123456789abcdef"]"#.to_vec()
        }),
    ];
    for (what, damage) in index_cases {
        check_vectors(what, "coral_vector_index.json", damage);
    }
}

#[test]
fn a_config_with_a_bad_value_is_refused_naming_the_key() {
    let cases: [(&str, &[u8], &[&str]); 9] = [
        (
            "wrong type",
            br#"{"memory": {"capacity_threshold": "lots"}}"#,
            &["memory.capacity_threshold", "lots"],
        ),
        (
            "negative count",
            br#"{"memory": {"max_hot_entries": -1}}"#,
            &["memory.max_hot_entries", "-1"],
        ),
        (
            "ratio above one",
            br#"{"storage": {"hard_ratio": 1.5}}"#,
            &["storage.hard_ratio", "1.5"],
        ),
        (
            "unknown sync mode",
            br#"{"storage": {"sync": "sometimes"}}"#,
            &["storage.sync", "sometimes"],
        ),
        (
            "top_k zero",
            br#"{"retrieval": {"top_k": 0}}"#,
            &["retrieval.top_k"],
        ),
        (
            "nested weight",
            br#"{"retrieval": {"weights": {"vector": "high"}}}"#,
            &["retrieval.weights.vector", "high"],
        ),
        (
            "dim zero",
            br#"{"embedding": {"embedder": "hash", "dim": 0}}"#,
            &["embedding.dim"],
        ),
        ("not JSON", br#"{"memory": "#, &["line 1"]),
        ("not UTF-8", b"{\"llm\": {\"model\": \"\xff\"}}", &["UTF-8"]),
    ];
    for (what, text, needles) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coral_config.json");
        std::fs::write(&path, text).unwrap();
        let err = Coral::open(&path)
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        let message = err.to_string();
        assert_mentions(&message, needles, what);
        assert_mentions(&message, &["coral_config.json"], what);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            text,
            "{what}: config rewritten"
        );
        assert!(
            !data_dir(dir.path()).exists(),
            "{what}: a data directory was created"
        );
    }
}

/// `storage.backend = "postgres"` with no server there fails the open naming the server,
/// instead of quietly keeping the memories in the data directory.
#[test]
fn the_postgres_backend_without_a_server_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.storage.backend = "postgres".into();
    c.storage.postgres_tenant = "team-a".into();
    c.storage.postgres_url = "postgres://coral@127.0.0.1:1/coral".into();
    let e = Coral::open_with(c, Arc::new(HashEmbedder::new(DIM).unwrap()))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("cannot reach postgres at 127.0.0.1:1"), "{e}");
    assert!(!data_dir(dir.path()).exists(), "nothing was created");
}

//! Choosing the embedder and changing models (docs/embeddings.md) through the facade.
//!
//! Tests that need the runtime and the int8 MiniLM (`eval "$(scripts/fetch-test-models.sh)"`)
//! say so and pass without them, unless `CORAL_REQUIRE_MODELS=1` (CI), where they fail.

use std::path::{Path, PathBuf};

use coral::{Coral, Error, SearchHit};
use serde_json::{Value, json};

/// The test model directory and runtime library, or `None` (test skipped) when absent.
fn test_model() -> Option<(PathBuf, PathBuf)> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let present = match (var("CORAL_TEST_MINILM_DIR"), var("ORT_DYLIB_PATH")) {
        (Some(dir), Some(lib)) if dir.join("model.onnx").is_file() && lib.is_file() => {
            Some((dir, lib))
        }
        _ => None,
    };
    if present.is_none() || !coral::ONNX_SUPPORT {
        if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") {
            panic!(
                "CORAL_REQUIRE_MODELS=1 but the test model is missing or this build has no ONNX \
                 support (onnx feature: {}): run eval \"$(scripts/fetch-test-models.sh)\" and \
                 test the workspace",
                coral::ONNX_SUPPORT
            );
        }
        eprintln!("skipped: no test model (run eval \"$(scripts/fetch-test-models.sh)\")");
        return None;
    }
    present
}

fn write_config(dir: &Path, embedding: Value) -> PathBuf {
    let path = dir.join("coral_config.json");
    let config = json!({
        "embedding": embedding,
        "storage": {"sync": "never"},
        "reload": {"check_interval_seconds": 0.0},
    });
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    path
}

/// A MiniLM store in the original's weighted mode, where the vectors decide (0.6 of the
/// score): these tests look at which vectors are scored. In the default hybrid mode a lone
/// shared word ("plane") and a lone close meaning weigh about the same in a pool of six
/// (docs/ranking.md); `crates/coral/tests/hybrid.rs` tests that mode with a model.
fn minilm(dir: &Path, model: &(PathBuf, PathBuf)) -> PathBuf {
    let path = write_config(
        dir,
        json!({"embedder": "onnx", "model_path": model.0, "ort_library": model.1}),
    );
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config["retrieval"] = json!({"mode": "weighted"});
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    path
}

fn hash(dir: &Path) -> PathBuf {
    write_config(dir, json!({"embedder": "hash"}))
}

const NOW: f64 = 1_750_000_000.0;

/// A memory that shares no word with the query but means it, and memories that share words
/// with it but mean something else.
const MEMORIES: [&str; 6] = [
    "The flight to Tokyo leaves early on Monday morning.",
    "When does the library close? The user does not know.",
    "The user does not like the plane trees in the park.",
    "Quarterly revenue figures are due on Friday.",
    "The user prefers dark mode in every editor.",
    "The user is allergic to peanuts.",
];
const QUERY: &str = "When does the plane to Japan depart?";

/// The top hit shares words with the query, not meaning.
fn keyword_match(hit: &SearchHit) -> bool {
    hit.item.content == MEMORIES[1] || hit.item.content == MEMORIES[2]
}

fn fill(coral: &Coral) {
    for (i, m) in MEMORIES.iter().enumerate() {
        coral
            .insert_with(
                m,
                coral::InsertOptions {
                    timestamp: Some(NOW - 60.0 * i as f64),
                    now: Some(NOW),
                    ..Default::default()
                },
            )
            .unwrap();
    }
}

fn search(coral: &Coral, query: &str) -> Vec<SearchHit> {
    coral
        .search_with(
            query,
            coral::SearchOptions {
                top_k: Some(3),
                now: Some(NOW),
                ..Default::default()
            },
        )
        .unwrap()
}

#[test]
fn auto_without_a_model_uses_hash_and_says_so_once() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("no-model-here");
    std::fs::create_dir(&empty).unwrap();
    let path = write_config(tmp.path(), json!({"embedder": "auto", "model_path": empty}));
    let coral = Coral::open(&path).unwrap();
    let stats = coral.stats();
    assert_eq!(stats.embedder, "hash");
    let note = stats.embedder_note.expect("stats say why");
    assert!(note.contains("hash embedder"), "{note}");
    assert_eq!(
        coral
            .notices()
            .iter()
            .filter(|n| n.contains("\"auto\""))
            .count(),
        1,
        "{:?}",
        coral.notices()
    );
    if coral::ONNX_SUPPORT {
        assert!(note.contains("no-model-here"), "{note}");
        assert!(note.contains("model.onnx"), "{note}");
    }
    assert!(stats.vectors_disabled.is_none());
}

#[test]
fn onnx_without_a_model_is_a_start_up_error_never_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    // ("sentence-transformers" falls back to hash with a notice, as in the original:
    // crates/coral-mcp/tests/models.rs.)
    for embedder in ["onnx", "model"] {
        let path = write_config(
            tmp.path(),
            json!({"embedder": embedder, "model_path": empty}),
        );
        let err = match Coral::open(&path) {
            Ok(c) => panic!("opened with {} instead of failing", c.stats().embedder),
            Err(e) => e,
        };
        assert!(matches!(err, Error::Config { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("requires the model"), "{msg}");
        if coral::ONNX_SUPPORT {
            assert!(msg.contains(&empty.display().to_string()), "{msg}");
            assert!(msg.contains("coral model fetch"), "{msg}");
        }
        assert!(
            !tmp.path()
                .join("memory_data/coral_vectors.meta.json")
                .exists()
        );
    }
}

#[test]
fn a_dim_that_contradicts_the_model_is_a_clear_error() {
    let Some(model) = test_model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let path = write_config(
        tmp.path(),
        json!({"embedder": "onnx", "model_path": model.0, "ort_library": model.1, "dim": 512}),
    );
    let msg = Coral::open(&path).err().expect("refused").to_string();
    assert!(msg.contains("embedding.dim = 512"), "{msg}");
    assert!(msg.contains("set embedding.dim to 384"), "{msg}");
}

#[test]
fn a_missing_runtime_is_a_clear_error() {
    let Some(model) = test_model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("libonnxruntime.so.9.9.9");
    let path = write_config(
        tmp.path(),
        json!({"embedder": "onnx", "model_path": model.0, "ort_library": lib}),
    );
    let msg = Coral::open(&path).err().expect("refused").to_string();
    assert!(msg.contains("embedding.ort_library is"), "{msg}");
    assert!(msg.contains("libonnxruntime.so.9.9.9"), "{msg}");
    assert!(msg.contains("pip install onnxruntime"), "{msg}");
}

/// A directory embedded with hash vectors, reopened with MiniLM: detected, searched on
/// keywords and time, fixed by `reembed`, after which meaning counts.
fn hash_dir_reopened_with_minilm(forget_meta: bool) {
    let Some(model) = test_model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let coral = Coral::open(hash(tmp.path())).unwrap();
    fill(&coral);
    let by_hash = search(&coral, QUERY);
    assert!(
        keyword_match(&by_hash[0]),
        "hash vectors see shared words: {by_hash:#?}"
    );
    coral.close().unwrap();
    let meta = tmp.path().join("memory_data/coral_vectors.meta.json");
    let recorded: Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    assert_eq!(recorded, json!({"embedder": "hash", "dim": 384}));
    if forget_meta {
        // A directory from before the meta file (or the Python original's).
        std::fs::remove_file(&meta).unwrap();
    }

    let coral = Coral::open(minilm(tmp.path(), &model)).unwrap();
    let why = coral.stats().vectors_disabled.expect("detected");
    assert!(why.contains("made by hash"), "{why}");
    assert!(why.contains("coral reembed"), "{why}");
    assert!(coral.notices().iter().any(|n| n.contains("coral reembed")));
    // Keywords and time still work; vectors are not scored.
    let hits = search(&coral, "peanuts allergic");
    assert_eq!(hits[0].item.content, MEMORIES[5]);
    assert!(hits.iter().all(|h| h.scores.vector == 0.0), "{hits:?}");
    assert!(keyword_match(&search(&coral, QUERY)[0]));
    coral.close().unwrap();

    // Still detected after a restart: nothing was silently recomputed.
    let coral = Coral::open(minilm(tmp.path(), &model)).unwrap();
    assert!(coral.stats().vectors_disabled.is_some());
    let mut calls = Vec::new();
    let report = coral
        .reembed(|done, total| calls.push((done, total)))
        .unwrap();
    assert_eq!(report.items, MEMORIES.len());
    assert_eq!(report.embedder, "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(report.dim, 384);
    assert!(!report.checks.is_empty());
    assert!(
        report
            .checks
            .iter()
            .all(|c| c.rank == 1 && c.cosine > 0.9999)
    );
    assert_eq!(calls.last(), Some(&(MEMORIES.len(), MEMORIES.len())));
    assert!(coral.stats().vectors_disabled.is_none());
    let hits = search(&coral, QUERY);
    assert_eq!(hits[0].item.content, MEMORIES[0], "{hits:#?}");
    assert!(hits[0].scores.vector > 0.6, "{hits:#?}");
    coral.close().unwrap();
    let recorded: Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    assert_eq!(
        recorded,
        json!({"embedder": "sentence-transformers/all-MiniLM-L6-v2", "dim": 384})
    );

    let coral = Coral::open(minilm(tmp.path(), &model)).unwrap();
    assert!(coral.stats().vectors_disabled.is_none());
    assert_eq!(search(&coral, QUERY)[0].item.content, MEMORIES[0]);
    coral.close().unwrap();

    // Back to hash: recomputed at once (cheap), and said.
    let coral = Coral::open(hash(tmp.path())).unwrap();
    assert!(coral.stats().vectors_disabled.is_none());
    assert!(
        coral
            .notices()
            .iter()
            .any(|n| n.contains("replaced all 6 with hash vectors")),
        "{:?}",
        coral.notices()
    );
    assert!(keyword_match(&search(&coral, QUERY)[0]));
    coral.close().unwrap();
}

#[test]
fn hash_dir_reopened_with_minilm_is_detected_and_fixed_by_reembed() {
    hash_dir_reopened_with_minilm(false);
}

#[test]
fn hash_dir_without_a_meta_file_is_recognised_by_its_vectors() {
    hash_dir_reopened_with_minilm(true);
}

#[test]
fn a_fresh_minilm_directory_ranks_meaning_above_shared_words() {
    let Some(model) = test_model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let coral = Coral::open(minilm(tmp.path(), &model)).unwrap();
    assert_eq!(
        coral.stats().embedder,
        "sentence-transformers/all-MiniLM-L6-v2"
    );
    assert!(coral.stats().embedder_note.is_none());
    fill(&coral);
    let hits = search(&coral, QUERY);
    assert_eq!(hits[0].item.content, MEMORIES[0], "{hits:#?}");
    coral.close().unwrap();
}

#[test]
fn imported_vectors_are_kept_only_when_the_same_embedder_made_them() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source");
    std::fs::create_dir(&source).unwrap();
    let coral = Coral::open(hash(&source)).unwrap();
    fill(&coral);
    coral.close().unwrap();
    let data = source.join("memory_data");
    // As the Python original leaves it: no record of the embedder.
    std::fs::remove_file(data.join("coral_vectors.meta.json")).unwrap();

    let same = tmp.path().join("same");
    std::fs::create_dir(&same).unwrap();
    let coral = Coral::open(hash(&same)).unwrap();
    let report = coral.import_python_dir(&data, |_, _| {}).unwrap();
    assert_eq!(report.imported, MEMORIES.len());
    assert_eq!(report.vectors_recomputed, 0, "{report:?}");
    coral.close().unwrap();

    let Some(model) = test_model() else { return };
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let coral = Coral::open(minilm(&other, &model)).unwrap();
    let report = coral.import_python_dir(&data, |_, _| {}).unwrap();
    assert_eq!(report.imported, MEMORIES.len());
    assert_eq!(report.vectors_recomputed, MEMORIES.len(), "{report:?}");
    assert!(
        report.notes.iter().any(|n| n.contains("not made by")),
        "{report:?}"
    );
    assert_eq!(search(&coral, QUERY)[0].item.content, MEMORIES[0]);
    coral.close().unwrap();
}

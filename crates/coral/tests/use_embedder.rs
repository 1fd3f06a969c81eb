//! USE multilingual v3 through the facade: `embedding.model_name = "use-multilingual-v3"`
//! selects it, it needs no ONNX runtime, a dim that contradicts it and a model that fails the
//! load-time self-check are start-up errors.
//!
//! Needs the model files (`eval "$(scripts/fetch-test-models.sh)"` sets `CORAL_TEST_USE_DIR`;
//! the script's default cache is also looked in); without them each test says so and passes,
//! unless `CORAL_REQUIRE_MODELS=1` (CI), where it fails.

use std::path::{Path, PathBuf};

use coral::{Coral, Error};
use serde_json::{Value, json};

fn use_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CORAL_TEST_USE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(Path::new(&home).join(".cache/coral-test-models/use-multilingual-v3"))
        })
        .filter(|d| d.join("sp.model").is_file() && d.join("weights.npz").is_file());
    if dir.is_none() {
        if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") {
            panic!(
                "CORAL_REQUIRE_MODELS=1 but CORAL_TEST_USE_DIR does not point at sp.model and \
                 weights.npz: run eval \"$(scripts/fetch-test-models.sh)\""
            );
        }
        eprintln!("skipped: no USE model (run eval \"$(scripts/fetch-test-models.sh)\")");
    }
    dir
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

const NOW: f64 = 1_750_000_000.0;

#[test]
fn model_name_selects_use_and_it_finds_paraphrases_across_languages() {
    let Some(dir) = use_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let path = write_config(
        tmp.path(),
        json!({"embedder": "model", "model_name": "use-multilingual-v3", "dim": 512,
               "model_path": dir}),
    );
    let coral = Coral::open(&path).unwrap();
    let stats = coral.stats();
    assert_eq!(stats.embedder, "use-multilingual-v3");
    assert!(stats.embedder_note.is_none());
    for (i, text) in [
        "用户每周二晚上去游泳馆游泳。",
        "The user's car broke down on the highway last week.",
        "用户最喜欢的水果是芒果。",
        "The user is learning to speak Japanese for a trip to Osaka.",
    ]
    .iter()
    .enumerate()
    {
        coral
            .insert_with(
                text,
                coral::InsertOptions {
                    timestamp: Some(NOW + i as f64),
                    now: Some(NOW + i as f64),
                    ..Default::default()
                },
            )
            .unwrap();
    }
    for (query, expected) in [
        ("他平时做什么运动？", "游泳"),
        ("Which vehicle had a problem on the road?", "car broke down"),
        ("用户在学什么外语？", "Japanese"),
        ("What fruit does the user like best?", "芒果"),
    ] {
        let hits = coral
            .search_with(
                query,
                coral::SearchOptions {
                    top_k: Some(1),
                    now: Some(NOW + 10.0),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(
            hits[0].item.content.contains(expected),
            "{query}: {hits:#?}"
        );
    }
    coral.close().unwrap();
}

#[test]
fn a_dim_that_contradicts_use_is_a_start_up_error_naming_both() {
    let Some(dir) = use_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let path = write_config(
        tmp.path(),
        json!({"embedder": "auto", "model_name": "use-multilingual-v3", "model_path": dir}),
    );
    let Err(err) = Coral::open(&path) else {
        panic!("a dim of 384 for a 512-dim model was accepted");
    };
    assert!(matches!(err, Error::Config { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("embedding.dim = 384"), "{msg}");
    assert!(msg.contains("set embedding.dim to 512"), "{msg}");
}

/// A valid sentencepiece model with no pieces but the specials and `▁`: every word becomes
/// `<unk>`, so every text gets the same vector and the self-check cannot pass.
fn unknown_only_sp_model() -> Vec<u8> {
    fn field(number: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2, body.len() as u8];
        out.extend_from_slice(body);
        out
    }
    fn piece(text: &str, kind: u8) -> Vec<u8> {
        let mut body = field(1, text.as_bytes());
        body.push((2 << 3) | 5);
        body.extend_from_slice(&(-1.0f32).to_le_bytes());
        body.extend_from_slice(&[3 << 3, kind]);
        field(1, &body)
    }
    let mut model = piece("<unk>", 2);
    model.extend(piece("<s>", 3));
    model.extend(piece("</s>", 3));
    model.extend(piece("\u{2581}", 1));
    model.extend(field(3, &field(1, b"identity")));
    model
}

#[test]
fn a_model_that_fails_its_self_check_stops_the_start_up() {
    let Some(dir) = use_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken-use");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("sp.model"), unknown_only_sp_model()).unwrap();
    std::os::unix::fs::symlink(dir.join("weights.npz"), broken.join("weights.npz")).unwrap();
    for embedder in ["auto", "model"] {
        let path = write_config(
            tmp.path(),
            json!({"embedder": embedder, "model_name": "use-multilingual-v3", "dim": 512,
                   "model_path": broken}),
        );
        let msg = match Coral::open(&path) {
            Ok(_) => panic!("{embedder}: a model that fails its self-check was used"),
            Err(e) => e.to_string(),
        };
        assert!(
            msg.contains("failed its self-check at load"),
            "{embedder}: {msg}"
        );
        assert!(msg.contains("use-multilingual-v3"), "{embedder}: {msg}");
        assert!(!tmp.path().join("memory_data/coral_wal.jsonl").exists());
    }
}

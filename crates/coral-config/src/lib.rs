//! Coral's configuration, `coral_config.json` (docs/configuration.md): the [`Config`] root,
//! loading, parsing and the warnings for unknown keys; **config validation**
//! ([`Config::validate`], `validate.rs`); edits through the file ([`ConfigFile`], `ops.rs`);
//! and **hot reload**: the configuration in force ([`LiveConfig`], `live.rs`) and the file's
//! watcher ([`Reloader`], `reload.rs`).
//!
//! Each default is written once, in the sections' `Default` impls (`sections.rs`,
//! `retrieval.rs`, `timeline.rs`), and serde uses the same impls through `#[serde(default)]`.
//! Validation reports every problem with the dotted key and the offending value. Nothing ever
//! falls back to defaults silently. Where the files are is `paths.rs`. Knows no store, engine
//! or transport: the settings of the leaf crates are built here (`HeatConfig::params`,
//! `LlmConfig::settings`, `Config::thread_store_options`) and handed down by the engine.
//!
//! ```
//! use coral_config::{Config, RetrievalMode};
//!
//! let (config, warnings) = Config::from_json(r#"{"retrieval": {"mode": "rrf"}, "x": 1}"#)?;
//! assert_eq!(config.retrieval.mode, RetrievalMode::Rrf);
//! assert_eq!(warnings, ["unknown config key x (ignored)"]);
//! assert!(Config::from_json(r#"{"memory": {"capacity_threshold": -1}}"#).is_err());
//! # Ok::<(), String>(())
//! ```

mod backend;
mod error;
mod hooks;
mod live;
mod modes;
mod ops;
mod paths;
mod ranking;
mod reload;
mod retrieval;
mod sections;
mod timeline;
mod validate;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use backend::StorageBackend;
pub use error::{Error, Result};
pub use hooks::{CaptureTarget, HooksConfig};
pub use live::LiveConfig;
pub use modes::{EmbedderChoice, EmbedderKind, SyncMode};
pub use ops::{
    ConfigFile, Edit, OPERATOR_ONLY, PROTECTED, TOOL_SETTABLE, TUNABLE, get_in, leaf_keys, mask,
    masked_json, refuse_for_tools, tool_may_change,
};
pub use paths::{THREADS_FILE, TIMELINE_FILE};
pub use ranking::{HybridConfig, RETRIEVAL_MODES, RetrievalMode};
pub use reload::Reloader;
pub use retrieval::{ANN_THRESHOLD, MAX_TOP_K, RetrievalConfig, RetrievalWeights, RrfWeights};
pub use sections::{
    EmbeddingConfig, HeatConfig, HeatWeightsConfig, LlmConfig, MemoryConfig, ParallelismConfig,
    PathsConfig, PrivacyConfig, ReloadConfig, StorageConfig, ThreadsConfig,
};
pub use timeline::{PinConfig, PolicyConfig, TimelineConfig};

/// The whole configuration (docs/configuration.md). Unknown keys are reported by
/// [`Config::load`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Data file locations.
    pub paths: PathsConfig,
    /// Embedder choice.
    pub embedding: EmbeddingConfig,
    /// Tier sizes, dedup, capacity.
    pub memory: MemoryConfig,
    /// Search scoring.
    pub retrieval: RetrievalConfig,
    /// Heat formula.
    pub heat: HeatConfig,
    /// Config hot reload.
    pub reload: ReloadConfig,
    /// Concurrency knobs.
    pub parallelism: ParallelismConfig,
    /// Durability and disk budget.
    pub storage: StorageConfig,
    /// Threads file.
    pub threads: ThreadsConfig,
    /// `timeline.*`
    pub timeline: TimelineConfig,
    /// Secrets kept out of what is stored.
    pub privacy: PrivacyConfig,
    /// What `coral hook` does for a client.
    pub hooks: HooksConfig,
    /// LLM endpoint for distillation.
    pub llm: LlmConfig,
    /// Directory that relative paths are resolved against (the config file's directory).
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// Data directory override (`CORAL_DATA_DIR` or `--data-dir`): every data file lives there.
    #[serde(skip)]
    pub data_dir_override: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            paths: PathsConfig::default(),
            embedding: EmbeddingConfig::default(),
            memory: MemoryConfig::default(),
            retrieval: RetrievalConfig::default(),
            heat: HeatConfig::default(),
            reload: ReloadConfig::default(),
            parallelism: ParallelismConfig::default(),
            storage: StorageConfig::default(),
            threads: ThreadsConfig::default(),
            timeline: TimelineConfig::default(),
            privacy: PrivacyConfig::default(),
            hooks: HooksConfig::default(),
            llm: LlmConfig::default(),
            base_dir: PathBuf::from("."),
            data_dir_override: None,
        }
    }
}

/// The LLM endpoint of distillation and timeline summaries: `llm.*` from the config, then
/// `CORAL_LLM_*`, then `DEEPSEEK_*`.
pub fn llm_settings(config: &Config) -> Option<coral_heat::LlmSettings> {
    config.llm.settings()
}

/// Keys the original wrote but never used: accepted and ignored.
const IGNORED_KEYS: [&str; 3] = [
    "memory.sim_threshold_warm",
    "memory.sim_threshold_cold",
    "parallelism.vectorized_jaccard",
];

/// A loaded configuration and what loading it noticed.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The configuration.
    pub config: Config,
    /// Warnings (unknown keys).
    pub warnings: Vec<String>,
    /// The file was missing and has been created with the defaults.
    pub created: bool,
}

impl Config {
    /// The config file path: `explicit`, else `CORAL_CONFIG_PATH`, else `./coral_config.json`.
    pub fn resolve_path(explicit: Option<&Path>) -> PathBuf {
        explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("CORAL_CONFIG_PATH").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("coral_config.json"))
    }

    /// Load `path`, creating it with the defaults when missing. `CORAL_DATA_DIR` overrides the
    /// data directory. A file that does not parse, a wrongly typed or out-of-range value is an
    /// error naming the key and the value.
    pub fn load(path: &Path) -> Result<Loaded> {
        let err = |detail: String| Error::Config {
            path: path.to_path_buf(),
            detail,
        };
        let mut created = false;
        let text = match std::fs::read(path) {
            Ok(bytes) => {
                String::from_utf8(bytes).map_err(|_| err("the file is not valid UTF-8".into()))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
                }
                let text = Config::default().to_json_pretty();
                coral_store::write_atomic(path, text.as_bytes(), true)
                    .map_err(|e| err(format!("cannot create the default config: {e}")))?;
                created = true;
                text
            }
            Err(e) => return Err(err(format!("cannot read: {e}"))),
        };
        let (mut config, warnings) = Config::from_json(&text).map_err(err)?;
        config.base_dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        if let Some(dir) = std::env::var_os("CORAL_DATA_DIR").filter(|d| !d.is_empty()) {
            config.data_dir_override = Some(PathBuf::from(dir));
        }
        Ok(Loaded {
            config,
            warnings,
            created,
        })
    }

    /// Parse and validate JSON text. Returns the config and warnings, or one message listing
    /// every problem.
    pub fn from_json(text: &str) -> std::result::Result<(Config, Vec<String>), String> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            format!(
                "not valid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            )
        })?;
        if !value.is_object() {
            return Err("the top level must be a JSON object".into());
        }
        let config: Config = serde_path_to_error::deserialize(&value).map_err(|e| {
            let (path, message) = match e.path().to_string().as_str() {
                // The layer keys are flattened into `timeline`, and serde's flatten forgets
                // which key failed: parsed alone, they name it.
                "timeline" => flattened_error(&value["timeline"])
                    .unwrap_or_else(|| ("timeline".to_string(), e.into_inner().to_string())),
                path => (path.to_string(), e.into_inner().to_string()),
            };
            let shown = lookup(&value, &path)
                .map(|v| format!(" (value {v})"))
                .unwrap_or_default();
            format!("{path}{shown}: {message}")
        })?;
        let mut warnings = Vec::new();
        let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
        unknown_keys(&value, &defaults, "", &mut warnings);
        let problems = config.validate();
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        Ok((config, warnings))
    }

    /// The configuration as pretty JSON (the shape of `coral_config.json`).
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

/// The dotted key and message of the error in the layer keys of a `timeline` section, if
/// they have one.
fn flattened_error(timeline: &Value) -> Option<(String, String)> {
    fn at<T: serde::de::DeserializeOwned>(value: &Value, prefix: &str) -> Option<(String, String)> {
        let e = serde_path_to_error::deserialize::<_, T>(value).err()?;
        Some((format!("{prefix}.{}", e.path()), e.into_inner().to_string()))
    }
    // The nested sections are parsed only when given (a missing one takes its defaults).
    let nested = |key: &str| timeline.get(key).filter(|v| !v.is_null());
    at::<coral_timeline::LayerSettings>(timeline, "timeline")
        .or_else(|| nested("pin").and_then(|v| at::<timeline::PinConfig>(v, "timeline.pin")))
        .or_else(|| {
            nested("policy").and_then(|v| at::<timeline::PolicyConfig>(v, "timeline.policy"))
        })
        .or_else(|| {
            nested("prompt")
                .and_then(|v| at::<coral_timeline::PromptOverrides>(v, "timeline.prompt"))
        })
}

fn lookup<'a>(value: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted
        .split('.')
        .try_fold(value, |v, key| v.get(key))
        .filter(|v| !v.is_object())
}

fn unknown_keys(value: &Value, defaults: &Value, prefix: &str, out: &mut Vec<String>) {
    let (Some(obj), Some(known)) = (value.as_object(), defaults.as_object()) else {
        return;
    };
    for (key, v) in obj {
        let dotted = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match known.get(key) {
            Some(d) => unknown_keys(v, d, &dotted, out),
            None if IGNORED_KEYS.contains(&dotted.as_str()) => {}
            None => out.push(format!("unknown config key {dotted} (ignored)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_original_default_config_loads() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/coral_test_vectors.json"
        );
        let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let text = data["default_config"].to_string();
        let (config, warnings) = Config::from_json(&text).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(config.retrieval.top_k, 3);
        assert_eq!(config.memory.capacity_threshold, 1000);
        assert_eq!(config.embedding.embedder, "sentence-transformers");
    }

    #[test]
    fn defaults_round_trip_and_match_the_spec() {
        let c = Config::default();
        let (back, warnings) = Config::from_json(&c.to_json_pretty()).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(back.memory, c.memory);
        assert_eq!(c.memory.max_cold_entries, 5000);
        assert_eq!(c.storage.wal_max_bytes, 67_108_864);
        assert_eq!(c.retrieval.weights.vector, 0.6);
    }

    #[test]
    fn unknown_keys_warn_and_original_unused_keys_do_not() {
        let (_, w) = Config::from_json(
            r#"{"memory": {"sim_threshold_warm": 0.5, "bogus": 1}, "extra_section": {}}"#,
        )
        .unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("memory.bogus"));
    }
}

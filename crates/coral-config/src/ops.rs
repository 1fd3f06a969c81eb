//! Config operations (docs/configuration.md, "Changing settings while Coral runs"):
//! `config_get`, `config_set`, `config_reset` through the file.
//!
//! Edits go through the file: the current file is read as JSON (so unknown keys and the user's
//! layout of sections survive), the key is changed, the result is validated as a whole, written
//! atomically, and only then swapped in. A refused edit changes neither the file nor the config
//! in force.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::Config;
use crate::error::{Error, Result};

/// Prefixes no config edit changes: the files move with `set_paths`, which moves them.
pub const PROTECTED: [&str; 2] = ["paths.", "threads."];

/// What a tool (an MCP or HTTP caller, behind which may be a model that read a hostile page)
/// may change: settings that rank, keep and forget memories. Everything else stays the user's,
/// through the CLI (`coral config set`) or the file:
///
/// - `llm.*` would send memories and the API key to another address;
/// - `embedding.*` loads model files and a native library from a path, and replaces vectors;
/// - `paths.*`, `threads.*` read and write files elsewhere;
/// - `storage.backend`, `storage.postgres_*` would send memories to another server or read
///   another tenant's;
/// - `storage.sync`, `storage.sync_interval_ms`, `storage.wal_max_bytes` and
///   `storage.vector_save_interval_seconds` decide what survives a crash.
///
/// The limits among these (`memory.capacity_threshold`, the tier sizes, the quotas) are further
/// guarded: a change that would remove more than a small share of the memories needs
/// `confirm: true` (guard.rs).
pub const TOOL_SETTABLE: [&str; 9] = [
    "memory.",
    "retrieval.",
    "heat.",
    "reload.",
    "parallelism.",
    "timeline.",
    "storage.max_bytes",
    "storage.warn_ratio",
    "storage.hard_ratio",
];

/// Sections inside [`TOOL_SETTABLE`] that stay the operator's (docs/timeline.md): which
/// namespace a server serves, what the model's read tools may return and whether they may
/// forget, and the text put into the summariser's prompts. A tool changing them would widen
/// its own reach.
pub const OPERATOR_ONLY: [&str; 3] = ["timeline.pin.", "timeline.policy.", "timeline.prompt."];

/// Whether a tool may change `key` (a dotted leaf key or a section).
pub fn tool_may_change(key: &str) -> bool {
    let operator = OPERATOR_ONLY
        .iter()
        .any(|p| key.starts_with(p) || p.strip_suffix('.') == Some(key));
    !operator
        && TOOL_SETTABLE.iter().any(|p| match p.strip_suffix('.') {
            Some(section) => key == section || key.starts_with(p),
            None => key == *p,
        })
}

/// The refusal of a tool's edit of `key` (see [`tool_may_change`]).
pub fn refuse_for_tools(key: &str) -> Error {
    Error::InvalidInput(format!(
        "{key} cannot be changed by a tool: it decides where data goes, what code runs, what \
         survives a crash or what a server hands out, so only the user changes it (`coral \
         config set {key} ...` or the config file). Tools may change: {} (but not {})",
        TOOL_SETTABLE.join(", "),
        OPERATOR_ONLY.join(", ")
    ))
}

/// Sections restored by a `config_reset` without a key.
pub const TUNABLE: [&str; 7] = [
    "memory",
    "retrieval",
    "heat",
    "storage",
    "parallelism",
    "reload",
    "timeline",
];

const SECRET: &str = "llm.api_key";

/// The value shown for a secret.
pub fn mask(secret: &str) -> Value {
    if secret.is_empty() {
        json!("")
    } else {
        json!("****")
    }
}

/// The config as JSON with the API key masked.
pub fn masked_json(config: &Config) -> Value {
    let mut v = serde_json::to_value(config).unwrap_or(Value::Null);
    if let Some(llm) = v.get_mut("llm").and_then(Value::as_object_mut) {
        llm.insert("api_key".into(), mask(&config.llm.api_key));
    }
    v
}

fn lookup<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(v, |v, k| v.get(k))
}

fn lookup_mut<'a>(v: &'a mut Value, dotted: &str) -> Option<&'a mut Value> {
    dotted.split('.').try_fold(v, |v, k| v.get_mut(k))
}

/// Every leaf key of the configuration, dotted.
pub fn leaf_keys() -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<String>) {
        match v.as_object() {
            Some(m) => {
                for (k, child) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(child, &key, out);
                }
            }
            None => out.push(prefix.to_string()),
        }
    }
    let mut out = Vec::new();
    walk(
        &serde_json::to_value(Config::default()).unwrap_or(Value::Null),
        "",
        &mut out,
    );
    out
}

fn check_key(key: &str) -> Result<()> {
    if PROTECTED.iter().any(|p| key.starts_with(p)) {
        return Err(Error::InvalidInput(format!(
            "{key} cannot be changed by a config edit: the files would stay where they are \
             (use `coral config set-paths`, which moves them)"
        )));
    }
    Ok(())
}

fn unknown(key: &str) -> Error {
    let sections: Vec<&str> = TUNABLE
        .iter()
        .copied()
        .chain(["privacy", "hooks", "llm"])
        .collect();
    Error::InvalidInput(format!(
        "no config key {key:?}; keys look like memory.capacity_threshold (sections: {})",
        sections.join(", ")
    ))
}

/// Insert `value` at a dotted path, creating sections as needed.
fn set_path(root: &mut Value, dotted: &str, value: Value) {
    let mut cur = root;
    let parts: Vec<&str> = dotted.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let obj = cur.as_object_mut().expect("made an object above");
        if i + 1 == parts.len() {
            obj.insert((*part).to_string(), value);
            return;
        }
        cur = obj
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

fn same_kind(old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::Number(o), Value::Number(n)) => {
            // A whole-number setting takes only whole numbers; a fractional one takes either.
            o.is_f64() || n.is_i64() || n.is_u64()
        }
        (Value::Bool(_), Value::Bool(_)) | (Value::String(_), Value::String(_)) => true,
        (Value::Object(_), Value::Object(_)) => true,
        // A list setting (`timeline.policy.allowed_kind_prefixes`) takes a list of strings.
        (Value::Array(_), Value::Array(items)) => items.iter().all(Value::is_string),
        _ => false,
    }
}

/// Edits of one config file, without opening the memory store: what `coral config ...` uses
/// while a server holds the data directory (the server then picks the edit up by hot reload).
#[derive(Clone, Debug)]
pub struct ConfigFile {
    path: PathBuf,
}

/// The outcome of an edit: the JSON result for the user and the config now in the file.
#[derive(Clone, Debug)]
pub struct Edit {
    /// `{key_path, old, new}` or `{reset, scope, changed}` (secrets masked).
    pub result: Value,
    /// The configuration the file now holds.
    pub config: Config,
}

impl ConfigFile {
    /// The config file at `path` (it must exist for edits).
    pub fn new(path: impl Into<PathBuf>) -> ConfigFile {
        ConfigFile { path: path.into() }
    }

    fn json(&self) -> Result<Value> {
        let text = std::fs::read_to_string(&self.path).map_err(|e| Error::Config {
            path: self.path.clone(),
            detail: format!("cannot read: {e}"),
        })?;
        serde_json::from_str(&text).map_err(|e| Error::Config {
            path: self.path.clone(),
            detail: format!("not valid JSON ({e}); fix the file before editing it"),
        })
    }

    fn current(&self) -> Result<Config> {
        let text = serde_json::to_string(&self.json()?).unwrap_or_default();
        Config::from_json(&text)
            .map(|(c, _)| c)
            .map_err(|detail| Error::Config {
                path: self.path.clone(),
                detail,
            })
    }

    /// The file's configuration (or one dotted key or section of it), API key masked.
    pub fn get(&self, path: Option<&str>) -> Result<Value> {
        get_in(&self.current()?, path)
    }

    /// Validate `edited` as a whole and write it atomically.
    fn write(&self, edited: &Value) -> Result<Config> {
        let config = self.validated(edited)?;
        let text = serde_json::to_string_pretty(edited).unwrap_or_default() + "\n";
        coral_store::write_atomic(&self.path, text.as_bytes(), true)?;
        Ok(config)
    }

    /// Validate `edited` as a whole.
    fn validated(&self, edited: &Value) -> Result<Config> {
        let text = serde_json::to_string_pretty(edited).unwrap_or_default();
        let (config, _warnings) = Config::from_json(&text).map_err(Error::InvalidInput)?;
        Ok(config)
    }

    /// Write `config`'s data paths and threads path into the file (for `set_paths`).
    pub fn write_paths(&self, config: &Config) -> Result<Config> {
        let mut edited = self.json()?;
        set_path(
            &mut edited,
            "paths",
            serde_json::to_value(&config.paths).unwrap_or(Value::Null),
        );
        set_path(
            &mut edited,
            "threads",
            serde_json::to_value(&config.threads).unwrap_or(Value::Null),
        );
        self.write(&edited)
    }

    /// Set one key (dotted path). Refuses protected prefixes, unknown keys and wrong types;
    /// writes the file atomically.
    pub fn set(&self, key_path: &str, value: Value) -> Result<Edit> {
        self.set_inner(key_path, value, true)
    }

    /// What [`ConfigFile::set`] would do, validated, without writing the file.
    pub fn preview_set(&self, key_path: &str, value: Value) -> Result<Edit> {
        self.set_inner(key_path, value, false)
    }

    fn set_inner(&self, key_path: &str, value: Value, write: bool) -> Result<Edit> {
        let key = key_path.trim();
        check_key(key)?;
        if !leaf_keys().iter().any(|k| k == key) {
            return Err(unknown(key));
        }
        let current = serde_json::to_value(self.current()?).unwrap_or(Value::Null);
        let old = lookup(&current, key).cloned().unwrap_or(Value::Null);
        if !same_kind(&old, &value) {
            return Err(Error::InvalidInput(format!(
                "{key} must be {}, got {value}",
                coral_base::kind_name(&old)
            )));
        }
        let mut edited = self.json()?;
        set_path(&mut edited, key, value);
        let config = if write {
            self.write(&edited)?
        } else {
            self.validated(&edited)?
        };
        let now = serde_json::to_value(&config).unwrap_or(Value::Null);
        let new = lookup(&now, key).cloned().unwrap_or(Value::Null);
        let show = |v: Value| match (key == SECRET, v.as_str()) {
            (true, Some(s)) => mask(s),
            _ => v,
        };
        Ok(Edit {
            result: json!({"key_path": key, "old": show(old), "new": show(new)}),
            config,
        })
    }

    /// Restore defaults for one key, one section, or (no key) every tunable section.
    pub fn reset(&self, key_path: Option<&str>) -> Result<Edit> {
        self.reset_inner(key_path, false, true)
    }

    /// [`ConfigFile::reset`] limited to what a tool may change ([`TOOL_SETTABLE`]): the other
    /// keys of a section keep their values. With `write` false, nothing is written.
    pub fn reset_for_tool(&self, key_path: Option<&str>, write: bool) -> Result<Edit> {
        self.reset_inner(key_path, true, write)
    }

    fn reset_inner(&self, key_path: Option<&str>, tool: bool, write: bool) -> Result<Edit> {
        let defaults = serde_json::to_value(Config::default()).unwrap_or(Value::Null);
        let current = serde_json::to_value(self.current()?).unwrap_or(Value::Null);
        let (scope, targets): (&str, Vec<String>) = match key_path.map(str::trim) {
            None | Some("") => ("tunable", TUNABLE.iter().map(|s| s.to_string()).collect()),
            Some(k) => {
                check_key(&format!("{k}."))?;
                check_key(k)?;
                match lookup(&defaults, k) {
                    Some(Value::Object(_)) => ("section", vec![k.to_string()]),
                    Some(_) => ("key", vec![k.to_string()]),
                    None => return Err(unknown(k)),
                }
            }
        };
        if tool
            && let Some(k) = key_path.map(str::trim).filter(|k| !k.is_empty())
            && !tool_may_change(k)
            && !TOOL_SETTABLE
                .iter()
                .any(|p| p.starts_with(&format!("{k}.")))
        {
            return Err(refuse_for_tools(k));
        }
        let mut edited = self.json()?;
        let mut changed = Vec::new();
        let mut kept = Vec::new();
        let mut values = serde_json::Map::new();
        for target in &targets {
            for leaf in leaf_keys()
                .iter()
                .filter(|l| *l == target || l.starts_with(&format!("{target}.")))
            {
                if tool && !tool_may_change(leaf) {
                    kept.push(leaf.clone());
                    continue;
                }
                if lookup(&current, leaf) != lookup(&defaults, leaf) {
                    changed.push(leaf.clone());
                    values.insert(
                        leaf.clone(),
                        json!({"old": lookup(&current, leaf), "new": lookup(&defaults, leaf)}),
                    );
                }
                let default = lookup(&defaults, leaf).cloned().unwrap_or(Value::Null);
                match lookup_mut(&mut edited, leaf) {
                    Some(slot) => *slot = default,
                    None => set_path(&mut edited, leaf, default),
                }
            }
        }
        let config = if write {
            self.write(&edited)?
        } else {
            self.validated(&edited)?
        };
        let mut result =
            json!({"reset": targets, "scope": scope, "changed": changed, "values": values});
        if !kept.is_empty() {
            result["kept"] = json!(kept);
        }
        Ok(Edit { result, config })
    }
}

/// `config` (or one dotted key or section of it) as JSON, API key masked.
pub fn get_in(config: &Config, path: Option<&str>) -> Result<Value> {
    let all = masked_json(config);
    match path.map(str::trim).filter(|p| !p.is_empty()) {
        None => Ok(all),
        Some(p) => lookup(&all, p).cloned().ok_or_else(|| unknown(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_keys_cover_every_section() {
        let keys = leaf_keys();
        for k in [
            "memory.capacity_threshold",
            "retrieval.weights.vector",
            "llm.api_key",
            "storage.sync",
        ] {
            assert!(keys.iter().any(|x| x == k), "{k}");
        }
        assert!(!keys.iter().any(|k| k == "retrieval.weights"));
    }

    #[test]
    fn kinds_follow_the_default_value() {
        assert!(same_kind(&json!(0.5), &json!(1)));
        assert!(!same_kind(&json!(5), &json!(1.5)));
        assert!(!same_kind(&json!(true), &json!("true")));
        assert!(!same_kind(&json!("weighted"), &json!(1)));
    }
}

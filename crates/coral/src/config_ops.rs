//! Config operations (SPEC 7): `config_get`, `config_set`, `config_reset`, `set_paths`.
//!
//! Edits go through the file: the current file is read as JSON (so unknown keys and the user's
//! layout of sections survive), the key is changed, the result is validated as a whole, written
//! atomically, and only then swapped in. A refused edit changes neither the file nor the config
//! in force.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::config::Config;
use crate::engine::{Coral, unix_now};
use crate::error::{Error, Result};

/// Prefixes `config_set` and `config_reset` refuse: they move data or change vectors.
pub const PROTECTED: [&str; 3] = ["paths.", "threads.", "embedding."];

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
            "{key} cannot be changed at run time: paths, threads and embedding settings move \
             data or change vectors (use set_paths, or edit the file and restart / re-embed)"
        )));
    }
    Ok(())
}

fn unknown(key: &str) -> Error {
    let sections: Vec<&str> = TUNABLE.iter().copied().chain(["llm"]).collect();
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
        _ => false,
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "a whole number",
        Value::Bool(_) => "true or false",
        Value::String(_) => "a string",
        Value::Object(_) => "a section",
        Value::Array(_) => "a list",
        Value::Null => "null",
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
        let text = serde_json::to_string_pretty(edited).unwrap_or_default() + "\n";
        let (config, _warnings) = Config::from_json(&text).map_err(Error::InvalidInput)?;
        coral_store::write_atomic(&self.path, text.as_bytes(), true)?;
        Ok(config)
    }

    /// Write `config`'s data paths and threads path into the file (for `set_paths`).
    pub(crate) fn write_paths(&self, config: &Config) -> Result<Config> {
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
                kind_name(&old)
            )));
        }
        let mut edited = self.json()?;
        set_path(&mut edited, key, value);
        let config = self.write(&edited)?;
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
        let mut edited = self.json()?;
        let mut changed = Vec::new();
        for target in &targets {
            let default = lookup(&defaults, target).cloned().unwrap_or(Value::Null);
            for leaf in leaf_keys()
                .iter()
                .filter(|l| *l == target || l.starts_with(&format!("{target}.")))
            {
                if lookup(&current, leaf) != lookup(&defaults, leaf) {
                    changed.push(leaf.clone());
                }
            }
            match lookup_mut(&mut edited, target) {
                Some(slot) => *slot = default,
                None => set_path(&mut edited, target, default),
            }
        }
        let config = self.write(&edited)?;
        Ok(Edit {
            result: json!({"reset": targets, "scope": scope, "changed": changed}),
            config,
        })
    }
}

fn get_in(config: &Config, path: Option<&str>) -> Result<Value> {
    let all = masked_json(config);
    match path.map(str::trim).filter(|p| !p.is_empty()) {
        None => Ok(all),
        Some(p) => lookup(&all, p).cloned().ok_or_else(|| unknown(p)),
    }
}

impl Coral {
    /// The configuration in force (or one dotted key or section of it), API key masked.
    pub fn config_get(&self, path: Option<&str>) -> Result<Value> {
        get_in(&self.config(), path)
    }

    fn config_file(&self) -> Result<ConfigFile> {
        self.config_path().map(ConfigFile::new).ok_or_else(|| {
            Error::InvalidInput(
                "this Coral was opened without a config file; there is nothing to edit".into(),
            )
        })
    }

    fn put_in_force(&self, mut config: Config) -> Result<()> {
        let current = self.config();
        config.base_dir = current.base_dir.clone();
        config.data_dir_override = current.data_dir_override.clone();
        self.apply_config(config, unix_now())
    }

    /// [`ConfigFile::set`] on this Coral's file, then in force at once; returns
    /// `{key_path, old, new}` (secrets masked).
    pub fn config_set(&self, key_path: &str, value: Value) -> Result<Value> {
        let edit = self.config_file()?.set(key_path, value)?;
        self.put_in_force(edit.config)?;
        Ok(edit.result)
    }

    /// [`ConfigFile::reset`] on this Coral's file, then in force at once; returns
    /// `{reset, scope, changed}`. Never touches data.
    pub fn config_reset(&self, key_path: Option<&str>) -> Result<Value> {
        let edit = self.config_file()?.reset(key_path)?;
        self.put_in_force(edit.config)?;
        Ok(edit.result)
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

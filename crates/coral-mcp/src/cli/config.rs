//! `coral config get|set|reset`: edits of the config file that need no data-directory lock, so
//! they work while an MCP server runs (which then picks the edit up by hot reload).

use clap::Subcommand;
use coral::{Config, ConfigFile};
use serde_json::Value;

use super::failure::Failure;
use super::globals::Globals;
use super::output::print_json;

/// `coral config ...`
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Show the configuration, or one dotted key or section (API key masked).
    Get {
        /// e.g. memory.capacity_threshold or retrieval
        path: Option<String>,
    },
    /// Change one key; paths.*, threads.* and embedding.* are refused.
    Set {
        /// Dotted key, e.g. retrieval.top_k
        key: String,
        /// New value: a number, true/false, or text
        value: String,
    },
    /// Move data files to new locations and record them (stop servers first; never overwrites).
    SetPaths {
        /// New paths.warm_cache (the hot tier, journal and archive move to its directory).
        #[arg(long)]
        warm_cache: Option<String>,
        /// New paths.cold_archive.
        #[arg(long)]
        cold_archive: Option<String>,
        /// New paths.vector_store.
        #[arg(long)]
        vector_store: Option<String>,
        /// New paths.vector_index.
        #[arg(long)]
        vector_index: Option<String>,
        /// New threads.path.
        #[arg(long)]
        threads: Option<String>,
    },
    /// Restore the default of one key or section, or of every tunable section.
    Reset {
        /// Dotted key or section; omit for memory, retrieval, heat, storage, parallelism, reload
        key: Option<String>,
    },
}

/// A command-line value: JSON numbers, booleans and lists of strings as such, anything else
/// as text.
fn parse_value(text: &str) -> Value {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(v @ (Value::Number(_) | Value::Bool(_))) => v,
        Ok(Value::Array(items)) if items.iter().all(Value::is_string) => Value::Array(items),
        _ => Value::String(text.to_string()),
    }
}

/// `coral config ...`: run the command on the config file and print its answer (text as it
/// is, an object as JSON).
pub fn run(cli: &Globals, command: &ConfigCommand) -> Result<u8, Failure> {
    let path = Config::resolve_path(cli.config.as_deref());
    let value = apply(&path, command)?;
    match (&value, cli.json) {
        (Value::String(s), false) => outln!("{s}"),
        (v, false) if !v.is_object() => outln!("{v}"),
        (v, _) => print_json(v),
    }
    Ok(0)
}

/// Run a config command on the config file at `path` (created with defaults when missing).
fn apply(path: &std::path::Path, command: &ConfigCommand) -> coral::Result<Value> {
    // Creates the file with defaults when missing, and refuses a file that does not parse.
    Config::load(path)?;
    let file = ConfigFile::new(path);
    match command {
        ConfigCommand::Get { path: key } => Ok(file.get(key.as_deref())?),
        ConfigCommand::Set { key, value } => Ok(file.set(key, parse_value(value))?.result),
        ConfigCommand::Reset { key } => Ok(file.reset(key.as_deref())?.result),
        ConfigCommand::SetPaths {
            warm_cache,
            cold_archive,
            vector_store,
            vector_index,
            threads,
        } => coral::set_paths(
            path,
            &coral::PathsUpdate {
                warm_cache: warm_cache.clone(),
                cold_archive: cold_archive.clone(),
                vector_store: vector_store.clone(),
                vector_index: vector_index.clone(),
                threads: threads.clone(),
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_value;
    use serde_json::json;

    #[test]
    fn values_keep_their_type() {
        assert_eq!(parse_value("8"), json!(8));
        assert_eq!(parse_value("0.25"), json!(0.25));
        assert_eq!(parse_value("true"), json!(true));
        assert_eq!(parse_value("always"), json!("always"));
        assert_eq!(parse_value("[1]"), json!("[1]"));
        assert_eq!(
            parse_value(r#"["message.", "tool.web"]"#),
            json!(["message.", "tool.web"])
        );
    }
}

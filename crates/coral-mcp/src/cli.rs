//! Command-line arguments: the command grammar (each command's own arguments live with the
//! command, in `*_cmd.rs`; the options all of them take in `globals.rs`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::globals::Globals;

/// Coral: heat-aware, persistent memory for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "coral", version, about, long_about = None)]
pub struct Cli {
    /// The options every command takes.
    #[command(flatten)]
    pub globals: Globals,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the memory tools over MCP on stdio (what MCP clients launch).
    Mcp,
    /// Serve the same tools over HTTP: POST /rpc {"tool", "args"}, GET /health, and the
    /// dashboard at / (docs/dashboard.md).
    Http(crate::http_cmd::HttpArgs),
    /// Start the HTTP server and print the dashboard's address to open in a browser.
    Ui(crate::http_cmd::HttpArgs),
    /// Read or change coral_config.json (no data-directory lock needed).
    Config {
        /// What to do with it.
        #[command(subcommand)]
        command: crate::config_cmd::ConfigCommand,
    },
    /// Health report: stats, disk, 14-day histogram, the memories closest to eviction, paths.
    Report,
    /// Report every problem in the data directory (memory files, journal, vectors, threads,
    /// timeline) without changing anything; exits 1 when there is one.
    Check,
    /// Copy the data directory (memories, threads, timeline) into DIR as one consistent
    /// version, while servers keep running; DIR is itself a data directory plus a manifest.
    Backup {
        /// New or empty directory.
        dir: std::path::PathBuf,
    },
    /// Replace the data directory with the backup in DIR (checked against its manifest first;
    /// running servers reload at their next call).
    Restore {
        /// A directory written by `coral backup`.
        dir: std::path::PathBuf,
    },
    /// What governance would remove under the config in force, and whether a changed limit is
    /// held back because it would remove many memories at once; `--confirm` applies it.
    Govern {
        /// Accept the limits in force and remove what they remove (to the archive, except
        /// disk-quota removals).
        #[arg(long)]
        confirm: bool,
    },
    /// Print the DeepSeek harness plugin (JavaScript) that forwards every tool to `coral http`.
    PluginJs {
        /// The sidecar's /rpc URL.
        #[arg(long, default_value = "http://127.0.0.1:8765/rpc")]
        url: String,
        /// Bearer token to send (when the sidecar requires one).
        #[arg(long)]
        token: Option<String>,
    },
    /// Store a memory (or, with --stdin, one per input line, acknowledging each as JSON).
    Insert {
        /// The memory text.
        text: Option<String>,
        /// Importance from 0 to 1 (default 0, as the original).
        #[arg(long, default_value_t = 0.0)]
        importance: f64,
        /// Project tag.
        #[arg(long)]
        project: Option<String>,
        /// Creation time for imported history (RFC 3339 or Unix seconds).
        #[arg(long, value_name = "TIME")]
        at: Option<String>,
        /// Read memories from standard input, one per line.
        #[arg(long)]
        stdin: bool,
        /// With --stdin: each line is a JSON object {content, importance?, project?, timestamp?};
        /// {"op": "delete", "item_id" | "content"}, {"op": "search", "query", "top_k"?} and
        /// {"op": "stats"} are accepted too, for scripts.
        #[arg(long)]
        jsonl: bool,
    },
    /// Find the memories most relevant to a query.
    Search {
        /// What to look for.
        query: String,
        /// Number of hits (default: retrieval.top_k).
        #[arg(short = 'k', long = "top-k")]
        top_k: Option<usize>,
        /// Prefer this project's memories and shared ones.
        #[arg(long)]
        project: Option<String>,
        /// Score as of this time (RFC 3339 or Unix seconds).
        #[arg(long, value_name = "TIME")]
        now: Option<String>,
        /// Show whole memories instead of 100-character summaries.
        #[arg(long)]
        full: bool,
    },
    /// Show one memory (also archived ones) as JSON.
    Get {
        /// Memory id.
        id: String,
    },
    /// Print every memory as JSON Lines.
    Export,
    /// Counts, disk usage and journal state.
    Stats,
    /// Write a checkpoint (data is durable without it).
    Flush,
    /// Delete a memory.
    Delete {
        /// Memory id.
        id: String,
    },
    /// Set a memory's importance.
    Mark {
        /// Memory id.
        id: String,
        /// Importance from 0 to 1.
        #[arg(long, default_value_t = 1.0)]
        importance: f64,
    },
    /// Copy a Python Coral memory_data/ directory into this one.
    Import {
        /// The Python Coral data directory.
        dir: PathBuf,
    },
    /// Embedding models: fetch one from the Hugging Face hub, list what is installed.
    Model {
        /// What to do with models.
        #[command(subcommand)]
        command: crate::model_cmd::ModelCommand,
    },
    /// Embed every memory again with the configured embedder (after changing models).
    Reembed,
    /// Reasoning threads: cross-chat work tracking (needs no lock on the data directory).
    Thread {
        /// What to do with threads.
        #[command(subcommand)]
        command: crate::thread_cmd::ThreadCommand,
    },
    /// The timeline a host records: its context, compaction, retrieval, catalogue and reads.
    Timeline {
        /// What to do with the timeline.
        #[command(subcommand)]
        command: crate::timeline_cmd::TimelineCommand,
    },
}

//! The `coral` command line: the grammar (`Cli`, `Command`) and the dispatch of each command
//! to the module of its group.
//!
//! One file per command group: a group with subcommands (`coral thread ...`) declares them in
//! its own file (`ThreadCommand`) and exports `run`; top-level commands are declared here and
//! handled by a function of their group's file. The options every command takes are in
//! `globals.rs`; what every command shares: `failure.rs` (exit codes), `output.rs` (printing)
//! and `session.rs` (opening and closing the memory).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[macro_use]
mod output;

mod backup;
mod config;
mod failure;
mod globals;
pub(crate) mod hook;
mod memory;
mod migrate;
mod model;
mod notice;
mod plugin;
mod report;
mod serve;
mod serve_scope;
mod session;
mod setup;
mod stream;
mod thread;
mod time;
mod timeline;
mod timeline_forget;

pub(crate) use failure::{Failure, describe};
use globals::Globals;

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
    /// Serve the memory tools over MCP on stdio (what MCP clients launch), or with --http over
    /// Streamable HTTP at /mcp (remote clients, several apps sharing one server), for one
    /// timeline namespace (the default user unless told otherwise).
    Mcp {
        /// Serve over Streamable HTTP at /mcp instead of stdio.
        #[arg(long)]
        http: bool,
        /// With --http: address to bind (anything but loopback requires a token).
        #[arg(long, default_value = "127.0.0.1", requires = "http")]
        host: std::net::IpAddr,
        /// With --http: port (0 picks a free one; the bound address is printed as JSON).
        #[arg(long, default_value_t = 8766, requires = "http")]
        port: u16,
        /// With --http: bearer token required on every request, at least 16 visible ASCII
        /// characters (default: $CORAL_HTTP_TOKEN).
        #[arg(long, requires = "http")]
        token: Option<String>,
        /// With --http: also answer requests whose Host header is this name; repeatable.
        #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
        allowed_hosts: Vec<String>,
        /// With --http: also serve browser pages from this origin; repeatable.
        #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
        allowed_origins: Vec<String>,
        /// Which timeline namespace, and what the client may do beyond reading.
        #[command(flatten)]
        scope: serve_scope::ServeScope,
    },
    /// Serve the same tools over HTTP: POST /rpc {"tool", "args"}, GET /health, and the
    /// dashboard at / (docs/dashboard.md).
    Http {
        /// Address to bind (anything but loopback requires a token).
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// Port (0 picks a free one; the bound address is printed as JSON on stdout).
        #[arg(long, default_value_t = 8765)]
        port: u16,
        /// Bearer token required on every request, at least 16 visible ASCII characters
        /// (default: $CORAL_HTTP_TOKEN).
        #[arg(long)]
        token: Option<String>,
        /// Also answer requests whose Host header is this name (`name` for any port, or
        /// `name:port`), e.g. behind a reverse proxy; repeatable. Loopback names and the bound
        /// address are always allowed.
        #[arg(long = "allowed-host", value_name = "HOST")]
        allowed_hosts: Vec<String>,
        /// Also serve browser pages from this origin (`https://app.example.com`, or `null`);
        /// repeatable. Coral's own origins (http://127.0.0.1:PORT, http://localhost:PORT) are
        /// always allowed, every other page is refused.
        #[arg(long = "allowed-origin", value_name = "ORIGIN")]
        allowed_origins: Vec<String>,
        /// Which timeline namespace (the default user unless told otherwise).
        #[command(flatten)]
        scope: serve_scope::ServeScope,
    },
    /// Start the HTTP server and print the dashboard's address to open in a browser.
    Ui {
        /// Address to bind (anything but loopback requires a token).
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// Port (0 picks a free one; the bound address is printed as JSON on stdout).
        #[arg(long, default_value_t = 8765)]
        port: u16,
        /// Bearer token required on every request, at least 16 visible ASCII characters
        /// (default: $CORAL_HTTP_TOKEN).
        #[arg(long)]
        token: Option<String>,
        /// Also answer requests whose Host header is this name (`name` for any port, or
        /// `name:port`), e.g. behind a reverse proxy; repeatable. Loopback names and the bound
        /// address are always allowed.
        #[arg(long = "allowed-host", value_name = "HOST")]
        allowed_hosts: Vec<String>,
        /// Also serve browser pages from this origin (`https://app.example.com`, or `null`);
        /// repeatable. Coral's own origins (http://127.0.0.1:PORT, http://localhost:PORT) are
        /// always allowed, every other page is refused.
        #[arg(long = "allowed-origin", value_name = "ORIGIN")]
        allowed_origins: Vec<String>,
        /// Which timeline namespace (the default user unless told otherwise).
        #[command(flatten)]
        scope: serve_scope::ServeScope,
    },
    /// Read or change coral_config.json (no data-directory lock needed).
    Config {
        /// What to do with it.
        #[command(subcommand)]
        command: config::ConfigCommand,
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
    /// Copy the data directory into a PostgreSQL tenant (--to postgres [URL]) or a tenant out
    /// into a data directory (--to dir PATH): memories of every tier as they are (ids, times,
    /// counters, projects, vectors), threads with their steps; resumable (run it again after
    /// a stop), progress on stderr, verified at the end by counts per tier and project and by
    /// sample searches (exit 1 on a difference). The timeline and the archive stay in the
    /// data directory, counted in the summary.
    Migrate(migrate::MigrateArgs),
    /// Embedding models: fetch one from the Hugging Face hub, list what is installed.
    Model {
        /// What to do with models.
        #[command(subcommand)]
        command: model::ModelCommand,
    },
    /// Embed every memory again with the configured embedder (after changing models).
    Reembed,
    /// Reasoning threads: cross-chat work tracking (needs no lock on the data directory).
    Thread {
        /// What to do with threads.
        #[command(subcommand)]
        command: thread::ThreadCommand,
    },
    /// Answer a client's hook (docs/hooks.md): `coral hook claude-code UserPromptSubmit` reads
    /// Claude Code's payload on stdin and answers on stdout; never blocks the client.
    Hook {
        /// Which client calls.
        #[command(subcommand)]
        client: hook::HookClient,
    },
    /// The memories relevant to a prompt, as the prompt hook adds them (for hosts with hooks
    /// of their own; --json for machines).
    Recall(hook::RecallArgs),
    /// Register Coral with a client (claude-desktop, claude-code, cursor, cline, dsh): its
    /// entry added or updated, never twice, the file backed up; --dry-run, --remove.
    Setup(setup::SetupArgs),
    /// The timeline a host records: its context, compaction, retrieval, catalogue and reads.
    Timeline {
        /// What to do with the timeline.
        #[command(subcommand)]
        command: timeline::TimelineCommand,
    },
}

/// Run `command`; the exit code on success (a command may report a failure of its own as 1).
pub(crate) fn run(command: &Command, cli: &Globals) -> Result<u8, Failure> {
    match command {
        Command::Mcp {
            http: false, scope, ..
        } => serve::mcp(cli, scope),
        Command::Mcp {
            http: true,
            host,
            port,
            token,
            allowed_hosts,
            allowed_origins,
            scope,
        } => serve::mcp_http(
            cli,
            serve::Net {
                host: *host,
                port: *port,
                token,
                allowed_hosts,
                allowed_origins,
            },
            scope,
        ),
        Command::Http {
            host,
            port,
            token,
            allowed_hosts,
            allowed_origins,
            scope,
        }
        | Command::Ui {
            host,
            port,
            token,
            allowed_hosts,
            allowed_origins,
            scope,
        } => serve::http(
            cli,
            serve::Net {
                host: *host,
                port: *port,
                token,
                allowed_hosts,
                allowed_origins,
            },
            scope,
            matches!(command, Command::Ui { .. }),
        ),
        Command::PluginJs { url, token } => serve::plugin_js(url, token),
        Command::Config { command } => config::run(cli, command),
        Command::Report => report::report(cli),
        Command::Check => report::check(cli),
        Command::Govern { confirm } => report::govern(cli, *confirm),
        Command::Backup { dir } => backup::backup(cli, dir),
        Command::Restore { dir } => backup::restore(cli, dir),
        Command::Import { dir } => backup::import(cli, dir),
        Command::Insert {
            text,
            importance,
            project,
            at,
            stdin,
            jsonl,
        } => memory::insert(cli, text, *importance, project, at, *stdin, *jsonl),
        Command::Search {
            query,
            top_k,
            project,
            now,
            full,
        } => memory::search(cli, query, *top_k, project, now, *full),
        Command::Get { id } => memory::get(cli, id),
        Command::Export => memory::export(cli),
        Command::Stats => memory::stats(cli),
        Command::Flush => memory::flush(cli),
        Command::Delete { id } => memory::delete(cli, id),
        Command::Mark { id, importance } => memory::mark(cli, id, *importance),
        Command::Migrate(args) => migrate::run(cli, args),
        Command::Model { command } => model::run(cli, command),
        Command::Reembed => model::reembed(cli),
        Command::Thread { command } => thread::run(cli, command),
        Command::Timeline { command } => timeline::run(cli, command),
        Command::Hook { client } => Ok(hook::run(cli, client)),
        Command::Setup(args) => Ok(setup::run(cli, args)?),
        Command::Recall(args) => {
            let recalled = hook::recall(cli, args)?;
            match (cli.json, recalled["context"].as_str()) {
                (true, _) => output::print_json(&recalled),
                (false, Some(text)) => out!("{text}"),
                (false, None) => {}
            }
            Ok(0)
        }
    }
}

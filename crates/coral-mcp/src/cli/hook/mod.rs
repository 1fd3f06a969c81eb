//! `coral hook <client> <event>` and `coral recall` (docs/hooks.md): memory a client uses
//! without the model asking. At session start a snapshot of the pinned memories and active
//! threads, at each prompt the memories relevant to it, at the end of a turn, before a
//! compaction and at the end of a session the exchange captured. A hook never blocks its
//! client: whatever goes wrong, it answers `{}`, exits 0 and says why on stderr.

mod capture;
mod claude_code;
mod payload;
mod recall;
mod relevance;
mod snapshot;
mod transcript;

use std::io::Read;

use clap::{Args, Parser, Subcommand};
use coral::{Config, Coral};
use serde_json::json;

use crate::cli::Cli;
use crate::cli::globals::Globals;

/// The clients `coral hook` answers.
#[derive(Debug, Subcommand)]
pub enum HookClient {
    /// Claude Code: the hook's JSON payload on stdin, its answer on stdout (SessionStart,
    /// UserPromptSubmit, Stop, PreCompact, SessionEnd).
    #[command(name = "claude-code")]
    ClaudeCode {
        /// The hook event: SessionStart, UserPromptSubmit, Stop, PreCompact or SessionEnd.
        event: String,
    },
}

/// `coral recall`: the memories relevant to a prompt, for hosts with hooks of their own.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// The prompt (or --stdin).
    pub prompt: Option<String>,
    /// Read the prompt from standard input.
    #[arg(long)]
    pub stdin: bool,
    /// Most memories (default: hooks.recall_top_k).
    #[arg(short = 'k', long = "top-k")]
    pub top_k: Option<usize>,
    /// Least share of content words in common, 0 to 1 (default: hooks.min_relevance).
    #[arg(long)]
    pub min_relevance: Option<f64>,
}

/// The command line, parsed as clap does, except that a `coral hook` command line that does not
/// parse answers `{}` and exits 0: a hook that exits 2 would block the user's prompt.
pub fn parse_cli() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e)
            if std::env::args().skip(1).any(|a| a == "hook")
                && !matches!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) =>
        {
            coral_mcp::errln!("coral hook: {}", e.to_string().trim_end());
            println!("{{}}");
            std::process::exit(0);
        }
        Err(e) => e.exit(),
    }
}

/// Open Coral for a hook: the config must exist (a hook never creates one in the project
/// directory the client runs it in), notices only with `-v`.
fn open(cli: &Globals) -> Result<Coral, String> {
    let path = Config::resolve_path(cli.config.as_deref());
    if !path.exists() {
        return Err(format!(
            "no Coral config at {}; give --config (`coral setup claude-code` writes it into the \
             hook entries)",
            path.display()
        ));
    }
    let mut loaded = Config::load(&path).map_err(|e| e.to_string())?;
    if let Some(dir) = &cli.data_dir {
        loaded.config.data_dir_override = Some(dir.clone());
    }
    let coral = Coral::open_loaded(loaded, &path).map_err(|e| e.to_string())?;
    if cli.verbose {
        for n in coral.notices() {
            coral_mcp::errln!("coral hook: {n}");
        }
    }
    Ok(coral)
}

/// `coral hook ...`: always exit 0.
pub fn run(cli: &Globals, client: &HookClient) -> u8 {
    match client {
        HookClient::ClaudeCode { event } => {
            let answer = claude_code::answer(event, std::io::stdin().lock(), || open(cli));
            println!("{}", answer.output);
            if !cli.quiet {
                for n in &answer.notes {
                    coral_mcp::errln!("coral hook: {n} (the client goes on without it)");
                }
            }
            if cli.verbose {
                for n in &answer.info {
                    coral_mcp::errln!("coral hook: {n}");
                }
            }
        }
    }
    0
}

/// `coral recall`: the context text, or with `--json` `{"prompt", "count", "memories",
/// "context"}`. Unlike a hook this is an ordinary command: a failure exits non-zero.
pub fn recall(cli: &Globals, args: &RecallArgs) -> anyhow::Result<serde_json::Value> {
    let usage = |m: String| anyhow::Error::from(coral::Error::InvalidInput(m));
    let prompt = match (&args.prompt, args.stdin) {
        (Some(_), true) => return Err(usage("give PROMPT or --stdin, not both".into())),
        (Some(p), false) => p.clone(),
        (None, true) => {
            let mut text = String::new();
            std::io::stdin()
                .lock()
                .take(payload::MAX_PAYLOAD_BYTES as u64)
                .read_to_string(&mut text)?;
            text
        }
        (None, false) => {
            return Err(usage(
                "nothing to recall for: give PROMPT, or --stdin".into(),
            ));
        }
    };
    let coral = open(cli).map_err(anyhow::Error::msg)?;
    let mut hooks = coral.config().hooks.clone();
    if let Some(k) = args.top_k {
        if !(1..=coral::MAX_TOP_K).contains(&k) {
            return Err(usage(format!(
                "--top-k {k} must be from 1 to {}",
                coral::MAX_TOP_K
            )));
        }
        hooks.recall_top_k = k;
    }
    if let Some(r) = args.min_relevance {
        if !(0.0..=1.0).contains(&r) {
            return Err(usage(format!("--min-relevance {r} must be from 0 to 1")));
        }
        hooks.min_relevance = r;
    }
    let recalled = recall::recall(&coral, &prompt, &hooks)?;
    let context = recall::render(&recalled, hooks.recall_max_tokens);
    Ok(json!({
        "prompt": prompt,
        "count": recalled.len(),
        "memories": recalled,
        "context": context,
    }))
}

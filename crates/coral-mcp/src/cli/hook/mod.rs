//! `coral hook <client> <event>` and `coral recall` (docs/hooks.md): memory a client uses
//! without the model asking. At session start a snapshot of the pinned memories and active
//! threads, at each prompt the memories relevant to it, at the end of a turn, before a
//! compaction and at the end of a session the exchange captured. A hook never blocks its
//! client: whatever goes wrong, it answers `{}`, exits 0 and says why on stderr. The recall
//! itself is the library's (`coral_mcp::recall`), asked of a running server when one answers
//! (`source.rs`).

mod capture;
mod claude_code;
mod payload;
mod snapshot;
mod source;
mod transcript;

use std::io::Read;

use clap::{Args, Parser, Subcommand};
use coral_mcp::recall::{self, Params};
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
        /// The project to prefer and tag captures with: a name, `auto` (the workspace of the
        /// payload's cwd) or `""` (default memory.project).
        #[arg(long, value_name = "NAME|auto")]
        project: Option<String>,
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
    /// Prefer this project's memories: a name, `auto` (the workspace of the current
    /// directory) or `""` (default memory.project).
    #[arg(long, value_name = "NAME|auto")]
    pub project: Option<String>,
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

/// `coral hook ...`: always exit 0.
pub fn run(cli: &Globals, client: &HookClient) -> u8 {
    match client {
        HookClient::ClaudeCode { event, project } => {
            let mut source = source::Source::new(cli, project.as_deref());
            let answer = claude_code::answer(event, std::io::stdin().lock(), &mut source);
            println!("{}", answer.output);
            if !cli.quiet {
                for n in answer.notes.iter().chain(&source.notes) {
                    coral_mcp::errln!("coral hook: {n} (the client goes on without it)");
                }
            }
            if cli.verbose {
                for n in answer.info.iter().chain(&source.info) {
                    coral_mcp::errln!("coral hook: {n}");
                }
            }
        }
    }
    0
}

/// `coral recall`: the context text, or with `--json` `{"prompt", "count", "memories",
/// "context"}`. Unlike a hook this is an ordinary command: a failure exits non-zero. A
/// running server answers when one owns the data directory's recall socket.
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
    let mut source = source::Source::new(cli, args.project.as_deref());
    let hooks = source.config().map_err(anyhow::Error::msg)?.hooks.clone();
    let mut params = Params::from_hooks(&hooks);
    if let Some(k) = args.top_k {
        if !(1..=coral::MAX_TOP_K).contains(&k) {
            return Err(usage(format!(
                "--top-k {k} must be from 1 to {}",
                coral::MAX_TOP_K
            )));
        }
        params.top_k = k;
    }
    if let Some(r) = args.min_relevance {
        if !(0.0..=1.0).contains(&r) {
            return Err(usage(format!("--min-relevance {r} must be from 0 to 1")));
        }
        params.min_relevance = r;
    }
    params.project = source.project(None).map_err(usage)?;
    let recalled = source.recall(&prompt, &params).map_err(anyhow::Error::msg);
    if !cli.quiet {
        for n in &source.notes {
            coral_mcp::errln!("coral: {n}");
        }
    }
    if cli.verbose {
        for n in &source.info {
            coral_mcp::errln!("coral: {n}");
        }
    }
    let recalled = recalled?;
    let context = recall::render(&recalled, hooks.recall_max_tokens);
    Ok(json!({
        "prompt": prompt,
        "count": recalled.len(),
        "memories": recalled,
        "context": context,
    }))
}

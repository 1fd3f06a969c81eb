//! `coral timeline ...`: the timeline's reads and upkeep (docs/timeline.md) from the command line,
//! for looking at what a host recorded: the context it would send, what is due, retrieval, the
//! catalogue, one entry or summary, whole turns by date.
//!
//! Every command is the tool of the same name run through the registry, so arguments are
//! checked the same way and the JSON is the same as over MCP and HTTP. A read that answers
//! `invalid_filter` or `unavailable` exits 1; an argument the tool refuses exits 2.

use coral_mcp::errln;

use clap::{Args, Subcommand};
use coral::Coral;
use coral_mcp::tools::{CallTool, ToolError};
use serde_json::{Map, Value, json};

use super::failure::{Failure, usage};
use super::globals::Globals;
use super::output::print_json;
use super::session::{finish, open};

/// Whose timeline, and in which zone.
#[derive(Debug, Args)]
pub struct Scope {
    /// The user (default "default").
    #[arg(long, value_name = "ID")]
    user: Option<String>,
    /// The conversation (default "default").
    #[arg(long, value_name = "ID")]
    conversation: Option<String>,
    /// The tenant (default "default").
    #[arg(long, value_name = "ID")]
    tenant: Option<String>,
    /// The domain (default "default").
    #[arg(long, value_name = "ID")]
    domain: Option<String>,
    /// IANA time zone of dates and times (default timeline.timezone).
    #[arg(long, value_name = "ZONE")]
    timezone: Option<String>,
}

/// `coral timeline` subcommands.
#[derive(Debug, Subcommand)]
pub enum TimelineCommand {
    /// The memory context a host puts before the current turn (the text; --json for details).
    Context {
        #[command(flatten)]
        scope: Scope,
    },
    /// Summarise what is due (raw turns past the token trigger, summaries past the roll-up
    /// count) with the LLM of llm.*.
    Compact {
        #[command(flatten)]
        scope: Scope,
    },
    /// Search past turns, tool results and summaries (words and vectors, fused).
    Retrieve {
        /// What to look for.
        query: String,
        /// A name to weigh 3× (repeatable).
        #[arg(long = "anchor", value_name = "NAME")]
        anchors: Vec<String>,
        /// One local day, YYYY-MM-DD.
        #[arg(long, value_name = "DATE")]
        date: Option<String>,
        /// With --date: morning/上午, afternoon/下午, night/晚上, midnight/凌晨.
        #[arg(long, value_name = "PERIOD", requires = "date")]
        time_of_day: Option<String>,
        /// Only these layers: raw, summary, semantic_summary (repeatable).
        #[arg(long = "layer", value_name = "LAYER")]
        layers: Vec<String>,
        /// Hits (default timeline.retrieval_limit).
        #[arg(long)]
        limit: Option<u32>,
        /// Also what the context already shows.
        #[arg(long)]
        include_visible: bool,
        /// Every conversation of the user.
        #[arg(long)]
        all_conversations: bool,
        #[command(flatten)]
        scope: Scope,
    },
    /// The summaries in time order, by date and/or keywords a stored tag must contain.
    Browse {
        /// A keyword (repeatable).
        #[arg(long = "keyword", value_name = "WORD")]
        keywords: Vec<String>,
        /// Every keyword must match (default: any).
        #[arg(long)]
        all_keywords: bool,
        /// First local day, YYYY-MM-DD.
        #[arg(long, value_name = "DATE")]
        from: Option<String>,
        /// Last local day, inclusive.
        #[arg(long, value_name = "DATE", requires = "from")]
        to: Option<String>,
        /// Cards per page.
        #[arg(long)]
        page_size: Option<u32>,
        /// next_cursor of the previous page.
        #[arg(long)]
        cursor: Option<String>,
        /// Every conversation of the user.
        #[arg(long)]
        all_conversations: bool,
        #[command(flatten)]
        scope: Scope,
    },
    /// Open an entry (e.g. the source_id of a reload card) or a summary.
    Open {
        /// The entry or summary id.
        id: String,
        /// card, content or sources.
        #[arg(long, default_value = "content")]
        view: String,
        /// view=sources: next_cursor of the previous page.
        #[arg(long)]
        cursor: Option<String>,
        /// Ids of other conversations of the user too.
        #[arg(long)]
        all_conversations: bool,
        #[command(flatten)]
        scope: Scope,
    },
    /// Forget on purpose: an entry, a turn, a summary, or what a filter matches; the text
    /// leaves the database file.
    Forget {
        #[command(flatten)]
        forget: super::timeline_forget::ForgetArgs,
        #[command(flatten)]
        scope: Scope,
    },
    /// The record of what was forgotten (never any text).
    Forgotten {
        #[command(flatten)]
        scope: Scope,
    },
    /// Whole past turns by local date (and parts of the day) or around an entry.
    Read {
        /// First local day, YYYY-MM-DD.
        #[arg(long, value_name = "DATE", conflicts_with = "around")]
        date: Option<String>,
        /// Last local day, inclusive.
        #[arg(long, value_name = "DATE", requires = "date")]
        to: Option<String>,
        /// With --date: a part of the day (repeatable).
        #[arg(long = "period", value_name = "PERIOD", requires = "date")]
        periods: Vec<String>,
        /// The turns around this entry.
        #[arg(long, value_name = "ID")]
        around: Option<String>,
        /// next_cursor of the previous page.
        #[arg(long)]
        cursor: Option<String>,
        #[command(flatten)]
        scope: Scope,
    },
}

impl Scope {
    fn args(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for (key, value) in [
            ("user_id", &self.user),
            ("conversation_id", &self.conversation),
            ("tenant_id", &self.tenant),
            ("domain_id", &self.domain),
            ("timezone", &self.timezone),
        ] {
            if let Some(v) = value {
                m.insert(key.into(), json!(v));
            }
        }
        m
    }
}

/// Insert `value` under `key` unless it is null or an empty list.
fn put(m: &mut Map<String, Value>, key: &str, value: Value) {
    let empty = value.is_null() || value.as_array().is_some_and(Vec::is_empty);
    if !empty {
        m.insert(key.into(), value);
    }
}

/// Set a boolean argument when the flag is on.
fn flag(m: &mut Map<String, Value>, key: &str, on: bool) {
    if on {
        m.insert(key.into(), json!(true));
    }
}

fn call(coral: &Coral, tool: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    coral
        .call_tool(tool, &Value::Object(args))
        .map_err(|e| match e {
            ToolError::InvalidArguments(m) => usage(m),
            other => Failure::from(anyhow::anyhow!(other.to_string())),
        })
}

/// Run one `coral timeline` command.
pub fn run(cli: &Globals, command: &TimelineCommand) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let (tool, args, text) = match command {
        TimelineCommand::Context { scope } => ("timeline_context", scope.args(), !cli.json),
        TimelineCommand::Compact { scope } => ("timeline_compact", scope.args(), false),
        TimelineCommand::Forget { forget, scope } => {
            ("timeline_forget", forget.add_to(scope.args()), false)
        }
        TimelineCommand::Forgotten { scope } => {
            let mut m = scope.args();
            m.remove("conversation_id");
            ("timeline_forgotten", m, false)
        }
        TimelineCommand::Retrieve {
            query,
            anchors,
            date,
            time_of_day,
            layers,
            limit,
            include_visible,
            all_conversations,
            scope,
        } => {
            let mut m = scope.args();
            m.insert("query".into(), json!(query));
            put(&mut m, "entity_anchors", json!(anchors));
            if let Some(d) = date {
                let mut hint = json!({"date_label": d});
                if let Some(p) = time_of_day {
                    hint["time_of_day"] = json!(p);
                }
                m.insert("time_hint".into(), hint);
            }
            put(&mut m, "source_layers", json!(layers));
            put(&mut m, "limit", json!(limit));
            flag(&mut m, "include_visible", *include_visible);
            flag(&mut m, "cross_conversation", *all_conversations);
            ("retrieve_for_turn", m, false)
        }
        TimelineCommand::Browse {
            keywords,
            all_keywords,
            from,
            to,
            page_size,
            cursor,
            all_conversations,
            scope,
        } => {
            let mut m = scope.args();
            put(&mut m, "keywords", json!(keywords));
            if *all_keywords {
                m.insert("keyword_match".into(), json!("all"));
            }
            put(&mut m, "date_from", json!(from));
            put(&mut m, "date_to", json!(to));
            put(&mut m, "page_size", json!(page_size));
            put(&mut m, "cursor", json!(cursor));
            flag(&mut m, "cross_conversation", *all_conversations);
            ("browse_memory", m, false)
        }
        TimelineCommand::Open {
            id,
            view,
            cursor,
            all_conversations,
            scope,
        } => {
            let mut m = scope.args();
            m.insert("memory_id".into(), json!(id));
            m.insert("view".into(), json!(view));
            put(&mut m, "cursor", json!(cursor));
            flag(&mut m, "cross_conversation", *all_conversations);
            ("open_memory", m, false)
        }
        TimelineCommand::Read {
            date,
            to,
            periods,
            around,
            cursor,
            scope,
        } => {
            if date.is_none() && around.is_none() {
                return Err(usage("give --date (with --to, --period) or --around ID"));
            }
            let mut m = scope.args();
            put(&mut m, "date_from", json!(date));
            put(&mut m, "date_to", json!(to));
            put(&mut m, "time_periods", json!(periods));
            put(&mut m, "anchor_source_id", json!(around));
            put(&mut m, "cursor", json!(cursor));
            ("read_timeline", m, false)
        }
    };
    let result = call(&coral, tool, args)?;
    if !cli.quiet {
        // Said out loud: damage the open contained, and a timeline that records nothing.
        for repair in coral.timeline_repairs() {
            errln!("coral: repaired: {repair}");
        }
        if let Some(why) = coral.timeline_read_only() {
            errln!("coral: note: timeline: {why}");
        }
    }
    finish(coral)?;
    if text {
        outln!("{}", result["text"].as_str().unwrap_or_default().trim_end());
    } else {
        print_json(&result);
    }
    // Reads answer failures with a status; the command says so with its exit code.
    if result["ok"] == json!(false) {
        errln!(
            "coral: {}: {}",
            result["status"].as_str().unwrap_or("failed"),
            result["message"].as_str().unwrap_or_default()
        );
        return Ok(1);
    }
    Ok(0)
}

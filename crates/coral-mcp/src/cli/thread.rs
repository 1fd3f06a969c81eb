//! `coral thread ...`: the thread operations (docs/threads.md) from the command line.
//!
//! These commands open only the threads file, never the memory store: they need no data
//! directory lock, so they work while an MCP server runs on the same directory, and several
//! can run at once (the threads file has its own lock-file protocol). With
//! `storage.backend = "postgres"` the threads are in the database, and the commands go
//! through `Coral` (docs/postgres.md).

use coral_mcp::errln;

use clap::Subcommand;
use coral::{Config, Coral, StepView, ThreadStatusReport, ThreadStore, ThreadView};
use serde_json::{Map, Value, json};

use super::failure::{Failure, usage};
use super::globals::Globals;
use super::output::print_json;
use super::stream::ack_lines;

/// `coral thread` subcommands.
#[derive(Debug, Subcommand)]
pub enum ThreadCommand {
    /// Start a thread (a piece of work several chats push forward).
    Create {
        /// Short title (at most 80 characters).
        title: String,
        /// The plan: where the work is going.
        #[arg(long)]
        summary: Option<String>,
        /// Link it under this thread.
        #[arg(long, value_name = "THREAD_ID")]
        parent: Option<String>,
        /// Who is creating it (a chat or agent name).
        #[arg(long)]
        by: Option<String>,
    },
    /// Show one thread with its steps, or the overview of open threads.
    Status {
        /// The thread to show (default: the overview).
        thread_id: Option<String>,
        /// Include archived threads in the overview.
        #[arg(long, alias = "include-archived")]
        all: bool,
        /// Only threads whose title or summary contains this (case-insensitive).
        #[arg(long)]
        query: Option<String>,
    },
    /// Record a step; with --stdin, one step per input line (one JSON line acknowledges each).
    Advance {
        /// The thread.
        thread_id: String,
        /// What happened (at most 500 characters).
        note: Option<String>,
        /// Mark the step done (default: detected from the note).
        #[arg(long, conflicts_with = "not_done")]
        done: bool,
        /// Mark the step not done.
        #[arg(long)]
        not_done: bool,
        /// Who advanced it.
        #[arg(long)]
        by: Option<String>,
        /// Read notes from standard input, one per line.
        #[arg(long)]
        stdin: bool,
    },
    /// Pause a thread, recording why as a step "[中断] reason".
    Interrupt {
        /// The thread.
        thread_id: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Hide a thread from the overview (it is kept forever).
    Archive {
        /// The thread.
        thread_id: String,
    },
    /// Make an interrupted or archived thread active again.
    Resume {
        /// The thread.
        thread_id: String,
    },
    /// Link a thread under a parent thread.
    Link {
        /// The child thread.
        child_id: String,
        /// The parent thread.
        parent_id: String,
    },
}

/// Where the threads are: the threads file, or the database behind a `Coral`.
enum Threads {
    File(ThreadStore),
    Database(Box<Coral>),
}

impl Threads {
    fn create(
        &self,
        title: &str,
        summary: Option<&str>,
        parent: Option<&str>,
        by: Option<&str>,
    ) -> coral::Result<ThreadView> {
        match self {
            Threads::File(t) => Ok(t.create(title, summary, parent, by)?),
            Threads::Database(c) => c.thread_create(title, summary, parent, by),
        }
    }

    fn status(
        &self,
        id: Option<&str>,
        all: bool,
        query: Option<&str>,
    ) -> coral::Result<ThreadStatusReport> {
        match self {
            Threads::File(t) => Ok(t.status(id, all, query)?),
            Threads::Database(c) => c.thread_status(id, all, query),
        }
    }

    fn advance(
        &self,
        id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
    ) -> coral::Result<ThreadView> {
        match self {
            Threads::File(t) => Ok(t.advance(id, note, done, by)?),
            Threads::Database(c) => c.thread_advance(id, note, done, by),
        }
    }

    fn interrupt(&self, id: &str, reason: Option<&str>) -> coral::Result<ThreadView> {
        match self {
            Threads::File(t) => Ok(t.interrupt(id, reason)?),
            Threads::Database(c) => c.thread_interrupt(id, reason),
        }
    }

    fn archive(&self, id: &str) -> coral::Result<ThreadView> {
        match self {
            Threads::File(t) => Ok(t.archive(id)?),
            Threads::Database(c) => c.thread_archive(id),
        }
    }

    fn resume(&self, id: &str) -> coral::Result<ThreadView> {
        match self {
            Threads::File(t) => Ok(t.resume(id)?),
            Threads::Database(c) => c.thread_resume(id),
        }
    }

    fn link(&self, child: &str, parent: &str) -> coral::Result<()> {
        match self {
            Threads::File(t) => Ok(t.link(child, parent)?),
            Threads::Database(c) => c.thread_link(child, parent),
        }
    }

    /// Rewrites the threads file (the database has nothing to write).
    fn flush(&self) -> Option<(coral::ThreadError, std::path::PathBuf)> {
        match self {
            Threads::File(t) => t.flush().err().map(|e| (e, t.path().to_path_buf())),
            Threads::Database(_) => None,
        }
    }
}

fn open(cli: &Globals, command: &ThreadCommand) -> Result<Threads, Failure> {
    let path = Config::resolve_path(cli.config.as_deref());
    let mut loaded = Config::load(&path)?;
    if let Some(dir) = &cli.data_dir {
        loaded.config.data_dir_override = Some(dir.clone());
    }
    if loaded.config.storage.backend() == coral::StorageBackend::Postgres {
        return Ok(Threads::Database(Box::new(super::session::open(cli)?)));
    }
    if !cli.quiet {
        for w in &loaded.warnings {
            errln!("coral: {w}");
        }
    }
    let mut options = loaded.config.thread_store_options();
    if matches!(command, ThreadCommand::Status { .. }) {
        // A status writes only journals of ended processes it replayed, which can as well
        // wait for the next writer: it waits for the lock file as long as a live writer's
        // checkpoint takes, not for a dead writer's lock to turn stale (10 s).
        options.lock_wait = std::time::Duration::from_secs(1);
    }
    let threads = ThreadStore::open_with(loaded.config.threads_path(), options)?;
    if !cli.quiet {
        if threads.unreadable_entries() > 0 {
            errln!(
                "coral: {} entr(ies) of {} are not readable threads; kept as they are",
                threads.unreadable_entries(),
                threads.path().display()
            );
        }
        for r in threads.repairs() {
            errln!("coral: {r}");
        }
    }
    Ok(Threads::File(threads))
}

/// Run one `coral thread` command.
pub fn run(cli: &Globals, command: &ThreadCommand) -> Result<u8, Failure> {
    let threads = open(cli, command)?;
    let code = match command {
        ThreadCommand::Create {
            title,
            summary,
            parent,
            by,
        } => {
            let t = threads.create(title, summary.as_deref(), parent.as_deref(), by.as_deref())?;
            show(cli, &t);
            0
        }
        ThreadCommand::Status {
            thread_id,
            all,
            query,
        } => {
            let report = threads.status(thread_id.as_deref(), *all, query.as_deref())?;
            if cli.json {
                let mut out = Map::new();
                out.insert("ok".into(), json!(true));
                if let Value::Object(m) = serde_json::to_value(&report)? {
                    out.extend(m);
                }
                print_json(&Value::Object(out));
            } else {
                match &report {
                    ThreadStatusReport::One(t) => print!("{}", render(t)),
                    ThreadStatusReport::Many(entries) if entries.is_empty() => {
                        println!("no threads{}", if *all { "" } else { " open" });
                    }
                    ThreadStatusReport::Many(entries) => {
                        for e in entries {
                            println!("{}", overview_line(&e.thread));
                            if !e.children.is_empty() {
                                println!("    children: {}", e.children.join(", "));
                            }
                        }
                    }
                }
            }
            0
        }
        ThreadCommand::Advance {
            thread_id,
            note,
            done,
            not_done,
            by,
            stdin,
        } => {
            let done = match (*done, *not_done) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            if *stdin {
                if note.is_some() {
                    return Err(usage("give NOTE or --stdin, not both"));
                }
                advance_stream(&threads, thread_id, done, by.as_deref())?
            } else {
                let Some(note) = note else {
                    return Err(usage(
                        "nothing to record: give NOTE, or --stdin to read lines",
                    ));
                };
                let t = threads.advance(thread_id, note, done, by.as_deref())?;
                show(cli, &t);
                0
            }
        }
        ThreadCommand::Interrupt { thread_id, reason } => {
            show(cli, &threads.interrupt(thread_id, reason.as_deref())?);
            0
        }
        ThreadCommand::Archive { thread_id } => {
            show(cli, &threads.archive(thread_id)?);
            0
        }
        ThreadCommand::Resume { thread_id } => {
            show(cli, &threads.resume(thread_id)?);
            0
        }
        ThreadCommand::Link {
            child_id,
            parent_id,
        } => {
            threads.link(child_id, parent_id)?;
            if cli.json {
                print_json(&json!({"ok": true}));
            } else {
                println!("linked {child_id} under {parent_id}");
            }
            0
        }
    };
    // The threads file is rewritten here. Every change above is already in the journal
    // (acknowledged), so a failed rewrite is not a failure of the command: the next process
    // that opens the threads replays the journal into the file.
    if let Some((e, path)) = threads.flush()
        && !cli.quiet
    {
        if matches!(command, ThreadCommand::Status { .. }) {
            // A status writes only what it recovered from ended processes' journals.
            errln!(
                "coral: nothing was recorded: {e}; the steps shown include ended processes' \
                 journals, which stay until a process can write {}",
                path.display()
            );
        } else {
            errln!(
                "coral: {} was not rewritten yet: {e}; the changes are in the thread journal \
                 and the next process to open the threads writes them",
                path.display()
            );
        }
    }
    Ok(code)
}

/// `advance --stdin`: one step per non-empty line, acknowledged by one JSON line each
/// (`{"ok", "thread_id", "step_id", "seq", "done"}`, or `{"line", "error"}`), printed only
/// once the step is in the thread journal, so an acknowledged step survives the process
/// being killed. Rewrites of the threads file are coalesced as in a server; it is rewritten
/// before the command exits.
fn advance_stream(
    threads: &Threads,
    thread_id: &str,
    done: Option<bool>,
    by: Option<&str>,
) -> Result<u8, Failure> {
    let failures = ack_lines(|text| {
        let t = threads.advance(thread_id, text, done, by)?;
        Ok(match t.steps.last() {
            Some(s) => json!({"ok": true, "thread_id": t.thread_id, "step_id": s.step_id,
                              "seq": s.seq, "done": s.done}),
            None => json!({"ok": true, "thread_id": t.thread_id}),
        })
    })?;
    if failures > 0 {
        errln!("coral: {failures} line(s) were not recorded (see the error lines)");
        return Ok(1);
    }
    Ok(0)
}

fn show(cli: &Globals, t: &ThreadView) {
    if cli.json {
        print_json(&json!({"ok": true, "thread": t}));
    } else {
        print!("{}", render(t));
    }
}

fn when(unix: f64) -> String {
    if !unix.is_finite() || unix <= 0.0 {
        return "?".into();
    }
    jiff::Timestamp::from_second(unix as i64)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%SZ").to_string())
        .unwrap_or_else(|_| format!("{unix}"))
}

fn mark(status: &coral::ThreadStatus) -> &'static str {
    match status {
        coral::ThreadStatus::Active => "▶",
        coral::ThreadStatus::Interrupted => "⏸",
        coral::ThreadStatus::Archived => "▦",
        _ => "?",
    }
}

fn overview_line(t: &ThreadView) -> String {
    let done = t.steps.iter().filter(|s| s.done).count();
    format!(
        "{} {}  [{}]  {done}/{} done  {}  {}",
        mark(&t.status),
        t.thread_id,
        t.status,
        t.step_count,
        when(t.updated_at),
        t.title
    )
}

fn step_line(s: &StepView) -> String {
    let who = if s.by.is_empty() {
        String::new()
    } else {
        format!("{}, ", s.by)
    };
    format!(
        "  {:>3}. {} {}  ({who}{})\n",
        s.seq,
        if s.done { "✓" } else { "·" },
        s.text,
        when(s.at)
    )
}

/// One thread in full, for people.
fn render(t: &ThreadView) -> String {
    let mut out = format!("{}\n", overview_line(t));
    if !t.summary.is_empty() {
        out.push_str(&format!("  {}\n", t.summary));
    }
    let mut facts = Vec::new();
    if let Some(p) = &t.parent_thread_id {
        facts.push(format!("parent {p}"));
    }
    if !t.last_advance_by.is_empty() {
        facts.push(format!("last advanced by {}", t.last_advance_by));
    }
    facts.push(format!("created {}", when(t.created_at)));
    out.push_str(&format!("  {}\n", facts.join(" · ")));
    for s in &t.steps {
        out.push_str(&step_line(s));
    }
    out
}

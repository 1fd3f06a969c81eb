//! The `coral` binary: command-line access to a Coral memory (docs/servers.md,
//! "Command-line input").
//!
//! Exit codes: 0 ok, 1 runtime error, 2 usage error (bad arguments or input).

/// `println!` that ends the process quietly when stdout is closed (`coral export | head`)
/// instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` with the same behaviour as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!($($arg)*))
    };
}

/// Write to stdout; a closed pipe ends the process with success, like other Unix tools.
fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        errln!("coral: error: cannot write output: {e}");
        std::process::exit(1);
    }
}

mod cli;
mod config_cmd;
mod globals;
mod http_cmd;
mod model_cmd;
mod notice;
mod plugin;
mod thread_cmd;
mod time;
mod timeline_cmd;

use coral_mcp::{errln, mcp};

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use coral::{Config, Coral, Insert, InsertOptions, SearchOptions};
use serde_json::{Value, json};

use cli::{Cli, Command};
use globals::Globals;

/// An error with the exit code it maps to.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        // A thread store's error reads as the facade's (ids echoed within bounds, bad input
        // exits 2), as it did when the facade wrapped the store.
        let error = match e.into().downcast::<coral::ThreadError>() {
            Ok(e) => anyhow::Error::from(coral::Error::from(e)),
            Err(e) => e,
        };
        let code = match error.downcast_ref::<coral::Error>() {
            Some(coral::Error::InvalidInput(_)) => 2,
            _ => 1,
        };
        Failure { code, error }
    }
}

fn usage(msg: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        error: anyhow::anyhow!(msg.into()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli.command, &cli.globals) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            errln!("coral: error: {}", describe(&f.error));
            ExitCode::from(f.code)
        }
    }
}

/// An error and its causes, each cause added only when the message so far does not already say
/// it (the library errors include their cause in their own message).
fn describe(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
    }
    text
}

/// The configuration with `--data-dir` applied, for commands that do not open the store.
fn load_config(cli: &Globals) -> Result<Config, Failure> {
    let path = Config::resolve_path(cli.config.as_deref());
    let mut loaded = Config::load(&path)?;
    if let Some(dir) = &cli.data_dir {
        loaded.config.data_dir_override = Some(dir.clone());
    }
    Ok(loaded.config)
}

fn open(cli: &Globals) -> Result<Coral, Failure> {
    let path = Config::resolve_path(cli.config.as_deref());
    let mut loaded = Config::load(&path)?;
    if let Some(dir) = &cli.data_dir {
        loaded.config.data_dir_override = Some(dir.clone());
    }
    let coral = Coral::open_loaded(loaded, &path)?;
    if !cli.quiet {
        let embedder_note = coral.stats().embedder_note;
        for n in coral.notices() {
            if embedder_note.as_deref() == Some(n.as_str()) && !cli.verbose {
                // The embedder's fallback is a standing fact, not news: said once per data
                // directory, in one line; `-v` says it in full every time.
                let dir = coral.config().store_paths().dir;
                if notice::first_time(&dir, n) {
                    errln!("coral: {} (said once; -v for details)", notice::short(n));
                }
            } else {
                errln!("coral: {n}");
            }
        }
    }
    Ok(coral)
}

/// Close after a command: say on stderr when nothing was recorded (a read-only store, a full
/// disk) and what closing could not do without losing anything.
fn finish(coral: Coral) -> Result<(), Failure> {
    if let Some(why) = coral.unrecorded() {
        errln!("coral: note: {why}");
    }
    for warning in coral.close()? {
        errln!("coral: warning: {warning}");
    }
    Ok(())
}

fn print_json(value: &serde_json::Value) {
    // Escaped like every JSON Coral shows: stored text cannot move a terminal's cursor or
    // start a line (C1 controls, LS, PS).
    outln!(
        "{}",
        coral::json_for_model(&serde_json::to_string_pretty(value).unwrap_or_default())
    );
}

fn run(command: &Command, cli: &Globals) -> Result<u8, Failure> {
    match command {
        Command::Config { command } => {
            let path = Config::resolve_path(cli.config.as_deref());
            let value = config_cmd::run(&path, command)?;
            match (&value, cli.json) {
                (Value::String(s), false) => outln!("{s}"),
                (v, false) if !v.is_object() => outln!("{v}"),
                (v, _) => print_json(v),
            }
            Ok(0)
        }
        Command::Report => {
            let coral = open(cli)?;
            let report = coral.report();
            if cli.json {
                print_json(&serde_json::to_value(&report)?);
            } else {
                print_report(&report);
            }
            finish(coral)?;
            Ok(0)
        }
        Command::Check => {
            let config = load_config(cli)?;
            let report = coral::check(&config);
            if cli.json {
                print_json(&serde_json::to_value(&report)?);
            } else {
                outln!(
                    "{} memories in the files, {} journal record(s) since the checkpoint, {} \
                     vector row(s)",
                    report.items,
                    report.journal_records,
                    report.vectors
                );
                for f in &report.findings {
                    let label = match f.severity {
                        coral::Severity::Problem => "problem",
                        _ => "note",
                    };
                    outln!("{label}: {}: {}", f.path.display(), f.detail);
                }
                if report.findings.is_empty() {
                    outln!("no problems found");
                }
            }
            Ok(if report.has_problems() { 1 } else { 0 })
        }
        Command::Backup { dir } => {
            let config = load_config(cli)?;
            let manifest = coral::backup(&config, dir)?;
            if cli.json {
                print_json(&serde_json::to_value(&manifest)?);
            } else {
                outln!(
                    "backed up {} memories, {} thread(s){} into {} ({} files, {} bytes)",
                    manifest.memories,
                    manifest.threads,
                    if manifest.timeline {
                        " and the timeline"
                    } else {
                        ""
                    },
                    dir.display(),
                    manifest.files.len(),
                    manifest.files.iter().map(|f| f.bytes).sum::<u64>()
                );
            }
            Ok(0)
        }
        Command::Restore { dir } => {
            let config = load_config(cli)?;
            let restored = coral::restore(&config, dir)?;
            let m = &restored.manifest;
            if cli.json {
                print_json(&serde_json::to_value(&restored)?);
            } else {
                outln!(
                    "restored {} memories, {} thread(s){} from {} (made {:.0}) into {}",
                    m.memories,
                    m.threads,
                    if m.timeline { " and the timeline" } else { "" },
                    dir.display(),
                    m.created_at,
                    restored.data_dir.display()
                );
            }
            Ok(0)
        }
        Command::Govern { confirm } => {
            let coral = open(cli)?;
            if *confirm {
                let done = coral.confirm_removals()?;
                if cli.json {
                    print_json(&serde_json::to_value(&done)?);
                } else {
                    outln!(
                        "governed: {} memories before, {} after{}",
                        done.before,
                        done.after,
                        if done.preview.is_some() {
                            " (the held change is applied)"
                        } else {
                            ""
                        }
                    );
                }
            } else {
                let (preview, held) = coral.removal_preview();
                if cli.json {
                    print_json(&json!({"preview": preview, "held": held}));
                } else {
                    match &held {
                        Some(h) => outln!(
                            "held since {:.0}: {}\n  would remove {} of {} memories ({}); {}",
                            h.since,
                            h.preview.changes.join(", "),
                            h.preview.would_remove,
                            h.preview.memories,
                            reasons(&h.preview.by_reason),
                            h.confirm
                        ),
                        None => outln!(
                            "nothing held; the limits in force would remove {} of {} memories now",
                            preview.would_remove,
                            preview.memories
                        ),
                    }
                }
            }
            finish(coral)?;
            Ok(0)
        }
        Command::PluginJs { url, token } => {
            out!("{}", plugin::plugin_js(url, token.as_deref()));
            Ok(0)
        }
        Command::Mcp => {
            let coral = open(cli)?;
            mcp::serve(coral)?;
            Ok(0)
        }
        Command::Http(args) => http_cmd::run(cli, args, false),
        Command::Ui(args) => http_cmd::run(cli, args, true),
        Command::Insert {
            text,
            importance,
            project,
            at,
            stdin,
            jsonl,
        } => {
            let coral = open(cli)?;
            let at = at
                .as_deref()
                .map(time::parse_time)
                .transpose()
                .map_err(usage)?;
            if *stdin || *jsonl {
                if text.is_some() {
                    return Err(usage("give TEXT or --stdin, not both"));
                }
                return insert_stream(&coral, *importance, project.clone(), at, *jsonl);
            }
            let Some(text) = text else {
                return Err(usage(
                    "nothing to insert: give TEXT, or --stdin to read lines",
                ));
            };
            let outcome = coral.insert_with(
                text,
                InsertOptions {
                    importance: *importance,
                    project: project.clone(),
                    timestamp: at,
                    now: None,
                },
            )?;
            if cli.json {
                print_json(&insert_json(&outcome));
            } else if outcome.inserted() {
                outln!("inserted {}", outcome.id());
            } else {
                outln!(
                    "merged into {} (a similar memory already existed)",
                    outcome.id()
                );
            }
            finish(coral)?;
            Ok(0)
        }
        Command::Search {
            query,
            top_k,
            project,
            now,
            full,
        } => {
            let coral = open(cli)?;
            let now = now
                .as_deref()
                .map(time::parse_time)
                .transpose()
                .map_err(usage)?;
            let hits = coral.search_with(
                query,
                SearchOptions {
                    top_k: *top_k,
                    project: project.clone(),
                    min_score: None,
                    now,
                },
            )?;
            if cli.json {
                print_json(&json!({"query": query, "count": hits.len(), "hits": hits}));
            } else if hits.is_empty() {
                outln!("no memories match");
            } else {
                for (i, h) in hits.iter().enumerate() {
                    let text = if *full {
                        h.item.content.clone()
                    } else {
                        shorten(&h.item.content, 100)
                    };
                    outln!(
                        "{:>2}. {:.3}  (vector {:.3}, jaccard {:.3}, time {:.3})  {} [{}]",
                        i + 1,
                        h.score,
                        h.scores.vector,
                        h.scores.jaccard,
                        h.scores.time,
                        h.item.item_id,
                        h.tier
                    );
                    outln!("    {text}");
                }
            }
            finish(coral)?;
            Ok(0)
        }
        Command::Get { id } => {
            let coral = open(cli)?;
            let code = if let Some(m) = coral.get(id) {
                print_json(&serde_json::to_value(&m)?);
                0
            } else if let Some(item) = coral.get_archived(id)? {
                let mut v = serde_json::to_value(&item)?;
                v["tier"] = json!("archive");
                print_json(&v);
                0
            } else {
                errln!("coral: no memory with id {id}");
                1
            };
            finish(coral)?;
            Ok(code)
        }
        Command::Export => {
            let coral = open(cli)?;
            let mut out = std::io::stdout().lock();
            for m in coral.export() {
                serde_json::to_writer(&mut out, &m)?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
            drop(out);
            finish(coral)?;
            Ok(0)
        }
        Command::Stats => {
            let coral = open(cli)?;
            let stats = coral.stats();
            let disk = coral.disk_usage();
            if cli.json {
                print_json(&json!({"ok": true, "stats": stats, "disk_usage": disk}));
            } else {
                outln!(
                    "memories: {} (hot {}, warm {}, cold {}), capacity {}",
                    stats.total,
                    stats.hot,
                    stats.warm,
                    stats.cold,
                    stats.capacity_threshold
                );
                outln!(
                    "vectors: {} × {} dims, embedder {}",
                    stats.vectors,
                    stats.dim,
                    stats.embedder
                );
                if let Some(why) = &stats.embedder_note {
                    outln!("embedder note: {why}");
                }
                if let Some(why) = &stats.vectors_disabled {
                    outln!("vectors not scored: {why}");
                }
                outln!(
                    "disk: {} bytes ({} data + {} vectors){}",
                    disk.total_bytes,
                    disk.data_bytes,
                    disk.projected_vector_bytes,
                    disk.ratio
                        .map(|r| format!(", {:.0}% of the budget", r * 100.0))
                        .unwrap_or_default()
                );
                outln!(
                    "journal: {} bytes since checkpoint {}",
                    stats.journal_bytes,
                    stats.generation
                );
                if stats.skipped_lines > 0 {
                    outln!("skipped lines kept in files: {}", stats.skipped_lines);
                }
                for r in &stats.repairs {
                    outln!("repair: {r}");
                }
            }
            finish(coral)?;
            Ok(0)
        }
        Command::Flush => {
            let coral = open(cli)?;
            coral.flush()?;
            if cli.json {
                print_json(&json!({"flushed": true, "stats": coral.stats()}));
            } else {
                outln!("checkpoint written (data was already durable in the journal)");
            }
            finish(coral)?;
            Ok(0)
        }
        Command::Delete { id } => {
            let coral = open(cli)?;
            let ok = coral.delete(id)?;
            if cli.json {
                print_json(&json!({"ok": ok, "item_id": id}));
            } else if ok {
                outln!("deleted {id}");
            } else {
                errln!("coral: no memory with id {id}");
            }
            finish(coral)?;
            Ok(if ok { 0 } else { 1 })
        }
        Command::Mark { id, importance } => {
            let coral = open(cli)?;
            let item = coral.mark_important(id, *importance)?;
            if cli.json {
                print_json(&json!({"ok": true, "item_id": id, "importance": item.importance}));
            } else {
                outln!("{id} importance {}", item.importance);
            }
            finish(coral)?;
            Ok(0)
        }
        Command::Import { dir } => import(cli, dir),
        Command::Thread { command } => thread_cmd::run(cli, command),
        Command::Timeline { command } => timeline_cmd::run(cli, command),
        Command::Model { command } => model_cmd::run(cli, command),
        Command::Reembed => model_cmd::reembed(cli),
    }
}

fn import(cli: &Globals, dir: &Path) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("importing {bar:40} {pos}/{len} items")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    if cli.quiet {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let report = coral.import_python_dir(dir, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if cli.json {
        print_json(&serde_json::to_value(&report)?);
    } else {
        outln!(
            "found {} item(s) ({}); imported {}, already present {}, vectors computed {}, \
             unparseable entries left in the source {}",
            report.found.values().sum::<usize>(),
            report
                .found
                .iter()
                .map(|(t, n)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            report.imported,
            report.already_present,
            report.vectors_recomputed,
            report.skipped_lines
        );
        if let Some(t) = &report.threads {
            outln!(
                "threads: found {}; added {}, merged {} ({} step(s) added in all), already \
                 present {}, unreadable entries left out {}",
                t.found,
                t.added,
                t.merged,
                t.steps_added,
                t.unchanged,
                t.unreadable_entries
            );
        }
        for n in &report.notes {
            outln!("  {n}");
        }
    }
    finish(coral)?;
    Ok(0)
}

fn insert_json(outcome: &Insert) -> serde_json::Value {
    json!({"item_id": outcome.id(), "inserted": outcome.inserted()})
}

/// Read stdin line by line; for every line, run `handle` and write exactly one JSON
/// acknowledgement line, flushed before the next line is read, so the n-th ack answers the
/// n-th line: the handler's object with `"ok": true`, or `{"line", "ok": false, "error"}`.
/// A blank line is such an error (there is nothing to store), like an empty `coral insert ""`.
/// Returns how many lines failed. An acknowledgement that cannot be written ends the stream
/// with an error naming its line and whether that line was stored.
pub(crate) fn ack_lines(
    mut handle: impl FnMut(&str) -> anyhow::Result<Value>,
) -> Result<usize, Failure> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut failures = 0usize;
    for (n, line) in stdin.split(b'\n').enumerate() {
        let line = line?;
        let line_no = n + 1;
        let result = match std::str::from_utf8(&line) {
            Err(_) => Err(anyhow::anyhow!("line {line_no} is not valid UTF-8")),
            Ok(text) => {
                let text = text.strip_suffix('\r').unwrap_or(text);
                if text.trim().is_empty() {
                    Err(anyhow::anyhow!(
                        "line {line_no} is blank: nothing was stored (remove blank lines, or \
                         give each line some text)"
                    ))
                } else {
                    handle(text)
                }
            }
        };
        let ack = match result {
            Ok(Value::Object(mut fields)) => {
                fields.entry("ok").or_insert(Value::Bool(true));
                Value::Object(fields)
            }
            Ok(other) => other,
            Err(e) => {
                failures += 1;
                json!({"line": line_no, "ok": false, "error": coral::bound_message(format!("{e:#}"))})
            }
        };
        let recorded = ack["ok"] == true;
        let written = serde_json::to_writer(&mut out, &ack)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if let Err(e) = written {
            // The caller can no longer tell what was stored from what was not: stop reading,
            // and say where the stream stopped.
            return Err(anyhow::anyhow!(
                "cannot write the acknowledgement of line {line_no} to standard output ({e}): \
                 line {line_no} {}, and no later line was read",
                if recorded {
                    "was stored"
                } else {
                    "was not stored"
                }
            )
            .into());
        }
    }
    Ok(failures)
}

/// `insert --stdin`: one memory per line; one JSON acknowledgement line per memory, printed
/// and flushed only once the memory is durable.
fn insert_stream(
    coral: &Coral,
    importance: f64,
    project: Option<String>,
    at: Option<f64>,
    jsonl: bool,
) -> Result<u8, Failure> {
    let failures = ack_lines(|text| {
        if jsonl {
            let op = parse_jsonl(text, importance, project.clone(), at)?;
            return run_op(coral, op);
        }
        let options = InsertOptions {
            importance,
            project: project.clone(),
            timestamp: at,
            now: None,
        };
        Ok(insert_json(&coral.insert_with(text, options)?))
    })?;
    coral.flush()?;
    if failures > 0 {
        errln!("coral: {failures} line(s) were not inserted (see the error lines)");
        return Ok(1);
    }
    Ok(0)
}

/// One line of `insert --stdin --jsonl`: an insert (the default), or, for scripts and tests
/// that drive several processes, a delete, a search or a stats call.
enum JsonOp {
    Insert(String, InsertOptions),
    Delete(String),
    Search(String, Option<usize>),
    Stats,
}

fn run_op(coral: &Coral, op: JsonOp) -> anyhow::Result<Value> {
    Ok(match op {
        JsonOp::Insert(content, options) => insert_json(&coral.insert_with(&content, options)?),
        JsonOp::Delete(id) => json!({"item_id": id, "deleted": coral.delete(&id)?}),
        JsonOp::Search(query, top_k) => {
            let hits = coral.search_with(
                &query,
                SearchOptions {
                    top_k,
                    ..SearchOptions::default()
                },
            )?;
            let ids: Vec<&str> = hits.iter().map(|h| h.item.item_id.as_str()).collect();
            json!({"query": query, "hits": ids})
        }
        JsonOp::Stats => {
            let s = coral.stats();
            json!({"total": s.total, "hot": s.hot, "warm": s.warm, "cold": s.cold})
        }
    })
}

fn parse_jsonl(
    text: &str,
    importance: f64,
    project: Option<String>,
    at: Option<f64>,
) -> anyhow::Result<JsonOp> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        op: Option<String>,
        content: Option<String>,
        item_id: Option<String>,
        query: Option<String>,
        top_k: Option<usize>,
        importance: Option<f64>,
        project: Option<String>,
        timestamp: Option<serde_json::Value>,
    }
    let line: Line = serde_json::from_str(text)?;
    match line.op.as_deref().unwrap_or("insert") {
        "insert" => {}
        "delete" => {
            let id = match (line.item_id, line.content) {
                (Some(id), _) => id,
                (None, Some(content)) => coral::item_id(&content),
                (None, None) => anyhow::bail!("a delete needs item_id or content"),
            };
            return Ok(JsonOp::Delete(id));
        }
        "search" => {
            let query = line
                .query
                .ok_or_else(|| anyhow::anyhow!("a search needs a query"))?;
            return Ok(JsonOp::Search(query, line.top_k));
        }
        "stats" => return Ok(JsonOp::Stats),
        other => anyhow::bail!(
            "op {} is not insert, delete, search or stats",
            coral::echo(other)
        ),
    }
    let content = line
        .content
        .ok_or_else(|| anyhow::anyhow!("an insert needs content"))?;
    let timestamp = match line.timestamp {
        None | Some(serde_json::Value::Null) => at,
        Some(serde_json::Value::Number(n)) => n.as_f64(),
        Some(serde_json::Value::String(s)) => {
            Some(time::parse_time(&s).map_err(anyhow::Error::msg)?)
        }
        Some(other) => anyhow::bail!(
            "timestamp {} is neither a number nor a date",
            coral::echo_json(&other)
        ),
    };
    Ok(JsonOp::Insert(
        content,
        InsertOptions {
            importance: line.importance.unwrap_or(importance),
            project: line.project.or(project),
            timestamp,
            now: None,
        },
    ))
}

/// Collapse whitespace and cut to `max` chars with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        collapsed
    } else {
        collapsed.chars().take(max).collect::<String>() + "…"
    }
}

/// `"a 3, b 1"` of a count map.
fn reasons(counts: &std::collections::BTreeMap<String, usize>) -> String {
    counts
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_report(r: &coral::Report) {
    let s = &r.stats;
    outln!(
        "memories: {} (hot {}, warm {}, cold {}) of capacity {}; threads {}",
        s.total,
        s.hot,
        s.warm,
        s.cold,
        s.capacity_threshold,
        s.threads
    );
    outln!(
        "disk: {} bytes{}",
        r.disk_usage.total_bytes,
        r.disk_usage
            .ratio
            .map(|x| format!(" ({:.0}% of the budget)", x * 100.0))
            .unwrap_or_default()
    );
    if let Some(e) = &s.config_error {
        outln!("config error: {e}");
    }
    outln!("new memories per day (UTC):");
    for d in &r.day_histogram {
        outln!(
            "  {}  {:>5}  {}",
            d.date,
            d.count,
            "#".repeat(d.count.min(60))
        );
    }
    if let Some(h) = &r.held_change {
        outln!(
            "held change: {} would remove {} of {} memories ({}); {}",
            h.preview.changes.join(", "),
            h.preview.would_remove,
            h.preview.memories,
            reasons(&h.preview.by_reason),
            h.confirm
        );
    }
    if !r.removed.is_empty() {
        outln!("removed recently (governance and quotas):");
        for x in &r.removed {
            outln!(
                "  {}  {:<13} {:>5}  ({})",
                coral::civil_date((x.at / 86_400.0).floor() as i64),
                x.reason,
                x.count,
                reasons(&x.tiers)
            );
        }
    }
    outln!("closest to eviction:");
    for c in &r.eviction_preview {
        outln!("  {:.3}  {:<4}  {}  {}", c.heat, c.tier, c.id, c.content);
    }
    outln!("files:");
    let p = &r.paths;
    for (label, path) in [
        ("config", &p.config),
        ("data", &p.data_dir),
        ("journal", &p.journal),
        ("archive", &p.archive),
        ("threads", &p.threads),
    ] {
        outln!("  {label:<8} {path}");
    }
}

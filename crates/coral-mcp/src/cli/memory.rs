//! The memory commands: `coral insert`, `search`, `get`, `export`, `stats`, `flush`, `delete`
//! and `mark`.

use std::io::Write;

use coral::{InsertOptions, SearchOptions};
use coral_mcp::errln;
use serde_json::json;

use super::failure::{Failure, usage};
use super::globals::Globals;
use super::output::print_json;
use super::session::{finish, open};
use super::stream::{insert_json, insert_stream};
use super::time;

/// `coral insert`: one memory, or with `--stdin` one per input line.
pub(crate) fn insert(
    cli: &Globals,
    text: &Option<String>,
    importance: f64,
    project: &Option<String>,
    at: &Option<String>,
    stdin: bool,
    jsonl: bool,
) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let at = at
        .as_deref()
        .map(time::parse_time)
        .transpose()
        .map_err(usage)?;
    if stdin || jsonl {
        if text.is_some() {
            return Err(usage("give TEXT or --stdin, not both"));
        }
        return insert_stream(&coral, importance, project.clone(), at, jsonl);
    }
    let Some(text) = text else {
        return Err(usage(
            "nothing to insert: give TEXT, or --stdin to read lines",
        ));
    };
    let outcome = coral.insert_with(
        text,
        InsertOptions {
            importance,
            project: project.clone(),
            timestamp: at,
            now: None,
        },
    )?;
    if !outcome.redacted.is_empty() && !cli.quiet {
        errln!(
            "coral: {} secret(s) replaced by [redacted:…] before storing ({})",
            outcome.redacted.len(),
            outcome.redacted.join(", ")
        );
    }
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

/// `coral search`: the memories most relevant to a query.
pub(crate) fn search(
    cli: &Globals,
    query: &str,
    top_k: Option<usize>,
    project: &Option<String>,
    now: &Option<String>,
    full: bool,
) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let now = now
        .as_deref()
        .map(time::parse_time)
        .transpose()
        .map_err(usage)?;
    let hits = coral.search_with(
        query,
        SearchOptions {
            top_k,
            project: project.clone(),
            min_score: None,
            now,
            timezone: None,
        },
    )?;
    if cli.json {
        print_json(&json!({"query": query, "count": hits.len(), "hits": hits}));
    } else if hits.is_empty() {
        outln!("no memories match");
    } else {
        for (i, h) in hits.iter().enumerate() {
            let text = if full {
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

/// `coral get`: one memory (also an archived one) as JSON; exit 1 when there is none.
pub(crate) fn get(cli: &Globals, id: &str) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let code = if let Some(m) = coral.get(id)? {
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

/// `coral export`: every memory as JSON Lines.
pub(crate) fn export(cli: &Globals) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let mut out = std::io::stdout().lock();
    for m in coral.export()? {
        serde_json::to_writer(&mut out, &m)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(out);
    finish(coral)?;
    Ok(0)
}

/// `coral stats`: counts, disk usage and journal state.
pub(crate) fn stats(cli: &Globals) -> Result<u8, Failure> {
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
        if let Some(tenant) = &stats.tenant {
            outln!(
                "backend: {} (tenant {})",
                stats.backend,
                coral::echo(tenant)
            );
        } else {
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
        }
        if let Some(why) = &stats.backend_error {
            outln!("backend error: {why}");
        }
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

/// `coral flush`: write a checkpoint.
pub(crate) fn flush(cli: &Globals) -> Result<u8, Failure> {
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

/// `coral delete`: exit 1 when there was no such memory.
pub(crate) fn delete(cli: &Globals, id: &str) -> Result<u8, Failure> {
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

/// `coral mark`: set a memory's importance.
pub(crate) fn mark(cli: &Globals, id: &str, importance: f64) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let item = coral.mark_important(id, importance)?;
    if cli.json {
        print_json(&json!({"ok": true, "item_id": id, "importance": item.importance}));
    } else {
        outln!("{id} importance {}", item.importance);
    }
    finish(coral)?;
    Ok(0)
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

//! What the data directory holds and what governance would do: `coral report`, `check` and
//! `govern`.

use serde_json::json;

use super::failure::Failure;
use super::globals::Globals;
use super::output::print_json;
use super::session::{finish, load_config, open};

/// `coral report`: the health report.
pub(crate) fn report(cli: &Globals) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let report = coral.report()?;
    if cli.json {
        print_json(&serde_json::to_value(&report)?);
    } else {
        print_report(&report);
    }
    finish(coral)?;
    Ok(0)
}

/// `coral check`: every problem in the data directory, changing nothing; exit 1 when there
/// is one.
pub(crate) fn check(cli: &Globals) -> Result<u8, Failure> {
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

/// `coral govern`: what governance would remove, and what change is held; `--confirm`
/// applies it.
pub(crate) fn govern(cli: &Globals, confirm: bool) -> Result<u8, Failure> {
    let coral = open(cli)?;
    if confirm {
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
        let (preview, held) = coral.removal_preview()?;
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

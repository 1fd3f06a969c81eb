//! `coral migrate`: the data directory into a PostgreSQL tenant (`--to postgres [URL]`) or a
//! tenant into a data directory (`--to dir PATH`), with progress on stderr, a summary on
//! stdout (JSON with `--json`) and exit 1 when the verification finds a difference
//! (docs/postgres.md, "Migrating").

use std::path::Path;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use coral::{MigrateOptions, MigrateReport, Progress};
use coral_mcp::errln;

use super::failure::{Failure, usage};
use super::globals::Globals;
use super::output::print_json;
use super::session::load_config;

/// Where `coral migrate` copies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// The data directory (the config's, or --data-dir) into a PostgreSQL tenant.
    Postgres,
    /// A PostgreSQL tenant into a new data directory.
    Dir,
}

/// `coral migrate`'s arguments.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// postgres: copy the data directory into a tenant; dir: copy a tenant out into a data
    /// directory.
    #[arg(long, value_enum)]
    pub to: Target,
    /// With --to postgres: the database URL (default: storage.postgres_url, else
    /// $CORAL_POSTGRES_URL). With --to dir: the data directory to write (new, empty, or one a
    /// stopped migration left).
    #[arg(value_name = "URL|PATH")]
    pub destination: Option<String>,
    /// With --to dir: the database URL to read (default: storage.postgres_url, else
    /// $CORAL_POSTGRES_URL).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The tenant (default: storage.postgres_tenant).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Memories per transaction (1 to 10000).
    #[arg(long, default_value_t = 500)]
    pub batch: usize,
    /// With --to postgres: batches written at once, each on its own connection (at most
    /// storage.postgres_pool_size).
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Sample searches compared on both sides at the end.
    #[arg(long, default_value_t = 5)]
    pub samples: usize,
}

/// Progress lines on stderr: the first two calls (the start and the first batch), the last,
/// and otherwise at most one a second.
struct Lines {
    quiet: bool,
    calls: usize,
    started: Instant,
    last: Instant,
}

impl Lines {
    fn say(&mut self, p: Progress) {
        self.calls += 1;
        let due =
            self.calls <= 2 || p.done == p.total || self.last.elapsed() >= Duration::from_secs(1);
        if self.quiet || !due {
            return;
        }
        self.last = Instant::now();
        let pct = if p.total == 0 {
            100.0
        } else {
            p.done as f64 * 100.0 / p.total as f64
        };
        errln!(
            "coral: migrate: {} {}/{} ({pct:.0}%, {:.1} s)",
            p.what,
            p.done,
            p.total,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// `coral migrate`.
pub(crate) fn run(cli: &Globals, args: &MigrateArgs) -> Result<u8, Failure> {
    let config = load_config(cli)?;
    let options = MigrateOptions {
        batch: args.batch,
        samples: args.samples,
        jobs: args.jobs,
    };
    let now = Instant::now();
    let mut lines = Lines {
        quiet: cli.quiet,
        calls: 0,
        started: now,
        last: now,
    };
    let report = match args.to {
        Target::Postgres => {
            if args.url.is_some() {
                return Err(usage(
                    "with --to postgres the URL is the argument: coral migrate --to postgres URL",
                ));
            }
            coral::migrate_to_postgres(
                &config,
                args.destination.as_deref(),
                args.tenant.as_deref(),
                &options,
                |p| lines.say(p),
            )?
        }
        Target::Dir => {
            let Some(dir) = &args.destination else {
                return Err(usage(
                    "--to dir needs the data directory to write: coral migrate --to dir PATH",
                ));
            };
            coral::migrate_to_dir(
                &config,
                args.url.as_deref(),
                args.tenant.as_deref(),
                Path::new(dir),
                &options,
                |p| lines.say(p),
            )?
        }
    };
    say_left_behind(cli, &report);
    if cli.json {
        print_json(&serde_json::to_value(&report)?);
    } else {
        summary(&report);
    }
    if !report.verification.ok {
        errln!(
            "coral: error: the verification found differences: {}; the copied rows stay (run \
             coral migrate again to resume, or compare with coral export)",
            report.verification.problems.join("; ")
        );
        return Ok(1);
    }
    Ok(0)
}

/// What was not migrated, on stderr, so that nothing is dropped silently.
fn say_left_behind(cli: &Globals, r: &MigrateReport) {
    if cli.quiet {
        return;
    }
    let l = &r.left_behind;
    if let Some(t) = &l.timeline
        && (t.turns > 0 || t.entries > 0 || t.summaries > 0)
    {
        errln!(
            "coral: note: the timeline stays in {} ({} turn(s), {} entr(ies), {} summar(ies)): \
             the postgres backend has no timeline yet",
            r.source,
            t.turns,
            t.entries,
            t.summaries
        );
    }
    if l.archived > 0 {
        errln!(
            "coral: note: {} archived memor(ies) stay in {}'s archive: the postgres backend has \
             no archive yet",
            l.archived,
            r.source
        );
    }
    if !l.projects_without_memories.is_empty() {
        errln!(
            "coral: note: {} project name(s) without memories are not copied (a data \
             directory knows projects by its memories): {}",
            l.projects_without_memories.len(),
            l.projects_without_memories.join(", ")
        );
    }
}

fn summary(r: &MigrateReport) {
    outln!(
        "migrated {} to {} (tenant {}, embedder {}) in {:.1} s",
        r.source,
        r.target,
        coral::echo(&r.tenant),
        r.embedder,
        r.seconds
    );
    outln!(
        "memories: {} in the source, {} copied, {} already there ({:.0} /s); vectors copied {}, \
         computed {}",
        r.memories.found,
        r.memories.copied,
        r.memories.already_there,
        r.memories_per_second,
        r.vectors_copied,
        r.vectors_computed
    );
    outln!(
        "threads: {} in the source, {} copied ({} step(s)), {} already there",
        r.threads.found,
        r.threads.copied,
        r.steps_copied,
        r.threads.already_there
    );
    let v = &r.verification;
    let matched = v.searches.iter().filter(|s| s.matched).count();
    outln!(
        "verified: {} count(s) per tier and project, threads {} / {}, steps {} / {}, sample \
         searches {matched} of {} with the same best hit: {}",
        v.counts.len(),
        v.threads[0],
        v.threads[1],
        v.steps[0],
        v.steps[1],
        v.searches.len(),
        if v.ok { "ok" } else { "DIFFERENCES" }
    );
}

//! `coral setup <client>` (docs/servers.md, "Setting up a client"): Coral's entry added to or
//! updated in the client's config file (the absolute binary and config paths), never twice;
//! for Claude Code also its hook entries. The file is backed up before it is written and
//! replaced atomically; `--dry-run` prints the change as a diff, `--remove` takes it out
//! again. Every byte outside Coral's entry stays as it was (comments, other servers, anchors).

mod clients;
mod diff;
mod jsonc;
mod yaml_list;

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};

use crate::cli::globals::Globals;
use clients::{Client, Env, Format, OWNED_KEYS};

/// `coral setup` arguments.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The client: claude-desktop, claude-code, cursor, cline or dsh.
    #[arg(value_enum)]
    pub client: Client,
    /// The client's config file (default: where the client keeps it on this system).
    #[arg(long, value_name = "PATH")]
    pub config_file: Option<PathBuf>,
    /// Claude Code: the settings file its hooks go into (default: ~/.claude/settings.json).
    #[arg(long, value_name = "PATH")]
    pub settings_file: Option<PathBuf>,
    /// Claude Code: register the MCP server only, no hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// DSH: the profile whose cordis.patch.yml to edit.
    #[arg(long, default_value = "default")]
    pub profile: String,
    /// Print the change as a diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take Coral's entry (and hooks) out again.
    #[arg(long)]
    pub remove: bool,
}

/// The Claude Code hook events Coral answers, with the timeout each entry asks for: recall and
/// the snapshot answer in milliseconds, captures may wait for a busy data directory.
const HOOK_EVENTS: [(&str, u64); 5] = [
    ("SessionStart", 10),
    ("UserPromptSubmit", 10),
    ("Stop", 30),
    ("PreCompact", 30),
    ("SessionEnd", 30),
];

/// What one file needs.
struct Change {
    path: PathBuf,
    old: Option<String>,
    new: String,
}

/// `coral setup`: exit 0 when done (or nothing to do), errors as usual.
pub fn run(cli: &Globals, args: &SetupArgs) -> anyhow::Result<u8> {
    let env = Env::current();
    let usage = |m: String| anyhow::Error::from(coral::Error::InvalidInput(m));
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| anyhow::anyhow!("cannot find this program's own path: {e}"))?;
    let config = coral_config(cli, &env).map_err(usage)?;
    let file = match &args.config_file {
        Some(p) => absolute(p)?,
        None => args
            .client
            .default_file(&env, &args.profile)
            .map_err(usage)?,
    };
    let mut changes = vec![server_change(
        args.client,
        &file,
        &binary,
        &config,
        args.remove,
    )?];
    if args.client == Client::ClaudeCode && !args.no_hooks {
        let settings = match &args.settings_file {
            Some(p) => absolute(p)?,
            None => Client::claude_settings(&env).map_err(usage)?,
        };
        changes.push(hooks_change(&settings, &binary, &config, args.remove)?);
    } else if args.settings_file.is_some() {
        return Err(usage(
            "--settings-file is for claude-code's hooks only".to_string(),
        ));
    }
    let mut report = Vec::new();
    for c in &changes {
        let unchanged =
            c.old.as_deref() == Some(c.new.as_str()) || (c.old.is_none() && args.remove);
        let action = match (unchanged, args.remove, c.old.is_some()) {
            (true, _, _) => "unchanged",
            (false, true, _) => "removed",
            (false, false, true) => "updated",
            (false, false, false) => "created",
        };
        let mut backup = None;
        if args.dry_run {
            let d = diff::unified(
                &c.path.display().to_string(),
                c.old.as_deref().unwrap_or(""),
                &c.new,
            );
            if !cli.json {
                out!("{d}");
            }
        } else if !unchanged {
            if let Some(old) = &c.old {
                backup = Some(write_backup(&c.path, old)?);
            }
            write_atomic(&c.path, &c.new)?;
        }
        report.push(json!({"path": c.path, "action": action, "backup": backup}));
    }
    if !args.dry_run && !args.remove {
        // The config Coral will be started with, created with the defaults when missing.
        coral::Config::load(&config)?;
    }
    if cli.json {
        crate::cli::output::print_json(&json!({
            "client": args.client.name(),
            "dry_run": args.dry_run,
            "binary": binary,
            "config": config,
            "files": report,
        }));
    } else {
        for r in &report {
            let verb = match (r["action"].as_str(), args.dry_run) {
                (Some("unchanged"), _) => "already up to date:".to_string(),
                (Some(a), true) => format!("would be {a}:"),
                (Some(a), false) => format!("{a}:"),
                (None, _) => String::new(),
            };
            let backup = r["backup"]
                .as_str()
                .map(|b| format!(" (backup {b})"))
                .unwrap_or_default();
            outln!(
                "coral setup {}: {verb} {}{backup}",
                args.client.name(),
                r["path"].as_str().unwrap_or_default()
            );
        }
        if !args.remove && !args.dry_run {
            outln!(
                "coral setup {}: Coral runs as {} with {}; restart the client to load it",
                args.client.name(),
                binary.display(),
                config.display()
            );
        }
    }
    Ok(0)
}

/// The Coral config the client will start Coral with: `--config`, else
/// `$CORAL_CONFIG_PATH`, else `coral/coral_config.json` in the user's config directory, as an
/// absolute path (a client starts Coral in a directory of its own choosing).
fn coral_config(cli: &Globals, env: &Env) -> Result<PathBuf, String> {
    let explicit = cli
        .config
        .clone()
        .or_else(|| (env.var)("CORAL_CONFIG_PATH").map(PathBuf::from));
    match explicit {
        Some(p) => absolute(&p).map_err(|e| e.to_string()),
        None => {
            let base = match (env.var)("XDG_CONFIG_HOME") {
                Some(x) => PathBuf::from(x),
                None => env.home()?.join(".config"),
            };
            Ok(base.join("coral").join("coral_config.json"))
        }
    }
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!("{} is not UTF-8 text; nothing was changed", path.display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    }
}

fn invalid(path: &Path, detail: impl std::fmt::Display) -> anyhow::Error {
    coral::Error::InvalidInput(format!("{}: {detail}; nothing was changed", path.display())).into()
}

/// The server entry's change in the client's file.
fn server_change(
    client: Client,
    path: &Path,
    binary: &Path,
    config: &Path,
    remove: bool,
) -> anyhow::Result<Change> {
    let old = read(path)?;
    let text = old.clone().unwrap_or_default();
    let new = match client.format() {
        Format::YamlList => {
            let entry = (!remove).then(|| Client::yaml_entry(binary, config));
            yaml_list::edit(&text, entry.as_deref())
                .map_err(|e| invalid(path, e))?
                .unwrap_or(text)
        }
        Format::Json { comments } => {
            let doc = jsonc::Document::parse(&text, comments).map_err(|e| invalid(path, e))?;
            let at = ["mcpServers", "coral"];
            if remove {
                match doc.remove(&at).map_err(|e| invalid(path, e))? {
                    Some(d) => d.text().to_string(),
                    None => text,
                }
            } else {
                let mut entry = client.json_entry(binary, config);
                // An existing entry keeps the user's keys (env, autoApprove, ...); Coral sets
                // only its own.
                if let Some(Value::Object(existing)) = doc.get(&at) {
                    let mut merged = existing.clone();
                    if let Value::Object(ours) = &entry {
                        for (k, v) in ours {
                            if OWNED_KEYS.contains(&k.as_str()) || !merged.contains_key(k) {
                                merged.insert(k.clone(), v.clone());
                            }
                        }
                    }
                    entry = Value::Object(merged);
                    if doc.get(&at) == Some(entry.clone()) {
                        return Ok(Change {
                            path: path.to_path_buf(),
                            new: text,
                            old,
                        });
                    }
                }
                doc.set(&at, &entry)
                    .map_err(|e| invalid(path, e))?
                    .text()
                    .to_string()
            }
        }
    };
    Ok(Change {
        path: path.to_path_buf(),
        old,
        new,
    })
}

/// A shell word: single-quoted, with `'` written `'\''` (Claude Code runs hook commands with
/// the shell).
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Whether a hook handler is one of Coral's (whatever binary path it names).
fn is_ours(handler: &Value) -> bool {
    handler["command"]
        .as_str()
        .is_some_and(|c| c.contains(" hook claude-code "))
}

/// The hook entries' change in Claude Code's settings: per event, Coral's handler replaced
/// where it is, added in a group of its own when missing, removed with `remove` (and with it a
/// group or event left empty). Other hooks are left alone.
fn hooks_change(path: &Path, binary: &Path, config: &Path, remove: bool) -> anyhow::Result<Change> {
    let old = read(path)?;
    let text = old.clone().unwrap_or_default();
    let mut doc = jsonc::Document::parse(&text, false).map_err(|e| invalid(path, e))?;
    for (event, timeout) in HOOK_EVENTS {
        let ours = json!({
            "type": "command",
            "command": format!(
                "{} --config {} hook claude-code {event}",
                shell_quote(&binary.display().to_string()),
                shell_quote(&config.display().to_string())
            ),
            "timeout": timeout,
        });
        let at = ["hooks", event];
        let groups = match doc.get(&at) {
            None => Vec::new(),
            Some(Value::Array(groups)) => groups,
            Some(other) => {
                return Err(invalid(
                    path,
                    format!("hooks.{event} is {}, not a list", coral::kind_name(&other)),
                ));
            }
        };
        let mut placed = false;
        let mut next = Vec::new();
        for mut group in groups.iter().cloned() {
            let Some(handlers) = group.get("hooks").and_then(Value::as_array).cloned() else {
                next.push(group);
                continue;
            };
            let had_ours = handlers.iter().any(is_ours);
            let mut kept = Vec::new();
            for h in handlers {
                if !is_ours(&h) {
                    kept.push(h);
                } else if !remove && !placed {
                    kept.push(ours.clone());
                    placed = true;
                }
            }
            if had_ours && kept.is_empty() {
                continue;
            }
            group["hooks"] = Value::Array(kept);
            next.push(group);
        }
        if !remove && !placed {
            next.push(json!({"hooks": [ours]}));
        }
        if next == groups {
            continue;
        }
        doc = if next.is_empty() {
            doc.remove(&at)
                .map_err(|e| invalid(path, e))?
                .unwrap_or(doc)
        } else {
            doc.set(&at, &Value::Array(next))
                .map_err(|e| invalid(path, e))?
        };
    }
    if remove && doc.get(&["hooks"]) == Some(json!({})) {
        doc = doc
            .remove(&["hooks"])
            .map_err(|e| invalid(path, e))?
            .unwrap_or(doc);
    }
    Ok(Change {
        path: path.to_path_buf(),
        old,
        new: doc.text().to_string(),
    })
}

/// Copy the file's current text beside it: `<name>.coral-backup-<unix seconds>` (a number
/// after it when that exists). Returns its path.
fn write_backup(path: &Path, text: &str) -> anyhow::Result<String> {
    let now = coral::unix_now() as u64;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    for n in 0..1000 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!("-{n}")
        };
        let backup = path.with_file_name(format!("{name}.coral-backup-{now}{suffix}"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&backup)
        {
            Ok(mut f) => {
                // As private as the file it copies (~/.claude.json is the user's alone).
                std::fs::metadata(path)
                    .and_then(|m| f.set_permissions(m.permissions()))
                    .and_then(|()| std::io::Write::write_all(&mut f, text.as_bytes()))
                    .and_then(|()| f.sync_all())
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", backup.display()))?;
                return Ok(backup.display().to_string());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "cannot back up {} to {}: {e}; nothing was changed",
                    path.display(),
                    backup.display()
                ));
            }
        }
    }
    Err(anyhow::anyhow!(
        "too many backups of {} this second",
        path.display()
    ))
}

/// Write `text` to a temporary file beside `path`, sync it, and rename it over `path`: a
/// client reading the file sees the old one or the new one, never half of either.
fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.coral-tmp-{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        // The new file keeps the old one's permissions.
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        std::io::Write::write_all(&mut f, text.as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::anyhow!("cannot write {}: {e}", path.display()));
    }
    Ok(())
}

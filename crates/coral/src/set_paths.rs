//! `set_paths`: move the data files to new locations and record them in the config file.
//!
//! Runs while no process uses the data directory (it takes the directory lock), never
//! overwrites an existing file, and is idempotent: running it again after a completed (or
//! interrupted) move finishes the move and changes nothing else.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{Error, Result};
use coral_config::Config;
use coral_config::ConfigFile;

/// New locations; `None` keeps a file where it is. Relative paths are relative to the config
/// file's directory, as in the config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathsUpdate {
    /// `paths.warm_cache` (its directory is the data directory: the hot tier, journal and
    /// archive move with it).
    pub warm_cache: Option<String>,
    /// `paths.cold_archive`.
    pub cold_archive: Option<String>,
    /// `paths.vector_store`.
    pub vector_store: Option<String>,
    /// `paths.vector_index`.
    pub vector_index: Option<String>,
    /// `threads.path`.
    pub threads: Option<String>,
}

fn move_file(from: &Path, to: &Path, moved: &mut Vec<Value>) -> Result<()> {
    if from == to {
        return Ok(());
    }
    match (from.exists(), to.exists()) {
        (false, _) => Ok(()), // nothing to move, or already moved: idempotent
        (true, true) => Err(Error::InvalidInput(format!(
            "{} already exists; refusing to overwrite it with {} (move or delete one of them first)",
            to.display(),
            from.display()
        ))),
        (true, false) => {
            if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    Error::InvalidInput(format!("cannot create {}: {e}", dir.display()))
                })?;
            }
            if std::fs::rename(from, to).is_err() {
                // Another file system: copy durably, then remove the original.
                let bytes = std::fs::read(from).map_err(|e| {
                    Error::InvalidInput(format!("cannot read {}: {e}", from.display()))
                })?;
                coral_store::write_atomic(to, &bytes, true)?;
                std::fs::remove_file(from).map_err(|e| {
                    Error::InvalidInput(format!(
                        "copied, but cannot remove {}: {e}",
                        from.display()
                    ))
                })?;
            }
            moved.push(json!({"from": from.display().to_string(), "to": to.display().to_string()}));
            Ok(())
        }
    }
}

/// Move the files named in `update` and write the new paths into the config file at
/// `config_path`. Returns `{moved: [{from, to}], paths, threads_path, restart_needed}`.
pub fn set_paths(config_path: &Path, update: &PathsUpdate) -> Result<Value> {
    let loaded = Config::load(config_path)?;
    let old = loaded.config;
    if old.data_dir_override.is_some() {
        return Err(Error::InvalidInput(
            "CORAL_DATA_DIR overrides the configured paths; unset it before moving files".into(),
        ));
    }
    let mut new = old.clone();
    let fields = [
        (&update.warm_cache, &mut new.paths.warm_cache),
        (&update.cold_archive, &mut new.paths.cold_archive),
        (&update.vector_store, &mut new.paths.vector_store),
        (&update.vector_index, &mut new.paths.vector_index),
        (&update.threads, &mut new.threads.path),
    ];
    for (given, slot) in fields {
        if let Some(p) = given {
            if p.trim().is_empty() {
                return Err(Error::InvalidInput("a new path is empty".into()));
            }
            *slot = p.clone();
        }
    }
    let from = old.store_paths();
    let to = new.store_paths();
    // Nobody may write while files move.
    std::fs::create_dir_all(&from.dir).ok();
    let lock = coral_store::DirLock::acquire(&from.attach)?;
    let mut moved = Vec::new();
    // The timeline follows the data directory, with its SQLite side files (a `-wal` left by
    // a process that did not close cleanly holds committed transactions).
    let (old_timeline, new_timeline) = (old.timeline_path(), new.timeline_path());
    let side = |p: &PathBuf, suffix: &str| {
        let mut name = p.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    let timeline_files = [
        (old_timeline.clone(), new_timeline.clone()),
        (side(&old_timeline, "-wal"), side(&new_timeline, "-wal")),
        (side(&old_timeline, "-shm"), side(&new_timeline, "-shm")),
    ];
    let (old_threads, new_threads) = (old.threads_path(), new.threads_path());
    // The vectors' embedder tag and checksums follow the vector file.
    let (old_meta, new_meta) = (from.vector_meta(), to.vector_meta());
    let mut pairs: Vec<(&PathBuf, &PathBuf)> = vec![
        (&from.cold, &to.cold),
        (&from.vectors, &to.vectors),
        (&old_meta, &new_meta),
        (&from.sums, &to.sums),
        (&from.bitmaps, &to.bitmaps),
        (&from.keywords, &to.keywords),
        (&from.index, &to.index),
        (&from.item_meta, &to.item_meta),
        (&from.warm, &to.warm),
        (&from.hot, &to.hot),
        (&from.wal, &to.wal),
        (&from.archive, &to.archive),
        (&old_threads, &new_threads),
    ];
    pairs.extend(timeline_files.iter().map(|(a, b)| (a, b)));
    // The thread journals go with the threads file: an ended process's journal holds steps
    // the file does not have yet, and is replayed only from beside the file.
    let journals = coral_thread::journal_moves(&old_threads, &new_threads).map_err(|e| {
        Error::InvalidInput(format!(
            "cannot list the thread journals beside {}: {e} (nothing was moved)",
            old_threads.display()
        ))
    })?;
    pairs.extend(journals.iter().map(|(a, b)| (a, b)));
    // Check every destination first so a refusal moves nothing.
    for &(a, b) in &pairs {
        if a != b && a.exists() && b.exists() {
            return Err(Error::InvalidInput(format!(
                "{} already exists; refusing to overwrite it with {} (nothing was moved)",
                b.display(),
                a.display()
            )));
        }
    }
    for &(a, b) in &pairs {
        move_file(a, b, &mut moved)?;
    }
    drop(lock);
    let file = ConfigFile::new(config_path);
    let edit = file.write_paths(&new)?;
    Ok(json!({
        "moved": moved,
        "paths": edit.paths,
        "threads_path": edit.threads.path,
        "restart_needed": true,
    }))
}

//! A command's memory: the configuration with `--data-dir` applied, opening (with its notices)
//! and closing (with what it could not do).

use coral::{Config, Coral};
use coral_mcp::errln;

use super::failure::Failure;
use super::globals::Globals;
use super::notice;

/// The configuration as its file says, for commands that touch no data directory (models:
/// `--data-dir` does not apply).
pub(crate) fn config_file(cli: &Globals) -> Result<Config, Failure> {
    let path = Config::resolve_path(cli.config.as_deref());
    Ok(Config::load(&path)?.config)
}

/// The configuration with `--data-dir` applied, for commands that do not open the store.
pub(crate) fn load_config(cli: &Globals) -> Result<Config, Failure> {
    let path = Config::resolve_path(cli.config.as_deref());
    let mut loaded = Config::load(&path)?;
    if let Some(dir) = &cli.data_dir {
        loaded.config.data_dir_override = Some(dir.clone());
    }
    Ok(loaded.config)
}

/// Open the memory for a command, saying its notices on stderr (unless `--quiet`).
pub(crate) fn open(cli: &Globals) -> Result<Coral, Failure> {
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
pub(crate) fn finish(coral: Coral) -> Result<(), Failure> {
    if let Some(why) = coral.unrecorded() {
        errln!("coral: note: {why}");
    }
    for warning in coral.close()? {
        errln!("coral: warning: {warning}");
    }
    Ok(())
}

//! The options every `coral` command takes (config file, data directory, output), apart from
//! the command grammar so that a command's module depends on these alone.

use std::path::PathBuf;

use clap::Args;

/// Options before or after any subcommand.
#[derive(Debug, Args)]
pub struct Globals {
    /// Config file (default: $CORAL_CONFIG_PATH, else ./coral_config.json; created if missing).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Keep every data file in this directory (overrides the config and $CORAL_DATA_DIR).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    pub json: bool,
    /// Print no notices on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print more detail on stderr.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

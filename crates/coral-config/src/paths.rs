//! Where the data files are: the store's (`paths.*`, or a data-directory override), the
//! threads file and the timeline database, all resolved against the config file's directory.

use std::path::{Path, PathBuf};

use super::Config;

/// File name of the threads file inside a data-directory override.
pub const THREADS_FILE: &str = "coral_threads.json";

/// File name of the timeline database inside the data directory.
pub const TIMELINE_FILE: &str = "coral_timeline.sqlite3";

impl Config {
    /// Resolve a configured path against the config file's directory.
    pub fn resolve(&self, configured: &str) -> PathBuf {
        let p = Path::new(configured);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }

    /// Where the store's files are.
    pub fn store_paths(&self) -> coral_store::StorePaths {
        if let Some(dir) = &self.data_dir_override {
            return coral_store::StorePaths::in_dir(dir);
        }
        let warm = self.resolve(&self.paths.warm_cache);
        let dir = warm
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.base_dir.clone());
        let mut paths = coral_store::StorePaths::in_dir(dir);
        paths.warm = warm;
        paths.cold = self.resolve(&self.paths.cold_archive);
        paths.vectors = self.resolve(&self.paths.vector_store);
        paths.index = self.resolve(&self.paths.vector_index);
        paths.sums = paths.vectors.with_extension("sums");
        paths
    }

    /// The threads file: `threads.path` resolved against the config file's directory, or
    /// `coral_threads.json` in the data directory when one overrides the paths
    /// (`CORAL_DATA_DIR`, `--data-dir`).
    pub fn threads_path(&self) -> PathBuf {
        match &self.data_dir_override {
            Some(dir) => dir.join(THREADS_FILE),
            None => self.resolve(&self.threads.path),
        }
    }

    /// The timeline database: `coral_timeline.sqlite3` next to the store's files.
    pub fn timeline_path(&self) -> PathBuf {
        self.store_paths().dir.join(TIMELINE_FILE)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::Config;

    #[test]
    fn relative_paths_resolve_against_the_config_directory() {
        let mut c = Config {
            base_dir: PathBuf::from("/srv/agent"),
            ..Config::default()
        };
        let p = c.store_paths();
        assert_eq!(
            p.warm,
            PathBuf::from("/srv/agent/memory_data/coral_warm.json")
        );
        assert_eq!(
            p.wal,
            PathBuf::from("/srv/agent/memory_data/coral_wal.jsonl")
        );
        c.data_dir_override = Some(PathBuf::from("/data"));
        assert_eq!(
            c.store_paths().cold,
            PathBuf::from("/data/coral_cold.jsonl")
        );
    }
}

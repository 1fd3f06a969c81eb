//! The configuration in force: one snapshot, swapped whole when it changes (a call keeps the
//! snapshot it loaded), and the watcher of the file it came from. Settings that need a restart
//! keep their values until then.

use std::sync::Arc;

use arc_swap::ArcSwap;
use coral_base::secrets::Redaction;

use crate::Config;
use crate::reload::Reloader;

/// The configuration in force and, when opened from a file, its watcher.
pub struct LiveConfig {
    current: ArcSwap<Config>,
    reloader: Option<Reloader>,
    /// `privacy.redact_secrets` in force, shared with the thread store and the timeline,
    /// which hold no config of their own.
    redaction: Redaction,
}

impl LiveConfig {
    /// `config` in force, watching no file.
    pub fn new(config: Config) -> LiveConfig {
        LiveConfig {
            redaction: Redaction::new(config.privacy.redact_secrets),
            current: ArcSwap::from_pointee(config),
            reloader: None,
        }
    }

    /// The redaction switch that follows `privacy.redact_secrets`.
    pub fn redaction(&self) -> &Redaction {
        &self.redaction
    }

    /// Watch the file the configuration came from.
    pub fn watch(&mut self, reloader: Reloader) {
        self.reloader = Some(reloader);
    }

    /// The configuration in force.
    pub fn load(&self) -> Arc<Config> {
        self.current.load_full()
    }

    /// The file's watcher, when there is a file.
    pub fn reloader(&self) -> Option<&Reloader> {
        self.reloader.as_ref()
    }

    /// Put `config` in force, keeping the settings that need a restart (recorded for
    /// `stats().restart_needed`), and return it.
    pub fn swap(&self, mut config: Config) -> Arc<Config> {
        let current = self.load();
        let pending = restart_keys(&current, &config);
        // Settings that need a restart stay as they are until then.
        config.paths = current.paths.clone();
        config.threads = current.threads.clone();
        config.embedding = current.embedding.clone();
        // Where memories live: the open store is the data directory's or the database's.
        let storage = &current.storage;
        config.storage.backend = storage.backend.clone();
        config.storage.postgres_url = storage.postgres_url.clone();
        config.storage.postgres_tenant = storage.postgres_tenant.clone();
        config.storage.postgres_pool_size = storage.postgres_pool_size;
        config.base_dir = current.base_dir.clone();
        config.data_dir_override = current.data_dir_override.clone();
        self.redaction.set(config.privacy.redact_secrets);
        let config = Arc::new(config);
        self.current.store(Arc::clone(&config));
        if let Some(r) = &self.reloader {
            r.set_restart_needed(pending);
        }
        config
    }
}

/// Keys whose change needs a restart (or a re-embed), compared between two configs.
fn restart_keys(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if old.paths != new.paths {
        out.push("paths".to_string());
    }
    if old.threads != new.threads {
        out.push("threads.path".to_string());
    }
    if old.embedding != new.embedding {
        out.push("embedding (needs coral reembed)".to_string());
    }
    let (a, b) = (&old.storage, &new.storage);
    if (
        &a.backend,
        &a.postgres_url,
        &a.postgres_tenant,
        a.postgres_pool_size,
    ) != (
        &b.backend,
        &b.postgres_url,
        &b.postgres_tenant,
        b.postgres_pool_size,
    ) {
        out.push("storage.backend and storage.postgres_*".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_memories_live_changes_only_at_a_restart() {
        let live = LiveConfig::new(Config::default());
        let mut edited = Config::default();
        edited.storage.backend = "postgres".into();
        edited.storage.postgres_tenant = "team-a".into();
        edited.storage.max_bytes = 1 << 30;
        assert_eq!(
            restart_keys(&live.load(), &edited),
            ["storage.backend and storage.postgres_*"]
        );
        let now = live.swap(edited);
        assert_eq!(now.storage.backend, "local", "the open store stays");
        assert_eq!(now.storage.postgres_tenant, "");
        assert_eq!(
            now.storage.max_bytes,
            1 << 30,
            "the rest of storage.* applies now"
        );
    }
}

//! `storage.backend` and the PostgreSQL settings beside it (docs/postgres.md): which store holds
//! the memories, and the checks of `storage.postgres_*`.

use super::sections::StorageConfig;

/// `storage.backend`: where memories live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageBackend {
    /// The data directory (the default): journal, the original's files, lock files.
    Local,
    /// A PostgreSQL database with pgvector, shared by processes on many machines.
    Postgres,
}

impl StorageBackend {
    /// Every backend, in the order messages list them.
    pub const ALL: [StorageBackend; 2] = [StorageBackend::Local, StorageBackend::Postgres];

    /// The config file's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageBackend::Local => "local",
            StorageBackend::Postgres => "postgres",
        }
    }

    /// The backend a config value names, if any.
    pub fn parse(value: &str) -> Option<StorageBackend> {
        StorageBackend::ALL
            .into_iter()
            .find(|b| b.as_str() == value)
    }
}

/// Longest `storage.postgres_tenant`, in bytes (coral-pg's limit).
const MAX_TENANT_BYTES: usize = 200;

impl StorageConfig {
    /// `storage.backend` as a [`StorageBackend`]. A value [`super::Config::validate`] refuses
    /// reads as `local`; every configuration Coral opens has passed it.
    pub fn backend(&self) -> StorageBackend {
        StorageBackend::parse(&self.backend).unwrap_or(StorageBackend::Local)
    }

    /// Every problem with `storage.backend` and `storage.postgres_*`, one sentence each.
    pub(crate) fn backend_problems(&self, p: &mut Vec<String>) {
        let Some(backend) = StorageBackend::parse(&self.backend) else {
            p.push(format!(
                "storage.backend = {} must be \"local\" or \"postgres\"",
                coral_base::echo(&self.backend)
            ));
            return;
        };
        if !(1..=256).contains(&self.postgres_pool_size) {
            p.push(format!(
                "storage.postgres_pool_size = {} must be in 1..=256",
                self.postgres_pool_size
            ));
        }
        let url = self.postgres_url.trim();
        let scheme_ok = ["postgres://", "postgresql://"]
            .iter()
            .any(|scheme| url.starts_with(scheme));
        if !url.is_empty() && !scheme_ok {
            p.push(
                "storage.postgres_url must start with postgres:// or postgresql:// (its value is \
                 not repeated here: it may hold a password)"
                    .into(),
            );
        }
        if backend == StorageBackend::Postgres {
            let t = &self.postgres_tenant;
            let why = if t.is_empty() {
                Some("is empty: name this installation's tenant, e.g. \"team-a\"")
            } else if t.len() > MAX_TENANT_BYTES {
                Some("is longer than 200 bytes")
            } else if t.chars().any(char::is_control) || t.trim() != t {
                Some("has a control character or spaces at an end")
            } else {
                None
            };
            if let Some(why) = why {
                p.push(format!(
                    "storage.postgres_tenant = {} {why} (storage.backend = \"postgres\" needs \
                     one)",
                    coral_base::echo(t)
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;

    fn problems(json: &str) -> Vec<String> {
        let config: Config = serde_json::from_str(json).unwrap();
        config.validate()
    }

    #[test]
    fn the_backend_and_its_settings_are_checked() {
        assert!(problems("{}").is_empty(), "local by default");
        let p = problems(r#"{"storage": {"backend": "sqlite"}}"#);
        assert_eq!(
            p,
            ["storage.backend = \"sqlite\" must be \"local\" or \"postgres\""]
        );
        let p = problems(r#"{"storage": {"backend": "postgres"}}"#);
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("storage.postgres_tenant = \"\" is empty"),
            "{p:?}"
        );
        let p = problems(
            r#"{"storage": {"backend": "postgres", "postgres_tenant": "team-a",
                "postgres_url": "mysql://u:secret@h/d", "postgres_pool_size": 0}}"#,
        );
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p.iter().all(|m| !m.contains("secret")), "{p:?}");
        assert!(
            problems(
                r#"{"storage": {"backend": "postgres", "postgres_tenant": "team-a",
                    "postgres_url": "postgres://coral@db:5432/coral"}}"#
            )
            .is_empty()
        );
    }
}

//! What the suite shares: a local `Coral` and a postgres `Coral` for each test (a fresh data
//! directory, a fresh tenant), the server's URL, and tenants no other run uses.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use coral::{Config, Coral, HashEmbedder};

/// The dimension of the suite's hash vectors.
pub const DIM: usize = 64;

/// One backend under test.
pub struct Opened {
    /// `storage.backend`.
    pub name: &'static str,
    pub coral: Coral,
    _dir: tempfile::TempDir,
}

/// The server's URL, or `None` (after saying why) when postgres cannot be tested here; a
/// failure instead with `CORAL_REQUIRE_POSTGRES=1`.
pub fn postgres_url() -> Option<String> {
    match std::env::var("CORAL_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CORAL_REQUIRE_POSTGRES").as_deref() == Ok("1") => panic!(
            "CORAL_REQUIRE_POSTGRES=1 but CORAL_POSTGRES_URL is not set: start a server with \
             `export CORAL_POSTGRES_URL=\"$(scripts/pg-test-server.sh start)\"`"
        ),
        _ => {
            eprintln!(
                "CORAL_POSTGRES_URL is not set: the postgres half of this test did not run \
                 (start a server with scripts/pg-test-server.sh start)"
            );
            None
        }
    }
}

/// A tenant name no other test or run uses.
pub fn tenant(name: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "facade-{name}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn config(dir: &Path) -> Config {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    config
}

/// A local `Coral` on `dir`.
pub fn open_local(dir: &Path) -> Coral {
    Coral::open_with(config(dir), Arc::new(HashEmbedder::new(DIM).unwrap())).unwrap()
}

/// A postgres `Coral` for `tenant` at `url`, its data directory `dir`.
pub fn try_open_postgres(dir: &Path, url: &str, tenant: &str) -> coral::Result<Coral> {
    let mut config = config(dir);
    config.storage.backend = "postgres".into();
    config.storage.postgres_url = url.into();
    config.storage.postgres_tenant = tenant.into();
    config.storage.postgres_pool_size = 4;
    Coral::open_with(config, Arc::new(HashEmbedder::new(DIM).unwrap()))
}

/// [`try_open_postgres`], which must succeed.
pub fn open_postgres(dir: &Path, url: &str, tenant: &str) -> Coral {
    try_open_postgres(dir, url, tenant).expect("open postgres")
}

/// Both backends, fresh: the local one always, the postgres one when a server is there.
pub fn backends(name: &str) -> Vec<Opened> {
    let local = tempfile::tempdir().unwrap();
    let mut out = vec![Opened {
        name: "local",
        coral: open_local(local.path()),
        _dir: local,
    }];
    if let Some(url) = postgres_url() {
        let dir = tempfile::tempdir().unwrap();
        out.push(Opened {
            name: "postgres",
            coral: open_postgres(dir.path(), &url, &tenant(name)),
            _dir: dir,
        });
    }
    out
}

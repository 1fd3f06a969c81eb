//! What the coral-pg tests share: the server's URL (`CORAL_POSTGRES_URL`, which
//! `scripts/pg-test-server.sh start` prints), a fresh tenant per test so that tests run in
//! parallel on one database, and memories made as the facade makes them.
//!
//! Without a URL the tests say so and pass, unless `CORAL_REQUIRE_POSTGRES=1` (CI), where they
//! fail: CI always has a server.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use coral_embed::{HashEmbedder, item_id, text_features, token_count};
use coral_pg::{NewMemory, PgOptions, PgStore};
use coral_store::{Item, Tier};

/// The dimension of the tests' hash vectors.
pub const DIM: usize = 64;

/// The server's URL, or `None` (after saying why) when the tests cannot run here.
pub fn url() -> Option<String> {
    match std::env::var(coral_pg::URL_ENV) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var("CORAL_REQUIRE_POSTGRES").as_deref() == Ok("1") => panic!(
            "CORAL_REQUIRE_POSTGRES=1 but CORAL_POSTGRES_URL is not set: start a server with \
             `export CORAL_POSTGRES_URL=\"$(scripts/pg-test-server.sh start)\"`"
        ),
        _ => {
            eprintln!(
                "CORAL_POSTGRES_URL is not set: this PostgreSQL test did not run (start one with \
                 scripts/pg-test-server.sh start)"
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
        "test-{name}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store for a fresh tenant, or `None` without a server.
pub fn store(name: &str) -> Option<PgStore> {
    let url = url()?;
    Some(PgStore::connect(PgOptions::new(url), &tenant(name), DIM).expect("connect"))
}

/// A store for `tenant` on the server at `url`.
pub fn store_for(url: &str, tenant: &str) -> PgStore {
    PgStore::connect(PgOptions::new(url), tenant, DIM).expect("connect")
}

/// A memory as the facade makes one: id and token count from the text, token set and hash
/// vector from its features.
pub struct Memory {
    pub item: Item,
    pub vector: Vec<f32>,
    pub tokens: Vec<u64>,
}

impl Memory {
    pub fn new(text: &str, at: f64) -> Memory {
        Memory::in_project(text, at, None)
    }

    pub fn in_project(text: &str, at: f64, project: Option<&str>) -> Memory {
        let embedder = HashEmbedder::new(DIM).expect("hash embedder");
        Memory {
            item: Item {
                project: project.map(String::from),
                ..Item::new(item_id(text), text, token_count(text), at, 0.5)
            },
            vector: embedder.embed_text(text),
            tokens: text_features(text).token_set,
        }
    }

    pub fn new_memory(&self) -> NewMemory<'_> {
        NewMemory {
            item: &self.item,
            tier: Tier::Hot,
            vector: &self.vector,
            embedder: "hash",
            token_set: &self.tokens,
        }
    }

    pub fn id(&self) -> &str {
        &self.item.item_id
    }
}

/// The ids of hits, in order.
pub fn ids(hits: &[coral_pg::Hit]) -> Vec<String> {
    hits.iter().map(|h| h.item.item.item_id.clone()).collect()
}

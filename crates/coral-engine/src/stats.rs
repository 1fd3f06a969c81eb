//! The engine's counters (`Coral::stats`, all O(1)), its disk usage and why nothing is being
//! recorded.

use crate::engine::Engine;
use crate::governance::GovernanceStats;
use crate::quota::disk_usage;
use crate::types::{DiskUsage, Stats};

impl Engine {
    /// The counters; `threads` is the thread store's count (the engine does not hold it).
    pub fn stats(&self, threads: usize) -> Stats {
        let engine = self.lock();
        let config = self.config();
        let store = engine.door.view();
        let counts = store.counts();
        let total = store.pool().len();
        let reloader = self.config.reloader();
        Stats {
            backend: "local".into(),
            tenant: None,
            backend_error: None,
            hot: counts.hot,
            warm: counts.warm,
            cold: counts.cold,
            total,
            vectors: total - store.pool().missing_vectors().len() as usize,
            threads,
            capacity_threshold: config.memory.capacity_threshold,
            embedder: self.embedder.name().to_string(),
            dim: self.embedder.dim(),
            embedder_note: self.embedder_note.clone(),
            vectors_disabled: engine.vectors_disabled.clone(),
            skipped_lines: store.skipped_lines(),
            config_error: reloader.and_then(|r| r.error()),
            restart_needed: reloader.map(|r| r.restart_needed()).unwrap_or_default(),
            repairs: store.repairs().iter().map(ToString::to_string).collect(),
            read_only: store.read_only().map(String::from),
            unrecorded: engine.unrecorded.clone(),
            checkpoint_error: store.checkpoint_error().map(String::from),
            temp_files_removed: store.temp_files_removed().0,
            temp_bytes_removed: store.temp_files_removed().1,
            journal_bytes: store.journal_bytes(),
            generation: store.generation(),
            governance: GovernanceStats {
                held: engine.guard.held().map(crate::guard::held_line),
                ..self.governance.snapshot()
            },
        }
    }

    /// Disk usage by file and against the budget.
    pub fn disk_usage(&self) -> DiskUsage {
        let engine = self.lock();
        disk_usage(engine.door.view(), &self.config())
    }

    /// Why nothing this process does is recorded, if so: the store is read-only, or the last
    /// search could not record its hits (a full disk). Asks this process only: no lock on the
    /// data directory.
    pub fn unrecorded(&self) -> Option<String> {
        let engine = self.peek();
        engine
            .door
            .view()
            .read_only()
            .map(|r| format!("the store is read-only ({r}): nothing was recorded"))
            .or_else(|| engine.unrecorded.clone())
    }
}

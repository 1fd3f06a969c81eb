//! Governance's counters: what distillation, the quotas and the bulk-removal guard did since
//! open, shared by every call (a small mutex of its own, never held across work).

use std::sync::Mutex;

use serde::Serialize;

/// What governance has done since open.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GovernanceStats {
    /// Clusters replaced by a summary.
    pub distilled_clusters: u64,
    /// Memories archived into those summaries.
    pub distilled_members: u64,
    /// Clusters skipped because the LLM call failed.
    pub distill_failures: u64,
    /// The last distillation error (API key masked).
    pub last_distill_error: Option<String>,
    /// Set while usage is above `storage.warn_ratio` of `storage.max_bytes`.
    pub disk_warning: Option<String>,
    /// Warnings given (one each time usage crosses `storage.warn_ratio` upwards).
    pub disk_warnings: u64,
    /// Memories removed to stay within `storage.max_bytes`.
    pub quota_removed: u64,
    /// Archive bytes trimmed to stay within `storage.max_bytes`.
    pub quota_archive_bytes_trimmed: u64,
    /// Why governance after the last change failed, when it did (the change itself was kept;
    /// the next change governs again).
    pub last_error: Option<String>,
    /// A changed limit held back because it would remove many memories at once: what it
    /// would remove and how to confirm it.
    pub held: Option<String>,
}

/// Governance state kept across calls.
#[derive(Default)]
pub(crate) struct Governance {
    stats: Mutex<GovernanceStats>,
}

impl Governance {
    /// The counters now.
    pub(crate) fn snapshot(&self) -> GovernanceStats {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Change the counters.
    pub(crate) fn update(&self, f: impl FnOnce(&mut GovernanceStats)) {
        f(&mut self.stats.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

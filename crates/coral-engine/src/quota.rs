//! What the data directory takes on disk: each item as a checkpoint writes it, the archive,
//! the files as they are (`disk_usage`), the figures the disk quota (`storage.max_bytes`,
//! docs/configuration.md, "Disk budget") counts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use coral_store::{Item, Store, Tier};

use crate::types::DiskUsage;
use coral_config::Config;

/// What one item takes on disk once checkpointed: its JSON (a cold line, or a pretty-printed
/// array element for hot and warm), its vector row, its index entry and its 12-byte entry in
/// the vector checksums.
pub(crate) fn item_bytes(item: &Item, tier: Tier, dim: usize) -> u64 {
    let project = item.project.as_ref().map_or(0, |p| p.len() + 16);
    bytes_for(item.content.len() as u64, project as u64, tier, dim)
}

/// [`item_bytes`] of an item whose content has `content` bytes and whose project key takes
/// `project` (its name's bytes plus 16; 0 without one): the postgres backend counts a tenant's
/// memories with it, as they would take in a data directory (docs/postgres.md, "Quotas").
pub(crate) fn bytes_for(content: u64, project: u64, tier: Tier, dim: usize) -> u64 {
    let json_overhead = if tier == Tier::Cold { 170 } else { 240 };
    content + project + json_overhead + dim as u64 * 4 + 20 + 12
}

/// The archive file's size.
pub(crate) fn archive_bytes(store: &Store) -> u64 {
    store
        .file_sizes()
        .into_iter()
        .find(|(l, _)| *l == "archive")
        .map_or(0, |(_, b)| b)
}

/// Bytes the disk quota counts: every item as a checkpoint would write it, plus the archive
/// file. (The journal is excluded: it is folded as it grows; threads never count.)
pub(crate) fn quota_bytes(store: &Store) -> u64 {
    let pool = store.pool();
    let items: u64 = (0..pool.len() as u32)
        .map(|row| item_bytes(pool.item(row), pool.tier(row), pool.dim()))
        .sum();
    items + archive_bytes(store)
}

/// Disk usage of the data directory: every data file but the `.npy` (the timeline's database
/// included, once it exists), plus the vectors as they will be once checkpointed
/// (`items × dim × 4`). The quota counts the memory pool only.
pub(crate) fn disk_usage(store: &Store, config: &Config) -> DiskUsage {
    let mut files = BTreeMap::new();
    let mut data_bytes = 0;
    for (label, bytes) in store.file_sizes() {
        // The derived files (saved bitmaps and keyword index, docs/ann.md "Reopen") are listed
        // but not counted, like the vector graph: they are caches, remade when missing.
        if !matches!(label, "vectors" | "bitmaps" | "keywords") {
            data_bytes += bytes;
        }
        files.insert(label.to_string(), bytes);
    }
    // The timeline (when it exists): the database and its write-ahead log.
    let timeline = config.timeline_path();
    let mut wal = timeline.clone().into_os_string();
    wal.push("-wal");
    let timeline_bytes: u64 = [timeline, PathBuf::from(wal)]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    if timeline_bytes > 0 {
        data_bytes += timeline_bytes;
        files.insert("timeline".to_string(), timeline_bytes);
    }
    // Temp files of a checkpoint in progress (left ones are removed at open).
    let (temps, temp_bytes) = store.temp_file_usage();
    if temps > 0 {
        data_bytes += temp_bytes;
        files.insert("temp".to_string(), temp_bytes);
    }
    let projected = (store.pool().len() * store.pool().dim() * 4) as u64;
    let total = data_bytes + projected;
    let max = config.storage.max_bytes;
    let quota = quota_bytes(store);
    DiskUsage {
        files,
        data_bytes,
        projected_vector_bytes: projected,
        total_bytes: total,
        max_bytes: max,
        quota_bytes: quota,
        ratio: (max > 0).then(|| quota as f64 / max as f64),
    }
}

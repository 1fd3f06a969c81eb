//! Importing a Python Coral `memory_data/` directory's memories (docs/storage.md, "Importing
//! a Python Coral directory"); `Coral::import_python_dir` then brings its threads.

use std::path::Path;

use coral_store::{Record, Snapshot, StorePaths, Tier};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::limits::unix_now;
use crate::types::ImportReport;
use crate::vectors::snapshot_matches;

impl Engine {
    /// `Coral::import_python_dir`: items in chunks of 512, each chunk's missing vectors
    /// embedded outside the lock and committed as one batch; governance once at the end.
    pub fn import_python_dir(
        &self,
        source: &Path,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<ImportReport> {
        if !source.is_dir() {
            return Err(Error::InvalidInput(format!(
                "{} is not a directory (give the Python Coral memory_data/ folder)",
                source.display()
            )));
        }
        let paths = StorePaths::in_dir(source);
        if !paths.warm.exists() && !paths.cold.exists() {
            return Err(Error::InvalidInput(format!(
                "{} holds neither coral_warm.json nor coral_cold.jsonl: not a Coral data directory",
                source.display()
            )));
        }
        let mut snapshot = Snapshot::read(&paths, self.embedder.dim())?;
        let mut report = ImportReport {
            skipped_lines: snapshot.skipped.iter().map(Vec::len).sum(),
            notes: snapshot.notes.clone(),
            ..ImportReport::default()
        };
        if !snapshot.vectors.is_empty()
            && !snapshot_matches(&paths, &snapshot, self.embedder.as_ref())?
        {
            report.notes.push(format!(
                "the vectors in {} were not made by the {} embedder: they are computed again",
                paths.vectors.display(),
                self.embedder.name()
            ));
            snapshot.vectors.clear();
        }
        for (tier, _) in &snapshot.items {
            *report.found.entry(tier.to_string()).or_default() += 1;
        }
        let total = snapshot.items.len();
        let config = self.config();
        let mut done = 0;
        for chunk in snapshot.items.chunks(512) {
            let missing: Vec<&str> = chunk
                .iter()
                .filter(|(_, item)| !snapshot.vectors.contains_key(&item.item_id))
                .map(|(_, item)| item.content.as_str())
                .collect();
            let mut computed = self.embedder.embed(&missing)?.into_iter();
            report.vectors_recomputed += missing.len();
            let mut engine = self.lock();
            let mut records = Vec::with_capacity(chunk.len());
            for (tier, item) in chunk {
                let vector = match snapshot.vectors.get(&item.item_id) {
                    Some(&row) => snapshot.matrix.row(row, &mut Vec::new()).to_vec(),
                    None => computed.next().unwrap_or_default(),
                };
                if engine.door.view().get(&item.item_id).is_some() {
                    report.already_present += 1;
                    continue;
                }
                // Python Coral never persisted its hot tier; anything found there is ours.
                let tier = if *tier == Tier::Hot {
                    Tier::Warm
                } else {
                    *tier
                };
                records.push(Record::Put {
                    tier,
                    item: item.clone(),
                    vector,
                });
            }
            report.imported += records.len();
            engine.door.commit(records)?;
            done += chunk.len();
            progress(done, total);
        }
        let mut engine = self.lock();
        let now = unix_now();
        let held = engine.guarded(&config, now);
        engine.maintain(held.as_ref().unwrap_or(&config), now)?;
        engine.door.checkpoint()?;
        Ok(report)
    }
}

//! Data directories in and out: `coral backup`, `restore` and `import` (of a Python Coral
//! directory).

use std::path::Path;

use super::failure::Failure;
use super::globals::Globals;
use super::output::{print_json, progress_bar};
use super::session::{finish, load_config, open};

/// `coral backup`: one consistent copy of the data directory into `dir`.
pub(crate) fn backup(cli: &Globals, dir: &Path) -> Result<u8, Failure> {
    let config = load_config(cli)?;
    let manifest = coral::backup(&config, dir)?;
    if cli.json {
        print_json(&serde_json::to_value(&manifest)?);
    } else {
        outln!(
            "backed up {} memories, {} thread(s){} into {} ({} files, {} bytes)",
            manifest.memories,
            manifest.threads,
            if manifest.timeline {
                " and the timeline"
            } else {
                ""
            },
            dir.display(),
            manifest.files.len(),
            manifest.files.iter().map(|f| f.bytes).sum::<u64>()
        );
    }
    Ok(0)
}

/// `coral restore`: replace the data directory with the backup in `dir`.
pub(crate) fn restore(cli: &Globals, dir: &Path) -> Result<u8, Failure> {
    let config = load_config(cli)?;
    let restored = coral::restore(&config, dir)?;
    let m = &restored.manifest;
    if cli.json {
        print_json(&serde_json::to_value(&restored)?);
    } else {
        outln!(
            "restored {} memories, {} thread(s){} from {} (made {:.0}) into {}",
            m.memories,
            m.threads,
            if m.timeline { " and the timeline" } else { "" },
            dir.display(),
            m.created_at,
            restored.data_dir.display()
        );
    }
    Ok(0)
}

/// `coral import`: copy a Python Coral `memory_data/` directory into this one.
pub(crate) fn import(cli: &Globals, dir: &Path) -> Result<u8, Failure> {
    let coral = open(cli)?;
    let bar = progress_bar(cli.quiet, 0, "importing {bar:40} {pos}/{len} items");
    let report = coral.import_python_dir(dir, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if cli.json {
        print_json(&serde_json::to_value(&report)?);
    } else {
        outln!(
            "found {} item(s) ({}); imported {}, already present {}, vectors computed {}, \
             unparseable entries left in the source {}",
            report.found.values().sum::<usize>(),
            report
                .found
                .iter()
                .map(|(t, n)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            report.imported,
            report.already_present,
            report.vectors_recomputed,
            report.skipped_lines
        );
        if let Some(t) = &report.threads {
            outln!(
                "threads: found {}; added {}, merged {} ({} step(s) added in all), already \
                 present {}, unreadable entries left out {}",
                t.found,
                t.added,
                t.merged,
                t.steps_added,
                t.unchanged,
                t.unreadable_entries
            );
        }
        for n in &report.notes {
            outln!("  {n}");
        }
    }
    finish(coral)?;
    Ok(0)
}

//! `check`: every problem in a data directory's files, found without changing anything.
//!
//! Open repairs what it can (quarantines bad journal lines, recomputes vectors, removes temp
//! files) and reports it once; `check` reads the same files the same way and reports everything
//! it sees, so a user can look before anything is repaired, and a script can test a backup.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::files::{self, StorePaths};
use crate::journal_lines::{self, DamageKind};
use crate::npy;
use crate::record::Record;
use crate::sums;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is lost or unreadable (a torn journal tail, damage already set
    /// aside, a temp file the next open removes).
    Note,
    /// Data that is unreadable, lost, or would be repaired by the next open.
    Problem,
}

/// One thing `check` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// The file.
    pub path: PathBuf,
    /// What is wrong, and what to do about it.
    pub detail: String,
}

/// What a check of the store's files found, and what they hold.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CheckReport {
    /// Memories readable in the tier files (duplicates counted once).
    pub items: usize,
    /// Valid journal records after the last checkpoint.
    pub journal_records: usize,
    /// Vector rows.
    pub vectors: usize,
    /// Every finding, problems first.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// Whether anything is a [`Severity::Problem`].
    pub fn has_problems(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.severity == Severity::Problem)
    }
}

struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, severity: Severity, path: &Path, detail: impl Into<String>) {
        self.0.push(Finding {
            severity,
            path: path.to_path_buf(),
            detail: detail.into(),
        });
    }
}

/// Check the store's files in `paths` for vectors of dimension `dim`. Reads only.
pub fn check(paths: &StorePaths, dim: usize) -> CheckReport {
    let mut out = Findings(Vec::new());
    let mut ids: HashSet<String> = HashSet::new();
    let mut seen_in: HashMap<String, &'static str> = HashMap::new();
    for (label, path, array) in [
        ("hot", &paths.hot, true),
        ("warm", &paths.warm, true),
        ("cold", &paths.cold, false),
    ] {
        let loaded = if array {
            match files::read_item_array(path) {
                Ok(l) => l,
                Err(e) => {
                    out.add(
                        Severity::Problem,
                        path,
                        format!("{e}; open refuses this directory until it is fixed"),
                    );
                    continue;
                }
            }
        } else {
            match files::read_item_lines(path) {
                Ok(l) => l,
                Err(e) => {
                    out.add(Severity::Problem, path, e.to_string());
                    continue;
                }
            }
        };
        for s in &loaded.skipped {
            out.add(
                Severity::Problem,
                path,
                format!(
                    "line {}: not a readable memory ({}); kept in the file, not searchable",
                    s.line, s.reason
                ),
            );
        }
        for item in loaded.items {
            if let Some(first) = seen_in.get(&item.item_id) {
                out.add(
                    Severity::Note,
                    path,
                    format!(
                        "memory {} is also in the {first} tier; open merges the copies",
                        item.item_id
                    ),
                );
            } else {
                seen_in.insert(item.item_id.clone(), label);
            }
            ids.insert(item.item_id);
        }
    }
    if let Err(e) = crate::item_meta::read(&paths.item_meta) {
        out.add(
            Severity::Problem,
            &paths.item_meta,
            format!(
                "{e}; the memories are intact, but open reads hot memories as warm and without \
                 their project tags until the next checkpoint rewrites the file"
            ),
        );
    }
    let archive = files::read_item_lines(&paths.archive);
    if let Ok(a) = &archive {
        for s in &a.skipped {
            out.add(
                Severity::Problem,
                &paths.archive,
                format!(
                    "line {}: not a readable archived memory ({})",
                    s.line, s.reason
                ),
            );
        }
    }
    // The journal, as open would replay it.
    let mut journal_records = 0;
    match std::fs::read(&paths.wal) {
        Ok(bytes) => {
            let scan = journal_lines::scan(&bytes, None);
            journal_records = scan
                .records
                .iter()
                .filter(|r| !matches!(r, Record::Begin { .. }))
                .count();
            for r in &scan.records {
                if let Record::Put { item, .. } = r {
                    ids.insert(item.item_id.clone());
                }
            }
            for d in &scan.damage {
                let what = match d.kind {
                    DamageKind::Unreadable => "unreadable record (its change is lost)",
                    DamageKind::Missing { .. } => "records missing (their changes are lost)",
                    DamageKind::Repeated { .. } => "repeated record",
                };
                out.add(
                    Severity::Problem,
                    &paths.wal,
                    format!(
                        "line {}: {what}: {}; the next open sets it aside and reports it",
                        d.line, d.detail
                    ),
                );
            }
            if scan.torn_tail {
                out.add(
                    Severity::Note,
                    &paths.wal,
                    "the last line is incomplete (a process died while writing it; it was \
                     never acknowledged and the next open drops it)",
                );
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out.add(Severity::Problem, &paths.wal, format!("cannot read: {e}")),
    }
    let vectors = check_vectors(paths, dim, &ids, &mut out);
    let (temps, bytes) = files::temp_file_usage(paths);
    if temps > 0 {
        out.add(
            Severity::Note,
            &paths.dir,
            format!(
                "{temps} temp file(s) ({bytes} bytes) of a checkpoint: left by a killed process \
                 (the next open removes them) or in progress"
            ),
        );
    }
    for q in quarantined(paths) {
        out.add(
            Severity::Note,
            &q,
            "damaged journal lines set aside by an earlier open (kept for inspection; delete \
             when no longer needed)",
        );
    }
    if paths.governance.exists()
        && std::fs::read(&paths.governance)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_none_or(|v| !v.is_object())
    {
        out.add(
            Severity::Problem,
            &paths.governance,
            "not a JSON object: the removal log is lost and held changes are previewed again",
        );
    }
    let mut findings = out.0;
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    CheckReport {
        items: seen_in.len(),
        journal_records,
        vectors,
        findings,
    }
}

fn check_vectors(
    paths: &StorePaths,
    dim: usize,
    ids: &HashSet<String>,
    out: &mut Findings,
) -> usize {
    let index = match files::read_index(&paths.index) {
        Ok(Some(i)) => i,
        Ok(None) => {
            if paths.vectors.exists() {
                out.add(
                    Severity::Problem,
                    &paths.index,
                    "missing while the vector file exists; open recomputes every vector",
                );
            }
            return 0;
        }
        Err(e) => {
            out.add(
                Severity::Problem,
                &paths.index,
                format!("{e}; open recomputes every vector"),
            );
            return 0;
        }
    };
    let matrix = match npy::read(&paths.vectors) {
        Ok(m) => m,
        Err(e) => {
            out.add(
                Severity::Problem,
                &paths.vectors,
                format!("{e}; open recomputes every vector"),
            );
            return 0;
        }
    };
    if matrix.rows != index.len() {
        out.add(
            Severity::Problem,
            &paths.vectors,
            format!(
                "{} rows but the index lists {} ids; open recomputes every vector",
                matrix.rows,
                index.len()
            ),
        );
        return 0;
    }
    if matrix.rows > 0 && matrix.cols != dim {
        out.add(
            Severity::Note,
            &paths.vectors,
            format!(
                "vectors of dim {} but the embedder makes dim {dim}: another model made them \
                 (`coral reembed`)",
                matrix.cols
            ),
        );
        return matrix.rows;
    }
    let sums = match sums::read(&paths.sums) {
        sums::Read::Found(s) => Some(s),
        sums::Read::Missing => None,
        sums::Read::Damaged(why) => {
            out.add(
                Severity::Problem,
                &paths.sums,
                format!("{why}; the next checkpoint rewrites it"),
            );
            None
        }
    };
    let (mut bad, mut mismatched, mut orphans) = (0, 0, 0);
    for (row, id) in index.iter().enumerate() {
        let v = matrix.row(row);
        if v.iter().any(|x| !x.is_finite()) {
            bad += 1;
        } else if sums
            .as_ref()
            .is_some_and(|s| s.check(id, v) == sums::Check::Differs)
        {
            mismatched += 1;
        }
        if !ids.contains(id) {
            orphans += 1;
        }
    }
    if bad > 0 {
        out.add(
            Severity::Problem,
            &paths.vectors,
            format!("{bad} row(s) hold NaN or infinite values; open recomputes them"),
        );
    }
    if mismatched > 0 {
        out.add(
            Severity::Problem,
            &paths.vectors,
            format!(
                "{mismatched} row(s) do not match their checksums in {} (ids swapped in {}, or \
                 rows changed); open recomputes them",
                paths.sums.display(),
                paths.index.display()
            ),
        );
    }
    if orphans > 0 {
        out.add(
            Severity::Note,
            &paths.index,
            format!("{orphans} vector(s) belong to no memory; open drops them"),
        );
    }
    matrix.rows
}

/// `coral_wal.jsonl.<time>.corrupt` files beside the journal.
fn quarantined(paths: &StorePaths) -> Vec<PathBuf> {
    let Some(name) = paths.wal.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let dir = paths.wal.parent().unwrap_or(Path::new("."));
    let prefix = format!("{name}.");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".corrupt"))
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

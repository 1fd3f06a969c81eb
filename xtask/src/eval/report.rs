//! The measured cells as one JSON table (`target/coral-bench/eval.json`) and as Markdown.
//!
//! JSON layout: `{"meta": {...}, "datasets": {<dataset>: {...}}, "cells": [...]}`; each cell
//! is `{dataset, path, embedder, mode, seconds, merged_documents, metrics}` with `metrics`
//! `{<category or "overall">: {questions, recall_at_k, hit_at_k}}` for k = 1, 3, 5, 10, as
//! fractions. So `(dataset, path, embedder, mode, category, metric) -> value` is one lookup.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::corpus::Corpus;
use super::metrics::Tally;

/// Which store a cell searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKind {
    /// `memory_search` over the memory pool.
    Pool,
    /// `retrieve_for_turn` over the timeline.
    Timeline,
}

impl PathKind {
    /// Both, in table order.
    pub const ALL: [PathKind; 2] = [PathKind::Pool, PathKind::Timeline];

    /// Its name in the table, the JSON and `--path`.
    pub fn name(self) -> &'static str {
        match self {
            PathKind::Pool => "pool",
            PathKind::Timeline => "timeline",
        }
    }
}

/// One measured cell.
pub struct Cell {
    /// [`Corpus::key`].
    pub dataset: &'static str,
    /// Which store.
    pub path: PathKind,
    /// Embedder label.
    pub embedder: &'static str,
    /// Mode name.
    pub mode: &'static str,
    /// Figures.
    pub tally: Tally,
    /// Document ids sharing one memory, with their group's name, over all groups.
    pub merged: Vec<(String, Vec<String>)>,
    /// Wall time of the cell (the embedder's prefill not included).
    pub seconds: f64,
}

impl Cell {
    /// Documents merged into another memory.
    pub fn merged_documents(&self) -> usize {
        self.merged
            .iter()
            .map(|(_, ids)| ids.len().saturating_sub(1))
            .sum()
    }

    fn to_json(&self) -> Value {
        json!({
            "dataset": self.dataset,
            "path": self.path.name(),
            "embedder": self.embedder,
            "mode": self.mode,
            "seconds": (self.seconds * 100.0).round() / 100.0,
            "merged_documents": self.merged_documents(),
            "metrics": self.tally.to_json(),
        })
    }
}

/// The whole table with what it was measured on.
pub fn to_json(corpora: &[Corpus], cells: &[Cell], meta: Value) -> Value {
    let mut datasets = serde_json::Map::new();
    for c in corpora {
        // Merging depends on the texts and the threshold only: the first pool cell's list.
        let merged = cells
            .iter()
            .find(|cell| {
                cell.dataset == c.key && cell.path == PathKind::Pool && cell.mode != "bm25"
            })
            .map(|cell| {
                cell.merged
                    .iter()
                    .map(|(group, ids)| json!({"group": group, "ids": ids}))
                    .collect::<Vec<_>>()
            });
        datasets.insert(
            c.key.to_string(),
            json!({
                "groups": c.groups.len(),
                "documents": c.docs(),
                "questions": c.questions(),
                "categories": c.categories,
                "merge_threshold": c.merge_threshold,
                "merged_in_pool": merged,
                "notes": c.notes,
            }),
        );
    }
    json!({
        "meta": meta,
        "datasets": datasets,
        "cells": cells.iter().map(Cell::to_json).collect::<Vec<_>>(),
    })
}

/// Cells of `json` (an earlier `eval.json`) by `(dataset, path, embedder, mode)`.
fn baseline_cell<'a>(baseline: Option<&'a Value>, cell: &Value) -> Option<&'a Value> {
    baseline?["cells"].as_array()?.iter().find(|b| {
        ["dataset", "path", "embedder", "mode"]
            .iter()
            .all(|k| b[k] == cell[k])
    })
}

fn pct(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{:.1}", x * 100.0),
        None => "–".into(),
    }
}

/// Markdown tables, one per dataset and path, from a table made by [`to_json`]. With a
/// `baseline` (an earlier table) each row also shows the change of overall recall@5.
pub fn markdown(table: &Value, baseline: Option<&Value>) -> String {
    let mut out = String::new();
    let cells = table["cells"].as_array().cloned().unwrap_or_default();
    // Datasets in the order the cells were measured (JSON objects sort their keys).
    let mut keys: Vec<&str> = Vec::new();
    for c in &cells {
        if let Some(k) = c["dataset"].as_str()
            && !keys.contains(&k)
        {
            keys.push(k);
        }
    }
    for key in keys {
        let ds = &table["datasets"][key];
        let categories: Vec<&str> = ds["categories"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for path in PathKind::ALL {
            let rows: Vec<&Value> = cells
                .iter()
                .filter(|c| c["dataset"] == key && c["path"] == path.name())
                .collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "\n#### {key}, {} ({} questions, {} groups; percent)\n",
                path.name(),
                ds["questions"],
                ds["groups"]
            );
            let mut head = vec!["embedder", "mode", "R@1", "R@3", "R@5", "R@10", "hit@5"];
            let cat_heads: Vec<String> = categories
                .iter()
                .map(|c| format!("R@5 {}", c.replace('_', "-")))
                .collect();
            head.extend(cat_heads.iter().map(String::as_str));
            if baseline.is_some() {
                head.push("ΔR@5");
            }
            let _ = writeln!(out, "| {} |", head.join(" | "));
            let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
            for c in &rows {
                let m = &c["metrics"]["overall"];
                let mut line = vec![
                    c["embedder"].as_str().unwrap_or_default().to_string(),
                    c["mode"].as_str().unwrap_or_default().to_string(),
                ];
                for k in ["recall_at_1", "recall_at_3", "recall_at_5", "recall_at_10"] {
                    line.push(pct(&m[k]));
                }
                line.push(pct(&m["hit_at_5"]));
                for cat in &categories {
                    line.push(pct(&c["metrics"][*cat]["recall_at_5"]));
                }
                if baseline.is_some() {
                    line.push(match baseline_cell(baseline, c) {
                        Some(b) => {
                            let now = m["recall_at_5"].as_f64().unwrap_or(f64::NAN);
                            let then = b["metrics"]["overall"]["recall_at_5"]
                                .as_f64()
                                .unwrap_or(f64::NAN);
                            format!("{:+.1}", (now - then) * 100.0)
                        }
                        None => "new".into(),
                    });
                }
                let _ = writeln!(out, "| {} |", line.join(" | "));
            }
            if categories.is_empty() {
                continue;
            }
            // Every metric of every category: R@1 / R@5 / R@10 / hit@5.
            let _ = writeln!(
                out,
                "\nPer category, R@1 / R@5 / R@10 / hit@5 (questions in brackets):\n"
            );
            let first = &rows[0]["metrics"];
            let mut head = vec!["embedder".to_string(), "mode".to_string()];
            for cat in &categories {
                head.push(format!(
                    "{} ({})",
                    cat.replace('_', "-"),
                    first[*cat]["questions"]
                ));
            }
            let _ = writeln!(out, "| {} |", head.join(" | "));
            let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
            for c in &rows {
                let mut line = vec![
                    c["embedder"].as_str().unwrap_or_default().to_string(),
                    c["mode"].as_str().unwrap_or_default().to_string(),
                ];
                for cat in &categories {
                    let m = &c["metrics"][*cat];
                    line.push(format!(
                        "{} / {} / {} / {}",
                        pct(&m["recall_at_1"]),
                        pct(&m["recall_at_5"]),
                        pct(&m["recall_at_10"]),
                        pct(&m["hit_at_5"])
                    ));
                }
                let _ = writeln!(out, "| {} |", line.join(" | "));
            }
        }
    }
    out
}

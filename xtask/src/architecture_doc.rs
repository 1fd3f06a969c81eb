//! ARCHITECTURE.md against the workspace: the codemap has one `### \`<folder>\`` section per
//! workspace member and no other, and the ```` ```crate-graph ```` block lists exactly the
//! members and the edges between them that `cargo metadata` reports (normal and build
//! dependencies; tests' are not architecture).

use std::collections::{BTreeMap, BTreeSet};

use crate::packages::Package;

/// The members and edges the doc must show.
#[derive(Debug, Default)]
pub(crate) struct Workspace {
    /// Crate name → folder.
    pub(crate) crates: BTreeMap<String, String>,
    /// `(from, to)`: `from` depends on `to`.
    pub(crate) edges: BTreeSet<(String, String)>,
}

impl Workspace {
    pub(crate) fn of(packages: &[Package]) -> Workspace {
        let names: BTreeSet<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        let mut ws = Workspace::default();
        for p in packages {
            ws.crates.insert(p.name.clone(), p.folder.clone());
            for d in &p.deps {
                if names.contains(d.name.as_str()) && d.kind.as_deref() != Some("dev") {
                    ws.edges.insert((p.name.clone(), d.name.clone()));
                }
            }
        }
        ws
    }
}

const GRAPH_FENCE: &str = "```crate-graph";

/// The crates a graph block names and its edges.
type Graph = (BTreeSet<String>, BTreeSet<(String, String)>);

/// What the doc says: codemap section folders, graph crates and edges, and lines it could not
/// read.
#[derive(Debug, Default)]
struct Doc {
    sections: BTreeSet<String>,
    graph: Option<Graph>,
    unreadable: Vec<String>,
}

fn parse(doc: &str) -> Doc {
    let mut out = Doc::default();
    let mut in_codemap = false;
    let mut graph: Option<Graph> = None;
    let mut in_graph = false;
    for (n, line) in doc.lines().enumerate() {
        let line_no = n + 1;
        if in_graph {
            let text = line.trim();
            if text.starts_with("```") {
                in_graph = false;
                out.graph = graph.take();
                continue;
            }
            let Some((crates, edges)) = graph.as_mut() else {
                continue;
            };
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let is_name = |s: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            };
            match text.split_once("->") {
                Some((from, to)) if is_name(from.trim()) && is_name(to.trim()) => {
                    crates.insert(from.trim().to_string());
                    crates.insert(to.trim().to_string());
                    edges.insert((from.trim().to_string(), to.trim().to_string()));
                }
                None if is_name(text) => {
                    crates.insert(text.to_string());
                }
                _ => out.unreadable.push(format!(
                    "ARCHITECTURE.md line {line_no}: {text:?} in the crate graph is neither \
                     `crate` nor `crate -> crate`"
                )),
            }
            continue;
        }
        if line.trim() == GRAPH_FENCE {
            in_graph = true;
            graph = Some(Default::default());
            continue;
        }
        if let Some(title) = line.strip_prefix("## ") {
            in_codemap = title.trim() == "Codemap";
        } else if in_codemap && let Some(title) = line.strip_prefix("### ") {
            let title = title.trim();
            match title.strip_prefix('`').and_then(|t| t.strip_suffix('`')) {
                Some(folder) => {
                    out.sections.insert(folder.to_string());
                }
                None => out.unreadable.push(format!(
                    "ARCHITECTURE.md line {line_no}: codemap section {title:?} does not name a \
                     crate folder in backticks"
                )),
            }
        }
    }
    if in_graph {
        out.unreadable
            .push("ARCHITECTURE.md: the crate-graph block is never closed with ```".into());
    }
    out
}

/// Every disagreement between `doc` and `ws`, one sentence each.
pub(crate) fn problems(doc: &str, ws: &Workspace) -> Vec<String> {
    let parsed = parse(doc);
    let mut problems = parsed.unreadable;
    let folders: BTreeMap<&str, &str> = ws
        .crates
        .iter()
        .map(|(name, folder)| (folder.as_str(), name.as_str()))
        .collect();
    for (folder, name) in &folders {
        if !parsed.sections.contains(*folder) {
            problems.push(format!(
                "ARCHITECTURE.md's codemap has no section for crate {name}: add `### `{folder}``"
            ));
        }
    }
    for folder in &parsed.sections {
        if !folders.contains_key(folder.as_str()) {
            problems.push(format!(
                "ARCHITECTURE.md's codemap has a section for `{folder}`, which is no workspace \
                 member's folder: remove or rename it"
            ));
        }
    }
    let Some((crates, edges)) = parsed.graph else {
        problems.push(format!(
            "ARCHITECTURE.md has no {GRAPH_FENCE} block: list every crate and every edge \
             `crate -> crate` there"
        ));
        return problems;
    };
    for name in ws.crates.keys().filter(|c| !crates.contains(*c)) {
        problems.push(format!(
            "ARCHITECTURE.md's crate graph does not list crate {name}"
        ));
    }
    for name in crates.iter().filter(|c| !ws.crates.contains_key(*c)) {
        problems.push(format!(
            "ARCHITECTURE.md's crate graph lists crate {name}, which is not in the workspace"
        ));
    }
    for (from, to) in ws.edges.difference(&edges) {
        problems.push(format!(
            "ARCHITECTURE.md's crate graph lacks the edge {from} -> {to} ({from}'s Cargo.toml \
             depends on {to})"
        ));
    }
    for (from, to) in edges.difference(&ws.edges) {
        problems.push(format!(
            "ARCHITECTURE.md's crate graph has the edge {from} -> {to}, but {from} does not \
             depend on {to}"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> Workspace {
        let mut ws = Workspace::default();
        for (name, folder) in [
            ("coral-base", "crates/coral-base"),
            ("coral-store", "crates/coral-store"),
            ("xtask", "xtask"),
        ] {
            ws.crates.insert(name.into(), folder.into());
        }
        ws.edges.insert(("coral-store".into(), "coral-base".into()));
        ws.edges.insert(("xtask".into(), "coral-store".into()));
        ws
    }

    const DOC: &str = "# Architecture\n\n## Codemap\n\n### `crates/coral-base`\ntext\n\n\
        ### `crates/coral-store`\n\n### `xtask`\n\n## Crate graph\n\n```crate-graph\n\
        coral-base\ncoral-store -> coral-base\nxtask -> coral-store\n```\n\n## Invariants\n\n\
        ### Not a crate\n";

    #[test]
    fn a_doc_that_matches_has_no_problem() {
        assert_eq!(problems(DOC, &ws()), Vec::<String>::new());
    }

    #[test]
    fn every_difference_is_named() {
        let doc = DOC
            .replace("### `crates/coral-base`\n", "### `crates/coral-heat`\n")
            .replace("coral-store -> coral-base\n", "coral-store -> coral-heat\n");
        assert_eq!(
            problems(&doc, &ws()),
            [
                "ARCHITECTURE.md's codemap has no section for crate coral-base: add \
                 `### `crates/coral-base``",
                "ARCHITECTURE.md's codemap has a section for `crates/coral-heat`, which is no \
                 workspace member's folder: remove or rename it",
                "ARCHITECTURE.md's crate graph lists crate coral-heat, which is not in the \
                 workspace",
                "ARCHITECTURE.md's crate graph lacks the edge coral-store -> coral-base \
                 (coral-store's Cargo.toml depends on coral-base)",
                "ARCHITECTURE.md's crate graph has the edge coral-store -> coral-heat, but \
                 coral-store does not depend on coral-heat",
            ]
        );
        let doc = DOC.replace("coral-base\ncoral-store", "coral-store");
        assert_eq!(
            problems(&doc, &ws()),
            Vec::<String>::new(),
            "named by its edge"
        );
        let doc = DOC.replace("xtask -> coral-store\n", "xtask => coral-store\n");
        let p = problems(&doc, &ws());
        assert!(
            p[0].contains("\"xtask => coral-store\" in the crate graph is neither"),
            "{p:?}"
        );
        let doc = DOC.replace("```crate-graph", "```text");
        assert!(problems(&doc, &ws())[0].contains("has no ```crate-graph block"));
    }
}

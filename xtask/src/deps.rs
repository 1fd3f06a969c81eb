//! The dependency rules of ARCHITECTURE.md, checked with `cargo metadata`: which of our crates
//! each crate may use, which external crates only the edge may use, where HTTP clients may
//! live, and that ARCHITECTURE.md's crate list and crate graph match the workspace
//! (`architecture_doc.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::architecture_doc::{self, Workspace};
use crate::packages::{Package, metadata};

/// Which of our crates each crate may depend on (normal and build dependencies).
const ALLOWED: &[(&str, &[&str])] = &[
    ("coral-base", &[]),
    ("coral-score", &["coral-base"]),
    ("coral-ann", &[]),
    ("coral-embed", &["coral-base"]),
    ("coral-store", &["coral-base"]),
    ("coral-heat", &["coral-base"]),
    ("coral-thread", &["coral-base"]),
    ("coral-timeline", &["coral-base", "coral-score"]),
    (
        "coral-pg",
        &["coral-base", "coral-score", "coral-store", "coral-thread"],
    ),
    (
        "coral-config",
        &[
            "coral-base",
            "coral-score",
            "coral-embed",
            "coral-store",
            "coral-heat",
            "coral-thread",
            "coral-timeline",
        ],
    ),
    (
        "coral-engine",
        &[
            "coral-base",
            "coral-ann",
            "coral-config",
            "coral-score",
            "coral-embed",
            "coral-store",
            "coral-heat",
            "coral-thread",
            "coral-timeline",
            "coral-pg",
        ],
    ),
    (
        "coral",
        &[
            "coral-base",
            "coral-config",
            "coral-engine",
            "coral-embed",
            "coral-store",
            "coral-heat",
            "coral-thread",
            "coral-timeline",
            "coral-pg",
        ],
    ),
    ("coral-mcp", &["coral"]),
];

/// External crates only the edge may use.
const EDGE_ONLY: &[&str] = &["tokio", "rmcp", "hyper", "axum"];

/// Edge-only crates a library may still use privately, behind a synchronous API, and why.
const PRIVATE_EDGE: &[(&str, &str, &str)] = &[(
    "coral-pg",
    "tokio",
    "the PostgreSQL client's i/o thread behind PgStore's synchronous calls",
)];

/// Database client crates: they send memories to a server, so they live in one crate.
const DATABASE_CLIENTS: &[&str] = &["tokio-postgres", "postgres", "sqlx", "diesel"];

/// The crate that may depend on a database client.
const DATABASE_CLIENT_HOME: &str = "coral-pg";

/// HTTP client crates: whatever can send data off the machine.
const HTTP_CLIENTS: &[&str] = &["ureq", "hyper", "reqwest", "attohttpc", "isahc", "curl"];

/// The crates that may depend on an HTTP client, and why (ARCHITECTURE.md says the same).
const HTTP_CLIENT_HOMES: &[(&str, &str)] = &[
    (
        "coral-heat",
        "the LLM client, OpenAiClient, for distillation and the timeline's summaries",
    ),
    (
        "coral-mcp",
        "model downloads (`coral model fetch`) and the servers",
    ),
];

/// Workspace members that ship nothing and may use anything.
const TOOLING: &[&str] = &["xtask", "coral-benches"];

pub fn check(root: &Path) -> Result<()> {
    let packages = metadata(root)?;
    let doc_path = root.join("ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&doc_path)
        .with_context(|| format!("reading {}", doc_path.display()))?;
    let mut problems = rule_problems(&packages);
    problems.extend(architecture_doc::problems(&doc, &Workspace::of(&packages)));
    if !problems.is_empty() {
        bail!("dependency rules broken:\n  {}", problems.join("\n  "));
    }
    eprintln!(
        "xtask deps: dependency rules hold; ARCHITECTURE.md's crate list and graph match the \
         workspace"
    );
    Ok(())
}

/// Every broken dependency rule, one sentence each.
pub(crate) fn rule_problems(packages: &[Package]) -> Vec<String> {
    let ours: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    let rules: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let homes: Vec<&str> = HTTP_CLIENT_HOMES.iter().map(|(c, _)| *c).collect();
    let mut problems = Vec::new();
    for package in packages {
        let name = package.name.as_str();
        if TOOLING.contains(&name) {
            continue;
        }
        let Some(allowed) = rules.get(name) else {
            problems.push(format!(
                "crate {name} has no dependency rule: add it to ALLOWED in xtask/src/deps.rs \
                 (and to ARCHITECTURE.md)"
            ));
            continue;
        };
        for dep in package
            .deps
            .iter()
            .filter(|d| d.kind.as_deref() != Some("dev"))
        {
            let dep_name = dep.name.as_str();
            if ours.contains(&dep_name) && !allowed.contains(&dep_name) {
                problems.push(format!("{name} must not depend on {dep_name}"));
            }
            let private = PRIVATE_EDGE
                .iter()
                .any(|(c, d, _)| *c == name && *d == dep_name);
            if EDGE_ONLY.contains(&dep_name) && name != "coral-mcp" && !private {
                problems.push(format!("{name} must not depend on {dep_name} (edge only)"));
            }
            if DATABASE_CLIENTS.contains(&dep_name) && name != DATABASE_CLIENT_HOME {
                problems.push(format!(
                    "{name} must not depend on the database client {dep_name}: only \
                     {DATABASE_CLIENT_HOME} talks to a database server (ARCHITECTURE.md, \
                     Invariants)"
                ));
            }
            if HTTP_CLIENTS.contains(&dep_name) && !homes.contains(&name) {
                let where_ = HTTP_CLIENT_HOMES
                    .iter()
                    .map(|(c, why)| format!("{c} ({why})"))
                    .collect::<Vec<_>>()
                    .join(" and ");
                problems.push(format!(
                    "{name} must not depend on the HTTP client {dep_name}: only {where_} may \
                     send requests (ARCHITECTURE.md, Invariants)"
                ));
            }
        }
    }
    for name in rules.keys() {
        if !ours.contains(name) {
            problems.push(format!("crate {name} is missing from the workspace"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::Dep;

    fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Package {
        Package {
            name: name.into(),
            folder: format!("crates/{name}"),
            deps: deps
                .iter()
                .map(|(n, k)| Dep {
                    name: (*n).into(),
                    kind: k.map(String::from),
                })
                .collect(),
        }
    }

    /// Every crate of the rules, each with only `coral-base` (or nothing, for the base).
    fn workspace() -> Vec<Package> {
        ALLOWED
            .iter()
            .map(|(name, allowed)| {
                let deps: Vec<(&str, Option<&str>)> =
                    allowed.iter().take(1).map(|d| (*d, None)).collect();
                package(name, &deps)
            })
            .collect()
    }

    fn with(mut ws: Vec<Package>, name: &str, dep: &str, kind: Option<&str>) -> Vec<Package> {
        let p = ws.iter_mut().find(|p| p.name == name).unwrap();
        p.deps.push(Dep {
            name: dep.into(),
            kind: kind.map(String::from),
        });
        ws
    }

    #[test]
    fn http_clients_only_in_their_homes() {
        assert_eq!(rule_problems(&workspace()), Vec::<String>::new());
        let ok = with(workspace(), "coral-heat", "ureq", None);
        let ok = with(ok, "coral-mcp", "reqwest", None);
        // A test may use one anywhere.
        let ok = with(ok, "coral-store", "ureq", Some("dev"));
        assert_eq!(rule_problems(&ok), Vec::<String>::new());
        for client in HTTP_CLIENTS {
            let bad = with(workspace(), "coral-timeline", client, None);
            let problems = rule_problems(&bad);
            assert!(
                problems.iter().any(|p| p.starts_with(&format!(
                    "coral-timeline must not depend on the HTTP client {client}: only coral-heat"
                ))),
                "{problems:?}"
            );
        }
        let bad = with(workspace(), "coral", "curl", Some("build"));
        assert_eq!(rule_problems(&bad).len(), 1);
    }

    #[test]
    fn crate_edges_and_edge_crates_are_checked_and_tooling_is_free() {
        let bad = with(workspace(), "coral-store", "coral-score", None);
        assert_eq!(
            rule_problems(&bad),
            ["coral-store must not depend on coral-score"]
        );
        let bad = with(workspace(), "coral", "tokio", None);
        assert_eq!(
            rule_problems(&bad),
            ["coral must not depend on tokio (edge only)"]
        );
        let mut ws = workspace();
        ws.push(package("xtask", &[("ureq", None), ("coral-store", None)]));
        ws.push(package("coral-new", &[]));
        assert_eq!(
            rule_problems(&ws),
            [
                "crate coral-new has no dependency rule: add it to ALLOWED in xtask/src/deps.rs \
              (and to ARCHITECTURE.md)"
            ]
        );
        ws.retain(|p| p.name != "coral-heat");
        assert!(
            rule_problems(&ws).contains(&"crate coral-heat is missing from the workspace".into())
        );
    }

    #[test]
    fn the_database_client_and_its_runtime_stay_in_coral_pg() {
        let ok = with(workspace(), "coral-pg", "tokio-postgres", None);
        let ok = with(ok, "coral-pg", "tokio", None);
        assert_eq!(rule_problems(&ok), Vec::<String>::new());
        let bad = with(workspace(), "coral-store", "tokio-postgres", None);
        assert_eq!(
            rule_problems(&bad),
            [
                "coral-store must not depend on the database client tokio-postgres: only coral-pg \
              talks to a database server (ARCHITECTURE.md, Invariants)"
            ]
        );
        let bad = with(workspace(), "coral-pg", "rmcp", None);
        assert_eq!(
            rule_problems(&bad),
            ["coral-pg must not depend on rmcp (edge only)"]
        );
    }
}

//! The crate's shape stays readable (issue 14): every source file opens with a `//!` line and
//! holds at most 800 lines, and no file reaches itself through `crate::` imports (an import
//! circle between files makes a newcomer read all of them at once).

use std::collections::{BTreeMap, BTreeSet};

const MAX_LINES: usize = 800;

/// Module name -> source text, for every file of the (flat) `src/`.
fn sources() -> BTreeMap<String, String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut out = BTreeMap::new();
    for file in std::fs::read_dir(dir).unwrap() {
        let path = file.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

/// `text` without its comments (doc comments included): links in docs are not imports.
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of every `crate::...` path in `code`, groups (`crate::{a, b}`)
/// included.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(group[start..i].trim()).to_string());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[start..i].trim()).to_string());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest).to_string());
        }
    }
    out.remove("");
    out
}

/// Name -> module for what `lib.rs` re-exports (`pub use module::{A, B};`).
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = lib;
    while let Some(at) = rest.find("pub use ") {
        rest = &rest[at + "pub use ".len()..];
        let end = rest.find(';').unwrap_or(rest.len());
        let (module, names) = rest[..end].split_once("::").unwrap_or(("", ""));
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() {
                out.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

/// Which files each file imports from.
fn graph(sources: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let lib = code(&sources["lib"]);
    let names = reexports(&lib);
    sources
        .iter()
        .filter(|(module, _)| *module != "lib")
        .map(|(module, text)| {
            let deps = crate_paths(&code(text))
                .into_iter()
                .filter_map(|first| {
                    if sources.contains_key(&first) {
                        Some(first)
                    } else {
                        names.get(&first).cloned()
                    }
                })
                .filter(|dep| dep != module)
                .collect();
            (module.clone(), deps)
        })
        .collect()
}

/// The groups of files that reach each other (strongly connected, more than one file).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for dep in graph.get(&n).into_iter().flatten() {
                if seen.insert(dep.clone()) {
                    todo.push(dep.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (n, r) in &reaches {
        if !r.contains(*n) || out.iter().any(|g| g.contains(n)) {
            continue;
        }
        let group = reaches
            .iter()
            .filter(|(m, rm)| r.contains(**m) && rm.contains(*n))
            .map(|(m, _)| (*m).clone())
            .collect();
        out.push(group);
    }
    out
}

#[test]
fn no_import_circle_between_files() {
    let sources = sources();
    let graph = graph(&sources);
    assert!(
        graph.len() >= 30,
        "only {} files read; is the scan broken?",
        graph.len()
    );
    // The operations import the connection.
    assert!(graph["turns"].contains("timeline") && graph["history"].contains("timeline"));
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "{graph:#?}");
}

#[test]
fn the_circle_check_sees_circles_through_groups_and_reexports() {
    let lib = "mod a;\npub use a::{Thing, Other};\n";
    let mut sources = BTreeMap::new();
    sources.insert("lib".to_string(), lib.to_string());
    sources.insert("a".to_string(), "use crate::{b::X, c};".to_string());
    sources.insert(
        "b".to_string(),
        "fn f() -> crate::Thing { todo() }".to_string(),
    );
    sources.insert(
        "c".to_string(),
        "// use crate::a;\nuse crate::error::Result;".to_string(),
    );
    sources.insert("d".to_string(), "use crate::a::Y;".to_string());
    let graph = graph(&sources);
    assert_eq!(graph["b"], BTreeSet::from(["a".to_string()]));
    assert!(
        graph["c"].is_empty(),
        "comments and unknown modules are not imports"
    );
    assert_eq!(
        circles(&graph),
        vec![vec!["a".to_string(), "b".to_string()]]
    );
}

#[test]
fn every_file_says_what_it_is_and_stays_short() {
    for (module, text) in sources() {
        assert!(
            text.starts_with("//! "),
            "{module}.rs does not open with a //! line saying what it is"
        );
        let lines = text.lines().count();
        assert!(
            lines <= MAX_LINES,
            "{module}.rs has {lines} lines; split it by topic (at most {MAX_LINES})"
        );
    }
}

//! `cargo xtask eval` options: which datasets, paths, embedders and modes to measure.

use std::path::PathBuf;

use anyhow::{Result, bail};

use super::embedders;
use super::modes;
use super::report::PathKind;

/// Dataset keys, in table order, and the `--dataset` names that select them.
pub const DATASETS: [(&str, &[&str]); 3] = [
    ("madial_zh", &["madial", "madial-zh", "madial_zh", "all"]),
    ("madial_en", &["madial", "madial-en", "madial_en", "all"]),
    ("locomo_dev", &["locomo", "locomo-dev", "locomo_dev", "all"]),
];

/// The usage line.
pub const USAGE: &str = "cargo xtask eval [--dataset madial|madial-zh|madial-en|locomo|all] \
     [--path pool|timeline|all] [--embedder hash|minilm|use|none|all] [--mode NAME|all] \
     [--out FILE] [--baseline FILE] [--docs]   (lists: comma-separated)";

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Dataset keys, in table order.
    pub datasets: Vec<&'static str>,
    /// Paths, in table order.
    pub paths: Vec<PathKind>,
    /// Embedder labels asked for by name (`None`: all, skipping those not installed).
    pub embedders: Option<Vec<&'static str>>,
    /// Mode names asked for (`None`: all).
    pub modes: Option<Vec<&'static str>>,
    /// Where the JSON goes (default `target/coral-bench/eval.json`).
    pub out: Option<PathBuf>,
    /// An earlier `eval.json` to compare recall@5 with.
    pub baseline: Option<PathBuf>,
    /// Write `docs/eval.md` (full runs only).
    pub docs: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            datasets: DATASETS.iter().map(|(k, _)| *k).collect(),
            paths: PathKind::ALL.to_vec(),
            embedders: None,
            modes: None,
            out: None,
            baseline: None,
            docs: false,
        }
    }
}

impl Options {
    /// Parse the arguments after `eval`; every problem is an error naming the value.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options::default();
        let mut filtered = false;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            if flag == "--docs" {
                o.docs = true;
                continue;
            }
            let known = [
                "--dataset",
                "--path",
                "--embedder",
                "--mode",
                "--out",
                "--baseline",
            ];
            if !known.contains(&flag) {
                bail!("eval: unknown argument {:?}; usage: {USAGE}", short(arg));
            }
            let Some(value) = inline.or_else(|| it.next().cloned()) else {
                bail!("eval: {flag} needs a value; usage: {USAGE}");
            };
            match flag {
                "--out" => o.out = Some(PathBuf::from(value)),
                "--baseline" => o.baseline = Some(PathBuf::from(value)),
                "--dataset" => {
                    let names = list(&value, flag)?;
                    for n in &names {
                        if !DATASETS
                            .iter()
                            .any(|(_, aliases)| aliases.contains(&n.as_str()))
                        {
                            bail!(
                                "eval: --dataset {:?} is not madial, madial-zh, madial-en, \
                                 locomo or all",
                                short(n)
                            );
                        }
                    }
                    o.datasets = DATASETS
                        .iter()
                        .filter(|(_, aliases)| names.iter().any(|n| aliases.contains(&n.as_str())))
                        .map(|(k, _)| *k)
                        .collect();
                    filtered |= o.datasets.len() < DATASETS.len();
                }
                "--path" => {
                    let names = list(&value, flag)?;
                    for n in &names {
                        if n != "all" && !PathKind::ALL.iter().any(|p| p.name() == n) {
                            bail!("eval: --path {:?} is not pool, timeline or all", short(n));
                        }
                    }
                    o.paths = PathKind::ALL
                        .into_iter()
                        .filter(|p| names.iter().any(|n| n == "all" || n == p.name()))
                        .collect();
                    filtered |= o.paths.len() < PathKind::ALL.len();
                }
                "--embedder" => {
                    o.embedders = pick(&value, flag, &embedders::labels())?;
                    filtered |= o.embedders.is_some();
                }
                "--mode" => {
                    o.modes = pick(&value, flag, &modes::names())?;
                    filtered |= o.modes.is_some();
                }
                _ => unreachable!("flag checked against the known list above"),
            }
        }
        if o.docs && filtered {
            bail!(
                "eval: --docs writes docs/eval.md from the whole table; run it without \
                 --dataset, --path, --embedder and --mode"
            );
        }
        Ok(o)
    }

    /// Whether a mode is selected.
    pub fn wants_mode(&self, name: &str) -> bool {
        self.modes.as_ref().is_none_or(|m| m.contains(&name))
    }
}

/// A comma-separated list, none empty.
fn list(value: &str, flag: &str) -> Result<Vec<String>> {
    let names: Vec<String> = value.split(',').map(|s| s.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        bail!("eval: {flag} {:?} has an empty name", short(value));
    }
    Ok(names)
}

/// Names from `known`, or `None` for `all`.
fn pick(value: &str, flag: &str, known: &[&'static str]) -> Result<Option<Vec<&'static str>>> {
    let names = list(value, flag)?;
    if names.iter().any(|n| n == "all") {
        return Ok(None);
    }
    names
        .iter()
        .map(|n| match known.iter().find(|k| *k == n) {
            Some(k) => Ok(*k),
            None => bail!(
                "eval: {flag} {:?} is not one of {} (or all)",
                short(n),
                known.join(", ")
            ),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// At most 40 characters of a value, for messages.
fn short(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options> {
        Options::parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn options_select_cells_and_bad_values_are_named() {
        assert_eq!(parse(&[]).unwrap(), Options::default());
        let o = parse(&[
            "--dataset",
            "locomo",
            "--path=pool",
            "--embedder",
            "hash,use",
        ])
        .unwrap();
        assert_eq!(o.datasets, ["locomo_dev"]);
        assert_eq!(o.paths, [PathKind::Pool]);
        assert_eq!(o.embedders, Some(vec!["hash", "use"]));
        assert!(o.wants_mode("weighted"));
        let o = parse(&["--dataset", "madial", "--mode", "rrf", "--embedder", "all"]).unwrap();
        assert_eq!(o.datasets, ["madial_zh", "madial_en"]);
        assert_eq!(o.embedders, None);
        assert!(o.wants_mode("rrf") && !o.wants_mode("weighted"));
        assert!(parse(&["--docs"]).unwrap().docs);

        let err = |args: &[&str]| format!("{:#}", parse(args).unwrap_err());
        assert!(err(&["--dataset", "locomo-test"]).contains("\"locomo-test\""));
        assert!(err(&["--embedder", "bge"]).contains("\"bge\" is not one of hash"));
        assert!(err(&["--mode", "magic"]).contains("\"magic\""));
        assert!(err(&["--path", "pool,"]).contains("empty name"));
        assert!(err(&["--mode"]).contains("needs a value"));
        assert!(err(&["--fast"]).contains("unknown argument \"--fast\""));
        assert!(err(&["--docs", "--path", "pool"]).contains("whole table"));
    }
}

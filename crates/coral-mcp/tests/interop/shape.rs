//! Comparing two tool replies key for key: the original's keys all present in Coral's with
//! the same JSON types, recursively, and the values that carry the reply's meaning equal.

use serde_json::Value;

/// Keys whose values must agree: what the call did, counts, texts and states. Every other
/// value differs by run or by design (ids, times, paths, byte sizes, messages in another
/// language) and is only listed.
const MEANINGFUL: &[&str] = &[
    "ok",
    "inserted",
    "persisted",
    "flushed",
    "hot_persisted",
    "count",
    "step_count",
    "status",
    "done",
    "title",
    "summary",
    "text",
    "by",
    "last_advance_by",
    "seq",
    "query",
    "content",
    "truncated",
    "reset",
    "memory_data_untouched",
    "key_path",
    "old",
    "new",
    "config",
    "path",
    "scope",
    "score",
    "vector",
    "jaccard",
    "time",
    "total",
    "threads",
    "capacity_threshold",
    "embedder",
    "importance",
    "access_count",
    "location",
    "earlier",
    "listChanged",
    "protocolVersion",
    "type",
    "required",
];

/// Numbers the original rounds, by key, and to how many decimals: Coral's must be rounded
/// alike (prompts and the original's GUI show them as they come).
const ROUNDED: &[(&str, i32)] = &[
    ("score", 4),
    ("vector", 4),
    ("jaccard", 4),
    ("time", 4),
    ("heat", 4),
    ("created_at", 3),
    ("updated_at", 3),
    ("at", 3),
    ("days_old", 1),
];

/// Subtrees whose values are all run-dependent: file paths and byte sizes.
const VARYING: &[&str] = &["paths", "disk_usage"];

/// Maps whose keys are data (dates), compared by size and value types only.
const DATA_KEYED: &[&str] = &["last_14_days"];

/// How two replies differ.
#[derive(Default)]
pub struct Diff {
    /// (path, what differs): missing keys, other types, other lengths, other meaningful
    /// values.
    pub problems: Vec<(String, String)>,
    /// Keys only Coral's reply has (allowed: new keys may be added).
    pub added: Vec<String>,
    /// Other values that differ (ids, times, sizes, messages): listed, not failures.
    pub values: Vec<String>,
    /// Key paths of the original's replies compared (every key, array entry and value).
    pub compared: usize,
}

impl Diff {
    pub fn problem(&mut self, path: &str, what: String) {
        self.problems.push((path.to_string(), what));
    }
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn last_key(path: &str) -> &str {
    let end = path.trim_end_matches(|c: char| c == ']' || c.is_ascii_digit());
    let end = end.strip_suffix('[').unwrap_or(end);
    end.rsplit('.').next().unwrap_or(end)
}

/// Compare the original's `want` with Coral's `got` at `path`.
pub fn compare(path: &str, want: &Value, got: &Value, d: &mut Diff) {
    d.compared += 1;
    if kind(want) != kind(got) {
        d.problem(
            path,
            format!(
                "{} {want} in the original, {} {got} in Coral",
                kind(want),
                kind(got)
            ),
        );
        return;
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) if DATA_KEYED.contains(&last_key(path)) => {
            if w.len() != g.len() {
                d.problem(
                    path,
                    format!("{} entries in the original, {} in Coral", w.len(), g.len()),
                );
            }
            let kinds = |m: &serde_json::Map<String, Value>| {
                m.values()
                    .map(kind)
                    .collect::<std::collections::BTreeSet<_>>()
            };
            if kinds(w) != kinds(g) {
                d.problem(
                    path,
                    format!("value types {:?} vs {:?}", kinds(w), kinds(g)),
                );
            }
            if w != g {
                d.values.push(format!("{path}: {want} vs {got}"));
            }
        }
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) => compare(&format!("{path}.{k}"), wv, gv, d),
                    None => d.problem(
                        &format!("{path}.{k}"),
                        format!("missing in Coral (the original has {wv})"),
                    ),
                }
            }
            for k in g.keys().filter(|k| !w.contains_key(*k)) {
                d.added.push(format!("{path}.{k}"));
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                d.problem(
                    path,
                    format!(
                        "{} entries in the original, {} in Coral: {want} vs {got}",
                        w.len(),
                        g.len()
                    ),
                );
            }
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                compare(&format!("{path}[{i}]"), wv, gv, d);
            }
        }
        (Value::Number(_), Value::Number(g)) if rounded(path).is_some() => {
            let places = rounded(path).unwrap_or(0);
            let g = g.as_f64().unwrap_or(f64::NAN);
            let scale = 10f64.powi(places);
            // A hundredth of the last place: well above f64's error on a Unix time.
            if ((g * scale).round() / scale - g).abs() > 0.01 / scale {
                d.problem(
                    path,
                    format!("{g} is not rounded to {places} places as the original's {want} is"),
                );
            }
            compare_values(path, want, &Value::from(g), d);
        }
        _ => compare_values(path, want, got, d),
    }
}

/// The decimals the original rounds the number at `path` to, if it does.
fn rounded(path: &str) -> Option<i32> {
    let key = last_key(path);
    ROUNDED.iter().find(|(k, _)| *k == key).map(|(_, n)| *n)
}

/// Two scalars: equal, or within 1e-4 for numbers; otherwise a problem where the key is
/// meaningful, a listed value elsewhere.
fn compare_values(path: &str, want: &Value, got: &Value, d: &mut Diff) {
    let close = match (want.as_f64(), got.as_f64()) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-4,
        _ => want == got,
    };
    if close {
        return;
    }
    let varying = path.split('.').any(|part| VARYING.contains(&part));
    if !varying && MEANINGFUL.contains(&last_key(path)) {
        d.problem(path, format!("{want} in the original, {got} in Coral"));
    } else {
        d.values.push(format!("{path}: {want} vs {got}"));
    }
}

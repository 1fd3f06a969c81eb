//! Reading and writing the threads file: a JSON array of thread objects (the original's
//! shape). Reading is lenient: the original's dict form `{id: thread}`, steps without
//! `step_id`, missing optional keys; an element that cannot be understood is kept verbatim.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::ids::derived_step_id;
use crate::merge::merge_thread;
use crate::model::{Status, Step, Thread};
use crate::set::ThreadSet;

/// Keys the views derive; dropped on read so a rewrite never stores a stale copy.
const DERIVED_KEYS: &[&str] = &["step_count", "children"];

/// Parse the bytes of a threads file.
pub(crate) fn parse(bytes: &[u8], path: &Path) -> Result<ThreadSet> {
    let corrupted = |detail: String| Error::Corrupted {
        path: path.to_path_buf(),
        detail,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(ThreadSet::default());
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        corrupted(format!(
            "not valid JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let elements: Vec<(Option<String>, Value)> = match value {
        Value::Array(items) => items.into_iter().map(|v| (None, v)).collect(),
        Value::Object(mut map) => match map.remove("threads") {
            Some(Value::Array(items)) if map.is_empty() => {
                items.into_iter().map(|v| (None, v)).collect()
            }
            other => {
                if let Some(v) = other {
                    map.insert("threads".into(), v);
                }
                map.into_iter().map(|(k, v)| (Some(k), v)).collect()
            }
        },
        other => {
            return Err(corrupted(format!(
                "the top level is {}, not an array of threads",
                kind(&other)
            )));
        }
    };
    let mut set = ThreadSet::default();
    for (key, element) in elements {
        match thread_from(key.as_deref(), &element) {
            Some(t) => match set.position(&t.thread_id) {
                // The same id twice (a writer that appended instead of merging): one thread
                // holding the union of both, the earlier element's steps first.
                Some(i) => {
                    let earlier = std::mem::replace(&mut set.threads[i], t);
                    merge_thread(&mut set.threads[i], earlier);
                }
                None => set.push(t),
            },
            None => set.unparsed.push(element),
        }
    }
    Ok(set)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string field: missing and null read as `""`; any other type makes the element unreadable.
fn string(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.remove(key) {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(s)) => Some(s),
        Some(_) => None,
    }
}

/// A time: Unix seconds as a number (or a numeric string); missing and null read as `None`.
fn time(map: &mut Map<String, Value>, key: &str) -> Option<Option<f64>> {
    match map.remove(key) {
        None | Some(Value::Null) => Some(None),
        Some(Value::Number(n)) => n.as_f64().map(Some),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok().map(Some),
        Some(_) => None,
    }
    .filter(|t| t.is_none_or(f64::is_finite))
}

pub(crate) fn thread_from(key: Option<&str>, element: &Value) -> Option<Thread> {
    let mut map = element.as_object()?.clone();
    let thread_id = match map.remove("thread_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(Value::Number(n)) => n.to_string(),
        None | Some(Value::Null) => key?.to_string(),
        Some(_) => return None,
    };
    let title = string(&mut map, "title")?;
    let summary = string(&mut map, "summary")?;
    let status = match map.remove("status") {
        None | Some(Value::Null) => Status::Active,
        Some(Value::String(s)) => Status::parse(&s),
        Some(_) => return None,
    };
    let parent_thread_id = Some(string(&mut map, "parent_thread_id")?).filter(|p| !p.is_empty());
    let created_at = time(&mut map, "created_at")?;
    let updated_at = time(&mut map, "updated_at")?;
    let created_at = created_at.or(updated_at).unwrap_or(0.0);
    let updated_at = updated_at.unwrap_or(created_at);
    let last_advance_by = string(&mut map, "last_advance_by")?;
    let steps = match map.remove("steps") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, s)| step_from(&thread_id, i, s, created_at))
            .collect::<Option<Vec<Step>>>()?,
        Some(_) => return None,
    };
    for k in DERIVED_KEYS {
        map.remove(*k);
    }
    Some(Thread {
        thread_id,
        title,
        summary,
        status,
        parent_thread_id,
        steps,
        created_at,
        updated_at,
        last_advance_by,
        extra: map,
    })
}

fn step_from(thread_id: &str, index: usize, value: Value, created_at: f64) -> Option<Step> {
    let Value::Object(mut map) = value else {
        return None;
    };
    let seq = match map.remove("seq") {
        None | Some(Value::Null) => index as u64 + 1,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(u) => u,
            None => {
                let f = n.as_f64()?;
                if f.fract() != 0.0 || !(0.0..=9.0e15).contains(&f) {
                    return None;
                }
                f as u64
            }
        },
        Some(_) => return None,
    };
    let text = string(&mut map, "text")?;
    let done = match map.remove("done") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return None,
    };
    let at = time(&mut map, "at")?.unwrap_or(created_at);
    let by = string(&mut map, "by")?;
    let step_id = match map.remove("step_id") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        None | Some(Value::Null) => derived_step_id(thread_id, seq, at, &text),
        Some(Value::String(_)) => derived_step_id(thread_id, seq, at, &text),
        Some(_) => return None,
    };
    Some(Step {
        step_id: step_id.into(),
        seq,
        text: text.into(),
        done,
        at,
        by: by.into(),
        extra: map,
    })
}

/// The file's bytes: threads in set order, then unreadable elements as they were; two-space
/// indentation and raw UTF-8, like the original's `json.dump(..., ensure_ascii=False,
/// indent=2)`.
pub(crate) fn to_bytes(set: &ThreadSet) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 * (set.len() + set.step_total()));
    let plain = set.unparsed.is_empty()
        && set
            .threads
            .iter()
            .all(|t| t.extra.is_empty() && t.steps.iter().all(|s| s.extra.is_empty()));
    if plain {
        pretty_plain(set, &mut out);
    } else {
        pretty_serde(set, &mut out);
    }
    out.push(b'\n');
    out
}

/// `serde_json::to_writer_pretty` of the whole set (any unknown keys and elements).
fn pretty_serde(set: &ThreadSet, out: &mut Vec<u8>) {
    struct All<'a>(&'a ThreadSet);
    impl Serialize for All<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            use serde::ser::SerializeSeq;
            let mut seq = s.serialize_seq(Some(self.0.threads.len() + self.0.unparsed.len()))?;
            for t in &self.0.threads {
                seq.serialize_element(t)?;
            }
            for v in &self.0.unparsed {
                seq.serialize_element(v)?;
            }
            seq.end()
        }
    }
    // Serialising owned, finite data cannot fail; times are clamped finite on the way in.
    let _ = serde_json::to_writer_pretty(&mut *out, &All(set));
}

/// The same bytes as [`pretty_serde`] for a set without unknown keys or elements (the usual
/// case), written directly: the keys are known ASCII and need no escaping, which halves the
/// time of a checkpoint (a test compares both on random sets).
fn pretty_plain(set: &ThreadSet, out: &mut Vec<u8>) {
    fn value(out: &mut Vec<u8>, v: &(impl Serialize + ?Sized)) {
        let _ = serde_json::to_writer(&mut *out, v);
    }
    if set.threads.is_empty() {
        out.extend_from_slice(b"[]");
        return;
    }
    out.push(b'[');
    for (i, t) in set.threads.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n  {" } else { b",\n  {" });
        out.extend_from_slice(b"\n    \"thread_id\": ");
        value(out, &t.thread_id);
        out.extend_from_slice(b",\n    \"title\": ");
        value(out, &t.title);
        out.extend_from_slice(b",\n    \"summary\": ");
        value(out, &t.summary);
        out.extend_from_slice(b",\n    \"status\": ");
        value(out, t.status.as_str());
        out.extend_from_slice(b",\n    \"parent_thread_id\": ");
        value(out, &t.parent_thread_id);
        out.extend_from_slice(b",\n    \"steps\": [");
        for (j, st) in t.steps.iter().enumerate() {
            out.extend_from_slice(if j == 0 { b"\n      {" } else { b",\n      {" });
            out.extend_from_slice(b"\n        \"step_id\": ");
            value(out, &*st.step_id);
            out.extend_from_slice(b",\n        \"seq\": ");
            value(out, &st.seq);
            out.extend_from_slice(b",\n        \"text\": ");
            value(out, &*st.text);
            out.extend_from_slice(b",\n        \"done\": ");
            value(out, &st.done);
            out.extend_from_slice(b",\n        \"at\": ");
            value(out, &st.at);
            out.extend_from_slice(b",\n        \"by\": ");
            value(out, &*st.by);
            out.extend_from_slice(b"\n      }");
        }
        if !t.steps.is_empty() {
            out.extend_from_slice(b"\n    ");
        }
        out.extend_from_slice(b"],\n    \"created_at\": ");
        value(out, &t.created_at);
        out.extend_from_slice(b",\n    \"updated_at\": ");
        value(out, &t.updated_at);
        out.extend_from_slice(b",\n    \"last_advance_by\": ");
        value(out, &t.last_advance_by);
        out.extend_from_slice(b"\n  }");
    }
    out.extend_from_slice(b"\n]");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(v: Value) -> ThreadSet {
        parse(v.to_string().as_bytes(), Path::new("t.json")).unwrap()
    }

    #[test]
    fn the_array_form_round_trips_with_unknown_keys() {
        let file = json!([{
            "thread_id": "aaaaaaaaaaaaaaaa", "title": "发布 v2.0", "summary": "s",
            "status": "interrupted", "parent_thread_id": null,
            "steps": [{"step_id": "0123456789ab", "seq": 1, "text": "x", "done": true,
                       "at": 5.5, "by": "聊天B", "mood": "good"}],
            "created_at": 1.0, "updated_at": 5.5, "last_advance_by": "聊天B",
            "tags": ["x"], "step_count": 99
        }]);
        let set = load(file.clone());
        let t = &set.threads[0];
        assert_eq!(t.status, Status::Interrupted);
        assert_eq!(t.steps[0].extra["mood"], json!("good"));
        assert_eq!(t.extra["tags"], json!(["x"]));
        let back: Value = serde_json::from_slice(&to_bytes(&set)).unwrap();
        let mut expected = file;
        expected[0].as_object_mut().unwrap().remove("step_count");
        assert_eq!(back, expected);
        // Key order is the original's.
        let text = String::from_utf8(to_bytes(&set)).unwrap();
        assert!(text.find("\"thread_id\"") < text.find("\"title\""));
        assert!(text.find("\"steps\"") < text.find("\"created_at\""));
        assert!(text.contains("发布 v2.0"), "raw UTF-8, not \\u escapes");
    }

    proptest::proptest! {
        /// The direct writer gives exactly serde_json's pretty bytes.
        #[test]
        fn the_plain_writer_matches_serde(
            threads in proptest::collection::vec(
                (
                    "\\PC{0,12}",
                    proptest::option::of("[a-f0-9]{4}"),
                    proptest::collection::vec(("\\PC{0,8}", proptest::bool::ANY, 0.0..2e9f64), 0..4),
                    0.0..2e9f64,
                ),
                0..5,
            )
        ) {
            let mut set = ThreadSet::default();
            for (i, (title, parent, steps, at)) in threads.into_iter().enumerate() {
                let mut v = json!({"thread_id": format!("t{i}"), "title": title,
                    "summary": "s\"\n\u{2028}", "status": if i % 2 == 0 { "active" } else { "x" },
                    "created_at": at, "updated_at": at, "last_advance_by": "🦀",
                    "parent_thread_id": parent,
                    "steps": steps.iter().enumerate().map(|(j, (text, done, at))| json!({
                        "step_id": format!("s{i}-{j}"), "seq": j + 1, "text": text,
                        "done": done, "at": at, "by": "b"})).collect::<Vec<_>>()});
                if i == 3 {
                    v["steps"] = json!([]);
                }
                set.push(thread_from(None, &v).unwrap());
            }
            let (mut plain, mut serde) = (Vec::new(), Vec::new());
            pretty_plain(&set, &mut plain);
            pretty_serde(&set, &mut serde);
            proptest::prop_assert_eq!(String::from_utf8(plain).unwrap(), String::from_utf8(serde).unwrap());
        }
    }

    #[test]
    fn the_dict_form_and_missing_keys_load() {
        let set = load(json!({
            "t1": {"title": "a", "steps": [{"text": "one", "at": 3.0},
                                           {"text": "two", "done": true}]},
            "t2": {"thread_id": "t2", "title": "b", "created_at": 7, "status": "archived"}
        }));
        assert_eq!(set.len(), 2);
        let t1 = set.get("t1").unwrap();
        assert_eq!(t1.steps[0].seq, 1);
        assert_eq!(t1.steps[1].seq, 2);
        assert_eq!(t1.steps[1].at, 0.0, "no time anywhere: 0");
        assert_eq!(t1.steps[0].step_id.len(), 12);
        assert_eq!(
            t1.steps[0].step_id,
            load(json!({"t1": {"title": "a", "steps": [
            {"text": "one", "at": 3.0}]}}))
            .get("t1")
            .unwrap()
            .steps[0]
                .step_id,
            "derived ids are the same in every reader"
        );
        assert_ne!(t1.steps[0].step_id, t1.steps[1].step_id);
        let t2 = set.get("t2").unwrap();
        assert_eq!((t2.created_at, t2.updated_at), (7.0, 7.0));
        assert_eq!(t2.status, Status::Archived);
        assert_eq!(t2.summary, "");
        // A wrapper object also reads.
        assert_eq!(load(json!({"threads": [{"thread_id": "x"}]})).len(), 1);
    }

    #[test]
    fn unreadable_elements_are_kept_verbatim() {
        let bad = json!({"thread_id": "b", "steps": [{"done": "yes"}]});
        let set = load(json!([{"thread_id": "a"}, bad, 42, {"title": "no id"}]));
        assert_eq!(set.len(), 1);
        assert_eq!(set.unparsed.len(), 3);
        let back: Value = serde_json::from_slice(&to_bytes(&set)).unwrap();
        assert_eq!(back[1], bad);
        assert_eq!(back[2], json!(42));
    }

    #[test]
    fn duplicate_ids_merge() {
        let set = load(json!([
            {"thread_id": "a", "title": "old", "updated_at": 1.0,
             "steps": [{"step_id": "s1", "seq": 1, "text": "x", "at": 1.0}]},
            {"thread_id": "a", "title": "new", "updated_at": 2.0,
             "steps": [{"step_id": "s2", "seq": 1, "text": "y", "at": 2.0}]}
        ]));
        assert_eq!(set.len(), 1);
        let t = set.get("a").unwrap();
        assert_eq!(t.title, "new");
        let ids: Vec<&str> = t.steps.iter().map(|s| &*s.step_id).collect();
        assert_eq!(ids, ["s1", "s2"]);
    }

    #[test]
    fn files_that_are_not_threads_are_errors() {
        for bad in [&b"{not json"[..], b"42", b"\"x\""] {
            match parse(bad, Path::new("t.json")) {
                Err(Error::Corrupted { path, .. }) => assert_eq!(path, Path::new("t.json")),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(parse(b"  \n", Path::new("t.json")).unwrap().len(), 0);
    }
}

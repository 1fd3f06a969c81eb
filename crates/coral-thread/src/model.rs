//! Threads and steps in the original's JSON shape, and the views operations return.

use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

/// Longest thread title, in characters (Unicode scalar values, like Python's `len`).
pub const MAX_TITLE_CHARS: usize = 80;
/// Longest step text (an advance note, or `[中断] reason`), in characters.
pub const MAX_STEP_CHARS: usize = 500;
/// Longest summary, in characters. The original set no limit; a summary is a few sentences of
/// plan, and a model pasting a document into it is a mistake worth reporting.
pub const MAX_SUMMARY_CHARS: usize = 2_000;
/// Longest `by` (the chat or agent name), in characters.
pub const MAX_BY_CHARS: usize = 80;

/// A thread's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Being worked on (listed first by `thread_status`).
    Active,
    /// Paused with a reason; listed after the active ones.
    Interrupted,
    /// Done or shelved: kept forever, hidden from the overview unless asked for.
    Archived,
    /// A status some other writer of the file used; kept verbatim, listed last.
    Other(String),
}

impl Status {
    /// The status as written in the file.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Active => "active",
            Status::Interrupted => "interrupted",
            Status::Archived => "archived",
            Status::Other(s) => s,
        }
    }

    /// Parse a file's status string; unknown values are kept as [`Status::Other`].
    pub fn parse(s: &str) -> Status {
        match s {
            "active" => Status::Active,
            "interrupted" => Status::Interrupted,
            "archived" => Status::Archived,
            other => Status::Other(other.to_string()),
        }
    }

    /// Listing order: active, interrupted, other, archived (the overview's, here and in a
    /// database backend).
    pub fn rank(&self) -> u8 {
        match self {
            Status::Active => 0,
            Status::Interrupted => 1,
            Status::Other(_) => 2,
            Status::Archived => 3,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One thread as stored: the original's keys in the original's order, then any keys another
/// writer added (kept so that rewriting the file loses nothing).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Thread {
    pub thread_id: String,
    pub title: String,
    pub summary: String,
    pub status: Status,
    pub parent_thread_id: Option<String>,
    pub steps: Vec<Step>,
    pub created_at: f64,
    pub updated_at: f64,
    pub last_advance_by: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One step as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Step {
    pub step_id: Arc<str>,
    pub seq: u64,
    pub text: Arc<str>,
    pub done: bool,
    pub at: f64,
    pub by: Arc<str>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A thread as operations return it (docs/threads.md): `{thread_id, title, summary, status,
/// parent_thread_id, last_advance_by, created_at, updated_at, step_count, steps}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadView {
    /// 16 hex digits (or whatever id another writer used).
    pub thread_id: String,
    /// Short title (≤ 80 characters).
    pub title: String,
    /// The plan: where the work is going.
    pub summary: String,
    /// Active, interrupted or archived.
    pub status: Status,
    /// The parent thread, if linked.
    pub parent_thread_id: Option<String>,
    /// Who advanced it last (`by` of the last advance), `""` if nobody said.
    pub last_advance_by: String,
    /// Creation time, Unix seconds.
    pub created_at: f64,
    /// Last change, Unix seconds.
    pub updated_at: f64,
    /// Number of steps.
    pub step_count: usize,
    /// The steps in order.
    pub steps: Vec<StepView>,
}

/// A step as operations return it: `{step_id, seq, text, done, by, at}`. The strings are
/// shared with the store (`Arc<str>`): returning a thread's view after each advance costs no
/// copy of its earlier steps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepView {
    /// 12 hex digits, unique across threads and processes.
    pub step_id: Arc<str>,
    /// 1-based position.
    pub seq: u64,
    /// What happened (≤ 500 characters).
    pub text: Arc<str>,
    /// Whether this step completed something.
    pub done: bool,
    /// Who advanced, `""` if nobody said.
    pub by: Arc<str>,
    /// When, Unix seconds.
    pub at: f64,
}

/// A thread in the overview: its view and the ids of the threads linked under it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadEntry {
    /// The thread.
    #[serde(flatten)]
    pub thread: ThreadView,
    /// Child thread ids, oldest first (archived children included).
    pub children: Vec<String>,
}

/// What `thread_status` found. Serialises as `{"count": 1, "thread": {...}}` for one id or
/// `{"count": n, "threads": [...]}` for the overview: the tool's result (docs/threads.md) without
/// `ok`.
#[derive(Clone, Debug, PartialEq)]
pub enum StatusReport {
    /// The thread asked for by id.
    One(ThreadView),
    /// The overview: active first, then interrupted (then archived when asked for), each
    /// group newest update first.
    Many(Vec<ThreadEntry>),
}

impl StatusReport {
    /// How many threads it holds.
    pub fn count(&self) -> usize {
        match self {
            StatusReport::One(_) => 1,
            StatusReport::Many(v) => v.len(),
        }
    }

    /// The threads' views in report order.
    pub fn views(&self) -> Vec<&ThreadView> {
        match self {
            StatusReport::One(t) => vec![t],
            StatusReport::Many(v) => v.iter().map(|e| &e.thread).collect(),
        }
    }
}

impl Serialize for StatusReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("count", &self.count())?;
        match self {
            StatusReport::One(t) => map.serialize_entry("thread", t)?,
            StatusReport::Many(v) => map.serialize_entry("threads", v)?,
        }
        map.end()
    }
}

impl Thread {
    pub(crate) fn view(&self) -> ThreadView {
        ThreadView {
            thread_id: self.thread_id.clone(),
            title: self.title.clone(),
            summary: self.summary.clone(),
            status: self.status.clone(),
            parent_thread_id: self.parent_thread_id.clone(),
            last_advance_by: self.last_advance_by.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            step_count: self.steps.len(),
            steps: self
                .steps
                .iter()
                .map(|s| StepView {
                    step_id: s.step_id.clone(),
                    seq: s.seq,
                    text: s.text.clone(),
                    done: s.done,
                    by: s.by.clone(),
                    at: s.at,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view() -> ThreadView {
        ThreadView {
            thread_id: "0123456789abcdef".into(),
            title: "发布 v2.0".into(),
            summary: "".into(),
            status: Status::Active,
            parent_thread_id: None,
            last_advance_by: "聊天B".into(),
            created_at: 1.5,
            updated_at: 2.5,
            step_count: 1,
            steps: vec![StepView {
                step_id: "00000000abcd".into(),
                seq: 1,
                text: "done".into(),
                done: true,
                by: "聊天B".into(),
                at: 2.5,
            }],
        }
    }

    #[test]
    fn the_view_has_the_spec_keys_in_order() {
        let text = serde_json::to_string(&view()).unwrap();
        let keys = [
            "thread_id",
            "title",
            "summary",
            "status",
            "parent_thread_id",
            "last_advance_by",
            "created_at",
            "updated_at",
            "step_count",
            "steps",
        ];
        let mut at = 0;
        for k in keys {
            let pos = text[at..].find(&format!("\"{k}\"")).map(|p| p + at);
            assert!(pos.is_some(), "{k} missing or out of order in {text}");
            at = pos.unwrap_or(at);
        }
        assert!(text.contains(
            r#"{"step_id":"00000000abcd","seq":1,"text":"done","done":true,"by":"聊天B","at":2.5}"#
        ));
    }

    #[test]
    fn status_reports_serialise_to_the_tool_results() {
        let one = serde_json::to_value(StatusReport::One(view())).unwrap();
        assert_eq!(one["count"], json!(1));
        assert_eq!(one["thread"]["status"], json!("active"));
        let many = serde_json::to_value(StatusReport::Many(vec![ThreadEntry {
            thread: view(),
            children: vec!["c".into()],
        }]))
        .unwrap();
        assert_eq!(many["count"], json!(1));
        assert_eq!(many["threads"][0]["children"], json!(["c"]));
        assert_eq!(many["threads"][0]["step_count"], json!(1));
    }

    #[test]
    fn unknown_statuses_are_kept() {
        assert_eq!(Status::parse("paused"), Status::Other("paused".into()));
        assert_eq!(Status::parse("paused").as_str(), "paused");
        assert!(Status::Active.rank() < Status::Interrupted.rank());
        assert!(Status::Other("x".into()).rank() < Status::Archived.rank());
    }
}

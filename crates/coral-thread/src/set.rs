//! `ThreadSet`: the threads in memory and the seven operations on them. No I/O; the time is a
//! parameter, so every result is exact.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::done::looks_completed;
use crate::error::{Error, Result};
use crate::ids;
use crate::model::{
    MAX_BY_CHARS, MAX_STEP_CHARS, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS, Status, StatusReport, Step,
    Thread, ThreadEntry, ThreadView,
};

/// Prefix of the step an interrupt adds (the original's marker, which agents look for).
pub const INTERRUPT_PREFIX: &str = "[中断]";

/// All threads, in file order, with an index by id. Threads are never removed, so indices stay
/// valid for the life of the set.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ThreadSet {
    pub threads: Vec<Thread>,
    index: HashMap<String, usize>,
    /// Array elements of the file that are not threads this crate understands: written back
    /// verbatim after the threads, never dropped.
    pub unparsed: Vec<Value>,
}

/// How to take back one operation: see [`ThreadSet::undo_point`].
#[derive(Debug)]
pub(crate) enum Undo {
    /// The operation created the set's last thread: remove it.
    Created,
    /// The operation changed an existing thread.
    Changed(Box<Changed>),
}

/// A thread's changeable fields before an operation.
#[derive(Debug)]
pub(crate) struct Changed {
    pub index: usize,
    pub steps: usize,
    status: Status,
    parent_thread_id: Option<String>,
    last_advance_by: String,
    updated_at: f64,
}

/// The next `updated_at`: the clock, but strictly after the thread's previous change, so a
/// local change always wins the merge against the state it was made on even if clocks of two
/// processes disagree slightly or the clock did not move.
fn bump(previous: f64, now: f64) -> f64 {
    now.max(previous + 1e-6)
}

fn check_len(what: &str, text: &str, max: usize) -> Result<()> {
    let n = text.chars().count();
    if n > max {
        return Err(Error::InvalidInput(format!(
            "{what} is {n} characters; the limit is {max}: shorten it"
        )));
    }
    Ok(())
}

fn non_empty<'a>(what: &str, text: &'a str) -> Result<&'a str> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{what} is empty: give some text"
        )));
    }
    Ok(t)
}

fn optional(text: Option<&str>) -> &str {
    text.map(str::trim).unwrap_or("")
}

/// The fields of a `thread_create` as stored: title trimmed and non-empty, summary and `by`
/// trimmed (empty when absent), each within its limit. The one check of every thread store
/// (this file's and a database backend's).
pub fn checked_create<'a>(
    title: &'a str,
    summary: Option<&'a str>,
    by: Option<&'a str>,
) -> Result<(&'a str, &'a str, &'a str)> {
    let title = non_empty("title", title)?;
    check_len("title", title, MAX_TITLE_CHARS)?;
    let summary = optional(summary);
    check_len("summary", summary, MAX_SUMMARY_CHARS)?;
    let by = optional(by);
    check_len("by", by, MAX_BY_CHARS)?;
    Ok((title, summary, by))
}

/// The fields of a `thread_advance` as stored: the note trimmed and non-empty, `by` trimmed,
/// each within its limit.
pub fn checked_advance<'a>(note: &'a str, by: Option<&'a str>) -> Result<(&'a str, &'a str)> {
    let note = non_empty("note", note)?;
    check_len("note", note, MAX_STEP_CHARS)?;
    let by = optional(by);
    check_len("by", by, MAX_BY_CHARS)?;
    Ok((note, by))
}

impl ThreadSet {
    /// Number of threads (archived included).
    pub fn len(&self) -> usize {
        self.threads.len()
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    pub fn get(&self, id: &str) -> Result<&Thread> {
        self.position(id)
            .map(|i| &self.threads[i])
            .ok_or_else(|| Error::NotFound(id.to_string()))
    }

    fn get_mut(&mut self, id: &str) -> Result<&mut Thread> {
        match self.position(id) {
            Some(i) => Ok(&mut self.threads[i]),
            None => Err(Error::NotFound(id.to_string())),
        }
    }

    /// Add a thread whose id is not in the set yet (the caller checks).
    pub fn push(&mut self, thread: Thread) {
        self.index
            .insert(thread.thread_id.clone(), self.threads.len());
        self.threads.push(thread);
    }

    fn fresh_step_id(&self, thread: &Thread) -> Arc<str> {
        // 48 random bits: a clash is very unlikely, and checking the thread itself is cheap.
        // (Checking every thread would make an advance O(all steps).)
        loop {
            let id = ids::new_step_id();
            let id = id.as_str();
            if !thread.steps.iter().any(|s| *s.step_id == *id) {
                return id.into();
            }
        }
    }

    /// `thread_create`: a new active thread.
    pub fn create(
        &mut self,
        title: &str,
        summary: Option<&str>,
        parent_thread_id: Option<&str>,
        by: Option<&str>,
        now: f64,
    ) -> Result<&Thread> {
        let (title, summary, by) = checked_create(title, summary, by)?;
        let parent = parent_thread_id.map(str::trim).filter(|p| !p.is_empty());
        if let Some(p) = parent {
            self.get(p)?;
        }
        let thread_id = loop {
            let id = ids::new_thread_id();
            if self.position(&id).is_none() {
                break id;
            }
        };
        self.push(Thread {
            thread_id,
            title: title.to_string(),
            summary: summary.to_string(),
            status: Status::Active,
            parent_thread_id: parent.map(String::from),
            steps: Vec::new(),
            created_at: now,
            updated_at: now,
            last_advance_by: by.to_string(),
            extra: Map::new(),
        });
        Ok(&self.threads[self.threads.len() - 1])
    }

    /// `thread_advance`: append a step. `done` defaults to [`looks_completed`] of the note.
    /// The status is left as it is (advancing an interrupted thread does not resume it).
    pub fn advance(
        &mut self,
        thread_id: &str,
        note: &str,
        done: Option<bool>,
        by: Option<&str>,
        now: f64,
    ) -> Result<&Thread> {
        let (note, by) = checked_advance(note, by)?;
        let done = done.unwrap_or_else(|| looks_completed(note));
        self.add_step(thread_id, note.into(), done, by, now, None)
    }

    fn add_step(
        &mut self,
        thread_id: &str,
        text: Arc<str>,
        done: bool,
        by: &str,
        now: f64,
        status: Option<Status>,
    ) -> Result<&Thread> {
        let i = self
            .position(thread_id)
            .ok_or_else(|| Error::NotFound(thread_id.to_string()))?;
        let step_id = self.fresh_step_id(&self.threads[i]);
        let t = &mut self.threads[i];
        let seq = t.steps.iter().map(|s| s.seq).max().unwrap_or(0) + 1;
        t.steps.push(Step {
            step_id,
            seq,
            text,
            done,
            at: now,
            by: by.into(),
            extra: Map::new(),
        });
        t.updated_at = bump(t.updated_at, now);
        match status {
            Some(s) => t.status = s,
            None => t.last_advance_by = by.to_string(),
        }
        Ok(&self.threads[i])
    }

    /// `thread_interrupt`: mark interrupted and record why as a step `[中断] reason`.
    pub fn interrupt(
        &mut self,
        thread_id: &str,
        reason: Option<&str>,
        now: f64,
    ) -> Result<&Thread> {
        self.get(thread_id)?;
        let reason = optional(reason);
        let text = if reason.is_empty() {
            INTERRUPT_PREFIX.to_string()
        } else {
            format!("{INTERRUPT_PREFIX} {reason}")
        };
        check_len(
            "interrupt step (\"[中断] \" + reason)",
            &text,
            MAX_STEP_CHARS,
        )?;
        self.add_step(
            thread_id,
            text.into(),
            false,
            "",
            now,
            Some(Status::Interrupted),
        )
    }

    /// `thread_archive` / `thread_resume`: set the status. Returns whether anything changed
    /// (setting the status a thread already has is a no-op that keeps `updated_at`).
    pub fn set_status(&mut self, thread_id: &str, status: Status, now: f64) -> Result<bool> {
        let t = self.get_mut(thread_id)?;
        if t.status == status {
            return Ok(false);
        }
        t.status = status;
        t.updated_at = bump(t.updated_at, now);
        Ok(true)
    }

    /// `thread_link`: make `parent_id` the parent of `child_id`. Refuses self-links and links
    /// that would close a cycle. Returns whether anything changed.
    pub fn link(&mut self, child_id: &str, parent_id: &str, now: f64) -> Result<bool> {
        self.get(child_id)?;
        self.get(parent_id)?;
        if child_id == parent_id {
            return Err(Error::InvalidInput(format!(
                "cannot link thread {child_id} to itself"
            )));
        }
        if self.ancestors(parent_id).iter().any(|a| a == child_id) {
            return Err(Error::InvalidInput(format!(
                "linking {child_id} under {parent_id} would make a cycle: {parent_id} already \
                 descends from {child_id}"
            )));
        }
        let t = self.get_mut(child_id)?;
        if t.parent_thread_id.as_deref() == Some(parent_id) {
            return Ok(false);
        }
        t.parent_thread_id = Some(parent_id.to_string());
        t.updated_at = bump(t.updated_at, now);
        Ok(true)
    }

    /// `id`, its parent, its parent's parent, ... Stops at a missing parent or at a cycle
    /// (which merged concurrent links could create; reading must still terminate).
    fn ancestors(&self, id: &str) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut cur = Some(id.to_string());
        while let Some(c) = cur {
            if !seen.insert(c.clone()) {
                break;
            }
            cur = self
                .position(&c)
                .and_then(|i| self.threads[i].parent_thread_id.clone());
            out.push(c);
        }
        out
    }

    /// `thread_status`: one thread by id, or the overview.
    pub fn status(
        &self,
        thread_id: Option<&str>,
        include_archived: bool,
        query: Option<&str>,
    ) -> Result<StatusReport> {
        if let Some(id) = thread_id.map(str::trim).filter(|i| !i.is_empty()) {
            return Ok(StatusReport::One(self.get(id)?.view()));
        }
        let query = query
            .map(|q| q.trim().to_lowercase())
            .filter(|q| !q.is_empty());
        let mut children: HashMap<&str, Vec<&Thread>> = HashMap::new();
        for t in &self.threads {
            if let Some(p) = &t.parent_thread_id {
                children.entry(p.as_str()).or_default().push(t);
            }
        }
        let mut picked: Vec<&Thread> = self
            .threads
            .iter()
            .filter(|t| include_archived || t.status != Status::Archived)
            .filter(|t| match &query {
                None => true,
                Some(q) => {
                    t.title.to_lowercase().contains(q) || t.summary.to_lowercase().contains(q)
                }
            })
            .collect();
        picked.sort_by(|a, b| {
            a.status
                .rank()
                .cmp(&b.status.rank())
                .then_with(|| b.updated_at.total_cmp(&a.updated_at))
                .then_with(|| a.thread_id.cmp(&b.thread_id))
        });
        let entries = picked
            .into_iter()
            .map(|t| {
                let mut kids = children
                    .get(t.thread_id.as_str())
                    .cloned()
                    .unwrap_or_default();
                kids.sort_by(|a, b| {
                    a.created_at
                        .total_cmp(&b.created_at)
                        .then_with(|| a.thread_id.cmp(&b.thread_id))
                });
                ThreadEntry {
                    thread: t.view(),
                    children: kids.into_iter().map(|k| k.thread_id.clone()).collect(),
                }
            })
            .collect();
        Ok(StatusReport::Many(entries))
    }

    /// The view of one thread.
    pub fn view(&self, thread_id: &str) -> Result<ThreadView> {
        Ok(self.get(thread_id)?.view())
    }

    /// Every thread's view, in file order (for equality checks after a reopen).
    pub fn views(&self) -> Vec<ThreadView> {
        self.threads.iter().map(Thread::view).collect()
    }

    /// What to restore if the operation about to change thread `id` must be taken back (its
    /// journal record could not be written): the fields operations change (status, parent,
    /// last advancer, `updated_at`) and the step count. Cheap: title, summary and steps are
    /// not copied, because no operation rewrites them (steps are only appended).
    pub fn undo_point(&self, id: &str) -> Option<Undo> {
        let index = self.position(id)?;
        let t = &self.threads[index];
        Some(Undo::Changed(Box::new(Changed {
            index,
            steps: t.steps.len(),
            status: t.status.clone(),
            parent_thread_id: t.parent_thread_id.clone(),
            last_advance_by: t.last_advance_by.clone(),
            updated_at: t.updated_at,
        })))
    }

    /// Take an operation back: nothing it did remains.
    pub fn undo(&mut self, undo: Undo) {
        match undo {
            Undo::Created => {
                if let Some(t) = self.threads.pop() {
                    self.index.remove(&t.thread_id);
                }
            }
            Undo::Changed(c) => {
                let t = &mut self.threads[c.index];
                t.steps.truncate(c.steps);
                t.status = c.status;
                t.parent_thread_id = c.parent_thread_id;
                t.last_advance_by = c.last_advance_by;
                t.updated_at = c.updated_at;
            }
        }
    }

    /// Total steps over all threads.
    pub fn step_total(&self) -> usize {
        self.threads.iter().map(|t| t.steps.len()).sum()
    }

    /// True when some step id appears twice in the set (used by tests and checks).
    #[cfg(test)]
    pub fn has_duplicate_step_ids(&self) -> bool {
        let mut seen = HashSet::new();
        !self
            .threads
            .iter()
            .flat_map(|t| &t.steps)
            .all(|s| seen.insert(&*s.step_id))
    }

    #[cfg(test)]
    pub fn contains_step(&self, id: &str) -> bool {
        self.threads
            .iter()
            .any(|t| t.steps.iter().any(|s| &*s.step_id == id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_with(titles: &[&str]) -> (ThreadSet, Vec<String>) {
        let mut s = ThreadSet::default();
        let ids = titles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                s.create(t, None, None, Some("a"), 100.0 + i as f64)
                    .unwrap()
                    .thread_id
                    .clone()
            })
            .collect();
        (s, ids)
    }

    fn invalid(r: Result<impl std::fmt::Debug>, needle: &str) {
        match r {
            Err(Error::InvalidInput(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
            other => panic!("expected InvalidInput containing {needle:?}, got {other:?}"),
        }
    }

    fn not_found(r: Result<impl std::fmt::Debug>, id: &str) {
        match r {
            Err(Error::NotFound(i)) => assert_eq!(i, id),
            other => panic!("expected NotFound({id}), got {other:?}"),
        }
    }

    #[test]
    fn create_fills_every_field() {
        let mut s = ThreadSet::default();
        let t = s
            .create(
                "  发布 v2.0 ",
                Some("升级嵌入模型"),
                None,
                Some("聊天A"),
                10.0,
            )
            .unwrap()
            .clone();
        assert_eq!(t.title, "发布 v2.0");
        assert_eq!(t.summary, "升级嵌入模型");
        assert_eq!(t.status, Status::Active);
        assert_eq!(t.parent_thread_id, None);
        assert_eq!((t.created_at, t.updated_at), (10.0, 10.0));
        assert_eq!(t.last_advance_by, "聊天A");
        assert_eq!(t.thread_id.len(), 16);
        assert!(t.steps.is_empty());
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn create_validates() {
        let (mut s, ids) = set_with(&["a"]);
        invalid(s.create("  ", None, None, None, 1.0), "title is empty");
        invalid(
            s.create(&"x".repeat(81), None, None, None, 1.0),
            "81 characters",
        );
        assert!(s.create(&"界".repeat(80), None, None, None, 1.0).is_ok());
        invalid(
            s.create("t", Some(&"s".repeat(2001)), None, None, 1.0),
            "summary",
        );
        invalid(s.create("t", None, None, Some(&"b".repeat(81)), 1.0), "by");
        not_found(s.create("t", None, Some("nope"), None, 1.0), "nope");
        let child = s.create("t", None, Some(&ids[0]), None, 1.0).unwrap();
        assert_eq!(child.parent_thread_id.as_deref(), Some(ids[0].as_str()));
        // An empty parent is no parent (models send "" for "none").
        assert_eq!(
            s.create("t", None, Some(""), None, 1.0)
                .unwrap()
                .parent_thread_id,
            None
        );
        assert_eq!(s.len(), 4);
    }

    #[test]
    fn advance_appends_steps_with_detected_done() {
        let (mut s, ids) = set_with(&["a"]);
        let id = &ids[0];
        s.advance(
            id,
            "migrate_bge.py 已跑通",
            Some(true),
            Some("聊天B"),
            200.0,
        )
        .unwrap();
        s.advance(id, "向量重建完成，检索验证通过", None, Some("聊天C"), 201.0)
            .unwrap();
        let t = s
            .advance(id, "下一步：完成测试", None, None, 202.0)
            .unwrap();
        assert_eq!(t.steps.len(), 3);
        let seqs: Vec<u64> = t.steps.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
        let done: Vec<bool> = t.steps.iter().map(|s| s.done).collect();
        assert_eq!(done, [true, true, false]);
        assert_eq!(&*t.steps[0].by, "聊天B");
        assert_eq!(t.steps[1].at, 201.0);
        assert_eq!(t.last_advance_by, "");
        assert_eq!(t.updated_at, 202.0);
        assert!(t.steps.iter().all(|s| s.step_id.len() == 12));
        assert!(!s.has_duplicate_step_ids());
    }

    #[test]
    fn advance_validates() {
        let (mut s, ids) = set_with(&["a"]);
        invalid(s.advance(&ids[0], " \n", None, None, 1.0), "note is empty");
        invalid(
            s.advance(&ids[0], &"字".repeat(501), None, None, 1.0),
            "501 characters",
        );
        not_found(s.advance("missing", "x", None, None, 1.0), "missing");
        assert!(
            s.advance(&ids[0], &"字".repeat(500), None, None, 1.0)
                .is_ok()
        );
        assert_eq!(s.get(&ids[0]).unwrap().steps.len(), 1);
    }

    #[test]
    fn updated_at_always_moves_forward() {
        let (mut s, ids) = set_with(&["a"]);
        // The clock stands still (or goes back): each change is still newer than the last.
        let a = s
            .advance(&ids[0], "x", None, None, 100.0)
            .unwrap()
            .updated_at;
        let b = s
            .advance(&ids[0], "y", None, None, 50.0)
            .unwrap()
            .updated_at;
        assert!(b > a && a > 100.0 - 1e-9);
    }

    #[test]
    fn interrupt_resume_archive() {
        let (mut s, ids) = set_with(&["a"]);
        let id = &ids[0];
        s.advance(id, "step", None, Some("b"), 200.0).unwrap();
        let t = s.interrupt(id, Some("等上游依赖"), 300.0).unwrap();
        assert_eq!(t.status, Status::Interrupted);
        assert_eq!(&*t.steps[1].text, "[中断] 等上游依赖");
        assert!(!t.steps[1].done);
        assert_eq!(t.last_advance_by, "b", "an interrupt is not an advance");
        assert_eq!(
            &*s.interrupt(id, None, 301.0).unwrap().steps[2].text,
            "[中断]"
        );
        assert!(s.set_status(id, Status::Active, 400.0).unwrap());
        assert!(!s.set_status(id, Status::Active, 500.0).unwrap());
        assert_eq!(s.get(id).unwrap().updated_at, 400.0);
        assert!(s.set_status(id, Status::Archived, 600.0).unwrap());
        assert_eq!(s.get(id).unwrap().status, Status::Archived);
        not_found(s.interrupt("zz", None, 1.0), "zz");
        not_found(s.set_status("zz", Status::Archived, 1.0), "zz");
        invalid(s.interrupt(id, Some(&"r".repeat(496)), 1.0), "limit is 500");
        assert!(s.interrupt(id, Some(&"r".repeat(495)), 1.0).is_ok());
    }

    #[test]
    fn link_refuses_self_links_and_cycles() {
        let (mut s, ids) = set_with(&["a", "b", "c"]);
        let (a, b, c) = (&ids[0], &ids[1], &ids[2]);
        invalid(s.link(a, a, 1.0), "itself");
        assert!(s.link(b, a, 1.0).unwrap());
        assert!(s.link(c, b, 1.0).unwrap());
        assert!(!s.link(c, b, 2.0).unwrap());
        invalid(s.link(a, c, 1.0), "cycle");
        invalid(s.link(a, b, 1.0), "cycle");
        not_found(s.link("x", a, 1.0), "x");
        not_found(s.link(a, "y", 1.0), "y");
        assert_eq!(s.get(a).unwrap().parent_thread_id, None);
        // Re-parenting is fine when it makes no cycle.
        assert!(s.link(c, a, 3.0).unwrap());
    }

    #[test]
    fn ancestors_terminate_on_a_merged_cycle() {
        let (mut s, ids) = set_with(&["a", "b"]);
        s.threads[0].parent_thread_id = Some(ids[1].clone());
        s.threads[1].parent_thread_id = Some(ids[0].clone());
        assert_eq!(s.ancestors(&ids[0]).len(), 2);
        assert!(s.status(None, false, None).is_ok());
    }

    #[test]
    fn status_orders_filters_and_lists_children() {
        let (mut s, ids) = set_with(&["Alpha 发布", "beta", "gamma", "delta", "child"]);
        s.advance(&ids[1], "x", None, None, 500.0).unwrap(); // newest active
        s.interrupt(&ids[2], None, 600.0).unwrap(); // interrupted, newer than all
        s.set_status(&ids[3], Status::Archived, 700.0).unwrap();
        s.link(&ids[4], &ids[0], 50.0).unwrap();
        let order = |r: StatusReport| -> Vec<String> {
            r.views().iter().map(|v| v.title.clone()).collect()
        };
        assert_eq!(
            order(s.status(None, false, None).unwrap()),
            ["beta", "child", "Alpha 发布", "gamma"]
        );
        assert_eq!(
            order(s.status(None, true, None).unwrap()),
            ["beta", "child", "Alpha 发布", "gamma", "delta"]
        );
        assert_eq!(
            order(s.status(None, false, Some("ALPHA")).unwrap()),
            ["Alpha 发布"]
        );
        assert_eq!(
            order(s.status(None, false, Some("发布")).unwrap()),
            ["Alpha 发布"]
        );
        assert!(
            s.status(None, false, Some("nothing"))
                .unwrap()
                .views()
                .is_empty()
        );
        let StatusReport::Many(all) = s.status(None, false, None).unwrap() else {
            panic!("expected the overview");
        };
        let alpha = all.iter().find(|e| e.thread.title == "Alpha 发布").unwrap();
        assert_eq!(alpha.children, [ids[4].clone()]);
        // By id: archived ones too, and unknown ids are errors.
        let one = s.status(Some(&ids[3]), false, None).unwrap();
        assert_eq!(one.views()[0].status, Status::Archived);
        not_found(s.status(Some("nope"), false, None), "nope");
    }

    #[test]
    fn views_count_steps() {
        let (mut s, ids) = set_with(&["a"]);
        s.advance(&ids[0], "one", None, None, 1.0).unwrap();
        s.advance(&ids[0], "two", None, None, 2.0).unwrap();
        let v = s.view(&ids[0]).unwrap();
        assert_eq!(v.step_count, 2);
        assert_eq!(&*v.steps[1].text, "two");
        assert_eq!(s.step_total(), 2);
        assert!(s.contains_step(&v.steps[0].step_id));
    }
}

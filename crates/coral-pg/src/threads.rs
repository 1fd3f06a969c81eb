//! Reasoning threads in the database (docs/postgres.md, "Threads"): create, advance and
//! status, with coral-thread's checks and views. An advance bumps the thread row's step count
//! (`UPDATE … RETURNING`: the row lock orders concurrent advances of one thread, each seeing
//! the last one's count) and inserts the step under that number, in one transaction: steps
//! are numbered 1, 2, 3 … with no gap and no repeat whatever the number of processes.

use std::collections::HashMap;
use std::sync::Arc;

use coral_thread::{
    INTERRUPT_PREFIX, Status, StepView, ThreadEntry, ThreadView, checked_advance, checked_create,
    looks_completed,
};

use crate::error::{Error, Result};
use crate::pool::{Pool, Tx};
use crate::sql;

fn invalid(e: coral_thread::Error) -> Error {
    Error::InvalidInput(e.to_string())
}

fn check_time(now: f64) -> Result<()> {
    match now.is_finite() {
        true => Ok(()),
        false => Err(Error::InvalidInput(format!("the time {now} is not finite"))),
    }
}

/// `thread_create`: a new active thread.
pub(crate) fn create(
    pool: &Pool,
    tenant: &str,
    title: &str,
    summary: Option<&str>,
    parent: Option<&str>,
    by: Option<&str>,
    now: f64,
) -> Result<ThreadView> {
    let (title, summary, by) = checked_create(title, summary, by).map_err(invalid)?;
    check_time(now)?;
    let parent = parent.map(str::trim).filter(|p| !p.is_empty());
    pool.transaction("thread create", |tx| {
        if let Some(p) = parent
            && tx.query_opt(sql::THREAD_EXISTS, &[&tenant, &p])?.is_none()
        {
            return Err(Error::NotFound {
                what: "thread",
                id: coral_base::echo(p),
            });
        }
        // 64 random bits: a clash takes another id.
        let id: String = loop {
            if let Some(row) = tx.query_opt(
                sql::INSERT_THREAD,
                &[&tenant, &title, &summary, &parent, &now, &by],
            )? {
                break row.get(0);
            }
        };
        view(tx, tenant, &id)
    })
}

/// `thread_advance`: append a step; `done` defaults to `looks_completed` of the note.
pub(crate) fn advance(
    pool: &Pool,
    tenant: &str,
    thread_id: &str,
    note: &str,
    done: Option<bool>,
    by: Option<&str>,
    now: f64,
) -> Result<ThreadView> {
    let (note, by) = checked_advance(note, by).map_err(invalid)?;
    check_time(now)?;
    let done = done.unwrap_or_else(|| looks_completed(note));
    pool.transaction("thread advance", |tx| {
        let Some(row) = tx.query_opt(sql::BUMP_THREAD, &[&tenant, &thread_id, &now, &by])? else {
            return Err(not_found(thread_id));
        };
        let seq: i64 = row.get(0);
        tx.execute(
            sql::INSERT_STEP,
            &[&tenant, &thread_id, &seq, &note, &done, &now, &by],
        )?;
        view(tx, tenant, thread_id)
    })
}

/// `thread_interrupt`: status interrupted and a step `[中断] reason`, numbered as advances
/// are.
pub(crate) fn interrupt(
    pool: &Pool,
    tenant: &str,
    thread_id: &str,
    reason: Option<&str>,
    now: f64,
) -> Result<ThreadView> {
    let reason = reason.map(str::trim).unwrap_or_default();
    let text = match reason.is_empty() {
        true => INTERRUPT_PREFIX.to_string(),
        false => format!("{INTERRUPT_PREFIX} {reason}"),
    };
    let (text, _) = checked_advance(&text, None).map_err(invalid)?;
    check_time(now)?;
    pool.transaction("thread interrupt", |tx| {
        let Some(row) = tx.query_opt(sql::INTERRUPT_THREAD, &[&tenant, &thread_id, &now])? else {
            return Err(not_found(thread_id));
        };
        let seq: i64 = row.get(0);
        tx.execute(
            sql::INSERT_STEP,
            &[&tenant, &thread_id, &seq, &text, &false, &now, &""],
        )?;
        view(tx, tenant, thread_id)
    })
}

/// `thread_archive` / `thread_resume`: the status (the same status again changes nothing, not
/// even `updated_at`).
pub(crate) fn set_status(
    pool: &Pool,
    tenant: &str,
    thread_id: &str,
    status: Status,
    now: f64,
) -> Result<ThreadView> {
    check_time(now)?;
    let status = status.as_str().to_string();
    pool.transaction("thread status change", |tx| {
        if tx
            .query_opt(
                sql::SET_THREAD_STATUS,
                &[&tenant, &thread_id, &status, &now],
            )?
            .is_none()
            && tx
                .query_opt(sql::THREAD_EXISTS, &[&tenant, &thread_id])?
                .is_none()
        {
            return Err(not_found(thread_id));
        }
        view(tx, tenant, thread_id)
    })
}

/// `thread_link`: `parent_id` becomes the parent of `child_id`; no self-links, no cycles
/// (links of one tenant are serialised, so two concurrent links cannot close one).
pub(crate) fn link(
    pool: &Pool,
    tenant: &str,
    child_id: &str,
    parent_id: &str,
    now: f64,
) -> Result<()> {
    check_time(now)?;
    pool.transaction("thread link", |tx| {
        tx.query(sql::LOCK_LINKS, &[&tenant])?;
        for id in [child_id, parent_id] {
            if tx.query_opt(sql::THREAD_EXISTS, &[&tenant, &id])?.is_none() {
                return Err(not_found(id));
            }
        }
        if child_id == parent_id {
            return Err(Error::InvalidInput(format!(
                "cannot link thread {child_id} to itself"
            )));
        }
        let ancestors = tx.query(sql::ANCESTORS, &[&tenant, &parent_id])?;
        if ancestors.iter().any(|r| r.get::<_, &str>(0) == child_id) {
            return Err(Error::InvalidInput(format!(
                "linking {child_id} under {parent_id} would make a cycle: {parent_id} already \
                 descends from {child_id}"
            )));
        }
        tx.query_opt(sql::SET_PARENT, &[&tenant, &child_id, &parent_id, &now])?;
        Ok(())
    })
}

/// `thread_status` without an id: every thread (archived ones when asked) whose title or
/// summary contains `query` (case-insensitive), active first, then interrupted, then the rest,
/// archived last, each group newest update first, with its children oldest first: the file
/// store's overview, from one snapshot.
pub(crate) fn overview(
    pool: &Pool,
    tenant: &str,
    include_archived: bool,
    query: Option<&str>,
) -> Result<Vec<ThreadEntry>> {
    let query = query
        .map(|q| q.trim().to_lowercase())
        .filter(|q| !q.is_empty());
    let (threads, steps) = pool.transaction("thread overview", |tx| {
        tx.simple("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
        Ok((
            tx.query(sql::ALL_THREADS, &[&tenant])?,
            tx.query(sql::ALL_STEPS, &[&tenant])?,
        ))
    })?;
    let mut by_thread: HashMap<String, Vec<StepView>> = HashMap::new();
    for s in &steps {
        by_thread
            .entry(s.get::<_, String>(0))
            .or_default()
            .push(StepView {
                step_id: Arc::from(s.get::<_, &str>(1)),
                seq: u64::try_from(s.get::<_, i64>(2)).unwrap_or(0),
                text: Arc::from(s.get::<_, &str>(3)),
                done: s.get(4),
                by: Arc::from(s.get::<_, &str>(5)),
                at: s.get(6),
            });
    }
    let mut all: Vec<ThreadView> = Vec::with_capacity(threads.len());
    for t in &threads {
        let id: String = t.get(0);
        let steps = by_thread.remove(&id).unwrap_or_default();
        let count: i64 = t.get(8);
        if usize::try_from(count).ok() != Some(steps.len()) {
            return Err(Error::Corrupted {
                what: format!("coral_threads {id}"),
                detail: format!("step_count is {count} but {} steps are stored", steps.len()),
            });
        }
        all.push(ThreadView {
            thread_id: id,
            title: t.get(1),
            summary: t.get(2),
            status: Status::parse(t.get(3)),
            parent_thread_id: t.get(4),
            created_at: t.get(5),
            updated_at: t.get(6),
            last_advance_by: t.get(7),
            step_count: steps.len(),
            steps,
        });
    }
    let mut children: HashMap<&str, Vec<&ThreadView>> = HashMap::new();
    for t in &all {
        if let Some(p) = &t.parent_thread_id {
            children.entry(p.as_str()).or_default().push(t);
        }
    }
    let mut picked: Vec<&ThreadView> = all
        .iter()
        .filter(|t| include_archived || t.status != Status::Archived)
        .filter(|t| match &query {
            None => true,
            Some(q) => t.title.to_lowercase().contains(q) || t.summary.to_lowercase().contains(q),
        })
        .collect();
    picked.sort_by(|a, b| {
        a.status
            .rank()
            .cmp(&b.status.rank())
            .then_with(|| b.updated_at.total_cmp(&a.updated_at))
            .then_with(|| a.thread_id.cmp(&b.thread_id))
    });
    Ok(picked
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
                thread: t.clone(),
                children: kids.into_iter().map(|k| k.thread_id.clone()).collect(),
            }
        })
        .collect())
}

/// `thread_status` of one thread.
pub(crate) fn status(pool: &Pool, tenant: &str, thread_id: &str) -> Result<ThreadView> {
    pool.transaction("thread status", |tx| {
        tx.simple("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
        view(tx, tenant, thread_id)
    })
}

/// How many threads the tenant has.
pub(crate) fn count(pool: &Pool, tenant: &str) -> Result<u64> {
    pool.transaction("thread count", |tx| {
        let n: i64 = tx
            .query_opt(sql::COUNT_THREADS, &[&tenant])?
            .map_or(0, |r| r.get(0));
        Ok(u64::try_from(n).unwrap_or(0))
    })
}

fn not_found(id: &str) -> Error {
    Error::NotFound {
        what: "thread",
        id: coral_base::echo(id),
    }
}

/// A thread and its steps as operations return them.
fn view(tx: &mut Tx<'_>, tenant: &str, thread_id: &str) -> Result<ThreadView> {
    let Some(t) = tx.query_opt(sql::THREAD, &[&tenant, &thread_id])? else {
        return Err(not_found(thread_id));
    };
    let steps: Vec<StepView> = tx
        .query(sql::STEPS, &[&tenant, &thread_id])?
        .iter()
        .map(|s| StepView {
            step_id: Arc::from(s.get::<_, &str>(0)),
            seq: u64::try_from(s.get::<_, i64>(1)).unwrap_or(0),
            text: Arc::from(s.get::<_, &str>(2)),
            done: s.get(3),
            by: Arc::from(s.get::<_, &str>(4)),
            at: s.get(5),
        })
        .collect();
    let count: i64 = t.get(8);
    if usize::try_from(count).ok() != Some(steps.len()) {
        return Err(Error::Corrupted {
            what: format!("coral_threads {thread_id}"),
            detail: format!("step_count is {count} but {} steps are stored", steps.len()),
        });
    }
    Ok(ThreadView {
        thread_id: t.get(0),
        title: t.get(1),
        summary: t.get(2),
        status: Status::parse(t.get(3)),
        parent_thread_id: t.get(4),
        created_at: t.get(5),
        updated_at: t.get(6),
        last_advance_by: t.get(7),
        step_count: steps.len(),
        steps,
    })
}

//! The merge that keeps every process's work: union of threads by id, union of steps by
//! `step_id`, scalar fields from the copy with the latest `updated_at`.

use std::collections::HashSet;

use crate::model::{Step, Thread};
use crate::set::ThreadSet;

/// Merge `disk` (what the file holds now) into `local` (this process's threads, perhaps with
/// changes not written yet). Threads only on disk are added; threads only here are kept (they
/// were created here, or the file lost them: either way they are never forgotten).
pub(crate) fn merge(local: &mut ThreadSet, disk: ThreadSet) {
    for t in disk.threads {
        match local.position(&t.thread_id) {
            Some(i) => merge_thread(&mut local.threads[i], t),
            None => local.push(t),
        }
    }
    // Unreadable elements: the file's, then any of ours the file no longer has.
    let mut unparsed = disk.unparsed;
    for v in std::mem::take(&mut local.unparsed) {
        if !unparsed.contains(&v) {
            unparsed.push(v);
        }
    }
    local.unparsed = unparsed;
}

/// Merge two copies of one thread into `local`.
///
/// - Title, summary, status, parent, last advancer and unknown keys come from the copy with the
///   later `updated_at`; on a tie, from `other` (the file), so that processes converge on the
///   file's version instead of each keeping its own.
/// - Steps are the union by `step_id`: the file's steps in the file's order, then the steps
///   only this copy has (the ones it appended and has not written yet), in its order, all
///   renumbered 1..n. The file's step list therefore only ever grows at the end, every step
///   comes after the steps its writer had seen, and one writer's steps keep that writer's
///   order. (Sorting the union by `(seq, at)` and renumbering, the original's stated rule,
///   can put a writer's later step before its earlier one once another process has
///   renumbered the earlier one; for steps appended one after another both orders agree.)
pub(crate) fn merge_thread(local: &mut Thread, other: Thread) {
    let steps = merge_scalars(local, other);
    let mut merged = steps;
    let on_file: HashSet<&str> = merged.iter().map(|s| &*s.step_id).collect();
    let only_here: Vec<Step> = local
        .steps
        .drain(..)
        .filter(|s| !on_file.contains(&*s.step_id))
        .collect();
    merged.extend(only_here);
    local.steps = merged;
    renumber(local);
}

/// Replay one journal record (a thread element holding only the steps its operation
/// appended) into `set`: a thread not in the set is added; otherwise the scalars follow the
/// same latest-`updated_at` rule as [`merge_thread`] and the record's steps that the thread
/// does not have yet (by `step_id`) are appended at the end, in the record's order. The step
/// list therefore still only grows at the end, and replaying a record twice, or over a file
/// that already holds it, changes nothing.
pub(crate) fn absorb(set: &mut ThreadSet, mut record: Thread) {
    match set.position(&record.thread_id) {
        None => {
            renumber(&mut record);
            set.push(record);
        }
        Some(i) => {
            let local = &mut set.threads[i];
            let steps = merge_scalars(local, record);
            let fresh: Vec<Step> = steps
                .into_iter()
                .filter(|s| !local.steps.iter().any(|l| l.step_id == s.step_id))
                .collect();
            if !fresh.is_empty() {
                local.steps.extend(fresh);
                renumber(local);
            }
        }
    }
}

/// Take `other`'s title, summary, status, parent, last advancer and unknown keys when its
/// `updated_at` is not older (a tie goes to `other`), and the earlier known `created_at`.
/// Returns `other`'s steps, for the caller to merge.
fn merge_scalars(local: &mut Thread, other: Thread) -> Vec<Step> {
    let Thread {
        title,
        summary,
        status,
        parent_thread_id,
        steps,
        created_at,
        updated_at,
        last_advance_by,
        extra,
        ..
    } = other;
    if updated_at >= local.updated_at {
        local.title = title;
        local.summary = summary;
        local.status = status;
        local.parent_thread_id = parent_thread_id;
        local.last_advance_by = last_advance_by;
        local.extra = extra;
        local.updated_at = updated_at;
    }
    if created_at > 0.0 && (local.created_at <= 0.0 || created_at < local.created_at) {
        local.created_at = created_at;
    }
    steps
}

fn renumber(t: &mut Thread) {
    for (i, s) in t.steps.iter_mut().enumerate() {
        s.seq = i as u64 + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;

    /// Two processes' copies of one file: both start from `base`, each works on its own, then
    /// one writes and the other merges.
    fn base() -> (ThreadSet, String) {
        let mut s = ThreadSet::default();
        let id = s
            .create("shared", None, None, None, 100.0)
            .unwrap()
            .thread_id
            .clone();
        s.advance(&id, "first", None, Some("a"), 101.0).unwrap();
        (s, id)
    }

    #[test]
    fn concurrent_advances_are_all_kept_after_the_files_steps() {
        let (base, id) = base();
        let (mut x, mut y) = (base.clone(), base);
        x.advance(&id, "x1", None, Some("x"), 110.0).unwrap();
        x.advance(&id, "x2", None, Some("x"), 112.0).unwrap();
        y.advance(&id, "y1", None, Some("y"), 111.0).unwrap();
        // y writes; x merges the file before writing.
        merge(&mut x, y.clone());
        let t = x.get(&id).unwrap();
        let texts: Vec<&str> = t.steps.iter().map(|s| &*s.text).collect();
        // The file's steps, then x's unwritten ones in x's order, renumbered.
        assert_eq!(texts, ["first", "y1", "x1", "x2"]);
        let seqs: Vec<u64> = t.steps.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        assert!(!x.has_duplicate_step_ids());
        // y merges x's result: the same four steps in the same order.
        merge(&mut y, x.clone());
        assert_eq!(y.get(&id).unwrap().steps, x.get(&id).unwrap().steps);
        // Merging again changes nothing.
        let before = y.clone();
        merge(&mut y, x.clone());
        assert_eq!(y, before);
    }

    #[test]
    fn threads_created_elsewhere_are_kept() {
        let (base, _) = base();
        let (mut x, mut y) = (base.clone(), base);
        let a = x
            .create("from x", None, None, None, 120.0)
            .unwrap()
            .thread_id
            .clone();
        let b = y
            .create("from y", None, None, None, 121.0)
            .unwrap()
            .thread_id
            .clone();
        merge(&mut x, y.clone());
        assert_eq!(x.len(), 3);
        assert!(x.get(&a).is_ok() && x.get(&b).is_ok());
    }

    #[test]
    fn scalars_follow_the_latest_update() {
        let (base, id) = base();
        let (mut x, mut y) = (base.clone(), base);
        x.interrupt(&id, Some("wait"), 130.0).unwrap();
        y.advance(&id, "later", None, Some("y"), 140.0).unwrap();
        merge(&mut x, y.clone());
        let t = x.get(&id).unwrap();
        assert_eq!(t.status, Status::Active, "y's copy is newer (140 > 130)");
        assert_eq!(t.last_advance_by, "y");
        assert_eq!(t.updated_at, 140.0);
        assert_eq!(
            t.steps.len(),
            3,
            "both new steps survive: first, interrupt, later"
        );
        // The other way round: the newer local change stays.
        let (base, id) = self::base();
        let (mut x, mut y) = (base.clone(), base);
        x.set_status(&id, Status::Archived, 150.0).unwrap();
        y.advance(&id, "older", None, None, 145.0).unwrap();
        merge(&mut x, y);
        let t = x.get(&id).unwrap();
        assert_eq!(t.status, Status::Archived);
        assert_eq!(t.steps.len(), 2);
    }

    #[test]
    fn each_writer_keeps_its_order_and_the_file_only_grows_at_the_end() {
        let (base, id) = base();
        let (mut x, mut y) = (base.clone(), base);
        x.advance(&id, "x1", None, None, 111.0).unwrap(); // x writes: first, x1
        y.advance(&id, "y1", None, None, 105.0).unwrap(); // y, earlier clock, unwritten
        y.advance(&id, "y2", None, None, 106.0).unwrap();
        merge(&mut y, x.clone()); // y writes: first, x1, y1, y2
        x.advance(&id, "x2", None, None, 112.0).unwrap(); // before x sees y's write
        let file = y.clone();
        merge(&mut x, file.clone());
        let t = x.get(&id).unwrap();
        let texts: Vec<&str> = t.steps.iter().map(|s| &*s.text).collect();
        assert_eq!(texts, ["first", "x1", "y1", "y2", "x2"]);
        let seqs: Vec<u64> = t.steps.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
        // The file's steps are a prefix of the result, unchanged.
        let before = &file.get(&id).unwrap().steps;
        assert_eq!(&t.steps[..before.len()], &before[..]);
    }

    proptest::proptest! {
        /// Three processes append to one thread and sync with the file in any interleaving
        /// (a sync is what a write does: merge the file, then replace it). Afterwards the file
        /// holds every step once, numbered 1..n, each writer's steps in its order, and every
        /// process that reads it again holds the same steps.
        #[test]
        fn any_interleaving_keeps_every_step_in_writer_order(
            ops in proptest::collection::vec((0..3usize, proptest::bool::ANY), 1..80)
        ) {
            let (base, id) = base();
            let mut file = base.clone();
            let mut replicas = [base.clone(), base.clone(), base];
            let mut made = [0usize; 3];
            let mut now = 200.0;
            for (r, advance) in ops {
                now += 1.0;
                if advance {
                    let text = format!("w{r} {}", made[r]);
                    replicas[r].advance(&id, &text, None, None, now).unwrap();
                    made[r] += 1;
                } else {
                    merge(&mut replicas[r], file.clone());
                    file = replicas[r].clone();
                }
            }
            for r in replicas.iter_mut() {
                merge(r, file.clone());
                file = r.clone();
            }
            let steps = &file.get(&id).unwrap().steps;
            proptest::prop_assert_eq!(steps.len(), 1 + made.iter().sum::<usize>());
            proptest::prop_assert!(!file.has_duplicate_step_ids());
            let seqs: Vec<u64> = steps.iter().map(|s| s.seq).collect();
            proptest::prop_assert_eq!(seqs, (1..=steps.len() as u64).collect::<Vec<_>>());
            for (w, &n) in made.iter().enumerate() {
                let mine: Vec<usize> = steps
                    .iter()
                    .filter_map(|s| s.text.strip_prefix(&format!("w{w} ")))
                    .map(|k| k.parse().unwrap())
                    .collect();
                proptest::prop_assert_eq!(mine, (0..n).collect::<Vec<_>>());
            }
            for r in replicas.iter_mut() {
                merge(r, file.clone());
                proptest::prop_assert_eq!(&r.get(&id).unwrap().steps, steps);
            }
        }
    }
}

//! Targeted forgetting (docs/timeline.md, "Forgetting"): an entry, a turn, a summary or
//! semantic memory, or every entry of a conversation matching a time range, kinds or an actor,
//! removed from the file itself, with what was made from it marked (or forgotten too), and a
//! content-free record of what was done.
//!
//! An entry inside a turn becomes a tombstone (its body, payload, sizes and hash replaced), so
//! the turn stays whole for providers (a call keeps its result); a standalone entry, a whole
//! turn, or a turn whose every entry matches is removed. The transaction commits first; then
//! the log is checkpointed and truncated so that the old pages leave the disk too
//! (`purge.rs`).

use rusqlite::{OptionalExtension, Transaction, params};
use serde::Serialize;
use serde_json::{Value, json};

use crate::entry::TurnRole;
use crate::error::{Error, Result, invalid};
use crate::namespace::{Namespace, check_id, check_name};
use crate::retrieve_filter::kind_matches;
use crate::settle::{estimate_tokens, sha256_hex};
use crate::timeline::Timeline;
use crate::tz;

/// What a forgotten message, result or event shows from then on.
pub const FORGOTTEN_TEXT: &str = "[forgotten 已遗忘]";
/// What a forgotten call's arguments show (still a JSON object, as providers expect).
pub const FORGOTTEN_CALL: &str = "{\"forgotten\":true}";

/// What to forget.
#[derive(Clone, Debug, PartialEq)]
pub enum ForgetTarget {
    /// One entry by source id.
    Entry(String),
    /// One closed turn, whole.
    Turn(String),
    /// One episodic summary or semantic memory (with its older versions).
    Summary(String),
    /// Every entry of the conversation that matches.
    Matching(ForgetFilter),
}

/// Which entries of a conversation [`ForgetTarget::Matching`] forgets: those inside the time
/// range, of one of the kinds and said by the actor (each only when given). At least one
/// must be given, or `whole_conversation`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForgetFilter {
    /// Inclusive start: RFC 3339, or a local time in the request's zone.
    pub start_at: Option<String>,
    /// Exclusive end, likewise.
    pub end_at: Option<String>,
    /// Kinds, exact or a prefix ending in `*` (`tool.*`).
    pub kinds: Vec<String>,
    /// The soft actor tag.
    pub actor: Option<String>,
    /// Every entry of the conversation (nothing else given).
    pub whole_conversation: bool,
}

/// A forgetting.
#[derive(Clone, Debug, PartialEq)]
pub struct ForgetRequest {
    /// What.
    pub target: ForgetTarget,
    /// Also forget the summaries made from it (default: they are marked stale and no longer
    /// shown or found, but `open_memory` still opens them).
    pub cascade: bool,
    /// Look for an id in every conversation of the hard key (ids are unique there); with a
    /// filter, apply it to every conversation of the hard key (`whole_conversation` then
    /// forgets everything of the user).
    pub cross_conversation: bool,
    /// A content-free label for the record (`privacy_request`): 1–128 of `A-Z a-z 0-9 . _ : -`.
    pub reason: Option<String>,
    /// IANA zone of local times in the filter (default `UTC`).
    pub timezone: Option<String>,
}

impl ForgetRequest {
    /// Forget `target`, marking derived summaries.
    pub fn new(target: ForgetTarget) -> ForgetRequest {
        ForgetRequest {
            target,
            cascade: false,
            cross_conversation: false,
            reason: None,
            timezone: None,
        }
    }
}

/// What a forgetting did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ForgetReport {
    /// Its record (`Timeline::forgotten`).
    pub forget_id: i64,
    /// Entries whose bodies were replaced by a tombstone (their turn keeps them).
    pub entries_forgotten: usize,
    /// Entries removed with their unit.
    pub entries_removed: usize,
    /// Units (turns and standalone entries) removed whole.
    pub units_removed: usize,
    /// Reload cards removed (each described a forgotten body).
    pub cards_removed: usize,
    /// Summaries and semantic memories removed.
    pub summaries_forgotten: Vec<String>,
    /// Summaries made from what was forgotten, marked stale (with `cascade`, they are in
    /// `summaries_forgotten` instead).
    pub summaries_stale: Vec<String>,
    /// Whether the removed text is gone from the database file and its log now; when not,
    /// `physical` says why and when it will be.
    pub physically_removed: bool,
    /// What happened on disk, in words.
    pub physical: String,
    /// The file was rebuilt (`VACUUM`), once, because it was written before freed space was
    /// overwritten.
    pub rebuilt: bool,
    /// Copies beside the file that may still hold the text (quarantined damaged logs); delete
    /// them once looked at. Backups made earlier are copies too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub residual_copies: Vec<std::path::PathBuf>,
}

/// One record of a forgetting: what was asked and how much went, never any text.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForgetRecord {
    /// Its id.
    pub forget_id: i64,
    /// The conversation of a filter (none: ids, which may be in any conversation of the hard
    /// key, or a filter over all of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// When, Unix seconds.
    pub at: f64,
    /// `entry`, `turn`, `summary` or `matching`.
    pub target: String,
    /// The ids, range, kinds or actor asked for, and whether derived summaries went too.
    pub selector: Value,
    /// The label given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Entries forgotten or removed.
    pub entries: i64,
    /// Units removed.
    pub units: i64,
    /// Summaries removed.
    pub summaries: i64,
    /// Summaries marked stale.
    pub marked: i64,
}

/// An entry as forgetting sees it (`source_id, conversation_id, unit_seq, turn_id, turn_role,
/// kind, actor, ts`): no body.
struct Slot {
    source_id: String,
    conversation_id: String,
    unit_seq: i64,
    turn_id: Option<String>,
    turn_role: TurnRole,
    kind: String,
    actor: Option<String>,
    ts: f64,
}

fn slot(r: &rusqlite::Row<'_>) -> rusqlite::Result<Slot> {
    let stored: String = r.get(4)?;
    Ok(Slot {
        source_id: r.get(0)?,
        conversation_id: r.get(1)?,
        unit_seq: r.get(2)?,
        turn_id: r.get(3)?,
        turn_role: TurnRole::parse(&stored).unwrap_or(TurnRole::None),
        kind: r.get(5)?,
        actor: r.get(6)?,
        ts: r.get(7)?,
    })
}

/// What one forgetting touches, resolved before anything changes.
#[derive(Default)]
struct Plan {
    /// Entries to keep as tombstones.
    tombstones: Vec<Slot>,
    /// Units to remove: (conversation, unit_seq).
    units: Vec<(String, i64)>,
    /// Summaries asked for.
    summaries: Vec<String>,
}

impl Timeline {
    /// Forget `req.target` in `ns` (the hard key; the conversation for a filter, and for ids
    /// unless `cross_conversation`). The text is removed in one transaction; then the log is
    /// checkpointed so it leaves the disk, which [`ForgetReport::physically_removed`] reports.
    /// An id that is not there is [`Error::NotFound`]; an open turn cannot be forgotten whole
    /// ([`Error::Conflict`]: abort or complete it first); nothing is changed then.
    pub fn forget(&self, ns: &Namespace, req: &ForgetRequest, now: f64) -> Result<ForgetReport> {
        ns.validate()?;
        if let Some(reason) = &req.reason {
            check_id("reason", reason)?;
        }
        let zone = tz::parse_zone(req.timezone.as_deref().unwrap_or("UTC"))
            .map_err(Error::InvalidInput)?;
        let window = match &req.target {
            ForgetTarget::Matching(f) => Some(check_filter(f, zone)?),
            _ => None,
        };
        let hk = ns.hard_key();
        let scope = (!req.cross_conversation).then_some(ns.conversation_id.as_str());
        let mut report = self.write(|tx| {
            let plan = match &req.target {
                ForgetTarget::Entry(id) => plan_entry(tx, &hk, id, scope)?,
                ForgetTarget::Turn(id) => plan_turn(tx, &hk, id, scope)?,
                ForgetTarget::Summary(id) => plan_summary(tx, &hk, id, scope)?,
                ForgetTarget::Matching(f) => {
                    let (start, end) = window.unwrap_or((f64::MIN, f64::MAX));
                    // Every conversation of the user (a whole-user erasure), or this one.
                    let conversations: Vec<String> = match scope {
                        Some(c) => vec![c.to_string()],
                        None => tx
                            .prepare_cached(
                                "SELECT DISTINCT conversation_id FROM entries \
                                 WHERE hard_key = ?1 ORDER BY conversation_id",
                            )?
                            .query_map(params![hk], |r| r.get(0))?
                            .collect::<rusqlite::Result<_>>()?,
                    };
                    let mut plan = Plan::default();
                    for c in &conversations {
                        let p = plan_matching(tx, &hk, c, f, start, end)?;
                        plan.tombstones.extend(p.tombstones);
                        plan.units.extend(p.units);
                    }
                    plan
                }
            };
            let (target, selector) = describe(req, window);
            tx.prepare_cached(
                "INSERT INTO forgotten (hard_key, conversation_id, at, target, selector, reason, \
                 entries, units, summaries, marked) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, 0, 0, 0)",
            )?
            .execute(params![
                hk,
                (matches!(req.target, ForgetTarget::Matching(_)) && scope.is_some())
                    .then_some(&ns.conversation_id),
                now,
                target,
                selector.to_string(),
                req.reason
            ])?;
            let forget_pk = tx.last_insert_rowid();
            let mut report = ForgetReport {
                forget_id: forget_pk,
                ..ForgetReport::default()
            };
            apply(tx, &hk, &plan, req.cascade, forget_pk, now, &mut report)?;
            tx.prepare_cached(
                "UPDATE forgotten SET entries = ?3, units = ?4, summaries = ?5, marked = ?6 \
                 WHERE hard_key = ?1 AND forget_pk = ?2",
            )?
            .execute(params![
                hk,
                forget_pk,
                (report.entries_forgotten + report.entries_removed) as i64,
                report.units_removed as i64,
                report.summaries_forgotten.len() as i64,
                report.summaries_stale.len() as i64
            ])?;
            Ok(report)
        })?;
        let (gone, physical, rebuilt) = self.purge();
        report.physically_removed = gone;
        report.physical = physical;
        report.rebuilt = rebuilt;
        report.residual_copies = self.quarantined_copies();
        Ok(report)
    }

    /// The records of forgetting in `ns`'s hard key, oldest first: what was asked and how much
    /// went, never any of the text.
    pub fn forgotten(&self, ns: &Namespace) -> Result<Vec<ForgetRecord>> {
        ns.validate()?;
        let hk = ns.hard_key();
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT forget_pk, conversation_id, at, target, selector, reason, entries, \
                     units, summaries, marked FROM forgotten WHERE hard_key = ?1 \
                     ORDER BY forget_pk",
                )?
                .query_map(params![hk], |r| {
                    let selector: String = r.get(4)?;
                    Ok(ForgetRecord {
                        forget_id: r.get(0)?,
                        conversation_id: r.get(1)?,
                        at: r.get(2)?,
                        target: r.get(3)?,
                        selector: serde_json::from_str(&selector).unwrap_or(Value::Null),
                        reason: r.get(5)?,
                        entries: r.get(6)?,
                        units: r.get(7)?,
                        summaries: r.get(8)?,
                        marked: r.get(9)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?)
        })
    }
}

/// The filter's window, checked; `(MIN, MAX)` ends when open.
fn check_filter(f: &ForgetFilter, zone: chrono_tz::Tz) -> Result<(f64, f64)> {
    let given =
        f.start_at.is_some() || f.end_at.is_some() || !f.kinds.is_empty() || f.actor.is_some();
    if !given && !f.whole_conversation {
        return invalid(
            "give a time range (start_at / end_at), kinds or an actor to forget, or \
             whole_conversation to forget the whole conversation; nothing was forgotten",
        );
    }
    if given && f.whole_conversation {
        return invalid(
            "whole_conversation forgets everything: give it alone, or give only the range, \
             kinds or actor; nothing was forgotten",
        );
    }
    for p in &f.kinds {
        let bare = p.strip_suffix('*').unwrap_or(p);
        if p.is_empty() || bare.contains('*') {
            return invalid(format!(
                "kind pattern {p:?}: give a kind, or a prefix ending in * (tool.*)"
            ));
        }
    }
    if let Some(a) = &f.actor {
        check_name("actor", a)?;
    }
    let at = |t: &Option<String>, open: f64| -> Result<f64> {
        match t {
            None => Ok(open),
            Some(t) => tz::parse_instant(t, zone).map_err(Error::InvalidInput),
        }
    };
    let (start, end) = (at(&f.start_at, f64::MIN)?, at(&f.end_at, f64::MAX)?);
    if end <= start {
        return invalid("end_at must be after start_at; nothing was forgotten");
    }
    Ok((start, end))
}

/// The record's target and selector: ids, range, kinds, actor; never text.
fn describe(req: &ForgetRequest, window: Option<(f64, f64)>) -> (&'static str, Value) {
    let (target, mut selector) = match &req.target {
        ForgetTarget::Entry(id) => ("entry", json!({"source_id": id})),
        ForgetTarget::Turn(id) => ("turn", json!({"turn_id": id})),
        ForgetTarget::Summary(id) => ("summary", json!({"memory_id": id})),
        ForgetTarget::Matching(f) => {
            let (start, end) = window.unwrap_or((f64::MIN, f64::MAX));
            let mut s = json!({"whole_conversation": f.whole_conversation});
            if start > f64::MIN {
                s["start_ts"] = json!(start);
            }
            if end < f64::MAX {
                s["end_ts"] = json!(end);
            }
            if !f.kinds.is_empty() {
                s["kinds"] = json!(f.kinds);
            }
            if let Some(a) = &f.actor {
                s["actor"] = json!(a);
            }
            ("matching", s)
        }
    };
    selector["cascade"] = json!(req.cascade);
    (target, selector)
}

fn plan_entry(tx: &Transaction<'_>, hk: &str, id: &str, scope: Option<&str>) -> Result<Plan> {
    check_id("source_id", id)?;
    let found = tx
        .prepare_cached(
            "SELECT source_id, conversation_id, unit_seq, turn_id, turn_role, kind, actor, ts \
             FROM entries WHERE hard_key = ?1 AND source_id = ?2 \
             AND (?3 IS NULL OR conversation_id = ?3)",
        )?
        .query_row(params![hk, id, scope], slot)
        .optional()?;
    let Some(entry) = found else {
        return Err(not_found("entry", id, scope));
    };
    let mut plan = Plan::default();
    match entry.turn_id {
        // A standalone entry is its own unit.
        None => plan.units.push((entry.conversation_id, entry.unit_seq)),
        Some(_) => plan.tombstones.push(entry),
    }
    Ok(plan)
}

fn plan_turn(tx: &Transaction<'_>, hk: &str, id: &str, scope: Option<&str>) -> Result<Plan> {
    check_id("turn_id", id)?;
    let found: Option<(String, i64, String)> = tx
        .prepare_cached(
            "SELECT conversation_id, unit_seq, status FROM turns WHERE hard_key = ?1 \
             AND turn_id = ?2 AND (?3 IS NULL OR conversation_id = ?3)",
        )?
        .query_row(params![hk, id, scope], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((conversation, unit_seq, status)) = found else {
        return Err(Error::UnknownTurn(id.to_string()));
    };
    if status == "open" {
        return Err(Error::Conflict(format!(
            "turn {id:?} is open: abort or complete it first, then forget it (or forget its \
             entries one by one); nothing was forgotten"
        )));
    }
    Ok(Plan {
        units: vec![(conversation, unit_seq)],
        ..Plan::default()
    })
}

fn plan_summary(tx: &Transaction<'_>, hk: &str, id: &str, scope: Option<&str>) -> Result<Plan> {
    check_id("memory_id", id)?;
    let found: Option<String> = tx
        .prepare_cached(
            "SELECT summary_id FROM summaries WHERE hard_key = ?1 AND summary_id = ?2 \
             AND (?3 IS NULL OR conversation_id = ?3)",
        )?
        .query_row(params![hk, id, scope], |r| r.get(0))
        .optional()?;
    let Some(id) = found else {
        return Err(not_found("summary", id, scope));
    };
    // Its older versions (memories it reinforced) say the same thing: they go too.
    let mut summaries = vec![id];
    let mut i = 0;
    while i < summaries.len() {
        let older: Vec<String> = tx
            .prepare_cached(
                "SELECT summary_id FROM summaries WHERE hard_key = ?1 AND superseded_by = ?2",
            )?
            .query_map(params![hk, summaries[i]], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for o in older {
            if !summaries.contains(&o) {
                summaries.push(o);
            }
        }
        i += 1;
    }
    Ok(Plan {
        summaries,
        ..Plan::default()
    })
}

fn plan_matching(
    tx: &Transaction<'_>,
    hk: &str,
    conversation: &str,
    f: &ForgetFilter,
    start: f64,
    end: f64,
) -> Result<Plan> {
    let entries: Vec<Slot> = tx
        .prepare_cached(
            "SELECT source_id, conversation_id, unit_seq, turn_id, turn_role, kind, actor, ts \
             FROM entries WHERE hard_key = ?1 AND conversation_id = ?2 ORDER BY unit_seq, seq_no",
        )?
        .query_map(params![hk, conversation], slot)?
        .collect::<rusqlite::Result<_>>()?;
    let open: Vec<i64> = tx
        .prepare_cached(
            "SELECT unit_seq FROM turns WHERE hard_key = ?1 AND conversation_id = ?2 \
             AND status = 'open'",
        )?
        .query_map(params![hk, conversation], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let matches = |e: &Slot| {
        e.ts >= start
            && e.ts < end
            && (f.kinds.is_empty() || kind_matches(&f.kinds, &e.kind))
            && f.actor.as_ref().is_none_or(|a| e.actor.as_ref() == Some(a))
    };
    let mut plan = Plan::default();
    let mut rest = entries.as_slice();
    while let Some(first) = rest.first() {
        let n = rest
            .iter()
            .position(|e| e.unit_seq != first.unit_seq)
            .unwrap_or(rest.len());
        let (unit, after) = rest.split_at(n);
        rest = after;
        let hit: Vec<&Slot> = unit.iter().filter(|e| matches(e)).collect();
        if hit.is_empty() {
            continue;
        }
        // A unit matched whole goes whole; an open turn keeps its shape for the host.
        if hit.len() == unit.len() && !open.contains(&first.unit_seq) {
            plan.units
                .push((first.conversation_id.clone(), first.unit_seq));
        } else {
            for e in unit.iter().filter(|e| matches(e)) {
                plan.tombstones.push(Slot {
                    source_id: e.source_id.clone(),
                    conversation_id: e.conversation_id.clone(),
                    unit_seq: e.unit_seq,
                    turn_id: e.turn_id.clone(),
                    turn_role: e.turn_role,
                    kind: e.kind.clone(),
                    actor: e.actor.clone(),
                    ts: e.ts,
                });
            }
        }
    }
    Ok(plan)
}

fn not_found(what: &str, id: &str, scope: Option<&str>) -> Error {
    Error::NotFound(format!(
        "no {what} {id:?} in {}; nothing was forgotten",
        if scope.is_some() {
            "this conversation (cross_conversation widens to every conversation of the user)"
        } else {
            "this namespace"
        }
    ))
}

/// Carry out `plan` in `tx`, recording what it did in `report`.
fn apply(
    tx: &Transaction<'_>,
    hk: &str,
    plan: &Plan,
    cascade: bool,
    forget_pk: i64,
    now: f64,
    report: &mut ForgetReport,
) -> Result<()> {
    // What was made from it: episodic summaries of its units, then everything made from
    // those (semantic memories, and the newer versions that reinforced them).
    let mut derived: Vec<String> = Vec::new();
    let touched = plan.units.iter().cloned().chain(
        plan.tombstones
            .iter()
            .map(|t| (t.conversation_id.clone(), t.unit_seq)),
    );
    for (conversation, unit_seq) in touched {
        let ids: Vec<String> = tx
            .prepare_cached(
                "SELECT DISTINCT ss.summary_id FROM summary_sources ss JOIN summaries s \
                 ON s.hard_key = ss.hard_key AND s.summary_id = ss.summary_id \
                 WHERE ss.hard_key = ?1 AND s.conversation_id = ?2 AND ss.unit_seq = ?3",
            )?
            .query_map(params![hk, conversation, unit_seq], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for id in ids {
            if !derived.contains(&id) {
                derived.push(id);
            }
        }
    }
    let mut frontier: Vec<String> = derived.iter().chain(&plan.summaries).cloned().collect();
    while let Some(id) = frontier.pop() {
        let mut next: Vec<String> = tx
            .prepare_cached(
                "SELECT DISTINCT summary_id FROM summary_sources WHERE hard_key = ?1 \
                 AND source_summary_id = ?2",
            )?
            .query_map(params![hk, id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let newer: Option<String> = tx
            .prepare_cached(
                "SELECT superseded_by FROM summaries WHERE hard_key = ?1 AND summary_id = ?2",
            )?
            .query_row(params![hk, id], |r| r.get(0))
            .optional()?
            .flatten();
        next.extend(newer);
        for n in next {
            if !derived.contains(&n) && !plan.summaries.contains(&n) {
                derived.push(n.clone());
                frontier.push(n);
            }
        }
    }

    for t in &plan.tombstones {
        tombstone(tx, hk, t, forget_pk, report)?;
    }
    let mut turns: Vec<String> = plan
        .tombstones
        .iter()
        .filter_map(|t| t.turn_id.clone())
        .collect();
    turns.sort();
    turns.dedup();
    for turn in &turns {
        recount(tx, hk, turn)?;
    }
    for (conversation, unit_seq) in &plan.units {
        remove_unit(tx, hk, conversation, *unit_seq, report)?;
    }
    let (gone, marked): (Vec<String>, Vec<String>) = if cascade {
        (
            plan.summaries.iter().chain(&derived).cloned().collect(),
            Vec::new(),
        )
    } else {
        (plan.summaries.clone(), derived)
    };
    for id in &gone {
        remove_summary(tx, hk, id)?;
    }
    for id in &marked {
        tx.prepare_cached(
            "UPDATE summaries SET stale_at = ?3 WHERE hard_key = ?1 AND summary_id = ?2 \
             AND stale_at IS NULL",
        )?
        .execute(params![hk, id, now])?;
    }
    report.summaries_forgotten = gone;
    report.summaries_stale = marked;
    Ok(())
}

/// Replace one entry's body by a tombstone; its reload card (which names the body's size and
/// hash) goes, and so does its vector.
fn tombstone(
    tx: &Transaction<'_>,
    hk: &str,
    t: &Slot,
    forget_pk: i64,
    report: &mut ForgetReport,
) -> Result<()> {
    let text = if t.turn_role == TurnRole::Action {
        FORGOTTEN_CALL
    } else {
        FORGOTTEN_TEXT
    };
    let tokens = estimate_tokens(text) as i64;
    tx.prepare_cached(
        "UPDATE entries SET text = ?3, payload = NULL, chars = ?4, bytes = ?5, tokens = ?6, \
         sha256 = ?7 WHERE hard_key = ?1 AND source_id = ?2",
    )?
    .execute(params![
        hk,
        t.source_id,
        text,
        text.chars().count() as i64,
        text.len() as i64,
        tokens,
        sha256_hex(text)
    ])?;
    let had_card: bool = tx
        .prepare_cached(
            "SELECT card IS NOT NULL FROM settlements WHERE hard_key = ?1 AND source_id = ?2",
        )?
        .query_row(params![hk, t.source_id], |r| r.get(0))
        .optional()?
        .unwrap_or(false);
    tx.prepare_cached(
        "UPDATE settlements SET classification = 'inline_full', card = NULL, card_tokens = ?3 \
         WHERE hard_key = ?1 AND source_id = ?2",
    )?
    .execute(params![hk, t.source_id, tokens])?;
    tx.prepare_cached(
        "INSERT OR REPLACE INTO forgotten_entries (hard_key, source_id, forget_pk) \
         VALUES (?1, ?2, ?3)",
    )?
    .execute(params![hk, t.source_id, forget_pk])?;
    tx.prepare_cached("DELETE FROM vectors WHERE hard_key = ?1 AND item_id = ?2")?
        .execute(params![hk, t.source_id])?;
    report.entries_forgotten += 1;
    report.cards_removed += usize::from(had_card);
    Ok(())
}

/// A closed turn's token totals again, after some of its results became tombstones.
fn recount(tx: &Transaction<'_>, hk: &str, turn_id: &str) -> Result<()> {
    tx.prepare_cached(
        "UPDATE turns SET full_tokens = (SELECT COALESCE(sum(e.tokens), 0) FROM entries e \
         WHERE e.hard_key = ?1 AND e.turn_id = ?2 AND e.turn_role = 'observation'), \
         settled_tokens = (SELECT COALESCE(sum(COALESCE(s.card_tokens, e.tokens)), 0) \
         FROM entries e LEFT JOIN settlements s ON s.hard_key = e.hard_key \
         AND s.source_id = e.source_id WHERE e.hard_key = ?1 AND e.turn_id = ?2 \
         AND e.turn_role = 'observation') \
         WHERE hard_key = ?1 AND turn_id = ?2 AND full_tokens IS NOT NULL",
    )?
    .execute(params![hk, turn_id])?;
    Ok(())
}

/// Remove a unit's entries, with their cards, vectors and tombstone marks; a turn's row stays
/// (ids and times only, its abort reason cleared) so its id is never reused.
fn remove_unit(
    tx: &Transaction<'_>,
    hk: &str,
    conversation: &str,
    unit_seq: i64,
    report: &mut ForgetReport,
) -> Result<()> {
    let ids: Vec<(String, Option<String>)> = tx
        .prepare_cached(
            "SELECT source_id, turn_id FROM entries WHERE hard_key = ?1 AND conversation_id = ?2 \
             AND unit_seq = ?3",
        )?
        .query_map(params![hk, conversation, unit_seq], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (id, _) in &ids {
        let cards = tx
            .prepare_cached(
                "DELETE FROM settlements WHERE hard_key = ?1 AND source_id = ?2 \
                 AND card IS NOT NULL",
            )?
            .execute(params![hk, id])?;
        report.cards_removed += cards;
        tx.prepare_cached("DELETE FROM settlements WHERE hard_key = ?1 AND source_id = ?2")?
            .execute(params![hk, id])?;
        tx.prepare_cached("DELETE FROM vectors WHERE hard_key = ?1 AND item_id = ?2")?
            .execute(params![hk, id])?;
        tx.prepare_cached("DELETE FROM forgotten_entries WHERE hard_key = ?1 AND source_id = ?2")?
            .execute(params![hk, id])?;
    }
    let removed = tx
        .prepare_cached(
            "DELETE FROM entries WHERE hard_key = ?1 AND conversation_id = ?2 AND unit_seq = ?3",
        )?
        .execute(params![hk, conversation, unit_seq])?;
    if let Some(turn) = ids.iter().find_map(|(_, t)| t.as_ref()) {
        tx.prepare_cached(
            "UPDATE turns SET end_reason = NULL WHERE hard_key = ?1 AND turn_id = ?2",
        )?
        .execute(params![hk, turn])?;
    }
    report.entries_removed += removed;
    report.units_removed += usize::from(removed > 0);
    Ok(())
}

/// Remove one summary, its lineage rows and its vector.
fn remove_summary(tx: &Transaction<'_>, hk: &str, id: &str) -> Result<()> {
    tx.prepare_cached("DELETE FROM summaries WHERE hard_key = ?1 AND summary_id = ?2")?
        .execute(params![hk, id])?;
    tx.prepare_cached(
        "DELETE FROM summary_sources WHERE hard_key = ?1 AND (summary_id = ?2 \
         OR source_summary_id = ?2)",
    )?
    .execute(params![hk, id])?;
    tx.prepare_cached("DELETE FROM vectors WHERE hard_key = ?1 AND item_id = ?2")?
        .execute(params![hk, id])?;
    Ok(())
}

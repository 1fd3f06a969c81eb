//! The 200-turn translation assistant: the original's materialised conversation replayed with
//! recall on every turn, profile analyses under a cool-down, capacity governance, survival of
//! the important memories and a reopen (definitions in the parent module's documentation).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use coral::{InsertOptions, SearchOptions};
use serde_json::{Value, json};

use super::{T0, config_in, open, strings};

/// Items kept by governance.
const CAPACITY: usize = 50;
/// Seconds between turns.
const SPACING_S: f64 = 60.0;
/// Hits recalled as context on every turn.
const RECALL_K: usize = 5;
/// Hits read by a profile analysis.
const ANALYSIS_K: usize = 10;
/// Set-Jaccard at which an insert merges (see the note written with the results).
const SIM_THRESHOLD: f64 = 0.9;

struct Turn {
    turn: u64,
    text: String,
    hook: bool,
    search_query: String,
    importance: f64,
}

fn turns(data: &Value) -> Result<Vec<Turn>> {
    data["materialized_turns_seed42"]
        .as_array()
        .context("test_200_turns.materialized_turns_seed42 is not a list")?
        .iter()
        .map(|t| {
            let field = |k: &str| {
                t[k].as_str()
                    .map(String::from)
                    .with_context(|| format!("turn {t}: {k} is not a string"))
            };
            Ok(Turn {
                turn: t["turn"]
                    .as_u64()
                    .with_context(|| format!("turn {t}: no turn number"))?,
                text: field("text")?,
                hook: t["meta"]["hook"].as_bool().unwrap_or(false),
                search_query: field("search_query")?,
                importance: t["importance"].as_f64().unwrap_or(0.0),
            })
        })
        .collect()
}

/// Profile analyses at least `every` turns apart, the conversation's start counting as the
/// previous one (turn 0).
pub(crate) struct Cooldown {
    every: u64,
    last: u64,
}

impl Cooldown {
    pub(crate) fn new(every: u64) -> Cooldown {
        Cooldown { every, last: 0 }
    }

    /// Whether a hook at `turn` runs an analysis; if so, it becomes the last one.
    pub(crate) fn fire(&mut self, turn: u64) -> bool {
        if turn >= self.last + self.every {
            self.last = turn;
            true
        } else {
            false
        }
    }
}

/// A hook turn: flagged by the generator, or containing one of the hook phrases.
fn is_hook(turn: &Turn, phrases: &[String]) -> bool {
    turn.hook || phrases.iter().any(|p| turn.text.contains(p.as_str()))
}

pub(crate) struct Outcome {
    pub(crate) json: Value,
    pub(crate) notes: Vec<String>,
    pub(crate) failed: Vec<String>,
}

/// The conversation's tables, read once.
struct Script {
    turns: Vec<Turn>,
    phrases: Vec<String>,
    cooldown_turns: u64,
    /// Preference text -> profile field, from the generator's `STYLE_HOOKS`
    /// (`[field, trigger, text]`).
    style: BTreeMap<String, String>,
}

impl Script {
    fn load(data: &Value) -> Result<Script> {
        Ok(Script {
            turns: turns(data)?,
            phrases: strings(&data["HOOK_PHRASES"], "HOOK_PHRASES")?,
            cooldown_turns: data["COOLDOWN_TURNS"]
                .as_u64()
                .context("test_200_turns.COOLDOWN_TURNS is not a number")?,
            style: data["STYLE_HOOKS"]
                .as_array()
                .context("test_200_turns.STYLE_HOOKS is not a list")?
                .iter()
                .filter_map(|h| Some((h[2].as_str()?.to_string(), h[0].as_str()?.to_string())))
                .collect(),
        })
    }
}

/// What one replay of the conversation measured.
struct Replay {
    sim_threshold: f64,
    headroom: usize,
    analysis_turns: Vec<u64>,
    analyses: Vec<Value>,
    profile: BTreeSet<String>,
    recalled: usize,
    merges: usize,
    inserted: usize,
    governance_runs: usize,
    /// Governance runs that did not end at exactly the capacity: (turn, total).
    inexact: Vec<(u64, usize)>,
    max_total: usize,
    important: usize,
    important_alive: usize,
    archived: usize,
    /// Inserted ids neither live nor archived at the end.
    missing: usize,
    final_counts: Value,
    reopen_consistent: bool,
}

impl Replay {
    fn bound(&self) -> usize {
        CAPACITY + self.headroom
    }

    fn min_gap(&self) -> Option<u64> {
        self.analysis_turns.windows(2).map(|w| w[1] - w[0]).min()
    }

    fn important_survived(&self) -> bool {
        self.important > 0 && self.important_alive == self.important
    }
}

/// Replay the conversation into a fresh store in `dir` merging at `sim_threshold`.
fn replay(script: &Script, dir: &Path, sim_threshold: f64) -> Result<Replay> {
    let mut config = config_in(dir);
    config.memory.capacity_threshold = CAPACITY;
    config.memory.sim_threshold_hot = sim_threshold;
    // the automatic governance headroom (docs/heat.md), unless configured.
    let headroom = match config.memory.governance_headroom {
        0 => (CAPACITY / 10).clamp(10, 200),
        h => h,
    };
    let coral = open(&config)?;

    let mut cooldown = Cooldown::new(script.cooldown_turns);
    let mut r = Replay {
        sim_threshold,
        headroom,
        analysis_turns: Vec::new(),
        analyses: Vec::new(),
        profile: BTreeSet::new(),
        recalled: 0,
        merges: 0,
        inserted: 0,
        governance_runs: 0,
        inexact: Vec::new(),
        max_total: 0,
        important: 0,
        important_alive: 0,
        archived: 0,
        missing: 0,
        final_counts: Value::Null,
        reopen_consistent: false,
    };
    let mut inserted_ids: Vec<String> = Vec::new();
    let mut important: BTreeSet<String> = BTreeSet::new();
    for t in &script.turns {
        let now = T0 + SPACING_S * t.turn as f64;
        let before = coral.stats().total;
        let search = |query: &str, k: usize| {
            coral.search_with(
                query,
                SearchOptions {
                    top_k: Some(k),
                    now: Some(now),
                    ..SearchOptions::default()
                },
            )
        };
        r.recalled += search(&t.search_query, RECALL_K)?.len();
        let outcome = coral.insert_with(
            &t.text,
            InsertOptions {
                importance: t.importance,
                project: None,
                timestamp: Some(now),
                now: Some(now),
            },
        )?;
        if outcome.inserted() {
            inserted_ids.push(outcome.id().to_string());
        } else {
            r.merges += 1;
        }
        if t.importance > 0.0 {
            important.insert(outcome.id().to_string());
        }
        let total = coral.stats().total;
        if total < before + usize::from(outcome.inserted()) {
            r.governance_runs += 1;
            if total != CAPACITY {
                r.inexact.push((t.turn, total));
            }
        }
        r.max_total = r.max_total.max(total);
        if is_hook(t, &script.phrases) && cooldown.fire(t.turn) {
            let gap = t.turn - r.analysis_turns.last().copied().unwrap_or(0);
            let fields: BTreeSet<String> = search(&t.search_query, ANALYSIS_K)?
                .iter()
                .filter_map(|h| script.style.get(&h.item.content).cloned())
                .collect();
            r.profile.extend(fields.iter().cloned());
            r.analyses
                .push(json!({"turn": t.turn, "gap": gap, "fields": fields}));
            r.analysis_turns.push(t.turn);
        }
    }
    r.inserted = inserted_ids.len();
    r.important = important.len();
    r.important_alive = important
        .iter()
        .filter(|id| matches!(coral.get(id), Ok(Some(_))))
        .count();
    for id in &inserted_ids {
        if coral.get(id)?.is_some() {
            continue;
        }
        if coral.get_archived(id)?.is_some() {
            r.archived += 1;
        } else {
            r.missing += 1;
        }
    }
    let stats = coral.stats();
    r.final_counts = json!({
        "total": stats.total, "hot": stats.hot, "warm": stats.warm, "cold": stats.cold,
    });
    let before = coral.export()?;
    coral.close()?;
    let reopened = open(&config)?;
    let after = reopened.export()?;
    r.reopen_consistent = before == after && reopened.stats().total == stats.total;
    reopened.close()?;
    Ok(r)
}

pub(crate) fn run(data: &Value, dir: &Path) -> Result<Outcome> {
    let script = Script::load(data)?;
    let r = replay(&script, &dir.join("main"), SIM_THRESHOLD)?;
    let default_threshold = coral::MemoryConfig::default().sim_threshold_hot;
    let d = replay(&script, &dir.join("default-threshold"), default_threshold)?;
    let cooldown_turns = script.cooldown_turns;
    let min_gap = r.min_gap();

    let mut failed = Vec::new();
    if min_gap.is_some_and(|g| g < cooldown_turns) {
        failed.push(format!(
            "200 turns: analyses {min_gap:?} turns apart, cool-down is {cooldown_turns}"
        ));
    }
    if r.max_total > r.bound() || d.max_total > d.bound() {
        failed.push(format!(
            "200 turns: total reached {} (at the default threshold {}) > capacity {CAPACITY} + \
             headroom {}",
            r.max_total, d.max_total, r.headroom
        ));
    }
    if r.governance_runs == 0 {
        failed.push("200 turns: governance never ran; the capacity test is vacuous".into());
    }
    if !r.inexact.is_empty() || !d.inexact.is_empty() {
        failed.push(format!(
            "200 turns: governance did not end at capacity {CAPACITY}: {:?} {:?}",
            r.inexact, d.inexact
        ));
    }
    if !r.important_survived() || !d.important_survived() {
        failed.push(format!(
            "200 turns: {} of {} important memories survived ({} of {} at the default threshold)",
            r.important_alive, r.important, d.important_alive, d.important
        ));
    }
    if r.missing + d.missing > 0 {
        failed.push(format!(
            "200 turns: {} inserted memories are neither live nor archived",
            r.missing + d.missing
        ));
    }
    if !r.reopen_consistent || !d.reopen_consistent {
        failed.push("200 turns: export() after reopen differs from before close".into());
    }

    let mut notes = vec![format!(
        "200 turns: memory.sim_threshold_hot is {SIM_THRESHOLD} here. At Coral's default \
         ({default_threshold}) the templated task requests, which differ only in a number or \
         a target language, merge: {} of 200 turns merge, the total peaks at {} and governance \
         runs {} time(s) at capacity {CAPACITY}, so the capacity part of the scenario would \
         test nothing. The original counted 18 dedups, i.e. its task turns stayed distinct. \
         The default-threshold replay is reported under at_default_sim_threshold.",
        d.merges, d.max_total, d.governance_runs
    )];
    if r.analysis_turns.len() != 9 {
        notes.push(format!(
            "200 turns: {} profile analyses (original 9) at turns {:?}",
            r.analysis_turns.len(),
            r.analysis_turns
        ));
    }
    if r.merges != 18 {
        notes.push(format!(
            "200 turns: {} inserts merged into an existing memory (original: 18 dedups). The \
             conversation repeats 18 preference turns and 13 task turns verbatim, and at \
             set-Jaccard {SIM_THRESHOLD} some task requests of one template also merge; Coral \
             merges an exact repeat wherever the first copy still lives (any tier, by id).",
            r.merges
        ));
    }

    let json = json!({
        "analyses": r.analysis_turns.len(),
        "min_gap": min_gap,
        "max_total": r.max_total,
        "capacity_bound": r.bound(),
        "important_survived": r.important_survived(),
        "reopen_consistent": r.reopen_consistent,
        "turns": script.turns.len(),
        "turn_spacing_s": SPACING_S,
        "capacity": CAPACITY,
        "headroom": r.headroom,
        "sim_threshold_hot": r.sim_threshold,
        "cooldown_turns": cooldown_turns,
        "analysis_turns": r.analysis_turns,
        "analyses_detail": r.analyses,
        "profile_fields": r.profile,
        "recall_hits": r.recalled,
        "dedup_merges": r.merges,
        "inserted_new": r.inserted,
        "governance_runs": r.governance_runs,
        "governance_exact": r.inexact.is_empty(),
        "archived": r.archived,
        "all_accounted": r.missing == 0,
        "important_memories": r.important,
        "important_alive": r.important_alive,
        "final": r.final_counts,
        "at_default_sim_threshold": {
            "sim_threshold_hot": d.sim_threshold,
            "analyses": d.analysis_turns.len(),
            "dedup_merges": d.merges,
            "max_total": d.max_total,
            "governance_runs": d.governance_runs,
            "important_survived": d.important_survived(),
            "reopen_consistent": d.reopen_consistent,
            "final": d.final_counts,
        },
        "original": {"analyses": 9, "dedup_merges": 18, "cooldown_turns": 20},
    });
    Ok(Outcome {
        json,
        notes,
        failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cooldown_counts_from_the_start_and_between_analyses() {
        let mut c = Cooldown::new(20);
        let fired: Vec<u64> = (1..=200).step_by(7).filter(|&t| c.fire(t)).collect();
        assert_eq!(fired, vec![22, 43, 64, 85, 106, 127, 148, 169, 190]);
        let mut c = Cooldown::new(20);
        assert!(!c.fire(19) && c.fire(20) && !c.fire(39) && c.fire(40));
    }

    #[test]
    fn hook_by_flag_or_phrase() {
        let phrases = vec!["偏好".to_string(), "请翻译成".to_string()];
        let turn = |text: &str, hook| Turn {
            turn: 1,
            text: text.into(),
            hook,
            search_query: text.into(),
            importance: 0.0,
        };
        assert!(is_hook(&turn("标题一律用名词短语", true), &phrases));
        assert!(is_hook(&turn("我的偏好是直译", false), &phrases));
        assert!(!is_hook(
            &turn("请把这段法律条款翻译成日文", false),
            &phrases
        ));
    }
}

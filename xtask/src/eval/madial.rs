//! MADial-Bench (zh, en) as a [`Corpus`]: one group per user, a memory per `event`.
//!
//! Protocol (`../shared/eval-data/README.md`): per dialogue, the memories of its user are in the
//! store (text = `event`, timestamp = `time` at 00:00 UTC), the query is the concatenation of
//! `dialogue[..test-turn[0]]`, and the gold set is `relevant-id`. The English memory file has
//! no user ids: they are taken from the Chinese file by memory id (same ids, same users).
//! Three Chinese events are exact duplicates, so the pool path merges only identical texts
//! (`memory.sim_threshold_hot = 1.0`): their ids share one memory, which counts for both.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::corpus::{Corpus, Doc, Group, Question};

const DAY: f64 = 86_400.0;

/// Both languages: `madial_zh` then `madial_en`, from `dir` (the `madial-bench` folder).
pub fn load(dir: &Path) -> Result<(Corpus, Corpus)> {
    let zh = Raw::load(dir, "zh", None)?;
    let users: HashMap<String, u64> = zh.memories.iter().map(|m| (m.id.clone(), m.user)).collect();
    let en = Raw::load(dir, "en", Some(&users))?;
    Ok((zh.into_corpus("madial_zh"), en.into_corpus("madial_en")))
}

struct Memory {
    id: String,
    user: u64,
    text: String,
    time: f64,
}

struct Dialogue {
    user: u64,
    query: String,
    gold: Vec<String>,
}

struct Raw {
    memories: Vec<Memory>,
    dialogues: Vec<Dialogue>,
}

impl Raw {
    /// Reads `MADial-Bench-<lang>-{memory,dialogue}.json` (JSON Lines). Memories without a
    /// `user-id` take theirs from `users` by memory id.
    fn load(dir: &Path, lang: &str, users: Option<&HashMap<String, u64>>) -> Result<Raw> {
        let lines = |what: &str| -> Result<Vec<(usize, Value)>> {
            let path = dir.join(format!("MADial-Bench-{lang}-{what}.json"));
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {} (eval data)", path.display()))?;
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| {
                    let v = serde_json::from_str(l)
                        .with_context(|| format!("{} line {}", path.display(), i + 1))?;
                    Ok((i + 1, v))
                })
                .collect()
        };
        let mut memories = Vec::new();
        for (line, entry) in lines("memory")? {
            let Some((id, m)) = entry.as_object().and_then(|o| o.iter().next()) else {
                bail!("{lang} memory line {line}: not an object with one entry");
            };
            let user = match m.get("user-id").and_then(Value::as_u64) {
                Some(u) => u,
                None => *users.and_then(|u| u.get(id)).with_context(|| {
                    format!("{lang} memory {id}: no user-id, and none known by its id")
                })?,
            };
            let field = |k: &str| {
                m.get(k)
                    .and_then(Value::as_str)
                    .with_context(|| format!("{lang} memory {id}: no {k}"))
            };
            memories.push(Memory {
                id: id.clone(),
                user,
                text: field("event")?.to_string(),
                time: unix_date(field("time")?)
                    .with_context(|| format!("{lang} memory {id}: bad time"))?,
            });
        }
        let mut dialogues = Vec::new();
        for (line, d) in lines("dialogue")? {
            let context = || format!("{lang} dialogue line {line}");
            let turns: Vec<&str> = d["dialogue"]
                .as_array()
                .with_context(context)?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let test_turn = d["test-turn"][0].as_u64().with_context(context)? as usize;
            let mut gold: Vec<String> = d["relevant-id"]
                .as_array()
                .with_context(context)?
                .iter()
                .map(|g| match g {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let mut seen = std::collections::HashSet::new();
            gold.retain(|g| seen.insert(g.clone()));
            if gold.is_empty() || test_turn > turns.len() {
                bail!("{}: no gold ids or test turn out of range", context());
            }
            dialogues.push(Dialogue {
                user: d["user-id"].as_u64().with_context(context)?,
                query: turns[..test_turn].concat(),
                gold,
            });
        }
        Ok(Raw {
            memories,
            dialogues,
        })
    }

    /// One group per user (ascending), every group with the same clock: one day after the
    /// newest memory of the file, so recency favours the last weeks as in a live conversation.
    fn into_corpus(self, key: &'static str) -> Corpus {
        let now = self.memories.iter().map(|m| m.time).fold(0.0, f64::max) + DAY;
        let mut users: Vec<u64> = self.dialogues.iter().map(|d| d.user).collect();
        users.sort_unstable();
        users.dedup();
        let groups = users
            .into_iter()
            .map(|user| Group {
                name: format!("user-{user}"),
                docs: self
                    .memories
                    .iter()
                    .filter(|m| m.user == user)
                    .map(|m| Doc {
                        id: m.id.clone(),
                        text: m.text.clone(),
                        time: m.time,
                        speaker: None,
                    })
                    .collect(),
                questions: self
                    .dialogues
                    .iter()
                    .filter(|d| d.user == user)
                    .map(|d| Question {
                        text: d.query.clone(),
                        gold: d.gold.clone(),
                        category: None,
                    })
                    .collect(),
                now,
            })
            .collect();
        Corpus {
            key,
            categories: &[],
            merge_threshold: Some(1.0),
            groups,
            notes: vec![
                "en memories take their user ids from the zh memory file, by memory id".into(),
            ],
        }
    }
}

/// `YYYY-MM-DD` as Unix seconds at 00:00 UTC.
fn unix_date(date: &str) -> Option<f64> {
    let date = chrono::NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d").ok()?;
    Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_midnights() {
        assert_eq!(unix_date("1970-01-01"), Some(0.0));
        assert_eq!(unix_date("2023-12-25"), Some(1_703_462_400.0));
        assert_eq!(unix_date("2024-02-29"), Some(1_709_164_800.0));
        assert_eq!(unix_date("2023-02-29"), None);
        assert_eq!(unix_date("2024-13-01"), None);
        assert_eq!(unix_date("soon"), None);
    }
}

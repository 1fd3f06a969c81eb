//! LoCoMo (long conversations) as a [`Corpus`]: one group per conversation, a document per
//! turn.
//!
//! Protocol (`../shared/eval-data/README.md`, "LoCoMo"): every turn, in order, is
//! `"<speaker>: <text>"` plus `" [image: <blip_caption>]"` when it has one, said at its
//! session's time (`%I:%M %p on %d %B, %Y`, read as UTC) plus one second per turn index within
//! the session. Questions of categories 1–4 are kept (5, adversarial, has no evidence);
//! evidence ids are normalised by [`normalise_evidence`] and ids that name no turn are dropped,
//! as are questions left with none. Every question is asked one day after the last turn.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::corpus::{Corpus, Doc, Group, Question};

const DAY: f64 = 86_400.0;

/// Category names, in the order of their numbers 1–4.
pub const CATEGORIES: &[&str] = &["multi_hop", "temporal", "open_domain", "single_hop"];

/// The adversarial category: no answer in the conversation, so nothing to retrieve.
const ADVERSARIAL: u64 = 5;

/// `locomo_dev.json` (a list of conversations) from `path`.
pub fn load(path: &Path) -> Result<Corpus> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {} (eval data)", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    from_json("locomo_dev", &value).with_context(|| format!("reading {}", path.display()))
}

/// The corpus of a parsed LoCoMo file.
pub fn from_json(key: &'static str, value: &Value) -> Result<Corpus> {
    let samples = value
        .as_array()
        .context("a LoCoMo file is a JSON list of conversations")?;
    let mut groups = Vec::new();
    let mut notes = Vec::new();
    for (n, sample) in samples.iter().enumerate() {
        let name = sample["sample_id"]
            .as_str()
            .with_context(|| format!("conversation {n} has no sample_id"))?;
        let group = conversation(name, sample, &mut notes)
            .with_context(|| format!("conversation {name}"))?;
        groups.push(group);
    }
    Ok(Corpus {
        key,
        categories: CATEGORIES,
        merge_threshold: None,
        groups,
        notes,
    })
}

fn conversation(name: &str, sample: &Value, notes: &mut Vec<String>) -> Result<Group> {
    let conv = sample["conversation"]
        .as_object()
        .context("no conversation object")?;
    // Sessions by number: `session_<n>` holds the turns, `session_<n>_date_time` the date
    // (some files date sessions that hold no turns; those are ignored).
    let mut sessions: BTreeMap<u64, &Vec<Value>> = BTreeMap::new();
    for (k, v) in conv {
        if let Some(n) = k
            .strip_prefix("session_")
            .and_then(|s| s.parse::<u64>().ok())
        {
            let turns = v
                .as_array()
                .with_context(|| format!("{k} is not a list of turns"))?;
            sessions.insert(n, turns);
        }
    }
    let mut docs: Vec<Doc> = Vec::new();
    let mut ids: HashSet<String> = HashSet::new();
    for (n, turns) in &sessions {
        let key = format!("session_{n}_date_time");
        let date = conv
            .get(&key)
            .and_then(Value::as_str)
            .with_context(|| format!("session {n} has no {key}"))?;
        let start = session_time(date).with_context(|| format!("{key} = {date:?}"))?;
        for (i, turn) in turns.iter().enumerate() {
            let field = |f: &str| {
                turn[f]
                    .as_str()
                    .with_context(|| format!("session {n} turn {i} has no {f}"))
            };
            let (speaker, dia_id, said) = (field("speaker")?, field("dia_id")?, field("text")?);
            if !ids.insert(dia_id.to_string()) {
                bail!("dia_id {dia_id} appears twice");
            }
            if normalise_evidence(dia_id) != [Some(dia_id.to_string())] {
                notes.push(format!(
                    "{name}: turn id {dia_id:?} is not in the normal form D<session>:<turn>, so \
                     no evidence can name it"
                ));
            }
            let mut text = format!("{speaker}: {said}");
            if let Some(caption) = turn["blip_caption"].as_str() {
                text.push_str(&format!(" [image: {caption}]"));
            }
            docs.push(Doc {
                id: dia_id.to_string(),
                text,
                time: start + i as f64,
                speaker: Some(speaker.to_string()),
            });
        }
    }
    if docs.is_empty() {
        bail!("no turns");
    }
    let mut questions = Vec::new();
    let qa = sample["qa"].as_array().context("no qa list")?;
    for (i, q) in qa.iter().enumerate() {
        let category = q["category"]
            .as_u64()
            .with_context(|| format!("question {i} has no category"))?;
        if category == ADVERSARIAL {
            continue;
        }
        if !(1..=4).contains(&category) {
            bail!("question {i} has category {category}; expected 1 to 5");
        }
        let text = q["question"]
            .as_str()
            .with_context(|| format!("question {i} has no text"))?;
        let mut gold: Vec<String> = Vec::new();
        for raw in q["evidence"].as_array().into_iter().flatten() {
            let raw = raw.as_str().unwrap_or_default();
            for id in normalise_evidence(raw) {
                match id {
                    Some(id) if ids.contains(&id) => {
                        if !gold.contains(&id) {
                            gold.push(id);
                        }
                    }
                    Some(id) => notes.push(format!(
                        "{name}: question {i} ({text:?}): evidence {raw:?} names no turn \
                         ({id}); dropped"
                    )),
                    None => notes.push(format!(
                        "{name}: question {i} ({text:?}): evidence {raw:?} is not a turn id; \
                         dropped"
                    )),
                }
            }
        }
        if gold.is_empty() {
            notes.push(format!(
                "{name}: question {i} ({text:?}, category {category}) has no evidence; skipped"
            ));
            continue;
        }
        questions.push(Question {
            text: text.to_string(),
            gold,
            category: Some(category as usize - 1),
        });
    }
    let now = docs.iter().map(|d| d.time).fold(f64::MIN, f64::max) + DAY;
    Ok(Group {
        name: name.to_string(),
        docs,
        questions,
        now,
    })
}

/// A session date such as `"1:56 pm on 8 May, 2023"`, read as UTC, in Unix seconds.
pub fn session_time(date: &str) -> Option<f64> {
    chrono::NaiveDateTime::parse_from_str(date.trim(), "%I:%M %p on %d %B, %Y")
        .ok()
        .map(|t| t.and_utc().timestamp() as f64)
}

/// The protocol's reading of one evidence string: split on `;`, `,` and spaces; each piece
/// that starts with `D:?(\d+):0*(\d+)` (a Python `re.match`, so trailing text is ignored)
/// becomes `Some("D<session>:<turn>")`, any other piece `None`. `"D8:6; D9:17"` is two ids,
/// `"D:11:26"` is `D11:26`, `"D3:07"` is `D3:7`, `"D"` is `None`.
pub fn normalise_evidence(raw: &str) -> Vec<Option<String>> {
    raw.split([';', ',', ' '])
        .filter(|p| !p.is_empty())
        .map(|piece| {
            let rest = piece.strip_prefix('D')?;
            let rest = rest.strip_prefix(':').unwrap_or(rest);
            let (session, rest) = leading_digits(rest)?;
            let rest = rest.strip_prefix(':')?;
            let (turn, _) = leading_digits(rest)?;
            // `0*(\d+)`: the zeros go, but at least one digit stays.
            let turn = match turn.trim_start_matches('0') {
                "" => "0",
                t => t,
            };
            Some(format!("D{session}:{turn}"))
        })
        .collect()
}

/// The ASCII digits `s` starts with (at least one) and what follows them.
fn leading_digits(s: &str) -> Option<(&str, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    (end > 0).then(|| s.split_at(end))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evidence_ids_normalise_as_the_protocol_says() {
        let check = |raw: &str, expected: &[Option<&str>]| {
            let got = normalise_evidence(raw);
            let expected: Vec<Option<String>> =
                expected.iter().map(|e| e.map(String::from)).collect();
            assert_eq!(got, expected, "{raw:?}");
        };
        check("D1:3", &[Some("D1:3")]);
        check("D8:6; D9:17", &[Some("D8:6"), Some("D9:17")]);
        check(
            "D2:1,D2:2 D2:3",
            &[Some("D2:1"), Some("D2:2"), Some("D2:3")],
        );
        check("D:11:26", &[Some("D11:26")]);
        check("D3:007", &[Some("D3:7")]);
        check("D3:0", &[Some("D3:0")]);
        check("D4:5a", &[Some("D4:5")]);
        check("D", &[None]);
        check("d1:3", &[None]);
        check("D1", &[None]);
        check("D1:", &[None]);
        check("", &[]);
        check(" ; ", &[]);
    }

    #[test]
    fn session_dates_parse_in_utc() {
        // 2023-05-08 13:56 UTC.
        assert_eq!(
            session_time("1:56 pm on 8 May, 2023"),
            Some(1_683_554_160.0)
        );
        assert_eq!(
            session_time("12:04 am on 1 January, 2024"),
            Some(1_704_067_440.0)
        );
        assert_eq!(
            session_time("10:37 AM on 27 June, 2023"),
            Some(1_687_862_220.0)
        );
        assert_eq!(session_time("13:56 pm on 8 May, 2023"), None);
        assert_eq!(session_time("8 May 2023"), None);
    }

    /// A two-session conversation written by hand, with every oddity the real file has: a
    /// caption, a near-duplicate turn (D2:3), an id with a stray colon, ids that name no turn,
    /// an adversarial question, a question without evidence, a dated session without turns.
    pub(crate) fn tiny() -> Value {
        json!([{
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1_date_time": "9:00 am on 1 March, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound named Comet."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! Send a photo.",
                     "blip_caption": "a photo of a dog on a sofa"},
                    {"speaker": "Ann", "dia_id": "D1:3", "text": "My sister lives in Lisbon."}
                ],
                "session_2_date_time": "6:30 pm on 20 April, 2023",
                "session_2": [
                    {"speaker": "Bo", "dia_id": "D2:1", "text": "I started learning the cello."},
                    {"speaker": "Ann", "dia_id": "D2:2", "text": "Comet won a race at the track!"},
                    {"speaker": "Ann", "dia_id": "D2:3", "text": "Comet won a race at the track!!"}
                ],
                "session_3_date_time": "1:00 pm on 1 May, 2023"
            },
            "qa": [
                {"question": "Where does Ann's sister live?", "answer": "Lisbon",
                 "evidence": ["D1:3", "D9:9", "D"], "category": 4},
                {"question": "Which instrument is Bo learning?", "answer": "cello",
                 "evidence": ["D:2:1"], "category": 4},
                {"question": "What greyhound won the race?", "answer": "Comet",
                 "evidence": ["D1:1; D2:3"], "category": 1},
                {"question": "When did Ann adopt the greyhound?", "answer": "March 2023",
                 "evidence": ["D1:1"], "category": 2},
                {"question": "What colour is Bo's car?", "answer": null,
                 "evidence": [], "category": 5},
                {"question": "Would Bo enjoy Portugal?", "answer": "likely",
                 "evidence": ["D1:3"], "category": 3},
                {"question": "Is Ann a morning person?", "answer": "yes",
                 "evidence": [], "category": 3}
            ]
        }])
    }

    #[test]
    fn the_loader_reads_turns_times_captions_and_questions() {
        let c = from_json("tiny", &tiny()).unwrap();
        assert_eq!(c.groups.len(), 1);
        let g = &c.groups[0];
        assert_eq!(g.name, "conv-x");
        let ids: Vec<&str> = g.docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]);
        assert_eq!(g.docs[0].text, "Ann: I adopted a greyhound named Comet.");
        assert_eq!(
            g.docs[1].text,
            "Bo: Lovely! Send a photo. [image: a photo of a dog on a sofa]"
        );
        assert_eq!(g.docs[1].speaker.as_deref(), Some("Bo"));
        let s1 = session_time("9:00 am on 1 March, 2023").unwrap();
        let s2 = session_time("6:30 pm on 20 April, 2023").unwrap();
        let times: Vec<f64> = g.docs.iter().map(|d| d.time).collect();
        assert_eq!(times, [s1, s1 + 1.0, s1 + 2.0, s2, s2 + 1.0, s2 + 2.0]);
        // One day after the last turn; the dated but empty session 3 is ignored.
        assert_eq!(g.now, s2 + 2.0 + DAY);
        // Category 5 and the question without evidence are left out; bad ids are dropped.
        let q: Vec<(&str, Vec<&str>, Option<usize>)> = g
            .questions
            .iter()
            .map(|q| {
                (
                    q.text.as_str(),
                    q.gold.iter().map(String::as_str).collect(),
                    q.category,
                )
            })
            .collect();
        assert_eq!(
            q,
            [
                ("Where does Ann's sister live?", vec!["D1:3"], Some(3)),
                ("Which instrument is Bo learning?", vec!["D2:1"], Some(3)),
                (
                    "What greyhound won the race?",
                    vec!["D1:1", "D2:3"],
                    Some(0)
                ),
                ("When did Ann adopt the greyhound?", vec!["D1:1"], Some(1)),
                ("Would Bo enjoy Portugal?", vec!["D1:3"], Some(2)),
            ]
        );
        assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
        assert!(
            c.notes[0].contains("\"D9:9\" names no turn"),
            "{:?}",
            c.notes
        );
        assert!(
            c.notes[1].contains("\"D\" is not a turn id"),
            "{:?}",
            c.notes
        );
        assert!(
            c.notes[2].contains("has no evidence; skipped"),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn broken_files_are_errors_naming_the_problem() {
        let check = |v: Value, needle: &str| {
            let err = format!("{:#}", from_json("t", &v).unwrap_err());
            assert!(err.contains(needle), "{err:?} should name {needle:?}");
        };
        check(json!({}), "list of conversations");
        let mut v = tiny();
        v[0]["conversation"]["session_2_date_time"] = json!("someday");
        check(v, "session_2_date_time = \"someday\"");
        let mut v = tiny();
        v[0]["conversation"]["session_2"][0]["dia_id"] = json!("D1:1");
        check(v, "dia_id D1:1 appears twice");
        let mut v = tiny();
        v[0]["qa"][0]["category"] = json!(7);
        check(v, "category 7");
    }
}

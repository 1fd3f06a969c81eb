//! The summarising model's answers parsed strictly into drafts: one JSON object (a `<think>`
//! block and a Markdown fence tolerated), over-long fields cut, anything else malformed refused.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::layers::FACETS;
use crate::terms::{normalize_terms, squeeze};

const MAX_TITLE_CHARS: usize = 120;
const MAX_BODY_CHARS: usize = 4_000;
const MAX_HINT_CHARS: usize = 300;
/// Terms kept per list (entity anchors, topic terms), also when a reinforcement merges two.
pub(crate) const MAX_TERMS: usize = 24;
const MAX_TERM_CHARS: usize = 64;
const MAX_MEMORIES: usize = 12;

/// A summary or memory as the model wrote it, checked and cut to the limits.
#[derive(Debug, PartialEq)]
pub(crate) struct Draft {
    /// Semantic: the existing memory this one restates or corrects, as the model says.
    pub(crate) updates: Option<String>,
    pub(crate) title: String,
    pub(crate) body: String,
    pub(crate) hint: String,
    pub(crate) facet: Option<String>,
    pub(crate) entity_anchors: Vec<String>,
    pub(crate) topic_terms: Vec<String>,
}

/// The JSON object in a model's answer: a leading `<think>` block and Markdown code fences are
/// allowed around it, nothing else.
fn json_object(answer: &str) -> Result<serde_json::Map<String, Value>> {
    let mut text = answer.trim();
    if let Some(rest) = text.strip_prefix("<think>") {
        text = rest
            .split_once("</think>")
            .map_or("", |(_, after)| after)
            .trim();
    }
    if let Some(rest) = text.strip_prefix("```") {
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        text = rest.trim().strip_suffix("```").unwrap_or(rest).trim();
    }
    let snippet: String = answer.chars().take(120).collect();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::Llm(format!(
            "the answer is JSON but not an object: {snippet:?}"
        ))),
        Err(e) => Err(Error::Llm(format!(
            "the answer is not a JSON object ({e}): {snippet:?}"
        ))),
    }
}

fn text_field(
    map: &serde_json::Map<String, Value>,
    names: &[&str],
    max: usize,
    required: bool,
) -> Result<String> {
    let value = names.iter().find_map(|n| map.get(*n));
    let text = match value {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => {
            return Err(Error::Llm(format!("{} is {other}, not a string", names[0])));
        }
    };
    if required && text.is_empty() {
        return Err(Error::Llm(format!("the answer has no {}", names[0])));
    }
    // A model that overshoots a length is cut, not refused: refusing would fail the same way
    // on every retry.
    Ok(cut_chars(&text, max))
}

/// `text` cut to `max` characters, an ellipsis marking the cut.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if text.chars().count() > max => format!("{}…", &text[..at]),
        _ => text.to_string(),
    }
}

fn terms_field(map: &serde_json::Map<String, Value>, name: &str) -> Result<Vec<String>> {
    let items = match map.get(name) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(Error::Llm(format!("{name} is {other}, not a list"))),
    };
    let mut raw = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) => raw.push(s.clone()),
            other => {
                return Err(Error::Llm(format!(
                    "{name} holds {other}, not only strings"
                )));
            }
        }
    }
    // Terms longer than a name or a phrase are sentences, not tags: left out. Past the limit
    // the first ones are kept.
    let mut terms = normalize_terms(&raw);
    terms.retain(|t| t.chars().count() <= MAX_TERM_CHARS);
    terms.truncate(MAX_TERMS);
    Ok(terms)
}

/// An episodic summary from the model's answer: `title` and `summary` required.
pub(crate) fn parse_episodic(answer: &str) -> Result<Draft> {
    let map = json_object(answer)?;
    Ok(Draft {
        updates: None,
        title: squeeze(&text_field(&map, &["title"], MAX_TITLE_CHARS, true)?),
        body: text_field(&map, &["summary", "content"], MAX_BODY_CHARS, true)?,
        hint: squeeze(&text_field(&map, &["hint"], MAX_HINT_CHARS, false)?),
        facet: None,
        entity_anchors: terms_field(&map, "entity_anchors")?,
        topic_terms: terms_field(&map, "topic_terms")?,
    })
}

/// The semantic memories of a roll-up answer: a non-empty `memories` list, facets from [`FACETS`].
pub(crate) fn parse_semantic(answer: &str) -> Result<Vec<Draft>> {
    let map = json_object(answer)?;
    let items = match map.get("memories") {
        Some(Value::Array(items)) => items,
        Some(other) => return Err(Error::Llm(format!("memories is {other}, not a list"))),
        None => return Err(Error::Llm("the answer has no memories list".into())),
    };
    if items.is_empty() {
        return Err(Error::Llm("the answer's memories list is empty".into()));
    }
    // Past the limit the first memories are kept.
    items
        .iter()
        .take(MAX_MEMORIES)
        .map(|item| {
            let Value::Object(m) = item else {
                return Err(Error::Llm(format!("a memory is {item}, not an object")));
            };
            let facet = text_field(m, &["facet"], 32, false)?.to_lowercase();
            let facet = if facet.is_empty() {
                None
            } else if FACETS.contains(&facet.as_str()) {
                Some(facet)
            } else {
                return Err(Error::Llm(format!(
                    "facet {facet:?} is not one of {}",
                    FACETS.join(", ")
                )));
            };
            let updates = text_field(m, &["updates"], 64, false)?;
            Ok(Draft {
                updates: (!updates.is_empty()).then_some(updates),
                title: squeeze(&text_field(m, &["title"], MAX_TITLE_CHARS, true)?),
                body: text_field(m, &["content", "summary"], MAX_BODY_CHARS, true)?,
                hint: squeeze(&text_field(m, &["hint"], MAX_HINT_CHARS, false)?),
                facet,
                entity_anchors: terms_field(m, "entity_anchors")?,
                topic_terms: terms_field(m, "topic_terms")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_parsed_strictly() {
        let ok = parse_episodic(
            "<think>hmm</think>```json\n{\"title\": \"文旅 答辩\", \"summary\": \"定了方案\", \
             \"entity_anchors\": [\"GPT-4o\", \"gpt-4o\", \" \"], \"topic_terms\": []}\n```",
        )
        .unwrap();
        assert_eq!(ok.title, "文旅 答辩");
        assert_eq!(ok.entity_anchors, ["GPT-4o"]);
        for bad in [
            "not json",
            "[1, 2]",
            "{\"summary\": \"no title\"}",
            "{\"title\": \"t\"}",
            "{\"title\": 5, \"summary\": \"s\"}",
            "{\"title\": \"t\", \"summary\": \"s\", \"entity_anchors\": \"x\"}",
            "{\"title\": \"t\", \"summary\": \"s\", \"topic_terms\": [1]}",
        ] {
            assert!(
                matches!(parse_episodic(bad), Err(Error::Llm(_))),
                "{bad} was accepted"
            );
        }
        // Overlong fields are cut, overlong terms left out, extra terms dropped.
        let long = json!({
            "title": "x".repeat(500),
            "summary": "长".repeat(5_000),
            "entity_anchors": (0..40).map(|i| format!("名字{i}")).chain(["y".repeat(65)]).collect::<Vec<_>>(),
        })
        .to_string();
        let cut = parse_episodic(&long).unwrap();
        assert_eq!(cut.title.chars().count(), MAX_TITLE_CHARS);
        assert!(cut.title.ends_with('…'));
        assert_eq!(cut.body.chars().count(), MAX_BODY_CHARS);
        assert_eq!(cut.entity_anchors.len(), MAX_TERMS);
        assert!(
            cut.entity_anchors
                .iter()
                .all(|t| t.chars().count() <= MAX_TERM_CHARS)
        );
        assert!(parse_semantic("{\"memories\": []}").is_err());
        assert!(
            parse_semantic(
                "{\"memories\": [{\"title\": \"t\", \"content\": \"c\", \"facet\": \"mood\"}]}"
            )
            .is_err()
        );
        let m = parse_semantic(
            "{\"memories\": [{\"title\": \"t\", \"content\": \"c\", \"facet\": \"Preference\"}]}",
        )
        .unwrap();
        assert_eq!(m[0].facet.as_deref(), Some("preference"));
    }

    /// A model's answer is untrusted network input: whatever it is, parsing never panics, and
    /// an accepted answer respects every limit.
    fn check_answer(answer: &str) {
        if let Ok(d) = parse_episodic(answer) {
            assert!(!d.title.is_empty() && d.title.chars().count() <= MAX_TITLE_CHARS);
            assert!(!d.body.is_empty() && d.body.chars().count() <= MAX_BODY_CHARS);
            assert!(d.entity_anchors.len() <= MAX_TERMS && d.topic_terms.len() <= MAX_TERMS);
        }
        match parse_semantic(answer) {
            Ok(ms) => {
                assert!(!ms.is_empty() && ms.len() <= MAX_MEMORIES);
                for m in ms {
                    assert!(m.facet.as_deref().is_none_or(|f| FACETS.contains(&f)));
                    assert!(m.title.chars().count() <= MAX_TITLE_CHARS);
                }
            }
            Err(e) => assert!(matches!(e, Error::Llm(_)), "{e}"),
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_refused(answer in "\\PC{0,300}") {
            check_answer(&answer);
        }

        #[test]
        fn any_json_shape_parses_or_is_refused(
            title in proptest::option::of("\\PC{0,200}"),
            body in proptest::option::of("\\PC{0,50}"),
            terms in proptest::collection::vec("\\PC{0,80}", 0..40),
            facet in "[a-z]{0,12}",
            count in 0usize..20,
            numeric in proptest::bool::ANY,
        ) {
            let title = if numeric { serde_json::json!(42) } else { serde_json::json!(title) };
            let one = serde_json::json!({
                "title": title, "summary": body, "content": body, "facet": facet,
                "entity_anchors": terms, "topic_terms": terms,
            });
            check_answer(&one.to_string());
            check_answer(&serde_json::json!({"memories": vec![one; count]}).to_string());
        }
    }
}

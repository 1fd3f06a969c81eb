//! Capture at the end of a turn, before a compaction and at the end of a session (docs/hooks.md,
//! "Capture"): each finished exchange into the timeline (one turn, `coral:` + the prompt line's
//! id) and/or the memory pool (one memory, tagged with the session's project), per
//! `hooks.capture`. A capture already made is
//! found and left alone, so the three events may capture the same exchange in any order, any
//! number of times, and it is stored once.

use coral::timeline::{BeginTurn, CompleteTurn, EntryInput, Namespace, TimelineError, TurnStatus};
use coral::{CaptureTarget, Coral, InsertOptions};

use coral_mcp::recall::cut_bytes;

use super::transcript::Exchange;

/// Where captured turns go in the timeline: the default tenant, this client as the domain, the
/// session as the conversation.
pub fn namespace(client: &str, session_id: &str) -> Namespace {
    Namespace {
        domain_id: client.to_string(),
        ..Namespace::new(coral::timeline::DEFAULT_ID, session_id)
    }
}

/// Whose exchanges are captured.
pub struct Session<'a> {
    /// The client (the timeline's domain).
    pub client: &'a str,
    /// The client's session (the timeline's conversation).
    pub session_id: &'a str,
    /// The project captured memories are tagged with.
    pub project: Option<&'a str>,
}

/// What one capture did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Captured {
    /// Turns recorded in the timeline.
    pub turns: usize,
    /// Memories stored.
    pub memories: usize,
    /// Exchanges already captured before (left alone).
    pub already: usize,
    /// Exchanges without an answer yet (left for a later event).
    pub unanswered: usize,
}

/// Capture `exchanges` of `session` where `target` says.
pub fn capture(
    coral: &Coral,
    session: &Session,
    exchanges: &[Exchange],
    target: CaptureTarget,
    max_chars: usize,
) -> Result<Captured, String> {
    let mut done = Captured::default();
    let ns = namespace(session.client, session.session_id);
    let timeline = if target.timeline() {
        Some(coral.timeline().map_err(|e| format!("the timeline: {e}"))?)
    } else {
        None
    };
    for x in exchanges {
        if x.answer.trim().is_empty() {
            done.unanswered += 1;
            continue;
        }
        let mut new = false;
        if let Some(t) = &timeline {
            new |= capture_turn(t, &ns, x).map_err(|e| format!("the timeline: {e}"))?;
            if new {
                done.turns += 1;
            }
        }
        if target.memory() {
            let stored =
                capture_memory(coral, x, max_chars, session.project).map_err(|e| e.to_string())?;
            new |= stored;
            if stored {
                done.memories += 1;
            }
        }
        if !new {
            done.already += 1;
        }
    }
    Ok(done)
}

/// The turn id of an exchange: a prompt line's `uuid` is letters, digits and `-` already.
fn turn_id(x: &Exchange) -> String {
    let key: String = x
        .key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    format!("coral:{key}")
}

/// Record `x` as a completed turn unless it is one already; whether it was new.
fn capture_turn(
    t: &coral::timeline::Timeline,
    ns: &Namespace,
    x: &Exchange,
) -> Result<bool, TimelineError> {
    let id = turn_id(x);
    let now = coral::unix_now();
    match t.turn(ns, &id) {
        Ok(turn) if turn.status != TurnStatus::Open => return Ok(false),
        // Begun by a capture that stopped before completing it: complete it below.
        Ok(_) => {}
        Err(TimelineError::UnknownTurn(_)) => {
            let begin = BeginTurn {
                stimuli: vec![EntryInput {
                    timestamp: x.prompt_at,
                    ..EntryInput::user(cut_bytes(&x.prompt, TEXT_LIMIT))
                }],
                turn_id: Some(id.clone()),
                ..BeginTurn::default()
            };
            t.begin_turn(ns, &begin, now)?;
        }
        Err(e) => return Err(e),
    }
    let answer = CompleteTurn {
        // Never before the prompt: clocks of a transcript's lines can step back.
        timestamp: match (x.prompt_at, x.answer_at) {
            (Some(p), Some(a)) => Some(a.max(p)),
            (p, a) => a.or(p),
        },
        ..CompleteTurn::answer(cut_bytes(&x.answer, TEXT_LIMIT))
    };
    t.complete_turn(ns, &id, &answer, now)?;
    Ok(true)
}

/// The timeline's entry limit, with room for the markers redaction may add.
const TEXT_LIMIT: usize = 60_000;

/// Store `x` as one memory unless it is stored already; whether it was new.
fn capture_memory(
    coral: &Coral,
    x: &Exchange,
    max_chars: usize,
    project: Option<&str>,
) -> coral::Result<bool> {
    let (prompt, _) = coral::preview(&x.prompt, max_chars);
    let (answer, _) = coral::preview(&x.answer, max_chars);
    let text = format!("User: {prompt}\nAssistant: {answer}");
    // The id is that of the text as stored, secrets replaced.
    let stored = if coral.config().privacy.redact_secrets {
        coral::redact(&text).0.into_owned()
    } else {
        text.clone()
    };
    if coral.get(&coral::item_id(&stored))?.is_some() {
        return Ok(false);
    }
    let at = x.answer_at.or(x.prompt_at);
    Ok(coral
        .insert_with(
            &text,
            InsertOptions {
                timestamp: at.filter(|t| *t <= coral::unix_now()),
                project: project.map(String::from),
                ..InsertOptions::default()
            },
        )?
        .inserted())
}

//! Claude Code's hooks protocol (docs/hooks.md, "Claude Code"): the event's JSON payload on
//! stdin (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, and `prompt`, `source`,
//! `stop_hook_active`, `last_assistant_message`, `trigger` or `reason` by event), one JSON
//! object on stdout, exit 0.
//!
//! SessionStart and UserPromptSubmit answer `{"hookSpecificOutput": {"hookEventName",
//! "additionalContext"}}`, which Claude Code adds to the model's context; Stop, PreCompact and
//! SessionEnd capture and answer `{}`. Coral never blocks the client: it never answers
//! `"decision": "block"` or `"continue": false` and never exits 2 (which would block a prompt
//! or keep the model from stopping); every failure is `{}`, exit 0 and a line on stderr.

use std::io::Read;

use serde_json::{Value, json};

use super::payload::Payload;
use super::source::Source;
use super::{capture, snapshot, transcript};
use coral_mcp::recall::{self, Params};

/// The `domain_id` captured turns are recorded under in the timeline.
pub const CLIENT: &str = "claude-code";

/// The events `coral hook claude-code` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A session starts, resumes, is cleared or compacted: the snapshot.
    SessionStart,
    /// The user sent a prompt: the memories relevant to it.
    UserPromptSubmit,
    /// The model finished its answer: capture the exchange.
    Stop,
    /// The conversation is about to be compacted: capture every exchange.
    PreCompact,
    /// The session ends: capture every exchange.
    SessionEnd,
}

impl Event {
    /// Every event, in the order messages list them.
    pub const ALL: [Event; 5] = [
        Event::SessionStart,
        Event::UserPromptSubmit,
        Event::Stop,
        Event::PreCompact,
        Event::SessionEnd,
    ];

    /// Claude Code's name of the event.
    pub fn name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::PreCompact => "PreCompact",
            Event::SessionEnd => "SessionEnd",
        }
    }

    /// The event Claude Code calls `name`.
    pub fn parse(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// The answer to one hook call: the JSON for stdout and the notes for stderr.
#[derive(Debug)]
pub struct Answer {
    /// What stdout carries.
    pub output: Value,
    /// Failures and what was not kept, one line each (always said on stderr).
    pub notes: Vec<String>,
    /// What was done (said with `-v`).
    pub info: Vec<String>,
}

impl Answer {
    fn nothing(note: impl Into<String>) -> Answer {
        Answer {
            output: json!({}),
            notes: vec![note.into()],
            info: Vec::new(),
        }
    }

    fn output(output: Value) -> Answer {
        Answer {
            output,
            notes: Vec::new(),
            info: Vec::new(),
        }
    }
}

/// Answer `event` (Claude Code's name) with the payload read from `input`, reading the config
/// and opening the store through `source` only once the payload has been checked, and only as
/// far as the event needs.
pub fn answer(event: &str, input: impl Read, source: &mut Source) -> Answer {
    let Some(event) = Event::parse(event) else {
        let names: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
        return Answer::nothing(format!(
            "unknown Claude Code hook event {}; Coral answers {}",
            coral::echo(event),
            names.join(", ")
        ));
    };
    let payload = match Payload::read(input) {
        Ok(p) => p,
        Err(e) => return Answer::nothing(e),
    };
    match payload.str("hook_event_name") {
        Ok(Some(named)) if named != event.name() => {
            return Answer::nothing(format!(
                "the payload is for {} but the command answers {}: check the hook entry in \
                 Claude Code's settings (`coral setup claude-code` writes them)",
                coral::echo(named),
                event.name()
            ));
        }
        Err(e) => return Answer::nothing(e),
        _ => {}
    }
    let result = payload
        .str("cwd")
        .and_then(|cwd| source.project(cwd))
        .and_then(|project| match event {
            Event::SessionStart => session_start(source, project.as_deref()),
            Event::UserPromptSubmit => user_prompt(source, &payload, project),
            Event::Stop | Event::PreCompact | Event::SessionEnd => {
                capture_event(source, &payload, event, project.as_deref())
            }
        });
    if let Some(why) = source.opened().and_then(|c| c.unrecorded()) {
        // Read-only store or a full disk: the answer stands, the note says what was not kept.
        let mut answer = result.unwrap_or_else(Answer::nothing);
        answer.notes.push(why);
        return answer;
    }
    result.unwrap_or_else(Answer::nothing)
}

fn context(event: Event, text: String) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": event.name(), "additionalContext": text}})
}

fn session_start(source: &mut Source, project: Option<&str>) -> Result<Answer, String> {
    let coral = source.coral()?;
    let hooks = &coral.config().hooks;
    let text = snapshot::snapshot(coral, hooks, project).map_err(|e| e.to_string())?;
    Ok(Answer::output(text.map_or_else(
        || json!({}),
        |t| context(Event::SessionStart, t),
    )))
}

fn user_prompt(
    source: &mut Source,
    payload: &Payload,
    project: Option<String>,
) -> Result<Answer, String> {
    let prompt = payload.required_str("prompt")?;
    let hooks = source.config()?.hooks.clone();
    let params = Params {
        project,
        ..Params::from_hooks(&hooks)
    };
    let recalled = source.recall(prompt, &params)?;
    let text = recall::render(&recalled, hooks.recall_max_tokens);
    Ok(Answer::output(text.map_or_else(
        || json!({}),
        |t| context(Event::UserPromptSubmit, t),
    )))
}

fn capture_event(
    source: &mut Source,
    payload: &Payload,
    event: Event,
    project: Option<&str>,
) -> Result<Answer, String> {
    let session = payload.required_str("session_id")?;
    let coral = source.coral()?;
    let target = coral.config().hooks.capture_target();
    let mut notes = Vec::new();
    let mut exchanges = match payload.str("transcript_path")? {
        Some(path) => {
            let t = transcript::read(std::path::Path::new(path))?;
            if t.skipped_lines > 0 {
                notes.push(format!(
                    "{} line(s) of the transcript were not JSON and were skipped",
                    t.skipped_lines
                ));
            }
            if t.truncated {
                notes.push(format!(
                    "the transcript is over {} bytes; only its start was read",
                    transcript::MAX_TRANSCRIPT_BYTES
                ));
            }
            t.exchanges
        }
        None => Vec::new(),
    };
    if event == Event::Stop {
        // The turn that just ended; the others were captured by their own Stop (or will be by
        // PreCompact and SessionEnd).
        let last = exchanges.pop();
        exchanges = last.into_iter().collect();
        // Newer Claude Code versions give the final answer in the payload, written before the
        // transcript's last line may be.
        if let (Some(x), Some(answer)) =
            (exchanges.last_mut(), payload.str("last_assistant_message")?)
            && !answer.trim().is_empty()
        {
            x.answer = answer.to_string();
        }
    }
    let max_chars = coral.config().hooks.capture_max_chars;
    let done = capture::capture(
        coral,
        &capture::Session {
            client: CLIENT,
            session_id: session,
            project,
        },
        &exchanges,
        target,
        max_chars,
    )?;
    let info = vec![format!(
        "{}: captured {} turn(s) and {} memorie(s) ({}), {} already captured, {} without an \
         answer yet",
        event.name(),
        done.turns,
        done.memories,
        target.as_str(),
        done.already,
        done.unanswered
    )];
    Ok(Answer {
        output: json!({}),
        notes,
        info,
    })
}

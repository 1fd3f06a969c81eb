//! The operator's dispatch policy for the model's read tools (docs/timeline.md, "Dispatch
//! policy", after MemCore's `ToolDispatchPolicy`): which kinds of raw entries they may return,
//! and the explicit-trace rule, under which tool calls, results and events are retrieved only
//! when a call names their kinds.
//!
//! The policy is the operator's, never the caller's: a call's `kind_patterns` may narrow what
//! it allows, never widen it. Summaries (`memory.*`) are the timeline's own memory and always
//! allowed; an entry of a kind outside the allowed prefixes is withheld wherever a read would
//! show it (its text replaced, `withheld: true`).

use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid};

/// What a withheld entry shows.
pub const WITHHELD_TEXT: &str = "[withheld by this server's policy 已按策略隐藏]";

/// The operator's rules for `open_memory`, `read_timeline` and `retrieve_for_turn`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DispatchPolicy {
    /// Kind prefixes of the raw entries the read tools may return (`message.`,
    /// `tool.web_search.`); empty allows every kind.
    pub allowed_kind_prefixes: Vec<String>,
    /// Tool calls, results and events (every kind but `message.*`) are retrieved only when the
    /// call's `kind_patterns` name them.
    pub explicit_trace: bool,
}

/// Most prefixes a policy holds.
const MAX_PREFIXES: usize = 64;

impl DispatchPolicy {
    /// Refuse prefixes that are not kinds' beginnings (lower-case letters, digits, `.`, `_`,
    /// `-`; at most 64 characters, at most 64 of them), naming the bad one.
    pub fn validate(&self) -> Result<()> {
        if self.allowed_kind_prefixes.len() > MAX_PREFIXES {
            return invalid(format!(
                "allowed_kind_prefixes has {} prefixes; at most {MAX_PREFIXES}",
                self.allowed_kind_prefixes.len()
            ));
        }
        for p in &self.allowed_kind_prefixes {
            let ok = !p.is_empty()
                && p.len() <= 64
                && p.chars().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
                });
            if !ok {
                return invalid(format!(
                    "allowed_kind_prefixes entry {p:?} is not the start of a kind: use lower-case \
                     letters, digits, '.', '_' or '-', such as \"message.\" or \"tool.web_search.\""
                ));
            }
        }
        Ok(())
    }

    /// Whether a read may return a raw entry of `kind`.
    pub(crate) fn allows(&self, kind: &str) -> bool {
        self.allowed_kind_prefixes.is_empty()
            || kind.starts_with("memory.")
            || self
                .allowed_kind_prefixes
                .iter()
                .any(|p| kind.starts_with(p.as_str()))
    }

    /// Whether `kind` is a trace: a tool call or result, an event, anything but a message or
    /// a summary.
    pub(crate) fn is_trace(kind: &str) -> bool {
        !kind.starts_with("message.") && !kind.starts_with("memory.")
    }

    /// A call's kind patterns, refused when one reaches kinds the policy does not allow.
    pub(crate) fn check_patterns(&self, patterns: &[String]) -> Result<(), String> {
        if self.allowed_kind_prefixes.is_empty() {
            return Ok(());
        }
        for p in patterns {
            let bare = p.strip_suffix('*').unwrap_or(p);
            let inside = bare.starts_with("memory.")
                || self
                    .allowed_kind_prefixes
                    .iter()
                    .any(|a| bare.starts_with(a.as_str()));
            if !inside {
                return Err(format!(
                    "kind pattern {p:?} reaches beyond the kinds this server allows ({}): \
                     narrow it to one of them",
                    self.allowed_kind_prefixes.join(", ")
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(prefixes: &[&str]) -> DispatchPolicy {
        DispatchPolicy {
            allowed_kind_prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
            explicit_trace: false,
        }
    }

    #[test]
    fn prefixes_allow_and_patterns_only_narrow() {
        let p = policy(&["message.", "tool.web_search."]);
        assert!(p.allows("message.user") && p.allows("tool.web_search.result"));
        assert!(p.allows("memory.episodic"));
        assert!(!p.allows("tool.shell.result") && !p.allows("event.reminder"));
        assert!(policy(&[]).allows("tool.shell.result"));
        assert!(p.check_patterns(&["tool.web_search.*".into()]).is_ok());
        assert!(p.check_patterns(&["memory.*".into()]).is_ok());
        let e = p.check_patterns(&["tool.*".into()]).unwrap_err();
        assert!(
            e.contains("tool.*") && e.contains("tool.web_search."),
            "{e}"
        );
        assert!(DispatchPolicy::is_trace("tool.shell.call"));
        assert!(DispatchPolicy::is_trace("event.reminder"));
        assert!(!DispatchPolicy::is_trace("message.assistant"));
    }

    #[test]
    fn bad_prefixes_are_named() {
        let e = policy(&["Tool.*"]).validate().unwrap_err().to_string();
        assert!(e.contains("\"Tool.*\""), "{e}");
        assert!(policy(&[""]).validate().is_err());
        assert!(policy(&["message.", "tool.web-search."]).validate().is_ok());
    }
}

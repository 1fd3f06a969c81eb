//! Which timeline namespaces a registry answers for (docs/timeline.md, "Pinned namespaces"):
//! one pinned namespace, so that no tool argument reaches another, or every namespace the
//! caller names (an explicit opt-in of the operator).
//!
//! The pin is applied before a tool runs: each namespace argument the tool declares is set to
//! the pinned value, and a call that names another value is refused, so a handler never sees a
//! namespace the server was not started for. With a pinned conversation, `cross_conversation`
//! is refused too. Tools without namespace arguments (the memory pool's, the threads') are not
//! touched: they belong to the data directory, whoever runs the server.

use std::borrow::Cow;
use std::fmt;

use coral::timeline::{DEFAULT_ID, Namespace};
use serde_json::{Map, Value};

use super::{ToolDef, ToolError};

/// The namespace a server is started for: a hard key (tenant, user, domain) and, optionally,
/// one conversation of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    tenant_id: String,
    user_id: String,
    domain_id: String,
    conversation_id: Option<String>,
}

impl Pin {
    /// A pin; each part is checked like a namespace id (non-empty, at most 128 characters, no
    /// control characters).
    pub fn new(
        tenant_id: &str,
        user_id: &str,
        domain_id: &str,
        conversation_id: Option<&str>,
    ) -> Result<Pin, String> {
        let ns = Namespace {
            tenant_id: tenant_id.to_string(),
            user_id: user_id.to_string(),
            domain_id: domain_id.to_string(),
            conversation_id: conversation_id.unwrap_or(DEFAULT_ID).to_string(),
            actor: None,
        };
        ns.validate()
            .map_err(|e| format!("pinned namespace: {e}"))?;
        Ok(Pin {
            tenant_id: ns.tenant_id,
            user_id: ns.user_id,
            domain_id: ns.domain_id,
            conversation_id: conversation_id.map(String::from),
        })
    }

    /// Tenant, user and domain `"default"`, any conversation: what a server serves when its
    /// operator names nothing.
    pub fn default_user() -> Pin {
        Pin {
            tenant_id: DEFAULT_ID.into(),
            user_id: DEFAULT_ID.into(),
            domain_id: DEFAULT_ID.into(),
            conversation_id: None,
        }
    }

    /// The pinned value of a namespace argument (`None`: not pinned, the conversation only).
    fn value(&self, part: &str) -> Option<&str> {
        match part {
            "tenant_id" => Some(&self.tenant_id),
            "user_id" => Some(&self.user_id),
            "domain_id" => Some(&self.domain_id),
            "conversation_id" => self.conversation_id.as_deref(),
            _ => None,
        }
    }

    /// The pinned user.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tenant {}, user {}, domain {}",
            coral::echo(&self.tenant_id),
            coral::echo(&self.user_id),
            coral::echo(&self.domain_id)
        )?;
        match &self.conversation_id {
            Some(c) => write!(f, ", conversation {}", coral::echo(c)),
            None => write!(f, " (any of its conversations)"),
        }
    }
}

/// What a registry answers for.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Scope {
    /// Every namespace a call names (the Rust API's registry; a server only by the operator's
    /// explicit opt-in, since any caller then reads any user's timeline).
    #[default]
    Any,
    /// One namespace: calls naming another are refused.
    Pinned(Pin),
}

/// The namespace arguments, in the order the tools declare them.
const PARTS: [&str; 4] = ["tenant_id", "user_id", "domain_id", "conversation_id"];

impl Scope {
    /// Whether this scope serves more than one namespace.
    pub fn is_any(&self) -> bool {
        matches!(self, Scope::Any)
    }

    /// `args` of a call to `tool` with the pin applied: every namespace argument the tool
    /// declares set to the pinned value. A call naming another value, or widening past a
    /// pinned conversation, is refused; arguments of the wrong type are left for the tool's
    /// own validation to refuse.
    pub(super) fn apply<'a>(
        &self,
        tool: &ToolDef,
        args: &'a Value,
    ) -> Result<Cow<'a, Value>, ToolError> {
        let Scope::Pinned(pin) = self else {
            return Ok(Cow::Borrowed(args));
        };
        let declares = |name: &str| tool.args.iter().any(|a| a.name == name);
        if !PARTS.iter().any(|p| declares(p)) {
            return Ok(Cow::Borrowed(args));
        }
        let mut map = match args {
            Value::Object(m) => m.clone(),
            Value::Null => Map::new(),
            _ => return Ok(Cow::Borrowed(args)),
        };
        for part in PARTS.iter().filter(|p| declares(p)) {
            let Some(pinned) = pin.value(part) else {
                continue;
            };
            match map.get(*part) {
                Some(Value::String(given)) if given != pinned => {
                    return Err(outside(tool.name, part, given, pin));
                }
                Some(v) if !(v.is_string() || v.is_null()) => continue,
                _ => {
                    map.insert((*part).to_string(), Value::String(pinned.to_string()));
                }
            }
        }
        if pin.conversation_id.is_some()
            && declares("cross_conversation")
            && map.get("cross_conversation") == Some(&Value::Bool(true))
        {
            return Err(ToolError::InvalidArguments(format!(
                "{}: cross_conversation is refused: this server serves only {pin}; nothing was \
                 read or written",
                tool.name
            )));
        }
        Ok(Cow::Owned(Value::Object(map)))
    }
}

fn outside(tool: &str, part: &str, given: &str, pin: &Pin) -> ToolError {
    ToolError::InvalidArguments(format!(
        "{tool}: {part} {} is outside this server's namespace: it serves only {pin} (chosen \
         when it was started); nothing was read or written",
        coral::echo(given)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ToolDef {
        super::super::tools()
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .unwrap()
    }

    #[test]
    fn a_pin_fills_in_and_refuses_other_namespaces() {
        let pin = Pin::new("t", "alice", "d", None).unwrap();
        let scope = Scope::Pinned(pin);
        let read = tool("read_timeline");
        let filled = scope
            .apply(&read, &json!({"date_from": "2026-04-10"}))
            .unwrap()
            .into_owned();
        assert_eq!(filled["user_id"], "alice");
        assert_eq!(filled["tenant_id"], "t");
        assert_eq!(filled["domain_id"], "d");
        // The conversation is free when not pinned.
        assert!(filled.get("conversation_id").is_none());
        let same = scope
            .apply(&read, &json!({"user_id": "alice"}))
            .unwrap()
            .into_owned();
        assert_eq!(same["user_id"], "alice");
        for (part, value) in [("user_id", "bob"), ("tenant_id", "x"), ("domain_id", "y")] {
            let e = scope
                .apply(&read, &json!({ part: value }))
                .unwrap_err()
                .to_string();
            assert!(e.contains("outside this server's namespace"), "{e}");
            assert!(e.contains(value), "{e}");
        }
        // Tools without a namespace are untouched.
        let insert = tool("memory_insert");
        let args = json!({"content": "x"});
        assert_eq!(*scope.apply(&insert, &args).unwrap(), args);
    }

    #[test]
    fn a_pinned_conversation_refuses_widening() {
        let scope = Scope::Pinned(Pin::new("default", "alice", "default", Some("c1")).unwrap());
        let open = tool("open_memory");
        let filled = scope
            .apply(&open, &json!({"memory_id": "m"}))
            .unwrap()
            .into_owned();
        assert_eq!(filled["conversation_id"], "c1");
        let e = scope
            .apply(
                &open,
                &json!({"memory_id": "m", "cross_conversation": true}),
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("cross_conversation is refused"), "{e}");
        assert!(
            scope
                .apply(&open, &json!({"memory_id": "m", "conversation_id": "c2"}))
                .is_err()
        );
    }

    #[test]
    fn pins_are_checked_like_namespaces() {
        assert!(Pin::new("t", "", "d", None).is_err());
        assert!(Pin::new("t", "u\n", "d", None).is_err());
        assert!(Pin::new("t", "u", "d", Some("")).is_err());
        assert!(Pin::new("租户", "用户", "d", Some("会话")).is_ok());
    }
}

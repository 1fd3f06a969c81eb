//! Namespaces: the hard key every query is confined to, the conversation and the soft actor.

use crate::error::{Result, invalid};

/// Longest id accepted (tenant, user, domain, conversation, actor, source, turn, correlation).
pub const MAX_ID_CHARS: usize = 128;

/// Who and where an entry belongs to.
///
/// `(tenant_id, user_id, domain_id)` is the hard key: no read or write ever crosses it.
/// `conversation_id` is the default read scope (reads may widen to every conversation of the
/// hard key on request). `actor` is a soft tag, stored on entries and never used to isolate.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Namespace {
    /// Tenant (an organisation or deployment).
    pub tenant_id: String,
    /// User whose memory this is.
    pub user_id: String,
    /// Domain (an app or product area).
    pub domain_id: String,
    /// Conversation (chat) within the hard key.
    pub conversation_id: String,
    /// Who is speaking or acting, in a group chat; a tag only.
    pub actor: Option<String>,
}

/// The value used for any id a caller leaves out.
pub const DEFAULT_ID: &str = "default";

impl Default for Namespace {
    fn default() -> Self {
        Namespace::new(DEFAULT_ID, DEFAULT_ID)
    }
}

impl Namespace {
    /// A namespace in the default tenant and domain.
    pub fn new(user_id: impl Into<String>, conversation_id: impl Into<String>) -> Namespace {
        Namespace {
            tenant_id: DEFAULT_ID.into(),
            user_id: user_id.into(),
            domain_id: DEFAULT_ID.into(),
            conversation_id: conversation_id.into(),
            actor: None,
        }
    }

    /// The same namespace in another tenant.
    pub fn tenant(mut self, tenant_id: impl Into<String>) -> Namespace {
        self.tenant_id = tenant_id.into();
        self
    }

    /// The same namespace in another domain.
    pub fn domain(mut self, domain_id: impl Into<String>) -> Namespace {
        self.domain_id = domain_id.into();
        self
    }

    /// The same namespace with an actor tag.
    pub fn actor(mut self, actor: impl Into<String>) -> Namespace {
        self.actor = Some(actor.into());
        self
    }

    /// The same hard key, another conversation.
    pub fn conversation(&self, conversation_id: impl Into<String>) -> Namespace {
        Namespace {
            conversation_id: conversation_id.into(),
            ..self.clone()
        }
    }

    /// Check every part (non-empty, at most [`MAX_ID_CHARS`], no control characters).
    pub fn validate(&self) -> Result<()> {
        check_name("tenant_id", &self.tenant_id)?;
        check_name("user_id", &self.user_id)?;
        check_name("domain_id", &self.domain_id)?;
        check_name("conversation_id", &self.conversation_id)?;
        if let Some(a) = &self.actor {
            check_name("actor", a)?;
        }
        Ok(())
    }

    /// The hard key as one unambiguous string: a JSON array of the three parts. Every table
    /// carries it and every query filters on it.
    pub(crate) fn hard_key(&self) -> String {
        serde_json::to_string(&[&self.tenant_id, &self.user_id, &self.domain_id])
            .unwrap_or_default()
    }
}

/// A namespace part: free text without control characters, 1..=128 characters.
pub(crate) fn check_name(what: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() {
        return invalid(format!("{what} is empty; give a non-empty id"));
    }
    if value.chars().count() > MAX_ID_CHARS {
        return invalid(format!("{what} is longer than {MAX_ID_CHARS} characters"));
    }
    if value.chars().any(char::is_control) {
        return invalid(format!("{what} {value:?} contains control characters"));
    }
    Ok(())
}

/// An entry, turn or correlation id: 1..=128 of `A-Z a-z 0-9 . _ : -`, so it can be quoted in
/// a reload card and typed back by a model without escaping.
pub(crate) fn check_id(what: &str, value: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
    if value.len() > MAX_ID_CHARS {
        // Not echoed: it may be megabytes.
        return invalid(format!(
            "{what} is {} bytes, not a valid id: use 1 to {MAX_ID_CHARS} letters, digits, \
             '.', '_', ':' or '-'",
            value.len()
        ));
    }
    if value.is_empty() || !value.chars().all(ok_char) {
        return invalid(format!(
            "{what} {value:?} is not a valid id: use 1 to {MAX_ID_CHARS} letters, digits, \
             '.', '_', ':' or '-'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_key_is_unambiguous() {
        let a = Namespace::new("u\",\"x", "c").tenant("t");
        let b = Namespace::new("x", "c").tenant("t\",\"u");
        assert_ne!(a.hard_key(), b.hard_key());
        assert_eq!(
            Namespace::new("u", "c1").hard_key(),
            Namespace::new("u", "c2").hard_key()
        );
    }

    #[test]
    fn names_and_ids_are_checked() {
        assert!(Namespace::new("", "c").validate().is_err());
        assert!(Namespace::new("u", "c\n").validate().is_err());
        assert!(Namespace::new("用户", "会话 1").validate().is_ok());
        assert!(check_id("source_id", "obs-1").is_ok());
        assert!(check_id("source_id", "call_01:a.b").is_ok());
        assert!(check_id("source_id", "has space").is_err());
        assert!(check_id("source_id", "").is_err());
        assert!(check_id("source_id", &"x".repeat(129)).is_err());
    }
}

//! `timeline_conversations` (HTTP only, for the host and the dashboard): the conversations of
//! one tenant / user / domain with their counts, times, summaries and compactions.

use serde_json::{Value, json};

use super::answer::{open, write_error};
use super::args::{DOMAIN, TENANT, USER, namespace};
use crate::tools::{Args, Handler, ToolDef, ToolError};
use coral::Coral;

pub(super) static TOOLS: &[ToolDef] = &[ToolDef {
    name: "timeline_conversations",
    description: "Host: the conversations of this tenant, user and domain, most recently active \
                  first: entries, turns by status, summaries per layer, compactions and roll-ups \
                  (each changes the context's start), first and last times. \
                  宿主：列出该用户的会话及其条目、轮次、摘要与压缩次数。",
    args: &[TENANT, USER, DOMAIN],
    handler: Handler::Fn(conversations),
    http_only: true,
}];

fn conversations(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let list = open(coral)?
        .conversations(&namespace(args))
        .map_err(write_error)?;
    Ok(json!({"ok": true, "count": list.len(), "conversations": list}))
}

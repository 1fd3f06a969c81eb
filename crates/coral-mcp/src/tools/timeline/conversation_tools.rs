//! `timeline_conversations` (HTTP only, for the host and the dashboard): the conversations of
//! one tenant / user / domain with their counts, times, summaries and compactions.

use serde_json::{Value, json};

use super::answer::{ok_in, open, write_error};
use super::args::{DOMAIN, REPLY_ZONE, TENANT, USER, namespace, reply_zone};
use crate::tools::{Args, Handler, ToolDef, ToolError};
use coral::Coral;

pub(super) static TOOLS: &[ToolDef] = &[ToolDef {
    name: "timeline_conversations",
    description: "Host: the conversations of this tenant, user and domain, most recently active \
                  first: entries, turns by status, summaries per layer, compactions and roll-ups \
                  (each changes the context's start), first and last times (Unix seconds, and \
                  minute labels in `timezone`). \
                  宿主：列出该用户的会话及其条目、轮次、摘要与压缩次数。",
    args: &[REPLY_ZONE, TENANT, USER, DOMAIN],
    handler: Handler::Fn(conversations),
    http_only: true,
}];

fn conversations(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let zone = reply_zone(&coral.timeline_config(), args)?;
    let tz = coral::timeline::parse_zone(&zone)
        .map_err(|m| ToolError::InvalidArguments(format!("invalid_input: {m}")))?;
    let list = open(coral)?
        .conversations(&namespace(args))
        .map_err(write_error)?;
    let label = |at: Option<f64>| at.map(|ts| coral::timeline::minute_label(ts, tz));
    let rows: Vec<Value> = list
        .iter()
        .map(|c| {
            let mut row = json!(c);
            if let Some(map) = row.as_object_mut() {
                map.insert("first_local".into(), json!(label(c.first_at)));
                map.insert("last_local".into(), json!(label(c.last_at)));
            }
            row
        })
        .collect();
    ok_in(json!({"count": rows.len(), "conversations": rows}), &zone)
}

//! The host's layer tools (HTTP only): `timeline_context` and `timeline_compact`.

use coral::Coral;
use coral::timeline::ContextRequest;
use serde_json::Value;

use super::answer::{ok, ok_in, open, write_error};
use super::args::{CONVERSATION, DOMAIN, TENANT, TIMEZONE, USER, namespace, reply_zone, zone};
use crate::tools::{Args, Handler, ToolDef, ToolError};

pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "timeline_context",
        description: "Host: the conversation's memory context (semantic memories, episodic \
                      summaries, raw turns with date headers) to put before the current \
                      turn. Its prefix stays byte-identical between compactions. \
                      宿主：获取可放在当前轮之前的记忆上下文。",
        args: &[TIMEZONE, TENANT, USER, DOMAIN, CONVERSATION],
        handler: Handler::Fn(context),
        http_only: true,
    },
    ToolDef {
        name: "timeline_compact",
        description: "Host: summarise what is due (raw turns past the token trigger, summaries \
                      past the roll-up count) with the configured LLM. Nothing due does \
                      nothing; a failure writes nothing. 宿主：执行到期的分层压缩。",
        args: &[TIMEZONE, TENANT, USER, DOMAIN, CONVERSATION],
        handler: Handler::Fn(compact),
        http_only: true,
    },
];

fn context(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let ctx = open(coral)?
        .context(
            &namespace(args),
            &ContextRequest {
                timezone: zone(&config, args),
                settings: config.timeline.layer_settings(),
            },
        )
        .map_err(write_error)?;
    ok(ctx)
}

fn compact(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let report = coral
        .timeline_compact(
            &namespace(args),
            &config.timeline.layer_settings(),
            Some(&zone),
        )
        .map_err(write_error)?;
    ok_in(report, &zone)
}

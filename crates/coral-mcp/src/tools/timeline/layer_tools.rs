//! The host's layer tools (HTTP only): `timeline_context`, `timeline_surface` (the context and
//! the open turns as the messages to send) and `timeline_compact`.

use coral::Coral;
use coral::timeline::{ContextRequest, ContextRole, HistoryFormat, SurfaceRequest};
use serde_json::Value;

use super::answer::{ok, ok_in, open, write_error};
use super::args::{
    CONVERSATION, DOMAIN, TENANT, TIMEZONE, USER, namespace, reply_zone, text_arg, zone,
};
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
        name: "timeline_surface",
        description: "Host: everything the model should see, as provider messages to send \
                      after your system prompt: the memory context (summaries, the settled \
                      recent turns with reload cards) then the open turn (the current input \
                      and its tool round, in full). Byte-identical between compactions but for \
                      what was added at the end. 宿主：一次取得模型可见的全部消息（记忆上下文 + 当前开放轮）。",
        args: &[
            text_arg(
                "format",
                false,
                "openai (default) or plain / 消息格式，默认 openai",
            ),
            text_arg(
                "context_role",
                false,
                "role of the context message: user (default) or system / 上下文消息的角色",
            ),
            TIMEZONE,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
        ],
        handler: Handler::Fn(surface),
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

fn surface(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let invalid = |m: String| ToolError::InvalidArguments(format!("invalid_input: {m}"));
    let format = HistoryFormat::parse(args.str("format").unwrap_or("openai")).map_err(invalid)?;
    let context_role =
        ContextRole::parse(args.str("context_role").unwrap_or("user")).map_err(invalid)?;
    let surface = open(coral)?
        .surface(
            &namespace(args),
            &SurfaceRequest {
                format,
                timezone: zone(&config, args),
                settings: config.timeline.layer_settings(),
                context_role,
            },
        )
        .map_err(write_error)?;
    ok(surface)
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

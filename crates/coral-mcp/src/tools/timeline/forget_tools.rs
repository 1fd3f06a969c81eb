//! The host's forgetting tools (HTTP only; on MCP only when the operator allows it with
//! `coral mcp --allow-forget` or `timeline.policy.forget_over_mcp`): `timeline_forget` and
//! `timeline_forgotten`, its content-free record (docs/timeline.md, "Forgetting").

use coral::timeline::{ForgetFilter, ForgetRequest, ForgetTarget};
use coral::{Coral, unix_now};
use serde_json::{Value, json};

use super::answer::{ok_in, open, write_error};
use super::args::*;
use crate::tools::{Arg, Args, DefaultValue, Handler, Kind, ToolDef, ToolError};

pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "timeline_forget",
        description: "Host: forget on purpose (a privacy request, a pasted secret): one entry \
                      (entry_id), one closed turn (turn_id), one summary or semantic memory \
                      (memory_id), or every entry of the conversation within start_at/end_at, \
                      of kinds, or by actor (or whole_conversation). The text leaves the \
                      database file; summaries made from it are marked stale (or forgotten \
                      too with cascade); a content-free record is kept. \
                      定向遗忘：删除条目、轮次、摘要或按时间/类型/说话者匹配的内容，正文从文件中物理删除。",
        args: &[
            text_arg(
                "entry_id",
                false,
                "one entry's source_id (its turn keeps a tombstone) / 条目 id",
            ),
            text_arg("turn_id", false, "one closed turn, whole / 轮次 id"),
            text_arg(
                "memory_id",
                false,
                "a summary or semantic memory (with its older versions) / 摘要 id",
            ),
            text_arg(
                "start_at",
                false,
                "filter: from, inclusive: local \"2026-04-10 08:00\" or RFC 3339 / 起点",
            ),
            text_arg("end_at", false, "filter: until, exclusive / 终点"),
            strings_arg(
                "kinds",
                "filter: entry kinds, exact or ending in * (tool.*) / 条目类型",
            ),
            text_arg(
                "actor",
                false,
                "filter: entries said by this actor / 说话者",
            ),
            Arg {
                name: "whole_conversation",
                kind: Kind::Boolean,
                required: false,
                description: "filter: every entry of the conversation / 整个会话",
                default: Some(DefaultValue::Bool(false)),
            },
            Arg {
                name: "cascade",
                kind: Kind::Boolean,
                required: false,
                description: "also forget the summaries made from it (default: mark them \
                              stale) / 同时删除由其生成的摘要",
                default: Some(DefaultValue::Bool(false)),
            },
            text_arg(
                "reason",
                false,
                "a label for the record, e.g. privacy_request (letters, digits, . _ : -) / 原因标签",
            ),
            Arg {
                name: "cross_conversation",
                kind: Kind::Boolean,
                required: false,
                description: "ids: look in every conversation of the user (default true \
                              unless conversation_id is given); a filter: apply it to every \
                              conversation of the user (default false) / 跨会话",
                default: None,
            },
            REPLY_ZONE,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
        ],
        handler: Handler::Fn(forget),
        http_only: true,
    },
    ToolDef {
        name: "timeline_forgotten",
        description: "Host: the record of what was forgotten in this user's timeline (ids, \
                      ranges, kinds, counts; never any text). 遗忘记录（不含任何正文）。",
        args: &[REPLY_ZONE, TENANT, USER, DOMAIN],
        handler: Handler::Fn(forgotten),
        http_only: true,
    },
];

fn invalid(message: &str) -> ToolError {
    ToolError::InvalidArguments(format!("invalid_input: timeline_forget: {message}"))
}

fn forget(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let filter = ForgetFilter {
        start_at: args.str("start_at").map(String::from),
        end_at: args.str("end_at").map(String::from),
        kinds: strings(args, "kinds"),
        actor: args.str("actor").map(String::from),
        whole_conversation: args.bool("whole_conversation").unwrap_or(false),
    };
    let filtering = filter != ForgetFilter::default();
    let ids = [
        args.str("entry_id")
            .map(|id| ForgetTarget::Entry(id.into())),
        args.str("turn_id").map(|id| ForgetTarget::Turn(id.into())),
        args.str("memory_id")
            .map(|id| ForgetTarget::Summary(id.into())),
    ];
    let mut targets: Vec<ForgetTarget> = ids.into_iter().flatten().collect();
    if filtering {
        targets.push(ForgetTarget::Matching(filter));
    }
    let target = match targets.len() {
        1 => targets.remove(0),
        0 => {
            return Err(invalid(
                "give what to forget: entry_id, turn_id, memory_id, or a filter (start_at / \
                 end_at, kinds, actor, whole_conversation); nothing was forgotten",
            ));
        }
        _ => {
            return Err(invalid(
                "entry_id, turn_id, memory_id and a filter are separate ways to forget: give \
                 one; nothing was forgotten",
            ));
        }
    };
    let by_id = !matches!(target, ForgetTarget::Matching(_));
    let request = ForgetRequest {
        target,
        cascade: args.bool("cascade").unwrap_or(false),
        // An id is unique within the user's namespace, as for open_memory; a filter covers the
        // conversation unless the call asks for every one of the user's.
        cross_conversation: match by_id {
            true => args
                .bool("cross_conversation")
                .unwrap_or(args.str("conversation_id").is_none()),
            false => args.bool("cross_conversation").unwrap_or(false),
        },
        reason: args.str("reason").map(String::from),
        timezone: Some(zone.clone()),
    };
    let report = open(coral)?
        .forget(&namespace(args), &request, unix_now())
        .map_err(write_error)?;
    ok_in(report, &zone)
}

fn forgotten(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let zone = reply_zone(&coral.timeline_config(), args)?;
    let records = open(coral)?
        .forgotten(&namespace(args))
        .map_err(write_error)?;
    ok_in(json!({"records": records}), &zone)
}

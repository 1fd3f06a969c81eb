//! The host's write tools (HTTP only: a model never begins or completes its own turns): turns,
//! tool calls and results, standalone entries, and the turn, history, metrics and recovery
//! views. They fail with a message that starts with a code (`invalid_input:`,
//! `unknown_turn:`, `turn_closed:`, `pending_actions:`, `conflict:`) and change nothing.

use coral::timeline::{
    BeginTurn, CompleteTurn, EntryInput, HistoryFormat, Origin, Policy, ToolExchange,
};
use coral::{Coral, unix_now};
use serde_json::{Value, json};

use super::answer::{ok, ok_in, open, write_error};
use super::args::*;
use crate::tools::{Arg, Args, Handler, Kind, ToolDef, ToolError};

pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "timeline_begin_turn",
        description: "Host: begin a turn with the user's message; returns the turn_id the \
                      other timeline calls name. Long tool results fold into reload cards when \
                      the turn completes (policy compact_after_terminal, the default). \
                      开始一轮（传入用户消息），返回 turn_id。",
        args: &[
            text_arg("text", true, "the user's message / 用户消息"),
            text_arg(
                "kind",
                false,
                "entry kind, default message.user / 条目类型，默认 message.user",
            ),
            SOURCE_ID,
            text_arg(
                "turn_id",
                false,
                "your id for the turn, makes retries safe / 自定义轮次 id（重试安全）",
            ),
            PAYLOAD,
            TIMESTAMP,
            text_arg(
                "policy",
                false,
                "compact_after_terminal (default) or full / 结算策略",
            ),
            text_arg(
                "timezone",
                false,
                "IANA zone for the time line of this turn's cards / 卡片时间所用时区",
            ),
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            ACTOR,
        ],
        handler: Handler::Fn(begin_turn),
        http_only: true,
    },
    ToolDef {
        name: "timeline_record_tool",
        description: "Host: record a tool call and its result in an open turn, both at once; \
                      the result text is what the model saw. 记录一次工具调用及其结果。",
        args: &[
            TURN_ID,
            text_arg(
                "tool_name",
                true,
                "tool name: letters, digits, _ or - / 工具名",
            ),
            text_arg("call_id", true, "the model's tool call id / 工具调用 id"),
            Arg {
                name: "input",
                kind: Kind::Object(&[]),
                required: false,
                description: "the call's arguments, default {} / 调用参数",
                default: None,
            },
            text_arg("result", true, "the result body, exactly / 工具结果原文"),
            text_arg(
                "status",
                false,
                "success (default), error, timeout... / 结果状态",
            ),
            text_arg(
                "call_source_id",
                false,
                "your id for the call entry / 调用条目 id",
            ),
            text_arg(
                "result_source_id",
                false,
                "your id for the result entry / 结果条目 id",
            ),
            TIMESTAMP,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(record_tool),
        http_only: true,
    },
    ToolDef {
        name: "timeline_append_action",
        description: "Host: record a tool call before its result is known (kind \
                      tool.<tool_name>.call). 记录尚未返回结果的工具调用。",
        args: &[
            TURN_ID,
            text_arg("tool_name", true, "tool name / 工具名"),
            text_arg("call_id", true, "the model's tool call id / 工具调用 id"),
            Arg {
                name: "arguments",
                kind: Kind::Object(&[]),
                required: false,
                description: "the call's arguments, default {} / 调用参数",
                default: None,
            },
            SOURCE_ID,
            TIMESTAMP,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(append_action),
        http_only: true,
    },
    ToolDef {
        name: "timeline_append_observation",
        description: "Host: record the result of an earlier call of the same turn (kind \
                      tool.<tool_name>.result). 记录先前工具调用的结果。",
        args: &[
            TURN_ID,
            text_arg("tool_name", true, "tool name / 工具名"),
            text_arg("call_id", true, "the call this answers / 对应的调用 id"),
            text_arg("result", true, "the result body, exactly / 工具结果原文"),
            text_arg("status", false, "success (default), error... / 结果状态"),
            SOURCE_ID,
            TIMESTAMP,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(append_observation),
        http_only: true,
    },
    ToolDef {
        name: "timeline_complete_turn",
        description: "Host: close a turn with the model's final answer, atomically; refused \
                      while a call lacks its result; settles long results into reload cards. \
                      Retrying the same call is safe. 以最终回复结束一轮并结算长结果。",
        args: &[
            TURN_ID,
            text_arg(
                "final_text",
                false,
                "the model's answer; omit to close without one / 最终回复",
            ),
            text_arg(
                "kind",
                false,
                "kind of the answer, default message.assistant / 回复类型",
            ),
            SOURCE_ID,
            PAYLOAD,
            TIMESTAMP,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(complete_turn),
        http_only: true,
    },
    ToolDef {
        name: "timeline_abort_turn",
        description: "Host: abort an open turn (the task failed or was cancelled); recorded \
                      results are kept and settled. 中止一轮，已记录的结果保留并结算。",
        args: &[
            TURN_ID,
            text_arg("reason", false, "why / 原因"),
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(abort_turn),
        http_only: true,
    },
    ToolDef {
        name: "timeline_record_entry",
        description: "Host: record a standalone entry outside any turn: message.user, \
                      message.assistant or an event.* kind. 记录不属于任何轮次的消息或事件。",
        args: &[
            text_arg(
                "kind",
                true,
                "lower-case dotted kind, e.g. message.user or event.reminder / 条目类型",
            ),
            text_arg("text", true, "the text / 文本"),
            text_arg(
                "origin",
                false,
                "user, assistant or environment, default from the kind / 来源",
            ),
            SOURCE_ID,
            PAYLOAD,
            TIMESTAMP,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            ACTOR,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(record_entry),
        http_only: true,
    },
    ToolDef {
        name: "timeline_turn",
        description: "Host: one turn's status, pending calls and settlement. 查看一轮的状态与结算。",
        args: &[TURN_ID, REPLY_ZONE, TENANT, USER, DOMAIN, CONVERSATION],
        handler: Handler::Fn(turn),
        http_only: true,
    },
    ToolDef {
        name: "timeline_history",
        description: "Host: the conversation as model messages (format openai, the default, or \
                      plain), finished turns' long results shown as reload cards; identical \
                      bytes until something is written. 生成模型可见的历史消息。",
        args: &[
            text_arg(
                "format",
                false,
                "openai (default) or plain / 消息格式，默认 openai",
            ),
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(history),
        http_only: true,
    },
    ToolDef {
        name: "timeline_metrics",
        description: "Host: turns, results and the tokens settlement saved; damage the open \
                      repaired and why nothing is recorded, if so. 轮次、结果与节省的 token 统计。",
        args: &[CROSS, REPLY_ZONE, TENANT, USER, DOMAIN, CONVERSATION],
        handler: Handler::Fn(metrics),
        http_only: true,
    },
    ToolDef {
        name: "timeline_recover",
        description: "Host: abort open turns of processes that died, and with idle_seconds \
                      also this conversation's turns idle that long. 恢复：中止遗留的未完成轮次。",
        args: &[
            Arg {
                name: "idle_seconds",
                kind: Kind::Number { min: 0.0, max: 1e9 },
                required: false,
                description: "also abort turns idle this long / 同时中止空闲超过该秒数的轮次",
                default: None,
            },
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
            REPLY_ZONE,
        ],
        handler: Handler::Fn(recover),
        http_only: true,
    },
];

fn policy(args: &Args) -> Result<Policy, ToolError> {
    Policy::parse(args.str("policy").unwrap_or("compact_after_terminal")).map_err(write_error)
}

fn begin_turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let stimulus = EntryInput {
        kind: args.str("kind").unwrap_or("message.user").to_string(),
        text: args.str("text").unwrap_or_default().to_string(),
        payload: args.value("payload").cloned(),
        source_id: args.str("source_id").map(String::from),
        timestamp: args.num("timestamp"),
        ..EntryInput::default()
    };
    let begin = BeginTurn {
        stimuli: vec![stimulus],
        turn_id: args.str("turn_id").map(String::from),
        policy: policy(args)?,
        timezone: args.str("timezone").map(String::from),
    };
    let handle = open(coral)?
        .begin_turn(&namespace(args), &begin, unix_now())
        .map_err(write_error)?;
    ok(handle)
}

fn record_tool(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let exchange = ToolExchange {
        tool_name: args.str("tool_name").unwrap_or_default().to_string(),
        call_id: args.str("call_id").unwrap_or_default().to_string(),
        input: args.value("input").cloned().unwrap_or_else(|| json!({})),
        result: args.str("result").unwrap_or_default().to_string(),
        status: args.str("status").map(String::from),
        call_source_id: args.str("call_source_id").map(String::from),
        result_source_id: args.str("result_source_id").map(String::from),
        timestamp: args.num("timestamp"),
        result_timestamp: None,
    };
    let refs = open(coral)?
        .record_tool_exchange(
            &namespace(args),
            args.str("turn_id").unwrap_or_default(),
            &exchange,
            unix_now(),
        )
        .map_err(write_error)?;
    ok_in(refs, &zone)
}

fn tool_kind(args: &Args, suffix: &str) -> Result<(String, String), ToolError> {
    let name = args.str("tool_name").unwrap_or_default();
    let segment = coral::timeline::tool_segment(name).map_err(write_error)?;
    Ok((name.to_string(), format!("tool.{segment}.{suffix}")))
}

fn append_action(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let (tool_name, kind) = tool_kind(args, "call")?;
    let input = EntryInput {
        kind,
        text: args
            .value("arguments")
            .cloned()
            .unwrap_or_else(|| json!({}))
            .to_string(),
        source_id: args.str("source_id").map(String::from),
        timestamp: args.num("timestamp"),
        correlation_id: args.str("call_id").map(String::from),
        tool_name: Some(tool_name),
        ..EntryInput::default()
    };
    let entry = open(coral)?
        .append_action(
            &namespace(args),
            args.str("turn_id").unwrap_or_default(),
            &input,
            unix_now(),
        )
        .map_err(write_error)?;
    ok_in(entry, &zone)
}

fn append_observation(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let (_, kind) = tool_kind(args, "result")?;
    let input = EntryInput {
        kind,
        text: args.str("result").unwrap_or_default().to_string(),
        source_id: args.str("source_id").map(String::from),
        timestamp: args.num("timestamp"),
        correlation_id: args.str("call_id").map(String::from),
        status: args.str("status").map(String::from),
        ..EntryInput::default()
    };
    let entry = open(coral)?
        .append_observation(
            &namespace(args),
            args.str("turn_id").unwrap_or_default(),
            &input,
            unix_now(),
        )
        .map_err(write_error)?;
    ok_in(entry, &zone)
}

fn complete_turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let done = CompleteTurn {
        final_text: args.str("final_text").map(String::from),
        kind: args.str("kind").map(String::from),
        source_id: args.str("source_id").map(String::from),
        timestamp: args.num("timestamp"),
        payload: args.value("payload").cloned(),
    };
    let closed = open(coral)?
        .complete_turn(
            &namespace(args),
            args.str("turn_id").unwrap_or_default(),
            &done,
            unix_now(),
        )
        .map_err(write_error)?;
    ok_in(closed, &zone)
}

fn abort_turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let closed = open(coral)?
        .abort_turn(
            &namespace(args),
            args.str("turn_id").unwrap_or_default(),
            args.str("reason"),
            unix_now(),
        )
        .map_err(write_error)?;
    ok_in(closed, &zone)
}

fn record_entry(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let origin = args
        .str("origin")
        .map(Origin::parse)
        .transpose()
        .map_err(write_error)?;
    let input = EntryInput {
        kind: args.str("kind").unwrap_or_default().to_string(),
        text: args.str("text").unwrap_or_default().to_string(),
        payload: args.value("payload").cloned(),
        source_id: args.str("source_id").map(String::from),
        timestamp: args.num("timestamp"),
        origin,
        ..EntryInput::default()
    };
    let entry = open(coral)?
        .record_entry(&namespace(args), &input, unix_now())
        .map_err(write_error)?;
    ok_in(entry, &zone)
}

fn turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let view = open(coral)?
        .turn(&namespace(args), args.str("turn_id").unwrap_or_default())
        .map_err(write_error)?;
    ok_in(json!({"turn": view}), &zone)
}

fn history(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let zone = reply_zone(&coral.timeline_config(), args)?;
    let format = HistoryFormat::parse(args.str("format").unwrap_or("openai"))
        .map_err(|m| ToolError::InvalidArguments(format!("invalid_input: {m}")))?;
    let history = open(coral)?
        .history_in(&namespace(args), format, &zone)
        .map_err(write_error)?;
    let mut v = ok(history)?;
    v["format"] = json!(format);
    Ok(v)
}

fn metrics(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let timeline = open(coral)?;
    let m = timeline
        .metrics(
            &namespace(args),
            args.bool("cross_conversation").unwrap_or(false),
        )
        .map_err(write_error)?;
    // Damage this open contained, and why nothing is recorded, if so: said wherever the
    // timeline's state is shown.
    let repairs: Vec<String> = timeline.repairs().iter().map(ToString::to_string).collect();
    ok_in(
        json!({"metrics": m, "repairs": repairs, "read_only": timeline.read_only()}),
        &zone,
    )
}

fn recover(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let zone = reply_zone(&config, args)?;
    let timeline = open(coral)?;
    let now = unix_now();
    let ns = namespace(args);
    // Other namespaces' turn ids are not reported, only how many were recovered.
    let orphaned = timeline.recover_orphaned_turns(now).map_err(write_error)?;
    let stale = match args.num("idle_seconds") {
        Some(idle) => timeline
            .recover_stale_turns(&ns, idle, now, 1000)
            .map_err(write_error)?,
        None => Vec::new(),
    };
    ok_in(
        json!({
            "orphaned": orphaned.len(),
            "stale": stale.iter().map(|r| &r.turn_id).collect::<Vec<_>>(),
        }),
        &zone,
    )
}

//! The timeline tools (docs/timeline.md): `open_memory` and `read_timeline` for models (MCP and
//! HTTP), and the host's write operations `timeline_*` (HTTP only: a model never begins or
//! completes its own turns).
//!
//! Read tools answer with a structured `status` (`ok`, `partial`, `empty`, `invalid_filter`,
//! `unavailable`) instead of failing. Write operations fail with a message that starts with a
//! code (`invalid_input:`, `unknown_turn:`, `turn_closed:`, `pending_actions:`, `conflict:`)
//! and change nothing.

use std::sync::Arc;

use coral::timeline::{
    BeginTurn, BrowseRequest, CompleteTurn, ContextRequest, Detail, EntryInput, Error,
    HistoryFormat, KeywordMatch, Namespace, OpenRequest, Origin, Policy, Projection, ReadRequest,
    RetrieveRequest, TimeHint, TimeRange, Timeline, ToolExchange, View, with_ok,
};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Arg, Args, DefaultValue, Handler, Kind, ToolDef, ToolError};
use coral::{Coral, unix_now};

/// Page budget of `read_timeline` when none (or 0) is given: MemCore's default.
pub const DEFAULT_PAGE_TOKENS: u64 = 12_000;

const fn text_arg(name: &'static str, required: bool, description: &'static str) -> Arg {
    Arg {
        name,
        kind: Kind::String,
        required,
        description,
        default: None,
    }
}

pub(super) const TENANT: Arg = text_arg(
    "tenant_id",
    false,
    "tenant, default \"default\" / 租户，默认 default",
);
pub(super) const USER: Arg = text_arg(
    "user_id",
    false,
    "whose memory, default \"default\" / 用户，默认 default",
);
pub(super) const DOMAIN: Arg = text_arg(
    "domain_id",
    false,
    "app or area, default \"default\" / 领域，默认 default",
);
const CONVERSATION: Arg = text_arg(
    "conversation_id",
    false,
    "conversation, default \"default\" / 会话，默认 default",
);
const ACTOR: Arg = text_arg(
    "actor",
    false,
    "who speaks in a group chat (a tag only) / 发言者标签",
);
const TURN_ID: Arg = text_arg(
    "turn_id",
    true,
    "the turn from timeline_begin_turn / 轮次 id",
);
const TIMEZONE: Arg = text_arg(
    "timezone",
    false,
    "IANA time zone such as Asia/Shanghai, default timeline.timezone (UTC) / 时区，默认 UTC",
);
const SOURCE_ID: Arg = text_arg(
    "source_id",
    false,
    "your id for this entry, makes retries safe; generated when omitted / 条目 id（重试安全）",
);
const TIMESTAMP: Arg = Arg {
    name: "timestamp",
    kind: Kind::Number {
        min: 0.0,
        max: coral::MAX_UNIX_TIME,
    },
    required: false,
    description: "when it happened, Unix seconds, default now / 发生时间（Unix 秒），默认现在",
    default: None,
};
const PAYLOAD: Arg = Arg {
    name: "payload",
    kind: Kind::Object(&[]),
    required: false,
    description: "structured data kept with the entry / 附带的结构化数据",
    default: None,
};
const CROSS: Arg = Arg {
    name: "cross_conversation",
    kind: Kind::Boolean,
    required: false,
    description: "read every conversation of this user, default false / 跨会话读取，默认 false",
    default: Some(DefaultValue::Bool(false)),
};

const TIME_RANGE_FIELDS: &[Arg] = &[
    text_arg(
        "start_at",
        true,
        "start, inclusive: local \"2026-04-10 08:00\" or RFC 3339 / 起点（含）",
    ),
    text_arg(
        "end_at",
        true,
        "end, exclusive: local \"2026-04-10 12:00\" or RFC 3339 / 终点（不含）",
    ),
];

const TIME_RANGE: Arg = Arg {
    name: "time_range",
    kind: Kind::Object(TIME_RANGE_FIELDS),
    required: false,
    description: "exact range {start_at, end_at} / 精确时间范围",
    default: None,
};
const DATE_FROM: Arg = text_arg("date_from", false, "first local date YYYY-MM-DD / 起始日期");
const DATE_TO: Arg = text_arg(
    "date_to",
    false,
    "last local date, inclusive, default date_from / 结束日期（含）",
);

const ANCHOR_TURNS: Kind = Kind::Integer { min: 0, max: 50 };

const TIME_HINT_FIELDS: &[Arg] = &[
    text_arg(
        "start_at",
        false,
        "start, inclusive: local \"2026-04-10 08:00\" or RFC 3339 / 起点（含）",
    ),
    text_arg("end_at", false, "end, exclusive / 终点（不含）"),
    text_arg(
        "date_label",
        false,
        "one local day YYYY-MM-DD (yesterday = compute its date) / 某一天",
    ),
    text_arg(
        "time_of_day",
        false,
        "morning 上午, afternoon 下午, night 晚上 or midnight 凌晨 / 时段",
    ),
    Arg {
        name: "start_ts",
        kind: Kind::Number {
            min: 0.0,
            max: coral::MAX_UNIX_TIME,
        },
        required: false,
        description: "start, Unix seconds / 起点（Unix 秒）",
        default: None,
    },
    Arg {
        name: "end_ts",
        kind: Kind::Number {
            min: 0.0,
            max: coral::MAX_UNIX_TIME,
        },
        required: false,
        description: "end, Unix seconds / 终点（Unix 秒）",
        default: None,
    },
];

const fn strings_arg(name: &'static str, description: &'static str) -> Arg {
    Arg {
        name,
        kind: Kind::Strings,
        required: false,
        description,
        default: None,
    }
}

pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "open_memory",
        description: "Open one memory by id: a timeline entry (e.g. the source_id a reload \
                      card names) or a summary from browse_memory / retrieve_for_turn. \
                      view=card (default) says what it is, view=content returns the exact \
                      original text, view=sources lists a summary's source turns (paged). \
                      按 id 打开记忆：card 看元数据，content 取回原文，sources 展开摘要的来源。",
        args: &[
            text_arg(
                "memory_id",
                true,
                "the entry or summary id (a reload card's source_id) / 条目或摘要 id",
            ),
            text_arg(
                "view",
                false,
                "card, content or sources, default card / card、content 或 sources，默认 card",
            ),
            text_arg(
                "detail",
                false,
                "full (exact body) or compact (as the chat shows it), default full / 默认 full",
            ),
            Arg {
                name: "page_size",
                kind: Kind::Integer { min: 1, max: 50 },
                required: false,
                description: "view=sources: sources per page, default 5 / 每页来源数，默认 5",
                default: Some(DefaultValue::Int(5)),
            },
            text_arg(
                "cursor",
                false,
                "view=sources: next_cursor of the previous page / 翻页游标",
            ),
            CROSS,
            TIMEZONE,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
        ],
        handler: Handler::Fn(open_memory),
        http_only: false,
    },
    ToolDef {
        name: "retrieve_for_turn",
        description: "Search this user's past conversations, tool results and summaries for \
                      what the current turn needs: words (BM25, Chinese by characters and \
                      pairs) and meaning (vectors) fused; raw hits first, each with its whole \
                      turn. Narrow with entity_anchors (names, weighted 3x), time_hint, \
                      source_layers. What the context already shows is left out. \
                      检索历史对话、工具结果与摘要（关键词+向量融合），可按实体、时间、层级过滤。",
        args: &[
            text_arg("query", true, "what to look for / 检索内容"),
            strings_arg(
                "entity_anchors",
                "names of people, products, projects (3x weight) / 实体词（权重 3 倍）",
            ),
            strings_arg("topic_terms", "topic words / 主题词"),
            Arg {
                name: "time_hint",
                kind: Kind::Object(TIME_HINT_FIELDS),
                required: false,
                description: "only this time: {start_at, end_at} or {date_label, time_of_day} \
                              or {start_ts, end_ts} / 时间范围",
                default: None,
            },
            strings_arg(
                "source_layers",
                "raw, summary, semantic_summary; default all / 层级，默认全部",
            ),
            strings_arg(
                "memory_facets",
                "semantic memories of these facets only: profile, preference, viewpoint, \
                 relationship, event, state, plan, decision, constraint, knowledge, procedure / \
                 长期记忆类别",
            ),
            strings_arg(
                "kind_patterns",
                "entry kinds such as tool.shell.result or tool.* / 条目类型",
            ),
            strings_arg(
                "about_roles",
                "raw entries said by: user, assistant, external (tool results, events), \
                 third_party / 按说话方过滤原始条目",
            ),
            text_arg(
                "within_memory_id",
                false,
                "only the sources of this summary / 只在该摘要的来源中检索",
            ),
            Arg {
                name: "include_explicit",
                kind: Kind::Boolean,
                required: false,
                description: "MemCore's name for include_visible / 同 include_visible",
                default: Some(DefaultValue::Bool(false)),
            },
            Arg {
                name: "include_visible",
                kind: Kind::Boolean,
                required: false,
                description: "also return what the context already shows, default false / \
                              包括上下文中已可见的内容",
                default: Some(DefaultValue::Bool(false)),
            },
            Arg {
                name: "limit",
                kind: Kind::Integer { min: 1, max: 50 },
                required: false,
                description: "hits, default 6 / 返回条数，默认 6",
                default: Some(DefaultValue::Int(6)),
            },
            Arg {
                name: "token_budget",
                kind: Kind::Integer {
                    min: 0,
                    max: 1_000_000,
                },
                required: false,
                description: "stop adding hits past this many tokens (the first always comes), \
                              default 12000, 0 = no limit / 结果 token 上限",
                default: Some(DefaultValue::Int(DEFAULT_PAGE_TOKENS as i64)),
            },
            CROSS,
            TIMEZONE,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
        ],
        handler: Handler::Fn(retrieve_for_turn),
        http_only: false,
    },
    ToolDef {
        name: "browse_memory",
        description: "Browse the catalogue of summaries in time order, like a diary's table \
                      of contents: by time_range or date_from/date_to, and/or keywords that a \
                      stored tag must contain (文旅 finds 文旅答辩项目; the matched tag is \
                      returned). Then open_memory a card. 按时间或关键词浏览摘要目录。",
        args: &[
            strings_arg("keywords", "words a stored tag must contain / 关键词"),
            text_arg(
                "keyword_match",
                false,
                "any or all, default any / any 或 all，默认 any",
            ),
            TIME_RANGE,
            DATE_FROM,
            DATE_TO,
            strings_arg("node_types", "episodic, semantic; default both / 摘要类型"),
            Arg {
                name: "page_size",
                kind: Kind::Integer { min: 1, max: 200 },
                required: false,
                description: "cards per page, default 20 / 每页卡片数，默认 20",
                default: Some(DefaultValue::Int(20)),
            },
            text_arg(
                "cursor",
                false,
                "next_cursor of the previous page / 翻页游标",
            ),
            CROSS,
            TIMEZONE,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
        ],
        handler: Handler::Fn(browse_memory),
        http_only: false,
    },
    ToolDef {
        name: "read_timeline",
        description: "Read past turns in time order, whole turns per page: by time_range, by \
                      date_from/date_to with time_periods (morning/上午, afternoon/下午, \
                      night/晚上, midnight/凌晨), or around anchor_source_id (2 turns each side \
                      by default). Page budget 12000 tokens by default; pass next_cursor to \
                      continue. 按时间顺序读取完整轮次（时间段、日期加时段或锚点前后）。",
        args: &[
            TIME_RANGE,
            DATE_FROM,
            DATE_TO,
            Arg {
                name: "time_periods",
                kind: Kind::Strings,
                required: false,
                description: "parts of the day with date_from: morning 上午, afternoon 下午, \
                              night 晚上, midnight 凌晨 / 时段",
                default: None,
            },
            text_arg(
                "anchor_source_id",
                false,
                "read the turns around this entry / 锚点条目 id",
            ),
            Arg {
                name: "before_turns",
                kind: ANCHOR_TURNS,
                required: false,
                description: "turns before the anchor's, default 2 / 锚点之前的轮数，默认 2",
                default: Some(DefaultValue::Int(2)),
            },
            Arg {
                name: "after_turns",
                kind: ANCHOR_TURNS,
                required: false,
                description: "turns after the anchor's, default 2 / 锚点之后的轮数，默认 2",
                default: Some(DefaultValue::Int(2)),
            },
            CROSS,
            text_arg(
                "projection",
                false,
                "conversation (reload cards, default) or full (every body) / 默认 conversation",
            ),
            Arg {
                name: "page_token_budget",
                kind: Kind::Integer {
                    min: 0,
                    max: 1_000_000,
                },
                required: false,
                description: "most tokens per page, default 12000 (0 means the default) / \
                              每页 token 上限，默认 12000",
                default: Some(DefaultValue::Int(DEFAULT_PAGE_TOKENS as i64)),
            },
            text_arg(
                "cursor",
                false,
                "next_cursor of the previous page, same request otherwise / 翻页游标",
            ),
            TIMEZONE,
            TENANT,
            USER,
            DOMAIN,
            CONVERSATION,
        ],
        handler: Handler::Fn(read_timeline),
        http_only: false,
    },
];

pub(super) static HTTP_ONLY: &[ToolDef] = &[
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
        ],
        handler: Handler::Fn(record_entry),
        http_only: true,
    },
    ToolDef {
        name: "timeline_turn",
        description: "Host: one turn's status, pending calls and settlement. 查看一轮的状态与结算。",
        args: &[TURN_ID, TENANT, USER, DOMAIN, CONVERSATION],
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
        ],
        handler: Handler::Fn(history),
        http_only: true,
    },
    ToolDef {
        name: "timeline_metrics",
        description: "Host: turns, results and the tokens settlement saved; damage the open \
                      repaired and why nothing is recorded, if so. 轮次、结果与节省的 token 统计。",
        args: &[CROSS, TENANT, USER, DOMAIN, CONVERSATION],
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
        ],
        handler: Handler::Fn(recover),
        http_only: true,
    },
];

pub(super) fn namespace(args: &Args) -> Namespace {
    let part = |name: &str| {
        args.str(name)
            .unwrap_or(coral::timeline::DEFAULT_ID)
            .to_string()
    };
    Namespace {
        tenant_id: part("tenant_id"),
        user_id: part("user_id"),
        domain_id: part("domain_id"),
        conversation_id: part("conversation_id"),
        actor: args.str("actor").map(String::from),
    }
}

/// A refused or failed write, with its code first.
pub(super) fn write_error(e: Error) -> ToolError {
    let message = format!("{}: {e}", e.code());
    if e.is_caller_error() {
        ToolError::InvalidArguments(message)
    } else {
        ToolError::Failed(message)
    }
}

pub(super) fn open(coral: &Coral) -> Result<Arc<Timeline>, ToolError> {
    coral
        .timeline()
        .map_err(|e| ToolError::Failed(format!("unavailable: {e}")))
}

fn ok(value: impl Serialize) -> Result<Value, ToolError> {
    let mut v = serde_json::to_value(value).map_err(|e| ToolError::Failed(e.to_string()))?;
    if let Some(map) = v.as_object_mut() {
        map.insert("ok".into(), json!(true));
    }
    Ok(v)
}

/// A read tool's answer when the timeline cannot be opened.
fn unavailable(e: impl std::fmt::Display) -> Value {
    json!({"ok": false, "status": "unavailable", "message": e.to_string()})
}

fn invalid_filter(message: String) -> Value {
    json!({"ok": false, "status": "invalid_filter", "message": message})
}

fn open_memory(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let view = match View::parse(args.str("view").unwrap_or("card")) {
        Ok(v) => v,
        Err(m) => return Ok(invalid_filter(m)),
    };
    let detail = match args.str("detail").unwrap_or("full") {
        "full" => Detail::Full,
        "compact" => Detail::Compact,
        other => {
            return Ok(invalid_filter(format!(
                "detail {} is not full or compact",
                coral::echo(other)
            )));
        }
    };
    let timeline = match coral.timeline() {
        Ok(t) => t,
        Err(e) => return Ok(unavailable(e)),
    };
    let result = timeline.open_memory(
        &namespace(args),
        args.str("memory_id").unwrap_or_default(),
        &OpenRequest {
            view,
            detail,
            cross_conversation: args.bool("cross_conversation").unwrap_or(false),
            timezone: zone(coral, args),
            page_size: args.int("page_size").unwrap_or(0) as usize,
            cursor: args.str("cursor").map(String::from),
        },
    );
    Ok(with_ok(&result, result.status))
}

/// The call's `timezone`, else `timeline.timezone` from the config.
fn zone(coral: &Coral, args: &Args) -> Option<String> {
    Some(
        args.str("timezone")
            .map_or_else(|| coral.config().timeline.timezone.clone(), String::from),
    )
}

fn strings(args: &Args, name: &str) -> Vec<String> {
    args.value(name)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn retrieve_for_turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let time_hint = args.value("time_hint").map(|h| TimeHint {
        start_at: h["start_at"].as_str().map(String::from),
        end_at: h["end_at"].as_str().map(String::from),
        date_label: h["date_label"].as_str().map(String::from),
        time_of_day: h["time_of_day"].as_str().map(String::from),
        start_ts: h["start_ts"].as_f64(),
        end_ts: h["end_ts"].as_f64(),
    });
    let request = RetrieveRequest {
        query: args.str("query").unwrap_or_default().to_string(),
        entity_anchors: strings(args, "entity_anchors"),
        topic_terms: strings(args, "topic_terms"),
        time_hint,
        source_layers: strings(args, "source_layers"),
        memory_facets: strings(args, "memory_facets"),
        kind_patterns: strings(args, "kind_patterns"),
        within_memory_id: args.str("within_memory_id").map(String::from),
        include_visible: args.bool("include_visible").unwrap_or(false)
            || args.bool("include_explicit").unwrap_or(false),
        about_roles: strings(args, "about_roles"),
        cross_conversation: args.bool("cross_conversation").unwrap_or(false),
        limit: args
            .int("limit")
            .map_or(coral.config().timeline.retrieval_limit, |n| n as usize),
        token_budget: args
            .int("token_budget")
            .map_or(DEFAULT_PAGE_TOKENS, |n| n as u64),
        timezone: zone(coral, args),
        settings: coral.config().timeline.layer_settings(),
    };
    match coral.timeline_retrieve(&namespace(args), &request) {
        Ok(result) => Ok(with_ok(&result, result.status)),
        Err(e) => Ok(unavailable(e)),
    }
}

fn browse_memory(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let keyword_match = match KeywordMatch::parse(args.str("keyword_match").unwrap_or("any")) {
        Ok(m) => m,
        Err(m) => return Ok(invalid_filter(m)),
    };
    let request = BrowseRequest {
        keywords: strings(args, "keywords"),
        keyword_match,
        time_range: args.value("time_range").map(|r| TimeRange {
            start_at: r["start_at"].as_str().unwrap_or_default().to_string(),
            end_at: r["end_at"].as_str().unwrap_or_default().to_string(),
        }),
        date_from: args.str("date_from").map(String::from),
        date_to: args.str("date_to").map(String::from),
        node_types: strings(args, "node_types"),
        cross_conversation: args.bool("cross_conversation").unwrap_or(false),
        page_size: args.int("page_size").unwrap_or(0) as usize,
        cursor: args.str("cursor").map(String::from),
        timezone: zone(coral, args),
    };
    let timeline = match coral.timeline() {
        Ok(t) => t,
        Err(e) => return Ok(unavailable(e)),
    };
    let result = timeline.browse_memory(&namespace(args), &request);
    Ok(with_ok(&result, result.status))
}

fn context(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let ctx = open(coral)?
        .context(
            &namespace(args),
            &ContextRequest {
                timezone: zone(coral, args),
                settings: coral.config().timeline.layer_settings(),
            },
        )
        .map_err(write_error)?;
    ok(ctx)
}

fn compact(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let report = coral
        .timeline_compact(
            &namespace(args),
            &coral.config().timeline.layer_settings(),
            zone(coral, args).as_deref(),
        )
        .map_err(write_error)?;
    ok(report)
}

fn read_timeline(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let projection = match Projection::parse(args.str("projection").unwrap_or("conversation")) {
        Ok(p) => p,
        Err(m) => return Ok(invalid_filter(m)),
    };
    let time_range = args.value("time_range").map(|r| TimeRange {
        start_at: r["start_at"].as_str().unwrap_or_default().to_string(),
        end_at: r["end_at"].as_str().unwrap_or_default().to_string(),
    });
    let time_periods = args
        .value("time_periods")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let budget = match args.int("page_token_budget") {
        None | Some(0) => DEFAULT_PAGE_TOKENS,
        Some(n) => n as u64,
    };
    let request = ReadRequest {
        time_range,
        date_from: args.str("date_from").map(String::from),
        date_to: args.str("date_to").map(String::from),
        time_periods,
        anchor_source_id: args.str("anchor_source_id").map(String::from),
        before_turns: args.int("before_turns").map(|n| n as u32),
        after_turns: args.int("after_turns").map(|n| n as u32),
        cross_conversation: args.bool("cross_conversation").unwrap_or(false),
        projection,
        page_token_budget: budget,
        cursor: args.str("cursor").map(String::from),
        timezone: zone(coral, args),
    };
    let timeline = match coral.timeline() {
        Ok(t) => t,
        Err(e) => return Ok(unavailable(e)),
    };
    let result = timeline.read_timeline(&namespace(args), &request);
    Ok(with_ok(&result, result.status))
}

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
    ok(refs)
}

fn tool_kind(args: &Args, suffix: &str) -> Result<(String, String), ToolError> {
    let name = args.str("tool_name").unwrap_or_default();
    let segment = coral::timeline::tool_segment(name).map_err(write_error)?;
    Ok((name.to_string(), format!("tool.{segment}.{suffix}")))
}

fn append_action(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
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
    ok(entry)
}

fn append_observation(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
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
    ok(entry)
}

fn complete_turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
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
    ok(closed)
}

fn abort_turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let closed = open(coral)?
        .abort_turn(
            &namespace(args),
            args.str("turn_id").unwrap_or_default(),
            args.str("reason"),
            unix_now(),
        )
        .map_err(write_error)?;
    ok(closed)
}

fn record_entry(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
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
    ok(entry)
}

fn turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let view = open(coral)?
        .turn(&namespace(args), args.str("turn_id").unwrap_or_default())
        .map_err(write_error)?;
    ok(json!({"turn": view}))
}

fn history(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let format = HistoryFormat::parse(args.str("format").unwrap_or("openai"))
        .map_err(|m| ToolError::InvalidArguments(format!("invalid_input: {m}")))?;
    let history = open(coral)?
        .history(&namespace(args), format)
        .map_err(write_error)?;
    let mut v = ok(history)?;
    v["format"] = json!(format);
    Ok(v)
}

fn metrics(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
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
    ok(json!({"metrics": m, "repairs": repairs, "read_only": timeline.read_only()}))
}

fn recover(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
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
    ok(json!({
        "orphaned": orphaned.len(),
        "stale": stale.iter().map(|r| &r.turn_id).collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_only_tools_are_the_writes() {
        for t in TOOLS {
            assert!(t.on_mcp(), "{}", t.name);
        }
        for t in HTTP_ONLY {
            assert!(!t.on_mcp(), "{}", t.name);
            assert!(t.name.starts_with("timeline_"));
        }
    }
}

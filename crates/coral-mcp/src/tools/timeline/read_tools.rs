//! The model's read tools (MCP and HTTP): `open_memory`, `retrieve_for_turn`, `browse_memory`
//! and `read_timeline`. They answer with a structured `status` instead of failing.

use coral::Coral;
use coral::timeline::{
    BrowseRequest, Detail, KeywordMatch, OpenRequest, Projection, ReadRequest, RetrieveRequest,
    TimeHint, TimeRange, View, with_receipt,
};
use serde_json::Value;

use super::answer::{invalid_filter, unavailable};
use super::args::*;
use crate::tools::{Arg, Args, DefaultValue, Handler, Kind, ToolDef, ToolError};

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
            Arg {
                name: "cross_conversation",
                kind: Kind::Boolean,
                required: false,
                description: "look in every conversation of this user; default true unless \
                              conversation_id is given (ids are unique per user) / 跨会话查找",
                default: None,
            },
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

fn open_memory(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let view = match View::parse(args.str("view").unwrap_or("card")) {
        Ok(v) => v,
        Err(m) => return Ok(invalid_filter("open_memory", m)),
    };
    let detail = match args.str("detail").unwrap_or("full") {
        "full" => Detail::Full,
        "compact" => Detail::Compact,
        other => {
            return Ok(invalid_filter(
                "open_memory",
                format!("detail {} is not full or compact", coral::echo(other)),
            ));
        }
    };
    let timeline = match coral.timeline() {
        Ok(t) => t,
        Err(e) => return Ok(unavailable("open_memory", e)),
    };
    let result = timeline.open_memory(
        &namespace(args),
        args.str("memory_id").unwrap_or_default(),
        &OpenRequest {
            view,
            detail,
            // An id is unique within the user's namespace: the call a reload card prints
            // names no conversation, and must open the card's entry wherever it was recorded.
            cross_conversation: args
                .bool("cross_conversation")
                .unwrap_or(args.str("conversation_id").is_none()),
            timezone: zone(&config, args),
            page_size: args.int("page_size").unwrap_or(0) as usize,
            cursor: args.str("cursor").map(String::from),
            policy: config.timeline.policy.dispatch(),
        },
    );
    Ok(with_receipt(&result))
}

fn retrieve_for_turn(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
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
            .map_or(config.timeline.retrieval_limit, |n| n as usize),
        token_budget: args
            .int("token_budget")
            .map_or(DEFAULT_PAGE_TOKENS, |n| n as u64),
        timezone: zone(&config, args),
        settings: config.timeline.layer_settings(),
        policy: config.timeline.policy.dispatch(),
        // `timeline_retrieve` sets the fusion from the config; a time-shaped query reads the
        // system clock.
        ..RetrieveRequest::default()
    };
    match coral.timeline_retrieve(&namespace(args), &request) {
        Ok(result) => Ok(with_receipt(&result)),
        Err(e) => Ok(unavailable("retrieve_for_turn", e)),
    }
}

fn browse_memory(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let keyword_match = match KeywordMatch::parse(args.str("keyword_match").unwrap_or("any")) {
        Ok(m) => m,
        Err(m) => return Ok(invalid_filter("browse_memory", m)),
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
        timezone: zone(&config, args),
    };
    let timeline = match coral.timeline() {
        Ok(t) => t,
        Err(e) => return Ok(unavailable("browse_memory", e)),
    };
    let result = timeline.browse_memory(&namespace(args), &request);
    Ok(with_receipt(&result))
}

fn read_timeline(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let config = coral.timeline_config();
    let projection = match Projection::parse(args.str("projection").unwrap_or("conversation")) {
        Ok(p) => p,
        Err(m) => return Ok(invalid_filter("read_timeline", m)),
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
        timezone: zone(&config, args),
        policy: config.timeline.policy.dispatch(),
    };
    let timeline = match coral.timeline() {
        Ok(t) => t,
        Err(e) => return Ok(unavailable("read_timeline", e)),
    };
    let result = timeline.read_timeline(&namespace(args), &request);
    Ok(with_receipt(&result))
}

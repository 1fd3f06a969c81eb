//! `memory_list`: one page of the stored memories by tier, project, date and text, without
//! counting an access (the dashboard's memory browser pages through 20,000 with it).

use serde_json::{Value, json};

use super::memory::{round4, summarize};
use super::{Arg, Args, DefaultValue, Handler, Kind, ToolDef, ToolError};
use coral::{Coral, ListOrder, ListQuery, MAX_LIST_LIMIT, Tier};

const TIME: Kind = Kind::Number {
    min: 0.0,
    max: coral::MAX_UNIX_TIME,
};

pub(super) static TOOLS: &[ToolDef] = &[ToolDef {
    name: "memory_list",
    description: "List stored memories a page at a time (newest first by default), filtered by \
                  tier, project, creation time and text; does not count as an access. \
                  分页列出记忆（默认最新在前），可按层级、项目、时间与文字过滤；不计为访问。",
    args: &[
        Arg {
            name: "tier",
            kind: Kind::String,
            required: false,
            description: "hot, warm or cold; omit for all / 层级，省略则全部",
            default: None,
        },
        Arg {
            name: "project",
            kind: Kind::String,
            required: false,
            description: "only this project; \"\" for memories without one / 项目（空串为无项目）",
            default: None,
        },
        Arg {
            name: "from",
            kind: TIME,
            required: false,
            description: "created at or after, Unix seconds / 创建时间下限（Unix 秒）",
            default: None,
        },
        Arg {
            name: "to",
            kind: TIME,
            required: false,
            description: "created before, Unix seconds / 创建时间上限（不含）",
            default: None,
        },
        Arg {
            name: "contains",
            kind: Kind::String,
            required: false,
            description: "text the memory contains, any case / 包含的文字（不分大小写）",
            default: None,
        },
        Arg {
            name: "order",
            kind: Kind::String,
            required: false,
            description: "newest (default), oldest, importance or accessed / 排序",
            default: None,
        },
        Arg {
            name: "offset",
            kind: Kind::Integer {
                min: 0,
                max: 1_000_000_000,
            },
            required: false,
            description: "rows to skip, default 0 (next_offset of the last page) / 跳过条数",
            default: Some(DefaultValue::Int(0)),
        },
        Arg {
            name: "limit",
            kind: Kind::Integer {
                min: 1,
                max: MAX_LIST_LIMIT as i64,
            },
            required: false,
            description: "rows per page, default 50, at most 200 / 每页条数，默认 50",
            default: Some(DefaultValue::Int(50)),
        },
        Arg {
            name: "full",
            kind: Kind::Boolean,
            required: false,
            description: "whole texts instead of 200-char previews, default false / 返回全文",
            default: Some(DefaultValue::Bool(false)),
        },
    ],
    handler: Handler::Fn(memory_list),
    http_only: false,
}];

fn tier(text: &str) -> Result<Tier, ToolError> {
    Tier::ALL
        .into_iter()
        .find(|t| t.as_str() == text)
        .ok_or_else(|| {
            ToolError::InvalidArguments(format!(
                "memory_list: tier {} is not hot, warm or cold",
                coral::echo(text)
            ))
        })
}

fn memory_list(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let query = ListQuery {
        tier: args.str("tier").map(tier).transpose()?,
        project: args.str("project").map(String::from),
        from: args.num("from"),
        to: args.num("to"),
        contains: args.str("contains").map(String::from),
        order: args
            .str("order")
            .map(ListOrder::parse)
            .transpose()?
            .unwrap_or_default(),
        offset: args.int("offset").unwrap_or(0) as usize,
        limit: args.int("limit").unwrap_or(50) as usize,
    };
    let full = args.bool("full").unwrap_or(false);
    let page = coral.list(&query)?;
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|m| {
            let (content, truncated) = if full {
                (m.item.content.clone(), false)
            } else {
                summarize(&m.item.content, 200)
            };
            json!({
                "id": m.item.item_id,
                "tier": m.tier.as_str(),
                "project": m.item.project,
                "importance": round4(m.item.importance),
                "access_count": m.item.access_count,
                "timestamp": m.item.timestamp,
                "last_access": m.item.last_access,
                "token_count": m.item.token_count,
                "content": content,
                "truncated": truncated,
            })
        })
        .collect();
    let end = page.offset + items.len();
    Ok(json!({
        "ok": true,
        "total": page.total,
        "matched": page.matched,
        "offset": page.offset,
        "count": items.len(),
        "next_offset": (end < page.matched).then_some(end),
        "order": query.order,
        "projects": page.projects,
        "items": items,
    }))
}

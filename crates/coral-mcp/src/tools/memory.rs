//! The memory tools: `memory_*` and `coral_stats`.

use serde_json::{Value, json};

use super::{Arg, Args, DefaultValue, Handler, Kind, ToolDef, ToolError};
use coral::{Coral, InsertOptions, InsertOutcome, MAX_TOP_K, SearchOptions};

const ID: Arg = Arg {
    name: "item_id",
    kind: Kind::String,
    required: true,
    description: "memory id from memory_search or memory_insert / 记忆 id",
    default: None,
};

const PROJECT: Arg = Arg {
    name: "project",
    kind: Kind::String,
    required: false,
    description: "optional project tag / 可选项目标签",
    default: None,
};

pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "memory_search",
        description: "Find the memories most relevant to a query (meaning + keywords + recency); \
                      top_k defaults to 5, content is cut to 100 chars unless full=true. \
                      检索与查询最相关的记忆（语义+关键词+时间），默认返回 5 条。",
        args: &[
            Arg {
                name: "query",
                kind: Kind::String,
                required: true,
                description: "what to look for / 查询内容",
                default: None,
            },
            Arg {
                name: "top_k",
                kind: Kind::Integer {
                    min: 1,
                    max: MAX_TOP_K as i64,
                },
                required: false,
                description: "number of hits, default 5 / 返回条数，默认 5",
                default: Some(DefaultValue::Int(5)),
            },
            Arg {
                name: "full",
                kind: Kind::Boolean,
                required: false,
                description: "return whole memories, default false / 返回完整内容，默认 false",
                default: Some(DefaultValue::Bool(false)),
            },
            PROJECT,
        ],
        handler: Handler::Fn(memory_search),
        http_only: false,
    },
    ToolDef {
        name: "memory_insert",
        description: "Remember a short fact; durable as soon as this returns. A near-duplicate \
                      refreshes the existing memory. importance 0..1, default 0. \
                      写入一条记忆，返回即已持久化；重复内容会合并。重要度 0..1，默认 0。",
        args: &[
            Arg {
                name: "content",
                kind: Kind::String,
                required: true,
                description: "the memory text / 记忆内容",
                default: None,
            },
            Arg {
                name: "importance",
                kind: Kind::Number { min: 0.0, max: 1.0 },
                required: false,
                description: "0..1, default 0 / 重要度 0..1，默认 0",
                default: Some(DefaultValue::Num(0.0)),
            },
            PROJECT,
        ],
        handler: Handler::Fn(memory_insert),
        http_only: false,
    },
    ToolDef {
        name: "memory_flush",
        description: "Write a checkpoint of all memory files. Not needed for safety: every write \
                      is already durable. 写入检查点；数据本已持久化，无需为安全而调用。",
        args: &[],
        handler: Handler::Fn(memory_flush),
        http_only: false,
    },
    ToolDef {
        name: "memory_delete",
        description: "Delete one memory by id; a checkpoint then removes its text from the \
                      files and the journal (physically_removed says so). \
                      按 id 删除一条记忆，并通过检查点从文件与日志中物理删除。",
        args: &[ID],
        handler: Handler::Fn(memory_delete),
        http_only: false,
    },
    ToolDef {
        name: "memory_mark_important",
        description: "Set a memory's importance (0..1, default 1.0) so it is kept longer. \
                      设置记忆重要度（0..1，默认 1.0），使其更不易被遗忘。",
        args: &[
            ID,
            Arg {
                name: "importance",
                kind: Kind::Number { min: 0.0, max: 1.0 },
                required: false,
                description: "0..1, default 1.0 / 重要度，默认 1.0",
                default: Some(DefaultValue::Num(1.0)),
            },
        ],
        handler: Handler::Fn(memory_mark_important),
        http_only: false,
    },
    ToolDef {
        name: "coral_stats",
        description: "Counts per tier, vectors, embedder, repairs and disk usage. \
                      各层记忆数量、向量、嵌入器、修复记录与磁盘占用。",
        args: &[],
        handler: Handler::Fn(coral_stats),
        http_only: false,
    },
];

/// Collapse runs of whitespace to one space, escape control characters and cut at `max` chars
/// with "…" (`coral::preview`, the one quoting rule).
pub fn summarize(content: &str, max: usize) -> (String, bool) {
    coral::preview(content, max)
}

fn memory_search(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let query = args.str("query").unwrap_or_default();
    let full = args.bool("full").unwrap_or(false);
    let hits = coral.search_with(
        query,
        SearchOptions {
            top_k: args.int("top_k").map(|k| k as usize),
            project: args.str("project").map(String::from),
            ..SearchOptions::default()
        },
    )?;
    let hits: Vec<Value> = hits
        .iter()
        .map(|h| {
            let (content, truncated) = if full {
                (h.item.content.clone(), false)
            } else {
                summarize(&h.item.content, 100)
            };
            let mut hit = json!({
                "id": h.item.item_id,
                "score": round4(h.score),
                "scores": round_all(json!(h.scores)),
                "content": content,
                "truncated": truncated,
            });
            if let Some(p) = &h.item.project {
                hit["project"] = json!(p);
            }
            hit
        })
        .collect();
    Ok(json!({"query": query, "count": hits.len(), "hits": hits}))
}

fn memory_insert(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let content = args.str("content").unwrap_or_default();
    let outcome = coral.insert_with(
        content,
        InsertOptions {
            importance: args.num("importance").unwrap_or(0.0),
            project: args.str("project").map(String::from),
            ..InsertOptions::default()
        },
    )?;
    let mut message = match &outcome.outcome {
        InsertOutcome::Inserted(_) => "stored; durable now / 已写入并持久化".to_string(),
        InsertOutcome::Merged(id) => {
            format!("a similar memory already existed; merged into {id} / 与已有记忆相似，已合并")
        }
    };
    let redacted = outcome.redacted.len();
    if redacted > 0 {
        message.push_str(&format!(
            "; {redacted} secret(s) replaced by [redacted:…] before storing / {redacted} 处密钥已替换为标记"
        ));
    }
    // As in the original, `item_id` is the new memory's id and null for a merge;
    // `merged_into` names the memory that absorbed it. `redacted` (Coral's) counts the secrets
    // kept out of the memory.
    let mut answer = json!({
        "inserted": outcome.inserted(),
        "item_id": outcome.inserted().then(|| outcome.id()),
        "message": message,
        "persisted": true,
        "hint": "already durable: memory_flush is not needed / 已持久化，无需调用 memory_flush",
        "redacted": redacted,
    });
    if let InsertOutcome::Merged(id) = &outcome.outcome {
        answer["merged_into"] = json!(id);
    }
    Ok(answer)
}

fn memory_flush(coral: &Coral, _: &Args) -> Result<Value, ToolError> {
    coral.flush()?;
    let stats = coral.stats();
    Ok(json!({
        "flushed": true,
        // The hot memories the checkpoint wrote (the original moved them to the warm file;
        // Coral keeps their tier and writes them too).
        "hot_persisted": stats.hot,
        "message": "checkpoint written; every write was already durable / 检查点已写入（数据本已持久化）",
        "stats": stats,
    }))
}

fn memory_delete(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let id = args.str("item_id").unwrap_or_default();
    if !coral.delete(id)? {
        return Err(ToolError::Refused(json!({
            "ok": false,
            "item_id": id,
            "message": "not found",
            "error": format!(
                "no memory with item_id {}; search first to get a valid id / 未找到该记忆",
                coral::echo(id)
            ),
        })));
    }
    let (gone, removal) = if coral.backend() == "postgres" {
        // One committed transaction removed its rows (docs/postgres.md, "Writes and
        // duplicates"): no journal or file holds it.
        (
            true,
            "deleted from the database in one transaction (the server's own backups and \
             write-ahead log may still hold it) / 已从数据库删除"
                .to_string(),
        )
    } else {
        // The journal still holds the text (its put record) until a checkpoint rewrites the
        // memory files without it and starts a new journal: run that now, and say whether it
        // worked (docs/timeline.md, "Forgetting").
        match coral.flush() {
            Ok(()) => (
                true,
                "checkpointed: its text is no longer in the memory files or the journal (earlier \
                 backups still hold it) / 已从记忆文件与日志中物理删除"
                    .to_string(),
            ),
            Err(e) => (
                false,
                format!(
                    "deleted, but the journal keeps its text until a checkpoint succeeds \
                     (memory_flush, or the next automatic one): {e}"
                ),
            ),
        }
    };
    Ok(json!({
        "ok": true,
        "item_id": id,
        "message": "deleted / 已删除",
        "physically_removed": gone,
        "removal": removal,
    }))
}

fn memory_mark_important(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let id = args.str("item_id").unwrap_or_default();
    let item = coral.mark_important(id, args.num("importance").unwrap_or(1.0))?;
    Ok(json!({"ok": true, "item_id": id, "importance": item.importance}))
}

fn coral_stats(coral: &Coral, _: &Args) -> Result<Value, ToolError> {
    Ok(json!({
        "ok": true,
        "stats": coral.stats(),
        "disk_usage": disk_usage(coral),
        "hint": "tune with coral_config_get / coral_config_set / 调优配置用 coral_config_get / coral_config_set",
    }))
}

/// Coral's disk usage plus the original's keys (`warm_bytes`, `cold_bytes`, `vector_bytes`,
/// `index_bytes`, `total`, `ratio` as a number), which its GUI and prompts read.
pub(super) fn disk_usage(coral: &Coral) -> Value {
    let mut usage = json!(coral.disk_usage());
    let file = |name: &str| usage["files"][name].as_u64().unwrap_or(0);
    let compat = json!({
        "warm_bytes": file("warm") + file("hot"),
        "cold_bytes": file("cold"),
        "vector_bytes": file("vectors"),
        "index_bytes": file("vector_index"),
        "total": usage["total_bytes"].as_u64().unwrap_or(0),
        "ratio": round4(usage["ratio"].as_f64().unwrap_or(0.0)),
    });
    if let (Some(map), Value::Object(extra)) = (usage.as_object_mut(), compat) {
        map.extend(extra);
    }
    usage
}

/// `x` rounded to 4 decimal places, as the original reports scores and heat.
pub(super) fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Every number of a flat JSON object rounded to 4 places.
fn round_all(mut v: Value) -> Value {
    if let Some(map) = v.as_object_mut() {
        for x in map.values_mut() {
            if let Some(f) = x.as_f64() {
                *x = json!(round4(f));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::summarize;

    #[test]
    fn golden_search_summaries() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/coral_test_vectors.json"
        );
        let data: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let cases = data["search_summary_100"].as_object().unwrap();
        assert_eq!(cases.len(), 3);
        for (input, expected) in cases {
            let (content, truncated) = summarize(input, 100);
            assert_eq!(content, expected["content"].as_str().unwrap(), "{input:?}");
            assert_eq!(truncated, expected["truncated"].as_bool().unwrap());
        }
    }
}

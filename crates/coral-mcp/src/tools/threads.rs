//! The thread tools: `thread_*` (docs/threads.md). Threads are never searched or evicted.

use serde_json::{Value, json};

use super::{Arg, Args, DefaultValue, Handler, Kind, ToolDef, ToolError};
use coral::Coral;

const THREAD_ID: Arg = Arg {
    name: "thread_id",
    kind: Kind::String,
    required: true,
    description: "thread id from thread_create or thread_status / 线索 id",
    default: None,
};

const BY: Arg = Arg {
    name: "by",
    kind: Kind::String,
    required: false,
    description: "who is writing, e.g. the chat's name / 记录者（如聊天名）",
    default: None,
};

pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "thread_create",
        description: "Start a reasoning thread that every chat can see and push forward; threads \
                      are never forgotten. 创建跨聊天共享、永不遗忘的推理线索。",
        args: &[
            Arg {
                name: "title",
                kind: Kind::String,
                required: true,
                description: "short title, at most 80 chars / 标题（≤80 字）",
                default: None,
            },
            Arg {
                name: "summary",
                kind: Kind::String,
                required: false,
                description: "what the work is about / 概要",
                default: None,
            },
            Arg {
                name: "parent_thread_id",
                kind: Kind::String,
                required: false,
                description: "parent thread, if this is a sub-task / 父线索 id",
                default: None,
            },
            BY,
        ],
        handler: Handler::Fn(thread_create),
        http_only: false,
    },
    ToolDef {
        name: "thread_status",
        description: "Where are we? One thread by id, or all open threads (active first, newest \
                      update first) with their children; query filters titles and summaries. \
                      查看线索进展：按 id 查看一条，或列出所有未归档线索。",
        args: &[
            Arg {
                name: "thread_id",
                kind: Kind::String,
                required: false,
                description: "one thread; omit for the overview / 线索 id，省略则列出全部",
                default: None,
            },
            Arg {
                name: "include_archived",
                kind: Kind::Boolean,
                required: false,
                description: "include archived threads, default false / 包含已归档，默认 false",
                default: Some(DefaultValue::Bool(false)),
            },
            Arg {
                name: "query",
                kind: Kind::String,
                required: false,
                description: "filter by title or summary text / 按标题或概要过滤",
                default: None,
            },
        ],
        handler: Handler::Fn(thread_status),
        http_only: false,
    },
    ToolDef {
        name: "thread_advance",
        description: "Record a step on a thread; done is detected from the note (完成, 上线, \
                      done, shipped...) when omitted. 记录线索的一步进展，未给 done 时自动判断。",
        args: &[
            THREAD_ID,
            Arg {
                name: "note",
                kind: Kind::String,
                required: true,
                description: "what happened, at most 500 chars / 进展说明（≤500 字）",
                default: None,
            },
            Arg {
                name: "done",
                kind: Kind::Boolean,
                required: false,
                description: "step finished; detected from the note when omitted / 是否完成",
                default: None,
            },
            BY,
        ],
        handler: Handler::Fn(thread_advance),
        http_only: false,
    },
    ToolDef {
        name: "thread_interrupt",
        description: "Pause a thread with a reason (adds a [中断] step). 中断线索并记录原因。",
        args: &[
            THREAD_ID,
            Arg {
                name: "reason",
                kind: Kind::String,
                required: false,
                description: "why it stopped / 中断原因",
                default: None,
            },
        ],
        handler: Handler::Fn(thread_interrupt),
        http_only: false,
    },
    ToolDef {
        name: "thread_archive",
        description: "Archive a finished thread (hidden from the overview, never deleted). \
                      归档线索（不再出现在概览中，但不会删除）。",
        args: &[THREAD_ID],
        handler: Handler::Fn(thread_archive),
        http_only: false,
    },
    ToolDef {
        name: "thread_resume",
        description: "Make an interrupted or archived thread active again. 恢复线索为进行中。",
        args: &[THREAD_ID],
        handler: Handler::Fn(thread_resume),
        http_only: false,
    },
    ToolDef {
        name: "thread_link",
        description: "Make one thread a sub-thread of another (no self-links, no cycles). \
                      把一条线索挂到另一条之下（不能自连或成环）。",
        args: &[
            Arg {
                name: "child_id",
                kind: Kind::String,
                required: true,
                description: "the sub-thread / 子线索 id",
                default: None,
            },
            Arg {
                name: "parent_id",
                kind: Kind::String,
                required: true,
                description: "the parent thread / 父线索 id",
                default: None,
            },
        ],
        handler: Handler::Fn(thread_link),
        http_only: false,
    },
];

fn ok_thread(thread: impl serde::Serialize) -> Result<Value, ToolError> {
    let mut value = json!({"ok": true, "thread": thread});
    round_times(&mut value);
    Ok(value)
}

/// Thread times (`created_at`, `updated_at`, a step's `at`) to milliseconds, as the original
/// answers them; the file keeps them whole.
fn round_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v.as_f64() {
                    Some(t) if matches!(key.as_str(), "created_at" | "updated_at" | "at") => {
                        *v = json!((t * 1000.0).round() / 1000.0);
                    }
                    _ => round_times(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(round_times),
        _ => {}
    }
}

fn thread_create(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    ok_thread(coral.thread_create(
        args.str("title").unwrap_or_default(),
        args.str("summary"),
        args.str("parent_thread_id"),
        args.str("by"),
    )?)
}

fn thread_status(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let report = match coral.thread_status(
        args.str("thread_id"),
        args.bool("include_archived").unwrap_or(false),
        args.str("query"),
    ) {
        // As the original: asking about an id no thread has is an empty answer, not an error.
        Err(coral::Error::ThreadNotFound(_)) => {
            return Ok(json!({"ok": true, "count": 0, "thread": null}));
        }
        other => other?,
    };
    let mut value = serde_json::to_value(&report).map_err(|e| ToolError::Failed(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("ok".into(), json!(true));
    }
    round_times(&mut value);
    Ok(value)
}

fn thread_advance(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    ok_thread(coral.thread_advance(
        args.str("thread_id").unwrap_or_default(),
        args.str("note").unwrap_or_default(),
        args.bool("done"),
        args.str("by"),
    )?)
}

fn thread_interrupt(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    ok_thread(coral.thread_interrupt(
        args.str("thread_id").unwrap_or_default(),
        args.str("reason"),
    )?)
}

fn thread_archive(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    ok_thread(coral.thread_archive(args.str("thread_id").unwrap_or_default())?)
}

fn thread_resume(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    ok_thread(coral.thread_resume(args.str("thread_id").unwrap_or_default())?)
}

fn thread_link(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    coral.thread_link(
        args.str("child_id").unwrap_or_default(),
        args.str("parent_id").unwrap_or_default(),
    )?;
    Ok(json!({"ok": true}))
}

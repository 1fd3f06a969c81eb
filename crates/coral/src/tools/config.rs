//! The config tools (`coral_config_get`, `coral_config_set`, `coral_config_reset`) and
//! `coral_report`, which close the original's registry.

use serde_json::{Value, json};

use super::{Arg, Args, Kind, ToolDef, ToolError};
use crate::engine::Coral;

pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "coral_config_get",
        description: "Read the configuration, or one dotted key or section such as \
                      memory.capacity_threshold (API key masked). \
                      读取配置（可按点路径取单项或分节，API key 已遮盖）。",
        args: &[Arg {
            name: "path",
            kind: Kind::String,
            required: false,
            description: "dotted key or section; omit for everything / 点路径，省略则返回全部",
            default: None,
        }],
        handler: config_get,
    },
    ToolDef {
        name: "coral_config_set",
        description: "Change one setting now and in coral_config.json, e.g. \
                      retrieval.top_k = 8; paths.*, threads.* and embedding.* are refused. \
                      修改一项配置并写回文件（paths/threads/embedding 不可改）。",
        args: &[
            Arg {
                name: "key_path",
                kind: Kind::String,
                required: true,
                description: "dotted key, e.g. memory.capacity_threshold / 点路径",
                default: None,
            },
            Arg {
                name: "value",
                kind: Kind::Scalar,
                required: true,
                description: "new value of the key's type / 新值（类型须与原值一致）",
                default: None,
            },
        ],
        handler: config_set,
    },
    ToolDef {
        name: "coral_config_reset",
        description: "Restore defaults for one key or section, or (no key) for memory, \
                      retrieval, heat, storage, parallelism and reload; never touches data. \
                      恢复默认配置（单项、分节或全部可调分节），不影响数据。",
        args: &[Arg {
            name: "key_path",
            kind: Kind::String,
            required: false,
            description: "key or section; omit for all tunable sections / 省略则重置全部可调分节",
            default: None,
        }],
        handler: config_reset,
    },
    ToolDef {
        name: "coral_report",
        description: "Health report: stats, disk usage, memories per day for 14 days, the 5 \
                      memories closest to eviction, absolute file paths. \
                      健康报告：统计、磁盘、近 14 天每日新增、最可能被淘汰的 5 条、文件路径。",
        args: &[],
        handler: report,
    },
];

fn report(coral: &Coral, _: &Args) -> Result<Value, ToolError> {
    let mut value =
        serde_json::to_value(coral.report()).map_err(|e| ToolError::Failed(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("ok".into(), json!(true));
    }
    Ok(value)
}

fn config_get(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let path = args.str("path");
    let config = coral.config_get(path)?;
    Ok(json!({"ok": true, "path": path.unwrap_or(""), "config": config}))
}

fn config_set(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let key = args.str("key_path").unwrap_or_default();
    let mut value = args.value("value").cloned().unwrap_or(Value::Null);
    // Models often send numbers and booleans as text: "8", "true". Accept those when the key
    // is not a string setting.
    if let Some(text) = value.as_str() {
        let current = coral.config_get(Some(key))?;
        if !current.is_string()
            && let Ok(parsed) = serde_json::from_str::<Value>(text.trim())
            && (parsed.is_number() || parsed.is_boolean())
        {
            value = parsed;
        }
    }
    let mut result = coral.config_set(key, value)?;
    if let Some(map) = result.as_object_mut() {
        map.insert("ok".into(), json!(true));
    }
    Ok(result)
}

fn config_reset(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let mut result = coral.config_reset(args.str("key_path"))?;
    if let Some(map) = result.as_object_mut() {
        map.insert("ok".into(), json!(true));
    }
    Ok(result)
}

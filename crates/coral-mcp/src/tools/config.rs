//! The config tools (`coral_config_get`, `coral_config_set`, `coral_config_reset`) and
//! `coral_report`, which close the original's registry.

use serde_json::{Map, Value, json};

use super::memory::{disk_usage, round4};
use super::{Arg, Args, DefaultValue, Handler, Kind, ToolDef, ToolError};
use coral::ConfigChange;
use coral::Coral;

/// The confirmation a change that removes many memories at once needs.
const CONFIRM: Arg = Arg {
    name: "confirm",
    kind: Kind::Boolean,
    required: false,
    description: "true to make a change that removes many memories at once (after reading \
                  its preview) / 确认执行会一次删除大量记忆的修改",
    default: Some(DefaultValue::Bool(false)),
};

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
        handler: Handler::Fn(config_get),
        http_only: false,
    },
    ToolDef {
        name: "coral_config_set",
        description: "Change one tuning setting now and in coral_config.json, e.g. \
                      retrieval.top_k = 8 (memory.*, retrieval.*, heat.*, timeline.*, reload.*, \
                      parallelism.*, storage.max_bytes/warn_ratio/hard_ratio; llm.*, embedding.*, \
                      paths.* and storage durability are the user's). A change that would \
                      remove many memories at once returns a preview and needs confirm: true. \
                      修改一项调优配置并写回文件（llm/embedding/paths/存储持久性仅限用户修改）；\
                      若会一次删除大量记忆，先返回预览，需 confirm: true 确认。",
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
            CONFIRM,
        ],
        handler: Handler::Fn(config_set),
        http_only: false,
    },
    ToolDef {
        name: "coral_config_reset",
        description: "Restore the defaults of the tuning settings of one key or section, or \
                      (no key) of every tunable section; never touches data; guarded like \
                      coral_config_set. \
                      恢复调优配置的默认值（单项、分节或全部），不影响数据；同样需确认大量删除。",
        args: &[
            Arg {
                name: "key_path",
                kind: Kind::String,
                required: false,
                description: "key or section; omit for all tunable sections / 省略则重置全部可调分节",
                default: None,
            },
            CONFIRM,
        ],
        handler: Handler::Fn(config_reset),
        http_only: false,
    },
    ToolDef {
        name: "coral_report",
        description: "Health report: stats, disk usage, memories per day for 14 days, the 5 \
                      memories closest to eviction, absolute file paths. \
                      健康报告：统计、磁盘、近 14 天每日新增、最可能被淘汰的 5 条、文件路径。",
        args: &[],
        handler: Handler::Fn(report),
        http_only: false,
    },
];

/// `coral_report` in the original's shape (its GUI's statistics window reads it): the day
/// histogram as `{last_14_days: {date: n}, earlier, total}`, the eviction preview with
/// `location` and `days_old`, heat to 4 places; Coral's own fields beside them.
fn report(coral: &Coral, _: &Args) -> Result<Value, ToolError> {
    let report = coral.report()?;
    let now = coral::unix_now();
    let total = report.stats.total;
    let last_14: Map<String, Value> = report
        .day_histogram
        .iter()
        .map(|d| (d.date.clone(), json!(d.count)))
        .collect();
    let recent: usize = report.day_histogram.iter().map(|d| d.count).sum();
    let preview: Vec<Value> = report
        .eviction_preview
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "content": c.content,
                "heat": round4(c.heat),
                "access_count": c.access_count,
                "importance": c.importance,
                "days_old": ((now - c.timestamp) / 86_400.0 * 10.0).round() / 10.0,
                "location": c.tier.as_str(),
                "last_access": c.last_access,
            })
        })
        .collect();
    let mut value = serde_json::to_value(&report).map_err(|e| ToolError::Failed(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("ok".into(), json!(true));
        map.insert("disk_usage".into(), disk_usage(coral));
        map.insert(
            "day_histogram".into(),
            json!({
                "last_14_days": last_14,
                "earlier": total.saturating_sub(recent),
                "total": total,
            }),
        );
        map.insert("eviction_preview".into(), Value::Array(preview));
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
    let change = coral.config_set_by_tool(key, value, args.bool("confirm").unwrap_or(false))?;
    Ok(change_result(change))
}

/// `coral_config_reset` answers as the original did: `{reset: true, scope, changed,
/// memory_data_untouched: true}`, where `changed` maps the key or section asked for (or, for a
/// reset of everything, each section that changed) to `{old, new}`: the whole section's value
/// for a section, as the original wrote it. Coral's `sections` and `kept` stand beside them.
fn config_reset(coral: &Coral, args: &Args) -> Result<Value, ToolError> {
    let key = args
        .str("key_path")
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let change = coral.config_reset_by_tool(key, args.bool("confirm").unwrap_or(false))?;
    let ConfigChange::Done(done) = change else {
        return Ok(change_result(change));
    };
    let after = coral.config_get(None)?;
    let at = |config: &Value, path: &str| {
        path.split('.')
            .try_fold(config, |node, part| node.get(part))
            .cloned()
            .unwrap_or(Value::Null)
    };
    // The value before: the value now with each changed leaf's old value put back.
    let values = done["values"].as_object().cloned().unwrap_or_default();
    let before = |path: &str| {
        let mut old = at(&after, path);
        for (leaf, change) in &values {
            if leaf == path {
                old = change["old"].clone();
            } else if let Some(rest) = leaf.strip_prefix(&format!("{path}.")) {
                let mut node = &mut old;
                for part in rest.split('.') {
                    node = &mut node[part];
                }
                *node = change["old"].clone();
            }
        }
        old
    };
    let mut changed = Map::new();
    match key {
        Some(key) => {
            changed.insert(
                key.to_string(),
                json!({"old": before(key), "new": at(&after, key)}),
            );
        }
        None => {
            for section in coral::TUNABLE {
                let prefix = format!("{section}.");
                if values.keys().any(|leaf| leaf.starts_with(&prefix)) {
                    changed.insert(
                        section.to_string(),
                        json!({"old": before(section), "new": at(&after, section)}),
                    );
                }
            }
        }
    }
    let mut answer = json!({
        "ok": true,
        "reset": true,
        "scope": key.map_or_else(|| coral::TUNABLE.join("/"), String::from),
        "changed": changed,
        "memory_data_untouched": true,
        "sections": done["reset"],
    });
    if let Some(kept) = done.get("kept") {
        answer["kept"] = kept.clone();
    }
    Ok(answer)
}

/// `{ok: true, ...}` for a change made; for one held back, `{ok: false, needs_confirmation,
/// would_remove, ...}` with the preview and what to do.
fn change_result(change: ConfigChange) -> Value {
    match change {
        ConfigChange::Done(mut result) => {
            if let Some(map) = result.as_object_mut() {
                map.insert("ok".into(), json!(true));
            }
            result
        }
        ConfigChange::NeedsConfirmation(preview) => {
            let mut v = json!({
                "ok": false,
                "needs_confirmation": true,
                "error": format!(
                    "not changed: this would remove {} of {} memories at once (more than {}); \
                     they go to the archive except disk-quota removals. Repeat the call with \
                     confirm: true if that is really wanted.",
                    preview.would_remove, preview.memories, preview.limit
                ),
            });
            if let (Some(map), Ok(Value::Object(p))) =
                (v.as_object_mut(), serde_json::to_value(&preview))
            {
                map.extend(p);
            }
            v
        }
    }
}

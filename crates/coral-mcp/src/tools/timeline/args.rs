//! The arguments the timeline tools share (namespace, zone, times, lists) and how a call's
//! namespace and zone are read from them.

use coral::Config;
use coral::timeline::Namespace;
use serde_json::Value;

use crate::tools::{Arg, Args, DefaultValue, Kind, ToolError};

/// Page budget of `read_timeline` when none (or 0) is given: MemCore's default.
pub(super) const DEFAULT_PAGE_TOKENS: u64 = 12_000;

pub(super) const fn text_arg(name: &'static str, required: bool, description: &'static str) -> Arg {
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
pub(super) const CONVERSATION: Arg = text_arg(
    "conversation_id",
    false,
    "conversation, default \"default\" / 会话，默认 default",
);
pub(super) const ACTOR: Arg = text_arg(
    "actor",
    false,
    "who speaks in a group chat (a tag only) / 发言者标签",
);
pub(super) const TURN_ID: Arg = text_arg(
    "turn_id",
    true,
    "the turn from timeline_begin_turn / 轮次 id",
);
pub(super) const TIMEZONE: Arg = text_arg(
    "timezone",
    false,
    "IANA time zone such as Asia/Shanghai, default timeline.timezone (UTC) / 时区，默认 UTC",
);
pub(super) const SOURCE_ID: Arg = text_arg(
    "source_id",
    false,
    "your id for this entry, makes retries safe; generated when omitted / 条目 id（重试安全）",
);
pub(super) const TIMESTAMP: Arg = Arg {
    name: "timestamp",
    kind: Kind::Number {
        min: 0.0,
        max: coral::MAX_UNIX_TIME,
    },
    required: false,
    description: "when it happened, Unix seconds, default now / 发生时间（Unix 秒），默认现在",
    default: None,
};
pub(super) const PAYLOAD: Arg = Arg {
    name: "payload",
    kind: Kind::Object(&[]),
    required: false,
    description: "structured data kept with the entry / 附带的结构化数据",
    default: None,
};
pub(super) const CROSS: Arg = Arg {
    name: "cross_conversation",
    kind: Kind::Boolean,
    required: false,
    description: "read every conversation of this user, default false / 跨会话读取，默认 false",
    default: Some(DefaultValue::Bool(false)),
};

pub(super) const TIME_RANGE_FIELDS: &[Arg] = &[
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

pub(super) const TIME_RANGE: Arg = Arg {
    name: "time_range",
    kind: Kind::Object(TIME_RANGE_FIELDS),
    required: false,
    description: "exact range {start_at, end_at} / 精确时间范围",
    default: None,
};
pub(super) const DATE_FROM: Arg =
    text_arg("date_from", false, "first local date YYYY-MM-DD / 起始日期");
pub(super) const DATE_TO: Arg = text_arg(
    "date_to",
    false,
    "last local date, inclusive, default date_from / 结束日期（含）",
);

pub(super) const ANCHOR_TURNS: Kind = Kind::Integer { min: 0, max: 50 };

pub(super) const TIME_HINT_FIELDS: &[Arg] = &[
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

pub(super) const fn strings_arg(name: &'static str, description: &'static str) -> Arg {
    Arg {
        name,
        kind: Kind::Strings,
        required: false,
        description,
        default: None,
    }
}

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

/// `timezone` of the host tools that record or report: it names the zone of the reply's times
/// (a turn's own zone, that of its reload cards, is the one `timeline_begin_turn` gave).
pub(super) const REPLY_ZONE: Arg = text_arg(
    "timezone",
    false,
    "IANA zone of the reply's times, default timeline.timezone (UTC); a turn's own zone is \
     set by timeline_begin_turn / 回复所用时区",
);

/// The zone a host tool's reply names: the call's `timezone`, else `timeline.timezone`. A name
/// that is not an IANA zone is refused before anything is written.
pub(super) fn reply_zone(config: &Config, args: &Args) -> Result<String, ToolError> {
    let name = zone(config, args).unwrap_or_else(|| "UTC".into());
    coral::timeline::parse_zone(&name)
        .map(|_| name.trim().to_string())
        .map_err(|m| ToolError::InvalidArguments(format!("invalid_input: {m}")))
}

/// The call's `timezone`, else `timeline.timezone` from the config.
pub(super) fn zone(config: &Config, args: &Args) -> Option<String> {
    Some(
        args.str("timezone")
            .map_or_else(|| config.timeline.timezone.clone(), String::from),
    )
}

pub(super) fn strings(args: &Args, name: &str) -> Vec<String> {
    args.value(name)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

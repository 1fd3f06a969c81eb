//! `timeline.*`: the timeline's layers and reads, with MemCore's key names and defaults
//! (docs/timeline.md, "Layers").

use coral_timeline::LayerSettings;
use serde::{Deserialize, Serialize};

/// `timeline.*`: the timeline's layers and reads, with MemCore's key names and defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimelineConfig {
    /// The layer thresholds, at the section's top level: `raw_token_trigger`,
    /// `raw_token_batch_ratio`, `compaction_min_recent_turns`, `episodic_visible_max`,
    /// `episodic_compact_trigger_count`, `episodic_compact_batch_size`,
    /// `semantic_visible_limit`, `semantic_reinforcement_lookback` and
    /// `semantic_reinforcement_min_overlap` (each described on `LayerSettings`).
    #[serde(flatten)]
    pub layers: LayerSettings,
    /// Hits `retrieve_for_turn` returns when the call gives no limit.
    pub retrieval_limit: usize,
    /// IANA zone of dates and times when a call gives none.
    pub timezone: String,
    /// The namespace servers serve when started without one (`timeline.pin.*`).
    pub pin: PinConfig,
    /// What the model's read tools may return, and whether MCP offers forgetting
    /// (`timeline.policy.*`).
    pub policy: PolicyConfig,
    /// The operator's persona text, domain notes and summary language rule for the
    /// summariser (`timeline.prompt.*`), read at each compaction.
    pub prompt: coral_timeline::PromptOverrides,
}

impl PolicyConfig {
    /// The dispatch policy these settings describe.
    pub fn dispatch(&self) -> coral_timeline::DispatchPolicy {
        coral_timeline::DispatchPolicy {
            allowed_kind_prefixes: self.allowed_kind_prefixes.clone(),
            explicit_trace: self.explicit_trace,
        }
    }
}

/// `timeline.policy.*`: the operator's dispatch policy for the model's read tools
/// (docs/timeline.md, "Dispatch policy"). Read at each call; only the user changes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyConfig {
    /// Kind prefixes of the raw entries the read tools may return (`message.`,
    /// `tool.web_search.`); empty: every kind.
    pub allowed_kind_prefixes: Vec<String>,
    /// MemCore's explicit-trace rule: `retrieve_for_turn` returns tool calls, results and
    /// events only when its `kind_patterns` name them.
    pub explicit_trace: bool,
    /// Offer `timeline_forget` to MCP clients (models) too.
    pub forget_over_mcp: bool,
}

/// `timeline.pin.*`: the namespace `coral mcp` and `coral http` serve when their command line
/// names none (docs/timeline.md, "Pinned namespaces"). An empty part is `"default"` (tenant,
/// user, domain) or any conversation. Read when a server starts; only the user changes it
/// (tools may not: it decides whose data a server hands out).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PinConfig {
    /// Tenant served (empty: `"default"`).
    pub tenant_id: String,
    /// User served (empty: `"default"`).
    pub user_id: String,
    /// Domain served (empty: `"default"`).
    pub domain_id: String,
    /// The one conversation served (empty: any conversation of the user).
    pub conversation_id: String,
    /// Serve every namespace a call names instead of one: any caller may then read any user's
    /// timeline (HTTP also needs a token).
    pub any_namespace: bool,
}

impl Default for TimelineConfig {
    fn default() -> Self {
        TimelineConfig {
            layers: LayerSettings::default(),
            retrieval_limit: coral_timeline::DEFAULT_LIMIT,
            timezone: "UTC".into(),
            pin: PinConfig::default(),
            policy: PolicyConfig::default(),
            prompt: coral_timeline::PromptOverrides::default(),
        }
    }
}

impl TimelineConfig {
    /// The layer thresholds these settings describe.
    pub fn layer_settings(&self) -> LayerSettings {
        self.layers.clone()
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;

    #[test]
    fn the_section_keeps_memcore_keys_in_order() {
        let value = serde_json::to_value(Config::default()).unwrap();
        let keys: Vec<&str> = value["timeline"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "raw_token_trigger",
                "raw_token_batch_ratio",
                "compaction_min_recent_turns",
                "episodic_visible_max",
                "episodic_compact_trigger_count",
                "episodic_compact_batch_size",
                "semantic_visible_limit",
                "semantic_reinforcement_lookback",
                "semantic_reinforcement_min_overlap",
                "retrieval_limit",
                "timezone",
                "pin",
                "policy",
                "prompt"
            ]
        );
        let (c, w) = Config::from_json(
            r#"{"timeline": {"compaction_min_recent_turns": 3, "episodic_visible_max": 4}}"#,
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.timeline.layers.min_recent_turns, 3);
        assert_eq!(c.timeline.layers.episodic_visible_max, 4);
        // Keys left out keep their defaults.
        assert_eq!(c.timeline.layers.raw_token_trigger, 12_000);
        assert_eq!(
            c.timeline.retrieval_limit,
            Config::default().timeline.retrieval_limit
        );
    }

    #[test]
    fn operator_sections_parse_and_a_wrong_value_names_its_key() {
        let (c, w) = Config::from_json(
            r#"{"timeline": {"pin": {"user_id": "alice"}, "policy": {"allowed_kind_prefixes":
                ["message."], "explicit_trace": true}, "prompt": {"persona": "旅行顾问",
                "summary_language": "zh"}}}"#,
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.timeline.pin.user_id, "alice");
        assert!(c.timeline.policy.dispatch().explicit_trace);
        assert_eq!(c.timeline.prompt.summary_language, "zh");
        let err = |text: &str| Config::from_json(text).unwrap_err();
        let e = err(r#"{"timeline": {"prompt": {"persona": 5}}}"#);
        assert!(e.starts_with("timeline.prompt.persona (value 5)"), "{e}");
        let e = err(r#"{"timeline": {"policy": {"explicit_trace": "yes"}}}"#);
        assert!(e.starts_with("timeline.policy.explicit_trace"), "{e}");
        let e = err(r#"{"timeline": {"policy": {"allowed_kind_prefixes": ["Tool.*"]}}}"#);
        assert!(e.contains("timeline.policy.allowed_kind_prefixes") && e.contains("Tool.*"));
        let e = err(r#"{"timeline": {"prompt": {"summary_language": "klingon!"}}}"#);
        assert!(e.contains("timeline.prompt.summary_language"), "{e}");
    }

    #[test]
    fn a_wrong_layer_value_names_its_key_and_value() {
        let check = |text: &str, expected: &str| {
            let err = Config::from_json(text).unwrap_err();
            assert_eq!(err, expected);
        };
        check(
            r#"{"timeline": {"raw_token_trigger": "lots"}}"#,
            r#"timeline.raw_token_trigger (value "lots"): invalid type: string "lots", expected u64"#,
        );
        check(
            r#"{"timeline": {"compaction_min_recent_turns": -1, "timezone": "UTC"}}"#,
            "timeline.compaction_min_recent_turns (value -1): invalid value: integer `-1`, \
             expected usize",
        );
        check(
            r#"{"timeline": {"timezone": 5}}"#,
            "timeline.timezone (value 5): invalid type: integer `5`, expected a string",
        );
    }
}

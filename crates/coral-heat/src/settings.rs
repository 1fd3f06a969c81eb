//! Which LLM endpoint distillation uses: `llm.*` config keys with environment fallbacks.

use std::fmt;
use std::time::Duration;

/// The model used when `llm.model` is empty (docs/configuration.md).
pub const DEFAULT_MODEL: &str = "deepseek-chat";
/// DeepSeek's endpoint, used when the key comes from `DEEPSEEK_API_KEY` and no base URL is set
/// anywhere.
pub const DEEPSEEK_BASE_URL: &str = "https://api.deepseek.com";
/// How long one summary request may take (docs/heat.md, "Distillation").
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A resolved LLM endpoint. `Debug` masks the api key.
#[derive(Clone, PartialEq, Eq)]
pub struct LlmSettings {
    /// The OpenAI-compatible base URL (`…/chat/completions` is appended).
    pub base_url: String,
    /// The bearer token; empty for endpoints that need none (a local server).
    pub api_key: String,
    /// The model name sent with each request.
    pub model: String,
    /// Timeout of one whole request: connect, send and read.
    pub timeout: Duration,
}

impl LlmSettings {
    /// Resolves the endpoint from the `llm.*` config values and the environment, or `None` when
    /// no base URL is configured anywhere (then there is no distillation, silently).
    ///
    /// Each of `base_url` and `api_key` that is empty (or only whitespace) falls back to
    /// `CORAL_LLM_BASE_URL` / `CORAL_LLM_API_KEY`, then to `DEEPSEEK_BASE_URL` /
    /// `DEEPSEEK_API_KEY`. When the key was found but no base URL was, and the key came from
    /// `DEEPSEEK_API_KEY`, the base URL is DeepSeek's own ([`DEEPSEEK_BASE_URL`]): setting that
    /// one variable is how DeepSeek users enable it. An empty `model` is [`DEFAULT_MODEL`].
    ///
    /// `env` looks a variable up (pass `|name| std::env::var(name).ok()`); taking it as a
    /// parameter keeps tests hermetic.
    pub fn resolve(
        base_url: &str,
        api_key: &str,
        model: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<LlmSettings> {
        let lookup =
            |configured: &str, names: [&'static str; 2]| -> Option<(String, &'static str)> {
                let configured = configured.trim();
                if !configured.is_empty() {
                    return Some((configured.to_owned(), "config"));
                }
                names.into_iter().find_map(|name| {
                    let value = env(name)?;
                    let value = value.trim();
                    (!value.is_empty()).then(|| (value.to_owned(), name))
                })
            };
        let key = lookup(api_key, ["CORAL_LLM_API_KEY", "DEEPSEEK_API_KEY"]);
        let base_url = match lookup(base_url, ["CORAL_LLM_BASE_URL", "DEEPSEEK_BASE_URL"]) {
            Some((url, _)) => url,
            None if matches!(key, Some((_, "DEEPSEEK_API_KEY"))) => DEEPSEEK_BASE_URL.to_owned(),
            None => return None,
        };
        let model = match model.trim() {
            "" => DEFAULT_MODEL.to_owned(),
            m => m.to_owned(),
        };
        Some(LlmSettings {
            base_url,
            api_key: key.map(|(k, _)| k).unwrap_or_default(),
            model,
            timeout: DEFAULT_TIMEOUT,
        })
    }
}

impl fmt::Debug for LlmSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &mask(&self.api_key))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// How an api key is shown anywhere: `"***"` when set, `""` when not.
pub(crate) fn mask(key: &str) -> &'static str {
    if key.is_empty() { "" } else { "***" }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resolves against a fake environment given as `NAME=value` pairs.
    fn resolve(config: [&str; 3], env: &[(&str, &str)]) -> Option<LlmSettings> {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LlmSettings::resolve(config[0], config[1], config[2], move |name| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn check(config: [&str; 3], env: &[(&str, &str)], expected: Option<(&str, &str, &str)>) {
        let got = resolve(config, env);
        let got = got
            .as_ref()
            .map(|s| (s.base_url.as_str(), s.api_key.as_str(), s.model.as_str()));
        assert_eq!(got, expected, "config {config:?}, env {env:?}");
    }

    #[test]
    fn config_wins_then_coral_env_then_deepseek_env() {
        let all = [
            ("CORAL_LLM_BASE_URL", "http://coral"),
            ("CORAL_LLM_API_KEY", "coral-key"),
            ("DEEPSEEK_BASE_URL", "http://deepseek"),
            ("DEEPSEEK_API_KEY", "ds-key"),
        ];
        check(
            ["http://cfg", "cfg-key", "m"],
            &all,
            Some(("http://cfg", "cfg-key", "m")),
        );
        check(
            ["", "", ""],
            &all,
            Some(("http://coral", "coral-key", DEFAULT_MODEL)),
        );
        check(
            ["", "", ""],
            &all[2..],
            Some(("http://deepseek", "ds-key", DEFAULT_MODEL)),
        );
        // Each value falls back on its own.
        check(
            ["http://cfg", " ", "m"],
            &all[3..],
            Some(("http://cfg", "ds-key", "m")),
        );
        check(
            ["", "cfg-key", "m"],
            &all[..1],
            Some(("http://coral", "cfg-key", "m")),
        );
    }

    #[test]
    fn no_endpoint_means_none() {
        check(["", "", "m"], &[], None);
        check(["  ", "key", "m"], &[("CORAL_LLM_BASE_URL", "  ")], None);
        // A key from CORAL_LLM_API_KEY alone names no endpoint.
        check(["", "", "m"], &[("CORAL_LLM_API_KEY", "k")], None);
    }

    #[test]
    fn a_deepseek_key_alone_enables_deepseek() {
        check(
            ["", "", ""],
            &[("DEEPSEEK_API_KEY", " ds-key\n")],
            Some((DEEPSEEK_BASE_URL, "ds-key", DEFAULT_MODEL)),
        );
        // ... but not when the key came from the config.
        check(["", "cfg-key", ""], &[], None);
    }

    #[test]
    fn a_keyless_local_endpoint_is_allowed() {
        check(
            ["http://127.0.0.1:8080/v1", "", "local"],
            &[],
            Some(("http://127.0.0.1:8080/v1", "", "local")),
        );
    }

    #[test]
    fn debug_masks_the_key() {
        let s = resolve(["http://x", "sk-secret-123", ""], &[]).unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("api_key: \"***\""), "{shown}");
        assert_eq!(s.timeout, Duration::from_secs(30));
    }
}

//! [`Llm`] over an OpenAI-compatible `POST {base_url}/chat/completions` endpoint, with ureq.

use std::fmt;
use std::io::Read;
use std::time::Duration;

use serde_json::{Value, json};

use crate::llm::summary_prompt;
use crate::settings::mask;
use crate::{Error, Llm, LlmSettings, Result, clean_summary};

/// Sampling temperature of summary requests (docs/heat.md, "Distillation").
const TEMPERATURE: f64 = 0.2;
/// Token budget of an answer: generous because reasoning models spend tokens thinking.
const MAX_TOKENS: u32 = 1_024;
/// The largest successful answer read; a chat completion for an 80-character summary is far
/// smaller, so anything bigger is not one.
const MAX_ANSWER_BYTES: u64 = 1 << 20;
/// How much of an error body is read and how much of it is quoted in [`Error::Http`].
const ERROR_BODY_BYTES: u64 = 4_096;
const ERROR_BODY_CHARS: usize = 300;

/// A client for one OpenAI-compatible chat-completions endpoint. `Debug` masks the api key.
#[derive(Clone)]
pub struct OpenAiClient {
    agent: ureq::Agent,
    endpoint: String,
    api_key: String,
    model: String,
    timeout: Duration,
}

impl OpenAiClient {
    /// A client for `settings`, or [`Error::InvalidBaseUrl`] when the base URL is not an
    /// `http://` or `https://` URL with a host.
    ///
    /// Requests go to `{base_url}/chat/completions`; a trailing `/` is ignored, so
    /// `https://api.deepseek.com`, `https://api.openai.com/v1/` and
    /// `http://127.0.0.1:8080/v1` all work, and a base URL that already ends in
    /// `/chat/completions` is used as it is. Redirects are not followed (they would carry the
    /// key elsewhere), and `settings.timeout` bounds each whole request.
    pub fn new(settings: LlmSettings) -> Result<OpenAiClient> {
        let endpoint = endpoint_of(&settings.base_url)?;
        let agent = ureq::AgentBuilder::new()
            .timeout(settings.timeout)
            .redirects(0)
            .user_agent(concat!("coral/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(OpenAiClient {
            agent,
            endpoint,
            api_key: settings.api_key,
            model: settings.model,
            timeout: settings.timeout,
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One chat completion of `system` + `user` at the summary temperature, allowing
    /// `max_tokens` for the answer; returns the answer's text as the model wrote it. Used by
    /// the timeline's summaries, which parse and check the answer themselves.
    pub fn chat(&self, system: &str, user: &str, max_tokens: u32) -> Result<String> {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": TEMPERATURE,
            "max_tokens": max_tokens,
            "stream": false,
        });
        self.complete(&body)
    }

    /// Posts one chat completion and returns the raw `choices[0].message.content`.
    fn complete(&self, body: &Value) -> Result<String> {
        let mut request = self.agent.post(&self.endpoint);
        if !self.api_key.is_empty() {
            request = request.set("Authorization", &format!("Bearer {}", self.api_key));
        }
        let response = match request.send_json(body) {
            Ok(response) => response,
            Err(ureq::Error::Status(status, response)) => {
                return Err(self.http_error(status, response));
            }
            Err(ureq::Error::Transport(transport)) => {
                return Err(self.transport_error(&transport));
            }
        };
        let status = response.status();
        if !(200..300).contains(&status) {
            return Err(self.http_error(status, response));
        }
        let mut bytes = Vec::new();
        response
            .into_reader()
            .take(MAX_ANSWER_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io_error(&e))?;
        if bytes.len() as u64 > MAX_ANSWER_BYTES {
            return Err(self.malformed(format!("answer larger than {MAX_ANSWER_BYTES} bytes")));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.malformed(format!("not JSON ({e}): {}", self.snippet(&bytes))))?;
        match answer.pointer("/choices/0/message/content") {
            Some(Value::String(content)) => Ok(content.clone()),
            Some(other) => Err(self.malformed(format!(
                "choices[0].message.content is {other}, not a string"
            ))),
            None => Err(self.malformed(format!(
                "no choices[0].message.content in {}",
                self.snippet(&bytes)
            ))),
        }
    }

    fn http_error(&self, status: u16, response: ureq::Response) -> Error {
        let mut bytes = Vec::new();
        // The body only decorates the message; a failure to read it is not worth reporting.
        let _ = response
            .into_reader()
            .take(ERROR_BODY_BYTES)
            .read_to_end(&mut bytes);
        Error::Http {
            url: self.endpoint.clone(),
            status,
            body: self.snippet(&bytes),
        }
    }

    fn transport_error(&self, transport: &ureq::Transport) -> Error {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(transport);
        while let Some(error) = source {
            if let Some(io) = error.downcast_ref::<std::io::Error>() {
                return self.io_error(io);
            }
            source = error.source();
        }
        let kind = transport.kind();
        if kind == ureq::ErrorKind::UnknownScheme {
            // ureq is built without TLS unless its `tls` feature is on.
            return Error::InvalidBaseUrl {
                url: self.endpoint.clone(),
                detail:
                    "this build of coral cannot make https requests (ureq without TLS); use an \
                         http:// endpoint, such as a local proxy"
                        .into(),
            };
        }
        let detail = match transport.message() {
            Some(message) => format!("{kind}: {message}"),
            None => kind.to_string(),
        };
        Error::Unreachable {
            url: self.endpoint.clone(),
            detail: self.redact(&detail),
        }
    }

    fn io_error(&self, error: &std::io::Error) -> Error {
        use std::io::ErrorKind::{TimedOut, WouldBlock};
        if matches!(error.kind(), TimedOut | WouldBlock) {
            Error::Timeout {
                url: self.endpoint.clone(),
                seconds: self.timeout.as_secs_f64(),
            }
        } else {
            Error::Unreachable {
                url: self.endpoint.clone(),
                detail: self.redact(&error.to_string()),
            }
        }
    }

    fn malformed(&self, detail: String) -> Error {
        Error::Malformed {
            url: self.endpoint.clone(),
            detail,
        }
    }

    /// The start of a response body, on one line, with the api key redacted.
    fn snippet(&self, bytes: &[u8]) -> String {
        let text = String::from_utf8_lossy(bytes);
        let text = self.redact(&text.split_whitespace().collect::<Vec<_>>().join(" "));
        let mut chars = text.chars();
        let mut cut: String = chars.by_ref().take(ERROR_BODY_CHARS).collect();
        if chars.next().is_some() {
            cut.push('…');
        }
        if cut.is_empty() {
            "(empty body)".to_owned()
        } else {
            cut
        }
    }

    /// `text` with every occurrence of the api key replaced: servers echo keys in errors.
    fn redact(&self, text: &str) -> String {
        if self.api_key.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.api_key, "***")
        }
    }
}

impl Llm for OpenAiClient {
    fn summarize(&self, texts: &[&str]) -> Result<String> {
        let prompt = summary_prompt(texts)?;
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
            "temperature": TEMPERATURE,
            "max_tokens": MAX_TOKENS,
            "stream": false,
        });
        clean_summary(&self.complete(&body)?)
    }
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("endpoint", &self.endpoint)
            .field("api_key", &mask(&self.api_key))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// `{base_url}/chat/completions`, after checking the base URL's scheme and host.
fn endpoint_of(base_url: &str) -> Result<String> {
    let invalid = |detail: &str| Error::InvalidBaseUrl {
        url: base_url.to_owned(),
        detail: detail.to_owned(),
    };
    let url = base_url.trim().trim_end_matches('/');
    let scheme_len = ["http://", "https://"]
        .into_iter()
        .find(|scheme| {
            url.get(..scheme.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
        })
        .map(str::len)
        .ok_or_else(|| {
            invalid("it must start with http:// or https://, as in http://host[:port][/v1]")
        })?;
    let host = url[scheme_len..]
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    if host.is_empty() {
        return Err(invalid("it names no host, as in http://host[:port][/v1]"));
    }
    if url.chars().any(char::is_whitespace) {
        return Err(invalid("it contains whitespace"));
    }
    if url.ends_with("/chat/completions") {
        Ok(url.to_owned())
    } else {
        Ok(format!("{url}/chat/completions"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(base_url: &str, expected: &str) {
        assert_eq!(endpoint_of(base_url).unwrap(), expected, "{base_url:?}");
    }

    #[test]
    fn endpoints_from_base_urls() {
        check(
            "https://api.deepseek.com",
            "https://api.deepseek.com/chat/completions",
        );
        check(
            "https://api.openai.com/v1/",
            "https://api.openai.com/v1/chat/completions",
        );
        check(
            " http://127.0.0.1:8080/v1 ",
            "http://127.0.0.1:8080/v1/chat/completions",
        );
        check(
            "HTTP://host/v1/chat/completions/",
            "HTTP://host/v1/chat/completions",
        );
    }

    #[test]
    fn unusable_base_urls_are_refused() {
        for bad in [
            "",
            "api.deepseek.com",
            "ftp://host",
            "http://",
            "https:///v1",
            "http://a b",
        ] {
            let err = endpoint_of(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidBaseUrl { .. }),
                "{bad:?}: {err}"
            );
            assert!(err.to_string().contains("llm.base_url"), "{err}");
        }
    }
}

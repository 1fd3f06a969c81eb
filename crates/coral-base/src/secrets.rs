//! Secret redaction: API keys, tokens, private keys and passwords replaced by a marker before
//! a text is stored or embedded, so a key pasted into a chat is never kept or replayed.
//!
//! The shapes are the ones providers document for their credentials (a fixed prefix and a
//! fixed alphabet and length), plus "password = value" style assignments in English and
//! Chinese. Each is anchored on word boundaries and a minimum length, so ordinary words that
//! share a prefix ("sk-learn", "task-force", "密码学") are left alone; the tests hold a corpus of
//! both. See `docs/configuration.md`, "Secrets".

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use regex::Regex;
use serde_json::Value;

/// The text a secret is replaced with: `[redacted:<kind>]`.
pub fn marker(kind: &str) -> String {
    format!("[redacted:{kind}]")
}

/// One kind of secret: its name (in the marker) and its pattern. A pattern with a group named
/// `value` replaces only that group (the name of a `password=` assignment stays readable).
struct Shape {
    kind: &'static str,
    pattern: &'static str,
}

/// The names under which a secret is assigned (`password=…`, `{"api_key": …}`), as a regex
/// alternation.
macro_rules! secret_names {
    () => {
        r"password|passwd|pwd|passphrase|secret|token|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret"
    };
}

const SHAPES: &[Shape] = &[
    Shape {
        kind: "private-key",
        pattern: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\z)",
    },
    Shape {
        kind: "jwt",
        pattern: r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    },
    // OpenAI, Anthropic, DeepSeek and most others: `sk-`, then 20+ of the token alphabet.
    Shape {
        kind: "api-key",
        pattern: r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}",
    },
    Shape {
        kind: "aws-access-key",
        pattern: r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
    },
    Shape {
        kind: "github-token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b",
    },
    Shape {
        kind: "slack-token",
        pattern: r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
    },
    Shape {
        kind: "google-api-key",
        pattern: r"\bAIza[A-Za-z0-9_-]{35}",
    },
    Shape {
        kind: "bearer-token",
        pattern: r"(?i:\bbearer)\s+(?P<value>[A-Za-z0-9._~+/=-]{16,})",
    },
    // `password=…`, `api_key: …`, `secret = "…"`: the value after the assignment.
    Shape {
        kind: "password",
        pattern: concat!(
            r"(?i:\b(?:",
            secret_names!(),
            r#"))\s*[:=]\s*["']?(?P<value>[^\s"',;]{4,})"#
        ),
    },
    // 密码：…, 密码是…, 口令=…, 秘钥为…: the value after the assignment word, in printable
    // ASCII (so "密码是什么" is a question, not a password).
    Shape {
        kind: "password",
        pattern: r"(?:密码|口令|密钥|秘钥)\s*(?:[:：=]|是|为)\s*(?P<value>[!-~&&[^,;]]{4,})",
    },
];

fn compiled() -> &'static [(&'static str, Regex)] {
    static COMPILED: OnceLock<Vec<(&'static str, Regex)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        SHAPES
            .iter()
            // The patterns are constants checked by the tests; one that failed to compile
            // would be left out rather than take the process down.
            .filter_map(|s| Regex::new(s.pattern).ok().map(|r| (s.kind, r)))
            .collect()
    })
}

/// `text` with every secret replaced by [`marker`], and the kinds found (in order, one entry
/// per secret). Borrowed when there is none, which is the common case.
pub fn redact(text: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    let mut found = Vec::new();
    for (kind, re) in compiled() {
        if !re.is_match(&out) {
            continue;
        }
        let mut next = String::with_capacity(out.len());
        let mut last = 0;
        for caps in re.captures_iter(&out) {
            let Some(span) = caps.name("value").or_else(|| caps.get(0)) else {
                continue;
            };
            // A value that is already a marker ("password=[redacted:password]") stays.
            if span.as_str().starts_with("[redacted:") {
                continue;
            }
            next.push_str(&out[last..span.start()]);
            next.push_str(&marker(kind));
            last = span.end();
            found.push(*kind);
        }
        next.push_str(&out[last..]);
        out = Cow::Owned(next);
    }
    (out, found)
}

/// Whether an object key names a secret (`password`, `db_password`, `API-Key`, ...).
fn is_secret_name(key: &str) -> bool {
    static NAME: OnceLock<Option<Regex>> = OnceLock::new();
    NAME.get_or_init(|| Regex::new(concat!(r"(?i)(?:^|[_.-])(?:", secret_names!(), r")$")).ok())
        .as_ref()
        .is_some_and(|re| re.is_match(key))
}

/// Every string of a JSON value (object keys excepted) redacted in place; the kinds found.
/// Strings are redacted one by one, so a marker never breaks the JSON around it (redacting its
/// text form could swallow a closing quote into a value). A string of 4 or more characters
/// under a key that names a secret (`{"api_key": "…"}`) is a password as a whole.
pub fn redact_json(value: &mut Value) -> Vec<&'static str> {
    let mut found = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if let (Cow::Owned(clean), kinds) = redact(s) {
                    *s = clean;
                    found.extend(kinds);
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(fields) => {
                for (key, field) in fields.iter_mut() {
                    match field {
                        Value::String(s)
                            if is_secret_name(key)
                                && s.chars().count() >= 4
                                && !s.starts_with("[redacted:") =>
                        {
                            *s = marker("password");
                            found.push("password");
                        }
                        other => stack.push(other),
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// Whether redaction is on, one switch shared by every writer of a Coral (the memory pool,
/// the threads, the timeline), so that a configuration change reaches them all at once.
/// Clones share the switch. On by default.
#[derive(Clone, Debug)]
pub struct Redaction(Arc<AtomicBool>);

impl Default for Redaction {
    fn default() -> Self {
        Redaction::new(true)
    }
}

impl Redaction {
    /// A switch, on or off.
    pub fn new(on: bool) -> Redaction {
        Redaction(Arc::new(AtomicBool::new(on)))
    }

    /// Whether texts are redacted now.
    pub fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Turn redaction on or off for every holder of this switch.
    pub fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }

    /// [`redact`] when on; `text` as it is when off.
    pub fn apply<'a>(&self, text: &'a str) -> (Cow<'a, str>, Vec<&'static str>) {
        if self.is_on() {
            redact(text)
        } else {
            (Cow::Borrowed(text), Vec::new())
        }
    }

    /// `text` redacted in place when on; the kinds found.
    pub fn apply_owned(&self, text: &mut String) -> Vec<&'static str> {
        match self.apply(text) {
            (Cow::Owned(clean), kinds) => {
                *text = clean;
                kinds
            }
            (Cow::Borrowed(_), kinds) => kinds,
        }
    }

    /// [`redact_json`] when on.
    pub fn apply_json(&self, value: &mut Value) -> Vec<&'static str> {
        if self.is_on() {
            redact_json(value)
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for s in SHAPES {
            Regex::new(s.pattern).unwrap_or_else(|e| panic!("{}: {e}", s.kind));
        }
        assert_eq!(compiled().len(), SHAPES.len());
    }

    /// Texts that hold a secret: each comes back without it, with the marker.
    #[test]
    fn positives() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "my key is sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
                "sk-proj-AbCd",
                "api-key",
            ),
            (
                "DEEPSEEK_API_KEY=sk-0123456789abcdef0123456789abcdef",
                "sk-0123",
                "api-key",
            ),
            (
                "用这个 sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA 调用",
                "sk-ant",
                "api-key",
            ),
            (
                "aws AKIAIOSFODNN7EXAMPLE here",
                "AKIAIOSFODNN7EXAMPLE",
                "aws-access-key",
            ),
            (
                "token ghp_0123456789abcdefghijABCDEFGHIJ012345",
                "ghp_0123",
                "github-token",
            ),
            (
                "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
                "github_pat_11",
                "github-token",
            ),
            (
                "slack xoxb-1234567890-abcdefghij",
                "xoxb-1234",
                "slack-token",
            ),
            (
                "AIzaSyA1234567890abcdefghijklmnopqrstuv",
                "AIzaSy",
                "google-api-key",
            ),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                "eyJhbGci",
                "jwt",
            ),
            (
                "Authorization: Bearer abcdefghijklmnop1234",
                "abcdefghijklmnop1234",
                "bearer-token",
            ),
            ("password=hunter22", "hunter22", "password"),
            ("db PASSWORD: \"s3cr3t!x\"", "s3cr3t!x", "password"),
            ("api_key = abcd1234efgh", "abcd1234efgh", "password"),
            ("TOKEN=abcd1234xyz ./run", "abcd1234xyz", "password"),
            ("我的密码是 Abc12345，别告诉别人", "Abc12345", "password"),
            ("服务器密码：p@ssw0rd", "p@ssw0rd", "password"),
            ("口令=zhima1234", "zhima1234", "password"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
                "MIIEowIBAAKCAQEA",
                "private-key",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off)",
                "b3BlbnNzaC1rZXkt",
                "private-key",
            ),
        ];
        for (text, secret, kind) in cases {
            let (out, found) = redact(text);
            assert!(!out.contains(secret), "{text:?} kept {secret:?}: {out:?}");
            assert!(out.contains(&marker(kind)), "{text:?}: {out:?}");
            assert!(found.contains(kind), "{text:?}: {found:?}");
        }
        // The name of an assignment stays readable; only the value goes.
        assert_eq!(
            redact("password=hunter22").0,
            "password=[redacted:password]"
        );
        assert_eq!(
            redact("我的密码是 Abc12345，别告诉别人").0,
            "我的密码是 [redacted:password]，别告诉别人"
        );
    }

    /// Ordinary texts that look a little like secrets: untouched and borrowed.
    #[test]
    fn near_misses_are_left_alone() {
        for text in [
            "I use sk-learn and scikit-learn for models",
            "the task-force met on Monday",
            "sk-short",
            "AKIA is a prefix, AKIAEXAMPLE is too short",
            "ghp_ is a GitHub prefix",
            "reset your password via the link",
            "the password field is required",
            "password: ***",
            "token expired, log in again",
            "max_token = 4096 and tokens: 1234",
            "Bearer of bad news is not a token",
            "eyJ is how JWTs start",
            "密码学是一门有趣的学科",
            "我忘记密码了",
            "密码是什么来着",
            "BEGIN PRIVATE KEY is a header line",
            "用户喜欢喝冰镇拿铁咖啡",
            "",
        ] {
            let (out, found) = redact(text);
            assert!(matches!(out, Cow::Borrowed(_)), "{text:?} became {out:?}");
            assert!(found.is_empty(), "{text:?}: {found:?}");
        }
    }

    #[test]
    fn several_secrets_in_one_text_each_counted() {
        let (out, found) =
            redact("a sk-AAAAAAAAAAAAAAAAAAAAAAAA b sk-BBBBBBBBBBBBBBBBBBBBBBBB password=xyz12345");
        assert_eq!(found, ["api-key", "api-key", "password"]);
        assert_eq!(
            out,
            "a [redacted:api-key] b [redacted:api-key] password=[redacted:password]"
        );
        // Redacting again finds nothing: the marker is not a secret.
        let (again, none) = redact(&out);
        assert_eq!(again, out);
        assert!(none.is_empty());
    }

    #[test]
    fn json_strings_are_redacted_one_by_one_and_the_json_stays_valid() {
        let mut v = serde_json::json!({
            "command": "curl -H 'Authorization: Bearer abcdefghijklmnop1234' x",
            "env": {"password": "x", "DB_PASSWORD": "s3cr3t!x", "note": "password=\"hunter22\" then text"},
            "keys": ["sk-AAAAAAAAAAAAAAAAAAAAAAAA", 7, null],
            "pem": "-----BEGIN PRIVATE KEY-----\nMIIE\n",
        });
        let found = redact_json(&mut v);
        assert_eq!(found.len(), 5, "{found:?} {v}");
        let text = v.to_string();
        for secret in [
            "abcdefghijklmnop1234",
            "hunter22",
            "sk-AAAA",
            "MIIE",
            "s3cr3t",
        ] {
            assert!(!text.contains(secret), "{text}");
        }
        // Still an object with the same keys, and a private key's marker did not run on to
        // the end of the document.
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["keys"][1], 7);
        assert_eq!(back["env"]["password"], "x");
        assert_eq!(back["env"]["DB_PASSWORD"], "[redacted:password]");
        // A key that only contains a secret's name is not one.
        let mut v = serde_json::json!({"password_hint": "my cat", "secretary": "Ann Lee"});
        assert!(redact_json(&mut v).is_empty(), "{v}");
        assert_eq!(back["pem"], "[redacted:private-key]");
    }

    #[test]
    fn the_switch_is_shared_by_its_clones() {
        let on = Redaction::default();
        let other = on.clone();
        assert_eq!(on.apply("password=hunter22").1, ["password"]);
        other.set(false);
        assert!(!on.is_on());
        let (text, found) = on.apply("password=hunter22");
        assert_eq!(text, "password=hunter22");
        assert!(found.is_empty());
        let mut owned = String::from("sk-AAAAAAAAAAAAAAAAAAAAAAAA");
        assert!(on.apply_owned(&mut owned).is_empty());
        on.set(true);
        assert_eq!(on.apply_owned(&mut owned), ["api-key"]);
        assert_eq!(owned, "[redacted:api-key]");
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_handled(text in "\\PC{0,200}") {
            let (out, found) = redact(&text);
            if found.is_empty() {
                proptest::prop_assert_eq!(out.as_ref(), text.as_str());
            } else {
                proptest::prop_assert!(out.contains("[redacted:"));
            }
        }
    }
}

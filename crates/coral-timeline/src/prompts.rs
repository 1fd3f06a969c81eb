//! Prompt overrides (docs/timeline.md, "Prompt overrides", after MemCore's `PromptOverrides`):
//! the operator's persona text and domain notes put into the summariser's system prompts at run
//! time, and the rule for the summaries' language, which by default keeps the transcript's own
//! (a Chinese conversation gets Chinese memories, never English ones).

use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid};

/// Most characters of `persona`.
pub const MAX_PERSONA_CHARS: usize = 2_000;
/// Most characters of `domain_notes`.
pub const MAX_NOTES_CHARS: usize = 4_000;

/// What the operator adds to the summariser's prompts. Every field is optional; the defaults
/// add nothing but the language rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptOverrides {
    /// Who the assistant is, in the operator's words ("a travel concierge for …").
    pub persona: String,
    /// What matters in this domain: terms, what to keep, what to leave out.
    pub domain_notes: String,
    /// `source` (the default): write in the transcript's language; or a language tag such as
    /// `zh`, `en`, `ja`, `pt-BR`: always write in that language.
    pub summary_language: String,
}

impl Default for PromptOverrides {
    fn default() -> Self {
        PromptOverrides {
            persona: String::new(),
            domain_notes: String::new(),
            summary_language: "source".into(),
        }
    }
}

/// The language a transcript is mostly written in, as far as the summariser's rule needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Script {
    Chinese,
    Japanese,
    Korean,
    Other,
}

impl Script {
    /// The script of most of `text`'s letters: Han characters (with no kana) are Chinese,
    /// kana Japanese, Hangul Korean, when they are at least a fifth of the letters.
    pub(crate) fn of(text: &str) -> Script {
        let (mut letters, mut han, mut kana, mut hangul) = (0usize, 0usize, 0usize, 0usize);
        for c in text.chars().filter(|c| c.is_alphabetic()) {
            letters += 1;
            match c {
                '\u{3040}'..='\u{30ff}' => kana += 1,
                '\u{ac00}'..='\u{d7af}' | '\u{1100}'..='\u{11ff}' => hangul += 1,
                c if coral_base::is_cjk(c) => han += 1,
                _ => {}
            }
        }
        let enough = |n: usize| n > 0 && n * 5 >= letters;
        if enough(kana) {
            Script::Japanese
        } else if enough(hangul) {
            Script::Korean
        } else if enough(han) {
            Script::Chinese
        } else {
            Script::Other
        }
    }
}

impl PromptOverrides {
    /// Refuse what could not work, naming the field: over-long texts, control characters
    /// other than line breaks and tabs, a language that is neither `source` nor a tag.
    pub fn validate(&self) -> Result<()> {
        for (name, text, max) in [
            ("persona", &self.persona, MAX_PERSONA_CHARS),
            ("domain_notes", &self.domain_notes, MAX_NOTES_CHARS),
        ] {
            let n = text.chars().count();
            if n > max {
                return invalid(format!(
                    "{name} is {n} characters; at most {max} (shorten it)"
                ));
            }
            if text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t')
            {
                return invalid(format!(
                    "{name} contains control characters; only line breaks and tabs are allowed"
                ));
            }
        }
        let lang = self.summary_language.as_str();
        let tag = |s: &str| {
            let mut parts = s.split('-');
            let first = parts.next().unwrap_or("");
            (2..=3).contains(&first.len())
                && first.chars().all(|c| c.is_ascii_alphabetic())
                && parts.all(|p| {
                    (2..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric())
                })
        };
        if lang != "source" && !(lang.len() <= 35 && tag(lang)) {
            return invalid(format!(
                "summary_language {lang:?} is not \"source\" or a language tag such as \"zh\", \
                 \"en\" or \"pt-BR\""
            ));
        }
        Ok(())
    }

    /// `base` (a built-in system prompt) with the persona, the domain notes and the language
    /// rule for `transcript` (the text the summariser will read) after it.
    pub(crate) fn system(&self, base: &str, transcript: &str) -> String {
        let mut out = base.to_string();
        if !self.persona.trim().is_empty() {
            out.push_str("\n\nThe assistant whose memory this is (from its operator): ");
            out.push_str(self.persona.trim());
        }
        if !self.domain_notes.trim().is_empty() {
            out.push_str("\n\nDomain notes from the operator: ");
            out.push_str(self.domain_notes.trim());
        }
        out.push_str("\n\n");
        out.push_str(&self.language_rule(transcript));
        out
    }

    fn language_rule(&self, transcript: &str) -> String {
        if self.summary_language != "source" {
            return format!(
                "Language: write every field (title, summary, hint, content, terms) in the \
                 language {}, whatever language the source is in.",
                self.summary_language
            );
        }
        match Script::of(transcript) {
            Script::Chinese => "Language: the source is Chinese, so write every field (title, \
                summary, hint, content, terms) in Chinese, never in English; keep names as \
                written. 语言：原文是中文，所有字段都必须用中文书写，不要翻译成英文。"
                .into(),
            Script::Japanese => "Language: the source is Japanese, so write every field in \
                Japanese, never in English. 言語：原文は日本語なので、すべて日本語で書くこと。"
                .into(),
            Script::Korean => "Language: the source is Korean, so write every field in Korean, \
                never in English. 언어: 원문이 한국어이므로 모든 항목을 한국어로 쓰십시오."
                .into(),
            Script::Other => "Language: write every field in the language of the source; do \
                not translate it."
                .into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_and_the_language_rule() {
        assert_eq!(Script::of("用户计划去杭州西湖旅行 hotel"), Script::Chinese);
        assert_eq!(Script::of("東京でラーメンを食べた"), Script::Japanese);
        assert_eq!(Script::of("서울에서 만나요"), Script::Korean);
        assert_eq!(Script::of("meet at the station at 9"), Script::Other);
        let p = PromptOverrides::default();
        assert!(p.system("BASE", "我们明天去杭州").contains("in Chinese"));
        assert!(!p.system("BASE", "see you tomorrow").contains("Chinese"));
        let fixed = PromptOverrides {
            summary_language: "en".into(),
            persona: "旅行顾问小满".into(),
            domain_notes: "keep budgets".into(),
        };
        let s = fixed.system("BASE", "我们明天去杭州");
        assert!(s.starts_with("BASE") && s.contains("旅行顾问小满") && s.contains("keep budgets"));
        assert!(s.contains("language en") && !s.contains("in Chinese"));
    }

    #[test]
    fn bad_overrides_are_named() {
        let check = |p: PromptOverrides, needle: &str| {
            let e = p.validate().unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        };
        check(
            PromptOverrides {
                persona: "x".repeat(MAX_PERSONA_CHARS + 1),
                ..PromptOverrides::default()
            },
            "persona",
        );
        check(
            PromptOverrides {
                domain_notes: "a\u{1b}[2J".into(),
                ..PromptOverrides::default()
            },
            "domain_notes",
        );
        check(
            PromptOverrides {
                summary_language: "chinese please".into(),
                ..PromptOverrides::default()
            },
            "summary_language",
        );
        assert!(
            PromptOverrides {
                summary_language: "pt-BR".into(),
                persona: "line one\nline two".into(),
                ..PromptOverrides::default()
            }
            .validate()
            .is_ok()
        );
    }
}

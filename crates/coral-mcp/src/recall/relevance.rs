//! How relevant a memory is to a prompt, on content alone (docs/hooks.md, "Recall"): the
//! share of content words they have in common, and with a sentence model the cosine of their
//! vectors. Recency and heat are left out: a fresh memory that shares nothing with the prompt
//! is not relevant to it.
//!
//! Words are Coral's tokens (`coral::tokenize`: words, and each character of a CJK run) less
//! function words, which every English or Chinese text has: with them, "restore the staging
//! database" shares "the" with "The user likes iced latte coffee" and hash vectors give the
//! pair a cosine of 0.31, more than "推荐一杯拿铁咖啡" gets with "用户喜欢喝冰镇拿铁咖啡" after
//! a long English preamble.

use std::collections::HashSet;

/// English function words and contractions' tails.
const ENGLISH: &[&str] = &[
    "a", "about", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "here",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "let", "ll", "may",
    "me", "might", "must", "my", "no", "not", "of", "on", "or", "our", "please", "s", "shall",
    "she", "should", "so", "some", "t", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "up", "us", "ve", "very", "was", "we", "were", "what",
    "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Chinese function characters (particles, pronouns, copulas, measure words) that carry no
/// topic of their own.
const CHINESE: &[&str] = &[
    "的", "了", "是", "我", "你", "他", "她", "它", "们", "在", "有", "和", "就", "不", "也", "都",
    "这", "那", "个", "吗", "呢", "吧", "啊", "么", "什", "怎", "哪", "要", "会", "能", "把", "被",
    "给", "对", "从", "到", "与", "及", "或", "而", "但", "又", "很", "还", "一",
];

/// The content words of `text`: its distinct tokens less function words.
pub fn content_words(text: &str) -> HashSet<String> {
    coral::tokenize(text)
        .into_iter()
        .filter(|t| !ENGLISH.contains(&t.as_str()) && !CHINESE.contains(&t.as_str()))
        .collect()
}

/// The set cosine of two word sets: shared words over the geometric mean of their sizes, in
/// 0..=1 (0 when either is empty).
pub fn overlap(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let shared = a.iter().filter(|w| b.contains(*w)).count();
    shared as f64 / ((a.len() * b.len()) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(prompt: &str, memory: &str) -> f64 {
        overlap(&content_words(prompt), &content_words(memory))
    }

    #[test]
    fn function_words_give_no_relevance_and_content_words_do() {
        assert_eq!(
            check(
                "restore the staging database",
                "The user likes iced latte coffee"
            ),
            0.0
        );
        assert_eq!(
            check(
                "when is the weekly meeting",
                "The staging database is restored"
            ),
            0.0
        );
        assert_eq!(check("我的是", "你的了"), 0.0);
        assert!(check("推荐一杯拿铁咖啡", "用户喜欢喝冰镇拿铁咖啡") > 0.3);
        assert!(
            check(
                "Which coffee should the shop's menu put first for the user? 推荐一杯拿铁咖啡",
                "用户喜欢喝冰镇拿铁咖啡"
            ) > 0.3
        );
        assert!(
            check(
                "restore the staging database",
                "The staging database is restored"
            ) > 0.5
        );
        assert_eq!(check("", "anything"), 0.0);
    }
}

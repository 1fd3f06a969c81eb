//! Keyword terms for BM25: NFKC, lower-case, words, and CJK unigrams plus bigrams.

use coral_base::{is_cjk, normalize};
use unicode_normalization::char::is_combining_mark;

/// Splits text into BM25 terms, keeping order and duplicates (MemCore's tokeniser,
/// docs/timeline.md, "Retrieval").
///
/// The text is NFKC-normalised and lower-cased. A maximal run of letters and digits that are
/// not CJK (plus the combining marks that follow them) is one term. A maximal run of CJK
/// characters (ideographs of every block, kana, hangul) gives each character as a term, then
/// each pair of neighbours in the run as a bigram. Everything else separates terms.
///
/// On text made of ASCII and U+4E00–U+9FFF characters this is MemCore's tokeniser exactly
/// (`[a-z0-9]+` words, CJK unigrams then bigrams per run); other letters are kept where
/// MemCore dropped them (`café` stays one word).
///
/// ```
/// use coral_score::keyword_terms;
/// assert_eq!(keyword_terms("Hello World, GPT-4o 模型"), ["hello", "world", "gpt", "4o", "模", "型", "模型"]);
/// assert_eq!(keyword_terms("ＡＢＣ１２３ 全角"), ["abc123", "全", "角", "全角"]);
/// ```
pub fn keyword_terms(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    for_each_keyword_term(text, |t| terms.push(t.to_owned()));
    terms
}

/// Calls `emit` with each term of [`keyword_terms`] in order, without allocating per term.
pub fn for_each_keyword_term(text: &str, mut emit: impl FnMut(&str)) {
    let text = normalize(text);
    let text = text.as_ref();
    let mut run: Option<Run> = None;
    for (i, c) in text.char_indices() {
        let class = if is_cjk(c) {
            Some(Class::Cjk)
        } else if c.is_alphanumeric()
            || (is_combining_mark(c) && run.is_some_and(|r| r.class == Class::Word))
        {
            Some(Class::Word)
        } else {
            None
        };
        match (run, class) {
            (Some(r), Some(class)) if r.class == class => {}
            (current, class) => {
                if let Some(r) = current {
                    r.emit(&text[r.start..i], &mut emit);
                }
                run = class.map(|class| Run { start: i, class });
            }
        }
    }
    if let Some(r) = run {
        r.emit(&text[r.start..], &mut emit);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Word,
    Cjk,
}

/// The run being read: where it starts and what it is made of.
#[derive(Clone, Copy)]
struct Run {
    start: usize,
    class: Class,
}

impl Run {
    fn emit(self, run: &str, emit: &mut impl FnMut(&str)) {
        match self.class {
            Class::Word => emit(run),
            Class::Cjk => {
                for (i, c) in run.char_indices() {
                    emit(&run[i..i + c.len_utf8()]);
                }
                let mut chars = run.char_indices().peekable();
                while let Some((i, _)) = chars.next() {
                    if let Some(&(j, next)) = chars.peek() {
                        emit(&run[i..j + next.len_utf8()]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(keyword_terms(text), expected, "keyword_terms({text:?})");
    }

    #[test]
    fn cases() {
        check("", &[]);
        check("  ,.!  ", &[]);
        check("a", &["a"]);
        check("我", &["我"]);
        check("喝可乐", &["喝", "可", "乐", "喝可", "可乐"]);
        check("gpt模型v2", &["gpt", "模", "型", "模型", "v2"]);
        check("爬山 日出", &["爬", "山", "爬山", "日", "出", "日出"]);
        check("Café CRÈME", &["café", "crème"]);
        // Combining marks stay with their word (NFKC composes what it can; this one cannot).
        check("q\u{0307}x", &["q\u{0307}x"]);
        check("ｶﾀｶﾅ", &["カ", "タ", "カ", "ナ", "カタ", "タカ", "カナ"]);
        check("한국어", &["한", "국", "어", "한국", "국어"]);
        check("snake_case-word", &["snake", "case", "word"]);
        check("项目7", &["项", "目", "项目", "7"]);
    }

    /// MemCore's own tokeniser output (golden data).
    #[test]
    fn golden_memcore_tokenize() {
        let data: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/memcore_test_vectors.json"
        )))
        .unwrap();
        let cases = data["tokenize"].as_object().unwrap();
        assert!(cases.len() >= 7);
        for (text, expected) in cases {
            let expected: Vec<&str> = expected
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            check(text, &expected);
        }
    }

    proptest! {
        #[test]
        fn terms_are_non_empty_normalised_and_separator_free(text in "\\PC{0,40}") {
            let mut count = 0;
            for_each_keyword_term(&text, |t| {
                count += 1;
                assert!(!t.is_empty());
                assert!(t.chars().all(|c| c.is_alphanumeric() || is_cjk(c) || is_combining_mark(c)), "{t:?}");
                assert_eq!(normalize(t), t);
            });
            prop_assert_eq!(count, keyword_terms(&text).len());
        }

        /// Every CJK run of n characters gives n unigrams and n - 1 bigrams.
        #[test]
        fn cjk_runs_give_unigrams_and_bigrams(run in "[\u{4E00}-\u{9FFF}]{1,12}") {
            let n = run.chars().count();
            let terms = keyword_terms(&run);
            prop_assert_eq!(terms.len(), 2 * n - 1);
            prop_assert!(terms[..n].iter().all(|t| t.chars().count() == 1));
            prop_assert!(terms[n..].iter().all(|t| t.chars().count() == 2));
        }
    }
}

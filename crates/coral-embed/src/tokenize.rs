//! The tokeniser: NFKC, lower-case, runs of letters and digits, CJK runs also split per char.

use coral_base::{is_cjk, normalize};
use unicode_normalization::char::is_combining_mark;

/// Splits text into tokens (docs/embeddings.md), keeping order and duplicates.
///
/// The text is NFKC-normalised and lower-cased; every maximal run of letters and digits (plus
/// the combining marks that follow them, so Indic and Thai words stay whole) is a token. A run
/// of more than one character that contains a CJK character (ideographs of every block, kana,
/// hangul) is followed by each of its characters as a token of its own. Everything else
/// separates tokens.
///
/// ```
/// use coral_embed::tokenize;
/// assert_eq!(tokenize("Hello, Coral-Memory v2!"), ["hello", "coral", "memory", "v2"]);
/// assert_eq!(tokenize("咖啡偏好"), ["咖啡偏好", "咖", "啡", "偏", "好"]);
/// assert_eq!(tokenize("ＡＢＣ１２３ café"), ["abc123", "café"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for_each_token(text, |token| tokens.push(token.to_owned()));
    tokens
}

/// Calls `emit` with each token of `text`, in order, without allocating per token.
pub(crate) fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
    let text = normalize(text);
    let text = text.as_ref();
    // The current run: byte start, number of chars, whether it holds a CJK char.
    let mut run: Option<(usize, usize, bool)> = None;
    for (i, c) in text.char_indices() {
        let continues = is_run_char(c) || (run.is_some() && is_combining_mark(c));
        match (&mut run, continues) {
            (Some((_, chars, cjk)), true) => {
                *chars += 1;
                *cjk |= is_cjk(c);
            }
            (None, true) => run = Some((i, 1, is_cjk(c))),
            (Some(_), false) => {
                if let Some((start, chars, cjk)) = run.take() {
                    emit_run(&text[start..i], chars, cjk, &mut emit);
                }
            }
            (None, false) => {}
        }
    }
    if let Some((start, chars, cjk)) = run {
        emit_run(&text[start..], chars, cjk, &mut emit);
    }
}

fn emit_run(run: &str, chars: usize, cjk: bool, emit: &mut impl FnMut(&str)) {
    emit(run);
    if cjk && chars > 1 {
        for (i, c) in run.char_indices() {
            emit(&run[i..i + c.len_utf8()]);
        }
    }
}

/// Letters and digits. The U+4E00–U+9FFF block is listed explicitly because the original
/// tokeniser treated all of it as run characters, assigned or not.
fn is_run_char(c: char) -> bool {
    c.is_alphanumeric() || ('\u{4E00}'..='\u{9FFF}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(tokenize(text), expected, "tokenize({text:?})");
    }

    #[test]
    fn ascii() {
        check("", &[]);
        check("  ,.!  ", &[]);
        check("a", &["a"]);
        check(
            "Hello World, hello Coral-Memory v2!",
            &["hello", "world", "hello", "coral", "memory", "v2"],
        );
        check(
            "snake_case x86_64 3.14",
            &["snake", "case", "x86", "64", "3", "14"],
        );
        check("ALLCAPS", &["allcaps"]);
    }

    #[test]
    fn cjk() {
        check("我", &["我"]);
        check("咖啡偏好", &["咖啡偏好", "咖", "啡", "偏", "好"]);
        check(
            "中文mixed文本",
            &[
                "中文mixed文本",
                "中",
                "文",
                "m",
                "i",
                "x",
                "e",
                "d",
                "文",
                "本",
            ],
        );
        check("接口 42，在", &["接口", "接", "口", "42", "在"]);
        // Extension B ideograph (U+20000 block) and extension A.
        check("𠀀㐀", &["𠀀㐀", "𠀀", "㐀"]);
        check("カタカナ", &["カタカナ", "カ", "タ", "カ", "ナ"]);
        check("ひらがな", &["ひらがな", "ひ", "ら", "が", "な"]);
        check(
            "한국어 텍스트",
            &["한국어", "한", "국", "어", "텍스트", "텍", "스", "트"],
        );
        // Half-width katakana become full-width under NFKC.
        check("ｶﾀ", &["カタ", "カ", "タ"]);
    }

    #[test]
    fn fixes_over_the_original() {
        check(
            "ＡＢＣ全角１２３ and 中文mixed文本",
            &[
                "abc全角123",
                "a",
                "b",
                "c",
                "全",
                "角",
                "1",
                "2",
                "3",
                "and",
                "中文mixed文本",
                "中",
                "文",
                "m",
                "i",
                "x",
                "e",
                "d",
                "文",
                "本",
            ],
        );
        check("Café Ünïcode", &["café", "ünïcode"]);
        // Decomposed input composes under NFKC.
        check("cafe\u{301}", &["café"]);
        check("Ελληνικά Русский", &["ελληνικά", "русский"]);
        // Combining marks (virama, vowel signs) keep Indic words whole.
        check("हिन्दी भाषा", &["हिन्दी", "भाषा"]);
        check("ﬁne ²", &["fine", "2"]);
        // A mark with no base is a separator.
        check("\u{301}x", &["x"]);
    }

    proptest! {
        #[test]
        fn ascii_matches_simple_split(text in "[ -~]{0,40}") {
            let expected: Vec<String> = text
                .to_ascii_lowercase()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect();
            prop_assert_eq!(tokenize(&text), expected);
        }

        #[test]
        fn tokens_are_nonempty_and_normalized(text in any::<String>()) {
            for token in tokenize(&text) {
                prop_assert!(!token.is_empty());
                prop_assert!(!token.chars().any(char::is_whitespace), "{token:?}");
            }
        }
    }
}

//! Text folding and character classes shared by every tokeniser: NFKC plus lower case, CJK
//! classes, and the term folding of catalogues.
//!
//! Both keyword paths (the hashed tokens of `coral-embed` and the BM25 terms of `coral-score`)
//! and the timeline's term catalogue compare text through these, so one spelling of a word in
//! one place matches it in another.

use std::borrow::Cow;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// NFKC, then lower case (Python's `str.lower()`: every character that changes when lowercased,
/// titlecase letters included). ASCII text is only lowercased, and text already in that form is
/// borrowed, not copied.
pub fn normalize(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        };
    }
    let nfkc = match is_nfkc_quick(text.chars()) {
        IsNormalized::Yes => Cow::Borrowed(text),
        IsNormalized::No | IsNormalized::Maybe => Cow::Owned(text.nfkc().collect::<String>()),
    };
    if nfkc.chars().any(changes_when_lowercased) {
        Cow::Owned(nfkc.to_lowercase())
    } else {
        nfkc
    }
}

/// Whether lowercasing changes `c` (uppercase and titlecase letters, and others with a
/// lowercase mapping; `char::is_uppercase` misses the titlecase ones such as `ǅ`).
pub fn changes_when_lowercased(c: char) -> bool {
    let mut lower = c.to_lowercase();
    !(lower.len() == 1 && lower.next() == Some(c))
}

/// Characters that are words on their own: CJK ideographs of every block (all of
/// U+4E00–U+9FFF, assigned or not, as the original tokenisers treat it), kana and hangul.
pub fn is_cjk(c: char) -> bool {
    matches!(
        c as u32,
        0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xF900..=0xFAFF
            | 0x2_0000..=0x3_FFFF
            | 0x3040..=0x30FF
            | 0x31F0..=0x31FF
            | 0xAC00..=0xD7AF
            | 0x1100..=0x11FF
            | 0x3130..=0x318F
    )
}

/// A catalogue term as stored: NFKC, every run of whitespace made one space, trimmed.
pub fn clean_term(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The key two catalogue terms are compared by: [`clean_term`], lowercased.
pub fn fold_term(text: &str) -> String {
    normalize(&clean_term(text)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_is_nfkc_then_lower_case_including_titlecase() {
        assert_eq!(normalize("Latte ＡＢＣ"), "latte abc");
        assert!(matches!(normalize("latte"), Cow::Borrowed(_)));
        assert!(matches!(normalize("拿铁咖啡"), Cow::Borrowed(_)));
        // U+1F88 is titlecase (and NFKC keeps it): not `is_uppercase`, but Python lowercases
        // it to U+1F80. The BM25 terms used to miss it.
        assert!(!'\u{1f88}'.is_uppercase());
        assert_eq!(normalize("\u{1f88}x"), "\u{1f80}x");
        assert_eq!(fold_term("  Deploy\u{3000}\tPlan "), "deploy plan");
        assert_eq!(clean_term("  Deploy\u{3000}\tPlan "), "Deploy Plan");
    }

    #[test]
    fn cjk_classes_cover_the_blocks_and_nothing_latin() {
        for c in ['拿', '㐀', '豈', '𠀀', 'あ', 'ア', '한', 'ㄱ'] {
            assert!(is_cjk(c), "{c}");
        }
        for c in ['a', 'é', '1', '，', ' '] {
            assert!(!is_cjk(c), "{c}");
        }
    }
}

//! Done-detection: does an advance note say that something was completed?

/// Chinese words that report completion (完成 finished, 交付 delivered, 上线 went live, 发布
/// released, 验收 accepted, 解决 solved, 搞定 sorted, 落地 landed, 定稿 finalised), plus the
/// check mark agents like to append.
const COMPLETION_WORDS: &[&str] = &[
    "完成", "交付", "上线", "发布", "验收", "解决", "搞定", "落地", "定稿", "✅",
];

/// Chinese markers that make the same words describe a plan instead (待 to be, 未/尚 not yet,
/// 计划 planned, 准备/打算 about to, 下一步 next step). They win over completion words.
const PENDING_MARKERS: &[&str] = &["待", "未", "尚", "计划", "准备", "打算", "下一步"];

/// English completion words, matched as whole words, case-insensitively.
const COMPLETION_WORDS_EN: &[&str] = &[
    "done",
    "shipped",
    "released",
    "fixed",
    "completed",
    "finished",
    "resolved",
    "delivered",
];

/// English pending markers, whole words ("not done", "todo: ship it", "will be released").
const PENDING_MARKERS_EN: &[&str] = &[
    "not", "todo", "pending", "plan", "planned", "planning", "next", "will", "wip", "tbd", "yet",
];

/// Whether `c` is the first character of an entry of `COMPLETION_WORDS` or `PENDING_MARKERS`
/// (a test keeps this in step with the lists).
fn starts_an_entry(c: char) -> bool {
    matches!(
        c,
        '完' | '交'
            | '上'
            | '发'
            | '验'
            | '解'
            | '搞'
            | '落'
            | '定'
            | '✅'
            | '待'
            | '未'
            | '尚'
            | '计'
            | '准'
            | '打'
            | '下'
    )
}

/// True when `note` reports completion: it contains a completion word (Chinese, or English as
/// a whole word) and no pending marker. Used when an advance does not say `done` itself.
///
/// ```
/// use coral_thread::looks_completed;
/// assert!(looks_completed("向量重建完成，检索验证通过"));
/// assert!(!looks_completed("下一步：完成测试"));
/// assert!(looks_completed("Bug fixed, tests green"));
/// assert!(!looks_completed("not done yet"));
/// ```
pub fn looks_completed(note: &str) -> bool {
    // One pass over the characters, comparing against the lists only where an entry could
    // start. (Seventeen `contains` calls per note took a seventh of an advance's time.)
    let mut chinese_done = false;
    for (i, c) in note.char_indices() {
        if !starts_an_entry(c) {
            continue;
        }
        let rest = &note[i..];
        if PENDING_MARKERS.iter().any(|m| rest.starts_with(m)) {
            return false;
        }
        chinese_done = chinese_done || COMPLETION_WORDS.iter().any(|w| rest.starts_with(w));
    }
    let mut english_done = false;
    for word in note
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let is = |list: &[&str]| list.iter().any(|w| w.eq_ignore_ascii_case(word));
        if is(PENDING_MARKERS_EN) {
            return false;
        }
        english_done |= is(COMPLETION_WORDS_EN);
    }
    english_done || chinese_done
}

#[cfg(test)]
mod tests {
    use super::looks_completed;

    fn check(note: &str, expected: bool) {
        assert_eq!(looks_completed(note), expected, "looks_completed({note:?})");
    }

    #[test]
    fn chinese_words_and_pending_markers() {
        check("已上线", true);
        check("问题已解决", true);
        check("方案定稿", true);
        check("尚未发布", false);
        check("准备验收", false);
        check("打算落地", false);
        check("在做", false);
    }

    #[test]
    fn every_chinese_entry_starts_with_a_listed_character() {
        for w in super::COMPLETION_WORDS.iter().chain(super::PENDING_MARKERS) {
            assert!(super::starts_an_entry(w.chars().next().unwrap()), "{w}");
        }
        // Words anywhere in the note, after ASCII or not.
        check("v2 完成", true);
        check("完成 v2 待定", false);
        check("ok ✅", true);
    }

    /// The definition the one-pass scan must agree with: `contains` for every Chinese entry.
    fn reference(note: &str) -> bool {
        use super::*;
        if PENDING_MARKERS.iter().any(|m| note.contains(m)) {
            return false;
        }
        let mut english_done = false;
        for word in note
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let is = |list: &[&str]| list.iter().any(|w| w.eq_ignore_ascii_case(word));
            if is(PENDING_MARKERS_EN) {
                return false;
            }
            english_done |= is(COMPLETION_WORDS_EN);
        }
        english_done || COMPLETION_WORDS.iter().any(|w| note.contains(w))
    }

    proptest::proptest! {
        #[test]
        fn the_scan_agrees_with_the_definition(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "完成", "完", "成", "待", "下一步", "下", "发布", "✅", "done", "not", "x", " ",
                "，", "已", "交付", "上线", "Fixed", "计划", "e\u{301}", "落地", "尚",
            ]), 0..8)
        ) {
            let note: String = parts.concat();
            proptest::prop_assert_eq!(looks_completed(&note), reference(&note), "{:?}", note);
        }
    }

    #[test]
    fn english_is_matched_by_whole_words() {
        check("Done.", true);
        check("v2 SHIPPED to prod", true);
        check("undone work", false);
        check("doneness", false);
        check("next: release once fixed", false);
        check("TODO fixed?", false);
        check("will be released", false);
    }
}

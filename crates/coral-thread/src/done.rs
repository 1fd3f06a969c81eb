//! Done-detection: does an advance note say that something was completed?
//!
//! The rule is the original Coral's, so a thread advanced by either implementation gets the
//! same `done` marks: a note is done when it contains a completion word and no pending word.
//! `fixtures/compat/coral_thread_done.json` (95 notes the original judged) is the reference;
//! a test checks every one. Only Chinese words count: the original judges "done", "shipped"
//! or "Deployed to prod ✅" not done, so English notes (and check marks alone) need an
//! explicit `done: true`. See `docs/threads.md`.

/// Words that report completion: 完成/完毕 finished, 交付 delivered, 上线 live, 发布 released,
/// 验收 accepted, 解决 solved, 搞定 sorted, 收官 wrapped up, 定稿 finalised, 落地 landed,
/// 竣工/完工/收工 work finished, 收尾 wrapping up, 推送 pushed.
const COMPLETION_WORDS: &[&str] = &[
    "完成", "完毕", "交付", "上线", "发布", "验收", "解决", "搞定", "收官", "定稿", "落地", "竣工",
    "完工", "收工", "收尾", "推送",
];

/// Words that make the same note describe a plan or an open item instead: 未 not (incl. 尚未,
/// 暂未), 尚 still, 待 to be, 还需/仍需 still needs, 先不 not yet, 拟 intended, 计划 planned,
/// 准备/打算 about to, 下一步 next step. They win over completion words, wherever they are.
const PENDING_WORDS: &[&str] = &[
    "未",
    "尚",
    "待",
    "还需",
    "仍需",
    "先不",
    "拟",
    "计划",
    "准备",
    "打算",
    "下一步",
];

/// Whether `c` is the first character of an entry of either list (a test keeps this in step
/// with them).
fn starts_an_entry(c: char) -> bool {
    matches!(
        c,
        '完' | '交'
            | '上'
            | '发'
            | '验'
            | '解'
            | '搞'
            | '收'
            | '定'
            | '落'
            | '竣'
            | '推'
            | '未'
            | '尚'
            | '待'
            | '还'
            | '仍'
            | '先'
            | '拟'
            | '计'
            | '准'
            | '打'
            | '下'
    )
}

/// True when `note` reports completion: it contains a completion word and no pending word.
/// Used when an advance does not say `done` itself.
///
/// ```
/// use coral_thread::looks_completed;
/// assert!(looks_completed("向量重建完成，检索验证通过"));
/// assert!(!looks_completed("下一步：完成测试"));
/// assert!(!looks_completed("done")); // as the original: English needs `done: true`
/// ```
pub fn looks_completed(note: &str) -> bool {
    // One pass over the characters, comparing against the lists only where an entry could
    // start. (Seventeen `contains` calls per note took a seventh of an advance's time.)
    let mut done = false;
    for (i, c) in note.char_indices() {
        if !starts_an_entry(c) {
            continue;
        }
        let rest = &note[i..];
        if PENDING_WORDS.iter().any(|m| rest.starts_with(m)) {
            return false;
        }
        done = done || COMPLETION_WORDS.iter().any(|w| rest.starts_with(w));
    }
    done
}

#[cfg(test)]
mod tests {
    use super::looks_completed;

    fn check(note: &str, expected: bool) {
        assert_eq!(looks_completed(note), expected, "looks_completed({note:?})");
    }

    #[test]
    fn every_note_the_original_judged_is_judged_the_same() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/coral_thread_done.json"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let golden: serde_json::Value = serde_json::from_str(&text).unwrap();
        let cases = golden["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 95);
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|case| {
                let note = case["note"].as_str().unwrap();
                let expected = case["done"].as_bool().unwrap();
                (looks_completed(note) != expected).then(|| format!("{note:?} (want {expected})"))
            })
            .collect();
        assert!(wrong.is_empty(), "differs from the original on {wrong:?}");
    }

    #[test]
    fn every_entry_starts_with_a_listed_character() {
        for w in super::COMPLETION_WORDS.iter().chain(super::PENDING_WORDS) {
            assert!(super::starts_an_entry(w.chars().next().unwrap()), "{w}");
        }
        // Words anywhere in the note, after ASCII or not.
        check("v2 完成", true);
        check("完成 v2 待定", false);
        check("ok ✅", false);
    }

    /// The definition the one-pass scan must agree with: `contains` for every entry.
    fn reference(note: &str) -> bool {
        use super::*;
        !PENDING_WORDS.iter().any(|m| note.contains(m))
            && COMPLETION_WORDS.iter().any(|w| note.contains(w))
    }

    proptest::proptest! {
        #[test]
        fn the_scan_agrees_with_the_definition(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "完成", "完", "成", "待", "下一步", "下", "发布", "✅", "done", "还", "x", " ",
                "，", "已", "交付", "上线", "收", "计划", "e\u{301}", "落地", "尚", "收尾", "还需",
            ]), 0..8)
        ) {
            let note: String = parts.concat();
            proptest::prop_assert_eq!(looks_completed(&note), reference(&note), "{:?}", note);
        }
    }
}

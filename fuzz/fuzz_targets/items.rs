//! The warm (JSON array) and cold (JSON Lines) loaders on arbitrary bytes: never panic, and
//! nothing is lost: every non-blank line is either an item or a kept skipped entry.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("coral_cold.jsonl");
    let lines = coral_store::parse_item_lines(data, path);
    let non_blank = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count();
    assert_eq!(lines.items.len() + lines.skipped.len(), non_blank);
    for item in &lines.items {
        assert!(item.validate().is_ok());
    }
    let _ = coral_store::parse_item_array(data, std::path::Path::new("coral_warm.json"));
});

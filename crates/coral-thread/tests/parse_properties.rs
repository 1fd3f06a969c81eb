//! The threads-file parser on arbitrary bytes never panics (the fuzz target `threads` checks
//! the same at scale), and a file this crate writes always parses back.

use proptest::prelude::*;

proptest! {
    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = coral_thread::parse_threads_file(&bytes);
    }

    #[test]
    fn thread_shaped_json(title in ".{0,40}", steps in 0usize..4, status in "[a-z]{0,12}") {
        let steps: Vec<serde_json::Value> = (0..steps)
            .map(|i| serde_json::json!({"text": format!("step {i}"), "seq": i + 1}))
            .collect();
        let file = serde_json::json!([{"thread_id": "abc", "title": title, "status": status, "steps": steps}]);
        let _ = coral_thread::parse_threads_file(file.to_string().as_bytes());
    }
}

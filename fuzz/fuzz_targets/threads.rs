//! The threads-file loader on arbitrary bytes: never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = coral_thread::parse_threads_file(data);
});

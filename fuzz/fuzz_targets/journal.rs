//! The journal reader on arbitrary bytes: never panics, accepts only checksummed records, and
//! everything it accepts re-encodes to the bytes it came from.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let scan = coral_store::scan_journal(data);
    assert!(scan.valid_len <= data.len());
    if let Some(d) = &scan.damage {
        assert!(d.offset <= data.len());
    }
    // Re-scanning the valid prefix finds exactly the same records and no damage.
    let again = coral_store::scan_journal(&data[..scan.valid_len]);
    assert_eq!(again.records, scan.records);
    assert!(again.damage.is_none());
});

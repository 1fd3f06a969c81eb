//! The journal reader on arbitrary bytes: never panics, accepts only checksummed records, and
//! everything it accepts re-encodes to the bytes it came from.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let scan = coral_store::scan_journal(data, None);
    assert!(scan.valid_len <= data.len());
    for d in &scan.damage {
        assert!(d.offset + d.len <= data.len());
    }
    // Re-scanning the complete lines finds exactly the same records and the same damage.
    let again = coral_store::scan_journal(&data[..scan.valid_len], None);
    assert_eq!(again.records, scan.records);
    assert_eq!(again.damage, scan.damage);
});

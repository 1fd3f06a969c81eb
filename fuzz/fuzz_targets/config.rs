//! The config loader on arbitrary text: never panics; whatever it accepts validates cleanly and
//! survives a round trip through its own JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((config, _warnings)) = coral::Config::from_json(text) {
        assert!(config.validate().is_empty());
        let (back, _) = coral::Config::from_json(&config.to_json_pretty()).expect("own output loads");
        assert_eq!(back.memory, config.memory);
    }
});

//! The `.npy` reader on arbitrary bytes: never panics, and whatever it accepts round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("coral_vectors.npy");
    if let Ok(m) = coral_store::npy::decode(data, path) {
        assert_eq!(m.data.len(), m.rows * m.cols);
        if m.cols > 0 {
            let back = coral_store::npy::decode(&coral_store::npy::encode(m.rows, m.cols, &m.data), path)
                .expect("an encoded matrix decodes");
            assert_eq!(back.rows, m.rows);
            assert_eq!(back.data.len(), m.data.len());
        }
    }
});

//! Thread and step ids: random hex for new ones, a stable hash for steps that arrive without.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Hex digits in a thread id (the original's length).
pub(crate) const THREAD_ID_HEX: usize = 16;
/// Hex digits in a step id.
pub(crate) const STEP_ID_HEX: usize = 12;

/// 64 unpredictable bits. `RandomState` is seeded from the OS once per thread and SipHash mixes
/// in a process-wide counter, the PID and the time, so two processes (or two calls in the same
/// nanosecond) do not produce the same value.
fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // The PID costs a system call; it cannot change without exec in a Rust process.
    static PID: OnceLock<u32> = OnceLock::new();
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(*PID.get_or_init(std::process::id));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(nanos);
    h.finish()
}

/// The low `digits` hex digits of `value`.
fn hex(value: u64, digits: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    (0..digits)
        .rev()
        .map(|i| char::from(HEX[((value >> (4 * i)) & 0xf) as usize]))
        .collect()
}

/// A new thread id: 16 random hex digits.
pub(crate) fn new_thread_id() -> String {
    hex(random_u64(), THREAD_ID_HEX)
}

/// A new step id: 12 random hex digits.
pub(crate) fn new_step_id() -> String {
    hex(random_u64(), STEP_ID_HEX)
}

/// The id of a step read without one: a hash (FNV-1a, 64-bit) of what identifies it, so every
/// process that reads the same file derives the same id and the merge by step id still works.
pub(crate) fn derived_step_id(thread_id: &str, seq: u64, at: f64, text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator so that ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    eat(thread_id.as_bytes());
    eat(&seq.to_le_bytes());
    eat(&at.to_bits().to_le_bytes());
    eat(text.as_bytes());
    hex(h, STEP_ID_HEX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_of_the_right_length_and_distinct() {
        let a = new_thread_id();
        assert_eq!(a.len(), THREAD_ID_HEX);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        let steps: std::collections::HashSet<String> = (0..10_000).map(|_| new_step_id()).collect();
        assert_eq!(steps.len(), 10_000);
        assert!(steps.iter().all(|s| s.len() == STEP_ID_HEX));
    }

    #[test]
    fn hex_keeps_the_low_digits() {
        assert_eq!(hex(0xabc, 4), "0abc");
        assert_eq!(hex(u64::MAX, 16), "ffffffffffffffff");
        assert_eq!(hex(0x1234_5678_9abc_def0, 12), "56789abcdef0");
    }

    #[test]
    fn derived_ids_are_stable_and_depend_on_every_part() {
        let base = derived_step_id("t", 1, 2.0, "x");
        assert_eq!(base, derived_step_id("t", 1, 2.0, "x"));
        assert_eq!(base.len(), STEP_ID_HEX);
        assert_ne!(base, derived_step_id("t", 2, 2.0, "x"));
        assert_ne!(base, derived_step_id("t", 1, 2.5, "x"));
        assert_ne!(base, derived_step_id("t", 1, 2.0, "y"));
        assert_ne!(base, derived_step_id("u", 1, 2.0, "x"));
    }
}

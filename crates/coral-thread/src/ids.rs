//! Thread and step ids: random hex for new ones, a stable hash for steps that arrive without.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Hex digits in a thread id (the original's length).
pub(crate) const THREAD_ID_HEX: usize = 16;
/// Hex digits in a step id.
pub(crate) const STEP_ID_HEX: usize = 12;

/// 64 unpredictable bits. The process's key is SipHash's, seeded from the OS (and mixed with
/// the PID and the start time, in case two processes got the same seed); each call hashes a
/// process-wide counter with it, so two calls never repeat the input and two processes do
/// not share the key. (Reading the clock on every call took a tenth of the id's cost.)
fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static KEY: OnceLock<(RandomState, u64)> = OnceLock::new();
    let (state, salt) = KEY.get_or_init(|| {
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        h.write_u128(nanos);
        (RandomState::new(), h.finish())
    });
    let mut h = state.build_hasher();
    h.write_u64(*salt);
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// The low `digits` (at most 16) hex digits of `value`, without allocating.
pub(crate) struct Hex {
    bytes: [u8; 16],
    len: usize,
}

impl Hex {
    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever written into `bytes`.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

fn hex_digits(value: u64, digits: usize) -> Hex {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let len = digits.min(16);
    let mut bytes = [b'0'; 16];
    for (i, b) in bytes[..len].iter_mut().enumerate() {
        *b = HEX[((value >> (4 * (len - 1 - i))) & 0xf) as usize];
    }
    Hex { bytes, len }
}

/// The low `digits` hex digits of `value`.
fn hex(value: u64, digits: usize) -> String {
    hex_digits(value, digits).as_str().to_string()
}

/// A new thread id: 16 random hex digits.
pub(crate) fn new_thread_id() -> String {
    hex(random_u64(), THREAD_ID_HEX)
}

/// A new step id: 12 random hex digits, on the stack (`as_str` it).
pub(crate) fn new_step_id() -> Hex {
    hex_digits(random_u64(), STEP_ID_HEX)
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
        let steps: std::collections::HashSet<String> = (0..10_000)
            .map(|_| new_step_id().as_str().to_string())
            .collect();
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

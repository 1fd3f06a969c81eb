//! Per-thread memo of token digests. Tokens repeat a lot (in one text, and from text to text),
//! and a BLAKE2b of a short token costs several times a hash-map lookup. Each thread keeps at
//! most [`CAPACITY`] tokens per digest size and starts over when that is reached, so memory
//! stays bounded and no lock is shared.

use std::cell::RefCell;
use std::collections::HashMap;

/// Tokens memoised per thread and digest size.
pub(crate) const CAPACITY: usize = 1 << 16;

/// Tokens longer than this are hashed every time (they are rare and would bloat the memo).
const MAX_TOKEN_BYTES: usize = 64;

thread_local! {
    static SHORT: RefCell<HashMap<Box<str>, u64>> = RefCell::new(HashMap::new());
    static LONG: RefCell<HashMap<Box<str>, [u8; 16]>> = RefCell::new(HashMap::new());
}

/// `compute(token)`, memoised: the 8-byte digest cache.
pub(crate) fn digest64(token: &str, compute: impl FnOnce(&str) -> u64) -> u64 {
    memo(&SHORT, token, compute)
}

/// `compute(token)`, memoised: the 16-byte digest cache.
pub(crate) fn digest128(token: &str, compute: impl FnOnce(&str) -> [u8; 16]) -> [u8; 16] {
    memo(&LONG, token, compute)
}

fn memo<V: Copy + 'static>(
    cache: &'static std::thread::LocalKey<RefCell<HashMap<Box<str>, V>>>,
    token: &str,
    compute: impl FnOnce(&str) -> V,
) -> V {
    if token.len() > MAX_TOKEN_BYTES {
        return compute(token);
    }
    cache.with(|cell| {
        let Ok(mut map) = cell.try_borrow_mut() else {
            return compute(token);
        };
        if let Some(v) = map.get(token) {
            return *v;
        }
        let v = compute(token);
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(token.into(), v);
        v
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memoised_values_equal_computed_ones_and_the_memo_stays_bounded() {
        let value = |t: &str| t.len() as u64 * 31 + t.bytes().map(u64::from).sum::<u64>();
        let mut computed = 0;
        for i in 0..(CAPACITY + 10) {
            let token = format!("t{i}");
            let v = digest64(&token, |t| {
                computed += 1;
                value(t)
            });
            assert_eq!(v, value(&token));
        }
        assert_eq!(computed, CAPACITY + 10);
        SHORT.with(|c| assert!(c.borrow().len() <= CAPACITY));
        // A token seen recently comes from the memo, with the same value.
        let last = format!("t{}", CAPACITY + 9);
        let v = digest64(&last, |_| {
            computed += 1;
            0
        });
        assert_eq!((v, computed), (value(&last), CAPACITY + 10));
        // Long tokens are never memoised.
        let long = "x".repeat(MAX_TOKEN_BYTES + 1);
        let mut calls = 0;
        for _ in 0..3 {
            digest64(&long, |_| {
                calls += 1;
                7
            });
        }
        assert_eq!(calls, 3);
    }
}

//! A compact key for an item id in the derived indexes' slot tables: the 16 lower-case hex
//! digits Coral and the original Python Coral make (the MD5 prefix) as their `u64` value, any
//! other id as its text.
//!
//! Each index keeps an id twice (id to slot, slot to id); as `String`s at a million memories
//! those copies were about 60 bytes each with their heap blocks, for 16 bytes of information.

use std::fmt;

/// An item id, as compactly as it can be held and still be told apart from every other id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum IdKey {
    /// Exactly 16 lower-case hex digits, as their value (a bijection: no other id maps here).
    Hex(u64),
    /// Anything else, as written.
    Text(Box<str>),
}

impl IdKey {
    /// The key of `id`.
    pub(crate) fn of(id: &str) -> IdKey {
        let b = id.as_bytes();
        if b.len() == 16 && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            // Sixteen hex digits always parse.
            if let Ok(v) = u64::from_str_radix(id, 16) {
                return IdKey::Hex(v);
            }
        }
        IdKey::Text(id.into())
    }

    /// Calls `f` with the id as text, without allocating (a search maps many keys back to
    /// pool rows).
    pub(crate) fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            IdKey::Text(t) => f(t),
            IdKey::Hex(v) => {
                const DIGITS: &[u8; 16] = b"0123456789abcdef";
                let mut buf = [0u8; 16];
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = DIGITS[((v >> (60 - 4 * i)) & 0xf) as usize];
                }
                // Hex digits are ASCII.
                f(std::str::from_utf8(&buf).unwrap_or_default())
            }
        }
    }
}

impl fmt::Display for IdKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdKey::Hex(v) => write!(f, "{v:016x}"),
            IdKey::Text(t) => f.write_str(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_every_id_apart_and_give_it_back() {
        let ids = [
            "0123456789abcdef",
            "0123456789ABCDEF",
            "0000000000000000",
            "ffffffffffffffff",
            "0123456789abcde",
            "0123456789abcdef0",
            "g123456789abcdef",
            "+123456789abcdef",
            "",
            "记忆",
        ];
        for a in ids {
            let key = IdKey::of(a);
            assert_eq!(key.to_string(), a, "round trip");
            assert_eq!(key.with_str(|s| s.to_string()), a, "round trip");
            for b in ids.iter().filter(|&&b| b != a) {
                assert_ne!(key, IdKey::of(b), "{a} and {b}");
            }
        }
        assert!(matches!(IdKey::of("0123456789abcdef"), IdKey::Hex(_)));
        assert!(matches!(IdKey::of("0123456789ABCDEF"), IdKey::Text(_)));
    }
}

//! Content-derived item ids and token-count estimates.

use md5::{Digest, Md5};

/// An item's id: the first 16 lowercase hex digits of the MD5 of its UTF-8 content.
///
/// ```
/// assert_eq!(coral_embed::item_id(""), "d41d8cd98f00b204");
/// ```
pub fn item_id(content: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Md5::digest(content.as_bytes());
    let mut id = String::with_capacity(16);
    for byte in &digest[..8] {
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0x0F)]));
    }
    id
}

/// The original's LLM token estimate: `floor(utf8_len / 3.8)`, computed in `f64` like it was.
///
/// ```
/// assert_eq!(coral_embed::token_count("Hello World, hello Coral-Memory v2!"), 9);
/// ```
pub fn token_count(content: &str) -> u64 {
    (content.len() as f64 / 3.8).floor() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_16_lower_hex() {
        for text in ["", "a", "我", "Hello"] {
            let id = item_id(text);
            assert_eq!(id.len(), 16);
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
        }
        assert_ne!(item_id("a"), item_id("b"));
    }

    #[test]
    fn token_count_cases() {
        for (len, expected) in [(0, 0), (3, 0), (4, 1), (19, 5), (38, 10), (39, 10)] {
            assert_eq!(token_count(&"x".repeat(len)), expected, "len {len}");
        }
    }
}

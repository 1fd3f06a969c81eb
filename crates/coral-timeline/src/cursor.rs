//! Tamper-checked page cursors: a JSON position signed with HMAC-SHA256 under a secret that
//! lives only in the database, so a cursor cannot be forged, edited, or replayed against another
//! query or namespace.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// HMAC-SHA256 (RFC 2104) of `message` under `key` (32 bytes, shorter than the block).
pub(crate) fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut inner_pad = [0x36u8; 64];
    let mut outer_pad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        inner_pad[i] ^= k;
        outer_pad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// `base64url(json).base64url(tag)`.
pub(crate) fn seal(key: &[u8; 32], position: &Value) -> String {
    let body = position.to_string();
    let tag = hmac(key, body.as_bytes());
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(body.as_bytes()),
        URL_SAFE_NO_PAD.encode(tag)
    )
}

/// The position inside a cursor, if its tag verifies.
pub(crate) fn open(key: &[u8; 32], cursor: &str) -> Result<Value, String> {
    const BAD: &str = "cursor failed its integrity check: pass next_cursor exactly as it was \
                       returned, with the same query";
    let (body, tag) = cursor.trim().split_once('.').ok_or(BAD)?;
    let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| BAD)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| BAD)?;
    let expected = hmac(key, &body);
    // Compare every byte so the time taken does not reveal how much of a forged tag matched.
    let same = tag.len() == expected.len()
        && tag
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same {
        return Err(BAD.into());
    }
    serde_json::from_slice(&body).map_err(|_| BAD.into())
}

/// Short keyed digest of `text` (hex, 16 bytes), for binding a cursor to its query and scope
/// and for generating ids that reveal nothing about other namespaces.
pub(crate) fn keyed_digest(key: &[u8; 32], text: &str) -> String {
    hmac(key, text.as_bytes())[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hmac_matches_rfc_4231_case_2_shape() {
        // RFC 4231 test case 2 uses a 4-byte key; padded with zeros to 32 bytes it is the same
        // HMAC key (keys shorter than the block are zero-padded).
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let tag = hmac(&key, b"what do ya want for nothing?");
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn tampering_is_detected() {
        let key = [7u8; 32];
        let cursor = seal(&key, &json!({"after": [1, "c", 3]}));
        assert_eq!(open(&key, &cursor).unwrap(), json!({"after": [1, "c", 3]}));
        assert!(open(&[8u8; 32], &cursor).is_err());
        let (body, tag) = cursor.split_once('.').unwrap();
        let forged_body = URL_SAFE_NO_PAD.encode(br#"{"after":[9,"c",3]}"#);
        assert!(open(&key, &format!("{forged_body}.{tag}")).is_err());
        assert!(open(&key, body).is_err());
        assert!(open(&key, "").is_err());
        let mut flipped = cursor.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        assert!(open(&key, &String::from_utf8(flipped).unwrap()).is_err());
    }
}

//! Token hashes and the lexical features derived from them: the 2048-bit bitmap and the set.

use blake2::Blake2b;
use blake2::digest::Digest;
use blake2::digest::consts::U8;

use crate::tokenize::for_each_token;

const BITMAP_BITS: u64 = 2048;

/// BLAKE2b with an 8-byte digest, as used for token hashes.
type Blake2b64 = Blake2b<U8>;

/// A token's 64-bit hash: BLAKE2b with an 8-byte digest of its UTF-8 bytes, read little-endian.
///
/// ```
/// // The upstream golden data puts "hello" at bit 1703 of the 2048-bit map.
/// assert_eq!(coral_embed::token_hash("hello") % 2048, 1703);
/// ```
pub fn token_hash(token: &str) -> u64 {
    crate::digest_cache::digest64(token, |t| {
        let digest = Blake2b64::digest(t.as_bytes());
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest);
        u64::from_le_bytes(bytes)
    })
}

/// The 2048-bit map of a token list: for each token, bit `token_hash % 2048` is set, in word
/// `bit / 64` at position `bit % 64` (least significant bit first).
///
/// ```
/// let map = coral_embed::bitmap_of(&["hello".to_string()]);
/// assert_eq!(map[1703 / 64], 1 << (1703 % 64));
/// ```
pub fn bitmap_of(tokens: &[String]) -> [u64; 32] {
    let mut map = [0u64; 32];
    for token in tokens {
        set_bit(&mut map, token_hash(token));
    }
    map
}

/// Everything lexical search needs from one text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextFeatures {
    /// Token bitmap, as [`bitmap_of`] would build it.
    pub bitmap: [u64; 32],
    /// Sorted, de-duplicated [`token_hash`]es: the token set for set Jaccard.
    pub token_set: Vec<u64>,
    /// Number of tokens, duplicates included.
    pub token_len: usize,
}

/// Tokenises `text` once and hashes each token once into its [`TextFeatures`].
///
/// ```
/// let f = coral_embed::text_features("hello hello world");
/// assert_eq!(f.token_len, 3);
/// assert_eq!(f.token_set.len(), 2);
/// assert_eq!(f.bitmap, coral_embed::bitmap_of(&coral_embed::tokenize("world hello")));
/// ```
pub fn text_features(text: &str) -> TextFeatures {
    let mut features = TextFeatures::default();
    for_each_token(text, |token| {
        let hash = token_hash(token);
        set_bit(&mut features.bitmap, hash);
        features.token_set.push(hash);
        features.token_len += 1;
    });
    features.token_set.sort_unstable();
    features.token_set.dedup();
    features
}

/// The bitmap of [`text_features`] alone: the same bits, without the token set (its vector,
/// sort and de-duplication were about a fifth of the bitmaps' share of a reopen, which
/// computes one per stored memory).
///
/// ```
/// let text = "Hello hello, 咖啡 world";
/// assert_eq!(coral_embed::text_bitmap(text), coral_embed::text_features(text).bitmap);
/// ```
pub fn text_bitmap(text: &str) -> [u64; 32] {
    let mut map = [0u64; 32];
    for_each_token(text, |token| set_bit(&mut map, token_hash(token)));
    map
}

fn set_bit(map: &mut [u64; 32], hash: u64) {
    let bit = hash % BITMAP_BITS;
    map[(bit / 64) as usize] |= 1 << (bit % 64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn features_agree_with_tokenize(text in "[a-d 中文テ,]{0,24}") {
            let tokens = tokenize(&text);
            let features = text_features(&text);
            prop_assert_eq!(features.token_len, tokens.len());
            prop_assert_eq!(features.bitmap, bitmap_of(&tokens));
            prop_assert_eq!(text_bitmap(&text), features.bitmap);
            let mut set: Vec<u64> = tokens.iter().map(|t| token_hash(t)).collect();
            set.sort_unstable();
            set.dedup();
            prop_assert_eq!(&features.token_set, &set);
            let bits: u32 = features.bitmap.iter().map(|w| w.count_ones()).sum();
            prop_assert!(bits as usize <= set.len());
        }
    }

    #[test]
    fn empty_text_has_empty_features() {
        assert_eq!(text_features(" ,. "), TextFeatures::default());
    }
}

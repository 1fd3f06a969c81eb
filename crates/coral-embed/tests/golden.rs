//! coral-embed against the upstream golden vectors (`fixtures/compat/coral_test_vectors.json`).

use coral_embed::{
    bitmap_of, hash_embed_into, item_id, text_features, token_count, token_hash, tokenize,
};
use serde_json::Value;

/// The one key whose upstream tokens are the original's defective output (full-width
/// characters dropped); Coral applies NFKC there by design.
const FULL_WIDTH: &str = "ＡＢＣ全角１２３ and 中文mixed文本";

fn vectors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_test_vectors.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).expect("golden file is valid JSON")
}

/// Calls `check(key, value)` for every entry of the golden object `name`; returns how many.
fn each(name: &str, mut check: impl FnMut(&str, &Value)) -> usize {
    let golden = vectors();
    let entries = golden[name]
        .as_object()
        .unwrap_or_else(|| panic!("golden key {name}"));
    for (key, value) in entries {
        check(key, value);
    }
    entries.len()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_owned())
        .collect()
}

fn golden_tokens(text: &str) -> Vec<String> {
    strings(&vectors()["hash_tokens"][text])
}

fn bits_of(map: &[u64; 32]) -> Vec<u64> {
    (0..2048u64)
        .filter(|&bit| map[(bit / 64) as usize] >> (bit % 64) & 1 == 1)
        .collect()
}

#[test]
fn hash_tokens() {
    let n = each("hash_tokens", |text, expected| {
        if text == FULL_WIDTH {
            return;
        }
        assert_eq!(tokenize(text), strings(expected), "tokenize({text:?})");
    });
    assert_eq!(n, 10);
}

#[test]
fn full_width_text_is_fixed_not_dropped() {
    let fixed: Vec<String> = tokenize(FULL_WIDTH);
    assert_eq!(
        fixed,
        [
            "abc全角123",
            "a",
            "b",
            "c",
            "全",
            "角",
            "1",
            "2",
            "3",
            "and",
            "中文mixed文本",
            "中",
            "文",
            "m",
            "i",
            "x",
            "e",
            "d",
            "文",
            "本",
        ]
    );
    assert_ne!(fixed, golden_tokens(FULL_WIDTH));
}

#[test]
fn token_bitmap_bits() {
    each("token_bitmap_bits", |text, expected| {
        let expected: Vec<u64> = expected
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .collect();
        // Hashing is checked on the golden tokens for every key, the tokeniser on top of it
        // wherever Coral's tokens match the original's.
        assert_eq!(
            bits_of(&bitmap_of(&golden_tokens(text))),
            expected,
            "bitmap of golden tokens of {text:?}"
        );
        if text != FULL_WIDTH {
            assert_eq!(
                bits_of(&text_features(text).bitmap),
                expected,
                "text_features({text:?})"
            );
        }
    });
}

#[test]
fn bitmap_bit_for_token() {
    let n = each("bitmap_bit_for_token", |token, bit| {
        assert_eq!(
            token_hash(token) % 2048,
            bit.as_u64().unwrap(),
            "bit of {token:?}"
        );
    });
    assert_eq!(n, 7);
}

fn check_embedding(dim: usize, text: &str, expected: &Value) {
    let expected: Vec<f64> = expected
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let mut got = vec![0.0f32; dim];
    hash_embed_into(&golden_tokens(text), &mut got);
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert!(
            (f64::from(*g) - e).abs() < 1e-6,
            "dim {dim}, {text:?}, [{i}]: {g} vs {e}"
        );
    }
    if text != FULL_WIDTH {
        let mut direct = vec![0.0f32; dim];
        hash_embed_into(&tokenize(text), &mut direct);
        assert_eq!(direct, got, "dim {dim}, {text:?}");
    }
}

#[test]
fn hash_embedding_dim8() {
    each("hash_embedding_dim8", |text, expected| {
        check_embedding(8, text, expected)
    });
}

#[test]
fn hash_embedding_dim16() {
    each("hash_embedding_dim16", |text, expected| {
        check_embedding(16, text, expected)
    });
}

#[test]
fn gen_id_md5_16() {
    let n = each("gen_id_md5_16", |text, id| {
        assert_eq!(item_id(text), id.as_str().unwrap(), "item_id({text:?})");
    });
    assert_eq!(n, 10);
}

#[test]
fn count_token() {
    each("count_token", |text, count| {
        assert_eq!(
            token_count(text),
            count.as_u64().unwrap(),
            "token_count({text:?})"
        );
    });
}

/// Calls `check(a, b, jaccard)` for each pair of the golden list `name`.
fn each_pair(name: &str, mut check: impl FnMut(&str, &str, f64)) {
    let golden = vectors();
    let pairs = golden[name].as_array().unwrap();
    assert_eq!(pairs.len(), 4);
    for pair in pairs {
        check(
            pair["a"].as_str().unwrap(),
            pair["b"].as_str().unwrap(),
            pair["jaccard"].as_f64().unwrap(),
        );
    }
}

/// `|A ∩ B| / |A ∪ B|` over sorted, de-duplicated sets (coral-score's job; recomputed here
/// because the leaf crates do not depend on each other).
fn set_jaccard(a: &[u64], b: &[u64]) -> f64 {
    let inter = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

#[test]
fn jaccard_set_pairs() {
    each_pair("jaccard_set_pairs", |a, b, expected| {
        let got = set_jaccard(&text_features(a).token_set, &text_features(b).token_set);
        assert!(
            (got - expected).abs() < 1e-12,
            "{a:?} / {b:?}: {got} vs {expected}"
        );
    });
}

#[test]
fn jaccard_bitmap_pairs() {
    each_pair("jaccard_bitmap_pairs", |a, b, expected| {
        let (a_map, b_map) = (text_features(a).bitmap, text_features(b).bitmap);
        let count = |f: fn(u64, u64) -> u64| -> u32 {
            a_map
                .iter()
                .zip(&b_map)
                .map(|(&x, &y)| f(x, y).count_ones())
                .sum()
        };
        let got = f64::from(count(|x, y| x & y)) / f64::from(count(|x, y| x | y));
        assert!(
            (got - expected).abs() < 1e-12,
            "{a:?} / {b:?}: {got} vs {expected}"
        );
    });
}

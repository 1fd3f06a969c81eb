//! Bitmap and set Jaccard against the upstream golden vectors (pairs whose bit lists are known).

use coral_base::set_jaccard_sorted;
use coral_score::{BITMAP_WORDS, Bitmap, bitmap_jaccard};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_test_vectors.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).expect("golden file is valid JSON")
}

fn bits(v: &Value) -> Vec<u64> {
    let mut bits: Vec<u64> = v
        .as_array()
        .expect("bit list")
        .iter()
        .map(|b| b.as_u64().expect("bit number"))
        .collect();
    bits.sort_unstable();
    bits.dedup();
    bits
}

fn bitmap(bits: &[u64]) -> Bitmap {
    let mut map = [0u64; BITMAP_WORDS];
    for &bit in bits {
        map[bit as usize / 64] |= 1 << (bit % 64);
    }
    map
}

fn check(a: &[u64], b: &[u64], expected: f64) {
    let got = bitmap_jaccard(&bitmap(a), &bitmap(b));
    assert!((got - expected).abs() < 1e-12, "bitmap {got} != {expected}");
    // A bitmap is exactly the set of its bits, so both measures must agree.
    let got = set_jaccard_sorted(a, b);
    assert!((got - expected).abs() < 1e-12, "set {got} != {expected}");
}

#[test]
fn jaccard_bitmap_pairs() {
    let golden = vectors();
    let known = &golden["token_bitmap_bits"];
    let mut checked = 0;
    for pair in golden["jaccard_bitmap_pairs"].as_array().expect("pairs") {
        let (a, b) = (
            &known[pair["a"].as_str().unwrap()],
            &known[pair["b"].as_str().unwrap()],
        );
        // The other pairs involve query texts without bit lists; coral-embed covers those.
        if a.is_null() || b.is_null() {
            continue;
        }
        check(
            &bits(a),
            &bits(b),
            pair["jaccard"].as_f64().expect("jaccard"),
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "expected two pairs with known bit lists");
}

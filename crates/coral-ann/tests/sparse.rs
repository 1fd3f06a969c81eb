//! The sparse index against a model (a map of label to vector, scanned exactly) under random
//! inserts, replacements, deletes and filters: the admitted top k must be exactly the scan's.

use std::collections::BTreeMap;

use coral_ann::{Hit, SparseIndex};
use proptest::prelude::*;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A unit vector built like the hash embedder's: `tokens` times ±1 on two of `dim`
/// components (from a small vocabulary, so vectors share components and scores tie).
fn hashlike(dim: usize, tokens: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut v = vec![0.0f32; dim];
    for _ in 0..tokens {
        let word = rng.next() % 40;
        let mut w = Rng(word);
        for _ in 0..2 {
            let h = w.next();
            v[(h % dim as u64) as usize] += if h >> 63 == 0 { 1.0 } else { -1.0 };
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The model's answer: positive products among admitted labels, best first, ties by label.
fn scan(
    model: &BTreeMap<u32, Vec<f32>>,
    q: &[f32],
    k: usize,
    admit: &dyn Fn(u32) -> bool,
) -> Vec<Hit> {
    let mut all: Vec<Hit> = model
        .iter()
        .filter(|(l, _)| admit(**l))
        .map(|(&label, v)| Hit {
            label,
            score: dot(q, v),
        })
        .filter(|h| h.score > 0.0)
        .collect();
    all.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.label.cmp(&b.label)));
    all.truncate(k);
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn top_k_equals_an_exact_scan(
        dim in 8usize..64,
        ops in proptest::collection::vec((0u32..200, 0u8..4, 0u64..1_000_000), 1..600),
        k in 1usize..12,
        modulus in 1u32..7,
        block_bits in 1u32..17,
    ) {
        // Blocks of 2 to 65,536 ids: up to 300 blocks over these labels, or one.
        let mut index = SparseIndex::with_block_bits(dim, block_bits).unwrap();
        let mut model: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
        for (i, &(label, op, seed)) in ops.iter().enumerate() {
            if op == 0 {
                prop_assert_eq!(index.remove(label), model.remove(&label).is_some());
            } else {
                let v = hashlike(dim, 1 + (seed % 12) as usize, seed);
                index.insert(label, &v).unwrap();
                model.insert(label, v);
            }
            prop_assert_eq!(index.len(), model.len());
            if i % 50 == 49 || i + 1 == ops.len() {
                let q = hashlike(dim, 1 + (seed % 5) as usize, seed ^ 0xabc);
                let exact = |l: u32| dot(&q, &model[&l]);
                let admit = |l: u32| l.is_multiple_of(modulus);
                for filter in [None, Some(&admit as &dyn Fn(u32) -> bool)] {
                    let want = scan(&model, &q, k, &|l| filter.is_none_or(|f| f(l)));
                    let mut got = index.search(&q, k, filter, &exact);
                    got.retain(|h| h.score > 0.0);
                    prop_assert!(got.iter().all(|h| filter.is_none_or(|f| f(h.label))));
                    got.truncate(k);
                    prop_assert_eq!(got, want);
                }
            }
        }
        let mut labels: Vec<u32> = index.labels().collect();
        labels.sort_unstable();
        prop_assert_eq!(labels, model.keys().copied().collect::<Vec<_>>());
    }
}

/// Enough deletes to compact the lists (4,096 dead entries), then the same check.
#[test]
fn compaction_keeps_the_answers() {
    let dim = 96;
    // Blocks of 256 ids, so that compaction moves entries across blocks.
    let mut index = SparseIndex::with_block_bits(dim, 8).unwrap();
    let mut model = BTreeMap::new();
    for label in 0..3000u32 {
        let v = hashlike(dim, 10, u64::from(label));
        index.insert(label, &v).unwrap();
        model.insert(label, v);
    }
    let before = index.memory_bytes();
    for label in (0..3000u32).filter(|l| l % 3 != 0) {
        assert!(index.remove(label));
        model.remove(&label);
    }
    assert!(index.memory_bytes() < before, "the lists were compacted");
    for label in 3000..3100u32 {
        let v = hashlike(dim, 10, u64::from(label));
        index.insert(label, &v).unwrap();
        model.insert(label, v);
    }
    for seed in 0..20u64 {
        let q = hashlike(dim, 4, seed ^ 0x55);
        let exact = |l: u32| dot(&q, &model[&l]);
        let mut got = index.search(&q, 10, None, &exact);
        got.retain(|h| h.score > 0.0);
        got.truncate(10);
        assert_eq!(got, scan(&model, &q, 10, &|_| true));
    }
    assert!(index.density() > 0.0 && index.density() < 0.25);
}

/// Enough vectors that candidates are cut between blocks (more than 4,096 touched before the
/// last block), in blocks of 1,024, with and without a filter: still the scan's answer.
#[test]
fn cuts_between_blocks_keep_the_answers() {
    let dim = 64;
    let mut index = SparseIndex::with_block_bits(dim, 10).unwrap();
    let mut model = BTreeMap::new();
    for label in 0..20_000u32 {
        let v = hashlike(dim, 1 + (label % 9) as usize, u64::from(label) * 7 + 1);
        index.insert(label, &v).unwrap();
        model.insert(label, v);
    }
    let admit = |l: u32| l % 17 == 3;
    for seed in 0..30u64 {
        let q = hashlike(dim, 1 + (seed % 4) as usize, seed ^ 0x99);
        let exact = |l: u32| dot(&q, &model[&l]);
        for (k, filter) in [
            (10, None),
            (100, None),
            (10, Some(&admit as &dyn Fn(u32) -> bool)),
        ] {
            let mut got = index.search(&q, k, filter, &exact);
            got.retain(|h| h.score > 0.0);
            got.truncate(k);
            let want = scan(&model, &q, k, &|l| filter.is_none_or(|f| f(l)));
            assert_eq!(got, want, "query {seed}, k {k}");
        }
    }
}

/// A vector holding NaN or infinity is not walked but handed to the caller's product, as a
/// scan would meet it; the others rank as usual.
#[test]
fn vectors_with_odd_values_go_to_the_caller() {
    let dim = 16;
    let mut index = SparseIndex::with_block_bits(dim, 2).unwrap();
    let mut model = BTreeMap::new();
    for label in 0..40u32 {
        let mut v = hashlike(dim, 3, u64::from(label));
        if label == 13 {
            v[0] = f32::NAN;
        }
        if label == 21 {
            v[5] = f32::INFINITY;
        }
        index.insert(label, &v).unwrap();
        model.insert(label, v);
    }
    let q = hashlike(dim, 3, 0x1234);
    let exact = |l: u32| dot(&q, &model[&l]);
    let got = index.search(&q, 5, None, &exact);
    let labels: Vec<u32> = got.iter().map(|h| h.label).collect();
    assert!(labels.contains(&13) && labels.contains(&21), "{labels:?}");
    let mut ranked: Vec<Hit> = got.into_iter().filter(|h| h.score > 0.0).collect();
    ranked.truncate(5);
    assert_eq!(ranked, scan(&model, &q, 5, &|_| true));
    assert!(index.remove(13) && index.remove(21));
    assert!(
        index
            .search(&q, 5, None, &exact)
            .iter()
            .all(|h| h.label != 13 && h.label != 21)
    );
}

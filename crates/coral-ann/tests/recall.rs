//! The index against brute force on generated vectors: recall, deletes, filters, files.

use std::collections::BTreeMap;

use coral_ann::{AnnIndex, Error, Filter, Hit, Params, Query};
use proptest::prelude::*;
use roaring::RoaringBitmap;

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

    /// Roughly normal (sum of uniforms).
    fn normal(&mut self) -> f32 {
        (0..4)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32)
            .sum::<f32>()
            - 2.0
    }
}

/// `n` unit vectors around `clusters` random centres (embeddings cluster by topic).
fn vectors(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let centres: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..dim).map(|_| rng.normal()).collect())
        .collect();
    (0..n)
        .map(|_| {
            let c = &centres[(rng.next() % clusters as u64) as usize];
            let mut v: Vec<f32> = c.iter().map(|x| x + 0.8 * rng.normal()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The exact best `k` among `labels`, as the index orders them.
fn brute(data: &[Vec<f32>], labels: impl Iterator<Item = u32>, q: &[f32], k: usize) -> Vec<Hit> {
    let mut all: Vec<Hit> = labels
        .map(|l| Hit {
            label: l,
            score: dot(&data[l as usize], q),
        })
        .collect();
    all.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.label.cmp(&b.label)));
    all.truncate(k);
    all
}

/// Share of the exact top-k found (a hit whose score ties the k-th exact score counts).
fn recall(got: &[Hit], want: &[Hit]) -> f64 {
    let Some(kth) = want.last() else {
        return 1.0;
    };
    let found = got.iter().filter(|h| h.score >= kth.score - 1e-6).count();
    found.min(want.len()) as f64 / want.len() as f64
}

fn build(data: &[Vec<f32>], params: Params) -> AnnIndex {
    let mut index = AnnIndex::new(data[0].len(), params).unwrap();
    for (label, v) in data.iter().enumerate() {
        index.insert(label as u32, v).unwrap();
    }
    index
}

fn mean_recall(
    index: &AnnIndex,
    data: &[Vec<f32>],
    queries: &[Vec<f32>],
    filter: Option<&RoaringBitmap>,
    ef: usize,
    exact_below: u64,
) -> f64 {
    let k = 10;
    let mut total = 0.0;
    for q in queries {
        let score = |l: u32| dot(&data[l as usize], q);
        let query = Query {
            vector: q,
            k,
            ef,
            filter: filter.map_or(Filter::All, Filter::Labels),
            exact_below,
        };
        let got = index.search(&query, &score);
        let labels: Box<dyn Iterator<Item = u32>> = match filter {
            Some(f) => Box::new(f.iter().filter(|&l| index.contains(l))),
            None => Box::new(index.labels()),
        };
        let want = brute(data, labels, q, k);
        assert!(
            got.len() == want.len(),
            "{} hits, {} wanted",
            got.len(),
            want.len()
        );
        if let Some(f) = filter {
            assert!(
                got.iter().all(|h| f.contains(h.label)),
                "a hit outside the filter"
            );
        }
        total += recall(&got, &want);
    }
    total / queries.len() as f64
}

#[test]
fn recall_deletes_and_filters_against_brute_force() {
    let (n, dim) = (20_000, 48);
    // Queries from the same distribution as the data (held out), as a search's are.
    let mut data = vectors(n + 100, dim, 64, 1);
    let queries = data.split_off(n);
    let mut index = build(&data, Params::default());
    assert_eq!(index.len(), n);
    let r = mean_recall(&index, &data, &queries, None, 64, 0);
    assert!(r >= 0.95, "recall@10 {r}");

    // A tenth of the labels, searched through the graph with the filter applied as it walks.
    let tenth: RoaringBitmap = (0..n as u32).filter(|l| l % 10 == 3).collect();
    let r = mean_recall(&index, &data, &queries, Some(&tenth), 64, 0);
    assert!(r >= 0.95, "filtered recall@10 {r}");
    // A hundredth, scored exactly (below exact_below): recall 1.
    let hundredth: RoaringBitmap = (0..n as u32).filter(|l| l % 100 == 7).collect();
    let r = mean_recall(&index, &data, &queries, Some(&hundredth), 64, 1000);
    assert_eq!(r, 1.0);

    // Delete 40 % (several repairs run), then check again: no deleted label comes back.
    for label in (0..n as u32).filter(|l| l % 5 < 2) {
        assert!(index.remove(label));
    }
    assert!(!index.remove(0));
    assert_eq!(index.len(), n - 2 * n / 5);
    let r = mean_recall(&index, &data, &queries, None, 64, 0);
    assert!(r >= 0.95, "recall@10 after deletes {r}");
    index.repair();
    assert_eq!(index.tombstones(), 0);
    let r = mean_recall(&index, &data, &queries, None, 64, 0);
    assert!(r >= 0.95, "recall@10 after repair {r}");

    // Re-insert the deleted ones (into freed nodes) and the index is whole again.
    for label in (0..n as u32).filter(|l| l % 5 < 2) {
        index.insert(label, &data[label as usize]).unwrap();
    }
    assert_eq!(index.len(), n);
    let r = mean_recall(&index, &data, &queries, None, 64, 0);
    assert!(r >= 0.95, "recall@10 after re-inserts {r}");
}

#[test]
fn saved_index_loads_identical_and_damage_is_refused() {
    let mut data = vectors(3020, 16, 16, 3);
    let queries = data.split_off(3000);
    let mut index = build(&data, Params::default());
    for label in (0..3000).step_by(7) {
        index.remove(label);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ann.idx");
    index.save(&path, b"tag: hash 16", b"payload").unwrap();
    assert!(!coral_ann::temp_path(&path).exists());
    assert_eq!(
        coral_ann::read_tag(&path).unwrap().unwrap(),
        b"tag: hash 16"
    );
    let (loaded, tag, payload) = AnnIndex::load(&path).unwrap();
    assert_eq!(tag, b"tag: hash 16");
    assert_eq!(payload, b"payload");
    assert_eq!(loaded.len(), index.len());
    assert_eq!(loaded.tombstones(), index.tombstones());
    for q in &queries {
        let score = |l: u32| dot(&data[l as usize], q);
        let query = Query {
            vector: q,
            k: 10,
            ef: 40,
            filter: Filter::All,
            exact_below: 0,
        };
        assert_eq!(index.search(&query, &score), loaded.search(&query, &score));
    }

    let bytes = std::fs::read(&path).unwrap();
    let corrupt = |bytes: &[u8], what: &str| {
        std::fs::write(&path, bytes).unwrap();
        match AnnIndex::load(&path) {
            Err(Error::Corrupted { detail, .. }) => detail,
            other => panic!("{what}: loaded {other:?}"),
        }
    };
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x10;
    assert!(corrupt(&flipped, "a flipped byte").contains("checksum"));
    assert!(corrupt(&bytes[..bytes.len() - 100], "a torn file").contains("checksum"));
    let mut version = bytes.clone();
    version[8] = 9;
    assert!(corrupt(&version, "another version").contains("version"));
    assert!(corrupt(b"CORAL", "a stub").contains("header"));
    assert!(matches!(
        AnnIndex::load(&dir.path().join("none")),
        Err(Error::Io { .. })
    ));
    assert_eq!(coral_ann::read_tag(&dir.path().join("none")).unwrap(), None);
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    assert!(matches!(
        AnnIndex::new(0, Params::default()),
        Err(Error::InvalidParams(m)) if m.contains("dim = 0")
    ));
    let bad = Params {
        m: 1,
        ..Params::default()
    };
    assert!(
        AnnIndex::new(4, bad)
            .unwrap_err()
            .to_string()
            .contains("m = 1")
    );
    let mut index = AnnIndex::new(4, Params::default()).unwrap();
    let err = index.insert(0, &[1.0, 2.0]).unwrap_err();
    assert!(err.to_string().contains("2 dimensions"), "{err}");
    assert!(index.insert(u32::MAX, &[1.0; 4]).is_err());
    assert!(index.is_empty());
    // A wrong-length query finds nothing rather than panicking.
    index.insert(0, &[1.0; 4]).unwrap();
    let q = Query {
        vector: &[1.0],
        k: 1,
        ef: 8,
        filter: Filter::All,
        exact_below: 0,
    };
    assert!(index.search(&q, &|_| 1.0).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Against a map under random inserts, replacements and removals: the same labels, and a
    /// search with ef at least the size of the index finds exactly the brute-force answer.
    #[test]
    fn follows_a_model_under_random_operations(
        ops in proptest::collection::vec((0u32..300, any::<bool>(), 0u64..1000), 1..400)
    ) {
        let dim = 6;
        let vector = |seed: u64| -> Vec<f32> {
            let mut rng = Rng(seed);
            (0..dim).map(|_| rng.normal()).collect()
        };
        let mut index = AnnIndex::new(dim, Params { m: 4, ef_construction: 16, seed: 9 }).unwrap();
        let mut model: BTreeMap<u32, Vec<f32>> = BTreeMap::new();
        for (label, insert, seed) in ops {
            if insert {
                let v = vector(seed);
                index.insert(label, &v).unwrap();
                model.insert(label, v);
            } else {
                prop_assert_eq!(index.remove(label), model.remove(&label).is_some());
            }
        }
        prop_assert_eq!(index.len(), model.len());
        let mut labels: Vec<u32> = index.labels().collect();
        labels.sort_unstable();
        prop_assert_eq!(labels, model.keys().copied().collect::<Vec<_>>());
        let q = vector(12345);
        let score = |l: u32| model.get(&l).map_or(f32::NAN, |v| dot(v, &q));
        let query = Query { vector: &q, k: 5, ef: 400, filter: Filter::All, exact_below: 0 };
        let got: Vec<u32> = index.search(&query, &score).iter().map(|h| h.label).collect();
        let data: Vec<Vec<f32>> = (0..300).map(|l| model.get(&l).cloned().unwrap_or_default()).collect();
        let want: Vec<u32> = brute(&data, model.keys().copied(), &q, 5).iter().map(|h| h.label).collect();
        // Cosine and dot order alike only for equal norms; compare as sets of the top by dot
        // among what the graph reached: with ef ≥ n it reaches every live node.
        prop_assert_eq!(got, want);
    }
}

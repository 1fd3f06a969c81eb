//! A pool holding its vectors sparse (`Pool::set_compact`, docs/ann.md "Memory") writes the
//! same bytes as the dense pool, and a large sparse directory is loaded compact with every
//! vector intact, in the order of its items.

use std::path::Path;
use std::sync::Arc;

use coral_store::{
    COMPACT_FROM, Item, Record, RowVector, Store, StoreOptions, StorePaths, SyncPolicy, Tier,
};

const DIM: usize = 16;

fn options() -> StoreOptions {
    StoreOptions {
        dim: DIM,
        sync: SyncPolicy::Never,
        wal_max_bytes: 1 << 40,
        features: Arc::new(|s: &str| {
            let mut b = [0u64; 32];
            b[0] = s.len() as u64;
            b
        }),
    }
}

/// A sparse vector for item `i`: two components set, one of them a negative zero now and then
/// (its bits must survive the sparse form).
fn vector(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; DIM];
    v[i % DIM] = 0.5 + (i % 7) as f32 * 0.125;
    v[(i * 5 + 3) % DIM] = if i.is_multiple_of(11) { -0.0 } else { -0.25 };
    v
}

fn item(i: usize) -> Item {
    Item {
        item_id: format!("{:016x}", 0x1000 + i as u64 * 7919),
        content: format!("memory number {i}"),
        timestamp: 1.0e9 + i as f64,
        last_access: 1.0e9 + i as f64,
        token_count: 3,
        access_count: 1,
        importance: 0.5,
        project: None,
        extra: Default::default(),
    }
}

fn put(i: usize) -> Record {
    Record::Put {
        tier: [Tier::Hot, Tier::Warm, Tier::Cold][i % 3],
        item: item(i),
        vector: if i % 13 == 5 { Vec::new() } else { vector(i) },
    }
}

/// The files a checkpoint writes, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = [
        "coral_warm.json",
        "coral_cold.jsonl",
        "coral_vectors.npy",
        "coral_vector_index.json",
        "coral_vectors.sums",
        "coral_item_meta.json",
    ]
    .iter()
    .map(|n| {
        (
            n.to_string(),
            std::fs::read(dir.join(n)).unwrap_or_default(),
        )
    })
    .collect();
    out.sort();
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_compact_pool_checkpoints_the_same_bytes() {
    let dense_dir = tempfile::tempdir().unwrap();
    let compact_dir = tempfile::tempdir().unwrap();
    let mut dense = Store::open(StorePaths::in_dir(dense_dir.path()), options()).unwrap();
    let mut compact = Store::open(StorePaths::in_dir(compact_dir.path()), options()).unwrap();
    assert!(compact.set_compact_vectors(true));
    for store in [&mut dense, &mut compact] {
        store.commit((0..300).map(put).collect()).unwrap();
        // Replacements and removals move rows and leave garbage in the sparse arenas.
        store
            .commit(
                (0..300)
                    .step_by(4)
                    .map(|i| Record::Delete {
                        id: item(i).item_id,
                    })
                    .collect(),
            )
            .unwrap();
        store
            .commit((0..150).step_by(3).map(put).collect())
            .unwrap();
        store.checkpoint().unwrap();
    }
    assert!(compact.pool().is_compact() && !dense.pool().is_compact());
    assert_eq!(files(dense_dir.path()), files(compact_dir.path()));
    for row in 0..dense.pool().len() as u32 {
        let id = &dense.pool().item(row).item_id;
        let other = compact.pool().row(id).unwrap();
        assert!(matches!(
            compact.pool().vector(other),
            RowVector::Sparse { .. }
        ));
        assert_eq!(
            bits(&dense.pool().vector(row).to_dense(DIM)),
            bits(&compact.pool().vector(other).to_dense(DIM)),
            "{id}"
        );
    }
    // Back to dense: the same matrix again.
    assert!(compact.set_compact_vectors(false));
    compact.checkpoint().unwrap();
    assert_eq!(files(dense_dir.path()), files(compact_dir.path()));
}

#[test]
fn a_large_sparse_directory_loads_compact_with_every_vector() {
    let dir = tempfile::tempdir().unwrap();
    // Rows with a vector (every 13th has none) must reach the threshold.
    let n = COMPACT_FROM + COMPACT_FROM / 10;
    {
        let mut store = Store::open(StorePaths::in_dir(dir.path()), options()).unwrap();
        store.commit((0..n).map(put).collect()).unwrap();
        store.checkpoint().unwrap();
        // A few changes only in the journal, replayed over the compact pool at open.
        store
            .commit(vec![
                Record::Delete {
                    id: item(1).item_id,
                },
                put(n + 1),
            ])
            .unwrap();
    }
    let store = Store::open(StorePaths::in_dir(dir.path()), options()).unwrap();
    let pool = store.pool();
    assert!(pool.is_compact(), "{n} sparse rows load compact");
    assert_eq!(pool.len(), n);
    assert!(pool.row(&item(1).item_id).is_none());
    for i in (0..n).filter(|&i| i != 1).chain([n + 1]) {
        let row = pool.row(&item(i).item_id).unwrap();
        let want = if i % 13 == 5 {
            vec![0.0; DIM]
        } else {
            vector(i)
        };
        assert_eq!(
            bits(&pool.vector(row).to_dense(DIM)),
            bits(&want),
            "item {i}"
        );
        assert_eq!(
            pool.missing_vectors().contains(row),
            i % 13 == 5,
            "item {i}"
        );
    }
}

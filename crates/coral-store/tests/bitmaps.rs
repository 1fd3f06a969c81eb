//! `coral_bitmaps.bin` (docs/ann.md "Reopen"): an open takes each saved bitmap only for the
//! very text it was made from; a file that is stale, damaged, cut short or made by another
//! tokeniser is never trusted over the texts, and a process killed while saving it never
//! leaves one that is.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use coral_store::{FeatureFn, Item, Record, Store, StoreOptions, StorePaths, SyncPolicy, Tier};

/// A real-looking feature function: a bit per word, from the word's bytes.
fn word_bits(text: &str) -> [u64; 32] {
    let mut map = [0u64; 32];
    for word in text.split_whitespace() {
        let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let bit = h % 2048;
        map[(bit / 64) as usize] |= 1 << (bit % 64);
    }
    map
}

fn options(features: FeatureFn) -> StoreOptions {
    StoreOptions {
        dim: 4,
        sync: SyncPolicy::Never,
        wal_max_bytes: 1 << 40,
        features,
    }
}

fn open(dir: &Path) -> Store {
    Store::open(StorePaths::in_dir(dir), options(Arc::new(word_bits))).unwrap()
}

fn item(i: u64, text: &str) -> Item {
    Item {
        item_id: format!("{:016x}", 0xabc0_0000 + i),
        content: text.to_string(),
        timestamp: 1.0e9 + i as f64,
        last_access: 1.0e9 + i as f64,
        token_count: 3,
        access_count: 1,
        importance: 0.5,
        project: None,
        extra: Default::default(),
    }
}

fn put(i: u64, text: &str) -> Record {
    Record::Put {
        tier: [Tier::Hot, Tier::Warm, Tier::Cold][(i % 3) as usize],
        item: item(i, text),
        vector: vec![1.0, 0.0, i as f32, 0.5],
    }
}

fn text(i: u64) -> String {
    format!(
        "memory w{} w{} about topic{} number{i}",
        i % 17,
        i % 5,
        i % 3
    )
}

/// Every row's bitmap is the feature function's of its text: nothing trusted and wrong.
fn assert_true_to_the_texts(store: &Store, features: &dyn Fn(&str) -> [u64; 32]) {
    let pool = store.pool();
    for row in 0..pool.len() as u32 {
        let item = pool.item(row);
        assert_eq!(
            pool.bitmaps()[row as usize],
            features(&item.content),
            "row {row} ({:?})",
            item.content
        );
    }
}

#[test]
fn a_reopen_reads_the_saved_bitmaps_and_the_journal_on_top() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut store = open(dir.path());
        store
            .commit((0..200).map(|i| put(i, &text(i))).collect())
            .unwrap();
        store.checkpoint().unwrap();
        // Only in the journal: new texts, a changed text, a removal.
        store
            .commit((200..210).map(|i| put(i, &text(i))).collect())
            .unwrap();
        store.commit(vec![put(3, "a changed text w1")]).unwrap();
        store
            .commit(vec![Record::Delete {
                id: item(4, "").item_id,
            }])
            .unwrap();
    }
    assert!(dir.path().join("coral_bitmaps.bin").exists());
    let store = open(dir.path());
    assert_eq!(store.pool().len(), 209);
    // Every text of the checkpoint came from the file; the journal's on top, computed.
    assert_eq!(store.pool().bitmaps_loaded(), 200);
    assert_true_to_the_texts(&store, &word_bits);
    assert!(store.notes().iter().all(|n| !n.contains("coral_bitmaps")));
}

#[test]
fn a_stale_file_covers_only_the_texts_it_was_made_from() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("coral_bitmaps.bin");
    {
        let mut store = open(dir.path());
        store
            .commit((0..100).map(|i| put(i, &text(i))).collect())
            .unwrap();
        store.checkpoint().unwrap();
        let old = std::fs::read(&file).unwrap();
        // Half the texts change, then the old file is put back beside the new data files.
        store
            .commit(
                (0..50)
                    .map(|i| put(i, &format!("rewritten {i} w9")))
                    .collect(),
            )
            .unwrap();
        store.checkpoint().unwrap();
        std::fs::write(&file, old).unwrap();
    }
    let store = open(dir.path());
    assert_eq!(store.pool().len(), 100);
    assert_eq!(store.pool().bitmaps_loaded(), 50);
    assert_true_to_the_texts(&store, &word_bits);
}

#[test]
fn a_damaged_cut_or_foreign_file_is_ignored_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("coral_bitmaps.bin");
    {
        let mut store = open(dir.path());
        store
            .commit((0..60).map(|i| put(i, &text(i))).collect())
            .unwrap();
        store.checkpoint().unwrap();
    }
    let good = std::fs::read(&file).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x04;
    for (what, bytes) in [
        ("damaged", flipped),
        ("cut short", good[..good.len() - 7].to_vec()),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&file, &bytes).unwrap();
        let store = open(dir.path());
        assert_eq!(store.pool().bitmaps_loaded(), 0, "{what}");
        assert_true_to_the_texts(&store, &word_bits);
        assert!(
            store
                .notes()
                .iter()
                .any(|n| n.contains("coral_bitmaps.bin") && n.contains("ignored")),
            "{what}: {:?}",
            store.notes()
        );
    }
    // Made by another tokeniser: its bitmaps are that tokeniser's, not this one's.
    std::fs::write(&file, &good).unwrap();
    let other = |t: &str| {
        let mut map = word_bits(t);
        map[0] ^= 1;
        map
    };
    let store = Store::open(StorePaths::in_dir(dir.path()), options(Arc::new(other))).unwrap();
    assert_eq!(store.pool().bitmaps_loaded(), 0);
    assert_true_to_the_texts(&store, &other);
    assert!(
        store
            .notes()
            .iter()
            .any(|n| n.contains("another tokeniser")),
        "{:?}",
        store.notes()
    );
    drop(store);
    // The good file again: used whole.
    let store = open(dir.path());
    assert_eq!(store.pool().bitmaps_loaded(), 60);
}

/// A process that checkpoints over and over (each time saving the bitmaps) is killed with
/// SIGKILL at random moments; each reopen must hold every text's own bitmap, and most of them
/// come from a saved file.
#[test]
fn a_kill_during_a_bitmap_save_never_leaves_a_trusted_wrong_bitmap() {
    if let Ok(dir) = std::env::var("CORAL_BITMAP_KILL_CHILD") {
        child(Path::new(&dir));
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut seed = 0x5eedu64;
    let mut loaded = 0usize;
    for round in 0..8 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "a_kill_during_a_bitmap_save_never_leaves_a_trusted_wrong_bitmap",
                "--nocapture",
            ])
            .env("CORAL_BITMAP_KILL_CHILD", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(300 + (seed >> 33) % 900));
        child.kill().unwrap();
        child.wait().unwrap();
        let store = open(dir.path());
        assert_true_to_the_texts(&store, &word_bits);
        loaded += store.pool().bitmaps_loaded();
        assert!(
            store
                .notes()
                .iter()
                .all(|n| !n.contains("coral_bitmaps.bin")),
            "round {round}: an atomic save left a damaged file: {:?}",
            store.notes()
        );
    }
    assert!(loaded > 0, "no round used a saved bitmap file");
}

/// The child: changes texts (new, rewritten, removed) and checkpoints until killed.
fn child(dir: &Path) -> ! {
    let mut store = open(dir);
    let pid = u64::from(std::process::id());
    let mut n = 0u64;
    loop {
        let batch: Vec<Record> = (0..50)
            .map(|k| {
                n += 1;
                let i = (n * 7 + k) % 400;
                put(i, &format!("{} pid{pid} n{n}", text(i)))
            })
            .collect();
        store.commit(batch).unwrap();
        let gone = item(n % 400, "").item_id;
        if store.pool().row(&gone).is_some() {
            store.commit(vec![Record::Delete { id: gone }]).unwrap();
        }
        store.checkpoint().unwrap();
    }
}

//! `coral_keywords.idx`: the keyword index saved beside the data at checkpoint and close, so
//! that the first hybrid search after a reopen reads it instead of analysing every memory
//! (14.9 s at a million, docs/ann.md "Reopen"). Derived, never trusted over the pool: each
//! saved document carries its item's id, creation time and text key (`coral_store::TextKey`),
//! and a load keeps only documents whose item the pool still holds with the same text and
//! time; the rest are removed and the pool's other items analysed and added, as a rebuild
//! would. A file that is damaged, cut short, of another version or made by another analyser
//! is not used at all.
//!
//! Layout (little-endian): `CORALKWI`, version u32, the analyser's fingerprint u64, the slot
//! count u32; per slot a byte (0 free, 1 used), and for a used one the id (u16 length, bytes),
//! the text key (16 bytes) and the creation time (f64 bits); then the BM25 index
//! (`Bm25Index::write_parts`); then the CRC32 of everything before.

use std::io::Write;
use std::path::Path;

use coral_score::{Bm25Index, search_terms};
use coral_store::{Pool, TextKey};

use crate::keyword_index::KeywordIndex;

const MAGIC: &[u8; 8] = b"CORALKWI";
const VERSION: u32 = 1;

/// A saved slot: the item's id, text key and creation time.
pub(crate) struct SavedDoc {
    pub(crate) id: String,
    pub(crate) text: TextKey,
    pub(crate) timestamp: f64,
}

/// What a file holds: the slot table and the BM25 index.
pub(crate) type Saved = (Vec<Option<SavedDoc>>, Bm25Index);

/// The analyser's fingerprint: a hash of its terms for texts in several scripts, so a file
/// made by another stemmer or tokeniser is not used (bump [`VERSION`] with any change to the
/// analysis that leaves these alone).
fn fingerprint() -> u64 {
    const PROBES: [&str; 4] = [
        "Painted landscapes, running ran runs; the formal manuals",
        "我最喜欢喝可乐 风景画 ＡＢＣ１２３ café",
        "नमस्ते दुनिया ภาษาไทย привет мир カタカナ 한국어",
        "w1 w2000 x-y_z v2.0 İstanbul ǅemal",
    ];
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for probe in PROBES {
        for term in search_terms(probe) {
            for b in term.bytes().chain([0xff]) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    h
}

/// A writer that keeps the CRC32 of what passed through it.
struct Summed<'a> {
    inner: &'a mut dyn Write,
    crc: crc32fast::Hasher,
}

impl Write for Summed<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Saves `index` (which matches `pool`) at `path`: a temp file, fsynced when `sync`, renamed
/// over the old one (a process killed meanwhile leaves the old file or the new one whole).
pub(crate) fn save(
    path: &Path,
    index: &KeywordIndex,
    pool: &Pool,
    sync: bool,
) -> Result<(), String> {
    let result = coral_store::write_atomic_with(path, sync, &mut |w| {
        let mut out = Summed {
            inner: w,
            crc: crc32fast::Hasher::new(),
        };
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&fingerprint().to_le_bytes())?;
        index.write_to(&mut out, pool)?;
        let crc = out.crc.finalize();
        w.write_all(&crc.to_le_bytes())
    });
    result.map_err(|e| format!("the keyword index was not saved: {e}"))
}

/// The saved slots and BM25 index of the file at `path`; `Ok(None)` when there is none, `Err`
/// with the reason when it cannot be used.
pub(crate) fn read(path: &Path) -> Result<Option<Saved>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    parse(&bytes).map(Some).map_err(|why| {
        format!(
            "{} {why}: ignored, the keyword index is rebuilt",
            path.display()
        )
    })
}

fn parse(bytes: &[u8]) -> Result<Saved, String> {
    if bytes.len() < 8 + 4 + 8 + 4 + 4 || &bytes[..8] != MAGIC {
        return Err("is not a keyword index file (bad header or cut short)".into());
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) {
        return Err("fails its own checksum (damaged or cut short)".into());
    }
    let version = u32::from_le_bytes([body[8], body[9], body[10], body[11]]);
    if version != VERSION {
        return Err(format!("is version {version}, this Coral reads {VERSION}"));
    }
    let mut fp = [0u8; 8];
    fp.copy_from_slice(&body[12..20]);
    if u64::from_le_bytes(fp) != fingerprint() {
        return Err("was made by another analyser".into());
    }
    let mut at = 20usize;
    let c = take(body, &mut at, 4)?;
    let count = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize;
    let mut docs = Vec::with_capacity(count.min(body.len()));
    for _ in 0..count {
        match take(body, &mut at, 1)?[0] {
            0 => docs.push(None),
            1 => {
                let l = take(body, &mut at, 2)?;
                let len = u16::from_le_bytes([l[0], l[1]]) as usize;
                let id = std::str::from_utf8(take(body, &mut at, len)?)
                    .map_err(|_| "holds an id that is not UTF-8".to_string())?
                    .to_string();
                let mut key = [0u8; 16];
                key.copy_from_slice(take(body, &mut at, 16)?);
                let mut t = [0u8; 8];
                t.copy_from_slice(take(body, &mut at, 8)?);
                docs.push(Some(SavedDoc {
                    id,
                    text: TextKey::from_bytes(key),
                    timestamp: f64::from_bits(u64::from_le_bytes(t)),
                }));
            }
            other => return Err(format!("holds a slot marked {other}")),
        }
    }
    let (bm25, used) = Bm25Index::read_parts(&body[at..])?;
    if at + used != body.len() {
        return Err("holds more bytes than its index".into());
    }
    Ok((docs, bm25))
}

/// The next `n` bytes of `body` from `at`.
fn take<'a>(body: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], String> {
    let b = body.get(*at..*at + n).ok_or("is cut short")?;
    *at += n;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;
    use std::sync::Arc;
    use std::time::Duration;

    use coral_config::Config;
    use coral_embed::HashEmbedder;

    use crate::engine::Engine;
    use crate::types::{InsertOptions, SearchOptions};

    const NOW: f64 = 1_775_822_400.0;
    const FILE: &str = "coral_keywords.idx";

    fn config(dir: &Path, mode: &str) -> Config {
        let mut config = Config {
            base_dir: dir.to_path_buf(),
            ..Config::default()
        };
        config.storage.sync = "never".into();
        config.retrieval.mode = mode.parse().unwrap();
        config.memory.sim_threshold_hot = 1.0;
        config
    }

    fn open(dir: &Path) -> Engine {
        Engine::open(
            config(dir, "hybrid"),
            Arc::new(HashEmbedder::new(64).unwrap()),
        )
        .unwrap()
        .0
    }

    /// Where the data files of the store under `dir` are.
    fn data(dir: &Path) -> std::path::PathBuf {
        config(dir, "hybrid").store_paths().dir
    }

    fn text(i: u64) -> String {
        let topics = [
            "拿铁咖啡 morning",
            "rust code review",
            "painted landscapes",
            "火锅 麻辣",
        ];
        format!(
            "note {i} about {} w{} w{}",
            topics[(i % 4) as usize],
            i % 7,
            i % 11
        )
    }

    fn insert(coral: &Engine, i: u64) -> String {
        let options = InsertOptions {
            timestamp: Some(NOW - 3600.0 * i as f64),
            now: Some(NOW),
            ..InsertOptions::default()
        };
        coral
            .insert_with(&text(i), options)
            .unwrap()
            .id()
            .to_string()
    }

    /// Every hit of a few searches with each score as bits.
    fn results(coral: &Engine) -> Vec<Vec<(String, [u64; 5])>> {
        [
            "rust review",
            "拿铁",
            "landscapes w3",
            "note w5 麻辣",
            "morning code",
        ]
        .iter()
        .map(|q| {
            let options = SearchOptions {
                top_k: Some(8),
                now: Some(NOW),
                ..SearchOptions::default()
            };
            coral
                .search_with(q, options)
                .unwrap()
                .into_iter()
                .map(|h| {
                    let s = h.scores;
                    let bits = [
                        h.score.to_bits(),
                        s.vector.to_bits(),
                        s.jaccard.to_bits(),
                        s.time.to_bits(),
                        s.bm25.unwrap_or(f64::NAN).to_bits(),
                    ];
                    (h.item.item_id, bits)
                })
                .collect()
        })
        .collect()
    }

    fn load_report(coral: &Engine) -> Option<Result<usize, String>> {
        coral.lock_raw().door.keyword_load.clone()
    }

    fn fresh_contents(coral: &Engine) -> bool {
        let engine = coral.lock_raw();
        let pool = engine.door.view().pool();
        let kept = engine
            .door
            .keyword_index()
            .expect("a hybrid search made one");
        kept.matches(pool)
            && kept.contents() == crate::keyword_index::KeywordIndex::build(pool).contents()
    }

    /// Copies the store under `from` to one under `to`, without the file `skip`.
    fn copy_dir(from: &Path, to: &Path, skip: &str) {
        let (from, to) = (data(from), data(to));
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name();
            if name != skip && entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), to.join(&name)).unwrap();
            }
        }
    }

    /// A directory whose keyword file was saved by a close after a search.
    fn saved(dir: &Path) {
        let coral = open(dir);
        let ids: Vec<String> = (0..80).map(|i| insert(&coral, i)).collect();
        for id in ids.iter().step_by(9) {
            assert!(coral.delete(id).unwrap());
        }
        for i in 80..90 {
            insert(&coral, i);
        }
        results(&coral);
        coral.close().unwrap();
        assert!(data(dir).join(FILE).exists());
    }

    #[test]
    fn a_reopen_with_the_saved_index_gives_the_rebuilt_results_bit_for_bit() {
        let dir = tempfile::tempdir().unwrap();
        saved(dir.path());
        let (with, without) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        copy_dir(dir.path(), with.path(), "");
        copy_dir(dir.path(), without.path(), FILE);
        let a = open(with.path());
        let b = open(without.path());
        let (ra, rb) = (results(&a), results(&b));
        assert!(ra.iter().map(Vec::len).sum::<usize>() > 20);
        assert_eq!(ra, rb);
        assert_eq!(load_report(&a), Some(Ok(0)), "the file was read whole");
        assert_eq!(load_report(&b), None, "no file: built");
        assert!(fresh_contents(&a));
        // Changes after the load follow through the door as before.
        let id = insert(&a, 500);
        insert(&b, 500);
        assert!(a.delete(&id).unwrap() && b.delete(&id).unwrap());
        assert_eq!(results(&a), results(&b));
        assert!(fresh_contents(&a));
    }

    #[test]
    fn a_stale_file_is_caught_up_and_a_damaged_cut_or_foreign_one_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        saved(dir.path());
        let file = data(dir.path()).join(FILE);
        let old = std::fs::read(&file).unwrap();
        // Texts change without the index (weighted mode keeps none), then the old file is put
        // back beside the newer data.
        {
            let coral = Engine::open(
                config(dir.path(), "weighted"),
                Arc::new(HashEmbedder::new(64).unwrap()),
            )
            .unwrap()
            .0;
            for i in 200..210 {
                insert(&coral, i);
            }
            let some: Vec<String> = coral
                .search_with("rust review", SearchOptions::default())
                .unwrap()
                .into_iter()
                .map(|h| h.item.item_id)
                .collect();
            for id in some.iter().take(3) {
                assert!(coral.delete(id).unwrap());
            }
            coral.close().unwrap();
        }
        std::fs::write(&file, &old).unwrap();
        // What a build from the pool gives, in a copy of its own (searches count hits, so
        // each comparison starts from the same directory).
        let rebuilt = || {
            let reference = tempfile::tempdir().unwrap();
            copy_dir(dir.path(), reference.path(), FILE);
            results(&open(reference.path()))
        };
        let scratch = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), scratch.path(), "");
        let coral = open(scratch.path());
        // The same hits with the same components, bit for bit; the fused score to the last
        // bits only, since the caught-up index numbers the 13 repaired documents otherwise
        // than a build (the BM25 scores' spread is summed in document order), as an index
        // kept in step with changes in a live process does.
        let (got, want) = (results(&coral), rebuilt());
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.len(), w.len());
            for ((gid, gs), (wid, ws)) in g.iter().zip(w) {
                assert_eq!((gid, &gs[1..]), (wid, &ws[1..]));
                let (a, b) = (f64::from_bits(gs[0]), f64::from_bits(ws[0]));
                assert!((a - b).abs() <= 1e-12 * b.abs(), "{gid}: {a} vs {b}");
            }
        }
        assert_eq!(load_report(&coral), Some(Ok(13)), "10 added, 3 removed");
        assert!(fresh_contents(&coral));
        drop(coral);

        let mut flipped = old.clone();
        flipped[old.len() / 2] ^= 0x20;
        let mut foreign = old.clone();
        foreign[12] ^= 1;
        let body = foreign.len() - 4;
        let crc = crc32fast::hash(&foreign[..body]).to_le_bytes();
        foreign[body..].copy_from_slice(&crc);
        for (what, bytes, needle) in [
            ("damaged", flipped, "checksum"),
            ("cut short", old[..old.len() - 9].to_vec(), "checksum"),
            ("empty", Vec::new(), "not a keyword index"),
            ("foreign", foreign, "another analyser"),
        ] {
            let scratch = tempfile::tempdir().unwrap();
            copy_dir(dir.path(), scratch.path(), FILE);
            std::fs::write(data(scratch.path()).join(FILE), &bytes).unwrap();
            let coral = open(scratch.path());
            let got = results(&coral);
            assert_eq!(got, rebuilt(), "{what}");
            match load_report(&coral) {
                Some(Err(why)) => assert!(why.contains(needle), "{what}: {why}"),
                other => panic!("{what}: {other:?}"),
            }
            assert!(fresh_contents(&coral), "{what}");
        }
    }

    /// A process that saves the keyword index over and over (searches, inserts, deletes and
    /// checkpoints) is killed with SIGKILL at random moments; each reopen's index must hold
    /// exactly what a build from the pool holds, and most reopens read a saved file.
    #[test]
    fn a_kill_during_a_keyword_save_never_leaves_a_trusted_wrong_index() {
        if let Ok(dir) = std::env::var("CORAL_KEYWORD_KILL_CHILD") {
            child(Path::new(&dir));
        }
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut seed = 0x9e37u64;
        let mut loaded = 0;
        for round in 0..8 {
            let mut child = Command::new(&exe)
                .args([
                    "--exact",
                    "keyword_file::tests::a_kill_during_a_keyword_save_never_leaves_a_trusted_wrong_index",
                    "--nocapture",
                ])
                .env("CORAL_KEYWORD_KILL_CHILD", dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            std::thread::sleep(Duration::from_millis(600 + (seed >> 33) % 1200));
            child.kill().unwrap();
            child.wait().unwrap();
            let coral = open(dir.path());
            results(&coral);
            assert!(fresh_contents(&coral), "round {round}");
            match load_report(&coral) {
                Some(Ok(_)) => loaded += 1,
                None => {}
                Some(Err(why)) => panic!("round {round}: an atomic save left a bad file: {why}"),
            }
            drop(coral);
        }
        assert!(loaded > 0, "no round read a saved keyword index");
    }

    /// The child: inserts, deletes, searches and checkpoints (each saving the index) until
    /// killed.
    fn child(dir: &Path) -> ! {
        let coral = open(dir);
        let pid = std::process::id();
        let mut n = 0u64;
        loop {
            let ids: Vec<String> = (0..20)
                .map(|_| {
                    n += 1;
                    let options = InsertOptions {
                        timestamp: Some(NOW - 60.0 * (n % 5000) as f64),
                        now: Some(NOW),
                        ..InsertOptions::default()
                    };
                    let text = format!("{} pid{pid} n{n}", text(n % 500));
                    coral.insert_with(&text, options).unwrap().id().to_string()
                })
                .collect();
            for id in ids.iter().step_by(4) {
                coral.delete(id).unwrap();
            }
            results(&coral);
            coral.flush().unwrap();
        }
    }
}

//! The write-ahead journal (`coral_wal.jsonl`): checksummed records, sync policies, recovery.
//!
//! One record per line: `{"crc":"<crc32 of payload, 8 hex>","rec":<payload JSON>}`. The payload is
//! hashed exactly as written, so a reader can verify it without re-serialising. Every record is
//! idempotent (a put carries the full item and vector, a touch carries absolute counters), so
//! replaying a journal over a checkpoint that already contains some of it is harmless.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{IoContext, Result};
use crate::item::{Item, Tier};

/// One journaled mutation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Record {
    /// First line of every journal: the checkpoint generation it continues.
    Begin {
        /// Incremented by every checkpoint.
        generation: u64,
    },
    /// Insert or replace an item with its vector (empty vector = recompute on load).
    Put {
        /// Tier to put it in.
        tier: Tier,
        /// The full item.
        item: Item,
        /// Its embedding, stored as base64 of little-endian f32.
        #[serde(serialize_with = "ser_vector", deserialize_with = "de_vector")]
        vector: Vec<f32>,
    },
    /// Set an item's access counters (absolute values, so replay is idempotent).
    Touch {
        /// Item id.
        id: String,
        /// New access count.
        access_count: u64,
        /// New last access time.
        last_access: f64,
    },
    /// Set an item's importance.
    Importance {
        /// Item id.
        id: String,
        /// New importance in 0..1.
        importance: f64,
    },
    /// Move an item to another tier.
    Move {
        /// Item id.
        id: String,
        /// Destination tier.
        tier: Tier,
    },
    /// Delete an item.
    Delete {
        /// Item id.
        id: String,
    },
    /// Remove an item from the pool into the archive (already written to the archive file).
    Archive {
        /// Item id.
        id: String,
        /// Why: `"evicted"`, `"trimmed"`, `"distilled"`.
        reason: String,
        /// For distillation, the id of the summary that replaced it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary_id: Option<String>,
        /// When, Unix seconds.
        at: f64,
    },
}

impl Record {
    /// The item id the record is about, if any.
    pub fn id(&self) -> Option<&str> {
        match self {
            Record::Begin { .. } => None,
            Record::Put { item, .. } => Some(&item.item_id),
            Record::Touch { id, .. }
            | Record::Importance { id, .. }
            | Record::Move { id, .. }
            | Record::Delete { id }
            | Record::Archive { id, .. } => Some(id),
        }
    }
}

fn ser_vector<S: Serializer>(v: &[f32], s: S) -> Result<S::Ok, S::Error> {
    let mut bytes = Vec::with_capacity(v.len() * 4);
    for x in v {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn de_vector<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
    let text = String::deserialize(d)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(serde::de::Error::custom)?;
    if bytes.len() % 4 != 0 {
        return Err(serde::de::Error::custom(
            "vector bytes are not a multiple of 4",
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

const PREFIX: &[u8] = b"{\"crc\":\"";
const MIDDLE: &[u8] = b"\",\"rec\":";
const HEADER_LEN: usize = 24; // PREFIX + 8 hex digits + MIDDLE

/// Append one encoded record line (with its trailing newline) to `buf`.
pub fn encode_line(record: &Record, buf: &mut Vec<u8>) {
    let start = buf.len();
    buf.extend_from_slice(PREFIX);
    buf.extend_from_slice(b"00000000");
    buf.extend_from_slice(MIDDLE);
    let payload_start = buf.len();
    // Records hold only strings, numbers and maps with string keys: serialising to memory
    // cannot fail.
    serde_json::to_writer(&mut *buf, record).expect("serialising a record cannot fail");
    let crc = crc32fast::hash(&buf[payload_start..]);
    let hex = format!("{crc:08x}");
    buf[start + PREFIX.len()..start + PREFIX.len() + 8].copy_from_slice(hex.as_bytes());
    buf.extend_from_slice(b"}\n");
}

/// Decode one line (without its newline).
pub fn decode_line(line: &[u8]) -> std::result::Result<Record, String> {
    if line.len() < HEADER_LEN + 2
        || !line.starts_with(PREFIX)
        || &line[PREFIX.len() + 8..HEADER_LEN] != MIDDLE
        || line.last() != Some(&b'}')
    {
        return Err("not a journal record".into());
    }
    let hex = std::str::from_utf8(&line[PREFIX.len()..PREFIX.len() + 8])
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or("checksum is not hex")?;
    let payload = &line[HEADER_LEN..line.len() - 1];
    let actual = crc32fast::hash(payload);
    if actual != hex {
        return Err(format!(
            "checksum mismatch (stored {hex:08x}, computed {actual:08x})"
        ));
    }
    serde_json::from_slice(payload).map_err(|e| format!("record does not parse: {e}"))
}

/// Damage found in the middle of a journal.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    /// 1-based line of the first bad record.
    pub line: usize,
    /// Byte offset where it starts.
    pub offset: usize,
    /// What was wrong with it.
    pub detail: String,
    /// Lines from the bad one to the end (all quarantined).
    pub lines: usize,
}

/// What reading a journal found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Valid records in order.
    pub records: Vec<Record>,
    /// Bytes of the valid prefix (where the next append must start).
    pub valid_len: usize,
    /// An unterminated last line (a crash mid-append) was ignored.
    pub torn_tail: bool,
    /// A bad complete record; it and everything after it are not applied.
    pub damage: Option<Damage>,
}

/// Read journal bytes: every complete valid record up to the first bad one.
pub fn scan(bytes: &[u8]) -> Scan {
    let mut out = Scan::default();
    let mut offset = 0;
    let mut line_no = 0;
    while offset < bytes.len() {
        line_no += 1;
        let Some(nl) = bytes[offset..].iter().position(|&b| b == b'\n') else {
            out.torn_tail = true;
            break;
        };
        let line = &bytes[offset..offset + nl];
        if line.iter().all(u8::is_ascii_whitespace) {
            offset += nl + 1;
            out.valid_len = offset;
            continue;
        }
        match decode_line(line) {
            Ok(record) => {
                out.records.push(record);
                offset += nl + 1;
                out.valid_len = offset;
            }
            Err(detail) => {
                let lines = bytes[offset..]
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .count();
                out.damage = Some(Damage {
                    line: line_no,
                    offset,
                    detail,
                    lines,
                });
                break;
            }
        }
    }
    out
}

/// When journal appends reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync before acknowledging every write.
    Always,
    /// write() before acknowledging; fsync in the background at most every interval.
    Interval(Duration),
    /// Never fsync (the OS decides).
    Never,
}

impl SyncPolicy {
    /// Whether checkpoints fsync their files.
    pub fn syncs(self) -> bool {
        !matches!(self, SyncPolicy::Never)
    }
}

struct SyncShared {
    file: Mutex<Arc<File>>,
    dirty: AtomicBool,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// Background fsync for [`SyncPolicy::Interval`].
struct Syncer {
    shared: Arc<SyncShared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start(file: Arc<File>, every: Duration) -> Syncer {
        let shared = Arc::new(SyncShared {
            file: Mutex::new(file),
            dirty: AtomicBool::new(false),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let bg = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("coral-wal-sync".into())
            .spawn(move || {
                loop {
                    let stopped = {
                        let guard = bg.stop.lock().unwrap_or_else(|e| e.into_inner());
                        let (guard, _) = bg
                            .wake
                            .wait_timeout(guard, every)
                            .unwrap_or_else(|e| e.into_inner());
                        *guard
                    };
                    if bg.dirty.swap(false, Ordering::AcqRel) {
                        let file = bg.file.lock().unwrap_or_else(|e| e.into_inner()).clone();
                        // A failed background fsync is retried at the next tick.
                        if file.sync_data().is_err() {
                            bg.dirty.store(true, Ordering::Release);
                        }
                    }
                    if stopped {
                        break;
                    }
                }
            })
            .ok();
        Syncer { shared, thread }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        *self.shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// An open journal, appending.
pub struct Journal {
    path: PathBuf,
    file: Arc<File>,
    len: u64,
    policy: SyncPolicy,
    syncer: Option<Syncer>,
    generation: u64,
    buf: Vec<u8>,
}

impl Journal {
    /// Open an existing journal for appending at `valid_len` (dropping any torn tail).
    pub fn open(
        path: &Path,
        valid_len: u64,
        generation: u64,
        policy: SyncPolicy,
    ) -> Result<Journal> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .at(path)?;
        let on_disk = file.metadata().at(path)?.len();
        if on_disk != valid_len {
            file.set_len(valid_len).at(path)?;
            if policy.syncs() {
                file.sync_all().at(path)?;
            }
        }
        let mut journal = Journal::wrap(path, file, valid_len, generation, policy);
        if valid_len == 0 {
            journal.append(&[Record::Begin { generation }])?;
        }
        Ok(journal)
    }

    /// Atomically replace the journal with a fresh one for `generation`.
    pub fn reset(&mut self, generation: u64) -> Result<()> {
        let mut buf = Vec::new();
        encode_line(&Record::Begin { generation }, &mut buf);
        crate::files::write_atomic(&self.path, &buf, self.policy.syncs())?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .at(&self.path)?;
        let file = Arc::new(file);
        if let Some(s) = &self.syncer {
            *s.shared.file.lock().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&file);
            s.shared.dirty.store(false, Ordering::Release);
        }
        self.file = file;
        self.len = buf.len() as u64;
        self.generation = generation;
        Ok(())
    }

    fn wrap(path: &Path, file: File, len: u64, generation: u64, policy: SyncPolicy) -> Journal {
        let file = Arc::new(file);
        let syncer = match policy {
            SyncPolicy::Interval(every) => Some(Syncer::start(Arc::clone(&file), every)),
            _ => None,
        };
        Journal {
            path: path.to_path_buf(),
            file,
            len,
            policy,
            syncer,
            generation,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Append records in one write; when this returns they survive a killed process (and, with
    /// [`SyncPolicy::Always`], a power cut).
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        self.buf.clear();
        for r in records {
            encode_line(r, &mut self.buf);
        }
        let mut file: &File = &self.file;
        // Position explicitly: the file may have been truncated by recovery.
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::Start(self.len)).at(&self.path)?;
        if let Err(e) = file.write_all(&self.buf) {
            // Leave no partial record behind: cut back to the last good length.
            let _ = self.file.set_len(self.len);
            return Err(e).at(&self.path);
        }
        self.len += self.buf.len() as u64;
        match self.policy {
            SyncPolicy::Always => self.file.sync_data().at(&self.path)?,
            SyncPolicy::Interval(_) => {
                if let Some(s) = &self.syncer {
                    s.shared.dirty.store(true, Ordering::Release);
                }
            }
            SyncPolicy::Never => {}
        }
        Ok(())
    }

    /// Identity of the file this journal writes (a checkpoint elsewhere replaces the file).
    pub fn ino(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map(|m| m.ino()).unwrap_or(0)
    }

    /// Bytes from `offset` to the end of the file, as other processes left them.
    pub fn read_from(&self, offset: u64) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file: &File = &self.file;
        file.seek(SeekFrom::Start(offset)).at(&self.path)?;
        let mut out = Vec::new();
        file.read_to_end(&mut out).at(&self.path)?;
        Ok(out)
    }

    /// Take `len` as the journal's end: records up to it are applied. Anything after it (a torn
    /// line left by a process that died mid-append) is cut off; only call this holding the
    /// write lock, when no append can be in progress.
    pub fn set_end(&mut self, len: u64) -> Result<()> {
        let on_disk = self.file.metadata().at(&self.path)?.len();
        if on_disk > len {
            self.file.set_len(len).at(&self.path)?;
        }
        self.len = len;
        Ok(())
    }

    /// Move the applied end forward without touching the file (records up to `len` were read
    /// and applied outside the write lock).
    pub fn advance_to(&mut self, len: u64) {
        self.len = self.len.max(len);
    }

    /// fsync now.
    pub fn sync(&self) -> Result<()> {
        self.file.sync_data().at(&self.path)
    }

    /// Bytes in the journal.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The checkpoint generation this journal continues.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Map;

    fn item(id: &str) -> Item {
        Item {
            item_id: id.into(),
            content: format!("content {id} 内容"),
            timestamp: 1.5,
            last_access: 2.5,
            token_count: 3,
            access_count: 1,
            importance: 0.5,
            project: None,
            extra: Map::new(),
        }
    }

    fn sample() -> Vec<Record> {
        vec![
            Record::Begin { generation: 3 },
            Record::Put {
                tier: Tier::Hot,
                item: item("a"),
                vector: vec![0.25, -1.0, f32::MIN_POSITIVE],
            },
            Record::Touch {
                id: "a".into(),
                access_count: 4,
                last_access: 9.0,
            },
            Record::Move {
                id: "a".into(),
                tier: Tier::Cold,
            },
            Record::Importance {
                id: "a".into(),
                importance: 1.0,
            },
            Record::Archive {
                id: "a".into(),
                reason: "evicted".into(),
                summary_id: None,
                at: 10.0,
            },
            Record::Delete { id: "a".into() },
        ]
    }

    fn encode_all(records: &[Record]) -> Vec<u8> {
        let mut buf = Vec::new();
        for r in records {
            encode_line(r, &mut buf);
        }
        buf
    }

    #[test]
    fn records_round_trip() {
        let bytes = encode_all(&sample());
        let scan = scan(&bytes);
        assert_eq!(scan.records, sample());
        assert_eq!(scan.valid_len, bytes.len());
        assert!(!scan.torn_tail && scan.damage.is_none());
    }

    #[test]
    fn torn_tail_is_dropped_silently() {
        let bytes = encode_all(&sample());
        for cut in [bytes.len() - 1, bytes.len() - 20] {
            let scan = scan(&bytes[..cut]);
            assert!(scan.torn_tail);
            assert!(scan.damage.is_none());
            assert_eq!(scan.records.len(), sample().len() - 1);
        }
    }

    #[test]
    fn a_flipped_byte_in_the_middle_is_damage_with_a_line_number() {
        let mut bytes = encode_all(&sample());
        let third_line = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(1)
            .unwrap()
            .0
            + 1;
        bytes[third_line + 40] ^= 0x01;
        let scan = scan(&bytes);
        let damage = scan.damage.expect("damage detected");
        assert_eq!(damage.line, 3);
        assert_eq!(damage.offset, third_line);
        assert_eq!(damage.lines, sample().len() - 2);
        assert_eq!(scan.records, sample()[..2].to_vec());
        assert!(damage.detail.contains("checksum") || damage.detail.contains("parse"));
    }

    proptest! {
        #[test]
        fn scanning_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let s = scan(&bytes);
            prop_assert!(s.valid_len <= bytes.len());
        }

        #[test]
        fn any_corruption_is_detected_or_harmless(pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
            let good = encode_all(&sample());
            let mut bytes = good.clone();
            let i = pos.index(bytes.len());
            bytes[i] ^= flip;
            let s = scan(&bytes);
            // Accepted records are always a prefix of the originals; a shortfall is reported.
            prop_assert!(s.records.len() <= sample().len());
            for (got, want) in s.records.iter().zip(sample()) {
                prop_assert_eq!(got, &want);
            }
            if s.records.len() < sample().len() {
                prop_assert!(s.damage.is_some() || s.torn_tail);
            }
        }
    }
}

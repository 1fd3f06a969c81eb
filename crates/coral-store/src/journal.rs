//! The write-ahead journal (`coral_wal.jsonl`): checksummed records, appends under a sync policy
//! (`coral_base::SyncPolicy`), recovery.
//!
//! One record per line: `{"crc":"<crc32 of payload, 8 hex>","rec":<payload JSON>}`. The payload is
//! hashed exactly as written, so a reader can verify it without re-serialising. Every record is
//! idempotent (a put carries the full item and vector, a touch carries absolute counters), so
//! replaying a journal over a checkpoint that already contains some of it is harmless.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Result;
use crate::item::{Item, Tier};
pub use coral_base::SyncPolicy;
use coral_base::{IoContext, Syncer};

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
const SEQ_MIDDLE: &[u8] = b"\",\"seq\":";
const REC_MIDDLE: &[u8] = b",\"rec\":";
/// The first format, without sequence numbers: still read, never written.
const V1_MIDDLE: &[u8] = b"\",\"rec\":";

/// Append one encoded record line (with its trailing newline) to `buf`.
///
/// The line is `{"crc":"<8 hex>","seq":<n>,"rec":<payload>}`; the checksum covers everything
/// from the first digit of `n` to the end of the payload, so neither the number nor the record
/// can change unnoticed. Sequence numbers run without gaps through one journal file (the
/// `begin` record is 0), which is how a missing line is told from a clean file.
pub fn encode_line(seq: u64, record: &Record, buf: &mut Vec<u8>) {
    let start = buf.len();
    buf.extend_from_slice(PREFIX);
    buf.extend_from_slice(b"00000000");
    buf.extend_from_slice(SEQ_MIDDLE);
    let covered = buf.len();
    buf.extend_from_slice(seq.to_string().as_bytes());
    buf.extend_from_slice(REC_MIDDLE);
    // Records hold only strings, numbers and maps with string keys: serialising to memory
    // cannot fail.
    serde_json::to_writer(&mut *buf, record).expect("serialising a record cannot fail");
    let crc = crc32fast::hash(&buf[covered..]);
    let hex = format!("{crc:08x}");
    buf[start + PREFIX.len()..start + PREFIX.len() + 8].copy_from_slice(hex.as_bytes());
    buf.extend_from_slice(b"}\n");
}

/// A decoded line: its sequence number (`None` in the first format) and record.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Position in the journal file; `None` for lines written before sequence numbers.
    pub seq: Option<u64>,
    /// The record.
    pub record: Record,
}

/// Decode one line (without its newline).
pub fn decode_line(line: &[u8]) -> std::result::Result<Line, String> {
    let head = PREFIX.len() + 8;
    if line.len() < head + V1_MIDDLE.len() + 2
        || !line.starts_with(PREFIX)
        || line.last() != Some(&b'}')
    {
        return Err("not a journal record".into());
    }
    let stored = std::str::from_utf8(&line[PREFIX.len()..head])
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or("checksum is not hex")?;
    let body = &line[..line.len() - 1];
    let (seq, covered, payload) = if body[head..].starts_with(SEQ_MIDDLE) {
        let covered = &body[head + SEQ_MIDDLE.len()..];
        let digits = covered.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 20 || !covered[digits..].starts_with(REC_MIDDLE) {
            return Err("sequence number is malformed".into());
        }
        let seq = std::str::from_utf8(&covered[..digits])
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
            .ok_or("sequence number is malformed")?;
        (Some(seq), covered, &covered[digits + REC_MIDDLE.len()..])
    } else if body[head..].starts_with(V1_MIDDLE) {
        let payload = &body[head + V1_MIDDLE.len()..];
        (None, payload, payload)
    } else {
        return Err("not a journal record".into());
    };
    let actual = crc32fast::hash(covered);
    if actual != stored {
        return Err(format!(
            "checksum mismatch (stored {stored:08x}, computed {actual:08x})"
        ));
    }
    let record =
        serde_json::from_slice(payload).map_err(|e| format!("record does not parse: {e}"))?;
    Ok(Line { seq, record })
}

/// What is wrong at one place of a journal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DamageKind {
    /// A complete line that is not a valid record (bad checksum, does not parse). Only this
    /// line is set aside; the records after it are applied.
    Unreadable,
    /// Sequence numbers jump: the records `from..=to` are not in the file (a line was
    /// deleted or the file was spliced). Nothing is there to set aside; the loss is reported.
    Missing {
        /// First missing sequence number.
        from: u64,
        /// Last missing sequence number.
        to: u64,
    },
    /// A record whose sequence number was already seen (a repeated or misplaced line). Records
    /// are idempotent, so it is set aside and reported rather than applied twice.
    Repeated {
        /// Its sequence number.
        seq: u64,
    },
}

/// Damage found in a journal.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    /// 1-based line where it was found.
    pub line: usize,
    /// Byte offset of that line.
    pub offset: usize,
    /// Bytes of the line set aside, newline included (0 for [`DamageKind::Missing`]).
    pub len: usize,
    /// What kind of damage.
    pub kind: DamageKind,
    /// What was wrong, in words.
    pub detail: String,
}

/// What reading a journal found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Valid records in order.
    pub records: Vec<Record>,
    /// Bytes up to the end of the last complete line (where the next append must start).
    pub valid_len: usize,
    /// An unterminated last line (a crash mid-append, never acknowledged) was ignored.
    pub torn_tail: bool,
    /// Every damaged or missing place, in file order. Valid records around them are kept.
    pub damage: Vec<Damage>,
    /// The highest sequence number read (`None` when no line had one).
    pub last_seq: Option<u64>,
}

/// Read journal bytes: every complete valid record, with every damaged line and every gap in
/// the sequence numbers reported. `after` is the sequence number of the record just before
/// `bytes` (when reading a journal from the middle), so a gap at the start is seen too.
pub fn scan(bytes: &[u8], after: Option<u64>) -> Scan {
    let mut out = Scan {
        last_seq: after,
        ..Scan::default()
    };
    let mut offset = 0;
    let mut line_no = 0;
    // Unreadable lines since the last good record.
    let mut unreadable_run = 0u64;
    while offset < bytes.len() {
        line_no += 1;
        let Some(nl) = bytes[offset..].iter().position(|&b| b == b'\n') else {
            out.torn_tail = true;
            break;
        };
        let line = &bytes[offset..offset + nl];
        let next = offset + nl + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            offset = next;
            out.valid_len = offset;
            continue;
        }
        match decode_line(line) {
            Ok(Line { seq: None, record }) => {
                unreadable_run = 0;
                out.records.push(record);
            }
            Ok(Line {
                seq: Some(seq),
                record,
            }) => {
                // A `begin` record starts a file and its numbering.
                let expected = match (&record, out.last_seq) {
                    (Record::Begin { .. }, _) | (_, None) => seq,
                    (_, Some(last)) => last.saturating_add(1),
                };
                if seq < expected {
                    out.damage.push(Damage {
                        line: line_no,
                        offset,
                        len: nl + 1,
                        kind: DamageKind::Repeated { seq },
                        detail: format!("record {seq} appears again after record {}", expected - 1),
                    });
                } else {
                    // Unreadable lines just before account for the same number of missing
                    // records: the common case of one damaged line is reported once.
                    if seq > expected && seq - expected != unreadable_run {
                        out.damage.push(Damage {
                            line: line_no,
                            offset,
                            len: 0,
                            kind: DamageKind::Missing {
                                from: expected,
                                to: seq - 1,
                            },
                            detail: if seq - expected == 1 {
                                format!("record {expected} is missing")
                            } else {
                                format!("records {expected} to {} are missing", seq - 1)
                            },
                        });
                    }
                    out.last_seq = Some(seq);
                    out.records.push(record);
                }
                unreadable_run = 0;
            }
            Err(detail) => {
                unreadable_run += 1;
                out.damage.push(Damage {
                    line: line_no,
                    offset,
                    len: nl + 1,
                    kind: DamageKind::Unreadable,
                    detail,
                });
            }
        }
        offset = next;
        out.valid_len = offset;
    }
    out
}

/// An open journal, appending.
pub struct Journal {
    path: PathBuf,
    /// `None` for a journal read but not opened for writing (a read-only store).
    file: Option<Arc<File>>,
    len: u64,
    /// Sequence number of the next record appended.
    next_seq: u64,
    policy: SyncPolicy,
    syncer: Option<Syncer>,
    generation: u64,
    buf: Vec<u8>,
}

impl Journal {
    /// Open an existing journal for appending at `valid_len` (dropping any torn tail);
    /// `last_seq` is the highest sequence number its valid part holds.
    pub fn open(
        path: &Path,
        valid_len: u64,
        generation: u64,
        last_seq: Option<u64>,
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
        let next_seq = last_seq.map_or(1, |s| s.saturating_add(1));
        let mut journal = Journal::wrap(path, file, valid_len, next_seq, generation, policy);
        if valid_len == 0 {
            journal.next_seq = 0;
            journal.append(&[Record::Begin { generation }])?;
        }
        Ok(journal)
    }

    /// A journal that was read (its valid part is `len` bytes, the last record `last_seq`) but
    /// is not open for writing: every write fails with [`crate::Error::ReadOnly`].
    pub fn detached(path: &Path, len: u64, generation: u64, last_seq: Option<u64>) -> Journal {
        Journal {
            path: path.to_path_buf(),
            file: None,
            len,
            next_seq: last_seq.map_or(0, |s| s.saturating_add(1)),
            policy: SyncPolicy::Never,
            syncer: None,
            generation,
            buf: Vec::new(),
        }
    }

    fn file(&self) -> Result<&Arc<File>> {
        self.file.as_ref().ok_or_else(|| crate::Error::ReadOnly {
            dir: self.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            reason: "opened without write access".into(),
        })
    }

    /// Atomically replace the journal with a fresh one for `generation`.
    pub fn reset(&mut self, generation: u64) -> Result<()> {
        self.file()?;
        let mut buf = Vec::new();
        encode_line(0, &Record::Begin { generation }, &mut buf);
        crate::files::write_atomic(&self.path, &buf, self.policy.syncs())?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .at(&self.path)?;
        let file = Arc::new(file);
        if let Some(s) = &self.syncer {
            s.replace(Arc::clone(&file));
        }
        self.file = Some(file);
        self.len = buf.len() as u64;
        self.next_seq = 1;
        self.generation = generation;
        Ok(())
    }

    fn wrap(
        path: &Path,
        file: File,
        len: u64,
        next_seq: u64,
        generation: u64,
        policy: SyncPolicy,
    ) -> Journal {
        let file = Arc::new(file);
        let syncer = match policy {
            SyncPolicy::Interval(every) => {
                Some(Syncer::start(Arc::clone(&file), every, "coral-wal-sync"))
            }
            _ => None,
        };
        Journal {
            path: path.to_path_buf(),
            file: Some(file),
            len,
            next_seq,
            policy,
            syncer,
            generation,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Append records in one write; when this returns they survive a killed process (and, with
    /// [`SyncPolicy::Always`], a power cut). When it fails, nothing was appended: a partial
    /// write, or a write whose fsync failed, is cut off again, so a failed call never leaves a
    /// record that a later open would replay.
    pub fn append(&mut self, records: &[Record]) -> Result<()> {
        let file = Arc::clone(self.file()?);
        self.buf.clear();
        let mut seq = self.next_seq;
        for r in records {
            encode_line(seq, r, &mut self.buf);
            seq += 1;
        }
        // Position explicitly: the file may have been truncated by recovery.
        use std::io::{Seek, SeekFrom};
        (&*file).seek(SeekFrom::Start(self.len)).at(&self.path)?;
        let written = (&*file)
            .write_all(&self.buf)
            .and_then(|()| match self.policy {
                SyncPolicy::Always => file.sync_data(),
                _ => Ok(()),
            });
        if let Err(e) = written {
            // Leave no record behind that the caller was told failed. If even the cut fails,
            // say so: the record may come back at the next open.
            if let Err(cut) = file.set_len(self.len) {
                return Err(crate::Error::Io {
                    path: self.path.clone(),
                    source: std::io::Error::new(
                        e.kind(),
                        format!(
                            "{e}; cutting the journal back to {} bytes also failed ({cut}), so \
                             the failed write may still be replayed",
                            self.len
                        ),
                    ),
                });
            }
            return Err(e).at(&self.path).map_err(Into::into);
        }
        self.len += self.buf.len() as u64;
        self.next_seq = seq;
        if let Some(s) = &self.syncer {
            s.mark();
        }
        Ok(())
    }

    /// Identity of the file this journal writes (a checkpoint elsewhere replaces the file).
    pub fn ino(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map_or(0, |m| m.ino())
    }

    /// Bytes from `offset` to the end of the file, as other processes left them.
    pub fn read_from(&self, offset: u64) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let mut file: &File = self.file()?;
        file.seek(SeekFrom::Start(offset)).at(&self.path)?;
        let mut out = Vec::new();
        file.read_to_end(&mut out).at(&self.path)?;
        Ok(out)
    }

    /// Take `len` as the journal's end: records up to it are applied, the last of them
    /// numbered `last_seq`. Anything after it (a torn line left by a process that died
    /// mid-append) is cut off; only call this holding the write lock, when no append can be in
    /// progress.
    pub fn set_end(&mut self, len: u64, last_seq: Option<u64>) -> Result<()> {
        let file = self.file()?;
        let on_disk = file.metadata().at(&self.path)?.len();
        if on_disk > len {
            file.set_len(len).at(&self.path)?;
        }
        self.len = len;
        self.note_seq(last_seq);
        Ok(())
    }

    /// Move the applied end forward without touching the file (records up to `len`, the last
    /// numbered `last_seq`, were read and applied outside the write lock).
    pub fn advance_to(&mut self, len: u64, last_seq: Option<u64>) {
        if len > self.len {
            self.len = len;
            self.note_seq(last_seq);
        }
    }

    fn note_seq(&mut self, last_seq: Option<u64>) {
        if let Some(s) = last_seq {
            self.next_seq = self.next_seq.max(s.saturating_add(1));
        }
    }

    /// The sequence number of the last record applied (`None` before the first).
    pub fn last_seq(&self) -> Option<u64> {
        self.next_seq.checked_sub(1)
    }

    /// fsync now (nothing to do when not open for writing).
    pub fn sync(&self) -> Result<()> {
        match &self.file {
            Some(f) => f.sync_data().at(&self.path).map_err(Into::into),
            None => Ok(()),
        }
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
    use std::time::Duration;

    #[test]
    fn closing_a_journal_at_once_does_not_wait_for_the_sync_interval() {
        // A short-lived process (one CLI command) closes its journal before the background
        // fsync thread first waits; the stop must not be lost, or the close waits an interval.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal.jsonl");
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for _ in 0..20 {
                let policy = SyncPolicy::Interval(Duration::from_secs(3600));
                let mut j = Journal::open(&path, 0, 1, None, policy).unwrap();
                j.append(&[Record::Delete { id: "x".into() }]).unwrap();
                drop(j);
                std::fs::remove_file(&path).unwrap();
            }
            let _ = done.send(());
        });
        assert!(
            finished.recv_timeout(Duration::from_secs(120)).is_ok(),
            "a closed journal kept its syncer waiting for the interval"
        );
    }

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
        for (seq, r) in records.iter().enumerate() {
            encode_line(seq as u64, r, &mut buf);
        }
        buf
    }

    /// Byte offsets where each line starts.
    fn line_starts(bytes: &[u8]) -> Vec<usize> {
        std::iter::once(0)
            .chain(
                bytes
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .filter(|&i| i < bytes.len())
            .collect()
    }

    #[test]
    fn records_round_trip() {
        let bytes = encode_all(&sample());
        let scan = scan(&bytes, None);
        assert_eq!(scan.records, sample());
        assert_eq!(scan.valid_len, bytes.len());
        assert_eq!(scan.last_seq, Some(sample().len() as u64 - 1));
        assert!(!scan.torn_tail && scan.damage.is_empty());
    }

    #[test]
    fn torn_tail_is_dropped_silently() {
        let bytes = encode_all(&sample());
        for cut in [bytes.len() - 1, bytes.len() - 20] {
            let scan = scan(&bytes[..cut], None);
            assert!(scan.torn_tail);
            assert!(scan.damage.is_empty());
            assert_eq!(scan.records.len(), sample().len() - 1);
        }
    }

    #[test]
    fn a_flipped_byte_in_the_middle_sets_aside_that_line_only() {
        let mut bytes = encode_all(&sample());
        let third_line = line_starts(&bytes)[2];
        bytes[third_line + 40] ^= 0x01;
        let scan = scan(&bytes, None);
        // Reported once: the unreadable line accounts for the one missing number after it.
        assert_eq!(scan.damage.len(), 1, "{:?}", scan.damage);
        let bad = &scan.damage[0];
        assert_eq!(bad.line, 3);
        assert_eq!(bad.offset, third_line);
        assert_eq!(bad.kind, DamageKind::Unreadable);
        assert!(bad.detail.contains("checksum") || bad.detail.contains("parse"));
        let mut want = sample();
        want.remove(2);
        assert_eq!(scan.records, want, "every other record is kept");
        assert_eq!(scan.valid_len, bytes.len());
    }

    #[test]
    fn a_deleted_line_is_a_gap_in_the_sequence() {
        let bytes = encode_all(&sample());
        let starts = line_starts(&bytes);
        let mut cut = bytes[..starts[3]].to_vec();
        cut.extend_from_slice(&bytes[starts[5]..]);
        let scan = scan(&cut, None);
        assert_eq!(
            scan.damage
                .iter()
                .map(|d| d.kind.clone())
                .collect::<Vec<_>>(),
            [DamageKind::Missing { from: 3, to: 4 }]
        );
        assert_eq!(scan.damage[0].len, 0, "nothing to set aside");
        assert!(scan.damage[0].detail.contains("records 3 to 4"));
        assert_eq!(scan.records.len(), sample().len() - 2);
        // Read from the middle, the gap before the first line is seen too.
        let tail = &bytes[starts[4]..];
        let from_middle = scan_tail(tail, Some(2));
        assert_eq!(
            from_middle.damage[0].kind,
            DamageKind::Missing { from: 3, to: 3 }
        );
        let clean = scan_tail(tail, Some(3));
        assert!(clean.damage.is_empty());
    }

    fn scan_tail(bytes: &[u8], after: Option<u64>) -> Scan {
        scan(bytes, after)
    }

    #[test]
    fn a_repeated_line_is_set_aside() {
        let bytes = encode_all(&sample());
        let starts = line_starts(&bytes);
        let mut doubled = bytes[..starts[3]].to_vec();
        doubled.extend_from_slice(&bytes[starts[2]..starts[3]]);
        doubled.extend_from_slice(&bytes[starts[3]..]);
        let scan = scan(&doubled, None);
        assert_eq!(scan.damage.len(), 1);
        assert_eq!(scan.damage[0].kind, DamageKind::Repeated { seq: 2 });
        assert_eq!(scan.records, sample());
    }

    #[test]
    fn lines_of_the_first_format_are_still_read() {
        // `{"crc":"<hex>","rec":<payload>}` with the checksum of the payload alone.
        let mut bytes = Vec::new();
        for r in sample() {
            let payload = serde_json::to_vec(&r).unwrap();
            let crc = crc32fast::hash(&payload);
            bytes.extend_from_slice(format!("{{\"crc\":\"{crc:08x}\",\"rec\":").as_bytes());
            bytes.extend_from_slice(&payload);
            bytes.extend_from_slice(b"}\n");
        }
        // A current line after them continues without a reported gap.
        encode_line(1, &sample()[1], &mut bytes);
        let scan = scan(&bytes, None);
        assert!(scan.damage.is_empty(), "{:?}", scan.damage);
        assert_eq!(scan.records.len(), sample().len() + 1);
        assert_eq!(scan.last_seq, Some(1));
    }

    proptest! {
        #[test]
        fn scanning_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let s = scan(&bytes, None);
            prop_assert!(s.valid_len <= bytes.len());
        }

        #[test]
        fn any_corruption_is_detected_or_harmless(pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
            let good = encode_all(&sample());
            let mut bytes = good.clone();
            let i = pos.index(bytes.len());
            bytes[i] ^= flip;
            let s = scan(&bytes, None);
            // Accepted records are always originals, in order; a shortfall is reported.
            let originals = sample();
            let mut at = 0;
            for got in &s.records {
                let found = originals[at..].iter().position(|w| w == got);
                prop_assert!(found.is_some(), "{got:?} is not an original");
                at += found.unwrap_or(0) + 1;
            }
            if s.records.len() < originals.len() {
                prop_assert!(!s.damage.is_empty() || s.torn_tail);
            }
        }
    }
}

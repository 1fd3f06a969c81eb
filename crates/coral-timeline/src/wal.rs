//! The `-wal` file: its path, and its frames read one by one to find damage SQLite would skip
//! without a word.
//!
//! SQLite replays a write-ahead log up to the first frame whose salts or cumulative checksum
//! do not match, and takes that frame for the torn end of an interrupted write: a few garbled
//! bytes in the middle of the log drop every transaction after them, and the open succeeds.
//! A torn end and damage look alike at the first bad frame; they differ after it. A write that
//! was interrupted leaves nothing intact after its last frame (SQLite writes frames in order),
//! while damage leaves later frames that still carry the log's salts and verify against their
//! predecessor's stored checksum. So the log is damaged when such an intact frame after the
//! first bad one ends a transaction (its commit field is set): a committed transaction SQLite
//! will not replay.
//!
//! The format is SQLite's ("WAL file format", <https://www.sqlite.org/fileformat.html>): a
//! 32-byte header (magic, version, page size, checkpoint sequence, two salts, a checksum of the
//! first 24 bytes), then frames of a 24-byte header (page number, commit size in pages or 0,
//! the two salts, the cumulative checksum) and one page. Fields are big-endian; the checksum
//! adds 32-bit words in the byte order the magic names.

use std::path::{Path, PathBuf};

/// The write-ahead log of `path`.
pub(crate) fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

/// The magic numbers: the low bit says the checksum words are big-endian.
const MAGIC_LE: u32 = 0x377f_0682;
const MAGIC_BE: u32 = 0x377f_0683;
const VERSION: u32 = 3_007_000;
const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;

/// Damage found in a log: what SQLite will skip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Damage {
    /// The log's salts: one value per generation of the log (a checkpoint that restarts the
    /// log picks new ones), so damage is recorded once per generation.
    pub salts: (u32, u32),
    /// What is wrong, where, and what is lost.
    pub detail: String,
}

fn be(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// SQLite's cumulative checksum of `data` (a multiple of 8 bytes), continuing from `s`.
fn checksum(data: &[u8], big_endian: bool, s: (u32, u32)) -> (u32, u32) {
    let (mut s0, mut s1) = s;
    for pair in data.chunks_exact(8) {
        let word = |w: &[u8]| {
            let w = [w[0], w[1], w[2], w[3]];
            if big_endian {
                u32::from_be_bytes(w)
            } else {
                u32::from_le_bytes(w)
            }
        };
        s0 = s0.wrapping_add(word(&pair[..4])).wrapping_add(s1);
        s1 = s1.wrapping_add(word(&pair[4..])).wrapping_add(s0);
    }
    (s0, s1)
}

/// One complete frame of the log.
struct Frame<'a> {
    bytes: &'a [u8],
}

impl Frame<'_> {
    fn page_number(&self) -> u32 {
        be(self.bytes, 0)
    }

    fn commit(&self) -> u32 {
        be(self.bytes, 4)
    }

    fn salts(&self) -> (u32, u32) {
        (be(self.bytes, 8), be(self.bytes, 12))
    }

    fn stored(&self) -> (u32, u32) {
        (be(self.bytes, 16), be(self.bytes, 20))
    }

    /// Whether SQLite accepts this frame after a predecessor whose checksum is `previous`.
    fn valid(&self, salts: (u32, u32), big_endian: bool, previous: (u32, u32)) -> bool {
        if self.salts() != salts || self.page_number() == 0 {
            return false;
        }
        let s = checksum(&self.bytes[..8], big_endian, previous);
        checksum(&self.bytes[FRAME_HEADER..], big_endian, s) == self.stored()
    }
}

/// The damage in the log `bytes`, if committed transactions would be skipped. An empty or
/// absent log, a torn last write, and frames left over from an earlier generation are not
/// damage.
pub(crate) fn scan(bytes: &[u8]) -> Option<Damage> {
    if bytes.len() < HEADER {
        // Nothing SQLite could replay: a log is never written shorter than its header.
        return None;
    }
    let magic = be(bytes, 0);
    let page_size = match be(bytes, 8) {
        1 => 65_536,
        n => n as usize,
    };
    let big_endian = magic == MAGIC_BE;
    let header_ok = (magic == MAGIC_LE || magic == MAGIC_BE)
        && be(bytes, 4) == VERSION
        && page_size.is_power_of_two()
        && (512..=65_536).contains(&page_size)
        && checksum(&bytes[..24], big_endian, (0, 0)) == (be(bytes, 24), be(bytes, 28));
    let salts = (be(bytes, 16), be(bytes, 20));
    if !header_ok {
        // SQLite ignores the whole log. Anything past the header is lost.
        if bytes.len() > HEADER + FRAME_HEADER {
            return Some(Damage {
                salts,
                detail: format!(
                    "its 32-byte header is damaged (bad magic, version, page size or checksum), \
                     so SQLite ignores all {} bytes of it",
                    bytes.len()
                ),
            });
        }
        return None;
    }
    let frame_size = FRAME_HEADER + page_size;
    let frames: Vec<Frame<'_>> = bytes[HEADER..]
        .chunks_exact(frame_size)
        .map(|bytes| Frame { bytes })
        .collect();
    let header_sum = (be(bytes, 24), be(bytes, 28));
    let mut previous = header_sum;
    let mut first_bad = None;
    for (i, frame) in frames.iter().enumerate() {
        if !frame.valid(salts, big_endian, previous) {
            first_bad = Some(i);
            break;
        }
        previous = frame.stored();
    }
    let bad = first_bad?;
    // Intact frames after the bad one: this generation's salts, and a checksum that verifies
    // from the stored checksum of the frame before it.
    let mut intact = 0;
    let mut commits = 0;
    for j in bad + 1..frames.len() {
        let before = frames[j - 1].stored();
        if frames[j].valid(salts, big_endian, before) {
            intact += 1;
            if frames[j].commit() != 0 {
                commits += 1;
            }
        }
    }
    if commits == 0 {
        return None;
    }
    // The damaged frame may end a transaction itself (when its commit field is readable).
    if frames[bad].salts() == salts && frames[bad].commit() != 0 {
        commits += 1;
    }
    let why = if frames[bad].salts() != salts {
        "its salts do not match the log's"
    } else if frames[bad].page_number() == 0 {
        "its page number is 0"
    } else {
        "it fails its checksum"
    };
    Some(Damage {
        salts,
        detail: format!(
            "frame {} (byte {}) is damaged ({why}); SQLite replays nothing from there on, so \
             {commits} committed transaction(s) are not in the timeline ({intact} intact \
             frame(s) follow the damage)",
            bad + 1,
            HEADER + bad * frame_size
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALTS: (u32, u32) = (0x1234_5678, 0x9abc_def0);

    /// A log of `pages` frames of 512 bytes, every `commit_every`-th a commit, as SQLite
    /// writes it.
    fn log(pages: usize, commit_every: usize, big_endian: bool) -> Vec<u8> {
        log_with(SALTS, pages, commit_every, big_endian)
    }

    fn log_with(salts: (u32, u32), pages: usize, commit_every: usize, big: bool) -> Vec<u8> {
        let page_size = 512usize;
        let mut out = Vec::new();
        let magic = if big { MAGIC_BE } else { MAGIC_LE };
        for v in [magic, VERSION, page_size as u32, 0, salts.0, salts.1] {
            out.extend(v.to_be_bytes());
        }
        let mut s = checksum(&out[..24], big, (0, 0));
        out.extend(s.0.to_be_bytes());
        out.extend(s.1.to_be_bytes());
        for i in 0..pages {
            let commit = if (i + 1) % commit_every == 0 {
                i as u32 + 1
            } else {
                0
            };
            let mut header = Vec::new();
            for v in [i as u32 + 1, commit, salts.0, salts.1] {
                header.extend(v.to_be_bytes());
            }
            let page: Vec<u8> = (0..page_size).map(|b| (b * 7 + i) as u8).collect();
            s = checksum(&header[..8], big, s);
            s = checksum(&page, big, s);
            header.extend(s.0.to_be_bytes());
            header.extend(s.1.to_be_bytes());
            out.extend(header);
            out.extend(page);
        }
        out
    }

    fn frame_at(i: usize) -> usize {
        HEADER + i * (FRAME_HEADER + 512)
    }

    #[test]
    fn an_intact_log_or_a_torn_end_is_no_damage() {
        for big in [false, true] {
            let good = log(12, 3, big);
            assert_eq!(scan(&good), None);
            // Cut inside the last frame, or garble the last frame: a torn write.
            assert_eq!(scan(&good[..good.len() - 100]), None);
            let mut torn = good.clone();
            let last = frame_at(11) + FRAME_HEADER + 10;
            torn[last] ^= 0xff;
            assert_eq!(scan(&torn), None);
            // A garbled frame in a trailing transaction that never committed.
            let mut open = log(13, 3, big);
            open[frame_at(12) + 40] ^= 1;
            assert_eq!(scan(&open), None);
        }
        assert_eq!(scan(&[]), None);
        assert_eq!(scan(&[1, 2, 3]), None);
    }

    #[test]
    fn a_garbled_frame_before_committed_ones_is_damage() {
        for big in [false, true] {
            for (frame, offset) in [(1, FRAME_HEADER + 3), (4, 2), (4, 9), (7, 20)] {
                let mut bad = log(12, 3, big);
                bad[frame_at(frame) + offset] ^= 0x5a;
                let damage = scan(&bad).unwrap_or_else(|| panic!("frame {frame} byte {offset}"));
                assert!(
                    damage.detail.starts_with(&format!("frame {} ", frame + 1)),
                    "{}",
                    damage.detail
                );
                assert_eq!(damage.salts, SALTS);
            }
        }
        let mut header = log(6, 3, false);
        header[17] ^= 1;
        assert!(scan(&header).unwrap().detail.contains("header is damaged"));
    }

    #[test]
    fn frames_of_an_earlier_generation_are_not_damage() {
        // A restarted log: new salts, four new frames over the old ones, old frames after.
        let old = log(12, 3, false);
        let mut restarted = log_with((SALTS.0 + 1, 77), 4, 2, false);
        restarted.extend_from_slice(&old[frame_at(4)..]);
        assert_eq!(restarted.len(), old.len());
        assert_eq!(scan(&restarted), None);
    }
}

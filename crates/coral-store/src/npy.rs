//! Reading and writing NumPy `.npy` v1.0 files of little-endian float32 matrices.
//!
//! Only what the vector store needs: a 2-D `<f4` matrix in C order. The reader also accepts
//! `<f8` (converted), Fortran order (transposed) and the shape `(0,)` that NumPy writes for an
//! empty list, and rejects everything else with a precise message.

use std::path::Path;

use crate::error::{Error, Result};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A row-major float32 matrix.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matrix {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// `rows * cols` values, row-major.
    pub data: Vec<f32>,
}

impl Matrix {
    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
}

fn bad(path: &Path, detail: impl Into<String>) -> Error {
    Error::Corrupted {
        path: path.to_path_buf(),
        line: 0,
        detail: detail.into(),
    }
}

/// The `.npy` header of a `rows` x `cols` float32 matrix (version 1.0, `<f4`, C order, padded
/// so that the data starts at a multiple of 64 bytes).
pub fn header(rows: usize, cols: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    // magic(6) + version(2) + header_len(2) + dict + padding + '\n' is a multiple of 64.
    let unpadded = 10 + dict.len() + 1;
    let padding = (64 - unpadded % 64) % 64;
    let mut out = Vec::with_capacity(unpadded + padding);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    let header_len = (dict.len() + padding + 1) as u16;
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + padding, b' ');
    out.push(b'\n');
    out
}

/// Append one row's little-endian bytes.
fn push_row(out: &mut Vec<u8>, row: &[f32]) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(row));
    } else {
        for v in row {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Encode a matrix as `.npy` bytes (see [`header`]).
pub fn encode(rows: usize, cols: usize, data: &[f32]) -> Vec<u8> {
    assert_eq!(rows * cols, data.len(), "matrix shape and data disagree");
    let mut out = header(rows, cols);
    out.reserve(data.len() * 4);
    push_row(&mut out, data);
    out
}

/// Write the `.npy` bytes of `rows` rows of `cols` values, given one slice a row, to `w`
/// without holding the whole file in memory (at a million 384-dim rows the file is 1.5 GB; a
/// checkpoint that built it in one buffer doubled the process's vector memory). The bytes are
/// the same as [`encode`]'s. Fails with `InvalidData` when the rows are not `rows` slices of
/// `cols` values.
pub fn write_rows<R: AsRef<[f32]>>(
    w: &mut dyn std::io::Write,
    rows: usize,
    cols: usize,
    data: impl Iterator<Item = R>,
) -> std::io::Result<()> {
    let bad_shape = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "matrix shape and rows disagree",
        )
    };
    w.write_all(&header(rows, cols))?;
    let mut buf = Vec::with_capacity(1 << 20);
    let mut written = 0usize;
    for row in data {
        let row = row.as_ref();
        if row.len() != cols {
            return Err(bad_shape());
        }
        push_row(&mut buf, row);
        written += 1;
        if buf.len() >= 1 << 20 {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    if written != rows {
        return Err(bad_shape());
    }
    w.write_all(&buf)
}

/// What a header says: rows, columns, bytes per value, Fortran order, and where data starts.
struct Header {
    rows: usize,
    cols: usize,
    width: usize,
    fortran: bool,
    data_start: usize,
}

/// The length of the header prefix (magic, version, header length, header) that `bytes`
/// (at least the first 12 bytes of a file) announce, or an error.
fn header_end(bytes: &[u8], path: &Path) -> Result<usize> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad(path, "not a .npy file (bad magic bytes)"));
    }
    match bytes[6] {
        1 => Ok(10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad(path, "truncated .npy header"));
            }
            Ok(12 + u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize)
        }
        v => Err(bad(path, format!("unsupported .npy version {v}"))),
    }
}

/// Parse the header at the start of `bytes` (which hold at least the whole header).
fn parse_header(bytes: &[u8], path: &Path) -> Result<Header> {
    let data_start = header_end(bytes, path)?;
    let major = bytes[6];
    let header_start = if major == 1 { 10 } else { 12 };
    if data_start > bytes.len() {
        return Err(bad(path, "truncated .npy header"));
    }
    let header = std::str::from_utf8(&bytes[header_start..data_start])
        .map_err(|_| bad(path, format!(".npy v{major} header is not text")))?;
    let descr = dict_value(header, "descr").ok_or_else(|| bad(path, "header has no 'descr'"))?;
    let fortran = dict_value(header, "fortran_order")
        .ok_or_else(|| bad(path, "header has no 'fortran_order'"))?;
    let shape = dict_value(header, "shape").ok_or_else(|| bad(path, "header has no 'shape'"))?;
    let width = match descr.trim_matches(|c| c == '\'' || c == '"') {
        "<f4" => 4,
        "<f8" => 8,
        other => {
            return Err(bad(
                path,
                format!("dtype {other} is not supported (expected little-endian float32 '<f4')"),
            ));
        }
    };
    let fortran = match fortran {
        "False" => false,
        "True" => true,
        other => return Err(bad(path, format!("fortran_order {other} is not a boolean"))),
    };
    let dims =
        parse_shape(shape).ok_or_else(|| bad(path, format!("shape {shape} is not valid")))?;
    let (rows, cols) = match dims.as_slice() {
        [0] => (0, 0),
        [r, c] => (*r, *c),
        other => {
            return Err(bad(
                path,
                format!("shape {other:?} is not a 2-D matrix (rows, dim)"),
            ));
        }
    };
    rows.checked_mul(cols)
        .and_then(|c| c.checked_mul(width))
        .ok_or_else(|| bad(path, format!("shape ({rows}, {cols}) is too large")))?;
    Ok(Header {
        rows,
        cols,
        width,
        fortran,
        data_start,
    })
}

fn check_length(h: &Header, payload: usize, path: &Path) -> Result<()> {
    let expected = h.rows * h.cols * h.width;
    if payload != expected {
        return Err(bad(
            path,
            format!(
                "shape ({}, {}) needs {expected} data bytes but the file has {payload}",
                h.rows, h.cols
            ),
        ));
    }
    Ok(())
}

/// Decode `.npy` bytes; `path` only names the file in errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<Matrix> {
    let h = parse_header(bytes, path)?;
    let payload = &bytes[h.data_start..];
    check_length(&h, payload.len(), path)?;
    let (rows, cols, width, fortran) = (h.rows, h.cols, h.width, h.fortran);
    let count = rows * cols;
    let mut data: Vec<f32> = if width == 4 {
        payload
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    } else {
        payload
            .chunks_exact(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                f64::from_le_bytes(b) as f32
            })
            .collect()
    };
    if fortran && rows > 1 && cols > 1 {
        let mut c_order = vec![0f32; count];
        for (j, column) in data.chunks_exact(rows).enumerate() {
            for (i, v) in column.iter().enumerate() {
                c_order[i * cols + j] = *v;
            }
        }
        data = c_order;
    }
    Ok(Matrix { rows, cols, data })
}

/// Read and decode a `.npy` file. A C-order `<f4` file (what Coral and NumPy write) is read
/// straight into the matrix, so reading holds the vectors once, not the file's bytes and the
/// vectors (3 GB instead of 1.5 at a million 384-dim rows); other layouts go through
/// [`decode`].
pub fn read(path: &Path) -> Result<Matrix> {
    let mut rows = Rows::open(path)?;
    let mut data = Vec::new();
    rows.read(&mut data, rows.rows)?;
    Ok(Matrix {
        rows: rows.rows,
        cols: rows.cols,
        data,
    })
}

/// A `.npy` file's rows read a chunk at a time, so a caller can keep them in another form
/// without ever holding the whole matrix (the pool's sparse rows, `vector_rows.rs`).
pub struct Rows {
    /// Rows in the file.
    pub rows: usize,
    /// Values a row.
    pub cols: usize,
    path: std::path::PathBuf,
    source: Source,
    /// Rows handed out so far.
    done: usize,
}

enum Source {
    /// A C-order `<f4` file positioned at the next row.
    Plain(std::io::BufReader<std::fs::File>),
    /// Any other layout, decoded whole.
    Decoded(Vec<f32>),
}

impl Rows {
    /// Opens `path` and checks its header and length.
    pub fn open(path: &Path) -> Result<Rows> {
        use std::io::Read;
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len() as usize;
        let mut head = vec![0u8; 12.min(len)];
        file.read_exact(&mut head).map_err(io)?;
        let end = header_end(&head, path)?;
        if end > head.len() {
            let at = head.len();
            head.resize(end.min(len), 0);
            file.read_exact(&mut head[at..]).map_err(io)?;
        }
        let h = parse_header(&head, path)?;
        let plain = h.width == 4 && !(h.fortran && h.rows > 1 && h.cols > 1);
        if !plain || cfg!(target_endian = "big") || head.len() > h.data_start {
            // Another layout, or a header shorter than the 12 bytes read first: decode whole.
            let mut bytes = head;
            file.read_to_end(&mut bytes).map_err(io)?;
            let m = decode(&bytes, path)?;
            return Ok(Rows {
                rows: m.rows,
                cols: m.cols,
                path: path.to_path_buf(),
                source: Source::Decoded(m.data),
                done: 0,
            });
        }
        check_length(&h, len - h.data_start, path)?;
        Ok(Rows {
            rows: h.rows,
            cols: h.cols,
            path: path.to_path_buf(),
            source: Source::Plain(std::io::BufReader::with_capacity(1 << 20, file)),
            done: 0,
        })
    }

    /// Appends up to `max` more rows to `out`; returns how many (0 at the end).
    pub fn read(&mut self, out: &mut Vec<f32>, max: usize) -> Result<usize> {
        use std::io::Read;
        let n = max.min(self.rows - self.done);
        let values = n * self.cols;
        let at = out.len();
        match &mut self.source {
            Source::Plain(file) => {
                out.resize(at + values, 0.0);
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out[at..]);
                file.read_exact(bytes).map_err(|source| Error::Io {
                    path: self.path.clone(),
                    source,
                })?;
            }
            Source::Decoded(data) => {
                let start = self.done * self.cols;
                out.extend_from_slice(&data[start..start + values]);
            }
        }
        self.done += n;
        Ok(n)
    }
}

/// The text of `key`'s value in a Python dict literal such as NumPy's header.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let quoted_single = format!("'{key}'");
    let quoted_double = format!("\"{key}\"");
    let at = header
        .find(&quoted_single)
        .map(|i| i + quoted_single.len())
        .or_else(|| header.find(&quoted_double).map(|i| i + quoted_double.len()))?;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(rest[..end].trim())
}

fn parse_shape(shape: &str) -> Option<Vec<usize>> {
    let inner = shape.strip_prefix('(')?.strip_suffix(')')?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p() -> &'static Path {
        Path::new("v.npy")
    }

    #[test]
    fn header_is_numpy_shaped_and_aligned() {
        let bytes = encode(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(header.ends_with('\n'));
        let m = decode(&bytes, p()).unwrap();
        assert_eq!(m.row(1), &[4.0, 5.0, 6.0]);
    }

    fn replace(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        let at = bytes
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .expect("pattern present");
        let mut out = bytes[..at].to_vec();
        out.extend_from_slice(to.as_bytes());
        out.extend_from_slice(&bytes[at + from.len()..]);
        out
    }

    #[test]
    fn numpy_variants_decode() {
        // An empty list saved by NumPy: shape (0,).
        let empty = replace(&encode(0, 0, &[]), "(0, 0)", "(0,)  ");
        assert_eq!(decode(&empty, p()).unwrap().rows, 0);
        // Fortran order is transposed back.
        let f = replace(&encode(2, 2, &[1.0, 3.0, 2.0, 4.0]), "False", "True ");
        assert_eq!(decode(&f, p()).unwrap().data, vec![1.0, 2.0, 3.0, 4.0]);
        // float64 is converted.
        let mut f8 = replace(&encode(1, 1, &[0.0]), "<f4", "<f8");
        f8.truncate(f8.len() - 4);
        f8.extend_from_slice(&2.5f64.to_le_bytes());
        assert_eq!(decode(&f8, p()).unwrap().data, vec![2.5]);
    }

    #[test]
    fn damage_is_reported_not_panicked() {
        let good = encode(2, 2, &[1.0, 2.0, 3.0, 4.0]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"nope".to_vec(), "magic"),
            (good[..good.len() - 3].to_vec(), "data bytes"),
            (good[..20].to_vec(), "truncated"),
            (replace(&good, "<f4", ">f4"), "dtype"),
            (replace(&good, "(2, 2)", "(2,2,1)"), "2-D"),
            (replace(&good, "False", "Maybe"), "boolean"),
        ];
        for (bytes, needle) in cases {
            let err = decode(&bytes, p()).unwrap_err().to_string();
            assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        }
    }

    #[test]
    fn streamed_writes_and_chunked_reads_match_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.npy");
        let (rows, cols) = (1000, 7);
        let data: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.5 - 3.0).collect();
        let mut streamed = Vec::new();
        write_rows(&mut streamed, rows, cols, data.chunks_exact(cols)).unwrap();
        assert_eq!(streamed, encode(rows, cols, &data));
        std::fs::write(&path, &streamed).unwrap();
        assert_eq!(read(&path).unwrap().data, data);
        let mut chunks = Rows::open(&path).unwrap();
        let mut got = Vec::new();
        while chunks.read(&mut got, 64).unwrap() > 0 {}
        assert_eq!(got, data);
        // A wrong row count or width is refused, not written short.
        assert!(write_rows(&mut Vec::new(), rows + 1, cols, data.chunks_exact(cols)).is_err());
        assert!(write_rows(&mut Vec::new(), rows, cols, data.chunks_exact(cols + 1)).is_err());
        // A truncated or padded file is refused before anything is allocated for it.
        std::fs::write(&path, &streamed[..streamed.len() - 4]).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("data bytes"), "{err}");
        std::fs::write(&path, &streamed[..30]).unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("truncated"));
        // Another layout goes through the decoder.
        let f = replace(&encode(2, 2, &[1.0, 3.0, 2.0, 4.0]), "False", "True ");
        std::fs::write(&path, &f).unwrap();
        assert_eq!(read(&path).unwrap().data, vec![1.0, 2.0, 3.0, 4.0]);
    }

    proptest! {
        #[test]
        fn round_trip(rows in 0usize..6, cols in 1usize..9, seed in any::<u32>()) {
            let data: Vec<f32> = (0..rows * cols).map(|i| (i as f32 + seed as f32) * 0.25).collect();
            let m = decode(&encode(rows, cols, &data), p()).unwrap();
            prop_assert_eq!(m.rows, rows);
            prop_assert_eq!(m.data, data);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes, p());
            let mut with_magic = encode(1, 1, &[1.0]);
            with_magic.truncate(10);
            with_magic.extend_from_slice(&bytes);
            let _ = decode(&with_magic, p());
        }
    }
}

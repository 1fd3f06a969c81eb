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

/// Encode a matrix as `.npy` bytes (version 1.0, `<f4`, C order, header padded to 64 bytes).
pub fn encode(rows: usize, cols: usize, data: &[f32]) -> Vec<u8> {
    assert_eq!(rows * cols, data.len(), "matrix shape and data disagree");
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    // magic(6) + version(2) + header_len(2) + dict + padding + '\n' is a multiple of 64.
    let unpadded = 10 + dict.len() + 1;
    let padding = (64 - unpadded % 64) % 64;
    let mut out = Vec::with_capacity(unpadded + padding + data.len() * 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    let header_len = (dict.len() + padding + 1) as u16;
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + padding, b' ');
    out.push(b'\n');
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(data));
    } else {
        for v in data {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Decode `.npy` bytes; `path` only names the file in errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<Matrix> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad(path, "not a .npy file (bad magic bytes)"));
    }
    let (major, header_start, header_len): (u8, usize, usize) = match bytes[6] {
        1 => (1, 10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad(path, "truncated .npy header"));
            }
            let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
            (bytes[6], 12, len)
        }
        v => return Err(bad(path, format!("unsupported .npy version {v}"))),
    };
    let data_start = header_start
        .checked_add(header_len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| bad(path, "truncated .npy header"))?;
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
    let count = rows
        .checked_mul(cols)
        .ok_or_else(|| bad(path, format!("shape ({rows}, {cols}) is too large")))?;
    let payload = &bytes[data_start..];
    let expected = count.saturating_mul(width);
    if payload.len() != expected {
        return Err(bad(
            path,
            format!(
                "shape ({rows}, {cols}) needs {expected} data bytes but the file has {}",
                payload.len()
            ),
        ));
    }
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

/// Read and decode a `.npy` file.
pub fn read(path: &Path) -> Result<Matrix> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode(&bytes, path)
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

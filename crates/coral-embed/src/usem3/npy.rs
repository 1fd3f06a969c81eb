//! Reading numpy `.npy` arrays (format versions 1 to 3): the header's dtype and shape, then
//! the data as little-endian `f32` or raw bytes.

/// An array's dtype, shape and where its data starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// numpy's type string, e.g. `<f4`, `|u1`.
    pub descr: String,
    /// Dimensions; empty for a scalar.
    pub shape: Vec<usize>,
    /// Offset of the data in the file.
    pub data_offset: usize,
}

impl Header {
    /// Number of elements, `None` when the shape's product overflows.
    pub fn count(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }
}

/// Parse the header of the `.npy` bytes `data`.
pub(crate) fn header(data: &[u8]) -> Result<Header, String> {
    if data.len() < 10 || &data[..6] != b"\x93NUMPY" {
        return Err("not an .npy array (no \\x93NUMPY magic)".into());
    }
    let (len, start) = match data[6] {
        1 => (usize::from(u16::from_le_bytes([data[8], data[9]])), 10),
        2 | 3 if data.len() >= 12 => (
            u32::from_le_bytes([data[8], data[9], data[10], data[11]]) as usize,
            12,
        ),
        v => return Err(format!(".npy format version {v} is not supported")),
    };
    let text = data
        .get(start..start + len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or("the .npy header is truncated or not text")?;
    let value_of = |key: &str| -> Result<&str, String> {
        let at = text
            .find(&format!("'{key}'"))
            .ok_or_else(|| format!("the .npy header has no {key}: {text}"))?;
        let rest = text[at + key.len() + 2..].trim_start();
        Ok(rest.strip_prefix(':').unwrap_or(rest).trim_start())
    };
    let descr = value_of("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or_else(|| format!("the .npy header's descr is not a string: {text}"))?
        .to_string();
    if !value_of("fortran_order")?.starts_with("False") {
        return Err("the array is in Fortran order; only C order is supported".into());
    }
    let shape = value_of("shape")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| format!("the .npy header's shape is not a tuple: {text}"))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("bad dimension {s:?} in {text}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Header {
        descr,
        shape,
        data_offset: start + len,
    })
}

/// The `f32` values of an `<f4` array, or of a `<f8` one converted (USE stores its epsilon as
/// a float64 scalar).
pub(crate) fn f32_values(data: &[u8]) -> Result<(Vec<usize>, Vec<f32>), String> {
    let h = header(data)?;
    let body = &data[h.data_offset..];
    let width = match h.descr.as_str() {
        "<f4" => 4,
        "<f8" => 8,
        other => return Err(format!("dtype {other} where float32 was expected")),
    };
    if h.count().and_then(|n| n.checked_mul(width)) != Some(body.len()) {
        return Err(format!(
            "{} data bytes for shape {:?} of {}",
            body.len(),
            h.shape,
            h.descr
        ));
    }
    let values = if width == 4 {
        body.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    } else {
        body.chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32)
            .collect()
    };
    Ok((h.shape, values))
}

/// The bytes of a `|u1` (uint8) array, moved out of `data` without a copy of the data.
pub(crate) fn u8_values(mut data: Vec<u8>) -> Result<(Vec<usize>, Vec<u8>), String> {
    let h = header(&data)?;
    if h.descr != "|u1" {
        return Err(format!("dtype {} where uint8 was expected", h.descr));
    }
    if Some(data.len() - h.data_offset) != h.count() {
        return Err(format!(
            "{} data bytes for shape {:?} of uint8",
            data.len() - h.data_offset,
            h.shape
        ));
    }
    data.drain(..h.data_offset);
    data.shrink_to_fit();
    Ok((h.shape, data))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A version 1.0 `.npy` file.
    pub(crate) fn npy(descr: &str, shape: &[usize], body: &[u8]) -> Vec<u8> {
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        let shape = match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        let mut text =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + text.len() + 1) % 64 != 0 {
            text.push(' ');
        }
        text.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(text.len() as u16).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn reads_floats_bytes_and_scalars() {
        let body: Vec<u8> = [1.0f32, -2.5, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let (shape, values) = f32_values(&npy("<f4", &[2, 3], &body)).unwrap();
        assert_eq!(shape, [2, 3]);
        assert_eq!(values, [1.0, -2.5, 3.0, 4.0, 5.0, 6.0]);
        let (shape, values) = f32_values(&npy("<f8", &[], &1e-12f64.to_le_bytes())).unwrap();
        assert!(shape.is_empty());
        assert_eq!(values, [1e-12f32]);
        let (shape, bytes) = u8_values(npy("|u1", &[3], &[9, 8, 7])).unwrap();
        assert_eq!((shape, bytes), (vec![3], vec![9, 8, 7]));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(mut bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = header(&bytes);
            let _ = f32_values(&bytes);
            // The same after a valid magic and version, so the header text is reached.
            let mut framed = b"\x93NUMPY\x01\x00".to_vec();
            framed.append(&mut bytes);
            let _ = f32_values(&framed);
            let _ = u8_values(framed);
        }
    }

    #[test]
    fn a_shape_whose_product_overflows_is_an_error() {
        let huge = npy("<f4", &[usize::MAX / 2, 3], &[0; 8]);
        assert!(f32_values(&huge).is_err());
        assert!(u8_values(npy("|u1", &[usize::MAX, 2], &[0; 2])).is_err());
    }

    #[test]
    fn refuses_wrong_types_and_sizes() {
        assert!(
            f32_values(&npy("<i4", &[1], &[0; 4]))
                .unwrap_err()
                .contains("<i4")
        );
        assert!(
            f32_values(&npy("<f4", &[2], &[0; 4]))
                .unwrap_err()
                .contains("4 data bytes")
        );
        assert!(u8_values(npy("<f4", &[1], &[0; 4])).is_err());
        assert!(header(b"PK\x03\x04 not npy").unwrap_err().contains("magic"));
        let fortran = npy("<f4", &[1], &[0; 4]);
        let text = String::from_utf8_lossy(&fortran).replace("False", "True ");
        assert!(header(text.as_bytes()).is_err());
    }
}

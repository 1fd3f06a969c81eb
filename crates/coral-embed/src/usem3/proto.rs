//! The few parts of the protobuf wire format that reading a sentencepiece `.model` needs.
//!
//! A message is a sequence of `(tag, value)` records; the tag is a varint holding the field
//! number and the wire type. [`Fields`] walks one message and hands out each field's number and
//! value without interpreting them; nested messages are parsed by walking their bytes again.

/// One field's value, as the wire type carries it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    /// Wire type 0: ints, bools and enums.
    Varint(u64),
    /// Wire type 1: 8 little-endian bytes.
    Fixed64(u64),
    /// Wire type 2: strings, bytes and nested messages.
    Bytes(&'a [u8]),
    /// Wire type 5: 4 little-endian bytes (`float`).
    Fixed32(u32),
}

/// Iterator over the fields of one message. Yields `Err` (and then stops) on bytes that are
/// not a valid message: a truncated varint or value, or a wire type this format does not have.
pub(crate) struct Fields<'a> {
    data: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Fields<'a> {
    /// The fields of the message `data`.
    pub(crate) fn new(data: &'a [u8]) -> Fields<'a> {
        Fields {
            data,
            pos: 0,
            failed: false,
        }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .data
                .get(self.pos)
                .ok_or_else(|| format!("a varint runs past the end at byte {}", self.pos))?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!(
            "a varint longer than 10 bytes ends at byte {}",
            self.pos
        ))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.data.len())
            .ok_or_else(|| {
                format!(
                    "a {n}-byte value at byte {} runs past the end ({} bytes)",
                    self.pos,
                    self.data.len()
                )
            })?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn field(&mut self) -> Result<(u32, Value<'a>), String> {
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3)
            .map_err(|_| format!("field number {} is too large", tag >> 3))?;
        let value = match tag & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| "8 bytes")?))
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "a length overflows")?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                let b = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().map_err(|_| "4 bytes")?))
            }
            other => {
                return Err(format!(
                    "wire type {other} (field {number}) is not protobuf"
                ));
            }
        };
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_wire_type_and_stops_at_damage() {
        // field 1 varint 300, field 2 bytes "hi", field 3 fixed32 1.5f, field 4 fixed64 7
        let mut msg = vec![0x08, 0xac, 0x02, 0x12, 2, b'h', b'i', 0x1d];
        msg.extend_from_slice(&1.5f32.to_le_bytes());
        msg.push(0x21);
        msg.extend_from_slice(&7u64.to_le_bytes());
        let fields: Vec<_> = Fields::new(&msg).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            fields,
            [
                (1, Value::Varint(300)),
                (2, Value::Bytes(b"hi")),
                (3, Value::Fixed32(1.5f32.to_bits())),
                (4, Value::Fixed64(7)),
            ]
        );

        let truncated = [0x12, 5, b'a'];
        let mut it = Fields::new(&truncated);
        assert!(
            it.next()
                .unwrap()
                .unwrap_err()
                .contains("runs past the end")
        );
        assert!(it.next().is_none());
        assert!(
            Fields::new(&[0x0b])
                .next()
                .unwrap()
                .unwrap_err()
                .contains("wire type 3")
        );
        assert!(Fields::new(&[0x08, 0x80]).next().unwrap().is_err());
    }
}

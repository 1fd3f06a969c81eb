//! The journal line frame both journals write (`{"crc":"<8 hex>"` + a body + `}` and a newline,
//! the CRC32 over the body's checked part) and the split of journal bytes into complete lines.
//!
//! The memory journal (`coral_wal.jsonl`, docs/storage.md) and the thread journals
//! (docs/threads.md) put different bodies in the frame: `","seq":N,"rec":<payload>` with the
//! number and payload checked, and `","rec":<payload>` with the payload checked. The frame
//! calls the bytes before the checked part the *middle*; the checksum covers everything after
//! it up to the closing brace, exactly as written, so a reader verifies a line without
//! serialising anything again.
//!
//! ```
//! use coral_base::frame;
//!
//! let mut buf = Vec::new();
//! let open = frame::begin(&mut buf, b"\",\"rec\":");
//! buf.extend_from_slice(br#"{"op":"begin"}"#);
//! frame::end(&mut buf, open);
//! assert_eq!(buf, b"{\"crc\":\"aaad2fab\",\"rec\":{\"op\":\"begin\"}}\n");
//!
//! let mut lines = frame::lines(&buf);
//! let line = lines.next().unwrap();
//! assert_eq!(frame::checked(line.bytes, b"\",\"rec\":"), Ok(&br#"{"op":"begin"}"#[..]));
//! assert!(lines.next().is_none() && !lines.torn_tail());
//! ```

/// What every frame starts with.
pub const PREFIX: &[u8] = b"{\"crc\":\"";

/// Bytes of `PREFIX` plus the 8 hex digits of the checksum.
const HEAD: usize = PREFIX.len() + 8;

/// A line being written by [`begin`]: where it starts in the buffer and where its checked
/// part starts.
#[derive(Clone, Copy, Debug)]
#[must_use = "a line is only complete once `end` writes its checksum"]
pub struct Open {
    start: usize,
    checked: usize,
}

/// Start a line at the end of `buf`: the prefix, a placeholder checksum and `middle`. Write
/// the checked part after it, then call [`end`].
pub fn begin(buf: &mut Vec<u8>, middle: &[u8]) -> Open {
    let start = buf.len();
    buf.extend_from_slice(PREFIX);
    buf.extend_from_slice(b"00000000");
    buf.extend_from_slice(middle);
    Open {
        start,
        checked: buf.len(),
    }
}

/// Finish the line `open` started: the checksum of everything written since the middle, as 8
/// lower-case hex digits in place of the placeholder, then `}` and a newline.
pub fn end(buf: &mut Vec<u8>, open: Open) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let crc = crc32fast::hash(&buf[open.checked..]);
    for i in 0..8 {
        buf[open.start + PREFIX.len() + i] = HEX[((crc >> (28 - 4 * i)) & 0xf) as usize];
    }
    buf.extend_from_slice(b"}\n");
}

/// Why a line is not a valid frame.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameError {
    /// Not the frame's shape: too short, another prefix or middle, or no closing brace.
    Malformed,
    /// The checksum field is not 8 hex digits.
    ChecksumNotHex,
    /// The checked part's CRC32 is not the stored one.
    Mismatch {
        /// The checksum the line carries.
        stored: u32,
        /// The checksum of the bytes it covers.
        computed: u32,
    },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Malformed => f.write_str("not a journal record"),
            FrameError::ChecksumNotHex => f.write_str("its checksum is not 8 hex digits"),
            FrameError::Mismatch { stored, computed } => write!(
                f,
                "checksum mismatch (stored {stored:08x}, computed {computed:08x})"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// Whether `line` (without its newline) is a frame with this `middle`; says nothing of its
/// checksum.
pub fn has_middle(line: &[u8], middle: &[u8]) -> bool {
    line.starts_with(PREFIX)
        && line
            .get(HEAD..)
            .is_some_and(|rest| rest.starts_with(middle))
}

/// The checked part of `line` (without its newline), once its shape, its `middle` and its
/// checksum are right. At least two bytes must follow the middle (a body and the closing
/// brace).
pub fn checked<'a>(line: &'a [u8], middle: &[u8]) -> Result<&'a [u8], FrameError> {
    if line.len() < HEAD + middle.len() + 2
        || !has_middle(line, middle)
        || line.last() != Some(&b'}')
    {
        return Err(FrameError::Malformed);
    }
    let stored = std::str::from_utf8(&line[PREFIX.len()..HEAD])
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or(FrameError::ChecksumNotHex)?;
    let part = &line[HEAD + middle.len()..line.len() - 1];
    let computed = crc32fast::hash(part);
    if computed != stored {
        return Err(FrameError::Mismatch { stored, computed });
    }
    Ok(part)
}

/// One complete line of journal bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based line number, blank lines counted.
    pub number: usize,
    /// Byte offset where the line starts.
    pub offset: usize,
    /// The line without its newline.
    pub bytes: &'a [u8],
}

impl Line<'_> {
    /// Bytes the line takes in the journal, its newline included.
    pub fn len_with_newline(&self) -> usize {
        self.bytes.len() + 1
    }
}

/// The complete, non-blank lines of journal bytes, in order (see [`Lines`]).
pub fn lines(bytes: &[u8]) -> Lines<'_> {
    Lines {
        bytes,
        offset: 0,
        number: 0,
        torn_tail: false,
    }
}

/// Iterator over the complete lines of journal bytes. Blank lines (only ASCII white space) are
/// counted but not yielded. An unterminated last line is not yielded either: an append writes
/// its whole line before it is acknowledged, so such a line is a writer killed mid-append
/// ([`Lines::torn_tail`]), not damage.
#[derive(Clone, Debug)]
pub struct Lines<'a> {
    bytes: &'a [u8],
    offset: usize,
    number: usize,
    torn_tail: bool,
}

impl<'a> Lines<'a> {
    /// Whether the bytes end in an unterminated line (known once the iterator has reached it).
    pub fn torn_tail(&self) -> bool {
        self.torn_tail
    }

    /// Bytes up to the end of the last complete line read so far, blank lines included:
    /// where the next append must start once the iterator is done.
    pub fn complete_len(&self) -> usize {
        self.offset
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        while !self.torn_tail && self.offset < self.bytes.len() {
            self.number += 1;
            let rest = &self.bytes[self.offset..];
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                self.torn_tail = true;
                return None;
            };
            let line = Line {
                number: self.number,
                offset: self.offset,
                bytes: &rest[..nl],
            };
            self.offset += nl + 1;
            if !line.bytes.iter().all(u8::is_ascii_whitespace) {
                return Some(line);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REC: &[u8] = b"\",\"rec\":";
    const SEQ: &[u8] = b"\",\"seq\":";

    fn framed(middle: &[u8], body: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        let open = begin(&mut buf, middle);
        buf.extend_from_slice(body);
        end(&mut buf, open);
        buf
    }

    #[test]
    fn a_frame_is_the_prefix_the_checksum_of_what_follows_the_middle_and_a_brace() {
        let line = framed(SEQ, br#"7,"rec":{"op":"delete","id":"x"}"#);
        let crc = crc32fast::hash(br#"7,"rec":{"op":"delete","id":"x"}"#);
        let want = format!(
            "{{\"crc\":\"{crc:08x}\",\"seq\":7,\"rec\":{{\"op\":\"delete\",\"id\":\"x\"}}}}\n"
        );
        assert_eq!(String::from_utf8(line).unwrap(), want);
    }

    #[test]
    fn checked_returns_the_checked_part_and_names_what_is_wrong() {
        let line = framed(REC, br#"{"a":1}"#);
        let bare = &line[..line.len() - 1];
        assert_eq!(checked(bare, REC), Ok(&br#"{"a":1}"#[..]));
        assert!(has_middle(bare, REC) && !has_middle(bare, SEQ));
        assert_eq!(checked(bare, SEQ), Err(FrameError::Malformed));
        let mut unclosed = bare.to_vec();
        *unclosed.last_mut().unwrap() = b' ';
        assert_eq!(checked(&unclosed, REC), Err(FrameError::Malformed));
        assert_eq!(checked(b"{\"crc\":\"", REC), Err(FrameError::Malformed));

        let mut flipped = bare.to_vec();
        let at = flipped.len() - 3;
        flipped[at] ^= 0x01;
        let err = checked(&flipped, REC).unwrap_err();
        assert!(matches!(err, FrameError::Mismatch { .. }), "{err:?}");
        assert!(
            err.to_string().starts_with("checksum mismatch (stored "),
            "{err}"
        );

        let mut not_hex = bare.to_vec();
        not_hex[PREFIX.len()] = b'z';
        assert_eq!(checked(&not_hex, REC), Err(FrameError::ChecksumNotHex));
        assert_eq!(
            FrameError::ChecksumNotHex.to_string(),
            "its checksum is not 8 hex digits"
        );
    }

    #[test]
    fn lines_skip_blanks_count_them_and_stop_at_a_torn_tail() {
        let bytes = b"a\n\n  \nb\r\nc";
        let mut it = lines(bytes);
        let got: Vec<_> = it.by_ref().map(|l| (l.number, l.offset, l.bytes)).collect();
        assert_eq!(got, [(1, 0, &b"a"[..]), (4, 6, &b"b\r"[..])]);
        assert!(it.torn_tail());
        assert_eq!(it.complete_len(), 9, "the torn `c` is not complete");

        let mut clean = lines(b"a\n \n");
        assert_eq!(clean.by_ref().count(), 1);
        assert!(!clean.torn_tail());
        assert_eq!(clean.complete_len(), 4, "a trailing blank line is complete");
    }

    proptest! {
        #[test]
        fn any_flipped_byte_of_a_frame_is_caught(body in "[ -~]{2,40}", pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
            let line = framed(REC, body.as_bytes());
            let mut bare = line[..line.len() - 1].to_vec();
            let i = pos.index(bare.len());
            bare[i] ^= flip;
            // Only a flip inside the hex digits that spells the same number another way
            // (upper case) could pass; every other changed byte fails.
            if let Ok(part) = checked(&bare, REC) {
                prop_assert!(i >= PREFIX.len() && i < HEAD, "byte {i} changed unnoticed");
                prop_assert_eq!(part, body.as_bytes());
            }
        }

        #[test]
        fn lines_never_panic_and_cover_at_most_the_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut it = lines(&bytes);
            for l in it.by_ref() {
                prop_assert_eq!(&bytes[l.offset..l.offset + l.bytes.len()], l.bytes);
            }
            prop_assert!(it.complete_len() <= bytes.len());
        }
    }
}

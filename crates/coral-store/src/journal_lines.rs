//! The memory journal's lines: each record framed with its sequence number and checksum,
//! and the scan that reads them back, reporting damaged lines, gaps and repeats.

use coral_base::frame;

use crate::record::Record;

/// Before the checked part of a current line: `{"crc":"<8 hex>` is followed by this, then the
/// sequence number.
const SEQ_MIDDLE: &[u8] = b"\",\"seq\":";
/// Between the sequence number and the payload.
const REC_MIDDLE: &[u8] = b",\"rec\":";
/// The first format, without sequence numbers: still read, never written.
const V1_MIDDLE: &[u8] = b"\",\"rec\":";

/// Append one encoded record line (with its trailing newline) to `buf`.
///
/// The line is `{"crc":"<8 hex>","seq":<n>,"rec":<payload>}` (`coral_base::frame`); the
/// checksum covers everything from the first digit of `n` to the end of the payload, so
/// neither the number nor the record can change unnoticed. Sequence numbers run without gaps
/// through one journal file (the `begin` record is 0), which is how a missing line is told
/// from a clean file.
pub fn encode_line(seq: u64, record: &Record, buf: &mut Vec<u8>) {
    let open = frame::begin(buf, SEQ_MIDDLE);
    buf.extend_from_slice(seq.to_string().as_bytes());
    buf.extend_from_slice(REC_MIDDLE);
    // Records hold only strings, numbers and maps with string keys: serialising to memory
    // cannot fail.
    serde_json::to_writer(&mut *buf, record).expect("serialising a record cannot fail");
    frame::end(buf, open);
}

/// A decoded line: its sequence number (`None` in the first format) and record.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Position in the journal file; `None` for lines written before sequence numbers.
    pub seq: Option<u64>,
    /// The record.
    pub record: Record,
}

/// Decode one line (without its newline).
pub fn decode_line(line: &[u8]) -> std::result::Result<Line, String> {
    let (seq, payload) = if frame::has_middle(line, SEQ_MIDDLE) {
        let covered = frame::checked(line, SEQ_MIDDLE).map_err(|e| e.to_string())?;
        let digits = covered.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 20 || !covered[digits..].starts_with(REC_MIDDLE) {
            return Err("sequence number is malformed".into());
        }
        let seq = std::str::from_utf8(&covered[..digits])
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
            .ok_or("sequence number is malformed")?;
        (Some(seq), &covered[digits + REC_MIDDLE.len()..])
    } else {
        (
            None,
            frame::checked(line, V1_MIDDLE).map_err(|e| e.to_string())?,
        )
    };
    let record =
        serde_json::from_slice(payload).map_err(|e| format!("record does not parse: {e}"))?;
    Ok(Line { seq, record })
}

/// What is wrong at one place of a journal.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DamageKind {
    /// A complete line that is not a valid record (bad checksum, does not parse). Only this
    /// line is set aside; the records after it are applied.
    Unreadable,
    /// Sequence numbers jump: the records `from..=to` are not in the file (a line was
    /// deleted or the file was spliced). Nothing is there to set aside; the loss is reported.
    Missing {
        /// First missing sequence number.
        from: u64,
        /// Last missing sequence number.
        to: u64,
    },
    /// A record whose sequence number was already seen (a repeated or misplaced line). Records
    /// are idempotent, so it is set aside and reported rather than applied twice.
    Repeated {
        /// Its sequence number.
        seq: u64,
    },
}

/// Damage found in a journal.
#[derive(Clone, Debug, PartialEq)]
pub struct Damage {
    /// 1-based line where it was found.
    pub line: usize,
    /// Byte offset of that line.
    pub offset: usize,
    /// Bytes of the line set aside, newline included (0 for [`DamageKind::Missing`]).
    pub len: usize,
    /// What kind of damage.
    pub kind: DamageKind,
    /// What was wrong, in words.
    pub detail: String,
}

/// What reading a journal found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Valid records in order.
    pub records: Vec<Record>,
    /// Bytes up to the end of the last complete line (where the next append must start).
    pub valid_len: usize,
    /// An unterminated last line (a crash mid-append, never acknowledged) was ignored.
    pub torn_tail: bool,
    /// Every damaged or missing place, in file order. Valid records around them are kept.
    pub damage: Vec<Damage>,
    /// The highest sequence number read (`None` when no line had one).
    pub last_seq: Option<u64>,
}

/// Read journal bytes: every complete valid record, with every damaged line and every gap in
/// the sequence numbers reported. `after` is the sequence number of the record just before
/// `bytes` (when reading a journal from the middle), so a gap at the start is seen too.
pub fn scan(bytes: &[u8], after: Option<u64>) -> Scan {
    let mut out = Scan {
        last_seq: after,
        ..Scan::default()
    };
    let mut lines = frame::lines(bytes);
    // Unreadable lines since the last good record.
    let mut unreadable_run = 0u64;
    for line in lines.by_ref() {
        let (line_no, offset) = (line.number, line.offset);
        match decode_line(line.bytes) {
            Ok(Line { seq: None, record }) => {
                unreadable_run = 0;
                out.records.push(record);
            }
            Ok(Line {
                seq: Some(seq),
                record,
            }) => {
                // A `begin` record starts a file and its numbering.
                let expected = match (&record, out.last_seq) {
                    (Record::Begin { .. }, _) | (_, None) => seq,
                    (_, Some(last)) => last.saturating_add(1),
                };
                if seq < expected {
                    out.damage.push(Damage {
                        line: line_no,
                        offset,
                        len: line.len_with_newline(),
                        kind: DamageKind::Repeated { seq },
                        detail: format!("record {seq} appears again after record {}", expected - 1),
                    });
                } else {
                    // Unreadable lines just before account for the same number of missing
                    // records: the common case of one damaged line is reported once.
                    if seq > expected && seq - expected != unreadable_run {
                        out.damage.push(Damage {
                            line: line_no,
                            offset,
                            len: 0,
                            kind: DamageKind::Missing {
                                from: expected,
                                to: seq - 1,
                            },
                            detail: if seq - expected == 1 {
                                format!("record {expected} is missing")
                            } else {
                                format!("records {expected} to {} are missing", seq - 1)
                            },
                        });
                    }
                    out.last_seq = Some(seq);
                    out.records.push(record);
                }
                unreadable_run = 0;
            }
            Err(detail) => {
                unreadable_run += 1;
                out.damage.push(Damage {
                    line: line_no,
                    offset,
                    len: line.len_with_newline(),
                    kind: DamageKind::Unreadable,
                    detail,
                });
            }
        }
    }
    out.valid_len = lines.complete_len();
    out.torn_tail = lines.torn_tail();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::{Item, Tier};
    use proptest::prelude::*;
    use serde_json::Map;

    fn item(id: &str) -> Item {
        Item {
            item_id: id.into(),
            content: format!("content {id} 内容"),
            timestamp: 1.5,
            last_access: 2.5,
            token_count: 3,
            access_count: 1,
            importance: 0.5,
            project: None,
            extra: Map::new(),
        }
    }

    fn sample() -> Vec<Record> {
        vec![
            Record::Begin { generation: 3 },
            Record::Put {
                tier: Tier::Hot,
                item: item("a"),
                vector: vec![0.25, -1.0, f32::MIN_POSITIVE],
            },
            Record::Touch {
                id: "a".into(),
                access_count: 4,
                last_access: 9.0,
            },
            Record::Move {
                id: "a".into(),
                tier: Tier::Cold,
            },
            Record::Importance {
                id: "a".into(),
                importance: 1.0,
            },
            Record::Archive {
                id: "a".into(),
                reason: "evicted".into(),
                summary_id: None,
                at: 10.0,
            },
            Record::Delete { id: "a".into() },
        ]
    }

    fn encode_all(records: &[Record]) -> Vec<u8> {
        let mut buf = Vec::new();
        for (seq, r) in records.iter().enumerate() {
            encode_line(seq as u64, r, &mut buf);
        }
        buf
    }

    /// Byte offsets where each line starts.
    fn line_starts(bytes: &[u8]) -> Vec<usize> {
        std::iter::once(0)
            .chain(
                bytes
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .filter(|&i| i < bytes.len())
            .collect()
    }

    #[test]
    fn a_line_keeps_its_bytes() {
        // The on-disk format, pinned: the checksum was computed apart (Python's zlib.crc32
        // of `3,"rec":{"op":"delete","id":"x"}`).
        let mut buf = Vec::new();
        encode_line(3, &Record::Delete { id: "x".into() }, &mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "{\"crc\":\"2703720c\",\"seq\":3,\"rec\":{\"op\":\"delete\",\"id\":\"x\"}}\n"
        );
    }

    #[test]
    fn records_round_trip() {
        let bytes = encode_all(&sample());
        let scan = scan(&bytes, None);
        assert_eq!(scan.records, sample());
        assert_eq!(scan.valid_len, bytes.len());
        assert_eq!(scan.last_seq, Some(sample().len() as u64 - 1));
        assert!(!scan.torn_tail && scan.damage.is_empty());
    }

    #[test]
    fn torn_tail_is_dropped_silently() {
        let bytes = encode_all(&sample());
        for cut in [bytes.len() - 1, bytes.len() - 20] {
            let scan = scan(&bytes[..cut], None);
            assert!(scan.torn_tail);
            assert!(scan.damage.is_empty());
            assert_eq!(scan.records.len(), sample().len() - 1);
        }
    }

    #[test]
    fn a_flipped_byte_in_the_middle_sets_aside_that_line_only() {
        let mut bytes = encode_all(&sample());
        let third_line = line_starts(&bytes)[2];
        bytes[third_line + 40] ^= 0x01;
        let scan = scan(&bytes, None);
        // Reported once: the unreadable line accounts for the one missing number after it.
        assert_eq!(scan.damage.len(), 1, "{:?}", scan.damage);
        let bad = &scan.damage[0];
        assert_eq!(bad.line, 3);
        assert_eq!(bad.offset, third_line);
        assert_eq!(bad.kind, DamageKind::Unreadable);
        assert!(bad.detail.contains("checksum") || bad.detail.contains("parse"));
        let mut want = sample();
        want.remove(2);
        assert_eq!(scan.records, want, "every other record is kept");
        assert_eq!(scan.valid_len, bytes.len());
    }

    #[test]
    fn a_deleted_line_is_a_gap_in_the_sequence() {
        let bytes = encode_all(&sample());
        let starts = line_starts(&bytes);
        let mut cut = bytes[..starts[3]].to_vec();
        cut.extend_from_slice(&bytes[starts[5]..]);
        let scan = scan(&cut, None);
        assert_eq!(
            scan.damage
                .iter()
                .map(|d| d.kind.clone())
                .collect::<Vec<_>>(),
            [DamageKind::Missing { from: 3, to: 4 }]
        );
        assert_eq!(scan.damage[0].len, 0, "nothing to set aside");
        assert!(scan.damage[0].detail.contains("records 3 to 4"));
        assert_eq!(scan.records.len(), sample().len() - 2);
        // Read from the middle, the gap before the first line is seen too.
        let tail = &bytes[starts[4]..];
        let from_middle = scan_tail(tail, Some(2));
        assert_eq!(
            from_middle.damage[0].kind,
            DamageKind::Missing { from: 3, to: 3 }
        );
        let clean = scan_tail(tail, Some(3));
        assert!(clean.damage.is_empty());
    }

    fn scan_tail(bytes: &[u8], after: Option<u64>) -> Scan {
        scan(bytes, after)
    }

    #[test]
    fn a_repeated_line_is_set_aside() {
        let bytes = encode_all(&sample());
        let starts = line_starts(&bytes);
        let mut doubled = bytes[..starts[3]].to_vec();
        doubled.extend_from_slice(&bytes[starts[2]..starts[3]]);
        doubled.extend_from_slice(&bytes[starts[3]..]);
        let scan = scan(&doubled, None);
        assert_eq!(scan.damage.len(), 1);
        assert_eq!(scan.damage[0].kind, DamageKind::Repeated { seq: 2 });
        assert_eq!(scan.records, sample());
    }

    #[test]
    fn lines_of_the_first_format_are_still_read() {
        // `{"crc":"<hex>","rec":<payload>}` with the checksum of the payload alone.
        let mut bytes = Vec::new();
        for r in sample() {
            let payload = serde_json::to_vec(&r).unwrap();
            let crc = crc32fast::hash(&payload);
            bytes.extend_from_slice(format!("{{\"crc\":\"{crc:08x}\",\"rec\":").as_bytes());
            bytes.extend_from_slice(&payload);
            bytes.extend_from_slice(b"}\n");
        }
        // A current line after them continues without a reported gap.
        encode_line(1, &sample()[1], &mut bytes);
        let scan = scan(&bytes, None);
        assert!(scan.damage.is_empty(), "{:?}", scan.damage);
        assert_eq!(scan.records.len(), sample().len() + 1);
        assert_eq!(scan.last_seq, Some(1));
    }

    proptest! {
        #[test]
        fn scanning_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let s = scan(&bytes, None);
            prop_assert!(s.valid_len <= bytes.len());
        }

        #[test]
        fn any_corruption_is_detected_or_harmless(pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
            let good = encode_all(&sample());
            let mut bytes = good.clone();
            let i = pos.index(bytes.len());
            bytes[i] ^= flip;
            let s = scan(&bytes, None);
            // Accepted records are always originals, in order; a shortfall is reported.
            let originals = sample();
            let mut at = 0;
            for got in &s.records {
                let found = originals[at..].iter().position(|w| w == got);
                prop_assert!(found.is_some(), "{got:?} is not an original");
                at += found.unwrap_or(0) + 1;
            }
            if s.records.len() < originals.len() {
                prop_assert!(!s.damage.is_empty() || s.torn_tail);
            }
        }
    }
}

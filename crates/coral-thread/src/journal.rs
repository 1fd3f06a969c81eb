//! The thread journal's lines: CRC-checked, numbered records of what one operation changed,
//! and the scan that reads them back, telling a torn last line (never acknowledged) from
//! damage and missing records (both reported).
//!
//! A line is `{"crc":"<crc32 of the payload, 8 hex>","rec":<payload>}`; the CRC covers the
//! payload's bytes exactly as written. Payloads:
//!
//! - `{"op":"begin","seq":N}`: the first line of a journal (again after each truncation); the
//!   next record is number `N`.
//! - `{"op":"thread","seq":N,"thread":{...}}`: one operation. `thread` has the file's shape
//!   (every scalar field as the operation left it) but holds only the steps the operation
//!   appended. Replaying it follows the file merge's rules (`merge::absorb`), so replaying a
//!   record twice, or over a file that already has it, changes nothing.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::codec;
use crate::model::{Status, Step, Thread};

const PREFIX: &[u8] = b"{\"crc\":\"";
const MIDDLE: &[u8] = b"\",\"rec\":";
/// `PREFIX`, 8 hex digits, `MIDDLE`.
const HEADER_LEN: usize = PREFIX.len() + 8 + MIDDLE.len();

/// A thread's file element with only some of its steps.
#[derive(Serialize)]
struct ThreadDelta<'a> {
    thread_id: &'a str,
    title: &'a str,
    summary: &'a str,
    status: &'a Status,
    parent_thread_id: &'a Option<String>,
    steps: &'a [Step],
    created_at: f64,
    updated_at: f64,
    last_advance_by: &'a str,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Payload<'a> {
    Begin { seq: u64 },
    Thread { seq: u64, thread: ThreadDelta<'a> },
}

fn encode(payload: &Payload<'_>, buf: &mut Vec<u8>) {
    let start = buf.len();
    buf.extend_from_slice(PREFIX);
    buf.extend_from_slice(b"00000000");
    buf.extend_from_slice(MIDDLE);
    let body = buf.len();
    // Strings, finite numbers (times are checked finite on the way in) and string-keyed
    // maps: serialising to memory cannot fail.
    let _ = serde_json::to_writer(&mut *buf, payload);
    let crc = crc32fast::hash(&buf[body..]);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in 0..8 {
        buf[start + PREFIX.len() + i] = HEX[((crc >> (28 - 4 * i)) & 0xf) as usize];
    }
    buf.extend_from_slice(b"}\n");
}

/// Append the line that starts a journal whose next record is `seq`.
pub(crate) fn encode_begin(seq: u64, buf: &mut Vec<u8>) {
    encode(&Payload::Begin { seq }, buf);
}

/// Append the line of record `seq`: `thread`'s scalars and its last `new_steps` steps.
pub(crate) fn encode_thread(seq: u64, thread: &Thread, new_steps: usize, buf: &mut Vec<u8>) {
    let steps = &thread.steps[thread.steps.len().saturating_sub(new_steps)..];
    let delta = ThreadDelta {
        thread_id: &thread.thread_id,
        title: &thread.title,
        summary: &thread.summary,
        status: &thread.status,
        parent_thread_id: &thread.parent_thread_id,
        steps,
        created_at: thread.created_at,
        updated_at: thread.updated_at,
        last_advance_by: &thread.last_advance_by,
        extra: &thread.extra,
    };
    encode(&Payload::Thread { seq, thread: delta }, buf);
}

/// One decoded line.
#[derive(Debug)]
enum Line {
    Begin(u64),
    Thread(u64, Box<Thread>),
}

fn decode(line: &[u8]) -> Result<Line, String> {
    if line.len() < HEADER_LEN + 2
        || !line.starts_with(PREFIX)
        || &line[PREFIX.len() + 8..HEADER_LEN] != MIDDLE
        || line.last() != Some(&b'}')
    {
        return Err("not a thread journal record".into());
    }
    let stored = std::str::from_utf8(&line[PREFIX.len()..PREFIX.len() + 8])
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or("its checksum is not 8 hex digits")?;
    let payload = &line[HEADER_LEN..line.len() - 1];
    let actual = crc32fast::hash(payload);
    if actual != stored {
        return Err(format!(
            "checksum mismatch (stored {stored:08x}, computed {actual:08x})"
        ));
    }
    let value: Value =
        serde_json::from_slice(payload).map_err(|e| format!("the record does not parse: {e}"))?;
    let seq = value
        .get("seq")
        .and_then(Value::as_u64)
        .ok_or("the record has no sequence number")?;
    match value.get("op").and_then(Value::as_str) {
        Some("begin") => Ok(Line::Begin(seq)),
        Some("thread") => {
            let element = value.get("thread").ok_or("the record has no thread")?;
            codec::thread_from(None, element)
                .map(|t| Line::Thread(seq, Box::new(t)))
                .ok_or_else(|| "the record's thread is not readable".into())
        }
        Some(other) => Err(format!("unknown record kind {:?}", truncate(other))),
        None => Err("the record has no kind".into()),
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() <= 40 {
        s.to_string()
    } else {
        s.chars().take(40).chain("…".chars()).collect()
    }
}

/// What reading a journal found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Valid records in file order: each a thread element to absorb.
    pub records: Vec<Thread>,
    /// The unterminated last line of a writer killed mid-append was ignored (it was never
    /// acknowledged: an operation returns only after its whole line is written).
    pub torn_tail: bool,
    /// Damage and gaps, one sentence each (line numbers are 1-based). A damaged line is
    /// skipped on its own: every record stands alone, so the ones after it still apply.
    pub problems: Vec<String>,
}

/// Read journal bytes.
pub(crate) fn scan(bytes: &[u8]) -> Scan {
    let mut out = Scan::default();
    // The number the next record must carry, once known.
    let mut expected: Option<u64> = None;
    let mut damaged_since_last = 0usize;
    let mut offset = 0;
    let mut line_no = 0;
    while offset < bytes.len() {
        line_no += 1;
        let Some(nl) = bytes[offset..].iter().position(|&b| b == b'\n') else {
            out.torn_tail = true;
            break;
        };
        let line = &bytes[offset..offset + nl];
        offset += nl + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match decode(line) {
            Ok(Line::Begin(seq)) => {
                if line_no != 1 {
                    out.problems.push(format!(
                        "line {line_no}: a begin record in the middle of the journal"
                    ));
                }
                expected = Some(seq);
                damaged_since_last = 0;
            }
            Ok(Line::Thread(seq, thread)) => {
                match expected {
                    None if line_no == 1 => out
                        .problems
                        .push("line 1: the journal does not start with its begin record".into()),
                    Some(e) if seq > e => {
                        let gap = seq - e;
                        if damaged_since_last as u64 >= gap {
                            // The damaged lines reported above are the records in the gap.
                        } else {
                            out.problems.push(format!(
                                "before line {line_no}: {} record(s) missing (numbers {e} to {})",
                                gap - damaged_since_last as u64,
                                seq - 1
                            ));
                        }
                    }
                    Some(e) if seq < e => out.problems.push(format!(
                        "line {line_no}: record {seq} out of order (expected {e})"
                    )),
                    _ => {}
                }
                expected = Some(seq + 1);
                damaged_since_last = 0;
                out.records.push(*thread);
            }
            Err(detail) => {
                out.problems.push(format!("line {line_no}: {detail}"));
                damaged_since_last += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::set::ThreadSet;

    fn sample() -> (ThreadSet, String) {
        let mut s = ThreadSet::default();
        let id = s
            .create("发布 v2.0", Some("计划"), None, Some("聊天A"), 10.0)
            .unwrap()
            .thread_id
            .clone();
        s.advance(&id, "第一步", None, Some("聊天B"), 11.0).unwrap();
        s.advance(&id, "第二步完成", None, Some("聊天C"), 12.0)
            .unwrap();
        (s, id)
    }

    fn journal(set: &ThreadSet, id: &str, first: u64, n: usize) -> Vec<u8> {
        let t = set.get(id).unwrap();
        let mut buf = Vec::new();
        encode_begin(first, &mut buf);
        for i in 0..n {
            encode_thread(first + i as u64, t, 1, &mut buf);
        }
        buf
    }

    #[test]
    fn records_round_trip_with_only_their_steps() {
        let (set, id) = sample();
        let t = set.get(&id).unwrap();
        let mut buf = Vec::new();
        encode_begin(7, &mut buf);
        encode_thread(7, t, 1, &mut buf);
        encode_thread(8, t, 0, &mut buf);
        let scan = scan(&buf);
        assert!(scan.problems.is_empty(), "{:?}", scan.problems);
        assert!(!scan.torn_tail);
        assert_eq!(scan.records.len(), 2);
        let r = &scan.records[0];
        assert_eq!(r.title, "发布 v2.0");
        assert_eq!(r.updated_at, t.updated_at);
        assert_eq!(r.last_advance_by, "聊天C");
        assert_eq!(r.steps.len(), 1);
        assert_eq!(r.steps[0].step_id, t.steps[1].step_id);
        assert!(r.steps[0].done);
        assert!(scan.records[1].steps.is_empty());
        // One line per record, raw UTF-8.
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 3);
        assert!(String::from_utf8(buf).unwrap().contains("第二步完成"));
    }

    #[test]
    fn a_torn_tail_is_dropped_silently() {
        let (set, id) = sample();
        let mut buf = journal(&set, &id, 1, 3);
        let full = buf.len();
        buf.truncate(full - 5);
        let scan = scan(&buf);
        assert!(scan.torn_tail);
        assert!(scan.problems.is_empty(), "{:?}", scan.problems);
        assert_eq!(scan.records.len(), 2);
    }

    #[test]
    fn a_damaged_line_is_reported_and_skipped_alone() {
        let (set, id) = sample();
        let buf = journal(&set, &id, 1, 4);
        let mut lines: Vec<Vec<u8>> = buf
            .split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        // Flip a byte inside record 2's payload (line 3).
        let at = lines[2].len() - 10;
        lines[2][at] ^= 0x01;
        let scan = scan(&lines.concat());
        assert_eq!(scan.records.len(), 3, "records 1, 3 and 4 still apply");
        assert_eq!(scan.problems.len(), 1, "{:?}", scan.problems);
        assert!(
            scan.problems[0].starts_with("line 3: "),
            "{:?}",
            scan.problems
        );
    }

    #[test]
    fn a_missing_record_is_detected_by_its_number() {
        let (set, id) = sample();
        let buf = journal(&set, &id, 5, 4);
        let lines: Vec<&[u8]> = buf.split_inclusive(|&b| b == b'\n').collect();
        // Drop record 6 (line 3) entirely, as a hand edit or a lost page would.
        let gapped = [lines[0], lines[1], lines[3], lines[4]].concat();
        let scan = scan(&gapped);
        assert_eq!(scan.records.len(), 3);
        assert_eq!(scan.problems.len(), 1, "{:?}", scan.problems);
        assert!(
            scan.problems[0].contains("1 record(s) missing (numbers 6 to 6)"),
            "{:?}",
            scan.problems
        );
        // Losing the begin line is noticed too.
        let headless = [lines[1], lines[2]].concat();
        let scan = super::scan(&headless);
        assert_eq!(scan.records.len(), 2);
        assert!(scan.problems[0].contains("begin"), "{:?}", scan.problems);
    }

    #[test]
    fn garbage_never_panics() {
        for bad in [
            &b"{\"crc\":\"zzzzzzzz\",\"rec\":{}}\n"[..],
            b"{\"crc\":\"00000000\",\"rec\":{}}\n",
            b"\n\n  \n",
            b"\xff\xfe\n",
            b"",
        ] {
            let s = scan(bad);
            assert!(s.records.is_empty());
        }
        let mut buf = Vec::new();
        encode(&Payload::Begin { seq: 1 }, &mut buf);
        let text = String::from_utf8(buf).unwrap().replace("begin", "bogus");
        let s = scan(text.as_bytes());
        assert_eq!(s.problems.len(), 1);
    }
}

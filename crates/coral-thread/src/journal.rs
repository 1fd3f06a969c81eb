//! The thread journal's lines: CRC-checked, numbered records of what one operation changed,
//! and the scan that reads them back, telling a torn last line (never acknowledged) from
//! damage and missing records (both reported).
//!
//! A line is `{"crc":"<crc32 of the payload, 8 hex>","rec":<payload>}` (`coral_base::frame`,
//! shared with the memory journal); the CRC covers the payload's bytes exactly as written.
//! Payloads:
//!
//! - `{"op":"begin","seq":N}`: the first line of a journal (again after each truncation); the
//!   next record is number `N`.
//! - `{"op":"thread","seq":N,"thread":{...}}`: one operation. `thread` has the file's shape
//!   (every scalar field as the operation left it) but holds only the steps the operation
//!   appended. Replaying it follows the file merge's rules (`merge::absorb`), so replaying a
//!   record twice, or over a file that already has it, changes nothing.

use coral_base::frame;
use serde_json::{Map, Value};

use crate::codec;
use crate::model::{Step, Thread};

/// Between the checksum and the payload (`coral_base::frame`), which the checksum covers.
const MIDDLE: &[u8] = b"\",\"rec\":";

/// A JSON value. Strings, finite numbers (times are checked finite on the way in), booleans
/// and string-keyed maps: writing them to memory cannot fail.
fn value(buf: &mut Vec<u8>, v: &(impl serde::Serialize + ?Sized)) {
    let _ = serde_json::to_writer(&mut *buf, v);
}

/// `,"key":` (the keys are plain ASCII: written as they are, not escaped).
fn key(buf: &mut Vec<u8>, k: &str) {
    buf.extend_from_slice(b",\"");
    buf.extend_from_slice(k.as_bytes());
    buf.extend_from_slice(b"\":");
}

fn extra(buf: &mut Vec<u8>, map: &Map<String, Value>) {
    for (k, v) in map {
        buf.push(b',');
        value(buf, k);
        buf.push(b':');
        value(buf, v);
    }
}

/// Append the line that starts a journal whose next record is `seq`.
pub(crate) fn encode_begin(seq: u64, buf: &mut Vec<u8>) {
    let line = frame::begin(buf, MIDDLE);
    buf.extend_from_slice(b"{\"op\":\"begin\"");
    key(buf, "seq");
    value(buf, &seq);
    buf.push(b'}');
    frame::end(buf, line);
}

/// Append the line of record `seq`: `thread`'s scalars and its last `new_steps` steps, in the
/// file's shape. Written by hand rather than through serde's derive: the keys need no
/// escaping, which takes a fifth off encoding a record (measured on the stress run).
pub(crate) fn encode_thread(seq: u64, thread: &Thread, new_steps: usize, buf: &mut Vec<u8>) {
    let line = frame::begin(buf, MIDDLE);
    buf.extend_from_slice(b"{\"op\":\"thread\"");
    key(buf, "seq");
    value(buf, &seq);
    buf.extend_from_slice(b",\"thread\":{\"thread_id\":");
    value(buf, &thread.thread_id);
    key(buf, "title");
    value(buf, &thread.title);
    key(buf, "summary");
    value(buf, &thread.summary);
    key(buf, "status");
    value(buf, thread.status.as_str());
    key(buf, "parent_thread_id");
    value(buf, &thread.parent_thread_id);
    key(buf, "steps");
    buf.push(b'[');
    let steps = &thread.steps[thread.steps.len().saturating_sub(new_steps)..];
    for (i, s) in steps.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        step(buf, s);
    }
    buf.push(b']');
    key(buf, "created_at");
    value(buf, &thread.created_at);
    key(buf, "updated_at");
    value(buf, &thread.updated_at);
    key(buf, "last_advance_by");
    value(buf, &thread.last_advance_by);
    extra(buf, &thread.extra);
    buf.extend_from_slice(b"}}");
    frame::end(buf, line);
}

fn step(buf: &mut Vec<u8>, s: &Step) {
    buf.extend_from_slice(b"{\"step_id\":");
    value(buf, &*s.step_id);
    key(buf, "seq");
    value(buf, &s.seq);
    key(buf, "text");
    value(buf, &*s.text);
    key(buf, "done");
    value(buf, &s.done);
    key(buf, "at");
    value(buf, &s.at);
    key(buf, "by");
    value(buf, &*s.by);
    extra(buf, &s.extra);
    buf.push(b'}');
}

/// One decoded line.
#[derive(Debug)]
enum Line {
    Begin(u64),
    Thread(u64, Box<Thread>),
}

fn decode(line: &[u8]) -> Result<Line, String> {
    let payload = frame::checked(line, MIDDLE).map_err(|e| e.to_string())?;
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
        Some(other) => Err(format!("unknown record kind {}", coral_base::echo(other))),
        None => Err("the record has no kind".into()),
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
    let mut lines = frame::lines(bytes);
    for line in lines.by_ref() {
        let line_no = line.number;
        match decode(line.bytes) {
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
    out.torn_tail = lines.torn_tail();
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
    fn a_line_keeps_its_bytes() {
        // The on-disk format, pinned: the checksum was computed apart (Python's zlib.crc32
        // of `{"op":"begin","seq":7}`).
        let mut buf = Vec::new();
        encode_begin(7, &mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "{\"crc\":\"36e0efb9\",\"rec\":{\"op\":\"begin\",\"seq\":7}}\n"
        );
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
    fn every_field_and_unknown_key_survives_the_hand_written_encoding() {
        let file = serde_json::json!([{
            "thread_id": "t\"1", "title": "line\nbreak \u{2028} 引号\"", "summary": "s\\",
            "status": "paused", "parent_thread_id": "p",
            "steps": [{"step_id": "a1", "seq": 1, "text": "x", "done": true, "at": 1.25,
                       "by": "b", "mood": {"deep": [1, null]}},
                      {"step_id": "a2", "seq": 2, "text": "\t", "done": false, "at": 2.5e9,
                       "by": ""}],
            "created_at": 0.1, "updated_at": 1e-7, "last_advance_by": "🦀", "tags": ["x"]
        }]);
        let set = codec::parse(file.to_string().as_bytes(), std::path::Path::new("t")).unwrap();
        let t = &set.threads[0];
        let mut buf = Vec::new();
        encode_begin(1, &mut buf);
        encode_thread(1, t, 2, &mut buf);
        encode_thread(2, t, 1, &mut buf);
        let scan = scan(&buf);
        assert!(scan.problems.is_empty(), "{:?}", scan.problems);
        assert_eq!(&scan.records[0], t);
        assert_eq!(scan.records[1].steps, t.steps[1..]);
        // And it is the JSON serde writes for the same thread.
        let line = buf.split(|&b| b == b'\n').nth(1).unwrap();
        let payload: Value = serde_json::from_slice(frame::checked(line, MIDDLE).unwrap()).unwrap();
        assert_eq!(payload["thread"], serde_json::to_value(t).unwrap());
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
        encode_begin(1, &mut buf);
        let text = String::from_utf8(buf).unwrap().replace("begin", "bogus");
        let s = scan(text.as_bytes());
        assert_eq!(s.problems.len(), 1);
    }
}

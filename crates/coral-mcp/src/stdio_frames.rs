//! Cutting MCP stdin into messages: newline-delimited JSON or LSP-style `Content-Length`
//! frames, each bounded in size, never buffering more than the limit.
//!
//! The official SDKs send one JSON message per line; some older clients send
//! `Content-Length: N\r\n\r\n<N bytes>` as the language server protocol does, and the
//! original Python Coral read both. A frame starts with a `Content-Length:` or
//! `Content-Type:` line; anything else is a line-delimited message. Blank lines between
//! messages are skipped.

use std::io::{self, BufRead, Read};

/// Largest message accepted, in bytes: 4 MiB. The largest legitimate MCP input Coral gets is
/// a `memory_insert` at the 64 KiB text limit, at most 384 KiB once every byte is escaped as
/// `\u00XX`; 4 MiB leaves ten times that and stays far from what a 50 MB runaway line costs.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Longest header line of a `Content-Length` frame.
const MAX_HEADER_LINE: usize = 1_024;

/// Most header lines in one frame (LSP defines two).
const MAX_HEADER_LINES: usize = 8;

/// What the reader found next.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// One message's bytes (a line without its `\n` / `\r\n`, or a frame's body).
    Message(Vec<u8>),
    /// A message over the limit, skipped entirely; its size in bytes (what was read, when
    /// the input ended inside it).
    Oversized(usize),
    /// A `Content-Length` frame that cannot be used (missing or bad length, a header block
    /// that does not end, input that ended inside the body); what is wrong.
    Unusable(String),
}

/// One line read with a bound.
enum Line {
    /// A whole line, without its line end.
    Complete(Vec<u8>),
    /// A line longer than the bound: its length, skipped up to its end.
    TooLong(usize),
    /// The input ended; the bytes of an unterminated last line, if any.
    End(Vec<u8>),
}

/// Reads [`Frame`]s from a byte stream.
pub struct FrameReader<R> {
    input: R,
    limit: usize,
    /// A line read while looking for the end of a header block that turned out to be a
    /// message of its own.
    pending: Option<Vec<u8>>,
    at_start: bool,
}

impl<R: BufRead> FrameReader<R> {
    /// A reader of messages up to `limit` bytes.
    pub fn new(input: R, limit: usize) -> Self {
        FrameReader {
            input,
            limit,
            pending: None,
            at_start: true,
        }
    }

    /// The next frame, or `None` at the end of the input.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let line = match self.pending.take() {
                Some(line) => Line::Complete(line),
                None => self.read_line(self.limit)?,
            };
            let mut line = match line {
                Line::TooLong(n) => return Ok(Some(Frame::Oversized(n))),
                Line::End(rest) if is_blank(&rest) => return Ok(None),
                Line::End(rest) => rest,
                Line::Complete(line) => line,
            };
            if std::mem::take(&mut self.at_start) && line.starts_with(BOM) {
                line.drain(..BOM.len());
            }
            if is_blank(&line) {
                continue;
            }
            if starts_frame(&line) {
                return self.read_framed(line).map(Some);
            }
            return Ok(Some(Frame::Message(line)));
        }
    }

    /// The rest of a `Content-Length` frame whose first header line is `first`.
    fn read_framed(&mut self, first: Vec<u8>) -> io::Result<Frame> {
        let mut length: Option<usize> = None;
        let mut problem: Option<String> = None;
        let mut line = first;
        let mut count = 0;
        loop {
            count += 1;
            match header_name(&line) {
                Some(name) if name.eq_ignore_ascii_case("content-length") => {
                    let value = String::from_utf8_lossy(&line[name.len() + 1..])
                        .trim()
                        .to_string();
                    match value.parse::<usize>() {
                        Ok(n) if value.bytes().all(|b| b.is_ascii_digit()) => {
                            if length.is_some_and(|l| l != n) {
                                note(&mut problem, "two different Content-Length headers".into());
                            }
                            length = Some(n);
                        }
                        _ => note(
                            &mut problem,
                            format!(
                                "Content-Length {} is not a number of bytes",
                                coral::echo(&value)
                            ),
                        ),
                    }
                }
                // Content-Type (LSP's only other header) and unknown headers are ignored.
                Some(_) => {}
                None => note(
                    &mut problem,
                    format!(
                        "header line {} is not `Name: value`",
                        coral::echo(&String::from_utf8_lossy(&line))
                    ),
                ),
            }
            if count > MAX_HEADER_LINES {
                note(
                    &mut problem,
                    format!("more than {MAX_HEADER_LINES} header lines"),
                );
            }
            line = match self.read_line(MAX_HEADER_LINE)? {
                Line::Complete(l) if is_blank(&l) => break,
                Line::Complete(l) if looks_like_json(&l) => {
                    // The client forgot the blank line, or this was no header at all: answer
                    // the header, then read this line as the message it looks like.
                    self.pending = Some(l);
                    return Ok(Frame::Unusable(
                        "the header block has no blank line before the body".into(),
                    ));
                }
                Line::Complete(l) => l,
                Line::TooLong(n) => {
                    note(
                        &mut problem,
                        format!("a header line of {n} bytes (at most {MAX_HEADER_LINE})"),
                    );
                    Vec::new()
                }
                Line::End(_) => {
                    return Ok(Frame::Unusable(
                        "the input ended inside a header block".into(),
                    ));
                }
            };
            if line.is_empty() {
                // What was left of an over-long header line; keep reading to the blank line.
                continue;
            }
        }
        let Some(n) = length else {
            return Ok(Frame::Unusable(problem.unwrap_or_else(|| {
                "a header block without Content-Length".into()
            })));
        };
        if n > self.limit {
            let skipped = self.skip(n)?;
            return Ok(match problem {
                Some(p) => Frame::Unusable(p),
                None if skipped < n => Frame::Unusable(format!(
                    "the input ended after {skipped} of the {n} bytes Content-Length announced"
                )),
                None => Frame::Oversized(n),
            });
        }
        let mut body = Vec::with_capacity(n);
        self.input.by_ref().take(n as u64).read_to_end(&mut body)?;
        if let Some(p) = problem {
            return Ok(Frame::Unusable(p));
        }
        if body.len() < n {
            return Ok(Frame::Unusable(format!(
                "the input ended after {} of the {n} bytes Content-Length announced",
                body.len()
            )));
        }
        if n == 0 {
            return Ok(Frame::Unusable("Content-Length 0: an empty message".into()));
        }
        Ok(Frame::Message(body))
    }

    /// Read and drop `n` bytes; how many there were.
    fn skip(&mut self, n: usize) -> io::Result<usize> {
        io::copy(&mut self.input.by_ref().take(n as u64), &mut io::sink()).map(|c| c as usize)
    }

    /// One line of at most `bound` bytes (line end excluded); a longer line is consumed to
    /// its end without being kept.
    fn read_line(&mut self, bound: usize) -> io::Result<Line> {
        let mut line = Vec::new();
        let mut too_long: Option<usize> = None;
        loop {
            let available = match self.input.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(match too_long {
                    Some(n) => Line::TooLong(n),
                    None => Line::End(strip_cr(line)),
                });
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let content = newline.unwrap_or(available.len());
            match &mut too_long {
                Some(n) => *n += content,
                None if line.len() + content > bound => too_long = Some(line.len() + content),
                None => line.extend_from_slice(&available[..content]),
            }
            if too_long.is_some() {
                line = Vec::new();
            }
            self.input.consume(take);
            if newline.is_some() {
                return Ok(match too_long {
                    Some(n) => Line::TooLong(n),
                    None => Line::Complete(strip_cr(line)),
                });
            }
        }
    }
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

fn strip_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

fn looks_like_json(line: &[u8]) -> bool {
    line.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'['))
}

/// The name of a `Name: value` header line.
fn header_name(line: &[u8]) -> Option<&str> {
    let colon = line.iter().position(|&b| b == b':')?;
    let name = std::str::from_utf8(&line[..colon]).ok()?;
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
    token.then_some(name)
}

/// Whether `line` starts a frame: `Content-Length: ...` or `Content-Type: ...`, any case.
fn starts_frame(line: &[u8]) -> bool {
    header_name(line).is_some_and(|n| {
        n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("content-type")
    })
}

fn note(problem: &mut Option<String>, p: String) {
    problem.get_or_insert(p);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8], limit: usize) -> Vec<Frame> {
        let mut reader = FrameReader::new(io::BufReader::with_capacity(7, input), limit);
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame().unwrap() {
            out.push(f);
        }
        out
    }

    fn msg(s: &str) -> Frame {
        Frame::Message(s.as_bytes().to_vec())
    }

    #[test]
    fn lines_and_frames_mixed() {
        let input = b"\xEF\xBB\xBF{\"a\":1}\r\n\n  \r\nContent-Length: 7\r\n\r\n{\"b\":2}{\"c\":3}\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\nCONTENT-LENGTH:7\r\n\r\n{\"d\":4}\n{\"e\":5}";
        assert_eq!(
            frames(input, 100),
            vec![
                msg("{\"a\":1}"),
                msg("{\"b\":2}"),
                msg("{\"c\":3}"),
                msg("{\"d\":4}"),
                msg("{\"e\":5}")
            ]
        );
    }

    #[test]
    fn garbage_lines_are_messages_for_the_parser_to_refuse() {
        assert_eq!(
            frames(b"not json\nhello: world\n\xff\xfe\n", 100),
            vec![
                msg("not json"),
                msg("hello: world"),
                Frame::Message(vec![0xff, 0xfe])
            ]
        );
    }

    #[test]
    fn oversized_lines_and_frames_are_skipped_whole() {
        let mut input = vec![b'x'; 250];
        input.extend_from_slice(b"\n{\"ok\":1}\nContent-Length: 300\r\n\r\n");
        input.extend_from_slice(&[b'y'; 300]);
        input.extend_from_slice(b"{\"ok\":2}\n");
        input.extend_from_slice(&[b'z'; 120]);
        assert_eq!(
            frames(&input, 100),
            vec![
                Frame::Oversized(250),
                msg("{\"ok\":1}"),
                Frame::Oversized(300),
                msg("{\"ok\":2}"),
                Frame::Oversized(120),
            ]
        );
    }

    #[test]
    fn bad_frames_are_reported_and_reading_goes_on() {
        let cases: Vec<(&[u8], &str)> = vec![
            (b"Content-Length: abc\r\n\r\n{\"ok\":1}\n", "not a number"),
            (b"Content-Length: -5\r\n\r\n{\"ok\":1}\n", "not a number"),
            (
                b"Content-Type: x\r\n\r\n{\"ok\":1}\n",
                "without Content-Length",
            ),
            (b"Content-Length: 0\r\n\r\n{\"ok\":1}\n", "empty"),
            (b"Content-Length: 8\r\n{\"ok\":1}\n", "no blank line"),
            (
                b"Content-Length: 8\r\nContent-Length: 9\r\n\r\n{\"ok\":1}\n",
                "two different",
            ),
        ];
        for (input, expected) in cases {
            let got = frames(input, 100);
            match &got[0] {
                Frame::Unusable(p) => assert!(p.contains(expected), "{p}"),
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
            }
            // The message after the bad header is still read (but for the duplicate
            // length, whose last value took the message as its body).
            if expected == "two different" {
                assert_eq!(got.len(), 1, "{got:?}");
                continue;
            }
            assert!(
                got.iter()
                    .any(|f| matches!(f, Frame::Message(m) if m.ends_with(b"}"))),
                "{:?}: {got:?}",
                String::from_utf8_lossy(input)
            );
        }
        assert_eq!(
            frames(b"Content-Length: 50\r\n\r\n{\"cut\"", 100),
            vec![Frame::Unusable(
                "the input ended after 6 of the 50 bytes Content-Length announced".into()
            )]
        );
        assert_eq!(
            frames(b"Content-Length: 5\r\n", 100),
            vec![Frame::Unusable(
                "the input ended inside a header block".into()
            )]
        );
        let mut endless = b"Content-Length: 5\r\n".to_vec();
        for _ in 0..20 {
            endless.extend_from_slice(b"X-Pad: 1\r\n");
        }
        endless.extend_from_slice(b"\r\nhello{\"ok\":1}\n");
        let got = frames(&endless, 100);
        assert!(
            matches!(&got[0], Frame::Unusable(p) if p.contains("header lines")),
            "{got:?}"
        );
        assert_eq!(got[1], msg("{\"ok\":1}"));
    }
}

//! Editing a client's JSON (or JSONC: comments and trailing commas) config file in place: one
//! value set or one member removed by splicing the text, so every other byte — the user's
//! comments, key order, indentation, other servers — stays as it was.

use serde_json::Value;

/// A parsed value's place in the text.
#[derive(Debug)]
struct Node {
    /// Byte range of the value.
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Object(Vec<Member>),
    Other,
}

#[derive(Debug)]
struct Member {
    key: String,
    /// Where the member's key starts (its opening quote).
    key_start: usize,
    value: Node,
}

/// One file's text, parsed.
#[derive(Debug)]
pub struct Document {
    text: String,
    root: Node,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    comments: bool,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> String {
        let line = self.text[..self.pos.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        format!("{what} at line {line}")
    }

    /// Skip whitespace and, in JSONC, comments.
    fn skip(&mut self) -> Result<(), String> {
        loop {
            while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            let rest = &self.bytes[self.pos..];
            if rest.starts_with(b"//") || rest.starts_with(b"/*") {
                if !self.comments {
                    return Err(self.error(
                        "a comment, which this client's JSON does not allow (its own parser \
                         would reject the file)",
                    ));
                }
                if rest.starts_with(b"//") {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                } else {
                    match self.text[self.pos + 2..].find("*/") {
                        Some(end) => self.pos += 2 + end + 2,
                        None => return Err(self.error("an unclosed /* comment")),
                    }
                }
                continue;
            }
            return Ok(());
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, String> {
        if depth > 128 {
            return Err(self.error("nesting deeper than 128 levels"));
        }
        self.skip()?;
        let start = self.pos;
        match self.bytes.get(self.pos) {
            Some(b'{') => {
                self.pos += 1;
                let mut members = Vec::new();
                loop {
                    self.skip()?;
                    match self.bytes.get(self.pos) {
                        Some(b'}') => {
                            self.pos += 1;
                            break;
                        }
                        Some(b'"') => {
                            let key_start = self.pos;
                            let key = self.string()?;
                            self.skip()?;
                            if self.bytes.get(self.pos) != Some(&b':') {
                                return Err(self.error("a ':' expected after a key"));
                            }
                            self.pos += 1;
                            let value = self.value(depth + 1)?;
                            members.push(Member {
                                key,
                                key_start,
                                value,
                            });
                            self.after_item(b'}')?;
                        }
                        _ => return Err(self.error("a key or '}' expected")),
                    }
                }
                Ok(Node {
                    start,
                    end: self.pos,
                    kind: Kind::Object(members),
                })
            }
            Some(b'[') => {
                self.pos += 1;
                loop {
                    self.skip()?;
                    if self.bytes.get(self.pos) == Some(&b']') {
                        self.pos += 1;
                        break;
                    }
                    self.value(depth + 1)?;
                    self.after_item(b']')?;
                }
                Ok(Node {
                    start,
                    end: self.pos,
                    kind: Kind::Other,
                })
            }
            Some(b'"') => {
                self.string()?;
                Ok(Node {
                    start,
                    end: self.pos,
                    kind: Kind::Other,
                })
            }
            Some(_) => {
                while self.pos < self.bytes.len()
                    && !matches!(self.bytes[self.pos], b',' | b'}' | b']' | b'/')
                    && !self.bytes[self.pos].is_ascii_whitespace()
                {
                    self.pos += 1;
                }
                let word = &self.text[start..self.pos];
                if word.is_empty() {
                    return Err(self.error("a value expected"));
                }
                serde_json::from_str::<Value>(word).map_err(|_| {
                    self.error(&format!("{} is not a JSON value", coral::echo(word)))
                })?;
                Ok(Node {
                    start,
                    end: self.pos,
                    kind: Kind::Other,
                })
            }
            None => Err(self.error("the file ends where a value was expected")),
        }
    }

    /// After an object member or array element: a ',' (a trailing one before `close` only in
    /// JSONC) or `close`.
    fn after_item(&mut self, close: u8) -> Result<(), String> {
        self.skip()?;
        match self.bytes.get(self.pos) {
            Some(b',') => {
                self.pos += 1;
                self.skip()?;
                if self.bytes.get(self.pos) == Some(&close) && !self.comments {
                    return Err(
                        self.error("a trailing comma, which this client's JSON does not allow")
                    );
                }
                Ok(())
            }
            Some(c) if *c == close => Ok(()),
            _ => Err(self.error(&format!("a ',' or '{}' expected", close as char))),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let start = self.pos;
        self.pos += 1;
        while self.pos < self.bytes.len() {
            match self.bytes[self.pos] {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return serde_json::from_str::<String>(&self.text[start..self.pos])
                        .map_err(|e| self.error(&format!("a bad string ({e})")));
                }
                _ => self.pos += 1,
            }
        }
        Err(self.error("an unclosed string"))
    }
}

impl Document {
    /// Parse `text` (an empty file is an empty object); `comments`: JSONC.
    pub fn parse(text: &str, comments: bool) -> Result<Document, String> {
        let text = if text.trim().is_empty() {
            "{}\n".to_string()
        } else {
            text.to_string()
        };
        let mut p = Parser {
            text: &text,
            bytes: text.as_bytes(),
            pos: 0,
            comments,
        };
        let root = p.value(0)?;
        p.skip()?;
        if p.pos != text.len() {
            return Err(p.error("more text after the top-level value"));
        }
        if !matches!(root.kind, Kind::Object(_)) {
            return Err("the top level is not a JSON object".into());
        }
        let root = check_duplicates(root)?;
        Ok(Document { text, root })
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn node(&self, path: &[&str]) -> Option<&Node> {
        let mut node = &self.root;
        for key in path {
            let Kind::Object(members) = &node.kind else {
                return None;
            };
            node = &members.iter().find(|m| m.key == *key)?.value;
        }
        Some(node)
    }

    /// The value at `path` (object keys from the top), parsed.
    pub fn get(&self, path: &[&str]) -> Option<Value> {
        let node = self.node(path)?;
        let text = &self.text[node.start..node.end];
        // Comments inside a value: read it through the JSONC reader of one value.
        serde_json::from_str(text)
            .ok()
            .or_else(|| strip_comments(text).and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// The document with `value` at `path`: the old value's text replaced, or a new member
    /// added to the deepest object on the path that exists (with the missing objects around
    /// it). Fails when something on the path is not an object.
    pub fn set(&self, path: &[&str], value: &Value) -> Result<Document, String> {
        let comments = true;
        if let Some(node) = self.node(path) {
            let indent = line_indent(&self.text, node.start);
            let rendered = render(value, &indent);
            let text = splice(&self.text, node.start, node.end, &rendered);
            return Document::parse(&text, comments);
        }
        // The deepest existing object.
        let mut depth = 0;
        let mut node = &self.root;
        while depth < path.len() {
            let Kind::Object(members) = &node.kind else {
                return Err(format!("{} is not an object", path[..depth].join(".")));
            };
            match members.iter().find(|m| m.key == path[depth]) {
                Some(m) => {
                    node = &m.value;
                    depth += 1;
                }
                None => break,
            }
        }
        let Kind::Object(members) = &node.kind else {
            return Err(format!("{} is not an object", path[..depth].join(".")));
        };
        let mut inner = value.clone();
        for key in path[depth + 1..].iter().rev() {
            inner = serde_json::json!({ *key: inner });
        }
        let key = serde_json::to_string(path[depth]).unwrap_or_default();
        let outer = line_indent(&self.text, node.start);
        let indent = match members.first() {
            Some(m) => line_indent(&self.text, m.key_start),
            None => format!("{outer}  "),
        };
        let member = format!("{key}: {}", render(&inner, &indent));
        // Before the closing brace: after the last member (and its comma, if it has one).
        let close = node.end - 1;
        let text = match members.last() {
            Some(last) => {
                let after = last.value.end;
                let between = &self.text[after..close];
                match between.find(',') {
                    // A trailing comma already there (JSONC): the new member goes after it.
                    Some(comma) => splice(
                        &self.text,
                        after + comma + 1,
                        after + comma + 1,
                        &format!("\n{indent}{member},"),
                    ),
                    None => splice(&self.text, after, after, &format!(",\n{indent}{member}")),
                }
            }
            None => splice(
                &self.text,
                node.start + 1,
                close,
                &format!("\n{indent}{member}\n{outer}"),
            ),
        };
        Document::parse(&text, comments)
    }

    /// The document without the member at `path` (and its comma); `None` when there is none.
    pub fn remove(&self, path: &[&str]) -> Result<Option<Document>, String> {
        let Some((last, parent_path)) = path.split_last() else {
            return Ok(None);
        };
        let Some(parent) = self.node(parent_path) else {
            return Ok(None);
        };
        let Kind::Object(members) = &parent.kind else {
            return Ok(None);
        };
        let Some(i) = members.iter().position(|m| m.key == *last) else {
            return Ok(None);
        };
        let m = &members[i];
        // From the end of the previous member (or the brace) to the end of this one: its
        // comma goes with it when it has a neighbour before; else the comma after it.
        let (start, end) = if i > 0 {
            (members[i - 1].value.end, m.value.end)
        } else {
            let start = parent.start + 1;
            match members.get(1) {
                Some(next) => (
                    start,
                    next.key_start - leading_space(&self.text, next.key_start),
                ),
                None => {
                    let end = match self.text[m.value.end..parent.end - 1].find(',') {
                        Some(c) => m.value.end + c + 1,
                        None => m.value.end,
                    };
                    (start, end)
                }
            }
        };
        let text = splice(&self.text, start, end, "");
        Document::parse(&text, true).map(Some)
    }
}

/// Reject an object with the same key twice on the path Coral edits: which one a client reads
/// is unspecified, so neither may be chosen silently.
fn check_duplicates(root: Node) -> Result<Node, String> {
    fn walk(node: &Node, path: &mut Vec<String>) -> Result<(), String> {
        if let Kind::Object(members) = &node.kind {
            for (i, m) in members.iter().enumerate() {
                if members[..i].iter().any(|o| o.key == m.key) {
                    path.push(m.key.clone());
                    return Err(format!(
                        "the key {} appears twice; remove one of them by hand first",
                        path.join(".")
                    ));
                }
                path.push(m.key.clone());
                walk(&m.value, path)?;
                path.pop();
            }
        }
        Ok(())
    }
    walk(&root, &mut Vec::new())?;
    Ok(root)
}

/// `text` with `start..end` replaced.
fn splice(text: &str, start: usize, end: usize, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..start]);
    out.push_str(with);
    out.push_str(&text[end..]);
    out
}

/// The whitespace that starts the line `pos` is on.
fn line_indent(text: &str, pos: usize) -> String {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// Spaces and newlines right before `pos`.
fn leading_space(text: &str, pos: usize) -> usize {
    text[..pos].len() - text[..pos].trim_end().len()
}

/// `value` as pretty JSON whose continuation lines start with `indent`.
fn render(value: &Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    pretty.replace('\n', &format!("\n{indent}"))
}

/// One value's JSONC text as strict JSON: comments and trailing commas dropped (for reading
/// a value written with them inside).
fn strip_comments(text: &str) -> Option<String> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        comments: true,
    };
    let mut out = String::with_capacity(text.len());
    while p.pos < text.len() {
        match p.bytes[p.pos] {
            b'"' => {
                let start = p.pos;
                p.string().ok()?;
                out.push_str(&text[start..p.pos]);
            }
            b'/' => p.skip().ok()?,
            b',' => {
                p.pos += 1;
                let mut ahead = Parser { pos: p.pos, ..p };
                ahead.skip().ok()?;
                if !matches!(ahead.bytes.get(ahead.pos), Some(b'}' | b']')) {
                    out.push(',');
                }
            }
            _ => {
                let c = text[p.pos..].chars().next()?;
                out.push(c);
                p.pos += c.len_utf8();
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn setting_a_value_keeps_every_other_byte() {
        let text = "{\n  // my servers\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}, // keep\n  },\n  \"theme\": \"dark\"\n}\n";
        let doc = Document::parse(text, true).unwrap();
        let entry = json!({"command": "/bin/coral", "args": ["mcp"]});
        let doc = doc.set(&["mcpServers", "coral"], &entry).unwrap();
        let out = doc.text();
        assert!(
            out.contains("// my servers") && out.contains("// keep"),
            "{out}"
        );
        assert!(out.contains("\"theme\": \"dark\""));
        assert_eq!(doc.get(&["mcpServers", "coral"]), Some(entry.clone()));
        assert_eq!(
            doc.get(&["mcpServers", "other", "command"]),
            Some(json!("x"))
        );
        // Setting it again replaces it in place.
        let again = doc.set(&["mcpServers", "coral"], &entry).unwrap();
        assert_eq!(again.text(), out);
        // Removing it gives back the file as it was, but for the comma the edit moved.
        let removed = again.remove(&["mcpServers", "coral"]).unwrap().unwrap();
        assert_eq!(removed.get(&["mcpServers", "coral"]), None);
        assert!(removed.text().contains("// keep"));
        assert_eq!(
            removed.get(&["mcpServers", "other", "command"]),
            Some(json!("x"))
        );
    }

    #[test]
    fn missing_objects_are_created_and_empty_files_are_empty_objects() {
        let doc = Document::parse("", false).unwrap();
        let doc = doc.set(&["hooks", "Stop"], &json!([1])).unwrap();
        let back: Value = serde_json::from_str(doc.text()).unwrap();
        assert_eq!(back, json!({"hooks": {"Stop": [1]}}));
        let doc = Document::parse("{\"a\": 1}", false).unwrap();
        let doc = doc.set(&["b"], &json!(2)).unwrap();
        let back: Value = serde_json::from_str(doc.text()).unwrap();
        assert_eq!(back, json!({"a": 1, "b": 2}));
        let doc = doc.remove(&["a"]).unwrap().unwrap();
        let back: Value = serde_json::from_str(doc.text()).unwrap();
        assert_eq!(back, json!({"b": 2}));
        let doc = doc.remove(&["b"]).unwrap().unwrap();
        let back: Value = serde_json::from_str(doc.text()).unwrap();
        assert_eq!(back, json!({}));
        assert!(doc.remove(&["b"]).unwrap().is_none());
    }

    #[test]
    fn strict_files_refuse_comments_and_everything_refuses_bad_json_and_twin_keys() {
        for (text, comments, needle) in [
            ("{// x\n}", false, "comment"),
            ("{\"a\": 1,}", false, "trailing comma"),
            ("{\"a\": }", true, "expected"),
            ("[1]", true, "not a JSON object"),
            ("{\"a\": 1} x", true, "more text"),
            (
                "{\"s\": {\"coral\": 1, \"coral\": 2}}",
                true,
                "s.coral appears twice",
            ),
            ("{\"a\": tru}", true, "not a JSON value"),
        ] {
            let err = Document::parse(text, comments).err().unwrap_or_default();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let doc = Document::parse("{\"a\": 5}", false).unwrap();
        assert!(
            doc.set(&["a", "b"], &json!(1))
                .unwrap_err()
                .contains("not an object")
        );
    }
}

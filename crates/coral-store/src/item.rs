//! A memory item exactly as the compatible files hold it, and the tiers it lives in.

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// One memory. Serialises with the original's keys in the original's order; keys this version
/// does not know are kept in `extra` and written back after the known ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// First 16 hex chars of the MD5 of the content.
    pub item_id: String,
    /// The memory text.
    pub content: String,
    /// Creation time, Unix seconds.
    pub timestamp: f64,
    /// Last dedup merge or search hit, Unix seconds.
    pub last_access: f64,
    /// `floor(utf8_len / 3.8)`.
    pub token_count: u64,
    /// Accesses so far, 1 at insert.
    pub access_count: u64,
    /// Importance in 0..1.
    pub importance: f64,
    /// Optional project tag.
    pub project: Option<String>,
    /// Keys written by other versions, preserved on rewrite.
    pub extra: Map<String, Value>,
}

/// The tier an item lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Newest items, persisted by Coral in `coral_hot.json`.
    Hot,
    /// `coral_warm.json`.
    Warm,
    /// `coral_cold.jsonl`.
    Cold,
}

impl Tier {
    /// All tiers, hottest first.
    pub const ALL: [Tier; 3] = [Tier::Hot, Tier::Warm, Tier::Cold];

    /// Position in [`Tier::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The lower-case name used in files and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Item {
    /// A new memory as an insert makes it: created and last accessed at `at`, accessed once, no
    /// project, no other keys. The caller derives `item_id` and `token_count` from the content
    /// (the store does not tokenise); set `project` or another counter with struct update
    /// syntax.
    ///
    /// ```
    /// use coral_store::Item;
    ///
    /// let item = Item {
    ///     project: Some("coral".into()),
    ///     ..Item::new("5e0f7c4b2a1d9e3f", "likes iced lattes", 4, 1_775_822_400.0, 0.8)
    /// };
    /// assert_eq!((item.access_count, item.last_access), (1, item.timestamp));
    /// ```
    pub fn new(
        item_id: impl Into<String>,
        content: impl Into<String>,
        token_count: u64,
        at: f64,
        importance: f64,
    ) -> Item {
        Item {
            item_id: item_id.into(),
            content: content.into(),
            timestamp: at,
            last_access: at,
            token_count,
            access_count: 1,
            importance,
            project: None,
            extra: Map::new(),
        }
    }

    /// Merge another copy of the same item into this one, as the original's duplicate cold lines
    /// are merged on load: highest access count, latest access, highest importance.
    pub fn merge_duplicate(&mut self, other: &Item) {
        self.access_count = self.access_count.max(other.access_count);
        self.last_access = self.last_access.max(other.last_access);
        self.importance = self.importance.max(other.importance);
        for (k, v) in &other.extra {
            self.extra.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if self.project.is_none() {
            self.project.clone_from(&other.project);
        }
    }

    /// Checks the invariants every stored item keeps.
    pub fn validate(&self) -> Result<(), String> {
        if self.item_id.is_empty() {
            return Err("item_id is empty".into());
        }
        if self.project.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(format!(
                "item {} has an empty project name (leave it out instead)",
                self.item_id
            ));
        }
        if self.content.trim().is_empty() {
            return Err(format!("item {} has empty content", self.item_id));
        }
        for (name, v) in [
            ("timestamp", self.timestamp),
            ("last_access", self.last_access),
            ("importance", self.importance),
        ] {
            if !v.is_finite() {
                return Err(format!("item {} has non-finite {name} {v}", self.item_id));
            }
        }
        if !(0.0..=1.0).contains(&self.importance) {
            return Err(format!(
                "item {} has importance {} outside 0..1",
                self.item_id, self.importance
            ));
        }
        Ok(())
    }
}

const KNOWN: [&str; 8] = [
    "item_id",
    "content",
    "timestamp",
    "last_access",
    "token_count",
    "access_count",
    "importance",
    "project",
];

impl Serialize for Item {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = 7 + usize::from(self.project.is_some()) + self.extra.len();
        let mut m = s.serialize_map(Some(len))?;
        m.serialize_entry("item_id", &self.item_id)?;
        m.serialize_entry("content", &self.content)?;
        m.serialize_entry("timestamp", &self.timestamp)?;
        m.serialize_entry("last_access", &self.last_access)?;
        m.serialize_entry("token_count", &self.token_count)?;
        m.serialize_entry("access_count", &self.access_count)?;
        m.serialize_entry("importance", &self.importance)?;
        if let Some(p) = &self.project {
            m.serialize_entry("project", p)?;
        }
        for (k, v) in &self.extra {
            if !KNOWN.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

/// An item as the original's data files hold it: its seven keys in its order, nothing else
/// (the original refuses an entry with any other key). Coral's own keys go to
/// `coral_item_meta.json` ([`Item::coral_only`]).
pub struct OriginalKeys<'a>(pub &'a Item);

impl Serialize for OriginalKeys<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let item = self.0;
        let mut m = s.serialize_map(Some(7))?;
        m.serialize_entry("item_id", &item.item_id)?;
        m.serialize_entry("content", &item.content)?;
        m.serialize_entry("timestamp", &item.timestamp)?;
        m.serialize_entry("last_access", &item.last_access)?;
        m.serialize_entry("token_count", &item.token_count)?;
        m.serialize_entry("access_count", &item.access_count)?;
        m.serialize_entry("importance", &item.importance)?;
        m.end()
    }
}

impl Item {
    /// What this item holds beyond the original's seven keys: `project` and unknown keys.
    pub fn coral_only(&self) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(p) = &self.project {
            out.insert("project".into(), Value::String(p.clone()));
        }
        for (k, v) in &self.extra {
            if !KNOWN.contains(&k.as_str()) {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }

    /// Whether [`Item::coral_only`] would give anything (without building it).
    pub fn has_coral_only(&self) -> bool {
        self.project.is_some() || self.extra.keys().any(|k| !KNOWN.contains(&k.as_str()))
    }

    /// Take back what [`Item::coral_only`] gave, where this item does not say otherwise.
    pub fn absorb_coral_only(&mut self, attrs: &Map<String, Value>) {
        for (k, v) in attrs {
            if k == "project" {
                if self.project.is_none() {
                    self.project = v
                        .as_str()
                        .filter(|p| !p.trim().is_empty())
                        .map(String::from);
                }
            } else if !KNOWN.contains(&k.as_str()) {
                self.extra.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
}

/// A JSON number that may have been written as an integer or a float.
fn as_u64(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ItemVisitor;
        impl<'de> Visitor<'de> for ItemVisitor {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a memory item object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
                let mut item_id: Option<String> = None;
                let mut content: Option<String> = None;
                let mut timestamp: Option<f64> = None;
                let mut last_access: Option<f64> = None;
                let mut token_count: Option<u64> = None;
                let mut access_count: Option<u64> = None;
                let mut importance: Option<f64> = None;
                let mut project: Option<String> = None;
                let mut extra = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "item_id" => item_id = Some(map.next_value()?),
                        "content" => content = Some(map.next_value()?),
                        "timestamp" => timestamp = Some(map.next_value()?),
                        "last_access" => last_access = map.next_value()?,
                        "token_count" => {
                            let v: Value = map.next_value()?;
                            token_count = Some(as_u64(&v).ok_or_else(|| {
                                de::Error::custom(format!("token_count {v} is not a count"))
                            })?);
                        }
                        "access_count" => {
                            let v: Value = map.next_value()?;
                            access_count = Some(as_u64(&v).ok_or_else(|| {
                                de::Error::custom(format!("access_count {v} is not a count"))
                            })?);
                        }
                        "importance" => importance = map.next_value()?,
                        "project" => project = map.next_value()?,
                        _ => {
                            let v: Value = map.next_value()?;
                            extra.insert(key, v);
                        }
                    }
                }
                let item_id = item_id.ok_or_else(|| de::Error::missing_field("item_id"))?;
                let content = content.ok_or_else(|| de::Error::missing_field("content"))?;
                let timestamp = timestamp.ok_or_else(|| de::Error::missing_field("timestamp"))?;
                // A key the entry lacks takes the original's dataclass default (`MemoryItem`:
                // `access_count = 0`, `importance = 0.0`), so heat and eviction order are the
                // ones the original computes for the same file.
                Ok(Item {
                    token_count: token_count
                        .unwrap_or_else(|| (content.len() as f64 / 3.8).floor() as u64),
                    item_id,
                    content,
                    timestamp,
                    last_access: last_access.unwrap_or(timestamp),
                    access_count: access_count.unwrap_or(0),
                    importance: importance.unwrap_or(0.0),
                    project: project.filter(|p| !p.is_empty()),
                    extra,
                })
            }
        }
        d.deserialize_map(ItemVisitor)
    }
}

/// serde_json formatter with Python's default separators (`", "` and `": "`), so that single-line
/// files (`coral_cold.jsonl`, `coral_vector_index.json`) look exactly like the original's.
#[derive(Clone, Copy, Debug, Default)]
pub struct PythonCompact;

impl serde_json::ser::Formatter for PythonCompact {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// Serialise `value` on one line with Python's separators.
pub fn to_python_line<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    let mut ser = serde_json::Serializer::with_formatter(out, PythonCompact);
    // Serialising our own types into a Vec cannot fail: no I/O, string keys only.
    value
        .serialize(&mut ser)
        .expect("serialising to memory cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_order_and_unknown_keys() {
        let line = r#"{"item_id": "abc", "content": "咖啡", "timestamp": 1.5, "last_access": 2.0, "token_count": 1, "access_count": 3, "importance": 0.5, "zz_custom": [1, 2]}"#;
        let item: Item = serde_json::from_str(line).unwrap();
        assert_eq!(item.extra["zz_custom"], serde_json::json!([1, 2]));
        let mut out = Vec::new();
        to_python_line(&item, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), line);
    }

    #[test]
    fn integers_and_missing_optional_keys_are_accepted() {
        let item: Item = serde_json::from_str(
            r#"{"item_id":"a","content":"hello","timestamp":100,"access_count":2.0}"#,
        )
        .unwrap();
        assert_eq!(item.last_access, 100.0);
        assert_eq!(item.access_count, 2);
        assert_eq!(item.token_count, 1);
        assert_eq!(item.importance, 0.0);
        assert!(serde_json::from_str::<Item>(r#"{"content":"x","timestamp":1}"#).is_err());
        assert!(
            serde_json::from_str::<Item>(
                r#"{"item_id":"a","content":"x","timestamp":1,"access_count":-1}"#
            )
            .is_err()
        );
    }

    /// Each counter the entry leaves out takes the original's default (its `MemoryItem`
    /// dataclass: `access_count: int = 0`, `importance: float = 0.0`), each one given is kept.
    #[test]
    fn missing_counters_take_the_original_defaults() {
        let check = |keys: &str, access_count: u64, importance: f64| {
            let line = format!(r#"{{"item_id":"a","content":"x","timestamp":1{keys}}}"#);
            let item: Item = serde_json::from_str(&line).unwrap();
            assert_eq!(
                (item.access_count, item.importance),
                (access_count, importance),
                "{line}"
            );
        };
        check("", 0, 0.0);
        check(r#","importance":0.7"#, 0, 0.7);
        check(r#","access_count":3"#, 3, 0.0);
        check(r#","access_count":1,"importance":0.5"#, 1, 0.5);
    }

    #[test]
    fn duplicate_merge_takes_the_maxima() {
        let mut a: Item = serde_json::from_str(
            r#"{"item_id":"a","content":"x","timestamp":1,"last_access":5,"access_count":2,"importance":0.2}"#,
        )
        .unwrap();
        let b: Item = serde_json::from_str(
            r#"{"item_id":"a","content":"x","timestamp":1,"last_access":3,"access_count":7,"importance":0.9}"#,
        )
        .unwrap();
        a.merge_duplicate(&b);
        assert_eq!((a.access_count, a.last_access, a.importance), (7, 5.0, 0.9));
    }
}

//! `coral_item_meta.json`: what Coral knows about its memories that the original's files have
//! no place for — which warm-file entries are in the hot tier, project tags, other keys — so
//! that `coral_warm.json` and `coral_cold.jsonl` hold only the original's seven keys and the
//! original Coral reads every memory of a directory Coral wrote (see `docs/storage.md`).
//!
//! The file is derived at each checkpoint from the pool; a missing file means "nothing beyond
//! the original's keys" (a directory the original wrote). Entries for ids no longer in the data
//! files are ignored, so the original rewriting its files never makes this one wrong, only
//! partly unused.

use std::collections::{HashMap, HashSet};

use coral_base::IoContext;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::item::{Item, Tier};

/// The version this code writes and reads.
const VERSION: u64 = 1;

/// The sidecar's content.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ItemMeta {
    /// Ids of the warm-file entries that are in the hot tier.
    pub hot: HashSet<String>,
    /// Per id: `project` and any keys beyond the original's seven.
    pub attrs: HashMap<String, Map<String, Value>>,
}

impl ItemMeta {
    /// The sidecar for these tiered items.
    pub fn of<'a>(items: impl Iterator<Item = (Tier, &'a Item)>) -> ItemMeta {
        let mut meta = ItemMeta::default();
        for (tier, item) in items {
            if tier == Tier::Hot {
                meta.hot.insert(item.item_id.clone());
            }
            let attrs = item.coral_only();
            if !attrs.is_empty() {
                meta.attrs.insert(item.item_id.clone(), attrs);
            }
        }
        meta
    }

    /// Give `item` (read from the original's keys) back what Coral kept here for it.
    pub fn restore(&self, item: &mut Item) {
        if let Some(attrs) = self.attrs.get(&item.item_id) {
            item.absorb_coral_only(attrs);
        }
    }

    /// The file's bytes: ids sorted, so the same pool gives the same file.
    pub fn encode(&self) -> Vec<u8> {
        let mut hot: Vec<&String> = self.hot.iter().collect();
        hot.sort();
        let mut ids: Vec<&String> = self.attrs.keys().collect();
        ids.sort();
        let items: Map<String, Value> = ids
            .into_iter()
            .map(|id| (id.clone(), Value::Object(self.attrs[id].clone())))
            .collect();
        let value = json!({"version": VERSION, "hot": hot, "items": items});
        serde_json::to_vec_pretty(&value).unwrap_or_default()
    }

    /// Writes the sidecar of these tiered items to `w`: the bytes of
    /// `ItemMeta::of(items).encode()`, without building the sidecar or a JSON tree of it (at a
    /// million memories with projects those held about 1.6 GB at the checkpoint's peak);
    /// each item's attributes exist only while it is written.
    pub fn write_of<'a>(
        w: &mut dyn std::io::Write,
        items: impl Iterator<Item = (Tier, &'a Item)>,
    ) -> std::io::Result<()> {
        let mut hot: Vec<&str> = Vec::new();
        let mut tagged: Vec<&Item> = Vec::new();
        for (tier, item) in items {
            if tier == Tier::Hot {
                hot.push(&item.item_id);
            }
            if item.has_coral_only() {
                tagged.push(item);
            }
        }
        hot.sort_unstable();
        tagged.sort_unstable_by(|a, b| a.item_id.cmp(&b.item_id));
        let out = Sidecar {
            hot: &hot,
            items: &tagged,
        };
        serde_json::to_writer_pretty(w, &out).map_err(std::io::Error::other)
    }

    /// Parse the file's bytes; anything else than what [`ItemMeta::encode`] writes is an error
    /// naming what is wrong.
    pub fn decode(bytes: &[u8]) -> std::result::Result<ItemMeta, String> {
        // The shape `encode` and `write_of` write, parsed straight into the maps: building the
        // JSON tree of a million tagged items first and moving them out of it was most of the
        // sidecar's share of a reopen. Anything else takes the tree path below, which names
        // what is wrong.
        if let Ok(file) = serde_json::from_slice::<Shape>(bytes)
            && file.version == VERSION
        {
            return Ok(ItemMeta {
                hot: file.hot,
                attrs: file.items,
            });
        }
        ItemMeta::decode_tree(bytes)
    }

    /// [`ItemMeta::decode`] through a JSON tree: slower, but names what is wrong.
    fn decode_tree(bytes: &[u8]) -> std::result::Result<ItemMeta, String> {
        let mut value: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("not JSON ({e})"))?;
        match value.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            Some(v) => return Err(format!("version {v}, this Coral reads version {VERSION}")),
            None => return Err("no \"version\"".into()),
        }
        let hot = match value.get("hot") {
            Some(Value::Array(ids)) => ids
                .iter()
                .map(|id| {
                    id.as_str()
                        .map(String::from)
                        .ok_or_else(|| format!("\"hot\" holds {id}, not an id"))
                })
                .collect::<std::result::Result<HashSet<_>, _>>()?,
            _ => return Err("\"hot\" is not a list of ids".into()),
        };
        // Moved out of the parsed tree, not cloned (a million tagged items at reopen).
        let items = value.get_mut("items").map(Value::take);
        let attrs = match items {
            Some(Value::Object(items)) => items
                .into_iter()
                .map(|(id, attrs)| match attrs {
                    Value::Object(m) => Ok((id, m)),
                    other => Err(format!("\"items\".{id} is {other}, not an object")),
                })
                .collect::<std::result::Result<HashMap<_, _>, _>>()?,
            _ => return Err("\"items\" is not an object".into()),
        };
        Ok(ItemMeta { hot, attrs })
    }
}

/// The file as [`ItemMeta::decode`] reads it when it is well formed.
#[derive(serde::Deserialize)]
struct Shape {
    version: u64,
    hot: HashSet<String>,
    items: HashMap<String, Map<String, Value>>,
}

/// The file's shape for [`ItemMeta::write_of`]: the keys in the order `encode` writes them.
struct Sidecar<'a> {
    hot: &'a [&'a str],
    items: &'a [&'a Item],
}

/// The `items` object: per tagged item its Coral-only attributes, made while written.
struct Tagged<'a>(&'a [&'a Item]);

impl serde::Serialize for Sidecar<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("version", &VERSION)?;
        map.serialize_entry("hot", self.hot)?;
        map.serialize_entry("items", &Tagged(self.items))?;
        map.end()
    }
}

impl serde::Serialize for Tagged<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for item in self.0 {
            map.serialize_entry(&item.item_id, &item.coral_only())?;
        }
        map.end()
    }
}

/// Read the sidecar at `path`: `Ok(None)` when it does not exist; an unreadable or damaged one
/// is an error for the caller to report (the memories are intact without it; only hot-tier
/// marks and project tags would be missing).
pub fn read(path: &std::path::Path) -> Result<Option<ItemMeta>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at(path).map_err(Into::into),
    };
    ItemMeta::decode(&bytes)
        .map(Some)
        .map_err(|detail| Error::Corrupted {
            path: path.to_path_buf(),
            line: 0,
            detail,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, project: Option<&str>) -> Item {
        let mut item: Item = serde_json::from_value(json!({
            "item_id": id, "content": "咖啡", "timestamp": 1.0,
        }))
        .unwrap();
        item.project = project.map(String::from);
        item
    }

    #[test]
    fn round_trip() {
        let a = item("a", Some("alpha"));
        let mut b = item("b", None);
        b.extra.insert("zz".into(), json!([1]));
        let c = item("c", None);
        let meta = ItemMeta::of([(Tier::Hot, &a), (Tier::Warm, &b), (Tier::Cold, &c)].into_iter());
        assert_eq!(meta.hot, HashSet::from(["a".to_string()]));
        assert_eq!(
            meta.attrs.len(),
            2,
            "c has nothing beyond the original's keys"
        );
        let back = ItemMeta::decode(&meta.encode()).unwrap();
        assert_eq!(back, meta);
        // The streamed writer gives the same bytes, also when nothing is tagged.
        let d = item("d", None);
        for items in [
            vec![(Tier::Warm, &b), (Tier::Hot, &a), (Tier::Cold, &c)],
            vec![(Tier::Cold, &c), (Tier::Warm, &d)],
            vec![],
        ] {
            let mut streamed = Vec::new();
            ItemMeta::write_of(&mut streamed, items.clone().into_iter()).unwrap();
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                String::from_utf8(ItemMeta::of(items.into_iter()).encode()).unwrap()
            );
        }
        let mut bare = item("a", None);
        back.restore(&mut bare);
        assert_eq!(bare.project.as_deref(), Some("alpha"));
    }

    #[test]
    fn the_direct_parse_reads_what_the_tree_reads() {
        let mut items = Vec::new();
        for i in 0..40 {
            let mut it = item(&format!("{i:016x}"), (i % 3 > 0).then_some("p"));
            if i % 7 == 0 {
                it.extra.insert("k".into(), json!({"n": i, "s": "冰"}));
            }
            items.push(it);
        }
        let tiers = [Tier::Hot, Tier::Warm, Tier::Cold];
        let mut bytes = Vec::new();
        ItemMeta::write_of(
            &mut bytes,
            items.iter().enumerate().map(|(i, it)| (tiers[i % 3], it)),
        )
        .unwrap();
        let direct = ItemMeta::decode(&bytes).unwrap();
        assert_eq!(direct, ItemMeta::decode_tree(&bytes).unwrap());
        assert_eq!(direct.hot.len(), 14);
        assert_eq!(direct.attrs.len(), 28);
        // Extra keys at the top are ignored by both; a duplicated id keeps the last entry in both.
        let odd = br#"{"version": 1, "hot": ["a"], "x": 2, "items": {"a": {"project": "p"}, "a": {"project": "q"}}}"#;
        let direct = ItemMeta::decode(odd).unwrap();
        assert_eq!(direct, ItemMeta::decode_tree(odd).unwrap());
        assert_eq!(direct.attrs["a"]["project"], json!("q"));
    }

    #[test]
    fn damage_is_named() {
        for (bytes, needle) in [
            (&b"{"[..], "not JSON"),
            (br#"{"hot": []}"#, "version"),
            (br#"{"version": 9, "hot": [], "items": {}}"#, "version 9"),
            (br#"{"version": 1, "hot": [1], "items": {}}"#, "not an id"),
            (
                br#"{"version": 1, "hot": [], "items": {"a": 3}}"#,
                "not an object",
            ),
        ] {
            let err = ItemMeta::decode(bytes).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}

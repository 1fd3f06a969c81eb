//! The memory journal's vocabulary: `Record`, one idempotent mutation (a put carries the whole
//! item and its vector as base64 of little-endian f32, a touch absolute counters).

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Result;
use crate::item::{Item, Tier};

/// One journaled mutation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Record {
    /// First line of every journal: the checkpoint generation it continues.
    Begin {
        /// Incremented by every checkpoint.
        generation: u64,
    },
    /// Insert or replace an item with its vector (empty vector = recompute on load).
    Put {
        /// Tier to put it in.
        tier: Tier,
        /// The full item.
        item: Item,
        /// Its embedding, stored as base64 of little-endian f32.
        #[serde(serialize_with = "ser_vector", deserialize_with = "de_vector")]
        vector: Vec<f32>,
    },
    /// Set an item's access counters (absolute values, so replay is idempotent).
    Touch {
        /// Item id.
        id: String,
        /// New access count.
        access_count: u64,
        /// New last access time.
        last_access: f64,
    },
    /// Set an item's importance.
    Importance {
        /// Item id.
        id: String,
        /// New importance in 0..1.
        importance: f64,
    },
    /// Move an item to another tier.
    Move {
        /// Item id.
        id: String,
        /// Destination tier.
        tier: Tier,
    },
    /// Delete an item.
    Delete {
        /// Item id.
        id: String,
    },
    /// Remove an item from the pool into the archive (already written to the archive file).
    Archive {
        /// Item id.
        id: String,
        /// Why: `"evicted"`, `"trimmed"`, `"distilled"`.
        reason: String,
        /// For distillation, the id of the summary that replaced it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary_id: Option<String>,
        /// When, Unix seconds.
        at: f64,
    },
}

impl Record {
    /// The item id the record is about, if any.
    pub fn id(&self) -> Option<&str> {
        match self {
            Record::Begin { .. } => None,
            Record::Put { item, .. } => Some(&item.item_id),
            Record::Touch { id, .. }
            | Record::Importance { id, .. }
            | Record::Move { id, .. }
            | Record::Delete { id }
            | Record::Archive { id, .. } => Some(id),
        }
    }
}

fn ser_vector<S: Serializer>(v: &[f32], s: S) -> Result<S::Ok, S::Error> {
    let mut bytes = Vec::with_capacity(v.len() * 4);
    for x in v {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn de_vector<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
    let text = String::deserialize(d)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(serde::de::Error::custom)?;
    if bytes.len() % 4 != 0 {
        return Err(serde::de::Error::custom(
            "vector bytes are not a multiple of 4",
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

//! The retrieval index of one hard key in memory: what it keeps of each entry and summary, its
//! BM25 postings and cached vectors, kept up to date by reading only rows added since.
//!
//! Entries and summaries are only rewritten or removed by forgetting, so each refresh reads the
//! rows past the last primary keys it saw (written by any process), and starts over when the
//! hard key's record of forgetting moved. Vectors live in the `vectors` table, tagged
//! with the embedder's model id; the ones of the current model are loaded once.

use std::collections::HashMap;

use coral_score::{Bm25Index, search_terms};
use rusqlite::{Transaction, params};

use crate::entry::Origin;
use crate::error::{Result, unknown_value};
use crate::layers::SummaryLayer;

/// Characters of an entry's text that are indexed and embedded.
const INDEXED_CHARS: i64 = 32_768;
const EMBEDDED_CHARS: usize = 2_000;

/// What an indexed document is: a raw entry, an episodic summary or a semantic memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layer {
    Raw,
    Episodic,
    Semantic,
}

impl Layer {
    /// The name retrieval shows and takes (`raw`, `summary`, `semantic_summary`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Layer::Raw => "raw",
            Layer::Episodic => "summary",
            Layer::Semantic => "semantic_summary",
        }
    }

    /// A `source_layers` name (`episodic` and `semantic` are accepted too).
    pub(crate) fn parse(s: &str) -> Result<Layer, String> {
        match s {
            "raw" => Ok(Layer::Raw),
            "summary" | "episodic" => Ok(Layer::Episodic),
            "semantic_summary" | "semantic" => Ok(Layer::Semantic),
            other => Err(format!(
                "source layer {other:?} is not raw, summary or semantic_summary"
            )),
        }
    }
}

/// What the index keeps of an entry or a summary.
#[derive(Clone, Debug)]
pub(crate) struct Doc {
    pub layer: Layer,
    pub id: String,
    pub conversation_id: String,
    pub kind: String,
    /// Raw: its time; summaries: the period.
    pub start: f64,
    pub end: f64,
    pub unit_seq: i64,
    pub facet: Option<String>,
    /// Raw entries: who produced it; summaries have none.
    pub origin: Option<Origin>,
    /// What is embedded.
    pub embed_text: String,
}

/// The index of one hard key.
#[derive(Default)]
pub(crate) struct HardKeyIndex {
    /// Documents by number (the BM25 id), in the order they were written.
    pub docs: Vec<Doc>,
    by_id: HashMap<String, u32>,
    pub bm25: Bm25Index,
    last_entry_pk: i64,
    last_summary_pk: i64,
    /// Model id whose stored vectors are loaded.
    model: Option<String>,
    /// Vectors of [`HardKeyIndex::model`] by document number.
    pub vectors: HashMap<u32, Vec<f32>>,
    /// The last forgetting of this hard key the index has seen (`forgotten.forget_pk`).
    forgets: i64,
}

impl HardKeyIndex {
    fn push(&mut self, doc: Doc, terms: Vec<String>) {
        let n = self.docs.len() as u32;
        self.by_id.insert(doc.id.clone(), n);
        self.bm25.insert(n, terms);
        self.docs.push(doc);
    }

    /// Read the rows added since the last call; after a forgetting, every row again (what it
    /// removed must not stay findable from memory).
    pub(crate) fn refresh(&mut self, tx: &Transaction<'_>, hk: &str) -> Result<()> {
        let forgets: i64 = tx
            .prepare_cached(
                "SELECT COALESCE(max(forget_pk), 0) FROM forgotten WHERE hard_key = ?1",
            )?
            .query_row(params![hk], |r| r.get(0))?;
        if forgets != self.forgets {
            *self = HardKeyIndex {
                forgets,
                ..HardKeyIndex::default()
            };
        }
        let mut stmt = tx.prepare_cached(
            "SELECT entry_pk, conversation_id, source_id, kind, unit_seq, ts, tool_name, \
             substr(text, 1, ?3), origin FROM entries WHERE hard_key = ?1 AND entry_pk > ?2 \
             AND NOT EXISTS (SELECT 1 FROM forgotten_entries f WHERE f.hard_key = ?1 \
             AND f.source_id = entries.source_id) ORDER BY entry_pk",
        )?;
        let mut rows = stmt.query(params![hk, self.last_entry_pk, INDEXED_CHARS])?;
        while let Some(r) = rows.next()? {
            let pk: i64 = r.get(0)?;
            let tool: Option<String> = r.get(6)?;
            let text: String = r.get(7)?;
            let mut terms = search_terms(&text);
            if let Some(tool) = &tool {
                terms.extend(search_terms(tool));
            }
            let ts: f64 = r.get(5)?;
            let id: String = r.get(2)?;
            let stored: String = r.get(8)?;
            let origin = Origin::parse(&stored)
                .map_err(|_| unknown_value(8, format!("entry {id:?} origin"), stored))?;
            self.push(
                Doc {
                    layer: Layer::Raw,
                    id,
                    conversation_id: r.get(1)?,
                    kind: r.get(3)?,
                    start: ts,
                    end: ts,
                    unit_seq: r.get(4)?,
                    facet: None,
                    origin: Some(origin),
                    embed_text: text.chars().take(EMBEDDED_CHARS).collect(),
                },
                terms,
            );
            self.last_entry_pk = pk;
        }
        let mut stmt = tx.prepare_cached(
            "SELECT summary_pk, conversation_id, summary_id, layer, title, hint, body, facet, \
             entity_anchors, topic_terms, period_start, period_end FROM summaries \
             WHERE hard_key = ?1 AND summary_pk > ?2 ORDER BY summary_pk",
        )?;
        let mut rows = stmt.query(params![hk, self.last_summary_pk])?;
        while let Some(r) = rows.next()? {
            let pk: i64 = r.get(0)?;
            let id: String = r.get(2)?;
            let stored: String = r.get(3)?;
            let layer = SummaryLayer::parse(&stored)
                .ok_or_else(|| unknown_value(3, format!("summary {id:?} layer"), stored))?;
            let (title, hint, body): (String, String, String) = (r.get(4)?, r.get(5)?, r.get(6)?);
            let anchors: Vec<String> =
                serde_json::from_str(&r.get::<_, String>(8)?).unwrap_or_default();
            let topics: Vec<String> =
                serde_json::from_str(&r.get::<_, String>(9)?).unwrap_or_default();
            let mut terms = search_terms(&title);
            terms.extend(search_terms(&body));
            terms.extend(search_terms(&hint));
            for t in anchors.iter().chain(&topics) {
                terms.extend(search_terms(t));
            }
            let (layer, kind) = match layer {
                SummaryLayer::Semantic => (Layer::Semantic, "memory.semantic"),
                SummaryLayer::Episodic => (Layer::Episodic, "memory.episodic"),
            };
            self.push(
                Doc {
                    layer,
                    id,
                    conversation_id: r.get(1)?,
                    kind: kind.into(),
                    start: r.get(10)?,
                    end: r.get(11)?,
                    unit_seq: -1,
                    facet: r.get(7)?,
                    origin: None,
                    embed_text: format!("{title}\n{body}")
                        .chars()
                        .take(EMBEDDED_CHARS)
                        .collect(),
                },
                terms,
            );
            self.last_summary_pk = pk;
        }
        Ok(())
    }

    /// Load the stored vectors of `model` (once per model).
    pub(crate) fn load_vectors(
        &mut self,
        tx: &Transaction<'_>,
        hk: &str,
        model: &str,
    ) -> Result<()> {
        if self.model.as_deref() == Some(model) {
            return Ok(());
        }
        self.vectors.clear();
        let mut stmt = tx.prepare_cached(
            "SELECT item_id, vector FROM vectors WHERE hard_key = ?1 AND model = ?2",
        )?;
        let mut rows = stmt.query(params![hk, model])?;
        while let Some(r) = rows.next()? {
            let id: String = r.get(0)?;
            let blob: Vec<u8> = r.get(1)?;
            if let Some(&doc) = self.by_id.get(&id) {
                self.vectors.insert(doc, decode(&blob));
            }
        }
        self.model = Some(model.to_string());
        Ok(())
    }
}

/// A vector as stored: little-endian `f32`s.
pub(crate) fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

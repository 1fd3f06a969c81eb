//! Receipts (docs/timeline.md, "Receipts", after MemCore's): the small navigation anchor of
//! every read (the tool, its status, the ids it returned, the cursor to go on, how much the
//! policy withheld), which a host stores beside the tool exchange instead of the answer. A
//! receipt is a function of the answer, holds no text of it, and is the same for the same
//! answer.

use serde::Serialize;
use serde_json::Value;

use crate::browse::BrowsePage;
use crate::open_memory::Opened;
use crate::read::{TimelinePage, is_zero};
use crate::reply::{ReadStatus, Reply, with_ok};
use crate::retrieve::Retrieved;

/// Most ids a receipt lists; the rest are counted.
pub const MAX_RECEIPT_IDS: usize = 64;

/// The anchor a host keeps of one read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Receipt {
    /// The read tool.
    pub tool: &'static str,
    /// Its status.
    pub status: ReadStatus,
    /// What it returned, in order: turn ids (or a standalone entry's id) of `read_timeline`,
    /// the memory `open_memory` opened, the hits of `retrieve_for_turn` (a summary by its own
    /// id, not its sources), the cards of `browse_memory`.
    pub ids: Vec<String>,
    /// Ids past [`MAX_RECEIPT_IDS`], not listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub more_ids: usize,
    /// The cursor of the next page, if there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Entries the server's dispatch policy withheld.
    #[serde(skip_serializing_if = "is_zero")]
    pub withheld: usize,
}

/// A read's answer as its receipt sees it.
pub trait Anchors {
    /// The tool's name.
    const TOOL: &'static str;
    /// The ids it returned, in order.
    fn anchor_ids(&self) -> Vec<String>;
    /// The cursor of the next page.
    fn next_cursor(&self) -> Option<&str>;
    /// Entries withheld by the policy.
    fn withheld(&self) -> usize {
        0
    }
}

impl Receipt {
    /// The receipt of `reply`.
    pub fn of<T: Anchors>(reply: &Reply<T>) -> Receipt {
        let mut ids = reply.payload.anchor_ids();
        let more_ids = ids.len().saturating_sub(MAX_RECEIPT_IDS);
        ids.truncate(MAX_RECEIPT_IDS);
        Receipt {
            tool: T::TOOL,
            status: reply.status,
            ids,
            more_ids,
            next_cursor: reply.payload.next_cursor().map(String::from),
            withheld: reply.payload.withheld(),
        }
    }
}

/// JSON of a read's answer for the tools: [`with_ok`] and its `receipt`.
pub fn with_receipt<T: Serialize + Anchors>(reply: &Reply<T>) -> Value {
    let mut v = with_ok(reply, reply.status);
    if let Some(map) = v.as_object_mut() {
        map.insert(
            "receipt".into(),
            serde_json::to_value(Receipt::of(reply)).unwrap_or(Value::Null),
        );
    }
    v
}

impl Anchors for TimelinePage {
    const TOOL: &'static str = "read_timeline";

    fn anchor_ids(&self) -> Vec<String> {
        self.units
            .iter()
            .filter_map(|u| {
                u.turn_id
                    .clone()
                    .or_else(|| u.entries.first().map(|e| e.source_id.clone()))
            })
            .collect()
    }

    fn next_cursor(&self) -> Option<&str> {
        self.next_cursor.as_deref()
    }

    fn withheld(&self) -> usize {
        self.withheld
    }
}

impl Anchors for Opened {
    const TOOL: &'static str = "open_memory";

    fn anchor_ids(&self) -> Vec<String> {
        let memory = self.memory.as_ref().map(|m| m.memory_id.clone());
        let summary = self.summary.as_ref().map(|s| s.summary.memory_id.clone());
        memory.into_iter().chain(summary).collect()
    }

    fn next_cursor(&self) -> Option<&str> {
        self.summary
            .as_ref()
            .and_then(|s| s.sources.as_ref())
            .and_then(|p| p.next_cursor.as_deref())
    }

    fn withheld(&self) -> usize {
        self.summary
            .as_ref()
            .and_then(|s| s.sources.as_ref())
            .map_or(0, |p| {
                p.units
                    .iter()
                    .flat_map(|u| &u.entries)
                    .filter(|e| e.withheld)
                    .count()
            })
    }
}

impl Anchors for Retrieved {
    const TOOL: &'static str = "retrieve_for_turn";

    fn anchor_ids(&self) -> Vec<String> {
        self.hits.iter().map(|h| h.memory_id.clone()).collect()
    }

    fn next_cursor(&self) -> Option<&str> {
        None
    }

    fn withheld(&self) -> usize {
        self.withheld
    }
}

impl Anchors for BrowsePage {
    const TOOL: &'static str = "browse_memory";

    fn anchor_ids(&self) -> Vec<String> {
        self.cards.iter().map(|c| c.memory_id.clone()).collect()
    }

    fn next_cursor(&self) -> Option<&str> {
        self.next_cursor.as_deref()
    }
}

//! What a timeline file holds in all, over every namespace: what `coral migrate` reports as
//! left behind in the data directory (docs/postgres.md, "Migrating").

use serde::Serialize;

use crate::error::Result;
use crate::timeline::Timeline;

/// Rows of the whole file, every hard key and conversation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Turns (open, completed and aborted).
    pub turns: u64,
    /// Entries (messages, tool calls and results).
    pub entries: u64,
    /// Summaries of every layer.
    pub summaries: u64,
}

impl Timeline {
    /// The totals of the whole file, in one read transaction.
    pub fn totals(&self) -> Result<Totals> {
        self.read(|tx| {
            let count = |table: &str| -> Result<u64> {
                let n: i64 =
                    tx.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?;
                Ok(u64::try_from(n).unwrap_or(0))
            };
            Ok(Totals {
                turns: count("turns")?,
                entries: count("entries")?,
                summaries: count("summaries")?,
            })
        })
    }
}

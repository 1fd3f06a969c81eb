//! Tiers and governance in the database (docs/postgres.md, "Tiers and governance"): the
//! database stores, Coral decides. [`Governing`] is one governance pass of one tenant: a
//! transaction that first takes the tenant's advisory lock, so that passes of several
//! processes run one after the other and each plans from what the previous one committed.
//! It reads the heat inputs and moves, archives or removes what the caller's policy chose.

use coral_store::{Item, Tier};
use serde_json::Value;
use tokio_postgres::Row;

use crate::error::{Error, Result};
use crate::memory::{delete_in, stored};
use crate::pool::Tx;
use crate::sql_tiers as sql;

/// One item as governance sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct HeatRow {
    /// The database's key of the item.
    pub key: i64,
    /// Its tier.
    pub tier: Tier,
    /// Its project.
    pub project: Option<String>,
    /// Creation time, Unix seconds.
    pub created: f64,
    /// Last access, Unix seconds.
    pub last_access: f64,
    /// Accesses.
    pub access_count: u64,
    /// Importance, 0..=1.
    pub importance: f64,
    /// The content's length in bytes.
    pub content_bytes: u64,
}

/// One tier's share of a tenant's storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierUsage {
    /// Items.
    pub items: u64,
    /// Their contents' bytes.
    pub content_bytes: u64,
    /// Their project names' bytes, plus 16 for each item that has one.
    pub project_bytes: u64,
}

/// The tenant's storage by tier (hot, warm, cold) and its archive's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Hot, warm, cold.
    pub tiers: [TierUsage; 3],
    /// The archive's entries' bytes.
    pub archive_bytes: u64,
}

/// An item governance removed: its id and the tier it was in.
#[derive(Clone, Debug, PartialEq)]
pub struct Removed {
    /// The item's id.
    pub id: String,
    /// Its tier when it was removed.
    pub tier: Tier,
}

/// One governance pass of one tenant, inside its transaction and under its lock.
pub struct Governing<'t, 'c> {
    pub(crate) tx: &'t mut Tx<'c>,
    pub(crate) tenant: &'t str,
}

pub(crate) fn tier_of(name: &str, what: &str) -> Result<Tier> {
    match name {
        "hot" => Ok(Tier::Hot),
        "warm" => Ok(Tier::Warm),
        "cold" => Ok(Tier::Cold),
        other => Err(Error::Corrupted {
            what: what.to_string(),
            detail: format!("unknown tier {}", coral_base::echo(other)),
        }),
    }
}

fn heat_row(r: &Row) -> Result<HeatRow> {
    let key: i64 = r.get(0);
    Ok(HeatRow {
        key,
        tier: tier_of(r.get(1), &format!("coral_items key {key}"))?,
        project: r.get(2),
        created: r.get(3),
        last_access: r.get(4),
        access_count: u64::try_from(r.get::<_, i64>(5)).unwrap_or(0),
        importance: r.get(6),
        content_bytes: u64::try_from(r.get::<_, i64>(7)).unwrap_or(0),
    })
}

impl Governing<'_, '_> {
    /// The items of `tiers`, by key.
    pub fn rows(&mut self, tiers: &[Tier]) -> Result<Vec<HeatRow>> {
        let names: Vec<&str> = tiers.iter().map(|t| t.as_str()).collect();
        self.tx
            .query(sql::HEAT_OF_TIERS, &[&self.tenant, &names])?
            .iter()
            .map(heat_row)
            .collect()
    }

    /// The items of `project`, by key.
    pub fn project_rows(&mut self, project: &str) -> Result<Vec<HeatRow>> {
        self.tx
            .query(sql::HEAT_OF_PROJECT, &[&self.tenant, &project])?
            .iter()
            .map(heat_row)
            .collect()
    }

    /// How many items the tenant has (its document statistics: 16 rows, not a count).
    pub fn total(&mut self) -> Result<u64> {
        let n: i64 = self
            .tx
            .query_one(crate::sql::DOC_STATS, &[&self.tenant])?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// How many items `project` has.
    pub fn project_count(&mut self, project: &str) -> Result<u64> {
        let n: i64 = self
            .tx
            .query_one(sql::COUNT_PROJECT, &[&self.tenant, &project])?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The tenant's storage by tier, and the archive's bytes.
    pub fn usage(&mut self) -> Result<Usage> {
        let mut usage = Usage::default();
        for r in self.tx.query(sql::USAGE, &[&self.tenant])? {
            let tier = tier_of(r.get(0), "coral_items.tier")?;
            let n = |i: usize| u64::try_from(r.get::<_, i64>(i)).unwrap_or(0);
            usage.tiers[tier.index()] = TierUsage {
                items: n(1),
                content_bytes: n(2),
                project_bytes: n(3),
            };
        }
        let archive: i64 = self
            .tx
            .query_one(sql::ARCHIVE_BYTES, &[&self.tenant])?
            .get(0);
        usage.archive_bytes = u64::try_from(archive).unwrap_or(0);
        Ok(usage)
    }

    /// Moves the items `keys` (and their vectors' copy of the tier) to `tier`; returns how
    /// many moved.
    pub fn move_to(&mut self, keys: &[i64], tier: Tier) -> Result<u64> {
        if keys.is_empty() {
            return Ok(0);
        }
        let name = tier.as_str();
        let moved = self
            .tx
            .execute(sql::MOVE_ITEMS, &[&self.tenant, &keys, &name])?;
        self.tx
            .execute(sql::MOVE_VECTORS, &[&self.tenant, &keys, &name])?;
        Ok(moved)
    }

    /// Moves the items `keys` to the archive for `reason` at `at` (`summary_id`: the
    /// distillation summary that replaced them), with their counters as they are; `bytes`
    /// says what an entry counts against the quota. Items already gone are skipped.
    pub fn archive(
        &mut self,
        keys: &[i64],
        reason: &str,
        summary_id: Option<&str>,
        at: f64,
        bytes: &dyn Fn(&Item) -> u64,
    ) -> Result<Vec<Removed>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.tx.query(sql::LOCK_ITEMS, &[&self.tenant, &keys])?;
        let mut ids = Vec::with_capacity(rows.len());
        let mut tiers = Vec::with_capacity(rows.len());
        let mut items = Vec::with_capacity(rows.len());
        let mut sizes = Vec::with_capacity(rows.len());
        let mut removed = Vec::with_capacity(rows.len());
        for row in &rows {
            let (_, s) = stored(row)?;
            sizes.push(i64::try_from(bytes(&s.item)).unwrap_or(i64::MAX));
            items.push(serde_json::to_value(&s.item).map_err(|e| Error::Corrupted {
                what: format!("coral_items {}", s.item.item_id),
                detail: e.to_string(),
            })?);
            ids.push(s.item.item_id.clone());
            tiers.push(s.tier.as_str());
            removed.push(Removed {
                id: s.item.item_id,
                tier: s.tier,
            });
        }
        delete_in(self.tx, self.tenant, &ids)?;
        self.tx.execute(
            sql::ARCHIVE_PUT,
            &[
                &self.tenant,
                &ids,
                &tiers,
                &items,
                &sizes,
                &reason,
                &summary_id,
                &at,
            ],
        )?;
        Ok(removed)
    }

    /// Deletes the items `keys` (not archived: the disk quota frees their bytes).
    pub fn remove(&mut self, keys: &[i64]) -> Result<Vec<Removed>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.tx.query(sql::LOCK_ITEMS, &[&self.tenant, &keys])?;
        let mut ids = Vec::with_capacity(rows.len());
        let mut removed = Vec::with_capacity(rows.len());
        for row in &rows {
            let (_, s) = stored(row)?;
            ids.push(s.item.item_id.clone());
            removed.push(Removed {
                id: s.item.item_id,
                tier: s.tier,
            });
        }
        delete_in(self.tx, self.tenant, &ids)?;
        Ok(removed)
    }

    /// Drops the oldest archive entries until the rest hold at most `target` bytes; returns
    /// the bytes dropped.
    pub fn trim_archive(&mut self, target: u64) -> Result<u64> {
        let target = i64::try_from(target).unwrap_or(i64::MAX);
        Ok(self
            .tx
            .query(sql::TRIM_ARCHIVE, &[&self.tenant, &target])?
            .iter()
            .map(|r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(0))
            .sum())
    }

    /// The tenant's governance record, as the facade last wrote it.
    pub fn record(&mut self) -> Result<Option<Value>> {
        Ok(self
            .tx
            .query_opt(sql::RECORD, &[&self.tenant])?
            .map(|r| r.get(0)))
    }

    /// Writes the tenant's governance record.
    pub fn set_record(&mut self, record: &Value) -> Result<()> {
        self.tx.execute(sql::SET_RECORD, &[&self.tenant, record])?;
        Ok(())
    }
}

/// The latest archive entry of `id`.
pub(crate) fn archived(tx: &mut Tx<'_>, tenant: &str, id: &str) -> Result<Option<Item>> {
    let Some(row) = tx.query_opt(sql::ARCHIVED, &[&tenant, &id])? else {
        return Ok(None);
    };
    let value: Value = row.get(0);
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| Error::Corrupted {
            what: format!("coral_archive {}", coral_base::echo(id)),
            detail: e.to_string(),
        })
}

//! `Coral::list`: one page of the stored memories, filtered and ordered, without touching them
//! (a listing is not a recall: no access is counted, nothing is journaled).
//!
//! Built for a person browsing 20,000 memories (docs/dashboard.md): the filter runs over the
//! pool's rows and only the page's items are cloned, so a page of 50 costs about the same at
//! 200 or 20,000 memories apart from one pass over the rows (measured in docs/dashboard.md).

use std::collections::{BTreeMap, HashMap};

use coral_store::{Item, Pool, Tier};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::types::Memory;

/// Most memories one page may hold.
pub const MAX_LIST_LIMIT: usize = 200;

/// The order of a listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ListOrder {
    /// Created last first (the default).
    #[default]
    Newest,
    /// Created first first.
    Oldest,
    /// Most important first.
    Importance,
    /// Accessed last first.
    Accessed,
}

impl ListOrder {
    /// Every order's name, as [`ListOrder::parse`] accepts them.
    pub const NAMES: [&'static str; 4] = ["newest", "oldest", "importance", "accessed"];

    /// `newest`, `oldest`, `importance` or `accessed`; anything else is an error naming it.
    pub fn parse(text: &str) -> Result<ListOrder> {
        match text {
            "newest" => Ok(ListOrder::Newest),
            "oldest" => Ok(ListOrder::Oldest),
            "importance" => Ok(ListOrder::Importance),
            "accessed" => Ok(ListOrder::Accessed),
            other => Err(Error::InvalidInput(format!(
                "order {} is not one of {}",
                coral_base::echo(other),
                Self::NAMES.join(", ")
            ))),
        }
    }
}

/// Which memories to list. The default lists the newest 50 of every tier.
#[derive(Clone, Debug, PartialEq)]
pub struct ListQuery {
    /// Only this tier.
    pub tier: Option<Tier>,
    /// Only this project; `Some("")` lists the memories without one.
    pub project: Option<String>,
    /// Created at or after this time (Unix seconds).
    pub from: Option<f64>,
    /// Created before this time (Unix seconds).
    pub to: Option<f64>,
    /// Only memories whose text contains this, ignoring case.
    pub contains: Option<String>,
    /// Order of the rows.
    pub order: ListOrder,
    /// Rows skipped before the page.
    pub offset: usize,
    /// Rows in the page, 1 to [`MAX_LIST_LIMIT`].
    pub limit: usize,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            tier: None,
            project: None,
            from: None,
            to: None,
            contains: None,
            order: ListOrder::Newest,
            offset: 0,
            limit: 50,
        }
    }
}

/// One page of a listing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ListPage {
    /// Memories stored, all tiers.
    pub total: usize,
    /// Memories that match the filter.
    pub matched: usize,
    /// Rows skipped before this page.
    pub offset: usize,
    /// The page, in the order asked for.
    pub items: Vec<Memory>,
    /// Every project tag and how many memories carry it (whatever the filter), for pickers;
    /// memories without a project are counted under `""`.
    pub projects: BTreeMap<String, usize>,
}

impl ListQuery {
    fn check(&self) -> Result<()> {
        if !(1..=MAX_LIST_LIMIT).contains(&self.limit) {
            return Err(Error::InvalidInput(format!(
                "limit {} must be from 1 to {MAX_LIST_LIMIT}",
                self.limit
            )));
        }
        if let (Some(from), Some(to)) = (self.from, self.to)
            && from > to
        {
            return Err(Error::InvalidInput(format!(
                "from {from} is after to {to}; give the earlier time as from"
            )));
        }
        Ok(())
    }
}

/// The page of `pool` that `query` asks for.
pub(crate) fn list_page(pool: &Pool, query: &ListQuery) -> Result<ListPage> {
    list_rows(pool.items(), |row| pool.tier(row), query)
}

/// [`list_page`] over any backend's memories: `items` by row and `tier_of` a row's tier.
pub(crate) fn list_rows(
    items: &[Item],
    tier_of: impl Fn(u32) -> Tier,
    query: &ListQuery,
) -> Result<ListPage> {
    query.check()?;
    let needle = query.contains.as_deref().map(str::to_lowercase);
    let mut projects: HashMap<&str, usize> = HashMap::new();
    // (sort key, row) of every match; only the page's items are copied afterwards.
    let mut rows: Vec<(f64, u32)> = Vec::new();
    for (row, item) in items.iter().enumerate() {
        let row = row as u32;
        let project = item.project.as_deref().unwrap_or("");
        *projects.entry(project).or_default() += 1;
        let keep = query.tier.is_none_or(|t| tier_of(row) == t)
            && query.project.as_deref().is_none_or(|p| p == project)
            && query.from.is_none_or(|f| item.timestamp >= f)
            && query.to.is_none_or(|t| item.timestamp < t)
            && needle
                .as_deref()
                .is_none_or(|n| item.content.to_lowercase().contains(n));
        if keep {
            let key = match query.order {
                ListOrder::Newest | ListOrder::Oldest => item.timestamp,
                ListOrder::Importance => item.importance,
                ListOrder::Accessed => item.last_access,
            };
            rows.push((key, row));
        }
    }
    let descending = query.order != ListOrder::Oldest;
    // Ties broken by id, so pages never overlap or skip between two calls on the same pool.
    let order = |a: &(f64, u32), b: &(f64, u32)| {
        let by_key = a.0.total_cmp(&b.0);
        let by_key = if descending { by_key.reverse() } else { by_key };
        by_key.then_with(|| {
            items[a.1 as usize]
                .item_id
                .cmp(&items[b.1 as usize].item_id)
        })
    };
    // Only the rows up to the page's end need their order: a first page of 20,000 costs a
    // selection, not a sort.
    let end = query.offset.saturating_add(query.limit).min(rows.len());
    if end > 0 && end < rows.len() {
        rows.select_nth_unstable_by(end - 1, order);
    }
    rows[..end].sort_unstable_by(order);
    let page = rows[query.offset.min(end)..end]
        .iter()
        .map(|&(_, row)| Memory {
            item: items[row as usize].clone(),
            tier: tier_of(row),
        })
        .collect();
    Ok(ListPage {
        total: items.len(),
        matched: rows.len(),
        offset: query.offset,
        items: page,
        projects: projects
            .into_iter()
            .map(|(p, n)| (p.to_string(), n))
            .collect(),
    })
}

//! Heat scores and lifecycle policies for Coral's memory tiers.
//!
//! Everything here is a pure function of plain numbers: the caller passes the candidates of a
//! tier (row key, timestamps, counters) and the current time, and gets back which rows to move or
//! evict. This crate never sees text, files or the store, so every decision is exact and testable.
//!
//! ```
//! use coral_heat::{HeatParams, heat, headroom};
//!
//! let params = HeatParams::default();
//! // A fresh, never-hit item with no importance keeps only its recency term.
//! assert!((heat(0, 1_000.0, 0.0, 1_000.0, &params, None) - 0.3).abs() < 1e-12);
//! assert_eq!(headroom(10_000, 0), 200);
//! ```

mod governance;
mod score;
mod tiers;

pub use governance::{evict_lowest_heat, excess_over_capacity, headroom};
pub use score::{HeatParams, HeatWeights, heat};
pub use tiers::{Candidate, lru_overflow, ttl_expired};

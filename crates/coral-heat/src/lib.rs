//! Heat scores and lifecycle policies for Coral's memory tiers.
//!
//! Everything here is a pure function of plain numbers: the caller passes the candidates of a
//! tier (row key, timestamps, counters) and the current time, and gets back which rows to move or
//! evict. This crate never sees the store or the files, so every decision is exact and testable.
//! Distillation is planned here too ([`plan_distillation`] over token-hash sets), and the one
//! edge this crate has, the [`Llm`] that writes the summaries, is a trait: [`OpenAiClient`]
//! talks to an OpenAI-compatible endpoint, and tests inject their own.
//!
//! ```
//! use coral_heat::{HeatParams, heat, headroom};
//!
//! let params = HeatParams::default();
//! // A fresh, never-hit item with no importance keeps only its recency term.
//! assert!((heat(0, 1_000.0, 0.0, 1_000.0, &params, None) - 0.3).abs() < 1e-12);
//! assert_eq!(headroom(10_000, 0), 200);
//! ```
//!
//! Planning a distillation:
//!
//! ```
//! use coral_heat::{DistillCandidate, DistillParams, HeatParams, plan_distillation};
//!
//! let tokens = [11, 22, 33];
//! let items: Vec<DistillCandidate> = (0..3)
//!     .map(|key| DistillCandidate {
//!         key,
//!         access_count: 2,
//!         importance: 0.1 * f64::from(key),
//!         last_access: 0.0,
//!         tokens: &tokens,
//!     })
//!     .collect();
//! let plans = plan_distillation(&items, 1e9, &HeatParams::default(), &DistillParams::default());
//! assert_eq!(plans.len(), 1);
//! assert_eq!(plans[0].access_count, 6);
//! assert_eq!(plans[0].importance, 0.2);
//! ```

mod distill;
mod error;
mod governance;
mod llm;
mod openai;
mod quota;
mod score;
mod settings;
mod tiers;
mod union_find;

pub use distill::{DistillCandidate, DistillParams, DistillPlan, find_clusters, plan_distillation};
pub use error::{Error, Result};
pub use governance::{evict_lowest_heat, excess_over_capacity, headroom};
pub use llm::{Llm, MAX_SUMMARY_CHARS, TARGET_SUMMARY_CHARS, clean_summary};
pub use openai::OpenAiClient;
pub use quota::{ColdItem, QuotaLimits, QuotaPlan, plan_quota};
pub use score::{HeatParams, HeatWeights, heat};
pub use settings::{DEEPSEEK_BASE_URL, DEFAULT_MODEL, DEFAULT_TIMEOUT, LlmSettings};
pub use tiers::{Candidate, lru_overflow, ttl_expired};

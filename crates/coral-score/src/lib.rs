//! Scoring kernels for Coral: dot/cosine, bitmap Jaccard, the near-duplicate test over token
//! sets ([`near_duplicate`]), time decay, weighted fusion, a bounded top-k and the one-pass
//! [`scan`] over a pool's rows that ties them together, plus reciprocal-rank fusion:
//! [`rank_lists`] (vector and Jaccard rankings in one pass), BM25 over an incremental inverted
//! index ([`Bm25Index`], [`keyword_terms`]) and [`rrf`].
//!
//! This crate does no I/O and knows nothing of items, text sources or storage: callers hand it
//! contiguous arrays indexed by row number and get row numbers back.
//!
//! ```
//! use coral_score::{Bitmap, ScanRows, Query, Weights, scan};
//!
//! let vectors = [1.0, 0.0, /* row 1 */ 0.0, 1.0];
//! let mut bitmaps: [Bitmap; 2] = [[0; 32]; 2];
//! bitmaps[1][0] = 0b11;
//! let pool = ScanRows {
//!     dim: 2,
//!     vectors: &vectors,
//!     sparse: None,
//!     bitmaps: &bitmaps,
//!     timestamps: &[1_000.0, 1_000.0],
//!     tiebreak: &[0, 1],
//! };
//! let mut query_bitmap: Bitmap = [0; 32];
//! query_bitmap[0] = 0b01;
//! let query = Query {
//!     vector: Some(&[0.0, 1.0]),
//!     bitmap: &query_bitmap,
//!     now: 1_000.0,
//!     tau_days: 7.0,
//!     weights: Weights::default(),
//!     min_score: 0.0,
//!     k: 5,
//!     allow: None,
//!     boost: None,
//! };
//! let hits = scan(&pool, &query);
//! assert_eq!(hits[0].row, 1);
//! assert!((hits[0].score - (0.6 * 1.0 + 0.2 * 0.5 + 0.2 * 1.0)).abs() < 1e-9);
//! assert_eq!(hits.len(), 2);
//! ```

mod analysis;
mod bm25;
mod decay;
mod dot;
mod fusion;
mod jaccard;
mod near_duplicate;
mod rank_lists;
mod rrf;
mod scan;
mod sparse_rows;
mod terms;
mod time_calendar;
mod time_chinese;
mod time_english;
mod time_query;
mod topk;
mod weights;

pub use analysis::{
    content_lines, for_each_search_term, is_mostly_cjk, is_stop_term, search_query, search_terms,
    stem,
};
pub use bm25::{Bm25Index, Bm25Params, Bm25Query, Bm25Scores};
pub use decay::time_decay;
pub use dot::{cosine, dot};
pub use fusion::{
    HybridParams, Relevance, Spread, best_with_neighbours, fuse_hybrid, with_neighbours,
    with_neighbours_owned,
};
pub use jaccard::{BITMAP_WORDS, Bitmap, bitmap_jaccard};
pub use near_duplicate::near_duplicate;
pub use rank_lists::{ListQuery, Rankings, rank_lists};
pub use rrf::rrf;
pub use rrf::rrf_weighted;
pub use scan::{PARALLEL_THRESHOLD, Query, ScanRows, scan};
pub use sparse_rows::{SparseVectors, sparse_dot};
pub use terms::{for_each_keyword_term, keyword_terms};
pub use time_query::{TimeWindow, time_window};
pub use topk::{Scored, TopK};
pub use weights::Weights;

//! coral-score

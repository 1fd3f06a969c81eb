//! The MemCore timeline: turns, tool calls, settlement and navigation.
//!
//! This crate is a placeholder in the dependency graph; its implementation lands with the
//! timeline issues. It may depend on `coral-score` only.

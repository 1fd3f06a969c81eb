//! Reasoning threads: never-forgotten, cross-chat work tracking shared by several processes.
//!
//! This crate is a placeholder in the dependency graph; its implementation lands with the
//! threads issue. It depends on nothing of Coral's.

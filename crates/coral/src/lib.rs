//! coral

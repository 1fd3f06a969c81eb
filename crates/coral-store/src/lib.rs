//! coral-store

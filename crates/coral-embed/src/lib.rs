//! coral-embed

//! coral-heat

//! Ranking parity (filled in below).
